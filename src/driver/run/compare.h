// Comparing a model's output with an expected tensor. The rule is numpy.isclose's, made
// strict where the spec of a test wants it:
//   floats   |actual - expected| <= atol + rtol * |expected|; NaN matches NaN only at the
//            same position; an infinity matches only the same infinity.
//   integers and bools match exactly (bools by truth value).
// The max absolute and relative errors are taken over the positions where both values are
// finite (as numpy.testing.assert_allclose reports them); a relative error against an
// expected 0 is infinite unless the values are equal.
#pragma once

#include <cstdint>
#include <string>

#include "driver/run/host_tensor.h"

namespace stitch::run {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-5;
};

struct Comparison {
  std::string type_mismatch; // non-empty when dtype or dims differ; nothing else is set then
  uint64_t element_count = 0;
  uint64_t mismatch_count = 0; // elements outside the tolerance, NaN and inf ones included
  uint64_t nonfinite_mismatch_count = 0;
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;
  uint64_t first_mismatch = 0; // flat index; valid when mismatch_count > 0
  std::string first_actual;    // the values at first_mismatch, as text
  std::string first_expected;

  bool matches() const { return type_mismatch.empty() && mismatch_count == 0; }
};

Comparison compare_tensors(const HostTensor& actual, const HostTensor& expected,
                           const Tolerance& tolerance);

// One line: "max abs err 0.5, max rel err 0.25, 6 of 6 elements mismatch; first at [0,1]:
// got 1.5, expected 2" (or the dtype/shape problem).
std::string describe_comparison(const Comparison& comparison, const HostTensor& actual);

} // namespace stitch::run
