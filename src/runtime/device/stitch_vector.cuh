// 16-byte vector loads and stores of fp32 data for generated kernels, with alignment checks and
// scalar tails, so that an elementwise kernel can use float4 accesses on any pointer and length:
//
//   is_aligned_16(p)                      p is 16-byte aligned
//   load_float4(data, i, count, fill)     elements [i, i+4) of data[0, count) as a float4: one
//                                         16-byte load when all four are in range and data + i
//                                         is aligned, else element loads (`fill` past count)
//   store_float4(data, i, count, v)       the matching store; never writes past count
//   map_float4 / zip_float4               apply a scalar function lane by lane
//   lanes8<T>                             eight 2-byte elements as one 16-byte access
//   transform_elements(in, out, n, fn)    grid-stride out[i] = fn(in[i]): float4 body when both
//                                         pointers are aligned, scalar tail (or all scalar)
//
// A misaligned float4 access faults on a GPU; the checks make the vector path an optimization
// that can never be wrong, and the tests run both paths.
#pragma once

#include "stitch_cuda.h"

#include <cstddef>

namespace stitch {

inline constexpr unsigned kFloatsPerVector = 4; // 16 bytes

// Eight 2-byte elements (float16, bfloat16, int16, uint16) as one 16-byte access, for the
// generated kernels' vector bodies: `reinterpret_cast<const lanes8<float16>*>(in)[v].lane[k]`.
template <typename T> struct alignas(16) lanes8 {
  static_assert(sizeof(T) == 2, "lanes8 holds 2-byte elements");
  T lane[8];
};

__device__ __forceinline__ bool is_aligned_16(const void* pointer) {
  return (reinterpret_cast<unsigned long long>(pointer) & 15ull) == 0;
}

__device__ __forceinline__ float4 load_float4(const float* __restrict__ data, std::size_t index,
                                              std::size_t count, float fill = 0.0f) {
  const float* element = data + index;
  if (index + kFloatsPerVector <= count && is_aligned_16(element))
    return *reinterpret_cast<const float4*>(element);
  float4 value = make_float4(fill, fill, fill, fill);
  if (index + 0 < count) value.x = element[0];
  if (index + 1 < count) value.y = element[1];
  if (index + 2 < count) value.z = element[2];
  if (index + 3 < count) value.w = element[3];
  return value;
}

__device__ __forceinline__ void store_float4(float* __restrict__ data, std::size_t index,
                                             std::size_t count, float4 value) {
  float* element = data + index;
  if (index + kFloatsPerVector <= count && is_aligned_16(element)) {
    *reinterpret_cast<float4*>(element) = value;
    return;
  }
  if (index + 0 < count) element[0] = value.x;
  if (index + 1 < count) element[1] = value.y;
  if (index + 2 < count) element[2] = value.z;
  if (index + 3 < count) element[3] = value.w;
}

template <typename Fn> __device__ __forceinline__ float4 map_float4(float4 value, Fn fn) {
  return make_float4(fn(value.x), fn(value.y), fn(value.z), fn(value.w));
}

template <typename Fn> __device__ __forceinline__ float4 zip_float4(float4 a, float4 b, Fn fn) {
  return make_float4(fn(a.x, b.x), fn(a.y, b.y), fn(a.z, b.z), fn(a.w, b.w));
}

template <typename Fn>
__device__ void transform_elements(const float* __restrict__ in, float* __restrict__ out,
                                   std::size_t count, Fn fn) {
  const std::size_t first = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  std::size_t vectorized = 0; // elements handled by the float4 body
  if (is_aligned_16(in) && is_aligned_16(out)) {
    const std::size_t vectors = count / kFloatsPerVector;
    const float4* in4 = reinterpret_cast<const float4*>(in);
    float4* out4 = reinterpret_cast<float4*>(out);
    for (std::size_t v = first; v < vectors; v += stride)
      out4[v] = map_float4(in4[v], fn);
    vectorized = vectors * kFloatsPerVector;
  }
  for (std::size_t i = vectorized + first; i < count; i += stride)
    out[i] = fn(in[i]);
}

} // namespace stitch
