// CUDA's synchronization and warp intrinsics for the host target, with their CUDA names and
// signatures, in the global namespace: __syncthreads (and _count/_and/_or), __syncwarp,
// __shfl*_sync, __ballot_sync, __any_sync, __all_sync, stitch_grid_sync, __nanosleep, memory
// fences, __ldg, __trap; plus the accessors behind STITCH_SHARED / STITCH_DYNAMIC_SHARED and the
// thread-block cluster primitives that device/stitch_cluster.cuh wraps (stitch_cluster_*).
//
// Each synchronizing call records its source location (a defaulted std::source_location
// argument) so that a deadlock or divergence report names the line. Shuffles accept any
// trivially copyable type of at most 8 bytes, as CUDA's overloads do for int, unsigned, long
// long, float, double, ...
//
// The intrinsics reach the fiber scheduler through five entry points (scheduler_* below). In
// header-only builds they call it inline; stitchc's generated sources (-DSTITCH_HOST_LINKED_LAUNCH)
// call the copies compiled once into libstitch_runtime_host.a (launch_linked.cpp), so that a
// model's translation unit neither parses the scheduler nor instantiates what it uses.
#pragma once

#include "thread_state.h"
#include "warp_collectives.h"

#if !defined(STITCH_HOST_LINKED_LAUNCH)
#include "fiber_scheduler.h"
#endif

#include <atomic>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <type_traits>

namespace stitch::host {

// The scheduler's entry points as compiled into libstitch_runtime_host.a (launch_linked.cpp).
std::uint64_t linked_warp_collective(EmulatedThread& thread, const WarpCall& call,
                                     const SourceSite& site);
void linked_block_barrier(EmulatedThread& thread, const SourceSite& site, int predicate);
void linked_grid_barrier(EmulatedThread& thread, const SourceSite& site);
void linked_cluster_barrier(EmulatedThread& thread, const SourceSite& site);
void linked_yield(EmulatedThread& thread);

namespace detail {

#if defined(STITCH_HOST_LINKED_LAUNCH)
inline std::uint64_t scheduler_warp_collective(EmulatedThread& thread, const WarpCall& call,
                                               const SourceSite& site) {
  return linked_warp_collective(thread, call, site);
}
inline void scheduler_block_barrier(EmulatedThread& thread, const SourceSite& site, int predicate) {
  linked_block_barrier(thread, site, predicate);
}
inline void scheduler_grid_barrier(EmulatedThread& thread, const SourceSite& site) {
  linked_grid_barrier(thread, site);
}
inline void scheduler_cluster_barrier(EmulatedThread& thread, const SourceSite& site) {
  linked_cluster_barrier(thread, site);
}
inline void scheduler_yield(EmulatedThread& thread) { linked_yield(thread); }
#else
inline std::uint64_t scheduler_warp_collective(EmulatedThread& thread, const WarpCall& call,
                                               const SourceSite& site) {
  return thread.scheduler->warp_collective(thread, call, site);
}
inline void scheduler_block_barrier(EmulatedThread& thread, const SourceSite& site, int predicate) {
  thread.scheduler->block_barrier(thread, site, predicate);
}
inline void scheduler_grid_barrier(EmulatedThread& thread, const SourceSite& site) {
  thread.scheduler->grid_barrier(thread, site);
}
inline void scheduler_cluster_barrier(EmulatedThread& thread, const SourceSite& site) {
  thread.scheduler->cluster_barrier(thread, site);
}
inline void scheduler_yield(EmulatedThread& thread) { thread.scheduler->yield(thread); }
#endif

} // namespace detail

template <typename T> inline T* block_shared_array(const SharedSlot& slot, std::size_t count) {
  EmulatedThread& thread = running_thread("STITCH_SHARED");
  return static_cast<T*>(thread.block->shared.static_array(slot, sizeof(T) * count, alignof(T)));
}

inline void* block_dynamic_shared() {
  return running_thread("STITCH_DYNAMIC_SHARED").block->shared.dynamic_base();
}

namespace detail {

template <typename T>
inline T warp_exchange(WarpCollectiveKind kind, unsigned mask, T value, int operand, int width,
                       const std::source_location& site) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(std::uint64_t),
                "warp shuffles move trivially copyable values of at most 8 bytes");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  EmulatedThread& thread = running_thread(collective_name(kind));
  const std::uint64_t result = scheduler_warp_collective(
      thread, WarpCall{kind, mask, bits, operand, width}, SourceSite::from(site));
  T out;
  std::memcpy(&out, &result, sizeof(T));
  return out;
}

inline unsigned warp_vote(WarpCollectiveKind kind, unsigned mask, int predicate,
                          const std::source_location& site) {
  EmulatedThread& thread = running_thread(collective_name(kind));
  return static_cast<unsigned>(scheduler_warp_collective(
      thread, WarpCall{kind, mask, predicate != 0 ? 1u : 0u, 0, 32}, SourceSite::from(site)));
}

inline int block_barrier(int predicate, const std::source_location& site) {
  EmulatedThread& thread = running_thread("__syncthreads");
  scheduler_block_barrier(thread, SourceSite::from(site), predicate);
  return static_cast<int>(thread.collective_result);
}

} // namespace detail
} // namespace stitch::host

// ---- Block and grid barriers ----

inline void __syncthreads(std::source_location site = std::source_location::current()) {
  stitch::host::detail::block_barrier(0, site);
}
inline int __syncthreads_count(int predicate,
                               std::source_location site = std::source_location::current()) {
  return stitch::host::detail::block_barrier(predicate, site);
}
inline int __syncthreads_and(int predicate,
                             std::source_location site = std::source_location::current()) {
  const int passed = stitch::host::detail::block_barrier(predicate, site);
  return passed == static_cast<int>(stitch::host::current_thread().geometry->threads_per_block);
}
inline int __syncthreads_or(int predicate,
                            std::source_location site = std::source_location::current()) {
  return stitch::host::detail::block_barrier(predicate, site) != 0;
}

inline void stitch_grid_sync(std::source_location site = std::source_location::current()) {
  stitch::host::EmulatedThread& thread = stitch::host::running_thread("stitch_grid_sync");
  stitch::host::detail::scheduler_grid_barrier(thread, stitch::host::SourceSite::from(site));
}

// ---- Thread-block clusters (device/stitch_cluster.cuh wraps these as stitch::cluster) ----

namespace stitch::host::detail {
inline EmulatedThread& cluster_thread(const char* what) {
  EmulatedThread& thread = running_thread(what);
  if (thread.geometry->cooperative)
    throw KernelFault(cudaErrorNotSupported,
                      std::string(what) + " in a cooperative launch (not emulated)");
  return thread;
}
} // namespace stitch::host::detail

// The block's rank in its cluster (x fastest) and the cluster's block count.
inline unsigned stitch_cluster_block_rank() {
  return stitch::host::detail::cluster_thread("stitch::cluster::block_rank").block->cluster_rank;
}
inline unsigned stitch_cluster_blocks() {
  return stitch::host::detail::cluster_thread("stitch::cluster::blocks").geometry->cluster_blocks;
}

// Waits for every thread of every block of the cluster; shared-memory writes before it are
// visible to the cluster's blocks after it.
inline void stitch_cluster_sync(std::source_location site = std::source_location::current()) {
  stitch::host::EmulatedThread& thread =
      stitch::host::detail::cluster_thread("stitch::cluster::sync");
  stitch::host::detail::scheduler_cluster_barrier(thread, stitch::host::SourceSite::from(site));
}

// The address of the same place as `address` (in this block's shared memory) in the shared
// memory of block `rank` of the cluster.
template <typename T> inline T* stitch_cluster_map_shared(T* address, unsigned rank) {
  stitch::host::EmulatedThread& thread =
      stitch::host::detail::cluster_thread("stitch::cluster::map_shared");
  const unsigned blocks = thread.geometry->cluster_blocks;
  if (rank >= blocks)
    throw stitch::host::KernelFault(cudaErrorIllegalAddress,
                                    "stitch::cluster::map_shared to rank " + std::to_string(rank) +
                                        " of a cluster of " + std::to_string(blocks) + " blocks");
  stitch::host::BlockState& peer = thread.block->cluster[rank];
  void* const mapped = thread.block->shared.same_place_in(
      const_cast<void*>(static_cast<const void*>(address)), peer.shared);
  if (mapped == nullptr)
    throw stitch::host::KernelFault(cudaErrorIllegalAddress,
                                    "stitch::cluster::map_shared of an address that is not in the "
                                    "block's shared memory");
  return static_cast<T*>(mapped);
}

// ---- Warp collectives ----

inline void __syncwarp(unsigned mask = 0xffffffffu,
                       std::source_location site = std::source_location::current()) {
  stitch::host::detail::warp_vote(stitch::host::WarpCollectiveKind::SyncWarp, mask, 0, site);
}

template <typename T>
inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize,
                     std::source_location site = std::source_location::current()) {
  return stitch::host::detail::warp_exchange(stitch::host::WarpCollectiveKind::ShuffleIndex, mask,
                                             var, srcLane, width, site);
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned int delta, int width = warpSize,
                        std::source_location site = std::source_location::current()) {
  return stitch::host::detail::warp_exchange(stitch::host::WarpCollectiveKind::ShuffleUp, mask, var,
                                             static_cast<int>(delta), width, site);
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned int delta, int width = warpSize,
                          std::source_location site = std::source_location::current()) {
  return stitch::host::detail::warp_exchange(stitch::host::WarpCollectiveKind::ShuffleDown, mask,
                                             var, static_cast<int>(delta), width, site);
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize,
                         std::source_location site = std::source_location::current()) {
  return stitch::host::detail::warp_exchange(stitch::host::WarpCollectiveKind::ShuffleXor, mask,
                                             var, laneMask, width, site);
}

inline unsigned __ballot_sync(unsigned mask, int predicate,
                              std::source_location site = std::source_location::current()) {
  return stitch::host::detail::warp_vote(stitch::host::WarpCollectiveKind::Ballot, mask, predicate,
                                         site);
}
inline int __any_sync(unsigned mask, int predicate,
                      std::source_location site = std::source_location::current()) {
  return static_cast<int>(stitch::host::detail::warp_vote(stitch::host::WarpCollectiveKind::Any,
                                                          mask, predicate, site));
}
inline int __all_sync(unsigned mask, int predicate,
                      std::source_location site = std::source_location::current()) {
  return static_cast<int>(stitch::host::detail::warp_vote(stitch::host::WarpCollectiveKind::All,
                                                          mask, predicate, site));
}

// ---- Scheduling, memory order, loads, traps ----

// Yields to the other threads of the resident set (a spin-wait must call it to make progress).
inline void __nanosleep(unsigned int /*nanoseconds*/) {
  stitch::host::EmulatedThread& thread = stitch::host::running_thread("__nanosleep");
  stitch::host::detail::scheduler_yield(thread);
}

inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }

template <typename T> inline T __ldg(const T* address) { return *address; }

[[noreturn]] inline void __trap() {
  throw stitch::host::KernelFault(cudaErrorLaunchFailure, "__trap() called");
}
