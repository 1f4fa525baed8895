// Thread-block clusters and distributed shared memory (sm_90 and later) for generated kernels
// launched with STITCH_LAUNCH_CLUSTER: the blocks of a cluster run at once and read and write
// each other's shared memory.
//
//   cluster::block_rank()           this block's rank in its cluster (x fastest in the cluster's
//                                   box of blocks)
//   cluster::blocks()               the cluster's block count
//   cluster::sync()                 every thread of every block of the cluster waits; shared
//                                   memory written before it (anywhere in the cluster) is
//                                   visible after it. Every thread of the cluster must call it.
//   cluster::map_shared(p, rank)    the same place as p (an address in this block's shared
//                                   memory) in block `rank`'s shared memory; plain loads and
//                                   stores through it
//
// The collectives of FlashFuser's dataflow, over float buffers at the same place in each
// block's shared memory. Every thread of every block of the cluster calls them; each begins
// with a cluster::sync (the blocks' inputs are written) and ends with one (no block reads a
// peer's buffer any more, so the buffers may be reused and the blocks may exit). Each output
// element is computed by exactly one block, from the ranks in a fixed order, so the results are
// deterministic (a reduction reads the ranks in order 0, 1, ...; a gather reads them from r + 1
// on, a ring, which spreads the distributed shared memory traffic over the cluster).
//
//   cluster::chunk(count)                 ceil(count / blocks()): the elements each rank owns
//   cluster::reduce_scatter_apply(partial, count, apply)
//       apply(i, Σ over ranks of partial[i]) for each i of this block's chunk (r * chunk <= i <
//       min(count, (r + 1) * chunk), r = block_rank()); the sum runs over ranks 0, 1, ... in
//       order. ("reduce": the exchange of partial products along a split K.)
//   cluster::reduce_scatter(partial, out, count)
//       the same into shared memory: out[i] = the sum at r * chunk + i.
//   cluster::all_gather(mine, all, count)
//       all[q * count + i] = block q's mine[i] for every rank q ("shuffle").
//   cluster::all_reduce(partial, scratch, total, count)
//       total[i] = Σ over ranks of partial[i], equal in every block: a reduce_scatter into
//       scratch (chunk(count) floats), then every block gathers the chunks.
//
// On the host target the cluster's blocks are resident in one fiber scheduler (host/), the
// barrier waits for all of them, map_shared reaches the peer's arena, and a block that exits
// leaves garbage behind: a missing cluster::sync before reading what peers wrote, or before
// exiting while peers read, shows up as NaN in the results. (A missing sync before a buffer is
// written again does not: the blocks run in rank order.) The host is stricter than the GPU
// where the GPU would run on anyway: every thread must reach each cluster::sync at the same
// place (no exited threads, no divergent call sites), as with __syncthreads. Under nvcc the
// primitives are CUDA's sm_90 cluster intrinsics; device code compiled for an older
// architecture traps (the planner plans clusters only for sm_90 and later, and the launcher
// checks the device before it launches them).
#pragma once

#include "stitch_cuda.h"

namespace stitch {
namespace cluster {

#if defined(__CUDACC__)

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
__device__ __forceinline__ unsigned block_rank() {
  __trap();
  return 0;
}
__device__ __forceinline__ unsigned blocks() {
  __trap();
  return 1;
}
__device__ __forceinline__ void sync() { __trap(); }
template <class T> __device__ __forceinline__ T* map_shared(T* address, unsigned) {
  __trap();
  return address;
}
#else
__device__ __forceinline__ unsigned block_rank() { return __clusterRelativeBlockRank(); }
__device__ __forceinline__ unsigned blocks() { return __clusterSizeInBlocks(); }
__device__ __forceinline__ void sync() {
  __cluster_barrier_arrive();
  __cluster_barrier_wait();
}
template <class T> __device__ __forceinline__ T* map_shared(T* address, unsigned rank) {
  return static_cast<T*>(__cluster_map_shared_rank(static_cast<const void*>(address), rank));
}
#endif

#else // the host target (host/device_intrinsics.h)

inline unsigned block_rank() { return stitch_cluster_block_rank(); }
inline unsigned blocks() { return stitch_cluster_blocks(); }
inline void sync(std::source_location site = std::source_location::current()) {
  stitch_cluster_sync(site);
}
template <class T> inline T* map_shared(T* address, unsigned rank) {
  return stitch_cluster_map_shared(address, rank);
}

#endif

namespace detail {
__device__ __forceinline__ int thread_in_block() {
  return static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}
__device__ __forceinline__ int threads_in_block() {
  return static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
}

} // namespace detail

__device__ __forceinline__ int chunk(int count) {
  const int ranks = static_cast<int>(blocks());
  return (count + ranks - 1) / ranks;
}

// Reduce-scatter of `partial[0, count)` into a function: `apply(i, sum)` for each element i of
// this block's chunk, by the block's threads (an epilogue that stores the sums).
template <class Apply>
__device__ __forceinline__ void reduce_scatter_apply(float* partial, int count, Apply apply) {
  sync(); // every block's partial is written
  const int size = chunk(count);
  const int first = static_cast<int>(block_rank()) * size;
  const int length = count - first < size ? count - first : size;
  const unsigned ranks = blocks();
  for (int i = detail::thread_in_block(); i < length; i += detail::threads_in_block()) {
    float sum = map_shared(partial, 0)[first + i];
    for (unsigned q = 1; q < ranks; ++q)
      sum += map_shared(partial, q)[first + i];
    apply(first + i, sum);
  }
  sync(); // no block reads a partial any more
}

// Reduce-scatter of `partial[0, count)`: this block's `out[0, chunk(count))` gets its chunk of
// the sum (the elements past `count` are not written).
__device__ __forceinline__ void reduce_scatter(float* partial, float* out, int count) {
  const int first = static_cast<int>(block_rank()) * chunk(count);
  reduce_scatter_apply(partial, count, [&](int i, float sum) { out[i - first] = sum; });
}

// All-gather: `all[q * count + i]` = block q's `mine[i]`, read from the next rank on (a ring).
__device__ __forceinline__ void all_gather(float* mine, float* all, int count) {
  sync(); // every block's `mine` is written
  const unsigned ranks = blocks(), rank = block_rank();
  for (unsigned step = 0; step < ranks; ++step) {
    const unsigned q = (rank + 1 + step) % ranks;
    const float* const from = map_shared(mine, q);
    for (int i = detail::thread_in_block(); i < count; i += detail::threads_in_block())
      all[q * count + i] = from[i];
  }
  sync(); // no block reads `mine` any more
}

// All-reduce: `total[i]` = Σ over ranks of `partial[i]` in every block, through `scratch`
// (chunk(count) floats of shared memory): each rank sums its chunk, then gathers the others'.
__device__ __forceinline__ void all_reduce(float* partial, float* scratch, float* total,
                                           int count) {
  reduce_scatter(partial, scratch, count); // ends with the barrier after which scratch is read
  const unsigned ranks = blocks(), rank = block_rank();
  const int size = chunk(count);
  for (unsigned step = 0; step < ranks; ++step) {
    const unsigned q = (rank + step) % ranks;
    const int first = static_cast<int>(q) * size;
    const int length = count - first < size ? count - first : size;
    const float* const from = map_shared(scratch, q);
    for (int i = detail::thread_in_block(); i < length; i += detail::threads_in_block())
      total[first + i] = from[i];
  }
  sync(); // no block reads a scratch any more
}

} // namespace cluster
} // namespace stitch
