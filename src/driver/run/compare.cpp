// The element-by-element comparison behind --expected and --test-data. Floating types are
// widened to double; integers are compared on their exact values (as int64/uint64), so a
// large int64 that differs by one is still a mismatch. The L2 norms are kept as a scale and
// a sum of scaled squares (LAPACK's dlassq), so float64 values near 1e200 do not overflow.
#include "driver/run/compare.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace stitch::run {

namespace {

template <typename T> T load(const HostTensor& tensor, uint64_t index) {
  T value;
  std::memcpy(&value, tensor.bytes.data() + index * sizeof(T), sizeof(T));
  return value;
}

// Whether two elements are exactly equal, for integer and bool dtypes.
bool integers_equal(const HostTensor& a, const HostTensor& e, uint64_t i) {
  switch (a.dtype) {
  case STITCH_BOOL:
    return (load<uint8_t>(a, i) != 0) == (load<uint8_t>(e, i) != 0);
  case STITCH_UINT8:
    return load<uint8_t>(a, i) == load<uint8_t>(e, i);
  case STITCH_INT8:
    return load<int8_t>(a, i) == load<int8_t>(e, i);
  case STITCH_UINT16:
    return load<uint16_t>(a, i) == load<uint16_t>(e, i);
  case STITCH_INT16:
    return load<int16_t>(a, i) == load<int16_t>(e, i);
  case STITCH_INT32:
    return load<int32_t>(a, i) == load<int32_t>(e, i);
  case STITCH_UINT32:
    return load<uint32_t>(a, i) == load<uint32_t>(e, i);
  case STITCH_INT64:
    return load<int64_t>(a, i) == load<int64_t>(e, i);
  case STITCH_UINT64:
    return load<uint64_t>(a, i) == load<uint64_t>(e, i);
  default:
    return false;
  }
}

double relative_error(double abs_error, double expected) {
  if (abs_error == 0.0) return 0.0;
  if (expected == 0.0) return std::numeric_limits<double>::infinity();
  return abs_error / std::fabs(expected);
}

// Whether finite floating values are within the element rule.
bool within_tolerance(double actual, double expected, const Tolerance& tolerance) {
  return std::fabs(actual - expected) <= tolerance.atol + tolerance.rtol * std::fabs(expected);
}

// Whether a pair with a NaN or an infinity on either side agrees: NaN with NaN, an infinity
// with the same infinity.
bool nonfinite_equal(double actual, double expected) {
  if (std::isnan(actual) || std::isnan(expected)) return std::isnan(actual) && std::isnan(expected);
  return actual == expected;
}

// ||v||_2 as scale * sqrt(sum), added to one value at a time.
class L2Norm {
public:
  void add(double value) {
    double magnitude = std::fabs(value);
    if (magnitude == 0.0) return;
    if (scale_ < magnitude) {
      double ratio = scale_ / magnitude;
      sum_ = 1.0 + sum_ * ratio * ratio;
      scale_ = magnitude;
    } else {
      double ratio = magnitude / scale_;
      sum_ += ratio * ratio;
    }
  }
  double value() const { return scale_ * std::sqrt(sum_); }

private:
  double scale_ = 0.0;
  double sum_ = 1.0;
};

double relative_l2(const L2Norm& difference, const L2Norm& reference) {
  double numerator = difference.value();
  double denominator = reference.value();
  if (numerator == 0.0) return 0.0;
  if (denominator == 0.0) return std::numeric_limits<double>::infinity();
  return numerator / denominator;
}

// An element as text: integers exactly, floats to 8 significant digits.
std::string element_text(const HostTensor& tensor, uint64_t index) {
  switch (tensor.dtype) {
  case STITCH_BOOL:
    return load<uint8_t>(tensor, index) != 0 ? "true" : "false";
  case STITCH_INT64:
    return fmt::format("{}", load<int64_t>(tensor, index));
  case STITCH_UINT64:
    return fmt::format("{}", load<uint64_t>(tensor, index));
  default:
    break;
  }
  double value = element_as_double(tensor, index);
  if (!is_floating_dtype(tensor.dtype)) return fmt::format("{}", static_cast<int64_t>(value));
  return fmt::format("{:.8g}", value);
}

// Whether `actual` and `expected` can be compared element by element, and the note saying
// how when their dtypes differ.
std::string type_problem(const HostTensor& actual, const HostTensor& expected, std::string* note) {
  if (actual.dims == expected.dims && actual.dtype == expected.dtype) return "";
  std::string problem = fmt::format("the output is {}, but the expected tensor is {}",
                                    describe_tensor(actual), describe_tensor(expected));
  if (actual.dims != expected.dims) return problem;
  if (!is_floating_dtype(actual.dtype) || !is_floating_dtype(expected.dtype)) return problem;
  *note = fmt::format("{} output vs {} expected, compared as double", dtype_name(actual.dtype),
                      dtype_name(expected.dtype));
  return "";
}

} // namespace

std::string Tolerance::describe() const {
  std::string rule = fmt::format("rtol {:g}, atol {:g}", rtol, atol);
  if (!max_rel_l2) return rule;
  std::string l2 = fmt::format("rel L2 <= {:g}", *max_rel_l2);
  return elementwise ? rule + " and " + l2 : l2;
}

Comparison compare_tensors(const HostTensor& actual, const HostTensor& expected,
                           const Tolerance& tolerance) {
  Comparison result;
  result.type_mismatch = type_problem(actual, expected, &result.dtype_note);
  if (!result.type_mismatch.empty()) return result;
  result.element_count = actual.element_count();
  result.floating = is_floating_dtype(actual.dtype);
  result.elementwise = tolerance.elementwise || !result.floating;
  if (result.floating) result.max_rel_l2 = tolerance.max_rel_l2;
  L2Norm difference, reference;
  for (uint64_t i = 0; i < result.element_count; ++i) {
    double a = element_as_double(actual, i);
    double e = element_as_double(expected, i);
    bool finite = std::isfinite(a) && std::isfinite(e);
    bool match = false;
    if (!result.floating) {
      match = integers_equal(actual, expected, i);
    } else if (finite) {
      match = within_tolerance(a, e, tolerance);
    } else if (nonfinite_equal(a, e)) {
      match = true;
      ++result.nonfinite_match_count;
    } else {
      if (result.nonfinite_mismatch_count == 0) {
        result.first_nonfinite_mismatch = i;
        result.first_nonfinite_actual = element_text(actual, i);
        result.first_nonfinite_expected = element_text(expected, i);
      }
      ++result.nonfinite_mismatch_count;
    }
    if (finite) {
      double abs_error = std::fabs(a - e);
      result.max_abs_error = std::max(result.max_abs_error, abs_error);
      result.max_rel_error = std::max(result.max_rel_error, relative_error(abs_error, e));
      difference.add(a - e);
      reference.add(e);
    }
    if (match) continue;
    if (result.mismatch_count == 0) {
      result.first_mismatch = i;
      result.first_actual = element_text(actual, i);
      result.first_expected = element_text(expected, i);
    }
    ++result.mismatch_count;
  }
  result.rel_l2_error = relative_l2(difference, reference);
  bool elements_pass = !result.elementwise || result.mismatch_count == 0;
  bool l2_passes = !result.max_rel_l2 || result.rel_l2_error <= *result.max_rel_l2;
  result.passed = elements_pass && l2_passes && result.nonfinite_mismatch_count == 0;
  return result;
}

std::string describe_comparison(const Comparison& comparison, const HostTensor& actual) {
  if (!comparison.type_mismatch.empty()) return comparison.type_mismatch;
  std::string line =
      fmt::format("max abs err {:.6g}, max rel err {:.6g}, rel L2 err {:.6g}",
                  comparison.max_abs_error, comparison.max_rel_error, comparison.rel_l2_error);
  if (comparison.max_rel_l2)
    line +=
        fmt::format(" ({} {:g})", comparison.rel_l2_error <= *comparison.max_rel_l2 ? "<=" : ">",
                    *comparison.max_rel_l2);
  if (comparison.elementwise) {
    line += fmt::format(", {} of {} elements mismatch", comparison.mismatch_count,
                        comparison.element_count);
    if (comparison.mismatch_count > 0)
      line += fmt::format("; first at {}: got {}, expected {}",
                          format_index(actual.dims, comparison.first_mismatch),
                          comparison.first_actual, comparison.first_expected);
  }
  if (comparison.nonfinite_mismatch_count > 0)
    line += fmt::format("; NaN or inf differ at {} of {} elements, first at {}: got {}, "
                        "expected {}",
                        comparison.nonfinite_mismatch_count, comparison.element_count,
                        format_index(actual.dims, comparison.first_nonfinite_mismatch),
                        comparison.first_nonfinite_actual, comparison.first_nonfinite_expected);
  if (comparison.nonfinite_match_count > 0)
    line += fmt::format("; {} NaN or inf equal to expected at the same positions",
                        comparison.nonfinite_match_count);
  if (!comparison.dtype_note.empty()) line += "; " + comparison.dtype_note;
  return line;
}

} // namespace stitch::run
