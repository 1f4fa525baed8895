// Launch dimensions for the flat and row mappings.
#include "planner/launch_config.h"

#include <algorithm>

namespace stitch {

namespace {
constexpr int64_t kFlatBlock = 256;
constexpr int64_t kRowsPerWarpBlock = 8; // warps per block in the warp-per-row mapping
constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kShortRow = 16;         // rows this short: a thread per row
constexpr int64_t kLongRow = 1024;        // rows longer than this: a block per row
constexpr int64_t kBlockRowMinimum = 256; // a row this long can keep a block busy
constexpr int64_t kWarpsPerSmWanted = 8;  // fewer rows than this per SM: a block per row

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
} // namespace

LaunchConfig flat_launch(int64_t elements, int vector_width, const DeviceParams& device) {
  LaunchConfig c;
  c.vector_width = vector_width;
  int64_t threads = ceil_div(std::max<int64_t>(elements, 1), vector_width);
  int64_t max_blocks =
      int64_t{device.sm_count} * (device.max_threads_per_sm / kFlatBlock) * device.waves;
  c.block = {kFlatBlock, 1, 1};
  c.grid = {std::clamp<int64_t>(ceil_div(threads, kFlatBlock), 1, std::min(max_blocks, kMaxGridX)),
            1, 1};
  return c;
}

ThreadMapping row_mapping(int64_t rows, int64_t row_length, const DeviceParams& device) {
  if (row_length <= kShortRow) return ThreadMapping::Flat;
  const bool few_rows = rows < kWarpsPerSmWanted * device.sm_count;
  if (row_length > kLongRow || (row_length >= kBlockRowMinimum && few_rows))
    return ThreadMapping::BlockPerRow;
  return ThreadMapping::WarpPerRow;
}

int64_t threads_per_row(ThreadMapping mapping, int64_t block) {
  switch (mapping) {
  case ThreadMapping::Flat:
    return 1;
  case ThreadMapping::WarpPerRow:
    return 32;
  case ThreadMapping::BlockPerRow:
    return block;
  }
  return 1;
}

LaunchConfig row_launch(int64_t rows, int64_t row_length, ThreadMapping mapping,
                        const DeviceParams& device) {
  if (mapping == ThreadMapping::Flat) return flat_launch(rows, 1, device);
  LaunchConfig c;
  rows = std::max<int64_t>(rows, 1);
  if (mapping == ThreadMapping::WarpPerRow) {
    c.block = {32 * kRowsPerWarpBlock, 1, 1};
    c.grid = {std::min(ceil_div(rows, kRowsPerWarpBlock), kMaxGridX), 1, 1};
    return c;
  }
  // A block per row: enough threads for the row, a multiple of a warp, at most 1024.
  int64_t threads = std::clamp<int64_t>(ceil_div(row_length, 4), 32, device.max_threads_per_block);
  c.block = {ceil_div(threads, 32) * 32, 1, 1};
  c.grid = {std::min(rows, kMaxGridX), 1, 1};
  return c;
}

} // namespace stitch
