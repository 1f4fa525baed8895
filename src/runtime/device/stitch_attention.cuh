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
//        each owning 16 query rows; Q·Kᵀ and P·V as 16 x 16 x 16 warp products
//        (device/stitch_mma.cuh) over tiles of T in shared memory (Q, K and V converted from the
//        problem's floats, which are values of T, so exactly), fp32 accumulators; the scores and
//        each row's output in fp32 shared memory, the probabilities rounded to T for P·V (as the
//        graph rounds them to T before its P·V). Dims are padded to multiples of 16 with zeros.
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

#include <math.h>

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
  static constexpr int kKeysPerLane = KeyTile / 32;
  static constexpr int kDimTiles = (HeadDim + 15) / 16;
  static constexpr int kValueTiles = (ValueDim + 15) / 16;
  static constexpr int kKeyTiles = KeyTile / 16;
  // Row strides in elements: 16 bytes past a multiple of 32 (no two rows of a 16 x 16 load in
  // one bank), each a multiple of 8 elements of T or 4 floats, as the warp loads need.
  static constexpr int kQStride = kDimTiles * 16 + 8;   // Q and K rows, T
  static constexpr int kVStride = kValueTiles * 16 + 8; // V rows, T
  static constexpr int kPStride = KeyTile + 8;          // probability rows, T
  static constexpr int kSStride = KeyTile + 4;          // score rows, float
  static constexpr int kOStride = kValueTiles * 16 + 4; // output rows, float
  // Byte offsets of the Q tile, a K tile, a V tile, each warp's probabilities, scores and
  // outputs (each a multiple of 32 bytes, as the warp loads need).
  static constexpr int64_t kQOffset = 0;
  static constexpr int64_t kKOffset = kQOffset + int64_t(kQueryTile) * kQStride * 2;
  static constexpr int64_t kVOffset = kKOffset + int64_t(KeyTile) * kQStride * 2;
  static constexpr int64_t kPOffset = kVOffset + int64_t(KeyTile) * kVStride * 2;
  static constexpr int64_t kSOffset = kPOffset + int64_t(kQueryTile) * kPStride * 2;
  static constexpr int64_t kOOffset = kSOffset + int64_t(kQueryTile) * kSStride * 4;
  static constexpr int64_t shared_bytes = kOOffset + int64_t(kQueryTile) * kOStride * 4;
  static_assert(kKOffset % 32 == 0 && kVOffset % 32 == 0 && kPOffset % 32 == 0 &&
                    kSOffset % 32 == 0 && kOOffset % 32 == 0,
                "32-byte aligned tiles");
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
  constexpr float kNegInf = -INFINITY;

  // The query tile, once (rows past the last query hold zeros and are never stored).
  STITCH_ATTENTION_LOADS
  for (int e = tid; e < Config::kQueryFloats; e += T) {
    const int r = e / D, d = e % D;
    const int64_t i = first_query + r;
    q_tile[e] = i < p.queries ? p.query(head, i, d) : 0.0f;
  }

  for (int64_t k0 = key_begin; k0 < key_end; k0 += BK) {
    __syncthreads(); // the query tile is in; the previous key tile's readers are done
    STITCH_ATTENTION_LOADS
    for (int e = tid; e < BK * D; e += T) {
      const int j = e / D, d = e % D;
      k_tile[j * KS + d] = k0 + j < key_end ? p.key(head, k0 + j, d) : 0.0f;
    }
    STITCH_ATTENTION_LOADS
    for (int e = tid; e < BK * DV; e += T) {
      const int j = e / DV, d = e % DV;
      v_tile[e] = k0 + j < key_end ? p.value(head, k0 + j, d) : 0.0f;
    }
    __syncthreads();

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

// The tensor-core path: lane l of a warp keeps the running maximum and sum of the warp's row
// l / 2 (lanes l and l ^ 1 share a row, each scoring alternate keys of it); the rows'
// unnormalized outputs stay in the warp's fp32 output rows in shared memory.
struct MmaRow {
  float maximum;
  float sum;
};

template <class Config> struct MmaTiles {
  using T = typename Config::Element;
  T *q, *k, *v, *p;
  float *s, *o;
  __device__ explicit MmaTiles(float* shared, int warp) {
    unsigned char* const base = reinterpret_cast<unsigned char*>(shared);
    q = reinterpret_cast<T*>(base + Config::kQOffset);
    k = reinterpret_cast<T*>(base + Config::kKOffset);
    v = reinterpret_cast<T*>(base + Config::kVOffset);
    p = reinterpret_cast<T*>(base + Config::kPOffset) + warp * mma::kTile * Config::kPStride;
    s = reinterpret_cast<float*>(base + Config::kSOffset) + warp * mma::kTile * Config::kSStride;
    o = reinterpret_cast<float*>(base + Config::kOOffset) + warp * mma::kTile * Config::kOStride;
  }
};

// attend_keys on tensor cores: the block's Q tile once, then per key tile S = Q Kᵀ (each warp its
// 16 rows), the online softmax over S's rows (two lanes a row: lane l takes row l / 2, keys
// l % 2, l % 2 + 2, ..., and the pair combines with one shuffle), the rows whose maximum grew
// rescaled, O += P V. Every thread of the block calls.
template <class Config, class Problem>
__device__ void attend_keys_mma(const Problem& p, int64_t head, int64_t first_query,
                                int64_t key_begin, int64_t key_end, float* shared, MmaRow& row) {
  using T = typename Config::Element;
  constexpr int D = Config::kHeadDim, DV = Config::kValueDim, BK = Config::kKeyTile;
  constexpr int QS = Config::kQStride, VS = Config::kVStride, PS = Config::kPStride;
  constexpr int SS = Config::kSStride, OS = Config::kOStride, NT = Config::kThreads;
  constexpr int R = mma::kTile, kPerLane = BK / 2;
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31, warp = tid >> 5;
  const int r = lane >> 1, half = lane & 1; // this lane's row of the warp, and its keys' parity
  const int64_t i = first_query + warp * R + r;
  const MmaTiles<Config> t(shared, warp);
  constexpr float kNegInf = -INFINITY;

  STITCH_ATTENTION_LOADS
  for (int e = tid; e < Config::kQueryTile * QS; e += NT) {
    const int qr = e / QS, d = e % QS;
    const int64_t qi = first_query + qr;
    t.q[e] = T(d < D && qi < p.queries ? p.query(head, qi, d) : 0.0f);
  }
  for (int e = lane; e < R * OS; e += 32)
    t.o[e] = 0.0f;
  __syncwarp(); // with no key tile the zeros are read as they are, by other lanes
  row.maximum = kNegInf;
  row.sum = 0.0f;

  for (int64_t k0 = key_begin; k0 < key_end; k0 += BK) {
    __syncthreads(); // the Q tile is in; the previous K and V tiles' readers are done
    STITCH_ATTENTION_LOADS
    for (int e = tid; e < BK * QS; e += NT) {
      const int j = e / QS, d = e % QS;
      t.k[e] = T(d < D && k0 + j < key_end ? p.key(head, k0 + j, d) : 0.0f);
    }
    STITCH_ATTENTION_LOADS
    for (int e = tid; e < BK * VS; e += NT) {
      const int j = e / VS, d = e % VS;
      t.v[e] = T(d < DV && k0 + j < key_end ? p.value(head, k0 + j, d) : 0.0f);
    }
    __syncthreads();

    // S = Q Kᵀ for the warp's rows: K's rows are Kᵀ's columns.
    for (int n = 0; n < Config::kKeyTiles; ++n) {
      mma::Accumulator acc;
      mma::zero(acc);
      for (int kk = 0; kk < Config::kDimTiles; ++kk) {
        mma::A<T> a;
        mma::B<T, mma::ColMajor> b;
        mma::load(a, t.q + warp * R * QS + kk * 16, QS);
        mma::load(b, t.k + n * 16 * QS + kk * 16, QS);
        mma::multiply_add(acc, a, b);
      }
      mma::store(t.s + n * 16, acc, SS);
    }
    __syncwarp();

    float x[kPerLane];
    float tile_max = kNegInf;
    for (int c = 0; c < kPerLane; ++c) {
      const int key = 2 * c + half;
      const int64_t j = k0 + key;
      x[c] = (i < p.queries && j < key_end) ? p.logit(head, i, j, t.s[r * SS + key]) : kNegInf;
      tile_max = max_nan(tile_max, x[c]);
    }
    tile_max = max_nan(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float m_new = max_nan(row.maximum, tile_max);
    const bool none = m_new == kNegInf; // as attend_keys
    const float correction = none ? 1.0f : expf(row.maximum - m_new);
    float tile_sum = 0.0f;
    for (int c = 0; c < kPerLane; ++c) {
      const float e = none ? 0.0f : expf(x[c] - m_new);
      t.p[r * PS + 2 * c + half] = T(e);
      tile_sum += e;
    }
    tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 1);
    row.sum = row.sum * correction + tile_sum;
    row.maximum = m_new;
    if (correction != 1.0f) // a row whose maximum grew (or NaN)
      for (int d = half; d < DV; d += 2)
        t.o[r * OS + d] *= correction;
    __syncwarp();

    // O += P V, the keys of the tile in order.
    for (int n = 0; n < Config::kValueTiles; ++n) {
      mma::Accumulator acc;
      mma::load(acc, t.o + n * 16, OS);
      for (int kk = 0; kk < Config::kKeyTiles; ++kk) {
        mma::A<T> a;
        mma::B<T, mma::RowMajor> b;
        mma::load(a, t.p + kk * 16, PS);
        mma::load(b, t.v + kk * 16 * VS + n * 16, VS);
        mma::multiply_add(acc, a, b);
      }
      mma::store(t.o + n * 16, acc, OS);
    }
    __syncwarp();
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
    detail::MmaRow row;
    detail::attend_keys_mma<Config>(p, head, first_query, 0, key_end, shared, row);
    const detail::MmaTiles<Config> t(shared, warp);
    // No keys: zeros; every key excluded: NaN (as below).
    const float inverse = p.keys == 0 ? 0.0f : 1.0f / row.sum;
    for (int r = 0; r < R; ++r) { // row r's output, its dims across the lanes
      const float row_inverse = __shfl_sync(0xffffffffu, inverse, 2 * r);
      const int64_t i = first_query + warp * R + r;
      if (i >= p.queries) continue;
      for (int d = lane; d < Config::kValueDim; d += 32)
        p.store(head, i, d, t.o[r * Config::kOStride + d] * row_inverse);
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
    detail::MmaRow row;
    detail::attend_keys_mma<Config>(p, head, first_query, begin, end, shared, row);
    const detail::MmaTiles<Config> t(shared, warp);
    const int64_t first_slot = (head_slot * splits + split) * Config::kQueryTile + warp * R;
    if ((lane & 1) == 0 && first_query + warp * R + (lane >> 1) < p.queries)
      stats[first_slot + (lane >> 1)] = Partial{row.maximum, row.sum};
    for (int r = 0; r < R; ++r) {
      if (first_query + warp * R + r >= p.queries) continue;
      for (int d = lane; d < Config::kValueDim; d += 32)
        out[(first_slot + r) * Config::kValueDim + d] = t.o[r * Config::kOStride + d];
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
