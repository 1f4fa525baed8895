// stitch_cuda.h: the one portability header that every generated .cu file and every device
// helper (.cuh) includes first. It gives kernels one spelling that means the same thing on two
// targets:
//
//  - CUDA (compiled by nvcc): the real <cuda_runtime.h>; the stitchc macros below expand to
//    their plain CUDA meaning.
//  - The host target (compiled by g++ -x c++ -DSTITCH_HOST_TARGET): host/ emulates the CUDA
//    execution model. Every thread of a block runs as a fiber that runs until it blocks at a
//    barrier, warp collective or exit; shared memory starts as 0xFF garbage; launch errors and
//    deadlocks come back as cudaError_t values. The CUDA runtime calls a launcher needs
//    (cudaMalloc, cudaMemcpyAsync, cudaGetLastError, ...) keep their CUDA names, in the global
//    namespace, and act on plain host memory, synchronously.
//
// The stitchc macros (use these, not the raw CUDA spellings, in generated code):
//
//   STITCH_SHARED(type, name, count)
//       A per-block shared array `type name[count]` (static shared memory). Function scope only;
//       `name` behaves as a `type*` (do not take sizeof(name)). Several declarations in one
//       kernel get distinct storage; a declaration in a __device__ helper is one allocation per
//       block however often the helper runs, exactly as `__shared__` in CUDA.
//   STITCH_SHARED_2D(type, name, rows, cols)
//       A per-block shared `type name[rows][cols]` (e.g. a padded transpose tile).
//   STITCH_DYNAMIC_SHARED(type, name)
//       `type* name` at the start of the launch's dynamic shared memory (128-byte aligned). Every
//       STITCH_DYNAMIC_SHARED in a kernel aliases the same bytes; carve offsets explicitly.
//   STITCH_LAUNCH(kernel, grid, block, shared_bytes, stream, args...)
//       Launches `kernel<<<grid, block, shared_bytes, stream>>>(args...)` and evaluates to the
//       launch's cudaError_t. Wrap a template kernel in parentheses: STITCH_LAUNCH((k<4>), ...).
//       On the host target the launch runs to completion before it returns.
//   STITCH_LAUNCH_COOPERATIVE(kernel, grid, block, shared_bytes, stream, args...)
//       The same as a cooperative launch (cudaLaunchAttributeCooperative): all blocks are
//       resident at once, so the kernel may call stitch_grid_sync(). A grid larger than the
//       device can hold resident fails with cudaErrorCooperativeLaunchTooLarge.
//   STITCH_LAUNCH_CLUSTER(kernel, grid, cluster, block, shared_bytes, stream, args...)
//       A launch in thread-block clusters of `cluster` blocks (a dim3 that divides `grid`;
//       cudaLaunchAttributeClusterDimension, sm_90 and later): a cluster's blocks run at once,
//       on one GPU processing cluster, and reach each other's shared memory through
//       device/stitch_cluster.cuh. More than 8 blocks need the kernel's
//       cudaFuncAttributeNonPortableClusterSizeAllowed; otherwise, or when the grid is not a
//       whole number of clusters, the launch fails with cudaErrorInvalidClusterSize.
//   stitch::max_active_clusters(&clusters, kernel, cluster, block, shared_bytes)
//       cudaOccupancyMaxActiveClusters for clusters of `cluster` blocks of `block` threads: how
//       many the device holds at once (0: the kernel cannot run in such clusters here). A
//       launcher asks it before it relies on a cluster launch.
//   stitch::cluster_launch_fits(kernel, cluster, block, shared_bytes)
//       Whether the current device runs `kernel` in such clusters at all: it has thread-block
//       clusters (sm_90), grants the dynamic shared memory (opting in past 48 KiB) and a
//       cluster over 8 blocks (the non-portable size, allowed first) and holds at least one
//       cluster at once. The failed questions' errors are cleared. Asked once when a
//       model is created; where it is false, a GEMM chain runs its unfused plan.
//   stitch::resident_blocks(&blocks, kernel, block, shared_bytes)
//       The blocks of `block` threads and `shared_bytes` of dynamic shared memory (opted in past
//       48 KiB) the current device keeps resident at once: its SM count times
//       cudaOccupancyMaxActiveBlocksPerMultiprocessor. A cooperative (grid-barrier) launch has at
//       most that many; asked once when a model is created.
//   stitch_grid_sync()
//       Grid-wide barrier (cooperative_groups::this_grid().sync()). Only in cooperative launches,
//       and only in sources that include device/stitch_grid.cuh (see there why it has a header
//       of its own).
//
// Everything else keeps its CUDA spelling on both targets: __global__, __device__, __host__,
// __forceinline__, __restrict__, __launch_bounds__, __align__, threadIdx, blockIdx, blockDim,
// gridDim, warpSize, dim3, uint3, float2/float4/int4/... with make_*, __syncthreads(_count/_and/
// _or), __syncwarp, __shfl_sync/__shfl_xor_sync/__shfl_down_sync/__shfl_up_sync, __ballot_sync,
// __any_sync, __all_sync, atomicAdd/Sub/Exch/Max/Min/CAS/And/Or/Xor, __threadfence, __ldg,
// __popc/__clz/__ffs, __float_as_int and friends, min/max, and the <math.h> float functions
// (expf, logf, sqrtf, rsqrtf, tanhf, erff, fmaxf, ...). Fast-math intrinsics (__expf, __fdividef,
// ...) do not exist on the host target on purpose: generated code must not use them.
// Raw `__shared__` is deliberately not defined on the host target (it would silently become one
// process-wide static); use STITCH_SHARED.
#pragma once

#if defined(STITCH_HOST_TARGET) && defined(__CUDACC__)
#error "stitch_cuda.h: STITCH_HOST_TARGET is for host compilers; do not define it under nvcc"
#endif

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#elif defined(STITCH_HOST_TARGET)
// All of the emulation is included before the CUDA keywords below become macros, so that none
// of them can leak into the standard library or Boost.
#include "host/stitch_host_runtime.h"
#else
#error "stitch_cuda.h: compile with nvcc, or with a host compiler and -DSTITCH_HOST_TARGET"
#endif

#include <cstddef>

namespace stitch {

// Both targets' (the host target's before gridDim and blockDim become the built-in variables'
// macros below).
template <typename... Params>
inline cudaError_t max_active_clusters(int* clusters, void (*kernel)(Params...), dim3 cluster,
                                       dim3 block, std::size_t shared_bytes) {
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = cluster.x;
  attribute.val.clusterDim.y = cluster.y;
  attribute.val.clusterDim.z = cluster.z;
  cudaLaunchConfig_t config = {};
  config.gridDim = cluster;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaOccupancyMaxActiveClusters(clusters, kernel, &config);
}

template <typename... Params>
inline cudaError_t resident_blocks(int* blocks, void (*kernel)(Params...), dim3 block,
                                   std::size_t shared_bytes) {
  constexpr std::size_t kWithoutOptIn = 48 * 1024;
  *blocks = 0;
  int device = 0, sms = 0, per_sm = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status == cudaSuccess)
    status = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (status == cudaSuccess && shared_bytes > kWithoutOptIn)
    status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(shared_bytes));
  if (status == cudaSuccess)
    status = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, kernel, static_cast<int>(block.x * block.y * block.z), shared_bytes);
  if (status == cudaSuccess) *blocks = sms * per_sm;
  return status;
}

template <typename... Params>
inline bool cluster_launch_fits(void (*kernel)(Params...), dim3 cluster, dim3 block,
                                std::size_t shared_bytes) {
  constexpr std::size_t kWithoutOptIn = 48 * 1024;
  const auto refused = [] {
    (void)cudaGetLastError(); // a question's answer, not a failure of the caller's work
    return false;
  };
  constexpr unsigned kPortableClusterBlocks = 8;
  int device = 0, clusters_supported = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&clusters_supported, cudaDevAttrClusterLaunch, device) != cudaSuccess)
    return refused();
  if (clusters_supported == 0) return false; // before sm_90
  if (cluster.x * cluster.y * cluster.z > kPortableClusterBlocks &&
      cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
          cudaSuccess)
    return refused();
  if (shared_bytes > kWithoutOptIn &&
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(shared_bytes)) != cudaSuccess)
    return refused();
  int clusters = 0;
  if (max_active_clusters(&clusters, kernel, cluster, block, shared_bytes) != cudaSuccess)
    return refused();
  return clusters > 0;
}

} // namespace stitch

#if defined(__CUDACC__)

#include <cstddef>
#include <utility>

#define STITCH_SHARED(type, name, count) __shared__ type name[count]
#define STITCH_SHARED_2D(type, name, rows, cols) __shared__ type name[rows][cols]
#define STITCH_DYNAMIC_SHARED(type, name)                                                          \
  extern __shared__ __align__(128) unsigned char stitch_dynamic_shared_bytes[];                    \
  type* const name = reinterpret_cast<type*>(stitch_dynamic_shared_bytes)

// Grid-wide barrier of a cooperative launch.
namespace stitch {

// Launches through cudaLaunchKernelEx so that ordinary, cooperative and cluster launches share
// one path and the configuration error (if any) is the return value.
template <typename... Params, typename... Args>
inline cudaError_t launch_kernel(bool cooperative, dim3 cluster, void (*kernel)(Params...),
                                 dim3 grid, dim3 block, std::size_t shared_bytes,
                                 cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attributes[2] = {};
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = attributes;
  if (cooperative) {
    attributes[config.numAttrs].id = cudaLaunchAttributeCooperative;
    attributes[config.numAttrs++].val.cooperative = 1;
  }
  if (cluster.x * cluster.y * cluster.z > 1) {
    attributes[config.numAttrs].id = cudaLaunchAttributeClusterDimension;
    attributes[config.numAttrs].val.clusterDim.x = cluster.x;
    attributes[config.numAttrs].val.clusterDim.y = cluster.y;
    attributes[config.numAttrs++].val.clusterDim.z = cluster.z;
  }
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

// STITCH_LAUNCH_CLUSTER's arguments in the macro's order (a kernel template's commas split the
// macro's first argument; the pieces must come out in the order they went in).
template <typename... Params, typename... Args>
inline cudaError_t launch_in_clusters(void (*kernel)(Params...), dim3 grid, dim3 cluster,
                                      dim3 block, std::size_t shared_bytes, cudaStream_t stream,
                                      Args&&... args) {
  return launch_kernel(false, cluster, kernel, grid, block, shared_bytes, stream,
                       std::forward<Args>(args)...);
}

} // namespace stitch

#define STITCH_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                              \
  ::stitch::launch_kernel(false, dim3(1, 1, 1), kernel, grid, block, shared_bytes,                 \
                          stream __VA_OPT__(, ) __VA_ARGS__)
#define STITCH_LAUNCH_COOPERATIVE(kernel, grid, block, shared_bytes, stream, ...)                  \
  ::stitch::launch_kernel(true, dim3(1, 1, 1), kernel, grid, block, shared_bytes,                  \
                          stream __VA_OPT__(, ) __VA_ARGS__)
#define STITCH_LAUNCH_CLUSTER(kernel, grid, cluster, block, shared_bytes, stream, ...)             \
  ::stitch::launch_in_clusters(kernel, grid, cluster, block, shared_bytes,                         \
                               stream __VA_OPT__(, ) __VA_ARGS__)

#else // the host target

#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

// The built-in index variables of the thread that is running now (uint3 / dim3, read-only).
#define threadIdx (::stitch::host::current_thread().thread_idx)
#define blockIdx (::stitch::host::current_thread().block->block_idx)
#define blockDim (::stitch::host::current_thread().geometry->block_dim)
#define gridDim (::stitch::host::current_thread().geometry->grid_dim)

// `__func__` makes a namespace-scope use a compile error: shared memory is per block, so it can
// only be declared where a block's thread is running.
#define STITCH_SHARED(type, name, count)                                                           \
  static ::stitch::host::SharedSlot stitch_shared_slot_##name{__func__};                           \
  type* const name = ::stitch::host::block_shared_array<type>(stitch_shared_slot_##name, (count))
#define STITCH_SHARED_2D(type, name, rows, cols)                                                   \
  static ::stitch::host::SharedSlot stitch_shared_slot_##name{__func__};                           \
  type(*const name)[cols] = reinterpret_cast<type(*)[cols]>(                                       \
      ::stitch::host::block_shared_array<type>(stitch_shared_slot_##name, (rows) * (cols)))
#define STITCH_DYNAMIC_SHARED(type, name)                                                          \
  type* const name = static_cast<type*>(::stitch::host::block_dynamic_shared())

#define STITCH_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                              \
  ::stitch::host::launch_kernel(::stitch::host::LaunchKind::Ordinary, #kernel, dim3(1, 1, 1),      \
                                kernel, grid, block, shared_bytes,                                 \
                                stream __VA_OPT__(, ) __VA_ARGS__)
#define STITCH_LAUNCH_COOPERATIVE(kernel, grid, block, shared_bytes, stream, ...)                  \
  ::stitch::host::launch_kernel(::stitch::host::LaunchKind::Cooperative, #kernel, dim3(1, 1, 1),   \
                                kernel, grid, block, shared_bytes,                                 \
                                stream __VA_OPT__(, ) __VA_ARGS__)
#define STITCH_LAUNCH_CLUSTER(kernel, grid, cluster, block, shared_bytes, stream, ...)             \
  ::stitch::host::launch_in_clusters(#kernel, kernel, grid, cluster, block, shared_bytes,          \
                                     stream __VA_OPT__(, ) __VA_ARGS__)

#endif
