// The emulated device's limits and the emulation's knobs, in one process-wide struct.
//
// The defaults describe a small Hopper-like GPU: real per-block limits (1024 threads, 48 KiB
// static and default dynamic shared memory, 227 KiB opt-in) but only 4 multiprocessors, because
// a cooperative launch keeps every thread of the grid alive as a fiber at once (at most
// 4 x 2048 = 8192 fibers, about 4 KiB of touched stack each). Launchers size
// persistent grids from cudaDeviceGetAttribute / cudaOccupancyMaxActiveBlocksPerMultiprocessor,
// which answer from this struct, so a grid sized that way always fits.
//
// Environment overrides, read once at first use:
//   STITCH_HOST_THREAD_ORDER  ascending | descending | shuffled[:seed]  (see ThreadOrder)
//   STITCH_HOST_WORKERS       OS threads that run the blocks of an ordinary launch
//   STITCH_HOST_SM_COUNT      emulated multiprocessor count
//   STITCH_HOST_STACK_KIB     fiber stack size in KiB
//   STITCH_HOST_CLUSTER_LAUNCH  0: a device without thread-block clusters (before sm_90)
//   STITCH_HOST_MAX_SHARED_KIB  the dynamic shared memory a block may opt in to (an older
//                               device's: 99 on sm_86, 163 on sm_80; at most 227)
// Change host_config() only while no launch is running (tests use a scoped override).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace stitch::host {

// The order in which the threads of a block run between two synchronization points, and the
// blocks of a cluster start. Each thread runs until it blocks, so a kernel that reads shared
// memory another thread (or a peer block of its cluster) has not written yet (a missing
// __syncthreads or cluster::sync) sees garbage in one direction or the other; running CI under
// more than one order exposes both.
enum class ThreadOrder {
  Ascending,  // linear thread id 0, 1, 2, ...
  Descending, // the highest linear thread id first
  Shuffled,   // a fixed pseudo-random permutation (deterministic for a given seed)
};

struct HostDeviceConfig {
  // Residency: how many blocks a cooperative launch may have (like an SM count and occupancy).
  int multiprocessor_count = 4; // the planner's kHostTargetMultiprocessors (launch_config.h)
  int max_threads_per_multiprocessor = 2048;
  int max_blocks_per_multiprocessor = 32;
  std::size_t shared_bytes_per_multiprocessor = 228 * 1024;

  // Per-block limits, as on sm_90.
  unsigned max_threads_per_block = 1024;
  std::size_t static_shared_limit = 48 * 1024;          // static (STITCH_SHARED) per kernel
  std::size_t default_dynamic_shared_limit = 48 * 1024; // without cudaFuncSetAttribute
  std::size_t max_shared_bytes_per_block_optin = 227 * 1024;

  // Thread-block clusters, as on sm_90: at most 8 blocks, or 16 for a kernel that allows
  // non-portable sizes (cudaFuncAttributeNonPortableClusterSizeAllowed).
  unsigned max_portable_cluster_blocks = 8;
  unsigned max_cluster_blocks = 16;
  // False: a device before sm_90, which has no clusters (cudaDevAttrClusterLaunch is 0, and a
  // cluster launch or cudaOccupancyMaxActiveClusters fails with cudaErrorNotSupported).
  bool cluster_launch = true;

  // The emulation itself.
  std::size_t fiber_stack_bytes = 64 * 1024; // usable stack per emulated thread (+ guard page)
  unsigned worker_threads = 0;               // 0: min(4, hardware threads)
  ThreadOrder thread_order = ThreadOrder::Ascending;
  std::uint32_t shuffle_seed = 1;
  bool poison_allocations = true; // cudaMalloc'd memory starts as 0xFF bytes (NaN as floats)
};

namespace detail {

inline void apply_environment(HostDeviceConfig& config) {
  if (const char* order = std::getenv("STITCH_HOST_THREAD_ORDER")) {
    const std::string text = order;
    if (text == "descending") config.thread_order = ThreadOrder::Descending;
    if (text == "ascending") config.thread_order = ThreadOrder::Ascending;
    if (text.rfind("shuffled", 0) == 0) {
      config.thread_order = ThreadOrder::Shuffled;
      const std::size_t colon = text.find(':');
      if (colon != std::string::npos)
        config.shuffle_seed =
            static_cast<std::uint32_t>(std::strtoul(text.c_str() + colon + 1, nullptr, 10));
    }
  }
  if (const char* workers = std::getenv("STITCH_HOST_WORKERS"))
    config.worker_threads = static_cast<unsigned>(std::strtoul(workers, nullptr, 10));
  if (const char* sms = std::getenv("STITCH_HOST_SM_COUNT")) {
    const long count = std::strtol(sms, nullptr, 10);
    if (count > 0) config.multiprocessor_count = static_cast<int>(count);
  }
  if (const char* clusters = std::getenv("STITCH_HOST_CLUSTER_LAUNCH"))
    config.cluster_launch = std::strcmp(clusters, "0") != 0;
  if (const char* shared = std::getenv("STITCH_HOST_MAX_SHARED_KIB")) {
    const unsigned long kib = std::strtoul(shared, nullptr, 10);
    if (kib >= 48 && kib <= 227) config.max_shared_bytes_per_block_optin = kib * 1024;
  }
  if (const char* stack = std::getenv("STITCH_HOST_STACK_KIB")) {
    const unsigned long kib = std::strtoul(stack, nullptr, 10);
    if (kib >= 16) config.fiber_stack_bytes = kib * 1024;
  }
}

} // namespace detail

inline HostDeviceConfig& host_config() {
  static HostDeviceConfig config = [] {
    HostDeviceConfig initial;
    detail::apply_environment(initial);
    return initial;
  }();
  return config;
}

// Blocks of `threads_per_block` threads and `shared_bytes` dynamic shared memory that one
// multiprocessor holds at once; the basis of the cooperative residency limit.
inline int resident_blocks_per_multiprocessor(const HostDeviceConfig& config,
                                              unsigned threads_per_block,
                                              std::size_t shared_bytes) {
  if (threads_per_block == 0) return 0;
  int blocks =
      std::min(config.max_blocks_per_multiprocessor,
               config.max_threads_per_multiprocessor / static_cast<int>(threads_per_block));
  if (shared_bytes > 0) {
    const auto by_shared = static_cast<int>(config.shared_bytes_per_multiprocessor / shared_bytes);
    blocks = std::min(blocks, by_shared);
  }
  return std::max(blocks, 0);
}

} // namespace stitch::host
