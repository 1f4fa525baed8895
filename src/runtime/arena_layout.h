// arena_layout.h: how the intermediates of one run share an arena. stitchc lays the arena out
// at compile time (src/planner/memory_plan.cpp, at the symbols' maxima); the runtime lays it out
// again for a context that serves smaller maxima (stitch_context_create_for, a library with
// symbolic dims). Both replay the same steps through the same allocator, so that a layout for
// the maxima is the compiler's.
//
// The arena is described as slots (an intermediate tensor, or a group's scratch) and steps in
// the plan's order: a slot's index allocates it, ~index (negative) releases it. Allocation is
// best fit over a free list of released ranges, coalescing neighbours, growing the arena at its
// end where nothing fits; every slot takes a multiple of 256 bytes (at least 256).
//
// Header-only and free of stitchc's headers: the runtime that is linked into every model library
// includes it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>

namespace stitch::arena {

constexpr uint64_t kAlignment = 256;

// The bytes a slot of `bytes` takes: rounded up to the alignment, at least one unit. The
// callers' sizes are bounded by the compiler's checked maxima, far from overflowing.
inline uint64_t slot_size(uint64_t bytes) {
  return (bytes == 0 ? 1 : (bytes + kAlignment - 1) / kAlignment) * kAlignment;
}

// A free list of arena ranges with best-fit allocation and coalescing.
class BestFit {
public:
  uint64_t allocate(uint64_t bytes) {
    bytes = slot_size(bytes);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= bytes && (best == free_.end() || it->second < best->second)) best = it;
    if (best == free_.end()) { // grow at the end (absorbing a free range that ends there)
      uint64_t start = end_;
      if (!free_.empty() &&
          std::prev(free_.end())->first + std::prev(free_.end())->second == end_) {
        start = std::prev(free_.end())->first;
        free_.erase(std::prev(free_.end()));
      }
      end_ = start + bytes;
      return start;
    }
    const uint64_t start = best->first, size = best->second;
    free_.erase(best);
    if (size > bytes) free_[start + bytes] = size - bytes;
    return start;
  }

  void release(uint64_t start, uint64_t bytes) {
    bytes = slot_size(bytes);
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

  // The arena's size so far: the end of the highest range ever allocated.
  uint64_t peak() const { return end_; }

private:
  std::map<uint64_t, uint64_t> free_; // start -> size
  uint64_t end_ = 0;
};

// Replays `steps` over slots of `bytes` (num_slots of them), writing each slot's offset, and
// returns the arena's size. False where a step names no slot, or allocates or releases a slot
// out of turn (the caller's tables are then corrupt).
inline bool lay_out(const int32_t* steps, size_t num_steps, const uint64_t* bytes, size_t num_slots,
                    int64_t* offsets, uint64_t* arena_bytes) {
  BestFit arena;
  std::map<size_t, bool> live; // slot -> allocated and not yet released
  for (size_t i = 0; i < num_steps; ++i) {
    const bool release = steps[i] < 0;
    const auto slot = static_cast<size_t>(release ? ~steps[i] : steps[i]);
    if (slot >= num_slots) return false;
    auto state = live.find(slot);
    if (!release) {
      if (state != live.end()) return false; // allocated twice
      offsets[slot] = static_cast<int64_t>(arena.allocate(bytes[slot]));
      live[slot] = true;
    } else {
      if (state == live.end() || !state->second) return false; // never allocated, or released
      arena.release(static_cast<uint64_t>(offsets[slot]), bytes[slot]);
      state->second = false;
    }
  }
  if (live.size() != num_slots) return false; // a slot the steps never place
  *arena_bytes = arena.peak();
  return true;
}

} // namespace stitch::arena
