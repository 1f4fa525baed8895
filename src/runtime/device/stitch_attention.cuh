// Attention in one pass over the keys, FlashAttention-2 style, for generated kernels: each
// block computes softmax(logit(Q Kᵀ)) V for one head and one tile of queries, streaming K and V
// through shared memory in tiles and never writing the queries x keys scores anywhere.
//
//   FlashConfig<HeadDim, ValueDim, Warps, RowsPerWarp, KeyTile>
//        the tile geometry: a block of Warps warps (Warps * 32 threads, one-dimensional), each
//        warp owning RowsPerWarp query rows of the block's QueryTile = Warps * RowsPerWarp; key
//        tiles of KeyTile keys (a multiple of 32: each lane scores KeyTile / 32 keys); Q·K over
//        HeadDim, outputs of ValueDim (each 1..256; lane l accumulates output dims l, l + 32,
//        ...). shared_bytes: the dynamic shared memory the block needs.
//   FlashMmaConfig<T, HeadDim, ValueDim, Warps, KeyTile>
//        the tensor-core geometry for float16 or bfloat16 operands (T): a block of Warps warps,
//        each owning 16 query rows; Q·Kᵀ and P·V as m16n8k16 warp products
//        (device/stitch_mma.cuh) with fp32 accumulators, everything of a row in registers: the
//        warp's Q fragments (loaded once), its scores, their online softmax, the probabilities
//        rounded to T (as the graph rounds them before its P·V) and repacked as P·V's A
//        fragments, the output accumulators. Only the K and V tiles go through shared memory
//        (Q once), as T (the problem's floats are values of T, so exactly), in two stages: the
//        next tile's rows are copied asynchronously (cp.async, where the problem's rows are
//        16-byte vectors) while the current one is computed on; Q·Kᵀ reads K's B fragments as
//        pairs of adjacent dims, P·V reads V's with ldmatrix .trans. The head and value dims
//        are padded to multiples of 16 with zeros.
//   flash_attention_tile<Config>(problem, head, first_query, shared)
//        every thread of the block calls; writes the outputs of queries [first_query,
//        first_query + QueryTile) of `head` (those below problem.queries) through
//        problem.store. `shared` holds Config::shared_bytes (dynamic shared memory).
//   flash_attention_partial / flash_attention_combine
//        the same over keys [key_begin, key_end) only (flash-decoding: several blocks share a
//        head's keys), leaving each query row's running maximum, sum and unnormalized output in
//        a Partial; combine merges the splits of one row in split order.
//
// The problem is any type with (head: a flat index over the batch axes; i: query; j: key; d:
// dim):
//   int64_t queries, keys;
//   float query(int64_t head, int64_t i, int d) const;   // Q, K, V elements as float
//   float key(int64_t head, int64_t j, int d) const;
//   float value(int64_t head, int64_t j, int d) const;
//   static constexpr int kQueryVector, kKeyVector, kValueVector;
//        1, or the elements of a 16-byte vector (4 floats, 8 of a 2-byte type): then each row's
//        dims are adjacent and 16-byte aligned, and
//   const E* query_row(int64_t head, int64_t i) const;   // the row's dim 0 (E: its stored type)
//   const E* key_row(int64_t head, int64_t j) const;
//   const E* value_row(int64_t head, int64_t j) const;
//   float logit(int64_t head, int64_t i, int64_t j, float dot) const;
//        the softmax input of query i and key j from dot = Σ_d q·k (in fp32, d ascending): the
//        model's scale, biases, masks and caps; -infinity excludes the key
//   int64_t key_end(int64_t head, int64_t last_query) const;
//        keys from here on add exactly nothing for queries up to last_query (a causal mask
//        stops at last_query + 1 + offset); `keys` when no such bound is known
//   void store(int64_t head, int64_t i, int d, float value) const;
//
// Numerics, as the unfused graph computes softmax(x) = exp(x - max) / Σ exp(x - max) and then
// P V, in fp32 throughout: the running maximum m (NaN-propagating, like ReduceMax) and sum l of
// exp(x - m) per query row, the output accumulated unnormalized and rescaled by exp(m_old -
// m_new) when the maximum grows, divided by l at the end. Rows that differ from the reference
// only by rounding; the special cases agree with it: a row whose every logit is -infinity gives
// NaN (0 / 0, as exp(-inf - -inf) makes the reference's), a NaN logit makes its row NaN, no
// keys at all give zeros (an empty sum). The order of every sum is fixed (d ascending in a dot,
// keys in tile order, a butterfly across lanes), so results are bitwise deterministic.
#pragma once

#include "stitch_cuda.h"
#include "stitch_mma.cuh"

#include <stdint.h>
#include <string.h>

#include <math.h>
#include <type_traits>

// The tiles' element-wise loads: several in flight per thread (a block of one warp, as a
// decoding step's, would otherwise wait out each load's latency in turn).
#if defined(__CUDACC__)
#define STITCH_ATTENTION_LOADS _Pragma("unroll 8")
#else
#define STITCH_ATTENTION_LOADS
#endif

namespace stitch {
namespace attention {

template <int HeadDim, int ValueDim, int Warps, int RowsPerWarp, int KeyTile> struct FlashConfig {
  static_assert(HeadDim >= 1 && HeadDim <= 256, "head dims of 1 to 256");
  static_assert(ValueDim >= 1 && ValueDim <= 256, "value dims of 1 to 256");
  static_assert(KeyTile >= 32 && KeyTile % 32 == 0, "whole warps of keys per tile");
  static_assert(Warps >= 1 && Warps <= 32 && RowsPerWarp >= 1, "a block of 1 to 32 warps");

  static constexpr bool kTensorCores = false;
  static constexpr int kHeadDim = HeadDim;
  static constexpr int kValueDim = ValueDim;
  static constexpr int kWarps = Warps;
  static constexpr int kRowsPerWarp = RowsPerWarp;
  static constexpr int kKeyTile = KeyTile;
  static constexpr int kQueryTile = Warps * RowsPerWarp;
  static constexpr int kThreads = Warps * 32;
  static constexpr int kKeysPerLane = KeyTile / 32;
  static constexpr int kValueChunks = (ValueDim + 31) / 32;
  // An odd stride between the keys' rows: lanes reading one dim of 32 different keys hit 32
  // different banks.
  static constexpr int kKeyStride = HeadDim | 1;
  // Shared memory, in floats: the query tile, a key tile, a value tile, each row's
  // probabilities of the key tile.
  static constexpr int kQueryFloats = kQueryTile * HeadDim;
  static constexpr int kKeyFloats = KeyTile * kKeyStride;
  static constexpr int kValueFloats = KeyTile * ValueDim;
  static constexpr int kProbabilityFloats = kQueryTile * KeyTile;
  static constexpr int64_t shared_bytes =
      int64_t(kQueryFloats + kKeyFloats + kValueFloats + kProbabilityFloats) * 4;
};

template <class T, int HeadDim, int ValueDim, int Warps, int KeyTile> struct FlashMmaConfig {
  static_assert(HeadDim >= 1 && HeadDim <= 256, "head dims of 1 to 256");
  static_assert(ValueDim >= 1 && ValueDim <= 256, "value dims of 1 to 256");
  static_assert(KeyTile >= 32 && KeyTile % 32 == 0, "whole warps of keys per tile");
  static_assert(Warps >= 1 && Warps <= 8, "a block of 1 to 8 warps");

  using Element = T;
  static constexpr bool kTensorCores = true;
  static constexpr int kHeadDim = HeadDim;
  static constexpr int kValueDim = ValueDim;
  static constexpr int kWarps = Warps;
  static constexpr int kRowsPerWarp = mma::kTile;
  static constexpr int kKeyTile = KeyTile;
  static constexpr int kQueryTile = Warps * kRowsPerWarp;
  static constexpr int kThreads = Warps * 32;
  static constexpr int kDimTiles = (HeadDim + 15) / 16;        // k steps of Q·Kᵀ
  static constexpr int kValueTiles = (ValueDim + 15) / 16 * 2; // n tiles of P·V, in pairs
  static constexpr int kKeyTiles = KeyTile / 8;                // n tiles of Q·Kᵀ
  // Row strides in elements, a multiple of 16 plus 8: a warp's pair loads of K (row g, column
  // 2t, for g < 8 and t < 4) touch 32 different banks, and the 8 rows of each matrix V's
  // ldmatrix reads, 8 different 16-byte bank groups.
  static constexpr int kQStride = kDimTiles * 16 + 8;  // Q and K rows: [row][dim]
  static constexpr int kVStride = kValueTiles * 8 + 8; // V rows: [key][dim]
  // Q once, then two stages of a K and a V tile: one stage is computed on while the next one's
  // copies are in flight.
  static constexpr int kStages = 2;
  static constexpr int64_t kQOffset = 0;
  static constexpr int64_t kStageOffset = int64_t(kQueryTile) * kQStride * 2;
  static constexpr int64_t kVInStage = int64_t(KeyTile) * kQStride * 2;
  static constexpr int64_t kStageBytes = kVInStage + int64_t(KeyTile) * kVStride * 2;
  static constexpr int64_t shared_bytes = kStageOffset + kStages * kStageBytes;
};

// One query row's state after some keys: the running maximum, the sum of exp(logit - maximum),
// and lane l's output dims l, l + 32, ... unnormalized.
template <class Config> struct RowState {
  float maximum;
  float sum;
  float out[Config::kValueChunks];
};

// What a split leaves of one query row (flash_attention_partial): its maximum and sum and the
// unnormalized output dims, for flash_attention_combine.
struct Partial {
  float maximum;
  float sum;
};

namespace detail {

__device__ __forceinline__ float max_nan(float a, float b) { return (a != a || a > b) ? a : b; }

// 16 bytes from src to dst, both 16-byte aligned.
template <class E> __device__ __forceinline__ void copy_vector(E* dst, const E* src) {
#if defined(__CUDACC__)
  *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
#else
  mma::detail::check_aligned_16(dst, "stitch::attention copy_vector");
  mma::detail::check_aligned_16(src, "stitch::attention copy_vector");
  memcpy(dst, src, 16);
#endif
}

// f(r, c) for every cell of rows x Columns (a row's vectors or elements), spread over the
// block's Threads.
template <int Columns, int Threads, class F>
__device__ __forceinline__ void for_each_cell(int rows, F f) {
  STITCH_ATTENTION_LOADS
  for (int e = static_cast<int>(threadIdx.x); e < rows * Columns; e += Threads)
    f(e / Columns, e % Columns);
}

// An operand's row pointer where its plan loads 16-byte vectors (Problem::kXVector > 1), else 0
// (its rows load element by element: the row pointer is never asked for).
template <class Problem>
__device__ __forceinline__ auto query_row_of(const Problem& p, int64_t head, int64_t row) {
  if constexpr (Problem::kQueryVector > 1)
    return p.query_row(head, row);
  else
    return 0;
}
template <class Problem>
__device__ __forceinline__ auto key_row_of(const Problem& p, int64_t head, int64_t row) {
  if constexpr (Problem::kKeyVector > 1)
    return p.key_row(head, row);
  else
    return 0;
}
template <class Problem>
__device__ __forceinline__ auto value_row_of(const Problem& p, int64_t head, int64_t row) {
  if constexpr (Problem::kValueVector > 1)
    return p.value_row(head, row);
  else
    return 0;
}

// The 16 / sizeof(E) elements at src (16-byte aligned) as floats.
template <class E, int V> __device__ __forceinline__ void load_vector(const E* src, float (&x)[V]) {
  static_assert(sizeof(E) * V == 16, "16-byte vectors");
  alignas(16) E raw[V];
  copy_vector(raw, src);
  for (int i = 0; i < V; ++i)
    x[i] = static_cast<float>(raw[i]);
}

template <class P> using RowElement = std::remove_cv_t<std::remove_pointer_t<P>>;

// Rows [0, rows) of an operand into a float tile (element (r, d) at tile[r * stride + d]):
// `load_row(r)` is the row's pointer (vectors of V) when V > 1, else `load(r, d)` each element;
// `valid(r)` false gives zeros.
template <int V, int Dims, int Threads, class Valid, class Row, class Element>
__device__ __forceinline__ void fill_float_rows(float* tile, int stride, int rows, Valid valid,
                                                Row load_row, Element load) {
  if constexpr (V > 1) {
    for_each_cell<Dims / V, Threads>(rows, [&](int r, int c) {
      float x[V];
      if (valid(r)) {
        load_vector(load_row(r) + c * V, x);
      } else {
        for (int i = 0; i < V; ++i)
          x[i] = 0.0f;
      }
      for (int i = 0; i < V; ++i)
        tile[r * stride + c * V + i] = x[i];
    });
  } else {
    for_each_cell<Dims, Threads>(
        rows, [&](int r, int d) { tile[r * stride + d] = valid(r) ? load(r, d) : 0.0f; });
  }
}

__device__ __forceinline__ float warp_max_nan(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = max_nan(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Streams keys [key_begin, key_end) of `head` through shared memory, updating every row state
// of the calling warp. Every thread of the block calls (the tiles are loaded together).
template <class Config, class Problem>
__device__ void attend_keys(const Problem& p, int64_t head, int64_t first_query, int64_t key_begin,
                            int64_t key_end, float* shared,
                            RowState<Config> (&rows)[Config::kRowsPerWarp]) {
  constexpr int D = Config::kHeadDim, DV = Config::kValueDim, BK = Config::kKeyTile;
  constexpr int R = Config::kRowsPerWarp, T = Config::kThreads;
  constexpr int KS = Config::kKeyStride;
  float* const q_tile = shared;
  float* const k_tile = q_tile + Config::kQueryFloats;
  float* const v_tile = k_tile + Config::kKeyFloats;
  float* const p_tile = v_tile + Config::kValueFloats;
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31, warp = tid >> 5;
  const bool idle = first_query + warp * R >= p.queries;
  constexpr float kNegInf = -INFINITY;

  // The query tile, once (rows past the last query hold zeros and are never stored).
  fill_float_rows<Problem::kQueryVector, D, T>(
      q_tile, D, Config::kQueryTile, [&](int r) { return first_query + r < p.queries; },
      [&](int r) { return query_row_of(p, head, first_query + r); },
      [&](int r, int d) { return p.query(head, first_query + r, d); });

  for (int64_t k0 = key_begin; k0 < key_end; k0 += BK) {
    __syncthreads(); // the query tile is in; the previous key tile's readers are done
    const auto key_valid = [&](int j) { return k0 + j < key_end; };
    fill_float_rows<Problem::kKeyVector, D, T>(
        k_tile, KS, BK, key_valid, [&](int j) { return key_row_of(p, head, k0 + j); },
        [&](int j, int d) { return p.key(head, k0 + j, d); });
    fill_float_rows<Problem::kValueVector, DV, T>(
        v_tile, DV, BK, key_valid, [&](int j) { return value_row_of(p, head, k0 + j); },
        [&](int j, int d) { return p.value(head, k0 + j, d); });
    __syncthreads();
    // A warp whose rows are all past the last query (the tail of a query tile larger than the
    // run's queries) only helps load the tiles: its rows are never stored.
    if (idle) continue;

    // Lane l scores keys l, l + 32, ... of the tile for each of the warp's rows.
    float s[R][Config::kKeysPerLane];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < Config::kKeysPerLane; ++c)
        s[r][c] = 0.0f;
    for (int c = 0; c < Config::kKeysPerLane; ++c) {
      const float* k_row = k_tile + (lane + 32 * c) * KS;
      for (int d = 0; d < D; ++d) {
        const float k = k_row[d];
        for (int r = 0; r < R; ++r)
          s[r][c] = fmaf(q_tile[(warp * R + r) * D + d], k, s[r][c]);
      }
    }
    for (int r = 0; r < R; ++r) {
      const int row = warp * R + r;
      const int64_t i = first_query + row;
      RowState<Config>& st = rows[r];
      float tile_max = kNegInf;
      for (int c = 0; c < Config::kKeysPerLane; ++c) {
        const int64_t j = k0 + lane + 32 * c;
        s[r][c] = (i < p.queries && j < key_end) ? p.logit(head, i, j, s[r][c]) : kNegInf;
        tile_max = max_nan(tile_max, s[r][c]);
      }
      const float m_new = max_nan(st.maximum, warp_max_nan(tile_max));
      // Every logit so far -infinity: nothing to add yet (exp(-inf - -inf) would be NaN here,
      // while later finite logits must still win).
      const bool none = m_new == kNegInf;
      const float correction = none ? 1.0f : expf(st.maximum - m_new);
      float tile_sum = 0.0f;
      for (int c = 0; c < Config::kKeysPerLane; ++c) {
        const float e = none ? 0.0f : expf(s[r][c] - m_new);
        p_tile[row * BK + lane + 32 * c] = e;
        tile_sum += e;
      }
      st.sum = st.sum * correction + warp_sum(tile_sum);
      st.maximum = m_new;
      for (int v = 0; v < Config::kValueChunks; ++v)
        st.out[v] *= correction;
    }
    __syncwarp();

    // out[r][d] += Σ_j p[r][j] v[j][d], keys in order; lane l owns dims l, l + 32, ...
    for (int j = 0; j < BK; ++j) {
      for (int v = 0; v < Config::kValueChunks; ++v) {
        const int d = lane + 32 * v;
        const float value = d < DV ? v_tile[j * DV + d] : 0.0f;
        for (int r = 0; r < R; ++r)
          rows[r].out[v] = fmaf(p_tile[(warp * R + r) * BK + j], value, rows[r].out[v]);
      }
    }
  }
}

// The tensor-core path: lane l of a warp holds, for its rows g = l / 4 and g + 8 of the warp's
// 16, the running maximum, its share of the sum (the keys 2t and 2t + 1 of each 8, t = l % 4;
// the four lanes of a row add their shares at the end) and the output accumulators of dims
// 2t, 2t + 1 of each 8.
template <class Config> struct MmaRows {
  float maximum[2];
  float sum[2];
  mma::FragmentC out[Config::kValueTiles];
};

template <class T> __device__ __forceinline__ uint32_t load_pair(const T* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// Zeros in dims [from, to) of `rows` rows of a T tile of row stride `stride`.
template <class T, int Threads>
__device__ __forceinline__ void zero_columns(T* tile, int rows, int stride, int from, int to) {
  const int width = to - from;
  for (int e = static_cast<int>(threadIdx.x); e < rows * width; e += Threads)
    tile[e / width * stride + from + e % width] = T(0.0f);
}

// Rows [0, rows) of a Q, K or V operand into a T tile (element (r, d) at tile[r * Stride + d]).
// Rows of 16-byte vectors (Vector > 1: `row_of(r)`, the row's dim 0) are copied asynchronously
// (the caller commits and waits) and leave dims [Dims, Stride) as they are; otherwise
// `element(r, d)` is loaded, converted, and the dims past Dims written as zeros. Rows where
// `valid(r)` is false become zeros.
template <class T, int Vector, int Dims, int Stride, int Threads, class Valid, class RowOf,
          class Element>
__device__ __forceinline__ void fill_rows(T* tile, int rows, Valid valid, RowOf row_of,
                                          Element element) {
  if constexpr (Vector > 1) {
    static_assert(std::is_same_v<RowElement<decltype(row_of(0))>, T>, "rows of type T");
    for_each_cell<Dims / Vector, Threads>(rows, [&](int r, int c) {
      T* const to = tile + r * Stride + c * Vector;
      if (valid(r)) {
        mma::copy_async_16(to, row_of(r) + c * Vector);
      } else {
        for (int i = 0; i < Vector; ++i)
          to[i] = T(0.0f);
      }
    });
  } else {
    for_each_cell<Stride, Threads>(rows, [&](int r, int d) {
      tile[r * Stride + d] = T(d < Dims && valid(r) ? element(r, d) : 0.0f);
    });
  }
}

// attend_keys on tensor cores: the block's Q tile once (each warp keeps its A fragments), then
// per key tile (the next one's copies in flight) S = Q Kᵀ, the online softmax of S's rows (the
// maximum across a row's four lanes by two shuffles), P = exp(S - max) rounded to T as P·V's A
// fragments, O += P V. Every thread of the block calls.
template <class Config, class Problem>
__device__ void attend_keys_mma(const Problem& p, int64_t head, int64_t first_query,
                                int64_t key_begin, int64_t key_end, float* shared,
                                MmaRows<Config>& rows) {
  using T = typename Config::Element;
  constexpr int D = Config::kHeadDim, DV = Config::kValueDim, BK = Config::kKeyTile;
  constexpr int QS = Config::kQStride, VS = Config::kVStride, NT = Config::kThreads;
  constexpr int R = mma::kTile;
  constexpr int QV = Problem::kQueryVector, KV = Problem::kKeyVector;
  constexpr int VV = Problem::kValueVector;
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int64_t row_i[2] = {first_query + warp * R + g, first_query + warp * R + g + 8};
  const bool idle = first_query + warp * R >= p.queries;
  unsigned char* const base = reinterpret_cast<unsigned char*>(shared);
  T* const q_tile = reinterpret_cast<T*>(base + Config::kQOffset);
  auto k_tile = [&](int stage) {
    return reinterpret_cast<T*>(base + Config::kStageOffset + stage * Config::kStageBytes);
  };
  auto v_tile = [&](int stage) {
    return reinterpret_cast<T*>(base + Config::kStageOffset + stage * Config::kStageBytes +
                                Config::kVInStage);
  };
  constexpr float kNegInf = -INFINITY;

  // The key tile from k0 into a stage (copies in flight where the rows are vectors).
  auto load_tile = [&](int stage, int64_t k0) {
    const auto valid = [&](int j) { return k0 + j < key_end; };
    fill_rows<T, KV, D, QS, NT>(
        k_tile(stage), BK, valid, [&](int j) { return key_row_of(p, head, k0 + j); },
        [&](int j, int d) { return p.key(head, k0 + j, d); });
    fill_rows<T, VV, DV, VS, NT>(
        v_tile(stage), BK, valid, [&](int j) { return value_row_of(p, head, k0 + j); },
        [&](int j, int d) { return p.value(head, k0 + j, d); });
  };

  // Vector rows leave their padding dims alone: zeros once, in both stages.
  for (int stage = 0; stage < Config::kStages; ++stage) {
    if constexpr (KV > 1) zero_columns<T, NT>(k_tile(stage), BK, QS, D, QS);
    if constexpr (VV > 1) zero_columns<T, NT>(v_tile(stage), BK, VS, DV, VS);
  }
  if constexpr (QV > 1) zero_columns<T, NT>(q_tile, Config::kQueryTile, QS, D, QS);
  fill_rows<T, QV, D, QS, NT>(
      q_tile, Config::kQueryTile, [&](int r) { return first_query + r < p.queries; },
      [&](int r) { return query_row_of(p, head, first_query + r); },
      [&](int r, int d) { return p.query(head, first_query + r, d); });
  if (key_begin < key_end) load_tile(0, key_begin);
  mma::copy_async_commit(); // Q and the first tile
  for (int r = 0; r < 2; ++r) {
    rows.maximum[r] = kNegInf;
    rows.sum[r] = 0.0f;
  }
  for (int n = 0; n < Config::kValueTiles; ++n)
    mma::zero(rows.out[n]);

  mma::FragmentA q[Config::kDimTiles];
  int stage = 0;
  for (int64_t k0 = key_begin; k0 < key_end; k0 += BK, stage ^= 1) {
    if (k0 + BK < key_end) { // the next tile's copies go out before this one is waited for
      load_tile(stage ^ 1, k0 + BK);
      mma::copy_async_commit();
      mma::copy_async_wait<1>();
    } else {
      mma::copy_async_wait<0>();
    }
    __syncthreads(); // this stage's tile (and, the first time, Q) is in
    // A warp whose rows are all past the last query (the tail of a query tile larger than the
    // run's queries) only helps load the tiles: its rows are never stored.
    if (!idle) {
      if (k0 == key_begin)
        for (int kk = 0; kk < Config::kDimTiles; ++kk) {
          const T* const at = q_tile + (warp * R + g) * QS + kk * 16 + 2 * t;
          q[kk].x[0] = load_pair(at);
          q[kk].x[1] = load_pair(at + 8 * QS);
          q[kk].x[2] = load_pair(at + 8);
          q[kk].x[3] = load_pair(at + 8 * QS + 8);
        }
      const T* const keys = k_tile(stage);
      const T* const values = v_tile(stage);

      // S = Q Kᵀ: K's rows are Kᵀ's columns, so a B fragment is a pair of adjacent dims.
      mma::FragmentC s[Config::kKeyTiles];
      for (int n = 0; n < Config::kKeyTiles; ++n)
        mma::zero(s[n]);
      for (int kk = 0; kk < Config::kDimTiles; ++kk)
        for (int n = 0; n < Config::kKeyTiles; ++n) {
          const T* const at = keys + (8 * n + g) * QS + kk * 16 + 2 * t;
          const mma::FragmentB b = {{load_pair(at), load_pair(at + 8)}};
          mma::product<T>(s[n], q[kk], b);
        }

      // The logits, each row's maximum (its four lanes), the rescaling, the probabilities.
      float tile_max[2] = {kNegInf, kNegInf};
      for (int n = 0; n < Config::kKeyTiles; ++n)
        for (int e = 0; e < 4; ++e) {
          const int r = e >> 1;
          const int64_t j = k0 + 8 * n + 2 * t + (e & 1);
          const float x = (row_i[r] < p.queries && j < key_end)
                              ? p.logit(head, row_i[r], j, s[n].x[e])
                              : kNegInf;
          s[n].x[e] = x;
          tile_max[r] = max_nan(tile_max[r], x);
        }
      float correction[2], m_new[2];
      bool none[2];
      for (int r = 0; r < 2; ++r) {
        tile_max[r] = max_nan(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
        tile_max[r] = max_nan(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
        m_new[r] = max_nan(rows.maximum[r], tile_max[r]);
        none[r] = m_new[r] == kNegInf; // as attend_keys
        correction[r] = none[r] ? 1.0f : expf(rows.maximum[r] - m_new[r]);
        rows.maximum[r] = m_new[r];
      }
      float tile_sum[2] = {0.0f, 0.0f};
      for (int n = 0; n < Config::kKeyTiles; ++n)
        for (int e = 0; e < 4; ++e) {
          const int r = e >> 1;
          const float x = none[r] ? 0.0f : expf(s[n].x[e] - m_new[r]);
          s[n].x[e] = x;
          tile_sum[r] += x;
        }
      for (int r = 0; r < 2; ++r)
        rows.sum[r] = rows.sum[r] * correction[r] + tile_sum[r];
      for (int n = 0; n < Config::kValueTiles; ++n)
        for (int e = 0; e < 4; ++e)
          rows.out[n].x[e] *= correction[e >> 1];

      // O += P V, 16 keys a step: the scores' C fragments of keys 16c .. 16c + 15 are P's A
      // fragment; ldmatrix .trans reads V's B fragments two at a time.
      for (int c = 0; c < BK / 16; ++c) {
        const mma::FragmentC& lo = s[2 * c];
        const mma::FragmentC& hi = s[2 * c + 1];
        const mma::FragmentA a = {{mma::pack<T>(lo.x[0], lo.x[1]), mma::pack<T>(lo.x[2], lo.x[3]),
                                   mma::pack<T>(hi.x[0], hi.x[1]), mma::pack<T>(hi.x[2], hi.x[3])}};
        for (int n = 0; n < Config::kValueTiles; n += 2) {
          mma::FragmentB left, right; // value dims 8n .. 8n + 7 and 8n + 8 .. 8n + 15
          mma::load_transposed<T>(left, right,
                                  values + (16 * c + (lane & 15)) * VS + 8 * n + 8 * (lane >> 4));
          mma::product<T>(rows.out[n], a, left);
          mma::product<T>(rows.out[n + 1], a, right);
        }
      }
    }
    __syncthreads(); // every warp is done with this stage before the next load refills it
  }
  mma::copy_async_wait<0>(); // no keys: Q's copies
  // Each row's sum: its four lanes' shares (every lane of the row ends with the total).
  for (int r = 0; r < 2; ++r) {
    rows.sum[r] += __shfl_xor_sync(0xffffffffu, rows.sum[r], 1);
    rows.sum[r] += __shfl_xor_sync(0xffffffffu, rows.sum[r], 2);
  }
}

// The keys the query tile from first_query needs: the problem's bound for its last query, at
// most every key.
template <class Config, class Problem>
__device__ int64_t tile_key_end(const Problem& p, int64_t head, int64_t first_query) {
  const int64_t end_query =
      first_query + Config::kQueryTile < p.queries ? first_query + Config::kQueryTile : p.queries;
  const int64_t end = p.key_end(head, end_query - 1);
  return end < p.keys ? end : p.keys;
}

template <class Config> __device__ void reset_rows(RowState<Config> (&rows)[Config::kRowsPerWarp]) {
  for (int r = 0; r < Config::kRowsPerWarp; ++r) {
    rows[r].maximum = -INFINITY;
    rows[r].sum = 0.0f;
    for (int v = 0; v < Config::kValueChunks; ++v)
      rows[r].out[v] = 0.0f;
  }
}

} // namespace detail

template <class Config, class Problem>
__device__ void flash_attention_tile(const Problem& p, int64_t head, int64_t first_query,
                                     float* shared) {
  constexpr int R = Config::kRowsPerWarp;
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int64_t key_end = detail::tile_key_end<Config>(p, head, first_query);
  if constexpr (Config::kTensorCores) {
    detail::MmaRows<Config> rows;
    detail::attend_keys_mma<Config>(p, head, first_query, 0, key_end, shared, rows);
    const int g = lane >> 2, t = lane & 3;
    for (int r = 0; r < 2; ++r) {
      const int64_t i = first_query + warp * R + g + 8 * r;
      if (i >= p.queries) continue;
      // No keys: zeros; every key excluded: NaN (as below).
      const float inverse = p.keys == 0 ? 0.0f : 1.0f / rows.sum[r];
      for (int n = 0; n < Config::kValueTiles; ++n)
        for (int c = 0; c < 2; ++c) {
          const int d = 8 * n + 2 * t + c;
          if (d < Config::kValueDim) p.store(head, i, d, rows.out[n].x[2 * r + c] * inverse);
        }
    }
  } else {
    RowState<Config> rows[R];
    detail::reset_rows<Config>(rows);
    detail::attend_keys<Config>(p, head, first_query, 0, key_end, shared, rows);
    for (int r = 0; r < R; ++r) {
      const int64_t i = first_query + warp * R + r;
      if (i >= p.queries) continue;
      // No keys: the empty sum, zeros. Every key excluded: 0 / 0, NaN, as the reference.
      const float inverse = p.keys == 0 ? 0.0f : 1.0f / rows[r].sum;
      for (int v = 0; v < Config::kValueChunks; ++v) {
        const int d = lane + 32 * v;
        if (d < Config::kValueDim) p.store(head, i, d, rows[r].out[v] * inverse);
      }
    }
  }
}

// Split `split` of `splits` over the keys: keys [split * per_split, (split + 1) * per_split)
// (per_split a multiple of KeyTile). Writes, per query row i below problem.queries,
// stats[(head_slot * splits + split) * QueryTile + row] and the unnormalized outputs
// out[((head_slot * splits + split) * QueryTile + row) * ValueDim + d], where head_slot is the
// caller's index of this (head, query tile) pair.
template <class Config, class Problem>
__device__ void flash_attention_partial(const Problem& p, int64_t head, int64_t first_query,
                                        int64_t head_slot, int split, int splits, int64_t per_split,
                                        Partial* stats, float* out, float* shared) {
  constexpr int R = Config::kRowsPerWarp;
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int64_t key_end = detail::tile_key_end<Config>(p, head, first_query);
  const int64_t begin = split * per_split;
  const int64_t end = begin + per_split < key_end ? begin + per_split : key_end;
  if constexpr (Config::kTensorCores) {
    detail::MmaRows<Config> rows;
    detail::attend_keys_mma<Config>(p, head, first_query, begin, end, shared, rows);
    const int g = lane >> 2, t = lane & 3;
    for (int r = 0; r < 2; ++r) {
      const int row = warp * R + g + 8 * r;
      if (first_query + row >= p.queries) continue;
      const int64_t slot = (head_slot * splits + split) * Config::kQueryTile + row;
      if (t == 0) stats[slot] = Partial{rows.maximum[r], rows.sum[r]};
      for (int n = 0; n < Config::kValueTiles; ++n)
        for (int c = 0; c < 2; ++c) {
          const int d = 8 * n + 2 * t + c;
          if (d < Config::kValueDim) out[slot * Config::kValueDim + d] = rows.out[n].x[2 * r + c];
        }
    }
  } else {
    RowState<Config> rows[R];
    detail::reset_rows<Config>(rows);
    detail::attend_keys<Config>(p, head, first_query, begin, end, shared, rows);
    for (int r = 0; r < R; ++r) {
      const int row = warp * R + r;
      if (first_query + row >= p.queries) continue;
      const int64_t slot = (head_slot * splits + split) * Config::kQueryTile + row;
      if (lane == 0) stats[slot] = Partial{rows[r].maximum, rows[r].sum};
      for (int v = 0; v < Config::kValueChunks; ++v) {
        const int d = lane + 32 * v;
        if (d < Config::kValueDim) out[slot * Config::kValueDim + d] = rows[r].out[v];
      }
    }
  }
}

// Merges the splits of query row `row` of (head, query tile) `head_slot` and stores its output
// dim d through problem.store: m = max over splits, l = Σ l_s exp(m_s - m), out = Σ out_s
// exp(m_s - m) / l, splits in order (a split whose keys were all excluded adds nothing).
template <class Config, class Problem>
__device__ void flash_attention_combine(const Problem& p, int64_t head, int64_t first_query,
                                        int64_t head_slot, int splits, const Partial* stats,
                                        const float* out, int row, int d) {
  const int64_t i = first_query + row;
  if (i >= p.queries || d >= Config::kValueDim) return;
  constexpr float kNegInf = -INFINITY;
  float m = kNegInf;
  for (int s = 0; s < splits; ++s)
    m = detail::max_nan(m, stats[(head_slot * splits + s) * Config::kQueryTile + row].maximum);
  float sum = 0.0f, acc = 0.0f;
  for (int s = 0; s < splits; ++s) {
    const int64_t slot = (head_slot * splits + s) * Config::kQueryTile + row;
    const Partial part = stats[slot];
    if (part.maximum == kNegInf) continue;
    const float w = expf(part.maximum - m);
    sum = fmaf(part.sum, w, sum);
    acc = fmaf(out[slot * Config::kValueDim + d], w, acc);
  }
  p.store(head, i, d, p.keys == 0 ? 0.0f : acc / sum);
}

} // namespace attention
} // namespace stitch
