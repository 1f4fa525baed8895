// Index helpers of the movement kernels (src/emitter/kernel_movement*.cpp):
//
//   wrap_index          a run-time index (Gather, GatherElements, GatherND, ScatterND): negative
//                       counts from the end; out of range gives -1, and the kernel then writes
//                       zero (gathers) or skips the update (ScatterND) instead of reading or
//                       writing out of bounds.
//   reflect/edge/wrap   Pad's modes: a coordinate of the padded output, relative to the start
//                       of an axis of n >= 1 elements, mapped back into [0, n) (reflect without
//                       repeating the edge, as numpy; any pad width).
//   resize_*            Resize's coordinate transformations (computed in double, as the ONNX
//                       reference does), nearest rounding, and the linear / cubic taps.
//   scatter_combine     ScatterND's reductions (max and min propagate NaN, as numpy).
//   saturate_round      a float accumulator stored into an integer element: rounded half to
//                       even and clamped to the type's range (the reference's saturate_cast).
#pragma once

#include <stdint.h>

#include <type_traits>

#include "stitch_cuda.h"

namespace stitch {
namespace movement {

template <typename I> __device__ __forceinline__ int64_t wrap_index(I index, int64_t dim) {
  int64_t i = static_cast<int64_t>(index);
  if (i < 0) i += dim;
  return i >= 0 && i < dim ? i : -1;
}

// ---- Pad ----

__device__ __forceinline__ int64_t reflect_index(int64_t x, int64_t n) {
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  int64_t m = x % period;
  if (m < 0) m += period;
  return m < n ? m : period - m;
}

__device__ __forceinline__ int64_t edge_index(int64_t x, int64_t n) {
  return x < 0 ? 0 : (x >= n ? n - 1 : x);
}

__device__ __forceinline__ int64_t wrap_around_index(int64_t x, int64_t n) {
  int64_t m = x % n;
  return m < 0 ? m + n : m;
}

// ---- Resize ----

enum class ResizeCoordinates : int {
  HalfPixel,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfCropAndResize,
  HalfPixelSymmetric,
};

enum class ResizeNearest : int { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

// The input coordinate of output coordinate x on one axis. `scale` is the axis's scale
// factor (given, or output size / input size); the reference's "output width" is
// scale * in_size (not rounded); roi_start/roi_end are the axis's normalized crop box
// (tf_crop_and_resize only).
__device__ __forceinline__ double resize_coordinate(int64_t x, ResizeCoordinates mode, double scale,
                                                    int64_t in_size, int64_t out_size,
                                                    double roi_start, double roi_end) {
  const double xd = static_cast<double>(x);
  const double out_width = scale * static_cast<double>(in_size);
  switch (mode) {
  case ResizeCoordinates::AlignCorners:
    return out_width == 1.0 ? 0.0 : xd * static_cast<double>(in_size - 1) / (out_width - 1.0);
  case ResizeCoordinates::Asymmetric:
    return xd / scale;
  case ResizeCoordinates::TfCropAndResize: {
    const double span = (roi_end - roi_start) * static_cast<double>(in_size - 1);
    const double start = roi_start * static_cast<double>(in_size - 1);
    return out_width == 1.0 ? start + span / 2.0 : start + xd * span / (out_width - 1.0);
  }
  case ResizeCoordinates::PytorchHalfPixel:
    return out_width == 1.0 ? -0.5 : (xd + 0.5) / scale - 0.5;
  case ResizeCoordinates::HalfPixelSymmetric: {
    const double adjustment = static_cast<double>(out_size) / out_width;
    const double center = static_cast<double>(in_size) / 2.0;
    return center * (1.0 - adjustment) + (xd + 0.5) / scale - 0.5;
  }
  case ResizeCoordinates::HalfPixel:
  default:
    return (xd + 0.5) / scale - 0.5;
  }
}

// tf_crop_and_resize: a coordinate outside the input gives the extrapolation value.
__device__ __forceinline__ bool resize_outside(double x, int64_t in_size) {
  return x < 0.0 || x > static_cast<double>(in_size - 1);
}

// The nearest input index, clamped to the axis (an integral x is itself in every mode).
__device__ __forceinline__ int64_t resize_nearest(double x, ResizeNearest mode, int64_t in_size) {
  const double lower = floor(x);
  const double ratio = x - lower;
  int64_t i = static_cast<int64_t>(lower);
  bool up = false;
  switch (mode) {
  case ResizeNearest::RoundPreferFloor:
    up = ratio > 0.5;
    break;
  case ResizeNearest::RoundPreferCeil:
    up = ratio >= 0.5;
    break;
  case ResizeNearest::Floor:
    up = false;
    break;
  case ResizeNearest::Ceil:
    up = ratio > 0.0;
    break;
  }
  return edge_index(up ? i + 1 : i, in_size);
}

// The two linear taps of x (indices clamped to the axis, as the reference's edge padding).
template <typename W>
__device__ __forceinline__ void resize_linear_taps(double x, int64_t in_size, int64_t index[2],
                                                   W weight[2]) {
  const double lower = floor(x);
  const double ratio = x - lower;
  const int64_t i = static_cast<int64_t>(lower);
  index[0] = edge_index(i, in_size);
  index[1] = edge_index(i + 1, in_size);
  weight[0] = static_cast<W>(1.0 - ratio);
  weight[1] = static_cast<W>(ratio);
}

// The four cubic taps of x with coefficient a; exclude_outside drops the taps outside the
// axis and renormalizes the rest.
template <typename W>
__device__ __forceinline__ void resize_cubic_taps(double x, int64_t in_size, double a,
                                                  bool exclude_outside, int64_t index[4],
                                                  W weight[4]) {
  const double lower = floor(x);
  const double ratio = x - lower;
  const int64_t i = static_cast<int64_t>(lower);
  const double r1 = ratio + 1.0, r2 = 1.0 - ratio, r3 = 2.0 - ratio;
  double w[4] = {
      ((a * r1 - 5.0 * a) * r1 + 8.0 * a) * r1 - 4.0 * a,
      ((a + 2.0) * ratio - (a + 3.0)) * ratio * ratio + 1.0,
      ((a + 2.0) * r2 - (a + 3.0)) * r2 * r2 + 1.0,
      ((a * r3 - 5.0 * a) * r3 + 8.0 * a) * r3 - 4.0 * a,
  };
  double total = 0.0;
  for (int t = 0; t < 4; ++t) {
    const int64_t j = i - 1 + t;
    if (exclude_outside && (j < 0 || j >= in_size)) w[t] = 0.0;
    total += w[t];
  }
  for (int t = 0; t < 4; ++t) {
    index[t] = edge_index(i - 1 + t, in_size);
    weight[t] = static_cast<W>(exclude_outside ? w[t] / total : w[t]);
  }
}

// Antialiased taps (antialias=1) on an axis downsampled by `scale` < 1: the linear (tent) or
// cubic filter stretched by 1 / scale over `taps` inputs around x (taps = 2 - 2 * start with
// start = floor(-1 / scale) + 1, or floor(-2 / scale) + 1 for cubic), normalized to sum 1.
template <typename W>
__device__ __forceinline__ void resize_antialias_taps(double x, int64_t in_size, double scale,
                                                      bool cubic, double a, bool exclude_outside,
                                                      int taps, int64_t* index, W* weight) {
  const double s = scale < 1.0 ? scale : 1.0;
  const double lower = floor(x);
  const double ratio = x - lower;
  const int64_t i = static_cast<int64_t>(lower);
  const int64_t start = static_cast<int64_t>(floor((cubic ? -2.0 : -1.0) / s)) + 1;
  auto coefficient = [&](int t) {
    const int64_t j = i + start + t;
    if (exclude_outside && (j < 0 || j >= in_size)) return 0.0;
    const double d = fabs((static_cast<double>(start + t) - ratio) * s);
    if (!cubic) return d < 1.0 ? 1.0 - d : 0.0;
    if (d <= 1.0) return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0;
    if (d < 2.0) return ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a;
    return 0.0;
  };
  double total = 0.0;
  for (int t = 0; t < taps; ++t)
    total += coefficient(t);
  for (int t = 0; t < taps; ++t) {
    index[t] = edge_index(i + start + t, in_size);
    weight[t] = static_cast<W>(coefficient(t) / total);
  }
}

template <typename T, typename A> __device__ __forceinline__ T saturate_round(A value) {
  if constexpr (std::is_floating_point<T>::value) {
    return static_cast<T>(value);
  } else if constexpr (std::is_same<T, bool>::value) {
    return value != A(0);
  } else {
    // std::numeric_limits is host-only under nvcc: the bounds from the unsigned type.
    using U = typename std::make_unsigned<T>::type;
    constexpr bool is_signed = std::is_signed<T>::value;
    constexpr U all_ones = static_cast<U>(~U(0));
    constexpr T highest = is_signed ? static_cast<T>(all_ones >> 1) : static_cast<T>(all_ones);
    constexpr T lowest = is_signed ? static_cast<T>(-static_cast<T>(all_ones >> 1) - 1) : T(0);
    const double rounded = rint(static_cast<double>(value));
    if (!(rounded >= static_cast<double>(lowest))) return lowest; // also NaN
    if (rounded >= static_cast<double>(highest) + 1.0) return highest;
    return static_cast<T>(rounded);
  }
}

// ---- ScatterND ----

enum class ScatterReduction : int { None, Add, Mul, Max, Min };

template <typename T>
__device__ __forceinline__ T scatter_combine(T current, T update, ScatterReduction reduction) {
  switch (reduction) {
  case ScatterReduction::Add:
    return static_cast<T>(current + update);
  case ScatterReduction::Mul:
    return static_cast<T>(current * update);
  case ScatterReduction::Max:
    if (current != current) return current;
    if (update != update) return update;
    return update > current ? update : current;
  case ScatterReduction::Min:
    if (current != current) return current;
    if (update != update) return update;
    return update < current ? update : current;
  case ScatterReduction::None:
  default:
    return update;
  }
}

} // namespace movement
} // namespace stitch
