// Comparison semantics: the atol + rtol * |expected| bound on both sides of its edge, NaN
// matching only NaN at the same position, infinities matching exactly, integers and bools
// matching exactly, dtype and shape differences, and the reported max errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "driver/run/compare.h"
#include "run_test_support.h"

using namespace stitch::run;
using namespace stitch::run::testing;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

Comparison compare_floats(std::vector<float> actual, std::vector<float> expected,
                          Tolerance tolerance = {}) {
  std::vector<int64_t> dims = {static_cast<int64_t>(actual.size())};
  return compare_tensors(make_tensor(STITCH_FLOAT32, dims, actual),
                         make_tensor(STITCH_FLOAT32, dims, expected), tolerance);
}

} // namespace

TEST_CASE("floats match within atol + rtol * |expected| and not beyond", "[run][compare]") {
  // Proves: the bound is atol + rtol*|e| (|e|, not |a|), inclusive, with the defaults
  // rtol 1e-3 and atol 1e-5.
  Tolerance tolerance{0.1, 0.01};
  CHECK(compare_floats({1.10f}, {1.0f}, tolerance).matches());  // 0.10 <= 0.11
  CHECK(!compare_floats({1.12f}, {1.0f}, tolerance).matches()); // 0.12 > 0.11
  CHECK(compare_floats({0.009f}, {0.0f}, tolerance).matches()); // atol alone near 0
  CHECK(!compare_floats({0.011f}, {0.0f}, tolerance).matches());
  // Relative to expected: 2 vs 1.8 is within 0.1*2 but not within 0.1*1.8 + 0.01.
  CHECK(!compare_floats({2.0f}, {1.8f}, tolerance).matches());
  CHECK(compare_floats({1.8f}, {2.0f}, tolerance).matches());

  Tolerance defaults;
  CHECK(defaults.rtol == 1e-3);
  CHECK(defaults.atol == 1e-5);
  CHECK(compare_floats({1000.9f}, {1000.0f}).matches());
  CHECK(!compare_floats({1001.1f}, {1000.0f}).matches());
}

TEST_CASE("the max absolute and relative errors and the mismatch count are reported",
          "[run][compare]") {
  // Proves: errors are maxima over all elements, the count is of elements out of
  // tolerance, and the first mismatch is located by its multi-dimensional index.
  HostTensor actual = make_tensor<float>(STITCH_FLOAT32, {2, 2}, {1.0f, 2.5f, 4.0f, 4.0f});
  HostTensor expected = make_tensor<float>(STITCH_FLOAT32, {2, 2}, {1.0f, 2.0f, 4.0f, 5.0f});
  Comparison c = compare_tensors(actual, expected, {});
  CHECK(c.mismatch_count == 2);
  CHECK(c.element_count == 4);
  CHECK(c.max_abs_error == Approx(1.0));
  CHECK(c.max_rel_error == Approx(0.25));
  CHECK(c.first_mismatch == 1);
  std::string line = describe_comparison(c, actual);
  CHECK_THAT(line, Catch::Contains("max abs err 1, max rel err 0.25, 2 of 4 elements mismatch"));
  CHECK_THAT(line, Catch::Contains("first at [0,1]: got 2.5, expected 2"));
}

TEST_CASE("NaN matches NaN only at the same position", "[run][compare]") {
  // Proves: NaN == NaN positionally, NaN vs a number is a mismatch either way round, and
  // NaN pairs stay out of the max errors.
  CHECK(compare_floats({kNaN, 1.0f}, {kNaN, 1.0f}).matches());
  Comparison swapped = compare_floats({kNaN, 1.0f}, {1.0f, kNaN});
  CHECK(swapped.mismatch_count == 2);
  CHECK(swapped.nonfinite_mismatch_count == 2);
  CHECK(swapped.max_abs_error == 0.0);
  CHECK(!compare_floats({1.0f}, {kNaN}).matches());
  CHECK(!compare_floats({kNaN}, {1.0f}, {1e9, 1e9}).matches());
}

TEST_CASE("infinities must match exactly", "[run][compare]") {
  // Proves: inf matches inf of the same sign only; no tolerance makes inf match a number.
  CHECK(compare_floats({kInf, -kInf}, {kInf, -kInf}).matches());
  CHECK(!compare_floats({kInf}, {-kInf}).matches());
  CHECK(!compare_floats({kInf}, {3e38f}, {1e9, 1e9}).matches());
  CHECK(!compare_floats({3e38f}, {kInf}, {1e9, 1e9}).matches());
  CHECK(!compare_floats({kNaN}, {kInf}).matches());
}

TEST_CASE("integer and bool outputs must match exactly", "[run][compare]") {
  // Proves: tolerances do not apply to integers; int64 values beyond 2^53 that differ by
  // one still mismatch; bools compare by truth value.
  Tolerance loose{1.0, 100.0};
  HostTensor a = make_tensor<int32_t>(STITCH_INT32, {3}, {1, 2, 3});
  HostTensor e = make_tensor<int32_t>(STITCH_INT32, {3}, {1, 2, 4});
  Comparison c = compare_tensors(a, e, loose);
  CHECK(c.mismatch_count == 1);
  CHECK(c.max_abs_error == 1.0);

  int64_t big = (int64_t{1} << 60) + 1;
  HostTensor big_a = make_tensor<int64_t>(STITCH_INT64, {1}, {big});
  HostTensor big_e = make_tensor<int64_t>(STITCH_INT64, {1}, {big - 1});
  Comparison big_c = compare_tensors(big_a, big_e, loose);
  CHECK(!big_c.matches());
  CHECK_THAT(describe_comparison(big_c, big_a), Catch::Contains("got 1152921504606846977, "
                                                                "expected 1152921504606846976"));
  CHECK(compare_tensors(big_a, big_a, {}).matches());

  HostTensor u64 = make_tensor<uint64_t>(STITCH_UINT64, {1}, {UINT64_MAX});
  CHECK(!compare_tensors(u64, make_tensor<uint64_t>(STITCH_UINT64, {1}, {UINT64_MAX - 1}), loose)
             .matches());

  HostTensor bools = make_tensor<uint8_t>(STITCH_BOOL, {3}, {1, 0, 2});
  CHECK(compare_tensors(bools, make_tensor<uint8_t>(STITCH_BOOL, {3}, {1, 0, 1}), {}).matches());
  Comparison bool_c =
      compare_tensors(bools, make_tensor<uint8_t>(STITCH_BOOL, {3}, {0, 0, 1}), loose);
  CHECK(bool_c.mismatch_count == 1);
  CHECK_THAT(describe_comparison(bool_c, bools), Catch::Contains("got true, expected false"));
}

TEST_CASE("a dtype or shape difference is a mismatch that says so", "[run][compare]") {
  // Proves: tensors of another dtype or shape never compare element-wise.
  HostTensor f = make_tensor<float>(STITCH_FLOAT32, {2, 3}, std::vector<float>(6, 1.0f));
  HostTensor reshaped = make_tensor<float>(STITCH_FLOAT32, {3, 2}, std::vector<float>(6, 1.0f));
  HostTensor ints = make_tensor<int32_t>(STITCH_INT32, {2, 3}, std::vector<int32_t>(6, 1));
  Comparison shape = compare_tensors(f, reshaped, {});
  CHECK(!shape.matches());
  CHECK(describe_comparison(shape, f) ==
        "the output is float32[2,3], but the expected tensor is float32[3,2]");
  CHECK(!compare_tensors(f, ints, {}).matches());
}

TEST_CASE("relative error against an expected zero is infinite", "[run][compare]") {
  // Proves: the max relative error follows numpy (inf when expected is 0 and actual is not),
  // while the element may still match by atol.
  Comparison c = compare_floats({1e-6f, 0.0f}, {0.0f, 0.0f});
  CHECK(c.matches());
  CHECK(std::isinf(c.max_rel_error));
}

TEST_CASE("float16 outputs compare by value", "[run][compare]") {
  // Proves: 16-bit floats are widened before the tolerance check.
  HostTensor a =
      make_tensor<uint16_t>(STITCH_FLOAT16, {2}, {float_to_half(1.0f), float_to_half(2.0f)});
  HostTensor e =
      make_tensor<uint16_t>(STITCH_FLOAT16, {2}, {float_to_half(1.0f), float_to_half(2.5f)});
  Comparison c = compare_tensors(a, e, {});
  CHECK(c.mismatch_count == 1);
  CHECK(c.max_abs_error == 0.5);
}
