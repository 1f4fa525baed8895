// Window arithmetic for the pooling kernels (kernel_window.cpp): which taps of a dilated
// window fall inside an axis, and the value a max starts from.
//
// A window on one spatial axis starts at `start` (output position * stride - pad begin, so
// possibly negative) and its tap k (0 <= k < kernel) reads position start + k * dilation.
// Generated kernels loop k over [first_tap, end_tap): exactly the taps inside [0, size), with
// no bounds test per tap. The same two functions with a shifted start and size count the taps
// inside the padded axis (AveragePool's count_include_pad).
#pragma once

#include <stdint.h>

#include "stitch_cuda.h"

namespace stitch {
namespace window {

// The first tap k with start + k * dilation >= 0.
__device__ __forceinline__ int64_t first_tap(int64_t start, int64_t dilation) {
  return start >= 0 ? 0 : (-start + dilation - 1) / dilation;
}

// One past the last tap k < kernel with start + k * dilation < size (0 when the window starts
// at or past the end).
__device__ __forceinline__ int64_t end_tap(int64_t start, int64_t dilation, int64_t kernel,
                                           int64_t size) {
  if (start >= size) return 0;
  const int64_t inside = (size - start + dilation - 1) / dilation;
  return inside < kernel ? inside : kernel;
}

// How many taps of the window lie inside [0, size).
__device__ __forceinline__ int64_t taps_inside(int64_t start, int64_t dilation, int64_t kernel,
                                               int64_t size) {
  const int64_t count = end_tap(start, dilation, kernel, size) - first_tap(start, dilation);
  return count > 0 ? count : 0;
}

// The lowest value of T: what MaxPool writes for a window with no tap inside the input.
template <typename T> __device__ __forceinline__ T lowest();
template <> __device__ __forceinline__ float lowest<float>() { return -INFINITY; }
template <> __device__ __forceinline__ double lowest<double>() { return -INFINITY; }
template <> __device__ __forceinline__ int8_t lowest<int8_t>() { return -128; }
template <> __device__ __forceinline__ uint8_t lowest<uint8_t>() { return 0; }
template <> __device__ __forceinline__ int16_t lowest<int16_t>() { return -32768; }
template <> __device__ __forceinline__ uint16_t lowest<uint16_t>() { return 0; }
template <> __device__ __forceinline__ int32_t lowest<int32_t>() { return -2147483647 - 1; }
template <> __device__ __forceinline__ uint32_t lowest<uint32_t>() { return 0u; }
template <> __device__ __forceinline__ int64_t lowest<int64_t>() {
  return -9223372036854775807LL - 1;
}
template <> __device__ __forceinline__ uint64_t lowest<uint64_t>() { return 0ull; }

} // namespace window
} // namespace stitch
