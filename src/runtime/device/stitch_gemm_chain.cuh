// GEMM chains in one kernel (the "gemm_chain" groups): Y = epilogue(hidden(X·W1[, X·W3])·W2) for
// float16 or bfloat16 tensors on tensor cores, fp32 accumulation, the hidden activations never
// leaving the chip. A thread-block cluster computes one tile of BM rows of Y: block r of the
// cluster owns the slice [r·S, (r + 1)·S) of the hidden dim, computes its hidden activations
// for all BM rows into shared memory (phase 1), multiplies them by its S rows of W2, tile by tile
// of BN2 output columns (phase 2), and the cluster reduces the blocks' partial tiles through
// distributed shared memory (cluster::reduce_scatter_apply), each block storing its share of the
// sums. Nothing of the hidden dim goes to global memory; each block reads the tile's rows of X
// (once per hidden tile of its slice, from L2 after the first), its columns of W1 (W3) and its
// rows of W2.
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
//   kXVector, kW1Vector, kW3Vector, kW2Vector
//                                            8 (16 bytes of T) where the operand is a stored T
//                                            tensor whose rows start 16-byte aligned (their
//                                            tiles then copy asynchronously, cp.async), else 1
//   const T* x_row(m), w1_row(k), w3_row(k), w2_row(n)
//                                            the rows' first elements, where the vector is 8
// The hidden values are rounded to T before the second product, as the unfused plan stores
// them. Elements past an extent load as zeros; a hidden column past N1 is zero. Each k step's
// tiles load (asynchronously where they can) and are waited for before the products; the
// phase's products then run from shared memory.
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

// Cells (r, c) of a rows × columns tile, spread over the block's threads.
template <int Threads, class F>
__device__ __forceinline__ void for_cells(int rows, int columns, F f) {
  for (int e = static_cast<int>(threadIdx.x); e < rows * columns; e += Threads)
    f(e / columns, e % columns);
}

// A rows × columns T tile (tile[r * stride + c]) of a row-major operand from (row0, column0),
// zeros past (row_end, column_end). With Vector > 1 (the operand's rows are 16-byte vectors of
// T: row_of(row) is 16-byte aligned, as are the columns a tile starts at) a vector wholly inside
// the operand is copied asynchronously (the caller commits and waits); other cells load element
// by element through element(row, column).
template <class T, int Vector, int Threads, class RowOf, class Element>
__device__ __forceinline__ void fill_tile(T* tile, int stride, int rows, int columns, int64_t row0,
                                          int64_t column0, int64_t row_end, int64_t column_end,
                                          RowOf row_of, Element element) {
  const auto one = [&](int r, int c) {
    const int64_t row = row0 + r, column = column0 + c;
    tile[r * stride + c] = T(row < row_end && column < column_end ? element(row, column) : 0.0f);
  };
  if constexpr (Vector > 1) {
    for_cells<Threads>(rows, columns / Vector, [&](int r, int v) {
      const int c = v * Vector;
      if (row0 + r < row_end && column0 + c + Vector <= column_end) {
        mma::copy_async_16(tile + r * stride + c, row_of(row0 + r) + column0 + c);
      } else {
        for (int i = 0; i < Vector; ++i)
          one(r, c + i);
      }
    });
  } else {
    for_cells<Threads>(rows, columns, one);
  }
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
  static_assert((Problem::kXVector == 1 || Problem::kXVector * sizeof(T) == 16) &&
                    (Problem::kW1Vector == 1 || Problem::kW1Vector * sizeof(T) == 16) &&
                    (Problem::kW3Vector == 1 || Problem::kW3Vector * sizeof(T) == 16) &&
                    (Problem::kW2Vector == 1 || Problem::kW2Vector * sizeof(T) == 16),
                "rows load element by element or as 16-byte vectors");

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
      detail::fill_tile<T, Problem::kXVector, NT>(
          x_tile, XS, BM, BK, first_row, k0, p.rows, p.inner, [&](int64_t m) { return p.x_row(m); },
          [&](int64_t m, int64_t k) { return p.x(m, k); });
      detail::fill_tile<T, Problem::kW1Vector, NT>(
          w1_tile, W1S, BK, BN1, k0, n0, p.inner, p.hidden, [&](int64_t k) { return p.w1_row(k); },
          [&](int64_t k, int64_t n) { return p.w1(k, n); });
      if constexpr (Config::kGated)
        detail::fill_tile<T, Problem::kW3Vector, NT>(
            w3_tile, W1S, BK, BN1, k0, n0, p.inner, p.hidden,
            [&](int64_t k) { return p.w3_row(k); },
            [&](int64_t k, int64_t n) { return p.w3(k, n); });
      mma::copy_async_commit();
      mma::copy_async_wait<0>();
      __syncthreads(); // the tiles are in
      for (int kk = 0; kk < BK; kk += 16) {
        const mma::FragmentA a = mma::a_fragment(x_tile, XS, warp_row, kk);
        mma::multiply_b<T>(first, a, w1_tile, W1S, kk, warp_column1);
        if constexpr (Config::kGated) mma::multiply_b<T>(second, a, w3_tile, W1S, kk, warp_column1);
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
      // The slice's rows past its end (a slice that is no multiple of BK) are zeros, as are
      // rows past the hidden dim.
      const int64_t slice_end = slice_first + slice < p.hidden ? slice_first + slice : p.hidden;
      detail::fill_tile<T, Problem::kW2Vector, NT>(
          w2_tile, W2S, BK, BN2, slice_first + s0, j0, slice_end, p.columns,
          [&](int64_t n) { return p.w2_row(n); }, [&](int64_t n, int64_t j) { return p.w2(n, j); });
      mma::copy_async_commit();
      mma::copy_async_wait<0>();
      __syncthreads();
      for (int kk = 0; kk < BK && s0 + kk < slice; kk += 16) {
        const mma::FragmentA a = mma::a_fragment(hidden, HS, warp_row, s0 + kk);
        mma::multiply_b<T>(out, a, w2_tile, W2S, kk, warp_column2);
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
