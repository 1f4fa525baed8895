// device/stitch_gemm_chain.cuh instantiated over dense row-major tensors, written as generated
// code is: one .cu source that nvcc compiles for sm_90 and the host target compiles as C++
// (test_gemm_chain.cpp runs it).
#include "stitch_cuda.h"

#include "device/stitch_gemm_chain.cuh"
#include "device/stitch_math.cuh"

#include "chain_kernels.h"

namespace stitch::test {
namespace {

using chain::ChainConfig;

template <class T> struct DenseChain {
  ChainArgs a;
  int64_t rows, inner, hidden, columns;

  __device__ float x(int64_t m, int64_t k) const { return a.x[m * inner + k]; }
  __device__ float w1(int64_t k, int64_t n) const { return a.w1[k * hidden + n]; }
  __device__ float w3(int64_t k, int64_t n) const { return a.w3[k * hidden + n]; }
  __device__ float w2(int64_t n, int64_t j) const { return a.w2[n * columns + j]; }
  __device__ float activation(int64_t, int64_t n, float first, float second) const {
    if (a.activation == ChainActivation::BiasGelu) return gelu_erf(first + a.b1[n]);
    return silu(first) * second;
  }
  __device__ void store(int64_t m, int64_t j, float y) const {
    a.out[m * columns + j] = static_cast<float>(T(y + a.b2[j]));
  }
};

template <class Config, class Problem>
__global__ void __launch_bounds__(Config::kThreads) chain_kernel(Problem p, int slice) {
  STITCH_DYNAMIC_SHARED(unsigned char, shared);
  const int64_t tile = blockIdx.x / cluster::blocks();
  chain::gemm_chain_tile<Config>(p, tile * Config::kRows, slice, shared);
}

template <class Config> cudaError_t launch(const ChainArgs& a, int blocks) {
  using T = typename Config::Element;
  const DenseChain<T> problem{a, a.rows, a.inner, a.hidden, a.columns};
  const int slice = Config::slice_of(a.hidden, blocks);
  const int shared = Config::shared_bytes(slice);
  const auto kernel = chain_kernel<Config, DenseChain<T>>;
  if (blocks > 8) {
    const cudaError_t allowed =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (allowed != cudaSuccess) return allowed;
  }
  if (shared > 48 * 1024) {
    const cudaError_t raised =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
    if (raised != cudaSuccess) return raised;
  }
  const auto tiles = static_cast<unsigned>((a.rows + Config::kRows - 1) / Config::kRows);
  if (tiles == 0) return cudaSuccess;
  return STITCH_LAUNCH_CLUSTER(kernel, dim3(tiles * blocks), dim3(blocks),
                               dim3(Config::kThreads), static_cast<std::size_t>(shared), nullptr,
                               problem, slice);
}

template <bool Gated> cudaError_t launch_gated(ChainGeometry geometry, const ChainArgs& a,
                                               int blocks) {
  switch (geometry) {
  case ChainGeometry::Half:
    return launch<ChainConfig<float16, 2, 2, 32, 64, 64, Gated>>(a, blocks);
  case ChainGeometry::Bf16Decode:
    return launch<ChainConfig<bfloat16, 1, 4, 64, 64, 128, Gated>>(a, blocks);
  }
  return cudaErrorInvalidValue;
}

} // namespace

cudaError_t launch_gemm_chain(ChainGeometry geometry, const ChainArgs& args, int cluster_blocks) {
  if (args.activation == ChainActivation::SiluGate)
    return launch_gated<true>(geometry, args, cluster_blocks);
  return launch_gated<false>(geometry, args, cluster_blocks);
}

} // namespace stitch::test
