// Launchers for cluster_kernels.cu: kernels launched in thread-block clusters that use
// device/stitch_cluster.cuh, compiled for the host target (test_clusters.cpp) and by nvcc for
// sm_90 (the stitch_runtime_nvcc_cluster_kernels test). Pointers are device pointers; each
// returns the launch's status.
#pragma once

#include "stitch_cuda.h"

namespace stitch::test {

// Grid `grid` in clusters of `cluster` blocks of `threads` threads. Every thread writes, at its
// global linear thread index t (block-linear index × threads + thread): ranks[t] = its block's
// cluster rank, sizes[t] = its cluster's block count.
cudaError_t launch_cluster_ranks(dim3 grid, dim3 cluster, int threads, unsigned* ranks,
                                 unsigned* sizes);

// Each block writes `rank × 1000 + thread` to a shared array; thread t of rank r then reads
// element t of rank (r + 1) % size's array through map_shared into out[block × threads + t].
// With `synchronize_before` false the cluster::sync between the writes and the reads is left
// out; with `synchronize_after` false, the one before the blocks exit (both are bugs the tests
// expect to see). `dynamic` puts the array in dynamic shared memory instead of a STITCH_SHARED
// one.
cudaError_t launch_neighbour_exchange(int clusters, int cluster_blocks, int threads, float* out,
                                      bool synchronize_before, bool synchronize_after,
                                      bool dynamic);

enum class ClusterCollective { ReduceScatter, AllGather, AllReduce };

// Block b (rank r of cluster c) loads in[b × count, (b + 1) × count) into dynamic shared memory
// and takes part in the collective; then
//   ReduceScatter: out[c × count + r × chunk + i] = its chunk of the cluster's sum
//   AllGather:     out[b × size × count + q × count + i] = block q's input (its whole `all`)
//   AllReduce:     out[b × count + i] = the cluster's sum
// A cluster of 16 blocks sets cudaFuncAttributeNonPortableClusterSizeAllowed first.
cudaError_t launch_cluster_collective(ClusterCollective collective, int clusters,
                                      int cluster_blocks, int threads, const float* in, float* out,
                                      int count);

} // namespace stitch::test
