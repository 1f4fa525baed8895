// The pointwise operators of generated kernels: one function per ONNX elementwise or
// broadcast op, named in the op table (src/graph/ops.def, column "device"), generic over the
// element types the op accepts. Float math goes through stitch_math.cuh (accurate functions
// only, no fast-math); double uses the double-precision functions; integer ops follow C
// semantics where ONNX does (Div truncates toward zero) and never trap (a division by zero
// gives 0 rather than undefined behaviour).
#pragma once

#include <stdint.h>

#include <limits>
#include <type_traits>

#include "stitch_cuda.h"
#include "stitch_math.cuh"

namespace stitch {
namespace ops {

template <typename T> struct is_float_type { static constexpr bool value = false; };
template <> struct is_float_type<float> { static constexpr bool value = true; };
template <> struct is_float_type<double> { static constexpr bool value = true; };

// ---- unary ----
template <typename T> __device__ __forceinline__ T abs_(T x) { return x < T(0) ? T(-x) : x; }
__device__ __forceinline__ float abs_(float x) { return fabsf(x); }
__device__ __forceinline__ double abs_(double x) { return fabs(x); }
template <typename T> __device__ __forceinline__ T neg(T x) { return T(-x); }
template <typename T> __device__ __forceinline__ T relu(T x) { return x < T(0) ? T(0) : x; }
template <typename T> __device__ __forceinline__ T sign(T x) {
  return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);
}

__device__ __forceinline__ float exp_(float x) { return expf(x); }
__device__ __forceinline__ double exp_(double x) { return exp(x); }
__device__ __forceinline__ float log_(float x) { return logf(x); }
__device__ __forceinline__ double log_(double x) { return log(x); }
__device__ __forceinline__ float sqrt_(float x) { return sqrtf(x); }
__device__ __forceinline__ double sqrt_(double x) { return sqrt(x); }
template <typename T> __device__ __forceinline__ T reciprocal(T x) { return T(1) / x; }
__device__ __forceinline__ float sin_(float x) { return sinf(x); }
__device__ __forceinline__ double sin_(double x) { return sin(x); }
__device__ __forceinline__ float cos_(float x) { return cosf(x); }
__device__ __forceinline__ double cos_(double x) { return cos(x); }
__device__ __forceinline__ float tanh_(float x) { return tanhf(x); }
__device__ __forceinline__ double tanh_(double x) { return tanh(x); }
__device__ __forceinline__ float erf_(float x) { return erff(x); }
__device__ __forceinline__ double erf_(double x) { return erf(x); }
__device__ __forceinline__ float floor_(float x) { return floorf(x); }
__device__ __forceinline__ double floor_(double x) { return floor(x); }
__device__ __forceinline__ float ceil_(float x) { return ceilf(x); }
__device__ __forceinline__ double ceil_(double x) { return ceil(x); }
__device__ __forceinline__ float round_(float x) { return rintf(x); }
__device__ __forceinline__ double round_(double x) { return rint(x); }

__device__ __forceinline__ float sigmoid(float x) { return ::stitch::sigmoid(x); }
__device__ __forceinline__ double sigmoid(double x) {
  const double e = exp(-fabs(x));
  return x >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}
template <typename T> __device__ __forceinline__ T leaky_relu(T x, float alpha) {
  return x < T(0) ? T(alpha) * x : x;
}
template <typename T> __device__ __forceinline__ T elu(T x, float alpha) {
  return x > T(0) ? x : (x != x ? x : T(alpha) * T(expm1(double(x))));
}
__device__ __forceinline__ float elu(float x, float alpha) { return ::stitch::elu(x, alpha); }
template <typename T> __device__ __forceinline__ T selu(T x, float alpha, float gamma) {
  return T(gamma) * (x > T(0) ? x : (x != x ? x : T(alpha) * T(expm1(double(x)))));
}
__device__ __forceinline__ float selu(float x, float alpha, float gamma) {
  return ::stitch::selu(x, alpha, gamma);
}
template <typename T> __device__ __forceinline__ T celu(T x, float alpha) {
  return x > T(0) ? x : (x != x ? x : T(alpha) * T(expm1(double(x) / alpha)));
}
__device__ __forceinline__ float celu(float x, float alpha) { return ::stitch::celu(x, alpha); }
// approximate: 0 for "none" (erf form), 1 for "tanh".
__device__ __forceinline__ float gelu(float x, int approximate) {
  return approximate ? ::stitch::gelu_tanh(x) : ::stitch::gelu_erf(x);
}
__device__ __forceinline__ double gelu(double x, int approximate) {
  if (approximate) return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
}
template <typename T> __device__ __forceinline__ T hard_sigmoid(T x, float alpha, float beta) {
  T v = T(alpha) * x + T(beta);
  return v < T(0) ? T(0) : (v > T(1) ? T(1) : v);
}
template <typename T> __device__ __forceinline__ T hard_swish(T x) {
  return x * hard_sigmoid(x, 1.0f / 6.0f, 0.5f);
}
__device__ __forceinline__ float softplus(float x) { return ::stitch::softplus(x); }
__device__ __forceinline__ double softplus(double x) {
  if (x != x) return x;
  return (x > 0.0 ? x : 0.0) + log1p(exp(-fabs(x)));
}
template <typename T> __device__ __forceinline__ T softsign(T x) { return x / (T(1) + abs_(x)); }
template <typename T> __device__ __forceinline__ T mish(T x) { return x * tanh_(softplus(x)); }
template <typename T> __device__ __forceinline__ bool not_(T x) { return !x; }
template <typename T> __device__ __forceinline__ bool isnan_(T x) { return x != x; }
template <typename T>
__device__ __forceinline__ bool isinf_(T x, int detect_negative, int detect_positive) {
  if (!is_float_type<T>::value) return false;
  return (detect_positive && x > T(0) && x - x != x - x) ||
         (detect_negative && x < T(0) && x - x != x - x);
}
// Clip keeps NaN (comparisons, not fmin/fmax); with low > high every value becomes high, as
// ONNX specifies (the upper bound is applied last).
template <typename T> __device__ __forceinline__ T clip(T x, T low, T high) {
  const T raised = x < low ? low : x;
  return raised > high ? high : raised;
}

// ---- binary ----
template <typename T> __device__ __forceinline__ T add(T a, T b) { return T(a + b); }
template <typename T> __device__ __forceinline__ T sub(T a, T b) { return T(a - b); }
template <typename T> __device__ __forceinline__ T mul(T a, T b) { return T(a * b); }
template <typename T> __device__ __forceinline__ T div(T a, T b) {
  if (!is_float_type<T>::value && b == T(0)) return T(0);
  return T(a / b);
}
// fmod = 1: the C remainder (sign of the dividend); fmod = 0: the sign of the divisor.
template <typename T> __device__ __forceinline__ T mod(T a, T b, int fmod_) {
  if (b == T(0) || (T(-1) < T(0) && b == T(-1))) return T(0); // also avoids INT_MIN % -1
  T r = T(a % b);
  if (!fmod_ && r != T(0) && ((r < T(0)) != (b < T(0)))) r = T(r + b);
  return r;
}
__device__ __forceinline__ float mod(float a, float b, int fmod_) {
  return fmod_ ? fmodf(a, b) : ::stitch::floor_mod(a, b);
}
__device__ __forceinline__ double mod(double a, double b, int fmod_) {
  double r = fmod(a, b);
  if (!fmod_ && r != 0.0 && ((r < 0.0) != (b < 0.0))) r += b;
  return r;
}
// Integer power by squaring (wrapping like repeated multiplication); a negative exponent
// gives 0 except for bases 1 and -1.
template <typename T> __device__ __forceinline__ T pow_(T a, T b) {
  if (b < T(0))
    return a == T(1) ? T(1) : (T(-1) < T(0) && a == T(-1) ? ((b & T(1)) ? a : T(1)) : T(0));
  unsigned long long base = (unsigned long long)(long long)a, result = 1;
  for (unsigned long long e = (unsigned long long)b; e; e >>= 1) {
    if (e & 1) result *= base;
    base *= base;
  }
  return T(result);
}
__device__ __forceinline__ float pow_(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double pow_(double a, double b) { return pow(a, b); }
// max/min propagate NaN, as ONNX Runtime does.
template <typename T> __device__ __forceinline__ T max_(T a, T b) {
  return (a != a || a > b) ? a : b;
}
template <typename T> __device__ __forceinline__ T min_(T a, T b) {
  return (a != a || a < b) ? a : b;
}
template <typename T> __device__ __forceinline__ bool equal(T a, T b) { return a == b; }
template <typename T> __device__ __forceinline__ bool less(T a, T b) { return a < b; }
template <typename T> __device__ __forceinline__ bool greater(T a, T b) { return a > b; }
template <typename T> __device__ __forceinline__ bool less_equal(T a, T b) { return a <= b; }
template <typename T> __device__ __forceinline__ bool greater_equal(T a, T b) { return a >= b; }
__device__ __forceinline__ bool and_(bool a, bool b) { return a && b; }
__device__ __forceinline__ bool or_(bool a, bool b) { return a || b; }
__device__ __forceinline__ bool xor_(bool a, bool b) { return a != b; }
template <typename T> __device__ __forceinline__ T prelu(T x, T slope) {
  return x < T(0) ? T(slope * x) : x;
}

// ---- ternary ----
template <typename T> __device__ __forceinline__ T where(bool c, T a, T b) { return c ? a : b; }

} // namespace ops
} // namespace stitch

namespace stitch {
namespace ops {

// ONNX Cast: float to integer truncates toward zero and saturates (NaN gives 0) rather than
// invoking undefined behaviour; anything to bool is "!= 0".
template <typename To, typename From> __device__ __forceinline__ To cast_to(From x) {
  if constexpr (std::is_same<To, bool>::value) {
    return x != From(0);
  } else if constexpr (is_float_type<From>::value && !is_float_type<To>::value) {
    if (x != x) return To(0);
    const double lo = double(std::numeric_limits<To>::lowest());
    const double hi = double(std::numeric_limits<To>::max());
    if (double(x) <= lo) return std::numeric_limits<To>::lowest();
    if (double(x) >= hi) return std::numeric_limits<To>::max();
    return To(x);
  } else {
    return To(x);
  }
}

} // namespace ops
} // namespace stitch
