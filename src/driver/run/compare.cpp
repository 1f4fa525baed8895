// The element-by-element comparison behind --expected and --test-data. Floating types are
// widened to double; integers are compared on their exact values (as int64/uint64), so a
// large int64 that differs by one is still a mismatch.
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

// Whether floating values match, and whether the pair counts toward the max errors.
bool floats_match(double actual, double expected, const Tolerance& tolerance, bool* finite) {
  *finite = std::isfinite(actual) && std::isfinite(expected);
  if (std::isnan(actual) || std::isnan(expected)) return std::isnan(actual) && std::isnan(expected);
  if (std::isinf(actual) || std::isinf(expected)) return actual == expected;
  return std::fabs(actual - expected) <= tolerance.atol + tolerance.rtol * std::fabs(expected);
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

} // namespace

Comparison compare_tensors(const HostTensor& actual, const HostTensor& expected,
                           const Tolerance& tolerance) {
  Comparison result;
  if (actual.dtype != expected.dtype || actual.dims != expected.dims) {
    result.type_mismatch = fmt::format("the output is {}, but the expected tensor is {}",
                                       describe_tensor(actual), describe_tensor(expected));
    return result;
  }
  result.element_count = actual.element_count();
  bool floating = is_floating_dtype(actual.dtype);
  for (uint64_t i = 0; i < result.element_count; ++i) {
    double a = element_as_double(actual, i);
    double e = element_as_double(expected, i);
    bool finite = true;
    bool match =
        floating ? floats_match(a, e, tolerance, &finite) : integers_equal(actual, expected, i);
    if (finite) {
      double abs_error = std::fabs(a - e);
      result.max_abs_error = std::max(result.max_abs_error, abs_error);
      result.max_rel_error = std::max(result.max_rel_error, relative_error(abs_error, e));
    }
    if (match) continue;
    if (result.mismatch_count == 0) {
      result.first_mismatch = i;
      result.first_actual = element_text(actual, i);
      result.first_expected = element_text(expected, i);
    }
    ++result.mismatch_count;
    if (!finite) ++result.nonfinite_mismatch_count;
  }
  return result;
}

std::string describe_comparison(const Comparison& comparison, const HostTensor& actual) {
  if (!comparison.type_mismatch.empty()) return comparison.type_mismatch;
  std::string line = fmt::format("max abs err {:.6g}, max rel err {:.6g}, {} of {} elements "
                                 "mismatch",
                                 comparison.max_abs_error, comparison.max_rel_error,
                                 comparison.mismatch_count, comparison.element_count);
  if (comparison.nonfinite_mismatch_count > 0)
    line += fmt::format(" ({} at NaN or inf)", comparison.nonfinite_mismatch_count);
  if (comparison.mismatch_count == 0) return line;
  return line + fmt::format("; first at {}: got {}, expected {}",
                            format_index(actual.dims, comparison.first_mismatch),
                            comparison.first_actual, comparison.first_expected);
}

} // namespace stitch::run
