// Where every tensor lives at run time: the caller's input or output buffers, the embedded
// weights, or one device arena shared by all intermediates, with offsets planned from tensor
// lifetimes so that tensors whose lifetimes do not overlap share bytes. Views live where the
// tensor they view lives. A tensor internal to a fused group (not in its `outputs`) lives
// only inside the kernel: StorageKind::None. A group's `scratch_bytes` get an arena range
// live only while that group runs. The intermediates of a GEMM chain's unfused plan
// (FusionPlan::fallbacks), which the chain keeps on chip, live in a buffer of their own
// (StorageKind::Fallback), lifetime-planned per chain; the library allocates it only on a device
// that runs a chain unfused.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "planner/fusion_plan.h"

namespace stitch {

enum class StorageKind { None, Input, Output, Weights, Arena, Fallback };

struct Storage {
  StorageKind kind = StorageKind::None;
  int64_t index = 0;  // the input or output position (Input, Output)
  int64_t offset = 0; // byte offset into the weights or the arena (plus a view's base offset)
};

constexpr int64_t kArenaAlignment = 256;

struct MemoryPlan {
  std::vector<Storage> storage;   // per TensorId
  int64_t arena_bytes = 0;        // peak arena size
  int64_t intermediate_bytes = 0; // sum of all intermediates, for comparison
  int64_t fallback_bytes = 0;     // the largest unfused GEMM chain's intermediates
  int64_t weights_bytes = 0;
  // Graph outputs whose values must be copied into the caller's buffer at the end (an
  // output that is a graph input, a constant, or shares storage with another output).
  std::vector<size_t> output_copies;   // positions in Graph::outputs
  std::vector<int64_t> scratch_offset; // per group (by position in the plan): arena offset, or -1
};

MemoryPlan plan_memory(const Graph& graph, const FusionPlan& plan);

} // namespace stitch
