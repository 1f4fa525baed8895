// Comparing a model's output with an expected tensor. The element rule is numpy.isclose's,
// made strict where the spec of a test wants it:
//   floats   |actual - expected| <= atol + rtol * |expected|; NaN matches NaN only at the
//            same position; an infinity matches only the same infinity.
//   integers and bools match exactly (bools by truth value).
// Floating tensors of different dtypes (a float16 output against a float32 reference) are
// compared as doubles; any other dtype difference, and any shape difference, is a mismatch.
//
// Three error measures, each over the positions where both values are finite (as
// numpy.testing.assert_allclose reports them):
//   max abs error  max |a - e|
//   max rel error  max |a - e| / |e|; infinite against an expected 0 unless the values are equal
//   rel L2 error   ||a - e||_2 / ||e||_2, summed in double; 0 when both norms are 0, infinite
//                  when only ||e|| is.
//
// What passes: the element rule (when Tolerance::elementwise), the relative L2 bound (when
// Tolerance::max_rel_l2 is set; floating outputs only), and always: NaN and infinities in the
// same places as expected, and integers and bools exactly equal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "driver/run/host_tensor.h"

namespace stitch::run {

struct Tolerance {
  Tolerance() = default;
  Tolerance(double rtol_, double atol_) : rtol(rtol_), atol(atol_) {}

  double rtol = 1e-3;
  double atol = 1e-5;
  // Whether rtol/atol decide a floating output. stitch-run turns it off when --max-rel-l2 is
  // given without --rtol or --atol, so that the relative L2 error alone decides.
  bool elementwise = true;
  std::optional<double> max_rel_l2;

  // "rtol 0.001, atol 1e-05", "rel L2 <= 0.005", or both joined by " and ".
  std::string describe() const;
};

struct Comparison {
  std::string type_mismatch; // non-empty when dtype or dims differ; nothing else is set then
  std::string dtype_note;    // "float16 vs float32, compared as double" when the dtypes differ
  bool floating = false;
  uint64_t element_count = 0;
  uint64_t mismatch_count = 0; // elements outside the element rule, NaN and inf ones included
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;
  double rel_l2_error = 0.0;
  uint64_t first_mismatch = 0; // flat index; valid when mismatch_count > 0
  std::string first_actual;    // the values at first_mismatch, as text
  std::string first_expected;
  // NaN and infinities: those where the other side differs (always a failure), and those
  // equal to the expected value at the same position (counted as matching).
  uint64_t nonfinite_mismatch_count = 0;
  uint64_t nonfinite_match_count = 0;
  uint64_t first_nonfinite_mismatch = 0; // valid when nonfinite_mismatch_count > 0
  std::string first_nonfinite_actual;
  std::string first_nonfinite_expected;
  bool elementwise = true;          // the Tolerance's, for describing the result
  std::optional<double> max_rel_l2; // the Tolerance's bound when it applies (floating outputs)
  bool passed = false;

  bool matches() const { return passed; }
};

Comparison compare_tensors(const HostTensor& actual, const HostTensor& expected,
                           const Tolerance& tolerance);

// One line: "max abs err 0.5, max rel err 0.25, rel L2 err 0.125, 2 of 6 elements mismatch;
// first at [0,1]: got 1.5, expected 2", then where NaN and infinities differ or agree (or the
// dtype/shape problem).
std::string describe_comparison(const Comparison& comparison, const HostTensor& actual);

} // namespace stitch::run
