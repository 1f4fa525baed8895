// CUDA's device math and bit functions for the host target. The <math.h> float functions
// (expf, logf, sqrtf, tanhf, erff, fmaxf, powf, rintf, log1pf, expm1f, ...) already exist in the
// global namespace on glibc; this adds the ones CUDA has and the C library lacks: rsqrtf,
// normcdff, __saturatef, the min/max overloads, bit reinterpretation (__float_as_int, ...) and
// bit counting (__popc, __clz, __ffs, __brev).
//
// The host library's results can differ from CUDA's in the last ulp (CUDA's expf is 2 ulp, its
// rsqrtf is not correctly rounded), so tests compare with tolerances, never bitwise across
// targets. Fast-math intrinsics (__expf, __logf, __fdividef, ...) are deliberately absent.
// min/max have CUDA's same-type overloads only; mixed types (int with size_t) do not resolve,
// so generated code casts explicitly.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <math.h>

inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752); }

// Clamps to [0, 1]; NaN becomes 0, as in CUDA.
inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }

#define STITCH_HOST_INTEGER_MIN_MAX(T)                                                             \
  inline T min(T a, T b) { return a < b ? a : b; }                                                 \
  inline T max(T a, T b) { return a > b ? a : b; }
STITCH_HOST_INTEGER_MIN_MAX(int)
STITCH_HOST_INTEGER_MIN_MAX(unsigned int)
STITCH_HOST_INTEGER_MIN_MAX(long)
STITCH_HOST_INTEGER_MIN_MAX(unsigned long)
STITCH_HOST_INTEGER_MIN_MAX(long long)
STITCH_HOST_INTEGER_MIN_MAX(unsigned long long)
#undef STITCH_HOST_INTEGER_MIN_MAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline unsigned int __float_as_uint(float x) { return std::bit_cast<unsigned int>(x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline float __uint_as_float(unsigned int x) { return std::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }

inline int __popc(unsigned int x) { return std::popcount(x); }
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __clz(int x) { return std::countl_zero(static_cast<unsigned int>(x)); }
inline int __clzll(long long x) { return std::countl_zero(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned int>(x)) + 1; }
inline int __ffsll(long long x) {
  return x == 0 ? 0 : std::countr_zero(static_cast<unsigned long long>(x)) + 1;
}
inline unsigned int __brev(unsigned int x) {
  unsigned int reversed = 0;
  for (int bit = 0; bit < 32; ++bit)
    reversed |= ((x >> bit) & 1u) << (31 - bit);
  return reversed;
}

// Round-to-nearest-even and truncating conversions (the current rounding mode is the default).
inline int __float2int_rn(float x) { return static_cast<int>(nearbyintf(x)); }
inline int __float2int_rz(float x) { return static_cast<int>(x); }
