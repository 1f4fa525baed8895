// float16 and bfloat16 for generated kernels: two 2-byte storage types and their conversions to
// and from float, which is what kernels compute in.
//
//   stitch::float16, stitch::bfloat16   storage: a tensor element in memory (the bits only; no
//                                       arithmetic, so no expression mixes precisions by accident)
//   float(x) / stitch::float16(f)       conversions (implicit both ways, so `const float v = in[i]`
//                                       loads and `out[i] = v` stores): float to half rounds to
//                                       nearest even; NaN becomes the canonical NaN 0x7fff
//   round_to_float16(f), round_to_bfloat16(f)
//                                       f rounded to the type and back: the float a value of that
//                                       dtype holds in registers
//   float16_bits_to_float(b) ...        the same on raw bits, for tests and the host libraries
//
// On the CUDA target the conversions are CUDA's (cuda_fp16.h and cuda_bf16.h intrinsics). On the
// host target they are computed here in software, bit for bit what CUDA computes, including
// CUDA's NaN results (float16 NaN loads as 0x7fffffff, bfloat16 NaN keeps its payload); the
// runtime tests compare every one of the 65,536 patterns of each type against CUDA's own
// conversion functions.
#pragma once

#include "stitch_cuda.h"

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace stitch {

__host__ __device__ __forceinline__ uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return bits;
#endif
}

__host__ __device__ __forceinline__ float bits_to_float(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

// IEEE binary16 bits of f, rounded to nearest even (overflow to infinity, NaN to 0x7fff).
__host__ __device__ __forceinline__ uint16_t float_to_float16_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rn(f));
#else
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return 0x7fffu;         // NaN
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u; // 65520 and above round to infinity
  if (magnitude >= 0x38800000u) {                      // a normal float16 (2^-14 and above)
    const uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }
  if (magnitude < 0x33000000u) return static_cast<uint16_t>(sign); // below 2^-25: zero
  // A subnormal float16: the significand in units of 2^-24, rounded to nearest even.
  const uint32_t exponent = magnitude >> 23;
  const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exponent; // 14 to 24
  uint32_t result = significand >> shift;
  const uint32_t remainder = significand & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
  return static_cast<uint16_t>(sign | result);
#endif
}

__host__ __device__ __forceinline__ float float16_bits_to_float(uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return bits_to_float(mantissa != 0 ? 0x7fffffffu : (sign | 0x7f800000u));
  if (exponent == 0) { // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign != 0 ? -magnitude : magnitude;
  }
  return bits_to_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
#endif
}

// bfloat16 bits of f, rounded to nearest even (NaN to 0x7fff).
__host__ __device__ __forceinline__ uint16_t float_to_bfloat16_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
#else
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
#endif
}

__host__ __device__ __forceinline__ float bfloat16_bits_to_float(uint16_t b) {
  return bits_to_float(static_cast<uint32_t>(b) << 16);
}

// A float16 tensor element.
struct alignas(2) float16 {
  uint16_t bits;
  float16() = default;
  __host__ __device__ __forceinline__ float16(float f) : bits(float_to_float16_bits(f)) {}
  __host__ __device__ __forceinline__ operator float() const { return float16_bits_to_float(bits); }
  __host__ __device__ static __forceinline__ float16 from_bits(uint16_t b) {
    float16 h;
    h.bits = b;
    return h;
  }
};

// A bfloat16 tensor element.
struct alignas(2) bfloat16 {
  uint16_t bits;
  bfloat16() = default;
  __host__ __device__ __forceinline__ bfloat16(float f) : bits(float_to_bfloat16_bits(f)) {}
  __host__ __device__ __forceinline__ operator float() const {
    return bfloat16_bits_to_float(bits);
  }
  __host__ __device__ static __forceinline__ bfloat16 from_bits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2, "2-byte storage types");

// d rounded to float by rounding to odd: an inexact result gets an odd last bit, so that rounding
// it again to float16 or bfloat16 (at most 11 significant bits) gives what rounding d directly
// would (rounding to float to nearest even first could land on a midpoint d is not on). For a
// float64 or wide integer Cast to a 2-byte float.
__host__ __device__ __forceinline__ float float_round_to_odd(double d) {
  const float f = static_cast<float>(d);
  if (static_cast<double>(f) == d || d != d) return f;
  const uint32_t bits = float_bits(f);
  if ((bits & 1u) != 0) return f;
  const double magnitude = d < 0 ? -d : d, rounded = f < 0 ? -double(f) : double(f);
  return bits_to_float(magnitude > rounded ? bits + 1u : bits - 1u);
}

// The float that a float16 (bfloat16) value of f holds in registers: each node's result is
// rounded to its dtype once, so a fused kernel computes what the unfused ops store.
__host__ __device__ __forceinline__ float round_to_float16(float f) {
  return float16_bits_to_float(float_to_float16_bits(f));
}
__host__ __device__ __forceinline__ float round_to_bfloat16(float f) {
  return bfloat16_bits_to_float(float_to_bfloat16_bits(f));
}

} // namespace stitch
