// analyze_group and the FusionContext it reads: the legality checks of legality.h, dispatched
// by the group's node classes to one analysis per kind (legality_local.cpp, _window, _regional,
// _global, _gemv, _independent, _library, _single), and the helpers they share.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "graph/constant.h"
#include "graph/infer_context.h"
#include "graph/reductions.h"
#include "planner/launch_config.h"
#include "planner/legality_internal.h"
#include "planner/reduction_mapping.h"

namespace stitch {

namespace legality {

Shape squeezed(const Shape& s) {
  Shape r;
  for (int64_t d : s)
    if (d != 1) r.push_back(d);
  return r;
}

bool broadcasts_to(const Shape& s, const Shape& to) {
  if (s.size() > to.size()) return false;
  const size_t off = to.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != 1 && s[d] != to[off + d]) return false;
  return true;
}

Shape padded_to(const Shape& s, const Shape& to) {
  Shape p(to.size() - std::min(to.size(), s.size()), 1);
  p.insert(p.end(), s.begin(), s.end());
  return p;
}

bool is_scalar_float_literal(const Tensor& t) {
  return t.is_constant() && t.elements() == 1 && dtype_is_float(t.dtype) && t.view_of == kNoTensor;
}

std::vector<TensorId> present_operands(const Node& node) {
  std::vector<TensorId> operands = value_operands(node);
  // A Pad reads its data and its fill value; the pads and axes are the plan's numbers, as are
  // a Trilu's diagonal, a ConstantOfShape's shape and a Range's start, limit and delta (those
  // two read nothing).
  if (node.op == OpKind::Pad && operands.size() > 1) {
    operands = {operands[0]};
    if (node.opset >= 11 && node.inputs.size() > 2) operands.push_back(node.inputs[2]);
  }
  if (node.op == OpKind::Trilu && operands.size() > 1) operands.resize(1);
  if (node.op == OpKind::ConstantOfShape || node.op == OpKind::Range) operands.clear();
  std::erase(operands, kNoTensor);
  return operands;
}

KernelInterface kernel_interface(const FusionContext& ctx, const std::vector<int32_t>& nodes,
                                 const std::vector<TensorId>& inputs,
                                 const std::vector<TensorId>& outputs) {
  const Graph& g = ctx.graph;
  KernelInterface io;
  std::vector<TensorId> values;
  for (int32_t n : nodes)
    for (TensorId t : present_operands(g.nodes[n]))
      if (!contains(nodes, ctx.producer[t]) &&
          std::find(values.begin(), values.end(), t) == values.end())
        values.push_back(t);
  // The plan's order of inputs first, then any value operand it left out.
  std::vector<TensorId> ordered;
  for (TensorId t : inputs)
    if (std::find(values.begin(), values.end(), t) != values.end()) ordered.push_back(t);
  for (TensorId t : values)
    if (std::find(ordered.begin(), ordered.end(), t) == ordered.end()) ordered.push_back(t);
  for (TensorId t : ordered)
    (is_scalar_float_literal(g.tensor(t)) ? io.literals : io.reads).push_back(t);
  for (TensorId t : outputs)
    if (contains(nodes, ctx.producer[t])) io.writes.push_back(t);
  return io;
}

void boundary(const FusionContext& ctx, const std::vector<int32_t>& nodes, GroupAnalysis& out) {
  const Graph& g = ctx.graph;
  for (int32_t n : nodes)
    for (TensorId t : g.nodes[n].inputs) {
      if (t == kNoTensor || contains(nodes, ctx.producer[t])) continue;
      if (std::find(out.inputs.begin(), out.inputs.end(), t) == out.inputs.end())
        out.inputs.push_back(t);
    }
  for (int32_t n : nodes)
    for (TensorId t : g.nodes[n].outputs) {
      if (t == kNoTensor) continue;
      bool leaves = nodes.size() == 1 || ctx.graph_output[t];
      for (int32_t c : ctx.consumers[t])
        leaves = leaves || !contains(nodes, c);
      if (leaves) out.outputs.push_back(t);
    }
}

FusionDecision fits_registers(const FusionContext& ctx, const GroupAnalysis& a) {
  if (a.registers <= ctx.device.max_registers_per_thread) return FusionDecision::ok();
  return FusionDecision::no(fmt::format("an estimated {} registers per thread exceed the {} a "
                                        "thread may use",
                                        a.registers, ctx.device.max_registers_per_thread));
}

int cooperative_sms(const DeviceParams& device) {
  return device.cooperative_sm_count > 0 ? device.cooperative_sm_count : device.sm_count;
}

int64_t cooperative_blocks_per_sm(const DeviceParams& device, int64_t block) {
  return std::max<int64_t>(
      1, std::min<int64_t>(device.max_threads_per_sm / block,
                           device.registers_per_sm / (block * kCooperativeRegisters)));
}

int64_t sector_overhead(int64_t bytes, int64_t run_bytes) {
  constexpr int64_t kSector = 32;
  if (run_bytes >= kSector || run_bytes <= 0) return 0;
  return bytes * (kSector - run_bytes) / run_bytes;
}

std::string_view class_sentence(NodeClass c) {
  switch (c) {
  case NodeClass::Alone:
    return "runs as its own kernel";
  case NodeClass::Pointwise:
    return "is pointwise";
  case NodeClass::RowOp:
    return "is a row op";
  case NodeClass::ColumnReduction:
    return "is a column reduction";
  case NodeClass::Window:
    return "is a window op";
  case NodeClass::Gemm:
    return "is a matrix product";
  case NodeClass::Conv:
    return "is a convolution";
  case NodeClass::View:
    return "is a view";
  case NodeClass::Layout:
    return "is a transpose";
  case NodeClass::Movement:
    return "is an index remapping";
  case NodeClass::Gather:
    return "is a row lookup";
  }
  return "?";
}

int vector_width_for(const Graph& g, const std::vector<TensorId>& inputs,
                     const std::vector<TensorId>& outputs, const Shape& iteration) {
  int element_bytes = 0; // of every vector access: one size, 4 or 2 bytes
  auto fits = [&](const Tensor& t) {
    if (t.shape != iteration) return false;
    if (element_bytes == 0) element_bytes = dtype_size(t.dtype);
    return dtype_size(t.dtype) == element_bytes;
  };
  for (TensorId t : outputs)
    if (!fits(g.tensor(t))) return 1;
  for (TensorId t : inputs)
    if (g.tensor(t).elements() != 1 && !fits(g.tensor(t))) return 1;
  if (element_bytes != 4 && element_bytes != 2) return 1;
  const int lanes = 16 / element_bytes;
  return shape_elements(iteration) >= lanes ? lanes : 1;
}

bool remapping_op(const Graph& g, const Node& node) {
  if (node.outputs.size() != 1) return false;
  switch (node.op) {
  case OpKind::Transpose:
  case OpKind::Expand:
  case OpKind::Concat:
    return true;
  case OpKind::Slice:
    for (size_t i = 1; i < node.inputs.size(); ++i)
      if (node.inputs[i] != kNoTensor && !g.tensor(node.inputs[i]).is_constant()) return false;
    return true;
  case OpKind::Pad:
    return constant_pad(g, node).has_value();
  case OpKind::Trilu:
    return g.tensor(node.inputs[0]).shape.size() >= 2 && trilu_diagonal(g, node).has_value();
  case OpKind::ConstantOfShape:
    return true;
  case OpKind::Range:
    return range_terms(g, node).has_value();
  default:
    return false;
  }
}

std::optional<DimExpr> scalar_dim_value(const Graph& g, TensorId t) {
  if (t == kNoTensor) return std::nullopt;
  const Tensor& x = g.tensor(t);
  if (x.elements() != 1 || !dtype_is_integer(x.dtype)) return std::nullopt;
  if (x.sym_values.size() == 1) return x.sym_values[0];
  if (x.is_constant()) return DimExpr(constant_as_int64(x).at(0));
  return std::nullopt;
}

std::optional<DimExpr> trilu_diagonal(const Graph& g, const Node& node) {
  if (node.inputs.size() < 2 || node.inputs[1] == kNoTensor) return DimExpr(0);
  return scalar_dim_value(g, node.inputs[1]);
}

std::optional<std::pair<DimExpr, DimExpr>> range_terms(const Graph& g, const Node& node) {
  if (node.inputs.size() != 3 || node.outputs.size() != 1 ||
      !dtype_is_integer(g.tensor(node.outputs[0]).dtype))
    return std::nullopt;
  std::optional<DimExpr> start = scalar_dim_value(g, node.inputs[0]);
  std::optional<DimExpr> delta = scalar_dim_value(g, node.inputs[2]);
  if (!start || !delta) return std::nullopt;
  return std::pair{*start, *delta};
}

std::optional<ConstantPad> constant_pad(const Graph& g, const Node& node) {
  if (node.op != OpKind::Pad || node.inputs.empty() || node.inputs[0] == kNoTensor ||
      node.outputs.size() != 1 || node.outputs[0] == kNoTensor)
    return std::nullopt;
  NodeContext nc(g, node);
  if (nc.attr_string("mode", "constant") != "constant") return std::nullopt;
  const Tensor& data = g.tensor(node.inputs[0]);
  const auto rank = static_cast<int64_t>(data.shape.size());
  std::vector<int64_t> pads, axes;
  ConstantPad pad;
  if (node.opset < 11) {
    if (!node.attrs.count("pads") || nc.attr_float("value", 0.0) != 0.0) return std::nullopt;
    pads = nc.req_ints("pads");
  } else {
    for (size_t i = 1; i < node.inputs.size(); ++i)
      if (node.inputs[i] != kNoTensor && !g.tensor(node.inputs[i]).is_constant())
        return std::nullopt;
    if (node.inputs.size() < 2 || node.inputs[1] == kNoTensor) return std::nullopt;
    pads = nc.const_int_vector(1, "pads");
    if (node.inputs.size() > 2 && node.inputs[2] != kNoTensor) {
      // The fill is printed as a literal: a float scalar (an integer Pad fills with 0 only).
      if (!is_scalar_float_literal(g.tensor(node.inputs[2]))) return std::nullopt;
      pad.fill = node.inputs[2];
    }
    if (node.inputs.size() > 3 && node.inputs[3] != kNoTensor)
      axes = nc.const_int_vector(3, "axes");
  }
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  axes = nc.normalize_axes(axes, rank, "axes");
  if (pads.size() != 2 * axes.size()) return std::nullopt;
  for (size_t j = 0; j < axes.size(); ++j) {
    const int64_t begin = pads[j], end = pads[j + axes.size()];
    if (begin < 0 || end < 0) return std::nullopt; // a crop: left to the Pad kernel
    if (begin == 0 && end == 0) continue;
    if (pad.axis >= 0 && pad.axis != axes[j]) return std::nullopt; // one padded axis only
    pad.axis = static_cast<int32_t>(axes[j]);
    pad.begin = begin;
  }
  return pad;
}

} // namespace legality

using namespace legality;

namespace {

// A window op the fused Local kernel implements (kernel_fused_window.cpp): a float32 MaxPool
// without its Indices output, a float32 AveragePool, and a float32 depthwise Conv (as many
// groups as channels, one filter per channel: W is [C, 1, k...]). A depthwise convolution reads
// each input element once per tap and does little arithmetic: a memory-bound stencil, worth
// generating with the ops around it. Alone, it stays a cuDNN call; other convolutions always do.
bool fusible_window(const Graph& g, const Node& node) {
  if (node.inputs.empty() || node.inputs[0] == kNoTensor || node.outputs.empty()) return false;
  const Tensor& x = g.tensor(node.inputs[0]);
  if (x.dtype != DType::Float32 || x.shape.size() < 3 || x.elements() == 0 ||
      g.tensor(node.outputs[0]).elements() == 0)
    return false;
  switch (node.op) {
  case OpKind::MaxPool:
    return node.outputs.size() < 2 || node.outputs[1] == kNoTensor;
  case OpKind::AveragePool:
    return true;
  case OpKind::Conv: {
    if (node.inputs.size() < 2 || node.inputs[1] == kNoTensor) return false;
    const Tensor& w = g.tensor(node.inputs[1]);
    const int64_t channels = x.shape[1];
    if (w.dtype != DType::Float32 || w.shape.size() != x.shape.size() || w.shape[0] != channels ||
        w.shape[1] != 1)
      return false;
    if (node.inputs.size() > 2 && node.inputs[2] != kNoTensor &&
        g.tensor(node.inputs[2]).dtype != DType::Float32)
      return false;
    return NodeContext(g, node).attr_int("group", 1) == channels;
  }
  default:
    return false;
  }
}

// A convolution of the library that can join a group: one dtype throughout, float32, float16
// or bfloat16 (cuDNN's FLOAT, PSEUDO_HALF and PSEUDO_BFLOAT16 configurations;
// legality_library.cpp). It may read X and W and write its result through channels-last
// Transposes; a forward Conv with a bias may also take the epilogue of cuDNN's fused call
// (cudnnConvolutionBiasActivationForward requires the bias).
bool library_conv(const Graph& g, const Node& node) {
  if ((node.op != OpKind::Conv && node.op != OpKind::ConvTranspose) || node.inputs.size() < 2)
    return false;
  const DType dtype = g.tensor(node.outputs[0]).dtype;
  if (dtype != DType::Float32 && dtype != DType::Float16 && dtype != DType::BFloat16) return false;
  for (TensorId t : node.inputs)
    if (t != kNoTensor && g.tensor(t).dtype != dtype) return false;
  return g.tensor(node.outputs[0]).elements() > 0;
}

NodeClass classify(const Graph& g, const Node& node) {
  if (fusible_window(g, node)) return NodeClass::Window;
  if (library_conv(g, node)) return NodeClass::Conv;
  if (node.op == OpKind::View) return NodeClass::View;
  if (node.op == OpKind::Transpose && node.outputs.size() == 1 &&
      g.tensor(node.outputs[0]).elements() > 0 && library_dtype(g.tensor(node.outputs[0]).dtype))
    return NodeClass::Layout;
  if (group_kind_of(node) == GroupKind::GemmLibrary) return NodeClass::Gemm;
  if (group_kind_of(node) != GroupKind::Kernel) return NodeClass::Alone;
  for (TensorId t : node.outputs)
    if (t != kNoTensor && g.tensor(t).elements() == 0) return NodeClass::Alone;
  if (op_is_pointwise(node.op)) return NodeClass::Pointwise;
  if (remapping_op(g, node)) return NodeClass::Movement;
  if (node.op == OpKind::Gather && node.inputs.size() == 2 && node.inputs[1] != kNoTensor &&
      g.tensor(node.inputs[0]).elements() > 0)
    return NodeClass::Gather;
  // Only reductions of the reduction table fuse (not a scan, ArgMax, the composites).
  const ReductionRule* rule = reduction_rule(node.op);
  if (rule == nullptr) return NodeClass::Alone;
  const Tensor& in = g.tensor(node.inputs[0]);
  const Tensor& out = g.tensor(node.outputs[0]);
  if (in.elements() == 0 || out.dtype != in.dtype) return NodeClass::Alone;
  const ReductionSpace space = reduction_space(g, node);
  if (space.rows()) return NodeClass::RowOp;
  const bool column = space.dims.size() == 2 && space.reduced[0] && !space.reduced[1];
  if (column && out.elements() == space.lines && rule->passes() == 1)
    return NodeClass::ColumnReduction;
  return NodeClass::Alone;
}

// The weakly connected components of `nodes` through edges inside the set, each sorted.
std::vector<std::vector<int32_t>> components(const FusionContext& ctx,
                                             const std::vector<int32_t>& nodes) {
  std::vector<int> comp(nodes.size(), -1);
  int count = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (comp[i] >= 0) continue;
    std::vector<size_t> stack = {i};
    comp[i] = count;
    while (!stack.empty()) {
      int32_t n = nodes[stack.back()];
      stack.pop_back();
      auto visit = [&](int32_t m) {
        auto it = std::lower_bound(nodes.begin(), nodes.end(), m);
        if (it == nodes.end() || *it != m || comp[it - nodes.begin()] >= 0) return;
        comp[it - nodes.begin()] = count;
        stack.push_back(it - nodes.begin());
      };
      for (int32_t m : ctx.preds[n])
        visit(m);
      for (int32_t m : ctx.succs[n])
        visit(m);
    }
    ++count;
  }
  std::vector<std::vector<int32_t>> parts(count);
  for (size_t i = 0; i < nodes.size(); ++i)
    parts[comp[i]].push_back(nodes[i]);
  return parts;
}

} // namespace

int32_t NodeSet::first_common_outside(const NodeSet& a, const NodeSet& b) const {
  for (size_t w = 0; w < words_.size(); ++w) {
    uint64_t bits = words_[w] & a.words_[w] & ~b.words_[w];
    if (bits) return static_cast<int32_t>(w * 64 + __builtin_ctzll(bits));
  }
  return -1;
}

bool names_node_or_its_parts(const std::string& name, const std::string& node_name) {
  return node_name == name ||
         (node_name.size() > name.size() + 1 && node_name.compare(0, name.size(), name) == 0 &&
          node_name[name.size()] == '/');
}

FusionContext::FusionContext(const Graph& g, const DeviceParams& d,
                             const std::vector<std::string>& no_fuse, FusionMode mode,
                             FusionMode chain_mode)
    : graph(g), device(d), attention(mode), gemm_chain(chain_mode) {
  const size_t n = g.nodes.size();
  producer = g.producers();
  consumers = g.consumers();
  graph_output.assign(g.tensors.size(), false);
  for (TensorId t : g.outputs)
    graph_output[t] = true;
  preds.resize(n);
  succs.resize(n);
  for (size_t v = 0; v < n; ++v)
    for (TensorId t : g.nodes[v].inputs) {
      if (t == kNoTensor || producer[t] < 0) continue;
      int32_t u = producer[t];
      if (std::find(preds[v].begin(), preds[v].end(), u) == preds[v].end()) {
        preds[v].push_back(u);
        succs[u].push_back(static_cast<int32_t>(v));
      }
    }
  descendants.assign(n, NodeSet(n));
  ancestors.assign(n, NodeSet(n));
  for (size_t v = n; v-- > 0;)
    for (int32_t s : succs[v]) {
      descendants[v].set(s);
      descendants[v].merge(descendants[s]);
    }
  for (size_t v = 0; v < n; ++v)
    for (int32_t p : preds[v]) {
      ancestors[v].set(p);
      ancestors[v].merge(ancestors[p]);
    }
  node_class.resize(n);
  no_fuse_unit.assign(n, -1);
  for (size_t v = 0; v < n; ++v) {
    node_class[v] = classify(g, g.nodes[v]);
    for (size_t u = 0; u < no_fuse.size() && no_fuse_unit[v] < 0; ++u)
      if (names_node_or_its_parts(no_fuse[u], g.nodes[v].name))
        no_fuse_unit[v] = static_cast<int>(u);
  }
}

std::string FusionContext::describe(int32_t node) const {
  const Node& n = graph.nodes[node];
  return fmt::format("'{}' ({})", n.name.empty() ? fmt::format("#{}", node) : n.name,
                     op_name(n.op));
}

FusionDecision matrix_vector(const Graph& g, const Node& node, MatrixVector& mv) {
  if (node.op != OpKind::MatMul && node.op != OpKind::Gemm)
    return FusionDecision::no("it is not a MatMul or Gemm");
  if (node.inputs.size() < 2 || node.inputs[0] == kNoTensor || node.inputs[1] == kNoTensor)
    return FusionDecision::no("it lacks an operand");
  mv = MatrixVector{};
  mv.x = node.inputs[0];
  mv.b = node.inputs[1];
  const Tensor& a = g.tensor(mv.x);
  const Tensor& b = g.tensor(mv.b);
  const Tensor& y = g.tensor(node.outputs[0]);
  for (const Tensor* t : {&a, &b, &y})
    if (t->dtype != DType::Float32)
      return FusionDecision::no(
          fmt::format("'{}' is {}, not float32", t->name, dtype_name(t->dtype)));
  if (b.shape.size() != 2)
    return FusionDecision::no(fmt::format("its B {} is not a matrix", shape_str(b.shape)));
  NodeContext attrs(g, node);
  bool transposed = false;
  if (node.op == OpKind::Gemm) {
    transposed = attrs.attr_int("transB", 0) != 0;
    mv.alpha = attrs.attr_float("alpha", 1.0);
    mv.beta = attrs.attr_float("beta", 1.0);
    if (node.inputs.size() > 2 && node.inputs[2] != kNoTensor) mv.c = node.inputs[2];
  }
  mv.k = transposed ? b.shape[1] : b.shape[0];
  mv.n = transposed ? b.shape[0] : b.shape[1];
  mv.b_rows_are_outputs = transposed;
  // One row: Gemm's A is [1,K] (or [K,1] transposed); MatMul's is [K] or [1,K].
  const bool one_row = node.op == OpKind::Gemm
                           ? a.shape.size() == 2 && a.elements() == mv.k
                           : (a.shape.size() == 1 || (a.shape.size() == 2 && a.shape[0] == 1));
  if (!one_row || a.elements() != mv.k)
    return FusionDecision::no(
        fmt::format("its A {} is not one row of K = {}", shape_str(a.shape), mv.k));
  if (mv.k == 0 || mv.n == 0 || y.elements() != mv.n)
    return FusionDecision::no(fmt::format("it has an empty side (K = {}, N = {})", mv.k, mv.n));
  if (b.elements() == 1) // a scalar B: a multiply, and a constant one becomes a literal
    return FusionDecision::no("its B is a single value");
  if (mv.c != kNoTensor) {
    const Tensor& c = g.tensor(mv.c);
    if (c.dtype != DType::Float32 || (c.elements() != 1 && c.elements() != mv.n) ||
        !broadcasts_to(c.shape, y.shape))
      return FusionDecision::no(fmt::format("its C '{}' {} is not float32 of 1 or N = {} values",
                                            c.name, shape_str(c.shape), mv.n));
  }
  return FusionDecision::ok();
}

namespace {
FusionDecision analyze_group_shapes(const FusionContext& ctx, const std::vector<int32_t>& nodes,
                                    GroupAnalysis& a, const AnalysisOverrides& overrides);
void add_mapping_variant(const FusionContext& ctx, const std::vector<int32_t>& nodes,
                         GroupAnalysis& a);
} // namespace

FusionDecision analyze_group(const FusionContext& ctx, const std::vector<int32_t>& nodes,
                             GroupAnalysis& a, const AnalysisOverrides& overrides) {
  FusionDecision d = analyze_group_shapes(ctx, nodes, a, overrides);
  if (!d || ctx.graph.symbols.empty() || nodes.size() == 1) return d;
  // A single node's group is checked where it is made (single_node_group).
  a.group.nodes = a.nodes; // what make_group gives the plan's group
  d = legality::symbolic_support(ctx.graph, a.group, ctx.device);
  if (d && std::holds_alternative<RegionalSpec>(a.group.spec) && !overrides.row_mapping)
    add_mapping_variant(ctx, nodes, a);
  if (d && std::holds_alternative<AttentionSpec>(a.group.spec))
    legality::attention_variants(ctx, a.group);
  return d;
}

namespace {

// A Regional group over symbolic rows or rows of the run's length whose best mapping
// (row_mapping) changes within their ranges gets each other mapping as a variant, by the
// analysis made with that mapping, its block sized for the variant's rows and its row cache for
// the longest of them. A variant legality refuses is left out: the group's own mapping runs
// every shape, only slower.
void add_mapping_variant(const FusionContext& ctx, const std::vector<int32_t>& nodes,
                         GroupAnalysis& a) {
  const LaunchConfig& launch = a.group.launch;
  const RegionalSpec& spec = std::get<RegionalSpec>(a.group.spec);
  if (launch.work_per_block == 0 && !spec.row_length_dims) return;
  const DimExpr lines = launch.work_per_block > 0 ? launch.work : DimExpr(spec.rows);
  add_mapping_variants(
      ctx.graph, lines, spec.row_length_dims.value_or(DimExpr(spec.row_length)), spec.row_length,
      ctx.device, a.group,
      [&](ThreadMapping mapping, int64_t length, int64_t longest, MappingVariant& out) {
        GroupAnalysis variant;
        AnalysisOverrides overrides;
        overrides.row_mapping = mapping;
        if (!analyze_group_shapes(ctx, nodes, variant, overrides)) return false;
        variant.group.nodes = nodes;
        if (!legality::symbolic_support(ctx.graph, variant.group, ctx.device)) return false;
        auto* spec = std::get_if<RegionalSpec>(&variant.group.spec);
        if (spec == nullptr || spec->mapping != mapping) return false;
        legality::size_symbolic_rows(ctx.graph, lines, length, longest, ctx.device, *spec,
                                     variant.group.launch);
        out.spec = variant.group.spec;
        out.launch = variant.group.launch;
        return true;
      });
}

} // namespace

namespace {

FusionDecision analyze_group_shapes(const FusionContext& ctx, const std::vector<int32_t>& nodes,
                                    GroupAnalysis& a, const AnalysisOverrides& overrides) {
  a = GroupAnalysis{};
  a.nodes = nodes;
  boundary(ctx, nodes, a);
  if (nodes.size() == 1) {
    a.group = single_node_group(ctx.graph, nodes[0], ctx.device);
    a.kind = a.group.kind;
    a.scheme = StitchScheme::Local;
    a.iteration = ctx.graph.tensor(ctx.graph.nodes[nodes[0]].outputs[0]).shape;
    a.epilogue_nodes = 0;
    return FusionDecision::ok();
  }
  for (int32_t n : nodes)
    if (ctx.no_fuse_unit[n] != ctx.no_fuse_unit[nodes.front()]) {
      const int32_t kept = ctx.no_fuse_unit[n] >= 0 ? n : nodes.front();
      return FusionDecision::no(
          fmt::format("{} is kept out of fusion by --no-fuse", ctx.describe(kept)));
    }
  for (int32_t n : nodes)
    if (ctx.node_class[n] == NodeClass::Alone)
      return FusionDecision::no(fmt::format("{} is a {} op that {}", ctx.describe(n),
                                            category_name(op_category(ctx.graph.nodes[n].op)),
                                            class_sentence(NodeClass::Alone)));
  NodeSet members(ctx.size()), below(ctx.size()), above(ctx.size());
  for (int32_t n : nodes) {
    members.set(n);
    below.merge(ctx.descendants[n]);
    above.merge(ctx.ancestors[n]);
  }
  if (int32_t x = below.first_common_outside(above, members); x >= 0)
    return FusionDecision::no(fmt::format("the group is not convex: a path leaves it and comes "
                                          "back through {}",
                                          ctx.describe(x)));
  bool gemm = false, column = false, row = false, window = false, conv = false;
  for (int32_t n : nodes) {
    conv = conv || ctx.node_class[n] == NodeClass::Conv;
    gemm = gemm || ctx.node_class[n] == NodeClass::Gemm;
    window = window || ctx.node_class[n] == NodeClass::Window;
    column = column || ctx.node_class[n] == NodeClass::ColumnReduction;
    row = row || ctx.node_class[n] == NodeClass::RowOp;
  }
  int gemms = 0;
  for (int32_t n : nodes)
    gemms += ctx.node_class[n] == NodeClass::Gemm;
  // Two matrix products with row ops between them: an attention (legality_attention.cpp),
  // which reads and writes through Slices and Transposes.
  if (gemms == 2 && row && !conv && !window && !column) return analyze_attention(ctx, a);
  // Two or three matrix products with pointwise nodes between them: a GEMM chain
  // (legality_chain.cpp), the first products' columns perhaps taken apart by Slices.
  if (gemms >= 2 && !row && !conv && !window && !column) return analyze_gemm_chain(ctx, a);
  // A Transpose of a library dtype joins a library call as its layout, or a Local group (no
  // row op, window or column reduction) as a Movement node. Beside row ops (and nothing but
  // pointwise nodes, views and row lookups) it may still join a Local part of an Independent
  // launch (below); beside a window or a column reduction never.
  FusionDecision d = FusionDecision::ok();
  if ((!gemm && !conv && (window || column)) || row)
    for (int32_t n : nodes) {
      if (ctx.node_class[n] != NodeClass::Layout && ctx.node_class[n] != NodeClass::Movement)
        continue;
      d = FusionDecision::no(fmt::format("{} {}; it joins a group only as the layout a matrix "
                                         "product's or a convolution's library call reads or "
                                         "writes through, or in a group of pointwise ops",
                                         ctx.describe(n), class_sentence(ctx.node_class[n])));
      if (!row || gemm || conv || window || column) return d;
      break;
    }
  // A Gather joins a Regional group as a row load, nothing else.
  if (!row || gemm || conv || window || column)
    for (int32_t n : nodes)
      if (ctx.node_class[n] == NodeClass::Gather)
        return FusionDecision::no(fmt::format("{} {}; it joins a group only as the rows a group "
                                              "of row ops reads",
                                              ctx.describe(n), class_sentence(NodeClass::Gather)));
  if (gemm) {
    if (!d) return d;
    int32_t first = -1;
    for (int32_t n : nodes) {
      if (ctx.node_class[n] != NodeClass::Gemm) continue;
      if (first >= 0)
        return FusionDecision::no(fmt::format("{} and {} are two matrix products in one group",
                                              ctx.describe(first), ctx.describe(n)));
      first = n;
    }
    return row ? analyze_row_gemv(ctx, a, overrides) : analyze_gemm(ctx, a);
  }
  if (conv) {
    if (!d) return d;
    int32_t first = -1;
    for (int32_t n : nodes) {
      if (ctx.node_class[n] != NodeClass::Conv) continue;
      if (first >= 0)
        return FusionDecision::no(fmt::format("{} and {} are two convolutions in one group",
                                              ctx.describe(first), ctx.describe(n)));
      first = n;
    }
    return analyze_conv(ctx, a);
  }
  // Views join a Local group between its nodes (analyze_local), and a row op's per-row values
  // on their way to a matrix-vector product (above); a view unrelated to the others may still
  // be a part of an Independent launch (below).
  if (d && (window || column || row))
    for (int32_t n : nodes) {
      if (ctx.node_class[n] != NodeClass::View) continue;
      d = FusionDecision::no(fmt::format("{} is a view; views fuse only between a Local group's "
                                         "nodes, and between row ops' per-row values and the "
                                         "matrix-vector product reading them",
                                         ctx.describe(n)));
      break;
    }
  if (d)
    d = window   ? analyze_window(ctx, a)
        : column ? analyze_column(ctx, a)
        : row    ? analyze_regional(ctx, a, overrides)
                 : analyze_local(ctx, a);
  if (d) return d;
  // Unrelated parts that cannot be one kernel of one kind may be one launch of several
  // (legality_independent.cpp), each part checked alone.
  std::vector<std::vector<int32_t>> parts = components(ctx, nodes);
  if (parts.size() < 2) return d;
  GroupAnalysis independent;
  independent.nodes = nodes;
  independent.inputs = a.inputs;
  independent.outputs = a.outputs;
  FusionDecision di = analyze_independent(ctx, independent, std::move(parts), overrides);
  if (!di) return FusionDecision::no(d.reason + "; " + di.reason);
  a = std::move(independent);
  return di;
}

} // namespace

} // namespace stitch
