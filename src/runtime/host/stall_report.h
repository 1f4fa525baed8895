// The message for a launch in which no emulated thread can make progress: what the stuck
// threads wait for, where in the source, and which threads have exited, first summed over the
// resident blocks and then for the first few blocks in detail. For example:
//
//   deadlock, no thread can make progress: 32 threads wait at __syncthreads (k.cu:12),
//   32 threads exited. block (0,0,0): threads 0-31 wait at __syncthreads (k.cu:12);
//   threads 32-63 exited
#pragma once

#include "thread_state.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace stitch::host {

namespace detail {

inline std::string hex_mask(unsigned mask) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", mask);
  return text;
}

inline std::string index_text(const uint3& index) {
  return "(" + std::to_string(index.x) + "," + std::to_string(index.y) + "," +
         std::to_string(index.z) + ")";
}

// What a live or exited thread is doing, in words; threads with equal text are grouped.
inline std::string wait_text(const EmulatedThread& thread) {
  switch (thread.state) {
  case WaitState::Ready:
    return "are runnable";
  case WaitState::Exited:
    return "exited";
  case WaitState::BlockBarrier:
    return "wait at __syncthreads (" + thread.wait_site.text() + ")";
  case WaitState::GridBarrier:
    return "wait at stitch_grid_sync (" + thread.wait_site.text() + ")";
  case WaitState::ClusterBarrier:
    return "wait at stitch::cluster::sync (" + thread.wait_site.text() + ")";
  case WaitState::WarpCollective:
    return std::string("wait in ") + collective_name(thread.wait_collective) + " with mask " +
           hex_mask(thread.wait_mask) + " (" + thread.wait_site.text() + ")";
  }
  return "are in an unknown state";
}

// "0-31, 40, 42-45" from ascending ids, cut short after a few runs.
inline std::string id_ranges(const std::vector<unsigned>& ids) {
  constexpr int kMaxRuns = 6;
  std::string text;
  int runs = 0;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1)
      ++j;
    if (runs == kMaxRuns) return text + ", ...";
    if (!text.empty()) text += ", ";
    text += std::to_string(ids[i]);
    if (j > i) text += "-" + std::to_string(ids[j]);
    ++runs;
    i = j + 1;
  }
  return text;
}

struct WaitGroup {
  std::string what;
  std::vector<unsigned> ids;
};

inline void add_to_group(std::vector<WaitGroup>& groups, std::string what, unsigned id) {
  for (WaitGroup& group : groups)
    if (group.what == what) {
      group.ids.push_back(id);
      return;
    }
  groups.push_back(WaitGroup{std::move(what), {id}});
}

} // namespace detail

inline std::string describe_stall(const std::vector<BlockState>& blocks,
                                  const std::vector<EmulatedThread>& threads,
                                  unsigned threads_per_block) {
  constexpr unsigned kBlocksInDetail = 3;
  std::vector<detail::WaitGroup> totals;
  for (const EmulatedThread& thread : threads)
    detail::add_to_group(totals, detail::wait_text(thread), 0);

  std::string text = "deadlock, no thread can make progress:";
  for (std::size_t i = 0; i < totals.size(); ++i)
    text += (i ? ", " : " ") + std::to_string(totals[i].ids.size()) + " threads " + totals[i].what;

  unsigned described = 0, stalled_blocks = 0;
  for (const BlockState& block : blocks) {
    if (block.exited_threads == threads_per_block) continue;
    ++stalled_blocks;
    if (described == kBlocksInDetail) continue;
    ++described;
    std::vector<detail::WaitGroup> groups;
    for (unsigned id = 0; id < threads_per_block; ++id)
      detail::add_to_group(groups, detail::wait_text(threads[block.first_thread + id]), id);
    text += ". block " + detail::index_text(block.block_idx) + ":";
    for (std::size_t i = 0; i < groups.size(); ++i)
      text += std::string(i ? ";" : "") + " threads " + detail::id_ranges(groups[i].ids) + " " +
              groups[i].what;
  }
  if (stalled_blocks > described)
    text += ". (" + std::to_string(stalled_blocks - described) + " more blocks stalled)";
  return text;
}

} // namespace stitch::host
