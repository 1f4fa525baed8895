// Typed reductions, arg-reductions and scans for generated reduction and normalization kernels,
// over any accumulator type (float, double, int64_t, uint64_t, ...), in a fixed order.
//
//   Sum, Prod, Max, Min          combine functors with identity<T>(); Max and Min propagate NaN
//                                (numpy's maximum.reduce), unlike fmaxf/fminf.
//   ArgPair<T>, ArgBest<max, last>
//                                a (value, index) pair and the functor that keeps the better one:
//                                the larger (smaller) value, NaN above everything, ties to the
//                                first index (or the last with select_last_index). Index -1 is
//                                the identity ("no element yet").
//   warp_allreduce(v, op)        all 32 lanes of a full warp call; every lane gets the result. A
//                                butterfly (__shfl_xor_sync) whose every step combines the same
//                                two values in every lane, so all lanes hold equal results.
//   block_allreduce(v, op)       every thread of a one-dimensional block whose size is a multiple
//                                of 32 calls; every thread gets the result: a butterfly per warp,
//                                the per-warp partials through shared memory, a butterfly over
//                                them. The order depends only on the block size. Contains
//                                __syncthreads (a trailing one protects the scratch, so calls may
//                                follow each other).
//   warp_scan_chunk(x, carry, exclusive)
//                                one chunk of 32 consecutive elements of a running sum (CumSum):
//                                lane i gets carry + x_0 + ... + x_i (or + x_{i-1}, exclusive);
//                                carry becomes the chunk's total. Hillis-Steele with
//                                __shfl_up_sync, so the order is fixed.
//   finite_or_zero, exp_of, log_of, sqrt_of, abs_of
//                                scalar helpers generic over floating and integer accumulators.
//
// STITCH_UNROLL asks both compilers to unroll the next loop (register-cached rows index their
// array with the loop counter, which must become a constant).
#pragma once

#include "stitch_cuda.h"

#include <stdint.h>

#include <limits>
#include <type_traits>

#if defined(__CUDACC__)
#define STITCH_UNROLL _Pragma("unroll")
#else
#define STITCH_UNROLL _Pragma("GCC unroll 64")
#endif

namespace stitch {
namespace rows {

inline constexpr unsigned kWarpLanes = 32;
inline constexpr unsigned kAllLanes = 0xffffffffu;

template <typename T> __device__ __forceinline__ bool is_nan(T x) { return x != x; }

// The largest and smallest values of T, infinities for floating types.
template <typename T> __device__ __forceinline__ T highest() {
  if constexpr (std::is_floating_point<T>::value)
    return std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::max();
}
template <typename T> __device__ __forceinline__ T lowest() {
  if constexpr (std::is_floating_point<T>::value)
    return -std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::lowest();
}

// ---- combine functors ----

struct Sum {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
  template <typename T> __device__ __forceinline__ static T identity() { return T(0); }
};
struct Prod {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a * b; }
  template <typename T> __device__ __forceinline__ static T identity() { return T(1); }
};
struct Max {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const {
    return (is_nan(a) || a > b) ? a : b;
  }
  template <typename T> __device__ __forceinline__ static T identity() { return lowest<T>(); }
};
struct Min {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const {
    return (is_nan(a) || a < b) ? a : b;
  }
  template <typename T> __device__ __forceinline__ static T identity() { return highest<T>(); }
};

template <typename T> struct ArgPair {
  T value;
  int64_t index; // -1: no element yet
};

template <bool kMax, bool kLast> struct ArgBest {
  template <typename T>
  __device__ __forceinline__ ArgPair<T> operator()(ArgPair<T> a, ArgPair<T> b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    const bool a_nan = is_nan(a.value), b_nan = is_nan(b.value);
    bool a_wins;
    if (a_nan != b_nan)
      a_wins = a_nan;
    else if (!a_nan && a.value != b.value)
      a_wins = kMax ? a.value > b.value : a.value < b.value;
    else
      a_wins = kLast ? a.index > b.index : a.index < b.index;
    return a_wins ? a : b;
  }
  template <typename P> __device__ __forceinline__ static P identity() {
    return P{decltype(P::value)(0), -1};
  }
};

// ---- warp shuffles of accumulators and pairs ----

template <typename T> __device__ __forceinline__ T shuffle_xor(T value, int lane_mask) {
  return __shfl_xor_sync(kAllLanes, value, lane_mask);
}
template <typename T>
__device__ __forceinline__ ArgPair<T> shuffle_xor(ArgPair<T> pair, int lane_mask) {
  return ArgPair<T>{__shfl_xor_sync(kAllLanes, pair.value, lane_mask),
                    __shfl_xor_sync(kAllLanes, pair.index, lane_mask)};
}

template <typename T, typename Op> __device__ __forceinline__ T warp_allreduce(T value, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1)
    value = op(value, shuffle_xor(value, offset));
  return value;
}

template <typename T, typename Op> __device__ T block_allreduce(T value, Op op) {
  STITCH_SHARED(T, warp_partials, 32);
  const unsigned warp = threadIdx.x / kWarpLanes, lane = threadIdx.x % kWarpLanes;
  const unsigned warps = blockDim.x / kWarpLanes;
  value = warp_allreduce(value, op);
  if (lane == 0) warp_partials[warp] = value;
  __syncthreads();
  T total = lane < warps ? warp_partials[lane] : Op::template identity<T>();
  total = warp_allreduce(total, op);
  __syncthreads(); // the next reduction may overwrite the partials only after every read
  return total;
}

// ---- running sums ----

template <typename T> __device__ __forceinline__ T warp_scan_chunk(T x, T& carry, bool exclusive) {
  const unsigned lane = threadIdx.x % kWarpLanes;
  T inclusive = x;
  for (unsigned offset = 1; offset < kWarpLanes; offset <<= 1) {
    const T other = __shfl_up_sync(kAllLanes, inclusive, offset);
    if (lane >= offset) inclusive = inclusive + other;
  }
  const T before = __shfl_up_sync(kAllLanes, inclusive, 1); // lane i-1's inclusive sum
  const T result = exclusive ? (lane == 0 ? carry : carry + before) : carry + inclusive;
  carry = carry + __shfl_sync(kAllLanes, inclusive, kWarpLanes - 1);
  return result;
}

// ---- scalar helpers ----

// The shift of a max-subtracted exponential: an infinite maximum shifts by nothing, so that
// exp(x - shift) gives 0 for a row of -inf and inf for a row holding +inf (never inf - inf).
template <typename T> __device__ __forceinline__ T finite_or_zero(T x) {
  return (x - x == x - x) ? x : T(0);
}

__device__ __forceinline__ float exp_of(float x) { return expf(x); }
__device__ __forceinline__ double exp_of(double x) { return exp(x); }
template <typename T> __device__ __forceinline__ T exp_of(T x) { return T(exp(double(x))); }
__device__ __forceinline__ float log_of(float x) { return logf(x); }
__device__ __forceinline__ double log_of(double x) { return log(x); }
template <typename T> __device__ __forceinline__ T log_of(T x) { return T(log(double(x))); }
__device__ __forceinline__ float sqrt_of(float x) { return sqrtf(x); }
__device__ __forceinline__ double sqrt_of(double x) { return sqrt(x); }
template <typename T> __device__ __forceinline__ T sqrt_of(T x) { return T(sqrt(double(x))); }
__device__ __forceinline__ float abs_of(float x) { return fabsf(x); }
__device__ __forceinline__ double abs_of(double x) { return fabs(x); }
template <typename T> __device__ __forceinline__ T abs_of(T x) { return x < T(0) ? T(0) - x : x; }

} // namespace rows
} // namespace stitch
