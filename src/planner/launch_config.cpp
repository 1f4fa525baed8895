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

std::vector<MappingRegion> row_mapping_regions(DimBounds rows, DimBounds length,
                                               const DeviceParams& device) {
  // Where the rule may switch: the first row count and row length of each side of its
  // comparisons. Between two cuts every comparison comes out the same.
  auto cells = [](DimBounds range, std::vector<int64_t> cuts) {
    std::vector<DimBounds> out;
    int64_t lo = range.lo;
    for (int64_t cut : cuts)
      if (cut > lo && cut <= range.hi) {
        out.push_back({lo, cut - 1});
        lo = cut;
      }
    out.push_back({lo, range.hi});
    return out;
  };
  const std::vector<DimBounds> row_cells = cells(rows, {kWarpsPerSmWanted * device.sm_count});
  const std::vector<DimBounds> length_cells =
      cells(length, {kShortRow + 1, kBlockRowMinimum, kLongRow + 1});
  std::vector<MappingRegion> regions;
  for (DimBounds r : row_cells)
    for (DimBounds l : length_cells)
      regions.push_back({r, l, row_mapping(r.lo, l.lo, device)});
  // Merge two boxes of one mapping that share a whole side, until none do.
  auto joins = [](DimBounds a, DimBounds b) { return a.hi + 1 == b.lo || b.hi + 1 == a.lo; };
  auto same = [](DimBounds a, DimBounds b) { return a.lo == b.lo && a.hi == b.hi; };
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i < regions.size() && !merged; ++i)
      for (size_t j = i + 1; j < regions.size() && !merged; ++j) {
        MappingRegion& a = regions[i];
        const MappingRegion& b = regions[j];
        if (a.mapping != b.mapping) continue;
        if (same(a.rows, b.rows) && joins(a.length, b.length)) {
          a.length = {std::min(a.length.lo, b.length.lo), std::max(a.length.hi, b.length.hi)};
          merged = true;
        } else if (same(a.length, b.length) && joins(a.rows, b.rows)) {
          a.rows = {std::min(a.rows.lo, b.rows.lo), std::max(a.rows.hi, b.rows.hi)};
          merged = true;
        }
        if (merged) regions.erase(regions.begin() + static_cast<std::ptrdiff_t>(j));
      }
  }
  return regions;
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
