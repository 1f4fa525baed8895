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

template <class T, int Vector> struct DenseChain {
  ChainArgs a;
  const T *xs, *w1s, *w3s, *w2s;
  int64_t rows, inner, hidden, columns;
  static constexpr int kXVector = Vector, kW1Vector = Vector, kW3Vector = Vector;
  static constexpr int kW2Vector = Vector;

  __device__ const T* x_row(int64_t m) const { return xs + m * inner; }
  __device__ const T* w1_row(int64_t k) const { return w1s + k * hidden; }
  __device__ const T* w3_row(int64_t k) const { return w3s + k * hidden; }
  __device__ const T* w2_row(int64_t n) const { return w2s + n * columns; }
  __device__ float x(int64_t m, int64_t k) const { return static_cast<float>(xs[m * inner + k]); }
  __device__ float w1(int64_t k, int64_t n) const {
    return static_cast<float>(w1s[k * hidden + n]);
  }
  __device__ float w3(int64_t k, int64_t n) const {
    return static_cast<float>(w3s[k * hidden + n]);
  }
  __device__ float w2(int64_t n, int64_t j) const {
    return static_cast<float>(w2s[n * columns + j]);
  }
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

template <class Config, int Vector> cudaError_t launch(const ChainArgs& a, int blocks) {
  using T = typename Config::Element;
  using Problem = DenseChain<T, Vector>;
  const Problem problem{a,
                        reinterpret_cast<const T*>(a.x),
                        reinterpret_cast<const T*>(a.w1),
                        reinterpret_cast<const T*>(a.w3),
                        reinterpret_cast<const T*>(a.w2),
                        a.rows,
                        a.inner,
                        a.hidden,
                        a.columns};
  const int slice = Config::slice_of(a.hidden, blocks);
  const int shared = Config::shared_bytes(slice);
  const auto kernel = chain_kernel<Config, Problem>;
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
  return STITCH_LAUNCH_CLUSTER(kernel, dim3(tiles * blocks), dim3(blocks), dim3(Config::kThreads),
                               static_cast<std::size_t>(shared), nullptr, problem, slice);
}

template <class Config> cudaError_t launch_either(const ChainArgs& a, int blocks) {
  return a.vectors ? launch<Config, 8>(a, blocks) : launch<Config, 1>(a, blocks);
}

template <bool Gated>
cudaError_t launch_gated(ChainGeometry geometry, const ChainArgs& a, int blocks) {
  switch (geometry) {
  case ChainGeometry::Half:
    return launch_either<ChainConfig<float16, 2, 2, 32, 64, 64, Gated>>(a, blocks);
  case ChainGeometry::Bf16Decode:
    return launch_either<ChainConfig<bfloat16, 1, 4, 64, 64, 128, Gated>>(a, blocks);
  case ChainGeometry::HalfNarrow:
    return launch_either<ChainConfig<float16, 2, 2, 64, 32, 64, Gated>>(a, blocks);
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
