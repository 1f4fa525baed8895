// device/stitch_attention.cuh instantiated over dense per-head tensors, written as generated
// code is: one .cu source that nvcc compiles for sm_90 and the host target compiles as C++
// (test_attention.cpp runs it).
#include "stitch_cuda.h"

#include "device/stitch_attention.cuh"

#include "attention_kernels.h"

namespace stitch::test {
namespace {

using attention::FlashConfig;
using attention::FlashMmaConfig;
using attention::Partial;

// The attention_kernels.h problem: contiguous per-head tensors, read element by element or
// (Vector 4) as rows of 16-byte vectors.
template <int Vector> struct DenseProblem {
  AttentionProblemArgs a;
  int64_t queries, keys;
  static constexpr int kQueryVector = Vector, kKeyVector = Vector, kValueVector = Vector;

  __device__ const float* query_row(int64_t h, int64_t i) const {
    return a.q + (h * a.queries + i) * a.head_dim;
  }
  __device__ const float* key_row(int64_t h, int64_t j) const {
    return a.k + (h * a.keys + j) * a.head_dim;
  }
  __device__ const float* value_row(int64_t h, int64_t j) const {
    return a.v + (h * a.keys + j) * a.value_dim;
  }

  __device__ float query(int64_t h, int64_t i, int d) const {
    return a.q[(h * a.queries + i) * a.head_dim + d];
  }
  __device__ float key(int64_t h, int64_t j, int d) const {
    return a.k[(h * a.keys + j) * a.head_dim + d];
  }
  __device__ float value(int64_t h, int64_t j, int d) const {
    return a.v[(h * a.keys + j) * a.value_dim + d];
  }
  __device__ float logit(int64_t h, int64_t i, int64_t j, float dot) const {
    if (a.causal && j > i + a.causal_offset) return -INFINITY;
    float x = dot * a.scale;
    if (a.bias != nullptr) x += a.bias[(h * a.queries + i) * a.keys + j];
    return x;
  }
  __device__ int64_t key_end(int64_t, int64_t last_query) const {
    if (!a.causal) return a.keys;
    const int64_t end = last_query + a.causal_offset + 1;
    return end < 0 ? 0 : (end < a.keys ? end : a.keys);
  }
  __device__ void store(int64_t h, int64_t i, int d, float value) const {
    a.out[(h * a.queries + i) * a.value_dim + d] = value;
  }
};

template <class Config, class Problem> __global__ void flash_kernel(Problem p) {
  STITCH_DYNAMIC_SHARED(float, shared);
  const int64_t tiles = (p.queries + Config::kQueryTile - 1) / Config::kQueryTile;
  const int64_t block = blockIdx.x;
  attention::flash_attention_tile<Config>(p, block / tiles, (block % tiles) * Config::kQueryTile,
                                          shared);
}

template <class Config, class Problem>
__global__ void flash_partial_kernel(Problem p, int splits, int64_t per_split, Partial* stats,
                                     float* partial_out) {
  STITCH_DYNAMIC_SHARED(float, shared);
  const int64_t tiles = (p.queries + Config::kQueryTile - 1) / Config::kQueryTile;
  const int64_t slot = blockIdx.x; // (head, query tile)
  attention::flash_attention_partial<Config>(p, slot / tiles, (slot % tiles) * Config::kQueryTile,
                                             slot, static_cast<int>(blockIdx.y), splits, per_split,
                                             stats, partial_out, shared);
}

template <class Config, class Problem>
__global__ void flash_combine_kernel(Problem p, int splits, const Partial* stats,
                                     const float* partial_out) {
  const int64_t tiles = (p.queries + Config::kQueryTile - 1) / Config::kQueryTile;
  const int64_t slot = blockIdx.x;
  for (int e = static_cast<int>(threadIdx.x); e < Config::kQueryTile * Config::kValueDim;
       e += static_cast<int>(blockDim.x))
    attention::flash_attention_combine<Config>(p, slot / tiles, (slot % tiles) * Config::kQueryTile,
                                               slot, splits, stats, partial_out,
                                               e / Config::kValueDim, e % Config::kValueDim);
}

template <class Config> cudaError_t check_dims(const AttentionProblemArgs& a) {
  return a.head_dim == Config::kHeadDim && a.value_dim == Config::kValueDim ? cudaSuccess
                                                                            : cudaErrorInvalidValue;
}

// Rows as vectors where asked for and the geometry allows them (fp32, dims multiples of 4).
template <class Config> constexpr bool vector_rows_possible() {
  return !Config::kTensorCores && Config::kHeadDim % 4 == 0 && Config::kValueDim % 4 == 0;
}

template <class Config, class Problem> cudaError_t run_as(const AttentionProblemArgs& a) {
  const int64_t tiles = (a.queries + Config::kQueryTile - 1) / Config::kQueryTile;
  if (a.heads * tiles == 0) return cudaSuccess;
  if (cudaError_t e = cudaFuncSetAttribute(flash_kernel<Config, Problem>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(Config::shared_bytes));
      e != cudaSuccess)
    return e;
  const Problem p{a, a.queries, a.keys};
  return STITCH_LAUNCH(flash_kernel<Config, Problem>, static_cast<unsigned>(a.heads * tiles),
                       Config::kThreads, Config::shared_bytes, nullptr, p);
}

template <class Config> cudaError_t run(const AttentionProblemArgs& a) {
  if (cudaError_t e = check_dims<Config>(a); e != cudaSuccess) return e;
  if constexpr (vector_rows_possible<Config>())
    if (a.row_vectors) return run_as<Config, DenseProblem<4>>(a);
  if (a.row_vectors) return cudaErrorInvalidValue;
  return run_as<Config, DenseProblem<1>>(a);
}

template <class Config, class Problem>
cudaError_t run_split_as(const AttentionProblemArgs& a, int splits) {
  const int64_t tiles = (a.queries + Config::kQueryTile - 1) / Config::kQueryTile;
  if (a.heads * tiles == 0 || splits < 1) return cudaSuccess;
  // Each split a whole number of key tiles.
  const int64_t key_tiles = (a.keys + Config::kKeyTile - 1) / Config::kKeyTile;
  const int64_t per_split = ((key_tiles + splits - 1) / splits) * Config::kKeyTile;
  const int64_t rows = a.heads * tiles * splits * Config::kQueryTile;
  Partial* stats = nullptr;
  float* partial_out = nullptr;
  cudaError_t e = cudaMalloc(&stats, sizeof(Partial) * static_cast<size_t>(rows));
  if (e == cudaSuccess)
    e = cudaMalloc(&partial_out, sizeof(float) * static_cast<size_t>(rows * Config::kValueDim));
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(flash_partial_kernel<Config, Problem>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(Config::shared_bytes));
  const Problem p{a, a.queries, a.keys};
  if (e == cudaSuccess)
    e = STITCH_LAUNCH(flash_partial_kernel<Config, Problem>,
                      dim3(static_cast<unsigned>(a.heads * tiles), static_cast<unsigned>(splits)),
                      Config::kThreads, Config::shared_bytes, nullptr, p, splits, per_split, stats,
                      partial_out);
  if (e == cudaSuccess)
    e = STITCH_LAUNCH(flash_combine_kernel<Config, Problem>, static_cast<unsigned>(a.heads * tiles),
                      128, 0, nullptr, p, splits, stats, partial_out);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  cudaFree(stats);
  cudaFree(partial_out);
  return e;
}

template <class Config> cudaError_t run_split(const AttentionProblemArgs& a, int splits) {
  if (cudaError_t e = check_dims<Config>(a); e != cudaSuccess) return e;
  if constexpr (vector_rows_possible<Config>())
    if (a.row_vectors) return run_split_as<Config, DenseProblem<4>>(a, splits);
  if (a.row_vectors) return cudaErrorInvalidValue;
  return run_split_as<Config, DenseProblem<1>>(a, splits);
}

using Dim64 = FlashConfig<64, 64, 4, 4, 32>;
using Odd = FlashConfig<40, 24, 2, 3, 64>;
using Wide = FlashConfig<256, 256, 4, 2, 32>;
using Single = FlashConfig<1, 1, 1, 1, 32>;
using MmaHalf = FlashMmaConfig<float16, 64, 64, 4, 64>;
using MmaBf16Odd = FlashMmaConfig<bfloat16, 40, 24, 2, 32>;
using MmaHalfWide = FlashMmaConfig<float16, 256, 256, 2, 32>;

} // namespace

cudaError_t launch_flash_attention(AttentionGeometry geometry, const AttentionProblemArgs& args) {
  switch (geometry) {
  case AttentionGeometry::Dim64:
    return run<Dim64>(args);
  case AttentionGeometry::Odd:
    return run<Odd>(args);
  case AttentionGeometry::Wide:
    return run<Wide>(args);
  case AttentionGeometry::Single:
    return run<Single>(args);
  case AttentionGeometry::MmaHalf:
    return run<MmaHalf>(args);
  case AttentionGeometry::MmaBf16Odd:
    return run<MmaBf16Odd>(args);
  case AttentionGeometry::MmaHalfWide:
    return run<MmaHalfWide>(args);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_flash_attention_split(AttentionGeometry geometry,
                                         const AttentionProblemArgs& args, int splits) {
  switch (geometry) {
  case AttentionGeometry::Dim64:
    return run_split<Dim64>(args, splits);
  case AttentionGeometry::Odd:
    return run_split<Odd>(args, splits);
  case AttentionGeometry::Wide:
    return run_split<Wide>(args, splits);
  case AttentionGeometry::Single:
    return run_split<Single>(args, splits);
  case AttentionGeometry::MmaHalf:
    return run_split<MmaHalf>(args, splits);
  case AttentionGeometry::MmaBf16Odd:
    return run_split<MmaBf16Odd>(args, splits);
  case AttentionGeometry::MmaHalfWide:
    return run_split<MmaHalfWide>(args, splits);
  }
  return cudaErrorInvalidValue;
}

} // namespace stitch::test
