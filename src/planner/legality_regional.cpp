// Regional groups (kernel_fused_regional.cpp prints them): row ops (reductions of the reduction
// table over the trailing contiguous axes; softmax and the normalizations arrive lowered to
// these) with their pointwise producers and consumers, over one row space of rows x row_length.
//
// The analysis follows the values. An input constant along the row is a row value, loaded once
// per row; any other input varies along the row and is read in the passes that need it. A
// pointwise node of row values computes a row value once per row; a pointwise node whose result
// has the per-row layout ([2,16] or [2,16,1] in the row space [2,16,64]: an attention mask's
// `(1 - mask) * -10000`) too, reading its inputs at their broadcast index into that result. Any
// other pointwise node computes an element value, in each pass that needs it. A row op
// accumulates its input (an element value, or a row value counted once per element) in the pass
// in which that input exists, and its result exists after that pass. So the kernel makes as many
// passes as the longest chain of row ops needs; a full-row input read by several passes is
// loaded once and kept (in registers, or in shared memory with a block per row), or else read
// again (which the cost model charges).
//
// A Gather whose result's row is one whole row of its data (an embedding lookup: [V, H] table,
// ids per row) joins as a row load: the index is read once per row and the row's elements where
// its consumers read them, so the looked-up rows feed the Add and LayerNorm after them without
// being written out first.
#include <map>
#include <optional>
#include <set>

#include "graph/infer_context.h"
#include "graph/reductions.h"
#include "planner/launch_config.h"
#include "planner/legality_internal.h"
#include "planner/reduction_mapping.h"

namespace stitch::legality {

namespace {

// Elements of its row one thread may keep in registers, per cached input, with a thread, a warp
// or a block per row; all cached inputs together may take twice that.
int64_t cached_register_limit(ThreadMapping mapping) {
  switch (mapping) {
  case ThreadMapping::Flat:
    return 16;
  case ThreadMapping::WarpPerRow:
    return 32;
  case ThreadMapping::BlockPerRow:
    return 8;
  }
  return 8;
}

} // namespace

RowCachePlacement place_row_cache(const Graph& g, RegionalSpec& spec,
                                  std::vector<RegionalSpec::CachedRow> cached, int64_t longest,
                                  const DeviceParams& device) {
  const int64_t threads = threads_per_row(spec.mapping, spec.block);
  spec.elements_per_thread = std::max<int64_t>(1, (longest + threads - 1) / threads);
  spec.cached.clear();
  spec.uncached.clear();
  spec.cache = RowCache::None;
  int64_t shared = 0;
  for (RegionalSpec::CachedRow& row : cached) {
    row.shared_offset = shared;
    shared += (longest * dtype_size(g.tensor(row.tensor).dtype) + 15) / 16 * 16;
  }
  if (cached.empty()) return {};
  RowCachePlacement placed;
  const int64_t limit = cached_register_limit(spec.mapping);
  const int64_t count = static_cast<int64_t>(cached.size());
  if (spec.elements_per_thread <= limit && spec.elements_per_thread * count <= 2 * limit) {
    spec.cache = RowCache::Registers;
    placed.registers = spec.elements_per_thread * count;
  } else if (spec.mapping == ThreadMapping::BlockPerRow && shared <= device.max_shared_per_block) {
    spec.cache = RowCache::Shared;
    placed.shared_bytes = shared;
  } else {
    spec.uncached = std::move(cached);
    return {};
  }
  spec.cached = std::move(cached);
  return placed;
}

namespace {

// The shape the row space is indexed by: the highest-rank tensor the nodes read or write that
// holds rows x row_length elements (the first such, in node order, inputs before outputs; a
// Gather's table and indices are not read in the row space's layout).
Shape row_space_shape(const Graph& graph, const std::vector<int32_t>& nodes, int64_t rows,
                      int64_t row_length) {
  const int64_t elements = rows * row_length;
  Shape space;
  bool found = false;
  for (int32_t n : nodes)
    for (const auto* list : {&graph.nodes[n].inputs, &graph.nodes[n].outputs})
      for (TensorId t : *list)
        if (t != kNoTensor &&
            (list != &graph.nodes[n].inputs || graph.nodes[n].op != OpKind::Gather) &&
            graph.tensor(t).elements() == elements &&
            (!found || graph.tensor(t).shape.size() > space.size())) {
          space = graph.tensor(t).shape;
          found = true;
        }
  return space;
}

class RegionalAnalysis {
public:
  RegionalAnalysis(const FusionContext& ctx, const GroupAnalysis& a, RegionalSpec& spec)
      : ctx_(ctx), g_(ctx.graph), a_(a), spec_(spec) {}

  FusionDecision run(const AnalysisOverrides& overrides);
  int64_t cached_registers = 0; // per thread, for the register estimate
  int64_t shared_bytes = 0;     // the cached rows in shared memory

private:
  FusionDecision row_space();
  FusionDecision values();
  FusionDecision outputs();
  void passes_and_cache(const AnalysisOverrides& overrides);

  FusionDecision input(TensorId t, int32_t reader);
  FusionDecision per_row_node(int32_t n);
  FusionDecision pointwise_node(int32_t n);
  FusionDecision gather_node(int32_t n);
  FusionDecision row_op(int32_t n);

  bool produced(TensorId t) const { return contains(a_.nodes, ctx_.producer[t]); }
  bool literal(TensorId t) const { return !produced(t) && is_scalar_float_literal(g_.tensor(t)); }
  bool row_value(TensorId t) const { return row_values_.count(t) > 0; }
  int stage_of(TensorId t) const {
    auto it = stage_.find(t);
    return it == stage_.end() ? 0 : it->second;
  }
  bool broadcasts_to_space(const Shape& s) const { return broadcasts_to(s, spec_.space); }
  bool varies_along_row(const Shape& s) const {
    const Shape p = padded_to(s, spec_.space);
    for (size_t d = spec_.row_axes_from; d < p.size(); ++d)
      if (p[d] != 1) return true;
    return false;
  }
  // The layout of the row space's leading axes (the row's axes dropped or kept as 1), one value
  // per row in row order, for a row space whose rows hold more than one element.
  bool per_row_layout(const Shape& s) const {
    const Shape rows =
        squeezed(Shape(spec_.space.begin(), spec_.space.begin() + spec_.row_axes_from));
    return squeezed(s) == rows && rows != squeezed(spec_.space);
  }
  std::string what(int32_t n) const { return ctx_.describe(n); }

  const FusionContext& ctx_;
  const Graph& g_;
  const GroupAnalysis& a_;
  RegionalSpec& spec_;
  std::map<TensorId, int> stage_; // every value seen: the pass from which it exists
  std::set<TensorId> row_values_; // values constant along the row
  std::vector<int32_t> element_nodes_;
  std::set<TensorId> gathered_; // the Gathers' results
};

FusionDecision RegionalAnalysis::row_space() {
  int32_t first = -1;
  for (int32_t n : a_.nodes) {
    if (ctx_.node_class[n] == NodeClass::ColumnReduction)
      return FusionDecision::no(fmt::format("{} is a column reduction; the group's row ops need "
                                            "another thread mapping",
                                            what(n)));
    if (ctx_.node_class[n] == NodeClass::Pointwise || ctx_.node_class[n] == NodeClass::Gather)
      continue;
    if (ctx_.node_class[n] != NodeClass::RowOp)
      return FusionDecision::no(fmt::format("{} {}; a Regional group holds row ops and pointwise "
                                            "ops",
                                            what(n), class_sentence(ctx_.node_class[n])));
    const ReductionSpace space = reduction_space(g_, g_.nodes[n]);
    const Tensor& x = g_.tensor(g_.nodes[n].inputs[0]);
    if (first < 0) {
      first = n;
      spec_.rows = space.lines;
      spec_.row_length = space.length;
      continue;
    }
    if (space.lines != spec_.rows || space.length != spec_.row_length ||
        x.elements() != spec_.rows * spec_.row_length)
      return FusionDecision::no(fmt::format("{} and {} reduce different rows ({} rows of {}, {} "
                                            "rows of {} in {})",
                                            what(first), what(n), spec_.rows, spec_.row_length,
                                            space.lines, space.length, shape_str(x.shape)));
  }
  if (first < 0) return FusionDecision::no("the group has no row op");
  spec_.space = row_space_shape(g_, a_.nodes, spec_.rows, spec_.row_length);
  // The row: the most trailing axes whose product is row_length (size-1 axes before them
  // included).
  const Shape& space = spec_.space;
  size_t split = space.size();
  int64_t product = 1;
  for (size_t d = space.size(); d-- > 0;) {
    product *= space[d];
    if (product == spec_.row_length) split = d;
    if (product > spec_.row_length) break;
  }
  if (spec_.row_length != 1 && split == space.size())
    return FusionDecision::no(fmt::format("{}'s rows of {} are not trailing axes of {}",
                                          what(first), spec_.row_length, shape_str(space)));
  spec_.row_axes_from = split;
  return FusionDecision::ok();
}

// An input (not produced here, not a literal) read by node `reader`: it must broadcast to the
// row space; constant along the row, it is a row value loaded once per row.
FusionDecision RegionalAnalysis::input(TensorId t, int32_t reader) {
  if (stage_.count(t)) return FusionDecision::ok();
  const Tensor& x = g_.tensor(t);
  if (!broadcasts_to_space(x.shape))
    return FusionDecision::no(fmt::format("{} reads '{}' {}, which does not broadcast to the row "
                                          "space {}",
                                          what(reader), x.name, shape_str(x.shape),
                                          shape_str(spec_.space)));
  stage_[t] = 0;
  if (!varies_along_row(x.shape)) {
    row_values_.insert(t);
    spec_.row_inputs.push_back(t);
  }
  return FusionDecision::ok();
}

// A pointwise node with a per-row result: evaluated once per row. Its operands are row values
// of the group (this row's value), literals, or inputs read at their broadcast index into the
// node's result.
FusionDecision RegionalAnalysis::per_row_node(int32_t n) {
  const Node& node = g_.nodes[n];
  const TensorId y = node.outputs[0];
  const Shape& result = g_.tensor(y).shape;
  RegionalSpec::Member member{n, RegionalSpec::Role::Row, 0, {}};
  for (TensorId t : value_operands(node)) {
    member.loads.push_back(-1);
    if (t == kNoTensor || literal(t)) continue;
    const Tensor& x = g_.tensor(t);
    if (produced(t)) {
      if (!row_value(t) || (!per_row_layout(x.shape) && x.elements() != 1))
        return FusionDecision::no(fmt::format("{} computes a per-row value {} from '{}' {}, which "
                                              "is not one value per row",
                                              what(n), shape_str(result), x.name,
                                              shape_str(x.shape)));
      member.stage = std::max(member.stage, stage_of(t));
      continue;
    }
    const std::optional<Shape> broadcast = broadcast_shapes(x.shape, result);
    if (!broadcast || *broadcast != result)
      return FusionDecision::no(fmt::format("{} reads '{}' {}, which does not broadcast to its "
                                            "per-row result {}",
                                            what(n), x.name, shape_str(x.shape),
                                            shape_str(result)));
    int load = -1;
    for (size_t k = 0; k < spec_.per_row_loads.size(); ++k)
      if (spec_.per_row_loads[k].tensor == t && spec_.per_row_loads[k].against == result)
        load = static_cast<int>(k);
    if (load < 0) {
      load = static_cast<int>(spec_.per_row_loads.size());
      spec_.per_row_loads.push_back({t, result});
    }
    member.loads.back() = load;
  }
  stage_[y] = member.stage;
  row_values_.insert(y);
  spec_.members.push_back(std::move(member));
  return FusionDecision::ok();
}

FusionDecision RegionalAnalysis::pointwise_node(int32_t n) {
  const Node& node = g_.nodes[n];
  const TensorId y = node.outputs[0];
  int stage = 0;
  bool row = true;
  for (TensorId t : present_operands(node)) {
    if (literal(t)) continue;
    if (!produced(t))
      if (FusionDecision d = input(t, n); !d) return d;
    stage = std::max(stage, stage_of(t));
    if (!row_value(t)) row = false;
  }
  for (TensorId t : present_operands(node)) {
    if (!row_value(t) || literal(t)) continue;
    const Tensor& x = g_.tensor(t);
    if (!broadcasts_to_space(x.shape))
      return FusionDecision::no(fmt::format("{} reads the per-row value '{}' {}, which does not "
                                            "broadcast to the row space {}",
                                            what(n), x.name, shape_str(x.shape),
                                            shape_str(spec_.space)));
    if (!row && varies_along_row(x.shape))
      return FusionDecision::no(fmt::format("{} broadcasts the per-row value '{}' {} across rows "
                                            "of {}, not along them",
                                            what(n), x.name, shape_str(x.shape),
                                            shape_str(spec_.space)));
  }
  stage_[y] = stage;
  if (row) {
    row_values_.insert(y);
    spec_.members.push_back({n, RegionalSpec::Role::Row, stage, {}});
    spec_.members.back().loads.assign(value_operands(node).size(), -1);
    return FusionDecision::ok();
  }
  if (!broadcasts_to_space(g_.tensor(y).shape))
    return FusionDecision::no(fmt::format("{}'s result {} does not broadcast to the row space {}",
                                          what(n), shape_str(g_.tensor(y).shape),
                                          shape_str(spec_.space)));
  element_nodes_.push_back(n);
  spec_.members.push_back({n, RegionalSpec::Role::Element, stage, {}});
  return FusionDecision::ok();
}

// A Gather: its result, broadcast to the row space, must hold each row of the space whole
// (nothing broadcast along the row), and each of its rows must be one contiguous row of the
// data, which the group does not compute. The indices are an input, or a row value of the
// group with one value per row (then the gathered axis is the data's first, and row `line`
// takes index `line`).
FusionDecision RegionalAnalysis::gather_node(int32_t n) {
  const Node& node = g_.nodes[n];
  const TensorId data = node.inputs[0], indices = node.inputs[1], y = node.outputs[0];
  const Tensor& d = g_.tensor(data);
  const Tensor& idx = g_.tensor(indices);
  const Tensor& out = g_.tensor(y);
  if (produced(data) || literal(data))
    return FusionDecision::no(fmt::format("{} looks up rows of '{}', which is {}; a group looks "
                                          "up rows of a tensor in memory only",
                                          what(n), d.name,
                                          produced(data) ? "computed in the group" : "a literal"));
  NodeContext nc(g_, node);
  const auto axis = static_cast<size_t>(nc.normalize_axis(nc.attr_int("axis", 0), nc.rank(0)));
  int64_t inner = 1, outer = 1;
  for (size_t k = axis + 1; k < d.shape.size(); ++k)
    inner *= d.shape[k];
  for (size_t k = 0; k < axis; ++k)
    outer *= d.shape[k];
  if (inner != spec_.row_length)
    return FusionDecision::no(fmt::format("{} picks rows of {} elements of '{}' {}; the group's "
                                          "rows hold {}",
                                          what(n), inner, d.name, shape_str(d.shape),
                                          spec_.row_length));
  if (!broadcasts_to_space(out.shape))
    return FusionDecision::no(fmt::format("{}'s result {} does not broadcast to the row space {}",
                                          what(n), shape_str(out.shape), shape_str(spec_.space)));
  const Shape p = padded_to(out.shape, spec_.space);
  int64_t along = 1;
  for (size_t k = spec_.row_axes_from; k < p.size(); ++k)
    along *= p[k];
  if (along != spec_.row_length)
    return FusionDecision::no(fmt::format("{}'s result {} is broadcast along the rows of {}",
                                          what(n), shape_str(out.shape), shape_str(spec_.space)));
  RegionalSpec::GatherRow gather;
  gather.node = n;
  gather.data = data;
  gather.indices = indices;
  gather.out_rows = Shape(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(spec_.row_axes_from));
  gather.dim = d.shape[axis];
  gather.count = idx.elements();
  int stage = 0;
  if (produced(indices)) {
    if (!row_value(indices) || !per_row_layout(idx.shape) || outer != 1)
      return FusionDecision::no(fmt::format("{} looks up rows at '{}' {}, computed in the group "
                                            "but not one index per row",
                                            what(n), idx.name, shape_str(idx.shape)));
    gather.indices_in_group = true;
    stage = stage_of(indices);
  }
  stage_[y] = stage;
  gathered_.insert(y);
  spec_.gathers.push_back(std::move(gather));
  spec_.members.push_back({n, RegionalSpec::Role::Gather, stage, {}});
  return FusionDecision::ok();
}

FusionDecision RegionalAnalysis::row_op(int32_t n) {
  const Node& node = g_.nodes[n];
  for (size_t i = 1; i < node.inputs.size(); ++i)
    if (node.inputs[i] != kNoTensor && produced(node.inputs[i]))
      return FusionDecision::no(fmt::format("{} reads operand {} from inside the group; only its "
                                            "row may come from there",
                                            what(n), i));
  const TensorId x = node.inputs[0];
  if (!produced(x))
    if (FusionDecision d = input(x, n); !d) return d;
  const int pass = stage_of(x);
  const ReductionRule* rule = reduction_rule(node.op);
  const TensorId y = node.outputs[0];
  stage_[y] = pass + rule->passes();
  row_values_.insert(y);
  spec_.members.push_back({n, RegionalSpec::Role::Reduce, pass, {}});
  return FusionDecision::ok();
}

FusionDecision RegionalAnalysis::values() {
  for (int32_t n : a_.nodes) {
    const Node& node = g_.nodes[n];
    FusionDecision d = ctx_.node_class[n] == NodeClass::RowOp             ? row_op(n)
                       : ctx_.node_class[n] == NodeClass::Gather          ? gather_node(n)
                       : per_row_layout(g_.tensor(node.outputs[0]).shape) ? per_row_node(n)
                                                                          : pointwise_node(n);
    if (!d) return d;
  }
  return FusionDecision::ok();
}

// Full-row outputs are written in the last pass; per-row ones once per row.
FusionDecision RegionalAnalysis::outputs() {
  const int64_t full = spec_.rows * spec_.row_length;
  int output_stage = -1;
  for (TensorId t : a_.outputs) {
    const Tensor& tensor = g_.tensor(t);
    const bool full_row = tensor.elements() == full && broadcasts_to_space(tensor.shape);
    if (row_value(t) && tensor.elements() == spec_.rows && (!full_row || spec_.row_length == 1)) {
      spec_.row_outputs.push_back(t);
    } else if (full_row) {
      spec_.element_outputs.push_back(t);
      output_stage = std::max(output_stage, stage_of(t));
    } else {
      return FusionDecision::no(fmt::format("the group writes '{}' {}, neither full rows of {} "
                                            "nor one value per row",
                                            tensor.name, shape_str(tensor.shape),
                                            shape_str(spec_.space)));
    }
  }
  spec_.passes = output_stage + 1;
  for (const RegionalSpec::Member& m : spec_.members)
    if (m.role == RegionalSpec::Role::Reduce)
      spec_.passes =
          std::max(spec_.passes, m.stage + reduction_rule(g_.nodes[m.node].op)->passes());
  spec_.output_pass = spec_.element_outputs.empty() ? -1 : spec_.passes - 1;
  return FusionDecision::ok();
}

// Which full-row inputs each pass reads (through the element nodes it evaluates), which of them
// are kept between passes, and where.
void RegionalAnalysis::passes_and_cache(const AnalysisOverrides& overrides) {
  const Graph& g = g_;
  std::map<TensorId, int32_t> element_producer;
  for (int32_t n : element_nodes_)
    element_producer[g.nodes[n].outputs[0]] = n;
  std::map<TensorId, std::set<int>> reads; // full-row inputs -> the passes reading them
  const int64_t full = spec_.rows * spec_.row_length;
  for (int p = 0; p < spec_.passes; ++p) {
    std::vector<TensorId> roots;
    for (const RegionalSpec::Member& m : spec_.members)
      if (m.role == RegionalSpec::Role::Reduce && p >= m.stage &&
          p < m.stage + reduction_rule(g.nodes[m.node].op)->passes())
        roots.push_back(g.nodes[m.node].inputs[0]);
    if (p == spec_.output_pass)
      roots.insert(roots.end(), spec_.element_outputs.begin(), spec_.element_outputs.end());
    std::set<TensorId> seen;
    while (!roots.empty()) {
      const TensorId t = roots.back();
      roots.pop_back();
      if (!seen.insert(t).second || literal(t) || row_value(t)) continue;
      auto producer = element_producer.find(t);
      if (producer != element_producer.end()) {
        for (TensorId operand : present_operands(g.nodes[producer->second]))
          roots.push_back(operand);
        continue;
      }
      if ((!produced(t) || gathered_.count(t)) && g.tensor(t).elements() == full)
        reads[t].insert(p);
    }
  }

  spec_.mapping =
      overrides.row_mapping.value_or(row_mapping(spec_.rows, spec_.row_length, ctx_.device));
  const LaunchConfig launch = row_launch(spec_.rows, spec_.row_length, spec_.mapping, ctx_.device);
  spec_.block = launch.block[0];

  std::vector<RegionalSpec::CachedRow> cached;
  for (const auto& [t, passes] : reads)
    if (passes.size() >= 2) cached.push_back({t, *passes.begin(), 0});
  const RowCachePlacement placed =
      place_row_cache(g, spec_, std::move(cached), spec_.row_length, ctx_.device);
  cached_registers = placed.registers;
  shared_bytes = placed.shared_bytes;
  spec_.reread_bytes = 0;
  if (spec_.cache == RowCache::None)
    // Read again in every later pass: the cost model charges those reads.
    for (const auto& [t, passes] : reads)
      if (passes.size() >= 2)
        spec_.reread_bytes += static_cast<int64_t>(passes.size() - 1) * g.tensor(t).bytes();
}

FusionDecision RegionalAnalysis::run(const AnalysisOverrides& overrides) {
  if (FusionDecision d = row_space(); !d) return d;
  if (FusionDecision d = values(); !d) return d;
  if (FusionDecision d = outputs(); !d) return d;
  passes_and_cache(overrides);
  spec_.io = kernel_interface(ctx_, a_.nodes, a_.inputs, a_.outputs);
  return FusionDecision::ok();
}

} // namespace

FusionDecision regional_spec(const FusionContext& ctx, GroupAnalysis& a,
                             const AnalysisOverrides& overrides, RegionalSpec& spec) {
  spec = RegionalSpec{};
  RegionalAnalysis analysis(ctx, a, spec);
  if (FusionDecision d = analysis.run(overrides); !d) return d;
  a.rows = spec.rows;
  a.row_length = spec.row_length;
  a.iteration = spec.space;
  a.cached_rows = static_cast<int64_t>(spec.cached.size());
  a.shared_bytes = analysis.shared_bytes;
  a.registers = kBaseRegisters + kRegistersPerNode * static_cast<int64_t>(a.nodes.size()) +
                analysis.cached_registers;
  if (FusionDecision d = fits_registers(ctx, a); !d) return d;
  a.group.mapping = spec.mapping;
  a.group.launch = row_launch(spec.rows, spec.row_length, spec.mapping, ctx.device);
  a.group.launch.dynamic_shared_bytes = a.shared_bytes;
  return FusionDecision::ok();
}

FusionDecision analyze_regional(const FusionContext& ctx, GroupAnalysis& a,
                                const AnalysisOverrides& overrides) {
  RegionalSpec spec;
  if (FusionDecision d = regional_spec(ctx, a, overrides, spec); !d) return d;
  a.kind = GroupKind::Kernel;
  a.scheme = StitchScheme::Regional;
  a.group.spec = std::move(spec);
  return FusionDecision::ok();
}

} // namespace stitch::legality
