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
  CHECK(c.rel_l2_error == Approx(std::sqrt((0.25 + 1.0) / (1.0 + 4.0 + 16.0 + 25.0))));
  CHECK(c.first_mismatch == 1);
  std::string line = describe_comparison(c, actual);
  CHECK_THAT(line, Catch::Contains("max abs err 1, max rel err 0.25, rel L2 err 0.164845, 2 of 4 "
                                   "elements mismatch"));
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

namespace {

// ||a - e||_2 / ||e||_2 over the pairs where both are finite, summed plainly in long double:
// the independent reference for the comparison's scaled double sums.
double reference_rel_l2(const std::vector<double>& actual, const std::vector<double>& expected) {
  long double difference = 0, reference = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (!std::isfinite(actual[i]) || !std::isfinite(expected[i])) continue;
    long double d = static_cast<long double>(actual[i]) - expected[i];
    difference += d * d;
    reference += static_cast<long double>(expected[i]) * expected[i];
  }
  return static_cast<double>(std::sqrt(difference) / std::sqrt(reference));
}

std::vector<double> widen(const HostTensor& tensor) {
  std::vector<double> values;
  for (uint64_t i = 0; i < tensor.element_count(); ++i)
    values.push_back(element_as_double(tensor, i));
  return values;
}

Tolerance rel_l2_only(double bound) {
  Tolerance tolerance;
  tolerance.elementwise = false;
  tolerance.max_rel_l2 = bound;
  return tolerance;
}

HostTensor halves(std::vector<int64_t> dims, const std::vector<float>& values) {
  std::vector<uint16_t> bits;
  for (float value : values)
    bits.push_back(float_to_half(value));
  return make_tensor(STITCH_FLOAT16, std::move(dims), bits);
}

} // namespace

TEST_CASE("the relative L2 error is ||got - ref|| / ||ref|| over the finite pairs",
          "[run][compare]") {
  // Proves: the three measures on known arrays, NaN and inf pairs left out of all of them.
  // By hand: differences (-0.5, 0, 1), reference (1.5, 2, 3): sqrt(1.25 / 15.25).
  std::vector<float> actual = {1.0f, 2.0f, kNaN, 4.0f, kInf};
  std::vector<float> expected = {1.5f, 2.0f, kNaN, 3.0f, kInf};
  Comparison c = compare_floats(actual, expected);
  CHECK(c.max_abs_error == 1.0);
  CHECK(c.max_rel_error == Approx(1.0 / 3.0));
  CHECK(c.rel_l2_error == Approx(std::sqrt(1.25 / 15.25)).epsilon(1e-15));
  CHECK(c.nonfinite_match_count == 2);
  CHECK(c.mismatch_count == 2);

  // 1000 pseudo-random pairs against the long double sum.
  std::vector<float> a, e;
  for (int i = 0; i < 1000; ++i) {
    e.push_back(std::sin(0.37f * static_cast<float>(i)) * 100.0f);
    a.push_back(e.back() + std::cos(1.3f * static_cast<float>(i)) * 0.01f);
  }
  Comparison many = compare_floats(a, e);
  std::vector<double> wide_a(a.begin(), a.end()), wide_e(e.begin(), e.end());
  CHECK(many.rel_l2_error == Approx(reference_rel_l2(wide_a, wide_e)).epsilon(1e-12));
}

TEST_CASE("the relative L2 error has no overflow and defined edges", "[run][compare]") {
  // Proves: float64 values near 1e200 (whose squares overflow double) give the right ratio;
  // an all-zero reference gives 0 when the output is zero too, inf otherwise.
  HostTensor big_a = make_tensor<double>(STITCH_FLOAT64, {2}, {3e200, 4e200});
  HostTensor big_e = make_tensor<double>(STITCH_FLOAT64, {2}, {3e200, 4.5e200});
  // ||(0, -0.5e200)|| / ||(3e200, 4.5e200)|| = 0.5 / sqrt(9 + 20.25).
  CHECK(compare_tensors(big_a, big_e, {}).rel_l2_error == Approx(0.5 / std::sqrt(29.25)));
  CHECK(compare_floats({0.0f, 0.0f}, {0.0f, 0.0f}).rel_l2_error == 0.0);
  CHECK(std::isinf(compare_floats({1e-9f, 0.0f}, {0.0f, 0.0f}).rel_l2_error));
  CHECK(compare_floats({}, {}).rel_l2_error == 0.0);
}

TEST_CASE("a relative L2 bound alone decides by the relative L2 error", "[run][compare]") {
  // Proves: with the element rule off, an output with one element far outside rtol/atol
  // passes when its relative L2 error is within the bound and fails just beyond it; with the
  // element rule on, both must hold. By hand: one error of 0.1 against ||ref|| = 10.
  std::vector<float> expected(100, 1.0f);
  std::vector<float> actual = expected;
  actual[7] = 1.1f;
  double rel_l2 = reference_rel_l2(std::vector<double>(actual.begin(), actual.end()),
                                   std::vector<double>(expected.begin(), expected.end()));
  CHECK(rel_l2 == Approx(0.01).epsilon(1e-6));
  Comparison loose = compare_floats(actual, expected, rel_l2_only(0.0101));
  CHECK(loose.matches());
  CHECK(loose.mismatch_count == 1); // outside the default rtol/atol, which do not decide here
  CHECK_THAT(describe_comparison(loose, make_tensor(STITCH_FLOAT32, {100}, actual)),
             Catch::Contains("rel L2 err 0.01 (<= 0.0101)"));
  CHECK_THAT(describe_comparison(loose, make_tensor(STITCH_FLOAT32, {100}, actual)),
             !Catch::Contains("elements mismatch"));
  Comparison tight = compare_floats(actual, expected, rel_l2_only(0.0099));
  CHECK(!tight.matches());
  CHECK_THAT(describe_comparison(tight, make_tensor(STITCH_FLOAT32, {100}, actual)),
             Catch::Contains("rel L2 err 0.01 (> 0.0099)"));

  Tolerance both = rel_l2_only(0.0101);
  both.elementwise = true;
  CHECK(!compare_floats(actual, expected, both).matches());
  both.rtol = 0.2;
  CHECK(compare_floats(actual, expected, both).matches());
  CHECK(both.describe() == "rtol 0.2, atol 1e-05 and rel L2 <= 0.0101");
  CHECK(rel_l2_only(0.005).describe() == "rel L2 <= 0.005");
}

TEST_CASE("a relative L2 bound never excuses NaN, inf or integer differences", "[run][compare]") {
  // Proves: a NaN where the reference has a number fails under any L2 bound and is located;
  // integer outputs still match exactly.
  HostTensor actual = make_tensor<float>(STITCH_FLOAT32, {2, 2}, {1.0f, 2.0f, kNaN, 4.0f});
  HostTensor expected = make_tensor<float>(STITCH_FLOAT32, {2, 2}, {1.0f, 2.0f, 0.5f, 4.0f});
  Comparison c = compare_tensors(actual, expected, rel_l2_only(1e9));
  CHECK(!c.matches());
  CHECK(c.nonfinite_mismatch_count == 1);
  CHECK(c.rel_l2_error == 0.0); // the NaN pair is out of the sums
  CHECK_THAT(describe_comparison(c, actual),
             Catch::Contains("NaN or inf differ at 1 of 4 elements, first at [1,0]: got nan, "
                             "expected 0.5"));

  HostTensor ints = make_tensor<int32_t>(STITCH_INT32, {3}, {1000, 1000, 1000});
  HostTensor off_by_one = make_tensor<int32_t>(STITCH_INT32, {3}, {1000, 1001, 1000});
  CHECK(!compare_tensors(ints, off_by_one, rel_l2_only(0.5)).matches());
}

TEST_CASE("NaN and inf at the same positions count as equal and are reported", "[run][compare]") {
  // Proves: equal NaN/inf pass and are counted; the output summary says where the first is.
  HostTensor t = make_tensor<float>(STITCH_FLOAT32, {2, 2}, {1.0f, kNaN, -kInf, kNaN});
  Comparison c = compare_tensors(t, t, {});
  CHECK(c.matches());
  CHECK_THAT(describe_comparison(c, t),
             Catch::Contains("3 NaN or inf equal to expected at the same positions"));
  CHECK_THAT(summarize_values(t),
             Catch::Contains("2 NaN (first at [0,1]), 1 inf (first at [1,0])"));
}

TEST_CASE("a float16 or bfloat16 output compares with a float32 reference as double",
          "[run][compare]") {
  // Proves: differing floating dtypes of one shape compare by value, the line says so, and
  // the errors are those of the widened values; a float against an integer tensor, or
  // another shape, still mismatches.
  std::vector<float> reference = {0.1f, -1.7f, 3.14159f, 1000.3f};
  HostTensor ref = make_tensor(STITCH_FLOAT32, {4}, reference);
  HostTensor half = halves({4}, reference); // float16 rounding of each value
  Comparison c = compare_tensors(half, ref, rel_l2_only(1e-3));
  CHECK(c.matches());
  CHECK(c.rel_l2_error == Approx(reference_rel_l2(widen(half), widen(ref))));
  double max_abs = 0.0;
  for (size_t i = 0; i < reference.size(); ++i)
    max_abs = std::max(max_abs, std::fabs(widen(half)[i] - static_cast<double>(reference[i])));
  CHECK(c.max_abs_error == max_abs);
  CHECK(max_abs > 0.0);
  CHECK_THAT(describe_comparison(c, half),
             Catch::Contains("float16 output vs float32 expected, compared as double"));

  std::vector<uint16_t> bf_bits;
  for (float value : reference)
    bf_bits.push_back(float_to_bfloat16(value));
  HostTensor bf = make_tensor(STITCH_BFLOAT16, {4}, bf_bits);
  Comparison bf_c = compare_tensors(bf, ref, rel_l2_only(1e-2));
  CHECK(bf_c.matches());
  CHECK(bf_c.rel_l2_error == Approx(reference_rel_l2(widen(bf), widen(ref))));
  CHECK(bf_c.rel_l2_error > c.rel_l2_error); // 8 bits of mantissa against 11

  HostTensor ints = make_tensor<int32_t>(STITCH_INT32, {4}, {0, -2, 3, 1000});
  CHECK_THAT(describe_comparison(compare_tensors(half, ints, {}), half),
             Catch::Contains("the output is float16[4], but the expected tensor is int32[4]"));
  CHECK(!compare_tensors(half, make_tensor(STITCH_FLOAT32, {2, 2}, reference), {}).matches());
}
