// Where every tensor lives at run time: the caller's input or output buffers, the embedded
// weights, or one device arena shared by all intermediates, with offsets planned from tensor
// lifetimes so that tensors whose lifetimes do not overlap share bytes. Views live where the
// tensor they view lives. A tensor internal to a fused group (not in its `outputs`) lives
// only inside the kernel: StorageKind::None. A group's `scratch_bytes` get an arena range
// live only while that group runs. The intermediates of a GEMM chain's unfused plan
// (FusionPlan::fallbacks), which the chain keeps on chip, live in a buffer of their own
// (StorageKind::Fallback), lifetime-planned per chain; the library allocates it only on a device
// that runs a chain unfused. A model with symbolic dims reaches its arena tensors through their
// slots, laid out per context (runtime/arena_layout.h).
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
  int64_t offset = 0; // byte offset into the weights, the arena or the fallback buffer
  int32_t slot = -1;  // Arena: the tensor's slot (MemoryPlan::arena_slot_bytes)
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
  std::vector<int32_t> scratch_slot;   // per group: the scratch's arena slot, or -1
  // The arena as slots, each an intermediate (arena_slot_tensor) or a group's scratch
  // (kNoTensor), and the steps that placed them in the plan's order: a slot's index allocates
  // it, ~index releases it (runtime/arena_layout.h lays them out). The offsets above are that
  // layout at the symbols' maxima. A library with symbolic dims carries the slots and steps, so
  // that a context serving smaller maxima lays its arena out for them (stitch_context_create_for).
  std::vector<int64_t> arena_slot_bytes; // at the maxima
  std::vector<int64_t> arena_slot_offsets;
  std::vector<TensorId> arena_slot_tensor;
  std::vector<int32_t> arena_steps;
};

MemoryPlan plan_memory(const Graph& graph, const FusionPlan& plan);

} // namespace stitch
