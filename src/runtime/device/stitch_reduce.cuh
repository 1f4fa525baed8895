// Warp and block reductions for generated kernels, in fp32, in a fixed order.
//
//   warp_reduce_sum/max/min(v)    all 32 lanes of a full warp call; every lane gets the result.
//                                 A butterfly (__shfl_xor_sync): each step adds the same two
//                                 values in every lane, so all lanes hold bitwise equal results.
//   block_reduce_sum/max/min(v)   every thread of the block calls (any block size 1..1024, any
//                                 shape); every thread gets the result. Each warp reduces to its
//                                 lane 0 by a fixed __shfl_down_sync tree, warp 0 reduces the
//                                 per-warp partials the same way, and the total is broadcast
//                                 through shared memory. The order depends only on the block
//                                 size, so results are deterministic run to run.
//   Welford                       WelfordStats {mean, m2, count} with welford_push (one value),
//                                 welford_combine (Chan et al.'s parallel merge),
//                                 block_welford (every thread calls) and welford_variance
//                                 (population variance, as LayerNormalization uses). Numerically
//                                 stable where sum(x^2)/n - mean^2 cancels catastrophically.
//
// Block reductions contain __syncthreads, so every thread of the block must reach them, and they
// may be called back to back (a trailing barrier protects their shared scratch). Max and min use
// fmaxf/fminf, which ignore a NaN operand; propagate NaN separately where a model needs it.
#pragma once

#include "stitch_cuda.h"

namespace stitch {

inline constexpr unsigned kFullWarpMask = 0xffffffffu;

struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct MinOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fminf(a, b); }
};

// The thread's position in its block, x fastest (the order CUDA assigns threads to warps).
__device__ __forceinline__ unsigned linear_thread_index() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
__device__ __forceinline__ unsigned block_thread_count() {
  return blockDim.x * blockDim.y * blockDim.z;
}

// Lanes that exist in warp `warp` of a block of `threads` threads.
__device__ __forceinline__ unsigned warp_member_mask(unsigned warp, unsigned threads) {
  const unsigned lanes = threads - warp * 32u;
  return lanes >= 32u ? kFullWarpMask : (1u << lanes) - 1u;
}

template <typename Op> __device__ __forceinline__ float warp_allreduce(float value, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1)
    value = op(value, __shfl_xor_sync(kFullWarpMask, value, offset));
  return value;
}

__device__ __forceinline__ float warp_reduce_sum(float value) {
  return warp_allreduce(value, SumOp{});
}
__device__ __forceinline__ float warp_reduce_max(float value) {
  return warp_allreduce(value, MaxOp{});
}
__device__ __forceinline__ float warp_reduce_min(float value) {
  return warp_allreduce(value, MinOp{});
}

// Reduces the values of lanes [0, valid_lanes) into lane 0 (other lanes hold partial results).
// `member_mask` must name exactly the lanes that call.
template <typename Op>
__device__ __forceinline__ float warp_reduce_to_lane0(float value, unsigned member_mask,
                                                      unsigned valid_lanes, Op op) {
  const unsigned lane = linear_thread_index() & 31u;
  for (unsigned offset = 16; offset > 0; offset >>= 1) {
    const float other = __shfl_down_sync(member_mask, value, offset);
    if (lane + offset < valid_lanes) value = op(value, other);
  }
  return value;
}

template <typename Op> __device__ float block_allreduce(float value, Op op) {
  STITCH_SHARED(float, warp_partials, 32);
  STITCH_SHARED(float, block_total, 1);
  const unsigned threads = block_thread_count();
  const unsigned thread = linear_thread_index();
  const unsigned warp = thread >> 5, lane = thread & 31u;
  const unsigned warps = (threads + 31u) >> 5;
  const unsigned members = warp_member_mask(warp, threads);

  value = warp_reduce_to_lane0(value, members, threads - warp * 32u, op);
  if (lane == 0) warp_partials[warp] = value;
  __syncthreads();
  if (warp == 0) {
    float partial = lane < warps ? warp_partials[lane] : value;
    partial = warp_reduce_to_lane0(partial, members, warps, op);
    if (lane == 0) block_total[0] = partial;
  }
  __syncthreads();
  const float total = block_total[0];
  __syncthreads(); // the next block reduction may overwrite the scratch only after every read
  return total;
}

__device__ __forceinline__ float block_reduce_sum(float value) {
  return block_allreduce(value, SumOp{});
}
__device__ __forceinline__ float block_reduce_max(float value) {
  return block_allreduce(value, MaxOp{});
}
__device__ __forceinline__ float block_reduce_min(float value) {
  return block_allreduce(value, MinOp{});
}

// ---- Welford mean / variance ----

struct WelfordStats {
  float mean;
  float m2;    // sum of squared deviations from the mean
  float count; // exact up to 2^24 values per state
};

__device__ __forceinline__ WelfordStats welford_empty() { return WelfordStats{0.0f, 0.0f, 0.0f}; }

__device__ __forceinline__ WelfordStats welford_push(WelfordStats stats, float x) {
  stats.count += 1.0f;
  const float delta = x - stats.mean;
  stats.mean += delta / stats.count;
  stats.m2 += delta * (x - stats.mean);
  return stats;
}

__device__ __forceinline__ WelfordStats welford_combine(WelfordStats a, WelfordStats b) {
  if (b.count == 0.0f) return a;
  if (a.count == 0.0f) return b;
  const float count = a.count + b.count;
  const float b_share = b.count / count;
  const float delta = b.mean - a.mean;
  return WelfordStats{a.mean + delta * b_share, a.m2 + b.m2 + delta * delta * a.count * b_share,
                      count};
}

__device__ __forceinline__ float welford_variance(WelfordStats stats) {
  return stats.count > 0.0f ? stats.m2 / stats.count : 0.0f;
}

// Like warp_reduce_to_lane0, merging Welford states.
__device__ __forceinline__ WelfordStats warp_welford_to_lane0(WelfordStats stats,
                                                              unsigned member_mask,
                                                              unsigned valid_lanes) {
  const unsigned lane = linear_thread_index() & 31u;
  for (unsigned offset = 16; offset > 0; offset >>= 1) {
    WelfordStats other;
    other.mean = __shfl_down_sync(member_mask, stats.mean, offset);
    other.m2 = __shfl_down_sync(member_mask, stats.m2, offset);
    other.count = __shfl_down_sync(member_mask, stats.count, offset);
    if (lane + offset < valid_lanes) stats = welford_combine(stats, other);
  }
  return stats;
}

// Merges every thread's state; every thread of the block must call, and all get the result.
__device__ inline WelfordStats block_welford(WelfordStats stats) {
  STITCH_SHARED(WelfordStats, warp_partials, 32);
  STITCH_SHARED(WelfordStats, block_total, 1);
  const unsigned threads = block_thread_count();
  const unsigned thread = linear_thread_index();
  const unsigned warp = thread >> 5, lane = thread & 31u;
  const unsigned warps = (threads + 31u) >> 5;
  const unsigned members = warp_member_mask(warp, threads);

  stats = warp_welford_to_lane0(stats, members, threads - warp * 32u);
  if (lane == 0) warp_partials[warp] = stats;
  __syncthreads();
  if (warp == 0) {
    WelfordStats partial = lane < warps ? warp_partials[lane] : stats;
    partial = warp_welford_to_lane0(partial, members, warps);
    if (lane == 0) block_total[0] = partial;
  }
  __syncthreads();
  const WelfordStats total = block_total[0];
  __syncthreads();
  return total;
}

} // namespace stitch
