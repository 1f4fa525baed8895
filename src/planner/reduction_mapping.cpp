// reduction_space and plan_reduction_launch: the iteration space of a Reduction-category node
// and the mapping the planner picks for it (see reduction_mapping.h).
#include "planner/reduction_mapping.h"

#include <algorithm>

#include "graph/error.h"
#include "graph/infer_context.h"
#include "graph/op_params.h"

namespace stitch {

namespace {

constexpr int64_t kScanChunk = 32; // CumSum rows at least this long: a warp per row

// Axes [from, rank) reduced.
std::vector<bool> trailing_axes(int64_t rank, int64_t from) {
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t d = from; d < rank; ++d)
    reduced[d] = true;
  return reduced;
}

std::vector<bool> one_axis(int64_t rank, int64_t axis) {
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  reduced[axis] = true;
  return reduced;
}

// Drops size-1 axes and merges neighbours that are both reduced or both kept.
ReductionSpace make_space(const Shape& shape, const std::vector<bool>& reduced) {
  ReductionSpace s;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!s.dims.empty() && s.reduced.back() == reduced[d]) {
      s.dims.back() *= shape[d];
      continue;
    }
    s.dims.push_back(shape[d]);
    s.reduced.push_back(reduced[d]);
  }
  int reduced_dims = 0;
  for (size_t d = 0; d < s.dims.size(); ++d) {
    if (s.reduced[d]) {
      s.length *= s.dims[d];
      ++reduced_dims;
    } else {
      s.lines *= s.dims[d];
    }
  }
  s.inner = 1;
  if (reduced_dims > 1) {
    s.inner = 0;
  } else if (reduced_dims == 1) {
    size_t r = std::find(s.reduced.begin(), s.reduced.end(), true) - s.reduced.begin();
    for (size_t d = r + 1; d < s.dims.size(); ++d)
      s.inner *= s.dims[d];
  }
  return s;
}

} // namespace

std::vector<bool> reduced_axes(const Graph& graph, const Node& node) {
  NodeContext ctx(graph, node);
  const int64_t rank = ctx.rank(0);
  switch (node.op) {
  case OpKind::ReduceSum:
  case OpKind::ReduceMean:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
  case OpKind::ReduceProd:
  case OpKind::ReduceL1:
  case OpKind::ReduceL2:
  case OpKind::ReduceSumSquare:
  case OpKind::ReduceLogSum:
  case OpKind::ReduceLogSumExp:
    return read_reduce_params(ctx).reduced;
  case OpKind::ArgMax:
  case OpKind::ArgMin:
    return one_axis(rank, ctx.normalize_axis(ctx.attr_int("axis", 0), rank));
  case OpKind::CumSum:
    return one_axis(rank, ctx.normalize_axis(ctx.const_ints(1, "axis")[0], rank));
  case OpKind::GlobalAveragePool:
  case OpKind::GlobalMaxPool:
    return trailing_axes(rank, 2);
  default:
    internal_fail("reduced_axes: {} is not a reduction", op_name(node.op));
  }
}

ReductionSpace reduction_space(const Graph& graph, const Node& node) {
  return make_space(graph.tensor(node.inputs[0]).shape, reduced_axes(graph, node));
}

void plan_reduction_launch(const Graph& graph, const Node& node, const DeviceParams& device,
                           FusionGroup& group) {
  const ReductionSpace space = reduction_space(graph, node);
  auto flat = [&] {
    group.mapping = ThreadMapping::Flat;
    group.launch = flat_launch(space.lines, 1, device);
  };
  if (space.lines == 0 || !space.rows()) return flat();
  if (node.op == OpKind::CumSum) {
    if (space.length < kScanChunk) return flat();
    group.mapping = ThreadMapping::WarpPerRow;
    group.launch = row_launch(space.lines, space.length, group.mapping, device);
    return;
  }
  group.mapping = row_mapping(space.lines, space.length, device);
  group.launch = row_launch(space.lines, space.length, group.mapping, device);
}

void add_mapping_variants(const Graph& graph, const DimExpr& rows, const DimExpr& length,
                          int64_t planned_length, const DeviceParams& device, FusionGroup& group,
                          const MakeVariant& make) {
  const SymbolRanges ranges = graph.symbol_ranges();
  DimBounds r = rows.bounds(ranges), l = length.bounds(ranges);
  r.lo = std::max<int64_t>(1, r.lo);
  l.lo = std::max<int64_t>(1, l.lo);
  if (r.hi < r.lo || l.hi < l.lo) return;
  const std::vector<MappingRegion> regions = row_mapping_regions(r, l, device);
  std::vector<ThreadMapping> others;
  for (const MappingRegion& region : regions)
    if (region.mapping != group.mapping &&
        std::find(others.begin(), others.end(), region.mapping) == others.end())
      others.push_back(region.mapping);
  // A bound where the box is narrower than the range: rows or length at least / at most.
  auto bound = [](const char* name, const DimExpr& value, DimBounds box, DimBounds range,
                  std::vector<ExtentBound>& out) {
    if (box.lo <= range.lo && box.hi >= range.hi) return;
    ExtentBound b{name, value, std::nullopt, std::nullopt};
    if (box.lo > range.lo) b.at_least = box.lo;
    if (box.hi < range.hi) b.at_most = box.hi;
    out.push_back(std::move(b));
  };
  for (ThreadMapping mapping : others) {
    MappingVariant variant;
    variant.mapping = mapping;
    DimBounds lengths{l.hi, l.lo};
    for (const MappingRegion& region : regions) {
      if (region.mapping != mapping) continue;
      lengths = {std::min(lengths.lo, region.length.lo), std::max(lengths.hi, region.length.hi)};
      std::vector<ExtentBound> when;
      bound("rows", rows, region.rows, r, when);
      bound("length", length, region.length, l, when);
      variant.when.push_back(std::move(when));
    }
    if (!make(mapping, std::clamp(planned_length, lengths.lo, lengths.hi), lengths.hi, variant))
      continue;
    group.variants.push_back(std::move(variant));
  }
}

} // namespace stitch
