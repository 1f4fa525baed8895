// fp32 activation and arithmetic helpers for generated kernels, one function per ONNX operator
// whose formula is more than one CUDA math call. Written with the accurate math functions only
// (expf, expm1f, log1pf, erff, tanhf; never __expf or other fast-math intrinsics), arranged so
// that no intermediate overflows (sigmoid and softplus of large |x|) and NaN stays NaN. Default
// attribute values are the ONNX defaults. Compile without --use_fast_math / -ffast-math.
#pragma once

#include "stitch_cuda.h"

namespace stitch {

// Relu(NaN) is NaN (a comparison, not fmaxf, which would drop it).
__device__ __forceinline__ float relu(float x) { return x < 0.0f ? 0.0f : x; }

__device__ __forceinline__ float leaky_relu(float x, float alpha = 0.01f) {
  return x < 0.0f ? alpha * x : x;
}

// 1 / (1 + e^-x) without overflow: e^-|x| is at most 1.
__device__ __forceinline__ float sigmoid(float x) {
  const float e = expf(-fabsf(x));
  return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

__device__ __forceinline__ float hard_sigmoid(float x, float alpha = 0.2f, float beta = 0.5f) {
  return fminf(1.0f, fmaxf(0.0f, alpha * x + beta));
}

__device__ __forceinline__ float hard_swish(float x) {
  return x * hard_sigmoid(x, 1.0f / 6.0f, 0.5f);
}

__device__ __forceinline__ float silu(float x) { return x * sigmoid(x); }

// Gelu with approximate="none": 0.5 x (1 + erf(x / sqrt(2))).
__device__ __forceinline__ float gelu_erf(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

// Gelu with approximate="tanh": 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
__device__ __forceinline__ float gelu_tanh(float x) {
  const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|), which neither overflows nor loses small values.
__device__ __forceinline__ float softplus(float x) {
  if (x != x) return x;
  return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
}

__device__ __forceinline__ float softsign(float x) { return x / (1.0f + fabsf(x)); }

__device__ __forceinline__ float mish(float x) { return x * tanhf(softplus(x)); }

__device__ __forceinline__ float elu(float x, float alpha = 1.0f) {
  return x > 0.0f ? x : (x != x ? x : alpha * expm1f(x));
}

__device__ __forceinline__ float selu(float x, float alpha = 1.67326319217681884765625f,
                                      float gamma = 1.05070102214813232421875f) {
  return gamma * (x > 0.0f ? x : (x != x ? x : alpha * expm1f(x)));
}

// max(0, x) + min(0, alpha (e^(x / alpha) - 1)).
__device__ __forceinline__ float celu(float x, float alpha = 1.0f) {
  return x > 0.0f ? x : (x != x ? x : alpha * expm1f(x / alpha));
}

// -1, 0 or 1; keeps the sign of zero and NaN.
__device__ __forceinline__ float sign(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x); }

// ONNX Round: halves to even (rintf in the default rounding mode).
__device__ __forceinline__ float round_half_even(float x) { return rintf(x); }

// Clip that keeps NaN (fminf/fmaxf would replace it with a bound).
__device__ __forceinline__ float clip(float x, float low, float high) {
  return x < low ? low : (x > high ? high : x);
}

// ONNX Mod with fmod=0 on floats: the remainder takes the divisor's sign (Python's %).
__device__ __forceinline__ float floor_mod(float a, float b) {
  const float r = fmodf(a, b);
  return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
}

__device__ __forceinline__ float reciprocal(float x) { return 1.0f / x; }

} // namespace stitch
