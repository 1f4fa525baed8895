// GEMM chains in one kernel (the "gemm_chain" groups): Y = epilogue(hidden(X·W1[, X·W3])·W2) for
// float16 or bfloat16 tensors on tensor cores, fp32 accumulation, the hidden activations never
// leaving the chip. A thread-block cluster computes one tile of BM rows of Y: block r of the
// cluster owns the slice [r·S, (r + 1)·S) of the hidden dim, computes its hidden activations
// for all BM rows into shared memory (phase 1), multiplies them by its S rows of W2, tile by tile
// of BN2 output columns (phase 2), and the cluster reduces the blocks' partial tiles through
// distributed shared memory (cluster::reduce_scatter_apply), each block storing its share of the
// sums. Nothing of the hidden dim goes to global memory; X, W1 (W3) and W2 are read once per
// row tile.
//
//   ChainConfig<T, WarpsM, WarpsN, BlockK, HiddenTile, OutTile, Gated>
//       BM = 16·WarpsM rows per tile; the block's warps form a WarpsM × WarpsN grid; BlockK (a
//       multiple of 16) is the k step of both products; HiddenTile (BN1) columns of the hidden
//       slice per phase-1 step and OutTile (BN2) output columns per phase-2 step, each a
//       multiple of 16·WarpsN; Gated: the hidden activation takes two products (X·W1, X·W3),
//       as a gated MLP's gate and up projections.
//   ChainConfig::shared_bytes(slice)        the dynamic shared memory for a hidden slice S
//   ChainConfig::slice_of(hidden, blocks)   S for a hidden dim split over a cluster: a multiple
//                                           of BN1 (the last block's slice may run past the
//                                           dim; its columns there are zeros)
//   gemm_chain_tile<Config>(p, first_row, slice, shared)
//       every thread of every block of the cluster calls it, with the cluster's first row, S
//       and the block's dynamic shared memory (Config::shared_bytes(S) bytes).
//
// The problem `p` (generated per group) provides the extents and element access:
//   int64_t rows, inner, hidden, columns    M, K, N1, N2
//   float x(int64_t m, int64_t k)            X[m][k]
//   float w1(int64_t k, int64_t n)           W1[k][n] (and w3 when Gated)
//   float w2(int64_t n, int64_t j)           W2[n][j]
//   float activation(int64_t m, int64_t n, float first, float second)
//                                            the hidden value from X·W1 (and X·W3) at (m, n):
//                                            bias, GELU, SiLU, the gated product, ...
//   void store(int64_t m, int64_t j, float y) Y[m][j] from the sum: bias, residual, the cast
// The hidden values are rounded to T before the second product, as the unfused plan stores
// them. Elements past an extent load as zeros; a hidden column past N1 is zero.
#pragma once

#include "stitch_cluster.cuh"
#include "stitch_cuda.h"
#include "stitch_half.cuh"
#include "stitch_mma.cuh"

#include <stdint.h>

namespace stitch {
namespace chain {

template <class T, int WarpsM, int WarpsN, int BlockK, int HiddenTile, int OutTile, bool Gated>
struct ChainConfig {
  using Element = T;
  static constexpr int kWarpsM = WarpsM, kWarpsN = WarpsN;
  static constexpr int kThreads = 32 * WarpsM * WarpsN;
  static constexpr int kRows = 16 * WarpsM; // BM
  static constexpr int kBlockK = BlockK, kHiddenTile = HiddenTile, kOutTile = OutTile;
  static constexpr bool kGated = Gated;
  // Each warp's columns of a hidden and an output tile, in 8-column fragments.
  static constexpr int kHiddenFragments = HiddenTile / WarpsN / 8;
  static constexpr int kOutFragments = OutTile / WarpsN / 8;
  static_assert(BlockK % 16 == 0, "the k step is a multiple of 16");
  static_assert(HiddenTile % (16 * WarpsN) == 0 && OutTile % (16 * WarpsN) == 0,
                "each warp's columns come in pairs of 8-column fragments");
  // Row strides in elements: 8 past the width keeps rows 16-byte aligned and off one bank.
  static constexpr int kXStride = BlockK + 8;
  static constexpr int kW1Stride = HiddenTile + 8;
  static constexpr int kW2Stride = OutTile + 8;

  static constexpr int align16(int bytes) { return (bytes + 15) / 16 * 16; }
  __host__ __device__ static constexpr int hidden_stride(int slice) { return slice + 8; }
  // Shared memory: the hidden slice, then phase 1's tiles or phase 2's (they alias).
  __host__ __device__ static constexpr int phase_offset(int slice) {
    return align16(kRows * hidden_stride(slice) * static_cast<int>(sizeof(T)));
  }
  static constexpr int kXBytes = align16(kRows * kXStride * static_cast<int>(sizeof(T)));
  static constexpr int kW1Bytes = align16(BlockK * kW1Stride * static_cast<int>(sizeof(T)));
  static constexpr int kPhase1Bytes = kXBytes + kW1Bytes * (Gated ? 2 : 1);
  static constexpr int kW2Bytes = align16(BlockK * kW2Stride * static_cast<int>(sizeof(T)));
  static constexpr int kPhase2Bytes = kW2Bytes + kRows * OutTile * static_cast<int>(sizeof(float));
  __host__ __device__ static constexpr int shared_bytes(int slice) {
    return phase_offset(slice) + (kPhase1Bytes > kPhase2Bytes ? kPhase1Bytes : kPhase2Bytes);
  }
  __host__ __device__ static constexpr int slice_of(int64_t hidden, int blocks) {
    const int64_t per_block = (hidden + blocks - 1) / blocks;
    return static_cast<int>((per_block + HiddenTile - 1) / HiddenTile * HiddenTile);
  }
};

namespace detail {

template <class T> __device__ __forceinline__ uint32_t pair_at(const T* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// A fragment (16 rows × 16 k) of a row-major T tile: rows `row0` .., k from `k0`.
template <class T>
__device__ __forceinline__ mma::FragmentA a_fragment(const T* tile, int stride, int row0, int k0) {
  const int lane = static_cast<int>(threadIdx.x) & 31, g = lane >> 2, t = lane & 3;
  const T* const at = tile + (row0 + g) * stride + k0 + 2 * t;
  return mma::FragmentA{{pair_at(at), pair_at(at + 8 * stride), pair_at(at + 8),
                         pair_at(at + 8 * stride + 8)}};
}

// acc[f] += A (16 rows from a_tile's row0, k from a_k0, 16 k) · B (16 k from b_tile's row
// b_k0, the warp's columns from column0, 8 per fragment), B row-major [k][column].
template <class T, int Fragments>
__device__ __forceinline__ void multiply_step(mma::FragmentC (&acc)[Fragments],
                                              const mma::FragmentA& a, const T* b_tile,
                                              int b_stride, int b_k0, int column0) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  for (int f = 0; f < Fragments; f += 2) {
    mma::FragmentB lo, hi;
    mma::load_transposed<T>(
        lo, hi, b_tile + (b_k0 + (lane & 15)) * b_stride + column0 + 8 * f + 8 * (lane >> 4));
    mma::product<T>(acc[f], a, lo);
    mma::product<T>(acc[f + 1], a, hi);
  }
}

// Cells (r, c) of a rows × columns tile, spread over the block's threads.
template <int Threads, class F> __device__ __forceinline__ void for_cells(int rows, int columns, F f) {
  for (int e = static_cast<int>(threadIdx.x); e < rows * columns; e += Threads)
    f(e / columns, e % columns);
}

} // namespace detail

template <class Config, class Problem>
__device__ void gemm_chain_tile(const Problem& p, int64_t first_row, int slice,
                                unsigned char* shared) {
  using T = typename Config::Element;
  constexpr int BM = Config::kRows, BK = Config::kBlockK, BN1 = Config::kHiddenTile;
  constexpr int BN2 = Config::kOutTile, NT = Config::kThreads;
  constexpr int XS = Config::kXStride, W1S = Config::kW1Stride, W2S = Config::kW2Stride;
  constexpr int F1 = Config::kHiddenFragments, F2 = Config::kOutFragments;
  const int warp = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  const int g = lane >> 2, t = lane & 3;
  const int warp_row = 16 * (warp / Config::kWarpsN);
  const int warp_column1 = BN1 / Config::kWarpsN * (warp % Config::kWarpsN);
  const int warp_column2 = BN2 / Config::kWarpsN * (warp % Config::kWarpsN);
  const int64_t slice_first = static_cast<int64_t>(cluster::block_rank()) * slice;
  const int HS = Config::hidden_stride(slice);
  T* const hidden = reinterpret_cast<T*>(shared);
  unsigned char* const phase = shared + Config::phase_offset(slice);
  T* const x_tile = reinterpret_cast<T*>(phase);
  T* const w1_tile = reinterpret_cast<T*>(phase + Config::kXBytes);
  T* const w3_tile = reinterpret_cast<T*>(phase + Config::kXBytes + Config::kW1Bytes);
  T* const w2_tile = reinterpret_cast<T*>(phase);
  float* const partial = reinterpret_cast<float*>(phase + Config::kW2Bytes);
  const auto row_in = [&](int r) { return first_row + r < p.rows; };

  // Phase 1: the block's hidden slice for the tile's rows, BN1 columns at a time.
  for (int c0 = 0; c0 < slice; c0 += BN1) {
    const int64_t n0 = slice_first + c0;
    mma::FragmentC first[F1], second[Config::kGated ? F1 : 1];
    for (int f = 0; f < F1; ++f)
      mma::zero(first[f]);
    if constexpr (Config::kGated)
      for (int f = 0; f < F1; ++f)
        mma::zero(second[f]);
    for (int64_t k0 = 0; k0 < p.inner; k0 += BK) {
      detail::for_cells<NT>(BM, BK, [&](int r, int c) {
        x_tile[r * XS + c] = T(row_in(r) && k0 + c < p.inner ? p.x(first_row + r, k0 + c) : 0.0f);
      });
      detail::for_cells<NT>(BK, BN1, [&](int r, int c) {
        const bool in = k0 + r < p.inner && n0 + c < p.hidden;
        w1_tile[r * W1S + c] = T(in ? p.w1(k0 + r, n0 + c) : 0.0f);
        if constexpr (Config::kGated) w3_tile[r * W1S + c] = T(in ? p.w3(k0 + r, n0 + c) : 0.0f);
      });
      __syncthreads(); // the tiles are in
      for (int kk = 0; kk < BK; kk += 16) {
        const mma::FragmentA a = detail::a_fragment(x_tile, XS, warp_row, kk);
        detail::multiply_step<T>(first, a, w1_tile, W1S, kk, warp_column1);
        if constexpr (Config::kGated)
          detail::multiply_step<T>(second, a, w3_tile, W1S, kk, warp_column1);
      }
      __syncthreads(); // every warp is done with the tiles before they are refilled
    }
    for (int f = 0; f < F1; ++f)
      for (int e = 0; e < 4; ++e) {
        const int r = warp_row + g + (e >= 2 ? 8 : 0);
        const int c = warp_column1 + 8 * f + 2 * t + (e & 1);
        const int64_t n = n0 + c;
        const float value =
            row_in(r) && n < p.hidden
                ? p.activation(first_row + r, n, first[f].x[e],
                               Config::kGated ? second[Config::kGated ? f : 0].x[e] : 0.0f)
                : 0.0f;
        hidden[r * HS + c0 + c] = T(value);
      }
  }
  __syncthreads(); // the slice is complete (and phase 1's tiles are free for phase 2's)

  // Phase 2: the slice times its rows of W2, BN2 output columns at a time, summed over the
  // cluster's blocks.
  for (int64_t j0 = 0; j0 < p.columns; j0 += BN2) {
    mma::FragmentC out[F2];
    for (int f = 0; f < F2; ++f)
      mma::zero(out[f]);
    for (int s0 = 0; s0 < slice; s0 += BK) {
      detail::for_cells<NT>(BK, BN2, [&](int r, int c) {
        const int64_t n = slice_first + s0 + r;
        const bool in = s0 + r < slice && n < p.hidden && j0 + c < p.columns;
        w2_tile[r * W2S + c] = T(in ? p.w2(n, j0 + c) : 0.0f);
      });
      __syncthreads();
      for (int kk = 0; kk < BK && s0 + kk < slice; kk += 16) {
        const mma::FragmentA a = detail::a_fragment(hidden, HS, warp_row, s0 + kk);
        detail::multiply_step<T>(out, a, w2_tile, W2S, kk, warp_column2);
      }
      __syncthreads();
    }
    for (int f = 0; f < F2; ++f)
      for (int e = 0; e < 4; ++e) {
        const int r = warp_row + g + (e >= 2 ? 8 : 0);
        const int c = warp_column2 + 8 * f + 2 * t + (e & 1);
        partial[r * BN2 + c] = out[f].x[e];
      }
    cluster::reduce_scatter_apply(partial, BM * BN2, [&](int i, float sum) {
      const int64_t m = first_row + i / BN2, j = j0 + i % BN2;
      if (m < p.rows && j < p.columns) p.store(m, j, sum);
    });
  }
}

} // namespace chain
} // namespace stitch
