// half_reference.h: what the float16, bfloat16 and TF32 tests of the library share: operands
// stored in a dtype (random nonzero values rounded to it once, kept both as the stored elements
// and as their exact float values, which the double references of library_reference.h read),
// the tolerance one fp32-accumulated, once-rounded result must meet, and an independent TF32
// rounding (frexp and nearbyint, not the library's bit arithmetic).
//
// The tolerance, for an output of `dtype` whose exact value is v (the double reference on the
// same stored inputs) with term magnitude M = sum |terms| over K products (library_reference.h):
//   fp32 accumulation in any order      <= K * eps32 * M          (eps32 = 2^-24, per addition)
//   alpha, beta * C, bias, the epilogue <= 8 * eps32 * M          (a few fp32 roundings, tanhf)
//   the one rounding to the dtype       <= 1/2 ulp, taken as 1 ulp of the dtype at |v| (the
//                                          perturbed value may sit across a binade boundary)
// so |got - v| <= ulp(v) + (K + 8) * eps32 * M. For float32 the ulp term is eps32-sized too.
#pragma once

#include "device/stitch_half.cuh"
#include "library_reference.h"
#include "stitch/stitch.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace stitch::library::testing {

inline const char* dtype_label(int32_t dtype) {
  return dtype == STITCH_LIBRARY_FLOAT16    ? "float16"
         : dtype == STITCH_LIBRARY_BFLOAT16 ? "bfloat16"
                                            : "float32";
}

inline std::size_t element_bytes(int32_t dtype) { return dtype == STITCH_LIBRARY_FLOAT32 ? 4 : 2; }

// A tensor of `dtype`: `bytes` as the library reads it, `values` the floats its elements hold.
struct TypedTensor {
  int32_t dtype = STITCH_LIBRARY_FLOAT32;
  std::vector<unsigned char> bytes;
  std::vector<float> values;

  const void* data() const { return bytes.data(); }
  void* data() { return bytes.data(); }
  std::size_t size() const { return values.size(); }

  // Element i's float value, read back from `bytes` (after the library wrote them).
  float at(std::size_t i) const {
    uint16_t half = 0;
    switch (dtype) {
    case STITCH_LIBRARY_FLOAT16:
      std::memcpy(&half, bytes.data() + 2 * i, 2);
      return float16_bits_to_float(half);
    case STITCH_LIBRARY_BFLOAT16:
      std::memcpy(&half, bytes.data() + 2 * i, 2);
      return bfloat16_bits_to_float(half);
    default: {
      float value = 0.0f;
      std::memcpy(&value, bytes.data() + 4 * i, 4);
      return value;
    }
    }
  }

  // Every element read back.
  std::vector<float> read_back() const {
    std::vector<float> result(size());
    for (std::size_t i = 0; i < size(); ++i)
      result[i] = at(i);
    return result;
  }
};

// `values` rounded to `dtype` (nearest even) and stored.
inline TypedTensor typed_tensor(int32_t dtype, const std::vector<float>& values) {
  TypedTensor tensor;
  tensor.dtype = dtype;
  tensor.values.resize(values.size());
  tensor.bytes.resize(values.size() * element_bytes(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == STITCH_LIBRARY_FLOAT32) {
      tensor.values[i] = values[i];
      std::memcpy(tensor.bytes.data() + 4 * i, &values[i], 4);
      continue;
    }
    const uint16_t half = dtype == STITCH_LIBRARY_FLOAT16 ? float_to_float16_bits(values[i])
                                                          : float_to_bfloat16_bits(values[i]);
    std::memcpy(tensor.bytes.data() + 2 * i, &half, 2);
    tensor.values[i] = dtype == STITCH_LIBRARY_FLOAT16 ? float16_bits_to_float(half)
                                                       : bfloat16_bits_to_float(half);
  }
  return tensor;
}

// Random nonzero values (library_reference.h's) of `count` elements stored as `dtype`.
inline TypedTensor random_tensor(int32_t dtype, std::size_t count, uint32_t seed) {
  return typed_tensor(dtype, random_values(count, seed));
}

// A tensor of `count` elements all holding `fill` (a NaN shows an unwritten element).
inline TypedTensor filled_tensor(int32_t dtype, std::size_t count, float fill) {
  return typed_tensor(dtype, std::vector<float>(count, fill));
}

// The spacing of `dtype`'s values at |v| (its subnormal spacing below the normal range).
inline double ulp(int32_t dtype, double v) {
  const int mantissa_bits = dtype == STITCH_LIBRARY_FLOAT16    ? 10
                            : dtype == STITCH_LIBRARY_BFLOAT16 ? 7
                                                               : 23;
  const int min_exponent = dtype == STITCH_LIBRARY_FLOAT16 ? -14 : -126;
  int exponent = 0;
  std::frexp(std::fabs(v), &exponent); // |v| in [2^(exponent-1), 2^exponent)
  return std::ldexp(1.0, std::max(exponent - 1, min_exponent) - mantissa_bits);
}

// The double `v` rounded to `dtype` through float (exact for these reference values' needs:
// the double-to-float step only matters within 2^-29 relative of a tie).
inline double rounded_to(int32_t dtype, double v) {
  const float f = static_cast<float>(v);
  if (dtype == STITCH_LIBRARY_FLOAT16) return float16_bits_to_float(float_to_float16_bits(f));
  if (dtype == STITCH_LIBRARY_BFLOAT16) return bfloat16_bits_to_float(float_to_bfloat16_bits(f));
  return f;
}

// What one comparison found: the first element outside the tolerance (empty when none), and
// how many elements are exactly the reference rounded to the dtype.
struct Comparison {
  std::string mismatch;
  std::size_t correctly_rounded = 0, compared = 0;
};

// `got` against `expected` with the tolerance above; `k` is the number of products per sum
// and `extra_relative` an allowance per unit of magnitude on top (TF32's product error).
inline Comparison compare_typed(const TypedTensor& got, const Expected& expected, int64_t k,
                                double extra_relative = 0.0) {
  constexpr double kEps32 = 5.9604644775390625e-8; // 2^-24
  Comparison result;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double v = expected.value[i];
    if (std::isnan(v)) continue;
    const double actual = got.at(i);
    const double tolerance = ulp(got.dtype, v) +
                             (static_cast<double>(k) + 8.0) * kEps32 * expected.magnitude[i] +
                             extra_relative * expected.magnitude[i];
    ++result.compared;
    if (actual == rounded_to(got.dtype, v)) ++result.correctly_rounded;
    if (result.mismatch.empty() && !(std::fabs(actual - v) <= tolerance))
      result.mismatch = std::string(dtype_label(got.dtype)) + " element " + std::to_string(i) +
                        ": got " + std::to_string(actual) + ", expected " + std::to_string(v) +
                        " (tolerance " + std::to_string(tolerance) + ")";
  }
  return result;
}

// f rounded to TF32 (10 explicit mantissa bits), to nearest even, computed from frexp and the
// default rounding mode's nearbyint (ties to even); for the normal nonzero values tests use.
inline float reference_tf32(float f) {
  int exponent = 0;
  const double fraction = std::frexp(static_cast<double>(f), &exponent); // [0.5, 1)
  return static_cast<float>(std::ldexp(std::nearbyint(std::ldexp(fraction, 11)), exponent - 11));
}

inline std::vector<float> tf32_values(const std::vector<float>& values) {
  std::vector<float> rounded(values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    rounded[i] = reference_tf32(values[i]);
  return rounded;
}

} // namespace stitch::library::testing
