// device/stitch_cluster.cuh in kernels launched with STITCH_LAUNCH_CLUSTER, written as generated
// code is: one .cu source that nvcc compiles for sm_90 and the host target compiles as C++
// (test_clusters.cpp runs it).
#include "stitch_cuda.h"

#include "device/stitch_cluster.cuh"

#include "cluster_kernels.h"

namespace stitch::test {
namespace {

constexpr int kMaxThreads = 256;

__device__ unsigned global_thread() {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  return block * blockDim.x + threadIdx.x;
}

__global__ void cluster_ranks_kernel(unsigned* ranks, unsigned* sizes) {
  ranks[global_thread()] = cluster::block_rank();
  sizes[global_thread()] = cluster::blocks();
}

__global__ void neighbour_exchange_kernel(float* out, bool synchronize_before,
                                          bool synchronize_after, bool dynamic) {
  STITCH_SHARED(float, fixed, kMaxThreads);
  STITCH_DYNAMIC_SHARED(float, flexible);
  float* const mine = dynamic ? flexible : fixed;
  const unsigned rank = cluster::block_rank(), size = cluster::blocks();
  mine[threadIdx.x] = static_cast<float>(rank * 1000 + threadIdx.x);
  if (synchronize_before) cluster::sync();
  const float* const next = cluster::map_shared(mine, (rank + 1) % size);
  out[global_thread()] = next[threadIdx.x];
  if (synchronize_after) cluster::sync();
}

__global__ void cluster_collective_kernel(ClusterCollective collective, const float* in, float* out,
                                          int count) {
  STITCH_DYNAMIC_SHARED(float, shared);
  const unsigned size = cluster::blocks(), rank = cluster::block_rank();
  const int chunk = cluster::chunk(count);
  const unsigned block = blockIdx.x, cluster_index = block / size;
  float* const mine = shared;            // count
  float* const result = shared + count;  // size * count (gather), count or chunk
  float* const scratch = result + count; // chunk (all-reduce)
  for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x))
    mine[i] = in[static_cast<int64_t>(block) * count + i];
  switch (collective) {
  case ClusterCollective::ReduceScatter:
    cluster::reduce_scatter(mine, result, count);
    for (int i = static_cast<int>(threadIdx.x); i < chunk; i += static_cast<int>(blockDim.x))
      if (static_cast<int>(rank) * chunk + i < count)
        out[static_cast<int64_t>(cluster_index) * count + rank * chunk + i] = result[i];
    break;
  case ClusterCollective::AllGather:
    cluster::all_gather(mine, result, count);
    for (int i = static_cast<int>(threadIdx.x); i < static_cast<int>(size) * count;
         i += static_cast<int>(blockDim.x))
      out[static_cast<int64_t>(block) * size * count + i] = result[i];
    break;
  case ClusterCollective::AllReduce:
    cluster::all_reduce(mine, scratch, result, count);
    for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x))
      out[static_cast<int64_t>(block) * count + i] = result[i];
    break;
  }
}

} // namespace

cudaError_t launch_cluster_ranks(dim3 grid, dim3 cluster, int threads, unsigned* ranks,
                                 unsigned* sizes) {
  return STITCH_LAUNCH_CLUSTER(cluster_ranks_kernel, grid, cluster, dim3(threads), 0, nullptr,
                               ranks, sizes);
}

cudaError_t launch_neighbour_exchange(int clusters, int cluster_blocks, int threads, float* out,
                                      bool synchronize_before, bool synchronize_after,
                                      bool dynamic) {
  if (threads > kMaxThreads) return cudaErrorInvalidValue;
  const std::size_t shared = dynamic ? sizeof(float) * threads : 0;
  return STITCH_LAUNCH_CLUSTER(neighbour_exchange_kernel, dim3(clusters * cluster_blocks),
                               dim3(cluster_blocks), dim3(threads), shared, nullptr, out,
                               synchronize_before, synchronize_after, dynamic);
}

cudaError_t launch_cluster_collective(ClusterCollective collective, int clusters,
                                      int cluster_blocks, int threads, const float* in, float* out,
                                      int count) {
  const int chunk = (count + cluster_blocks - 1) / cluster_blocks;
  const int result = collective == ClusterCollective::AllGather ? cluster_blocks * count : count;
  const std::size_t shared = sizeof(float) * (count + result + chunk);
  if (cluster_blocks > 8) {
    const cudaError_t allowed = cudaFuncSetAttribute(
        cluster_collective_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (allowed != cudaSuccess) return allowed;
  }
  if (shared > 48 * 1024) {
    const cudaError_t raised =
        cudaFuncSetAttribute(cluster_collective_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(shared));
    if (raised != cudaSuccess) return raised;
  }
  return STITCH_LAUNCH_CLUSTER(cluster_collective_kernel, dim3(clusters * cluster_blocks),
                               dim3(cluster_blocks), dim3(threads), shared, nullptr, collective, in,
                               out, count);
}

} // namespace stitch::test
