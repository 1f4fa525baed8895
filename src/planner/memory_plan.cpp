// plan_memory: storage for inputs, outputs and weights, and a lifetime-planned arena for the
// intermediates (best fit over a free list, in the plan's group order).
#include "planner/memory_plan.h"

#include <map>

#include "graph/checked_math.h"
#include "graph/error.h"

namespace stitch {

namespace {

int64_t align_up(int64_t n, int64_t a) { return checked_add(n, a - 1, "arena size") / a * a; }

TensorId root_of(const Graph& g, TensorId t) {
  while (g.tensor(t).view_of != kNoTensor)
    t = g.tensor(t).view_of;
  return t;
}

// A free list of arena byte ranges with best-fit allocation and coalescing.
class ArenaAllocator {
public:
  int64_t allocate(int64_t bytes) {
    bytes = align_up(std::max<int64_t>(bytes, 1), kArenaAlignment);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= bytes && (best == free_.end() || it->second < best->second)) best = it;
    if (best == free_.end()) { // grow at the end (absorbing a free range that ends there)
      int64_t start = end_;
      if (!free_.empty() &&
          std::prev(free_.end())->first + std::prev(free_.end())->second == end_) {
        start = std::prev(free_.end())->first;
        free_.erase(std::prev(free_.end()));
      }
      end_ = start + bytes;
      return start;
    }
    int64_t start = best->first, size = best->second;
    free_.erase(best);
    if (size > bytes) free_[start + bytes] = size - bytes;
    return start;
  }

  void release(int64_t start, int64_t bytes) {
    bytes = align_up(std::max<int64_t>(bytes, 1), kArenaAlignment);
    auto it = free_.emplace(start, bytes).first;
    auto next = std::next(it);
    if (next != free_.end() && start + bytes == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }

  int64_t peak() const { return end_; }

private:
  std::map<int64_t, int64_t> free_; // start -> size
  int64_t end_ = 0;
};

// Per root tensor, the position of the last of `groups` that reads it (-1: none).
std::vector<int> last_reads(const Graph& g, const std::vector<FusionGroup>& groups) {
  std::vector<int> last(g.tensors.size(), -1);
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (TensorId t : groups[gi].inputs)
      last[root_of(g, t)] = static_cast<int>(gi);
  return last;
}

// Gives each tensor `groups` write (not a view, without storage yet) `kind` storage in `buffer`,
// live from its group to its last use (`last_use`, by root; at least its own group: an
// intermediate nobody reads still needs its bytes while its group runs). `during(gi)` runs
// after group gi's outputs are placed and before the tensors it reads last are released.
template <typename During>
void place_written(const Graph& g, const std::vector<FusionGroup>& groups,
                   const std::vector<int>& last_use, StorageKind kind, ArenaAllocator& buffer,
                   std::vector<Storage>& storage, During during) {
  std::vector<std::vector<TensorId>> ends(groups.size() + 1); // the last: read after them all
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    for (TensorId t : groups[gi].outputs) {
      if (g.tensor(t).view_of != kNoTensor || storage[t].kind != StorageKind::None) continue;
      storage[t] = {kind, 0, buffer.allocate(g.max_bytes(t))};
      ends[std::max(last_use[t], static_cast<int>(gi))].push_back(t);
    }
    during(gi);
    for (TensorId t : ends[gi])
      buffer.release(storage[t].offset, g.max_bytes(t));
  }
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
  ArenaAllocator arena;
  mp.scratch_offset.assign(plan.groups.size(), -1);
  place_written(g, plan.groups, last_use, StorageKind::Arena, arena, mp.storage, [&](size_t gi) {
    // Scratch (a Global group's partial results) is live during its group only.
    const FusionGroup& group = plan.groups[gi];
    if (group.scratch_bytes > 0) {
      mp.scratch_offset[gi] = arena.allocate(group.scratch_bytes);
      arena.release(mp.scratch_offset[gi], group.scratch_bytes);
    }
  });
  for (size_t t = 0; t < g.tensors.size(); ++t)
    if (mp.storage[t].kind == StorageKind::Arena)
      mp.intermediate_bytes = checked_add(mp.intermediate_bytes,
                                          g.max_bytes(static_cast<TensorId>(t)), "intermediates");
  mp.arena_bytes = arena.peak();

  // A chain's unfused plan writes the values the chain keeps on chip: each gets the fallback
  // buffer from its group to the last of the chain's groups that reads it. (The chain's own
  // inputs and outputs already have storage.)
  for (const ChainFallback& fallback : plan.fallbacks) {
    ArenaAllocator buffer;
    place_written(g, fallback.groups, last_reads(g, fallback.groups), StorageKind::Fallback, buffer,
                  mp.storage, [](size_t) {});
    mp.fallback_bytes = std::max(mp.fallback_bytes, buffer.peak());
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
