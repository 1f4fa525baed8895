// plan_memory: storage for inputs, outputs and weights, and a lifetime-planned arena for the
// intermediates (best fit over a free list, in the plan's group order: runtime/arena_layout.h).
#include "planner/memory_plan.h"

#include <map>

#include "graph/checked_math.h"
#include "graph/error.h"
#include "runtime/arena_layout.h"

namespace stitch {

namespace {

int64_t align_up(int64_t n, int64_t a) { return checked_add(n, a - 1, "arena size") / a * a; }

TensorId root_of(const Graph& g, TensorId t) {
  while (g.tensor(t).view_of != kNoTensor)
    t = g.tensor(t).view_of;
  return t;
}

// Slots of one buffer (the arena, or a chain's fallback buffer) and the steps that place them,
// recorded in the plan's order, then laid out by arena::lay_out (src/runtime/arena_layout.h),
// which the runtime replays for a context of smaller maxima.
struct Placement {
  std::vector<int64_t> bytes; // per slot, at the maxima
  std::vector<int32_t> steps; // a slot's index allocates it, ~index releases it

  int32_t add(int64_t slot_bytes) {
    const auto slot = static_cast<int32_t>(bytes.size());
    bytes.push_back(slot_bytes);
    steps.push_back(slot);
    return slot;
  }
  void release(int32_t slot) { steps.push_back(~slot); }

  // Each slot's offset; `peak` the buffer's size.
  std::vector<int64_t> lay_out(int64_t& peak) const {
    int64_t total = 0; // every slot at once bounds the peak: checked, so that nothing overflows
    for (int64_t b : bytes)
      total = checked_add(total, align_up(std::max<int64_t>(b, 1), kArenaAlignment), "arena size");
    std::vector<uint64_t> sizes(bytes.begin(), bytes.end());
    std::vector<int64_t> offsets(bytes.size(), 0);
    uint64_t end = 0;
    STITCH_INTERNAL_CHECK(arena::lay_out(steps.data(), steps.size(), sizes.data(), sizes.size(),
                                         offsets.data(), &end),
                          "the arena's placement steps are inconsistent");
    peak = static_cast<int64_t>(end);
    return offsets;
  }
};

// Per root tensor, the position of the last of `groups` that reads it (-1: none).
std::vector<int> last_reads(const Graph& g, const std::vector<FusionGroup>& groups) {
  std::vector<int> last(g.tensors.size(), -1);
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (TensorId t : groups[gi].inputs)
      last[root_of(g, t)] = static_cast<int>(gi);
  return last;
}

// Gives each tensor `groups` write (not a view, without storage yet) `kind` storage and a slot
// of `placement`, live from its group to its last use (`last_use`, by root; at least its own
// group: an intermediate nobody reads still needs its bytes while its group runs).
// `during(gi)` runs after group gi's outputs are placed and before the tensors it reads last are
// released. Returns the tensors placed; their offsets come from the placement's layout.
template <typename During>
std::vector<TensorId> place_written(const Graph& g, const std::vector<FusionGroup>& groups,
                                    const std::vector<int>& last_use, StorageKind kind,
                                    Placement& placement, std::vector<Storage>& storage,
                                    During during) {
  std::vector<TensorId> placed;
  std::vector<std::vector<TensorId>> ends(groups.size() + 1); // the last: read after them all
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    for (TensorId written : groups[gi].outputs) {
      // A group may write a view of a value it computes (an attention's output viewed as its
      // heads, where a planning binding of 1 keeps the heads' Transpose out of the group): the
      // value gets the storage the view shares.
      const TensorId t = root_of(g, written);
      if (storage[t].kind != StorageKind::None) continue;
      storage[t] = {kind, 0, 0, placement.add(g.max_bytes(t))};
      placed.push_back(t);
      ends[std::max(last_use[t], static_cast<int>(gi))].push_back(t);
    }
    during(gi);
    for (TensorId t : ends[gi])
      placement.release(storage[t].slot);
  }
  return placed;
}

} // namespace

MemoryPlan plan_memory(const Graph& g, const FusionPlan& plan) {
  MemoryPlan mp;
  mp.storage.assign(g.tensors.size(), Storage{});
  for (size_t i = 0; i < g.inputs.size(); ++i)
    mp.storage[g.inputs[i]] = {StorageKind::Input, static_cast<int64_t>(i), 0};

  // Graph outputs: the root of each output's view chain is written in place into the
  // caller's buffer, unless it is an input, a constant, or already another output's.
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    TensorId root = root_of(g, g.outputs[i]);
    Storage& s = mp.storage[root];
    bool needs_copy = g.tensor(root).is_constant() || s.kind != StorageKind::None;
    if (needs_copy) {
      mp.output_copies.push_back(i);
      continue;
    }
    s = {StorageKind::Output, static_cast<int64_t>(i), 0};
  }

  // Constants read by the plan (or copied to outputs) go into the weights blob.
  auto place_weight = [&](TensorId t) {
    Storage& s = mp.storage[t];
    if (s.kind != StorageKind::None || !g.tensor(t).is_constant()) return;
    s = {StorageKind::Weights, 0, mp.weights_bytes};
    mp.weights_bytes =
        align_up(checked_add(mp.weights_bytes, g.tensor(t).bytes(), "weights"), kArenaAlignment);
  };
  for (const FusionGroup& group : plan.groups)
    for (TensorId t : group.inputs)
      place_weight(root_of(g, t));
  for (const ChainFallback& fallback : plan.fallbacks)
    for (const FusionGroup& group : fallback.groups)
      for (TensorId t : group.inputs)
        place_weight(root_of(g, t));
  for (size_t i : mp.output_copies)
    place_weight(root_of(g, g.outputs[i]));

  // Intermediates a group writes (its `outputs`): live from that group to the last group that
  // reads them. Tensors internal to a group are never read from memory.
  std::vector<int> last_use = last_reads(g, plan.groups);
  for (size_t i : mp.output_copies)
    last_use[root_of(g, g.outputs[i])] = static_cast<int>(plan.groups.size());
  Placement arena;
  mp.scratch_offset.assign(plan.groups.size(), -1);
  mp.scratch_slot.assign(plan.groups.size(), -1);
  const std::vector<TensorId> in_arena = place_written(
      g, plan.groups, last_use, StorageKind::Arena, arena, mp.storage, [&](size_t gi) {
        // Scratch (a Global group's partial results) is live during its group only.
        const FusionGroup& group = plan.groups[gi];
        if (group.scratch_bytes > 0) {
          mp.scratch_slot[gi] = arena.add(group.scratch_bytes);
          arena.release(mp.scratch_slot[gi]);
        }
      });
  mp.arena_slot_offsets = arena.lay_out(mp.arena_bytes);
  mp.arena_slot_bytes = arena.bytes;
  mp.arena_slot_tensor.assign(arena.bytes.size(), kNoTensor);
  mp.arena_steps = arena.steps;
  for (TensorId t : in_arena) {
    Storage& s = mp.storage[t];
    s.offset = mp.arena_slot_offsets[static_cast<size_t>(s.slot)];
    mp.arena_slot_tensor[static_cast<size_t>(s.slot)] = t;
  }
  for (size_t gi = 0; gi < plan.groups.size(); ++gi)
    if (mp.scratch_slot[gi] >= 0)
      mp.scratch_offset[gi] = mp.arena_slot_offsets[static_cast<size_t>(mp.scratch_slot[gi])];
  for (size_t t = 0; t < g.tensors.size(); ++t)
    if (mp.storage[t].kind == StorageKind::Arena)
      mp.intermediate_bytes = checked_add(mp.intermediate_bytes,
                                          g.max_bytes(static_cast<TensorId>(t)), "intermediates");

  // A chain's unfused plan writes the values the chain keeps on chip: each gets the fallback
  // buffer from its group to the last of the chain's groups that reads it. (The chain's own
  // inputs and outputs already have storage.)
  for (const ChainFallback& fallback : plan.fallbacks) {
    Placement buffer;
    const std::vector<TensorId> placed =
        place_written(g, fallback.groups, last_reads(g, fallback.groups), StorageKind::Fallback,
                      buffer, mp.storage, [](size_t) {});
    int64_t peak = 0;
    const std::vector<int64_t> offsets = buffer.lay_out(peak);
    for (TensorId t : placed) // the fallback buffer has no slots at run time: plain offsets
      mp.storage[t] = {StorageKind::Fallback, 0, offsets[static_cast<size_t>(mp.storage[t].slot)]};
    mp.fallback_bytes = std::max(mp.fallback_bytes, peak);
  }

  // Views share their root's storage.
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (g.tensors[t].view_of == kNoTensor) continue;
    const Storage& root = mp.storage[root_of(g, static_cast<TensorId>(t))];
    if (mp.storage[t].kind == StorageKind::None) mp.storage[t] = root;
  }
  return mp;
}

} // namespace stitch
