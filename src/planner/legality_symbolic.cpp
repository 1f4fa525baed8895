// Which groups run over symbolic dims (`--dim NAME=MIN..MAX`), and how: legality's last word on
// a group of a graph that keeps symbols (legality.h, symbolic_support).
//
// A group qualifies when the symbols change only how much work its kernel or library call does,
// never how one work item is computed:
//   - a pointwise kernel (one node, or a Local group without movement nodes) whose iteration's
//     elements are the work: every operand it reads is the iteration's own shape (read at the
//     flat index), or has fixed dims that are 1 on every axis up to the iteration's last
//     symbolic one (read through the iteration's fixed coordinates only);
//   - a matrix product through the library whose M alone depends on the symbols (A's leading
//     dims, folded into M), B and every addend's layout fixed;
//   - a view, which has no code.
// Vectors of 16 bytes need every operand whole or a fixed scalar over every shape, not only at
// the planning binding. The launch is sized for the symbols' maxima and covers the actual work
// per run (LaunchConfig::work).
#include "planner/legality_internal.h"

#include "graph/error.h"

namespace stitch::legality {

namespace {

DimExpr elements_of(const SymShape& dims) {
  DimExpr count = 1;
  for (const DimExpr& d : dims)
    count = count * d;
  return count;
}

std::string dims_str(const Tensor& t) { return sym_shape_to_string(t.sym_shape()); }

// Whether a kernel reads `t` against an iteration of dims `it` through an index the symbols do
// not change (see the banner).
FusionDecision fixed_index(const Graph& g, TensorId t, const SymShape& it) {
  const Tensor& x = g.tensor(t);
  const SymShape dims = x.sym_shape();
  if (dims == it) return FusionDecision::ok();
  size_t last_symbolic = 0; // one past the iteration's last symbolic axis
  for (size_t d = 0; d < it.size(); ++d)
    if (!it[d].is_constant()) last_symbolic = d + 1;
  if (dims.size() > it.size() || !is_static(dims))
    return FusionDecision::no(fmt::format("'{}' {} is read against the iteration {}: its index "
                                          "would depend on the symbols",
                                          x.name, dims_str(x), sym_shape_to_string(it)));
  const size_t offset = it.size() - dims.size();
  for (size_t d = offset; d < last_symbolic; ++d)
    if (dims[d - offset].constant_value() != 1)
      return FusionDecision::no(fmt::format(
          "'{}' {} varies along axis {} of the iteration {}, which follows a symbolic axis: its "
          "index would depend on the symbols",
          x.name, dims_str(x), d, sym_shape_to_string(it)));
  return FusionDecision::ok();
}

bool whole_or_scalar(const Graph& g, TensorId t, const SymShape& it) {
  const Tensor& x = g.tensor(t);
  return x.sym_shape() == it || (!x.is_dynamic() && x.elements() == 1);
}

// A flat launch over `work` elements for every shape in range: sized at the maximum.
void flat_symbolic_launch(const Graph& g, const DimExpr& work, int vector_width,
                          const DeviceParams& device, LaunchConfig& launch) {
  if (work.is_constant()) return; // the planned launch is the one launch
  const int64_t most = std::max<int64_t>(1, work.bounds(g.symbol_ranges()).hi);
  launch = flat_launch(most, vector_width, device);
  launch.work = work;
  launch.work_per_block = launch.block[0] * vector_width;
}

// Pointwise work over iteration `it` reading `reads`: the index rule, and vectors kept only
// where they hold over every shape.
FusionDecision pointwise_support(const Graph& g, const SymShape& it,
                                 const std::vector<TensorId>& reads, int& vector_width) {
  for (TensorId t : reads)
    if (FusionDecision d = fixed_index(g, t, it); !d) return d;
  for (TensorId t : reads)
    if (!whole_or_scalar(g, t, it)) vector_width = 1;
  return FusionDecision::ok();
}

FusionDecision gemm_support(const Graph& g, GemmSpec& spec) {
  const Tensor& a = g.tensor(spec.a);
  const Tensor& result = g.tensor(spec.result);
  if (!a.is_dynamic() && !result.is_dynamic()) return FusionDecision::ok();
  if (g.tensor(spec.b).is_dynamic())
    return FusionDecision::no(fmt::format("B '{}' {} depends on the symbols; only M may",
                                          g.tensor(spec.b).name, dims_str(g.tensor(spec.b))));
  if (spec.batch_count != 1 || !spec.outer.empty())
    return FusionDecision::no("a batched product over symbolic dims (only M may depend on them)");
  if (spec.trans_a || spec.layout_a >= 0 || spec.slice_a >= 0 || spec.layout_result >= 0)
    return FusionDecision::no("a product reading A or writing its result through a layout or "
                              "a slice over symbolic dims");
  if (!spec.fill.empty() || spec.k == 0)
    return FusionDecision::no("a product over symbolic dims with a fill kernel or K = 0");
  const SymShape a_dims = a.sym_shape();
  if (a_dims.empty() || !a_dims.back().is_constant())
    return FusionDecision::no(fmt::format("A '{}' {}: K must be fixed", a.name, dims_str(a)));
  const DimExpr m = elements_of(SymShape(a_dims.begin(), a_dims.end() - 1));
  if (elements_of(result.sym_shape()) != m * DimExpr(spec.n))
    return FusionDecision::no(fmt::format("the result '{}' {} is not M x N of A {}", result.name,
                                          dims_str(result), dims_str(a)));
  for (const GemmSpec::Addend& addend : spec.addends) {
    const Tensor& t = g.tensor(addend.tensor);
    if (t.is_dynamic() && t.sym_shape() != result.sym_shape())
      return FusionDecision::no(fmt::format("the addend '{}' {} is neither fixed nor the result's "
                                            "shape",
                                            t.name, dims_str(t)));
  }
  if (!m.is_constant()) spec.m_dims = m;
  return FusionDecision::ok();
}

} // namespace

FusionDecision symbolic_support(const Graph& g, FusionGroup& group, const DeviceParams& device) {
  if (g.symbols.empty()) return FusionDecision::ok();
  if (std::holds_alternative<AliasSpec>(group.spec)) return FusionDecision::ok();
  if (auto* spec = std::get_if<GemmSpec>(&group.spec)) return gemm_support(g, *spec);
  bool dynamic = false;
  for (int32_t n : group.nodes)
    for (const std::vector<TensorId>* list : {&g.nodes[n].inputs, &g.nodes[n].outputs})
      for (TensorId t : *list)
        dynamic = dynamic || (t != kNoTensor && g.tensor(t).is_dynamic());
  if (!dynamic) return FusionDecision::ok();
  if (auto* spec = std::get_if<OpSpec>(&group.spec)) {
    const Node& node = g.nodes[spec->node];
    if (!op_is_pointwise(node.op))
      return FusionDecision::no(fmt::format("no kernel for {} over symbolic dims yet",
                                            op_name(node.op)));
    const SymShape it = g.tensor(node.outputs[0]).sym_shape();
    std::vector<TensorId> reads = value_operands(node);
    std::erase(reads, kNoTensor);
    int width = group.launch.vector_width;
    if (FusionDecision d = pointwise_support(g, it, reads, width); !d) return d;
    flat_symbolic_launch(g, elements_of(it), width, device, group.launch);
    group.launch.vector_width = width;
    return FusionDecision::ok();
  }
  if (auto* spec = std::get_if<LocalSpec>(&group.spec)) {
    if (!spec->moves.empty())
      return FusionDecision::no("movement nodes in a pointwise group over symbolic dims");
    const SymShape it = g.tensor(spec->io.writes.front()).sym_shape();
    for (TensorId t : spec->io.writes)
      if (g.tensor(t).sym_shape() != it)
        return FusionDecision::no(fmt::format("the group writes '{}' {} and '{}' {}",
                                              g.tensor(spec->io.writes.front()).name,
                                              sym_shape_to_string(it), g.tensor(t).name,
                                              dims_str(g.tensor(t))));
    int width = spec->vector_width;
    if (FusionDecision d = pointwise_support(g, it, spec->io.reads, width); !d) return d;
    spec->vector_width = width;
    spec->iteration_dims = it;
    flat_symbolic_launch(g, elements_of(it), width, device, group.launch);
    group.launch.vector_width = width;
    return FusionDecision::ok();
  }
  return FusionDecision::no(
      fmt::format("no {} group over symbolic dims yet", group_kind_name(group.kind)));
}

} // namespace stitch::legality
