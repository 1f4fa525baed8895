// The state of an emulated launch: its geometry, each resident block (barrier, warps, shared
// memory) and each emulated GPU thread (indices, what it waits for, its fiber). Also the pointer
// to the thread that is running now, which threadIdx / blockIdx / blockDim / gridDim and every
// device intrinsic read.
#pragma once

#include "host_types.h"
#include "shared_memory.h"
#include "warp_collectives.h"

#include <boost/context/fiber.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <source_location>
#include <string>
#include <vector>

namespace stitch::host {

class FiberScheduler;

// A place in the kernel source where threads wait, for mismatch checks and messages.
struct SourceSite {
  const char* file = "";
  unsigned line = 0;

  static SourceSite from(const std::source_location& location) {
    return SourceSite{location.file_name(), static_cast<unsigned>(location.line())};
  }
  friend bool operator==(const SourceSite& a, const SourceSite& b) {
    return a.line == b.line && (a.file == b.file || std::strcmp(a.file, b.file) == 0);
  }
  std::string text() const {
    const char* slash = std::strrchr(file, '/');
    return std::string(slash ? slash + 1 : file) + ":" + std::to_string(line);
  }
};

struct LaunchGeometry {
  const char* kernel_name = "";
  dim3 grid_dim;
  dim3 block_dim;
  unsigned threads_per_block = 0;
  unsigned warps_per_block = 0;
  std::uint64_t block_count = 0;
  std::size_t dynamic_shared_bytes = 0;
  bool cooperative = false;
  dim3 cluster_dim = dim3(1, 1, 1); // a launch without clusters has clusters of one block
  unsigned cluster_blocks = 1;
};

inline uint3 block_index_of(const LaunchGeometry& geometry, std::uint64_t linear_block) {
  const std::uint64_t x = geometry.grid_dim.x, y = geometry.grid_dim.y;
  return uint3{static_cast<unsigned>(linear_block % x), static_cast<unsigned>(linear_block / x % y),
               static_cast<unsigned>(linear_block / (x * y))};
}

// The linear index of block `rank` of cluster `cluster` (both in x-fastest order): a cluster is
// a box of cluster_dim blocks of the grid, and clusters tile the grid.
inline std::uint64_t block_of_cluster(const LaunchGeometry& geometry, std::uint64_t cluster,
                                      unsigned rank) {
  const dim3 c = geometry.cluster_dim, g = geometry.grid_dim;
  const std::uint64_t across_x = g.x / c.x, across_y = g.y / c.y;
  const std::uint64_t x = cluster % across_x * c.x + rank % c.x;
  const std::uint64_t y = cluster / across_x % across_y * c.y + rank / c.x % c.y;
  const std::uint64_t z = cluster / (across_x * across_y) * c.z + rank / (c.x * c.y);
  return x + g.x * (y + std::uint64_t{g.y} * z);
}

inline uint3 thread_index_of(const dim3& block_dim, unsigned linear_thread) {
  return uint3{linear_thread % block_dim.x, linear_thread / block_dim.x % block_dim.y,
               linear_thread / (block_dim.x * block_dim.y)};
}

struct BlockState {
  uint3 block_idx{};
  std::uint64_t linear_block = 0;
  unsigned first_thread = 0; // index of its thread 0 in the scheduler's thread list
  std::vector<WarpState> warps;
  unsigned barrier_arrivals = 0; // threads waiting at __syncthreads now
  unsigned barrier_true = 0;     // of those, how many passed a true predicate
  SourceSite barrier_site;
  unsigned exited_threads = 0;
  SharedMemoryArena shared;
  // Its cluster: the resident blocks in rank order (this block is cluster[cluster_rank]).
  BlockState* cluster = nullptr;
  unsigned cluster_rank = 0;
};

enum class WaitState : std::uint8_t {
  Ready,
  BlockBarrier,
  WarpCollective,
  GridBarrier,
  ClusterBarrier,
  Exited
};

struct EmulatedThread {
  uint3 thread_idx{};
  const LaunchGeometry* geometry = nullptr;
  BlockState* block = nullptr;
  FiberScheduler* scheduler = nullptr;
  unsigned linear_id = 0; // within the block: x + y * bx + z * bx * by
  WaitState state = WaitState::Ready;
  SourceSite wait_site;
  WarpCollectiveKind wait_collective = WarpCollectiveKind::SyncWarp;
  unsigned wait_mask = 0;
  std::uint64_t collective_result = 0; // delivered by the barrier or collective that released it
  bool started = false;
  void* stack_low = nullptr;   // lowest address of its fiber stack
  boost::context::fiber fiber; // the thread's own context while it is suspended

  unsigned lane() const { return linear_id & 31u; }
  unsigned warp() const { return linear_id >> 5; }
};

namespace detail {
inline thread_local EmulatedThread* current_emulated_thread = nullptr;
} // namespace detail

// The emulated thread running now; only valid inside a kernel.
inline const EmulatedThread& current_thread() { return *detail::current_emulated_thread; }

// The same, for intrinsics that act on it. Calling an intrinsic from host code is a programming
// error with no launch to report it to, so it stops the process with a message.
inline EmulatedThread& running_thread(const char* intrinsic) {
  EmulatedThread* thread = detail::current_emulated_thread;
  if (thread == nullptr) {
    std::fprintf(stderr, "stitch host target: %s called outside a kernel launch\n", intrinsic);
    std::abort();
  }
  return *thread;
}

} // namespace stitch::host
