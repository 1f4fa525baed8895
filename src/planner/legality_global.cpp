// Global groups around a column reduction (kernel_fused_global.cpp prints them): a reduction
// over the leading axes that keeps the trailing ones (after size-1 axes are dropped: a
// LayerNorm over the channel axis of a [1, C, W] tensor is one too), first in the group, then
// pointwise consumers. Each consumer's result has the reduced layout (one value per column:
// evaluated per column once the columns are final) or the full layout of the reduction's input
// (evaluated per element). One cooperative launch, partial results through global scratch
// between grid-wide barriers.
#include <set>

#include "graph/reductions.h"
#include "planner/legality_internal.h"
#include "planner/reduction_mapping.h"

namespace stitch::legality {

namespace {

// The highest-rank shape among `shapes` (all of one layout): the iteration shape every one of
// them, and every operand broadcasting to one of them, can be indexed by.
Shape highest_rank(const std::vector<Shape>& shapes) {
  Shape best;
  for (const Shape& s : shapes)
    if (s.size() > best.size() || best.empty()) best = s;
  return best;
}

} // namespace

FusionDecision analyze_column(const FusionContext& ctx, GroupAnalysis& a) {
  const Graph& g = ctx.graph;
  int32_t reduction = -1;
  for (int32_t n : a.nodes) {
    NodeClass c = ctx.node_class[n];
    if (c == NodeClass::Pointwise) continue;
    if (c == NodeClass::RowOp)
      return FusionDecision::no(fmt::format("{} is a row op; the group's column reduction needs "
                                            "another thread mapping",
                                            ctx.describe(n)));
    if (c != NodeClass::ColumnReduction)
      return FusionDecision::no(fmt::format("{} {}; a column reduction's group holds only "
                                            "pointwise ops besides it",
                                            ctx.describe(n), class_sentence(c)));
    if (reduction >= 0)
      return FusionDecision::no(fmt::format("{} and {} are two column reductions in one group",
                                            ctx.describe(reduction), ctx.describe(n)));
    reduction = n;
  }
  if (reduction != a.nodes.front())
    return FusionDecision::no(fmt::format("{} has producers in the group; a Global group starts "
                                          "with its column reduction",
                                          ctx.describe(reduction)));
  const Node& reduce = g.nodes[reduction];
  const ReductionSpace space = reduction_space(g, reduce);
  ColumnSpec spec;
  spec.reduction = reduction;
  spec.full = g.tensor(reduce.inputs[0]).shape;
  spec.rows = space.dims[0];
  spec.columns = space.dims[1];
  const TensorId reduced = reduce.outputs[0];
  const Shape& reduced_shape = g.tensor(reduced).shape;
  a.iteration = spec.full;
  a.rows = spec.rows;
  a.row_length = spec.columns;
  for (TensorId t : reduce.inputs)
    if (t != kNoTensor && t != reduce.inputs[0] && contains(a.nodes, ctx.producer[t]))
      return FusionDecision::no(
          fmt::format("{} reads its axes from inside the group", ctx.describe(reduction)));

  // Each consumer: per column or per element, by the layout of its result.
  std::vector<Shape> column_shapes = {reduced_shape}, element_shapes = {spec.full};
  std::set<TensorId> column_values = {reduced};
  const int64_t elements = shape_elements(spec.full);
  for (int32_t n : a.nodes) {
    if (n == reduction) continue;
    const TensorId y = g.nodes[n].outputs[0];
    const Shape& r = g.tensor(y).shape;
    if (same_layout(r, reduced_shape)) {
      spec.column_nodes.push_back(n);
      column_shapes.push_back(r);
      column_values.insert(y);
    } else if (same_layout(r, spec.full)) {
      spec.element_nodes.push_back(n);
      element_shapes.push_back(r);
    } else {
      return FusionDecision::no(fmt::format("{}'s result {} is neither the reduced input {} nor "
                                            "the reduction's result {}",
                                            ctx.describe(n), shape_str(r), shape_str(spec.full),
                                            shape_str(reduced_shape)));
    }
    a.recomputed += elements - g.tensor(y).elements();
  }
  // Both iteration shapes get the rank of the highest-rank value, so that every value of the
  // group broadcasts to them (leading 1s change neither layout nor numpy broadcasting).
  size_t rank = 0;
  for (const auto* shapes : {&column_shapes, &element_shapes})
    for (const Shape& s : *shapes)
      rank = std::max(rank, s.size());
  spec.column_shape = padded_to(highest_rank(column_shapes), Shape(rank, 1));
  const Shape element_shape = padded_to(highest_rank(element_shapes), Shape(rank, 1));
  // Per-column nodes read only column values, literals and inputs of at most the column shape;
  // per-element nodes read anything that broadcasts to the full shape.
  for (int32_t n : spec.column_nodes)
    for (TensorId t : present_operands(g.nodes[n])) {
      if (column_values.count(t) || is_scalar_float_literal(g.tensor(t))) continue;
      if (contains(a.nodes, ctx.producer[t]) ||
          !broadcasts_to(g.tensor(t).shape, spec.column_shape))
        return FusionDecision::no(fmt::format("{} computes a value per column from '{}' {}, which "
                                              "is not one value per column",
                                              ctx.describe(n), g.tensor(t).name,
                                              shape_str(g.tensor(t).shape)));
    }
  for (int32_t n : spec.element_nodes)
    for (TensorId t : present_operands(g.nodes[n]))
      if (!broadcasts_to(g.tensor(t).shape, element_shape) && !is_scalar_float_literal(g.tensor(t)))
        return FusionDecision::no(fmt::format("{} reads '{}' {}, which does not broadcast to the "
                                              "reduced input {}",
                                              ctx.describe(n), g.tensor(t).name,
                                              shape_str(g.tensor(t).shape),
                                              shape_str(element_shape)));
  for (TensorId t : a.outputs) {
    if (column_values.count(t)) {
      spec.column_outputs.push_back(t);
      continue;
    }
    if (g.tensor(t).elements() != elements)
      return FusionDecision::no(fmt::format("the group writes '{}' {}, neither a column value nor "
                                            "of the reduced input's shape {}",
                                            g.tensor(t).name, shape_str(g.tensor(t).shape),
                                            shape_str(spec.full)));
    spec.element_outputs.push_back(t);
  }
  spec.full = element_shape; // the per-element phase's iteration shape (the same layout)

  const DType x_dtype = g.tensor(reduce.inputs[0]).dtype;
  spec.accumulator = accumulator_dtype(x_dtype);
  LaunchConfig& launch = a.group.launch;
  const int sms = cooperative_sms(ctx.device);
  const int64_t resident = int64_t{sms} * cooperative_blocks_per_sm(ctx.device, kBlock);
  launch.block = {kBlock, 1, 1};
  launch.grid = {std::clamp<int64_t>((elements + kBlock - 1) / kBlock, 1, resident), 1, 1};
  launch.cooperative = true;
  launch.min_blocks_per_sm = (launch.grid[0] + sms - 1) / sms;
  spec.blocks = launch.grid[0];
  // Each block's partial per column, then the finished column values: (blocks + 1) rows of
  // accumulators.
  a.group.scratch_bytes = (spec.blocks + 1) * spec.columns * dtype_size(spec.accumulator);
  if (a.group.scratch_bytes > ctx.device.max_global_scratch)
    return FusionDecision::no(fmt::format("the column reduction's partial results take {} MiB of "
                                          "scratch, more than the {} MiB allowed",
                                          a.group.scratch_bytes >> 20,
                                          ctx.device.max_global_scratch >> 20));
  a.registers = kBaseRegisters + kRegistersPerNode * static_cast<int64_t>(a.nodes.size());
  if (FusionDecision d = fits_registers(ctx, a); !d) return d;
  spec.io = kernel_interface(ctx, a.nodes, a.inputs, a.outputs);
  a.kind = GroupKind::Kernel;
  a.scheme = StitchScheme::Global;
  a.group.mapping = ThreadMapping::Flat;
  a.group.spec = std::move(spec);
  return FusionDecision::ok();
}

} // namespace stitch::legality
