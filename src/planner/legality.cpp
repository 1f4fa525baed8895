// analyze_group and the FusionContext it reads: the legality checks of legality.h.
#include "planner/legality.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "graph/infer_context.h"
#include "planner/planner.h"
#include "planner/reduction_mapping.h"

namespace stitch {

namespace {

constexpr int64_t kBlock = 256;
// Rows longer than this, or rows this long that are too few to give each SM 8 warps, get a
// block per row (the rule plan_reduction_launch uses for a single row op).
constexpr int64_t kLongRow = 1024;
constexpr int64_t kBlockRowMinimum = 256;
constexpr int64_t kWarpsPerSmWanted = 8;
// A rough register budget: a fixed base for indices and loop state, a few per node for its
// operands and result, and the cached row elements each thread holds.
constexpr int64_t kBaseRegisters = 24;
constexpr int64_t kRegistersPerNode = 3;
// A cooperative (grid-barrier) kernel is planned for this many registers per thread: its grid
// is what fits resident at that budget, and its __launch_bounds__ holds nvcc to it.
constexpr int64_t kCooperativeRegisters = 64;

// The blocks of `block` threads one SM keeps resident for a cooperative kernel.
int64_t cooperative_blocks_per_sm(const DeviceParams& device, int64_t block) {
  return std::max<int64_t>(
      1, std::min<int64_t>(device.max_threads_per_sm / block,
                           device.registers_per_sm / (block * kCooperativeRegisters)));
}

bool contains(const std::vector<int32_t>& sorted, int32_t n) {
  return std::binary_search(sorted.begin(), sorted.end(), n);
}

Shape squeezed(const Shape& s) {
  Shape r;
  for (int64_t d : s)
    if (d != 1) r.push_back(d);
  return r;
}

bool same_layout(const Shape& a, const Shape& b) { return squeezed(a) == squeezed(b); }

// `s` right-aligned against `to` broadcasts to it (each dim equal or 1).
bool broadcasts_to(const Shape& s, const Shape& to) {
  if (s.size() > to.size()) return false;
  size_t off = to.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != 1 && s[d] != to[off + d]) return false;
  return true;
}

// The number of trailing axes of `s` whose product is `row_length`, or -1.
int trailing_axes_for(const Shape& s, int64_t row_length) {
  int64_t product = 1;
  for (int k = 0; k <= static_cast<int>(s.size()); ++k) {
    if (product == row_length) return k;
    if (k == static_cast<int>(s.size())) break;
    product *= s[s.size() - 1 - k];
  }
  return -1;
}

// cuBLASLt applies these activations in its epilogue (CUBLASLT_EPILOGUE_RELU / _GELU): a
// library capability, not an op category. cuBLASLt's GELU is the tanh approximation
// 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), so only a Gelu with approximate="tanh" is that
// op; ONNX's default, approximate="none", is the erf form 0.5x(1 + erf(x/sqrt(2))), up to 4.7e-4
// away from it, and stays in a generated kernel rather than silently change the numerics.
bool cublaslt_activation(const Node& node) {
  if (node.op == OpKind::Relu) return true;
  if (node.op != OpKind::Gelu) return false;
  auto approximate = node.attrs.find("approximate");
  if (approximate == node.attrs.end()) return false; // the default, "none"
  const auto* value = std::get_if<std::string>(&approximate->second.value);
  return value != nullptr && *value == "tanh";
}

std::string shape_str(const Shape& s) { return shape_to_string(s); }

// The inputs a node of a fused group reads as values (the emitter's fused_value_inputs): a
// pointwise node's operands (not CastLike's target), a row op's data (not its axes).
std::vector<TensorId> value_operands(const Node& node) {
  size_t values = node.inputs.size();
  if (node.op == OpKind::CastLike)
    values = 1;
  else if (op_category(node.op) == OpCategory::Reduction)
    values = 1;
  std::vector<TensorId> operands(node.inputs.begin(),
                                 node.inputs.begin() + std::min(values, node.inputs.size()));
  std::erase(operands, kNoTensor);
  return operands;
}

// A scalar float constant: the emitter writes it as a literal, so it broadcasts anywhere.
bool is_scalar_float_literal(const Tensor& t) {
  return t.is_constant() && t.elements() == 1 &&
         (t.dtype == DType::Float32 || t.dtype == DType::Float64) && t.view_of == kNoTensor;
}

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

// A forward convolution cuDNN's fused call (cudnnConvolutionBiasActivationForward) can run
// with an epilogue: float32 throughout, with a bias (the call requires one).
bool conv_with_epilogue(const Graph& g, const Node& node) {
  if (node.op != OpKind::Conv || node.inputs.size() < 3 || node.inputs[2] == kNoTensor)
    return false;
  for (TensorId t : {node.inputs[0], node.inputs[1], node.inputs[2], node.outputs[0]})
    if (g.tensor(t).dtype != DType::Float32) return false;
  return g.tensor(node.outputs[0]).elements() > 0;
}

NodeClass classify(const Graph& g, const Node& node) {
  if (fusible_window(g, node)) return NodeClass::Window;
  if (conv_with_epilogue(g, node)) return NodeClass::Conv;
  if (node.op == OpKind::View) return NodeClass::View;
  if (group_kind_of(node) == GroupKind::GemmLibrary) return NodeClass::Gemm;
  if (group_kind_of(node) != GroupKind::Kernel) return NodeClass::Alone;
  for (TensorId t : node.outputs)
    if (t != kNoTensor && g.tensor(t).elements() == 0) return NodeClass::Alone;
  if (is_pointwise(node.op)) return NodeClass::Pointwise;
  if (op_category(node.op) != OpCategory::Reduction) return NodeClass::Alone;
  // A scan has no place in the contract's schemes: it runs alone.
  if (node.op == OpKind::CumSum) return NodeClass::Alone;
  const Tensor& in = g.tensor(node.inputs[0]);
  const Tensor& out = g.tensor(node.outputs[0]);
  if (in.elements() == 0 || out.dtype != in.dtype) return NodeClass::Alone; // ArgMax: indices
  ReductionSpace space = reduction_space(g, node);
  if (space.rows()) return NodeClass::RowOp;
  bool column = space.dims.size() == 2 && space.reduced[0] && !space.reduced[1];
  if (column && out.elements() == space.lines) return NodeClass::ColumnReduction;
  return NodeClass::Alone;
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
  }
  return "?";
}

int vector_width_for(const Graph& g, const std::vector<TensorId>& inputs,
                     const std::vector<TensorId>& outputs, const Shape& iteration) {
  if (shape_elements(iteration) < 4) return 1;
  for (TensorId t : outputs)
    if (dtype_size(g.tensor(t).dtype) != 4 || g.tensor(t).shape != iteration) return 1;
  for (TensorId t : inputs) {
    const Tensor& in = g.tensor(t);
    if (in.elements() == 1) continue;
    if (dtype_size(in.dtype) != 4 || in.shape != iteration) return 1;
  }
  return 4;
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

// The group's estimated registers per thread (GroupAnalysis::registers) fit the device's.
FusionDecision fits_registers(const FusionContext& ctx, const GroupAnalysis& a) {
  if (a.registers <= ctx.device.max_registers_per_thread) return FusionDecision::ok();
  return FusionDecision::no(fmt::format("an estimated {} registers per thread exceed the {} a "
                                        "thread may use",
                                        a.registers, ctx.device.max_registers_per_thread));
}

// Local: pointwise nodes over one iteration shape, the shape of every output.
FusionDecision analyze_local(const FusionContext& ctx, GroupAnalysis& a) {
  const Graph& g = ctx.graph;
  for (int32_t n : a.nodes)
    if (ctx.node_class[n] != NodeClass::Pointwise)
      return FusionDecision::no(fmt::format("{} is not pointwise", ctx.describe(n)));
  a.iteration = a.outputs.empty() ? g.tensor(g.nodes[a.nodes.back()].outputs[0]).shape
                                  : g.tensor(a.outputs[0]).shape;
  for (TensorId t : a.outputs)
    if (g.tensor(t).shape != a.iteration)
      return FusionDecision::no(fmt::format(
          "the group writes results of different shapes, {} ('{}') and {} ('{}'): no single "
          "iteration space",
          shape_str(a.iteration), g.tensor(a.outputs[0]).name, shape_str(g.tensor(t).shape),
          g.tensor(t).name));
  int64_t elements = shape_elements(a.iteration);
  for (int32_t n : a.nodes) {
    const Tensor& r = g.tensor(g.nodes[n].outputs[0]);
    if (!broadcasts_to(r.shape, a.iteration))
      return FusionDecision::no(fmt::format("{}'s result {} does not broadcast to the iteration "
                                            "shape {}",
                                            ctx.describe(n), shape_str(r.shape),
                                            shape_str(a.iteration)));
    a.recomputed += elements - r.elements(); // a smaller intermediate, evaluated per element
  }
  a.registers = kBaseRegisters + kRegistersPerNode * static_cast<int64_t>(a.nodes.size());
  if (FusionDecision d = fits_registers(ctx, a); !d) return d;
  a.kind = GroupKind::Kernel;
  a.scheme = StitchScheme::Local;
  a.group.mapping = ThreadMapping::Flat;
  a.group.launch =
      flat_launch(elements, vector_width_for(g, a.inputs, a.outputs, a.iteration), ctx.device);
  return FusionDecision::ok();
}

// Regional: row ops over one row space, pointwise ops on full rows or per-row values.
FusionDecision analyze_regional(const FusionContext& ctx, GroupAnalysis& a) {
  const Graph& g = ctx.graph;
  int32_t first_row_op = -1;
  Shape full;
  for (int32_t n : a.nodes) {
    if (ctx.node_class[n] == NodeClass::ColumnReduction)
      return FusionDecision::no(fmt::format("{} is a column reduction; the group's row ops need "
                                            "another thread mapping",
                                            ctx.describe(n)));
    if (ctx.node_class[n] != NodeClass::RowOp) continue;
    ReductionSpace space = reduction_space(g, g.nodes[n]);
    const Shape& in = g.tensor(g.nodes[n].inputs[0]).shape;
    if (first_row_op < 0) {
      first_row_op = n;
      full = in;
      a.rows = space.lines;
      a.row_length = space.length;
      continue;
    }
    if (!same_layout(in, full) || space.lines != a.rows || space.length != a.row_length)
      return FusionDecision::no(
          fmt::format("{} and {} reduce different rows ({} rows of {} in {}, {} rows of {} in {})",
                      ctx.describe(first_row_op), ctx.describe(n), a.rows, a.row_length,
                      shape_str(full), space.lines, space.length, shape_str(in)));
  }
  int row_axes_of_full = trailing_axes_for(full, a.row_length);
  if (row_axes_of_full < 0)
    return FusionDecision::no(fmt::format("{}'s rows of {} are not trailing axes of {}",
                                          ctx.describe(first_row_op), a.row_length,
                                          shape_str(full)));
  int lead_axes = static_cast<int>(full.size()) - row_axes_of_full;
  Shape leading(full.begin(), full.begin() + lead_axes);

  // Every result is a full row or a per-row value of the row space.
  std::map<TensorId, int> kind; // internal tensors: 1 a full row, 2 a per-row value
  for (int32_t n : a.nodes)
    for (TensorId t : g.nodes[n].outputs) {
      if (t == kNoTensor) continue;
      const Shape& s = g.tensor(t).shape;
      if (same_layout(s, full))
        kind[t] = 1;
      else if (same_layout(s, leading))
        kind[t] = 2;
      else
        return FusionDecision::no(fmt::format(
            "{}'s result {} is neither a full row ({}) nor a per-row value ({}) of the group's "
            "row space",
            ctx.describe(n), shape_str(s), shape_str(full), shape_str(leading)));
    }
  // Internal values broadcast the way the row space does: a per-row value along its row.
  for (int32_t n : a.nodes) {
    const Node& node = g.nodes[n];
    const Shape& o = g.tensor(node.outputs[0]).shape;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      TensorId t = node.inputs[i];
      if (t == kNoTensor || !contains(a.nodes, ctx.producer[t])) continue;
      if (ctx.node_class[n] == NodeClass::RowOp) {
        if (i == 0) continue; // a full row, checked above
        return FusionDecision::no(fmt::format("{} reads operand {} from inside the group; only its "
                                              "row may come from there",
                                              ctx.describe(n), i));
      }
      if (kind[t] != 2 || kind[node.outputs[0]] != 1) continue;
      const Shape& s = g.tensor(t).shape;
      int row_axes = trailing_axes_for(o, a.row_length);
      Shape padded(o.size() - std::min(o.size(), s.size()), 1);
      padded.insert(padded.end(), s.begin(), s.end());
      bool along_row = row_axes >= 0 && padded.size() == o.size();
      for (size_t d = o.size() - std::max(row_axes, 0); along_row && d < o.size(); ++d)
        along_row = padded[d] == 1;
      if (!along_row)
        return FusionDecision::no(fmt::format("{} broadcasts the per-row value '{}' {} across rows "
                                              "of {}, not along them",
                                              ctx.describe(n), g.tensor(t).name, shape_str(s),
                                              shape_str(o)));
    }
  }

  // How the emitter reads each value (kernel_fused_regional.cpp): a node with a per-row result
  // reads its inputs at their broadcast index into that result and its in-group operands as
  // this row's value; every other node reads its inputs broadcast against the row space's
  // shape, and its per-row operands constant along the row.
  const Shape space = regional_space_shape(g, a.nodes, a.rows, a.row_length);
  for (int32_t n : a.nodes) {
    const Node& node = g.nodes[n];
    const bool per_row = ctx.node_class[n] == NodeClass::Pointwise && kind[node.outputs[0]] == 2;
    for (TensorId t : value_operands(node)) {
      const Tensor& x = g.tensor(t);
      const bool internal = contains(a.nodes, ctx.producer[t]);
      if (per_row && internal && kind[t] != 2 && x.elements() != 1)
        return FusionDecision::no(fmt::format("{} computes a per-row value from '{}' {}, which is "
                                              "not one value per row",
                                              ctx.describe(n), x.name, shape_str(x.shape)));
      if (per_row || (internal && kind[t] == 1) || is_scalar_float_literal(x)) continue;
      if (!broadcasts_to(x.shape, space))
        return FusionDecision::no(fmt::format("{} reads '{}' {}, which does not broadcast to the "
                                              "row space {}",
                                              ctx.describe(n), x.name, shape_str(x.shape),
                                              shape_str(space)));
      if (!internal) continue;
      // A per-row value read by a full-row node: constant along the row.
      Shape padded(space.size() - x.shape.size(), 1);
      padded.insert(padded.end(), x.shape.begin(), x.shape.end());
      int row_axes = trailing_axes_for(space, a.row_length);
      for (size_t d = space.size() - std::max(row_axes, 0); d < space.size(); ++d)
        if (padded[d] != 1)
          return FusionDecision::no(
              fmt::format("{} broadcasts the per-row value '{}' {} across rows "
                          "of {}, not along them",
                          ctx.describe(n), x.name, shape_str(x.shape), shape_str(space)));
    }
    if (per_row || ctx.node_class[n] != NodeClass::Pointwise) continue;
    const Shape& o = g.tensor(node.outputs[0]).shape;
    if (!broadcasts_to(o, space))
      return FusionDecision::no(fmt::format("{}'s result {} does not broadcast to the row space {}",
                                            ctx.describe(n), shape_str(o), shape_str(space)));
  }

  // Phases: a row op ends one. A full row read in a later phase than it is ready is kept.
  std::map<TensorId, int> ready; // internal tensors: the phase they are ready in
  std::vector<TensorId> cached;
  auto keep = [&](TensorId t) {
    if (std::find(cached.begin(), cached.end(), t) == cached.end()) cached.push_back(t);
  };
  for (int32_t n : a.nodes) {
    const Node& node = g.nodes[n];
    int phase = 0;
    for (TensorId t : node.inputs)
      if (t != kNoTensor && contains(a.nodes, ctx.producer[t])) phase = std::max(phase, ready[t]);
    for (TensorId t : node.inputs) {
      if (t == kNoTensor || !same_layout(g.tensor(t).shape, full)) continue;
      bool internal = contains(a.nodes, ctx.producer[t]);
      if (phase > (internal ? ready[t] : 0)) keep(t);
    }
    bool row_op = ctx.node_class[n] == NodeClass::RowOp;
    for (TensorId t : node.outputs)
      if (t != kNoTensor) ready[t] = phase + (row_op ? 1 : 0);
  }
  a.cached_rows = static_cast<int64_t>(cached.size());

  bool few_rows = a.rows < kWarpsPerSmWanted * ctx.device.sm_count;
  ThreadMapping mapping = a.row_length > kLongRow || (a.row_length >= kBlockRowMinimum && few_rows)
                              ? ThreadMapping::BlockPerRow
                              : ThreadMapping::WarpPerRow;
  a.group.mapping = mapping;
  a.group.launch = row_launch(a.rows, a.row_length, mapping, ctx.device);
  int64_t threads_per_row = mapping == ThreadMapping::WarpPerRow ? 32 : a.group.launch.block[0];
  int64_t per_thread = (a.row_length + threads_per_row - 1) / threads_per_row;
  int64_t register_limit =
      mapping == ThreadMapping::WarpPerRow ? kMaxRowRegistersWarp : kMaxRowRegistersBlock;
  int64_t cached_registers = 0;
  if (a.cached_rows > 0 && per_thread * a.cached_rows <= register_limit * 2) {
    cached_registers = per_thread * a.cached_rows;
  } else if (a.cached_rows > 0) {
    a.shared_bytes = a.cached_rows * a.row_length * 4; // rows staged as 4-byte accumulators
    if (a.shared_bytes > ctx.device.max_shared_per_block)
      return FusionDecision::no(fmt::format(
          "keeping {} full rows of {} elements between the row ops takes {} KiB of shared "
          "memory; a block has {} KiB",
          a.cached_rows, a.row_length, a.shared_bytes / 1024,
          ctx.device.max_shared_per_block / 1024));
  }
  a.registers =
      kBaseRegisters + kRegistersPerNode * static_cast<int64_t>(a.nodes.size()) + cached_registers;
  if (FusionDecision d = fits_registers(ctx, a); !d) return d;
  a.group.launch.dynamic_shared_bytes = a.shared_bytes;
  a.kind = GroupKind::Kernel;
  a.scheme = StitchScheme::Regional;
  a.iteration = full;
  return FusionDecision::ok();
}

// Global: one column reduction first, then pointwise consumers of the full or reduced shape.
FusionDecision analyze_global(const FusionContext& ctx, GroupAnalysis& a) {
  const Graph& g = ctx.graph;
  int32_t reduction = -1;
  for (int32_t n : a.nodes) {
    NodeClass c = ctx.node_class[n];
    if (c == NodeClass::Pointwise) continue;
    if (c == NodeClass::RowOp)
      return FusionDecision::no(fmt::format("{} is a row op; the group's column reduction needs "
                                            "another thread mapping",
                                            ctx.describe(n)));
    if (reduction >= 0)
      return FusionDecision::no(fmt::format("{} and {} are two column reductions in one group",
                                            ctx.describe(reduction), ctx.describe(n)));
    reduction = n;
  }
  if (reduction != a.nodes.front())
    return FusionDecision::no(fmt::format("{} has producers in the group; a Global group starts "
                                          "with its column reduction",
                                          ctx.describe(reduction)));
  ReductionSpace space = reduction_space(g, g.nodes[reduction]);
  a.iteration = g.tensor(g.nodes[reduction].inputs[0]).shape;
  a.rows = space.dims[0];
  a.row_length = space.dims[1];
  const Shape& reduced = g.tensor(g.nodes[reduction].outputs[0]).shape;
  int64_t elements = shape_elements(a.iteration);
  for (int32_t n : a.nodes) {
    if (n == reduction) continue;
    const Tensor& r = g.tensor(g.nodes[n].outputs[0]);
    if (same_layout(r.shape, a.iteration)) continue;
    if (!same_layout(r.shape, reduced))
      return FusionDecision::no(fmt::format(
          "{}'s result {} is neither the reduced input {} nor the "
          "reduction's result {}",
          ctx.describe(n), shape_str(r.shape), shape_str(a.iteration), shape_str(reduced)));
    a.recomputed += elements - r.elements();
  }
  LaunchConfig& launch = a.group.launch;
  const int cooperative_sms =
      ctx.device.cooperative_sm_count > 0 ? ctx.device.cooperative_sm_count : ctx.device.sm_count;
  int64_t resident = int64_t{cooperative_sms} * cooperative_blocks_per_sm(ctx.device, kBlock);
  launch.block = {kBlock, 1, 1};
  launch.grid = {std::clamp<int64_t>((elements + kBlock - 1) / kBlock, 1, resident), 1, 1};
  launch.cooperative = true;
  launch.min_blocks_per_sm = (launch.grid[0] + cooperative_sms - 1) / cooperative_sms;
  // Each block's partial per column, then the finished column values: (blocks + 1) rows of
  // accumulators (fp32 for float32 inputs; 8 bytes covers the double and 64-bit integer ones).
  const int64_t accumulator_bytes =
      g.tensor(g.nodes[reduction].inputs[0]).dtype == DType::Float32 ? 4 : 8;
  a.scratch_bytes = (launch.grid[0] + 1) * a.row_length * accumulator_bytes;
  if (a.scratch_bytes > ctx.device.max_global_scratch)
    return FusionDecision::no(fmt::format("the column reduction's partial results take {} MiB of "
                                          "scratch, more than the {} MiB allowed",
                                          a.scratch_bytes >> 20,
                                          ctx.device.max_global_scratch >> 20));
  a.registers = kBaseRegisters + kRegistersPerNode * static_cast<int64_t>(a.nodes.size());
  a.kind = GroupKind::Kernel;
  a.scheme = StitchScheme::Global;
  a.group.mapping = ThreadMapping::Flat;
  return FusionDecision::ok();
}

// Local around one window op: pointwise producers of its data, evaluated again at every tap
// (their values never leave the kernel), the window op, and pointwise consumers of its result
// evaluated per output element. The iteration space is the window op's output.
FusionDecision analyze_window(const FusionContext& ctx, GroupAnalysis& a) {
  const Graph& g = ctx.graph;
  int32_t window = -1;
  for (int32_t n : a.nodes) {
    NodeClass c = ctx.node_class[n];
    if (c == NodeClass::Pointwise) continue;
    if (c != NodeClass::Window)
      return FusionDecision::no(fmt::format("{} {}; a window op's group holds only pointwise "
                                            "ops besides it",
                                            ctx.describe(n), class_sentence(c)));
    if (window >= 0)
      return FusionDecision::no(fmt::format("{} and {} are two window ops in one group",
                                            ctx.describe(window), ctx.describe(n)));
    window = n;
  }
  const Node& w = g.nodes[window];
  const Shape& in = g.tensor(w.inputs[0]).shape;
  a.iteration = g.tensor(w.outputs[0]).shape;
  const int64_t elements = shape_elements(a.iteration);
  // Taps per window: the filter's spatial size for a Conv, kernel_shape for a pool.
  int64_t taps = 1;
  if (w.op == OpKind::Conv) {
    const Shape& filter = g.tensor(w.inputs[1]).shape;
    for (size_t d = 2; d < filter.size(); ++d)
      taps *= filter[d];
  } else {
    for (int64_t k : NodeContext(g, w).attr_ints("kernel_shape", {}))
      taps *= k;
  }
  for (size_t i = 1; i < w.inputs.size(); ++i)
    if (w.inputs[i] != kNoTensor && contains(a.nodes, ctx.producer[w.inputs[i]]))
      return FusionDecision::no(fmt::format("{} reads its input {} from inside the group; only its "
                                            "data may come from there",
                                            ctx.describe(window), i));
  for (int32_t n : a.nodes) {
    if (n == window) continue;
    const Tensor& r = g.tensor(g.nodes[n].outputs[0]);
    if (ctx.ancestors[window].test(n)) {
      // A producer: recomputed at each tap, so nothing after the window may read it.
      for (TensorId t : g.nodes[n].outputs) {
        if (t == kNoTensor) continue;
        bool inside = !ctx.graph_output[t];
        for (int32_t c : ctx.consumers[t])
          inside = inside && contains(a.nodes, c) &&
                   (c == window ? g.nodes[c].inputs[0] == t : ctx.ancestors[window].test(c));
        if (!inside)
          return FusionDecision::no(fmt::format(
              "{}'s result '{}' is read besides the window's data; the group recomputes it at "
              "every tap and never writes it",
              ctx.describe(n), g.tensor(t).name));
      }
      if (!broadcasts_to(r.shape, in))
        return FusionDecision::no(fmt::format("{}'s result {} does not broadcast to the window's "
                                              "input {}",
                                              ctx.describe(n), shape_str(r.shape), shape_str(in)));
      a.recomputed += std::max<int64_t>(0, elements * taps - r.elements());
    } else if (ctx.descendants[window].test(n)) {
      if (!broadcasts_to(r.shape, a.iteration))
        return FusionDecision::no(fmt::format("{}'s result {} does not broadcast to the window's "
                                              "output {}",
                                              ctx.describe(n), shape_str(r.shape),
                                              shape_str(a.iteration)));
      a.recomputed += elements - r.elements();
    } else {
      return FusionDecision::no(fmt::format("{} is neither a producer nor a consumer of {}",
                                            ctx.describe(n), ctx.describe(window)));
    }
  }
  for (TensorId t : a.outputs)
    if (g.tensor(t).shape != a.iteration)
      return FusionDecision::no(fmt::format("the group writes '{}' {}, not of the window's output "
                                            "shape {}",
                                            g.tensor(t).name, shape_str(g.tensor(t).shape),
                                            shape_str(a.iteration)));
  a.registers = kBaseRegisters + kRegistersPerNode * static_cast<int64_t>(a.nodes.size());
  if (FusionDecision d = fits_registers(ctx, a); !d) return d;
  a.kind = GroupKind::Kernel;
  a.scheme = StitchScheme::Local;
  a.group.mapping = ThreadMapping::Flat;
  a.group.launch = flat_launch(elements, 1, ctx.device);
  return FusionDecision::ok();
}

// The other operand of a two-operand Add of `chained` and something else, or kNoTensor.
TensorId addend_besides(const Node& node, TensorId chained) {
  if (node.op != OpKind::Add || node.inputs.size() != 2) return kNoTensor;
  const TensorId other = node.inputs[0] == chained ? node.inputs[1] : node.inputs[0];
  return other == chained ? kNoTensor : other;
}

// An epilogue is a chain: `prev`'s result is read by `next` alone (and is no graph output),
// so the library call never has to write it.
FusionDecision epilogue_link(const FusionContext& ctx, int32_t prev, int32_t next) {
  const TensorId chained = ctx.graph.nodes[prev].outputs[0];
  if (ctx.consumers[chained].size() == 1 && !ctx.graph_output[chained] &&
      ctx.consumers[chained][0] == next)
    return FusionDecision::ok();
  return FusionDecision::no(fmt::format("the epilogue must be a chain: {}'s result is read "
                                        "elsewhere than by {}",
                                        ctx.describe(prev), ctx.describe(next)));
}

// GemmLibrary: the MatMul/Gemm and a chain of epilogue nodes cuBLASLt applies.
FusionDecision analyze_gemm(const FusionContext& ctx, GroupAnalysis& a) {
  const Graph& g = ctx.graph;
  int32_t gemm = a.nodes.front();
  if (ctx.node_class[gemm] != NodeClass::Gemm)
    return FusionDecision::no(fmt::format("{} comes before the matrix product in the group; only "
                                          "its consumers can be epilogue nodes",
                                          ctx.describe(gemm)));
  const Shape& d = g.tensor(g.nodes[gemm].outputs[0]).shape;
  bool bias = false, residual = false, activation = false;
  for (size_t i = 1; i < a.nodes.size(); ++i) {
    int32_t n = a.nodes[i], prev = a.nodes[i - 1];
    const Node& node = g.nodes[n];
    TensorId chained = g.nodes[prev].outputs[0];
    if (FusionDecision d = epilogue_link(ctx, prev, n); !d) return d;
    if (activation)
      return FusionDecision::no(
          fmt::format("{} follows the epilogue's activation; cuBLASLt applies "
                      "the activation last",
                      ctx.describe(n)));
    if (g.tensor(node.outputs[0]).shape != d)
      return FusionDecision::no(
          fmt::format("{} changes the product's shape {}", ctx.describe(n), shape_str(d)));
    if (cublaslt_activation(node)) {
      activation = true;
      continue;
    }
    // A two-operand add of the chained value and a bias row or a residual of the full shape.
    const TensorId other = addend_besides(node, chained);
    if (other == kNoTensor)
      return FusionDecision::no(
          fmt::format("{} is not a cuBLASLt epilogue (bias add, residual add, "
                      "Relu, Gelu)",
                      ctx.describe(n)));
    const Shape& s = g.tensor(other).shape;
    if (s == d && !residual) {
      residual = true;
    } else if (!bias && !d.empty() && squeezed(s) == Shape{d.back()} && broadcasts_to(s, d)) {
      bias = true;
    } else {
      return FusionDecision::no(
          fmt::format("{} adds '{}' {}, neither a bias row of {} nor a second "
                      "residual of {}",
                      ctx.describe(n), g.tensor(other).name, shape_str(s), d.back(), shape_str(d)));
    }
  }
  a.kind = GroupKind::GemmLibrary;
  a.epilogue_nodes = static_cast<int>(a.nodes.size()) - 1;
  a.group = single_node_group(g, gemm, ctx.device);
  return FusionDecision::ok();
}

// ConvLibrary: a Conv and the epilogue cuDNN's fused convolution applies after its bias: an
// add of a residual of the output's shape, then a Relu (either may be missing).
FusionDecision analyze_conv(const FusionContext& ctx, GroupAnalysis& a) {
  const Graph& g = ctx.graph;
  const int32_t conv = a.nodes.front();
  if (ctx.node_class[conv] != NodeClass::Conv)
    return FusionDecision::no(fmt::format("{} comes before the convolution in the group; only its "
                                          "consumers can be epilogue nodes",
                                          ctx.describe(conv)));
  const Shape& y = g.tensor(g.nodes[conv].outputs[0]).shape;
  bool residual = false, relu = false;
  for (size_t i = 1; i < a.nodes.size(); ++i) {
    const int32_t n = a.nodes[i], prev = a.nodes[i - 1];
    const Node& node = g.nodes[n];
    const TensorId chained = g.nodes[prev].outputs[0];
    if (FusionDecision d = epilogue_link(ctx, prev, n); !d) return d;
    if (relu)
      return FusionDecision::no(fmt::format("{} follows the epilogue's Relu; cuDNN applies the "
                                            "activation last",
                                            ctx.describe(n)));
    if (node.op == OpKind::Relu) {
      relu = true;
      continue;
    }
    const TensorId other = addend_besides(node, chained);
    if (other == kNoTensor || residual)
      return FusionDecision::no(fmt::format("{} is not a cuDNN convolution epilogue (one residual "
                                            "add, then Relu)",
                                            ctx.describe(n)));
    const Tensor& z = g.tensor(other);
    if (z.shape != y || z.dtype != DType::Float32)
      return FusionDecision::no(fmt::format("{} adds '{}' {} {}, not a float32 residual of the "
                                            "convolution's shape {}",
                                            ctx.describe(n), z.name, dtype_name(z.dtype),
                                            shape_str(z.shape), shape_str(y)));
    residual = true;
  }
  a.kind = GroupKind::ConvLibrary;
  a.epilogue_nodes = static_cast<int>(a.nodes.size()) - 1;
  a.group = single_node_group(g, conv, ctx.device);
  return FusionDecision::ok();
}

// Global around a matrix-vector product: a Regional head (row ops and their pointwise
// producers) whose per-row values are, through views, the vector x of a one-row float32
// MatMul/Gemm (K = the head's rows), then pointwise consumers of its result y. One cooperative
// launch: the head with its row mapping, x into global scratch, a grid-wide barrier, then the
// product (a warp per output when B's rows are the outputs, else a thread per output) and the
// consumers per output element. A product this small (one row) is memory-bound: it streams B
// once, and fused it saves the launch and the round trip of x (e.g. ResNet's classifier after
// its global average pool).
FusionDecision analyze_row_gemv(const FusionContext& ctx, GroupAnalysis& a) {
  const Graph& g = ctx.graph;
  int32_t gemm = -1;
  for (int32_t n : a.nodes)
    if (ctx.node_class[n] == NodeClass::Gemm) gemm = n;
  MatrixVector mv;
  if (FusionDecision d = matrix_vector(g, g.nodes[gemm], mv); !d)
    return FusionDecision::no(
        fmt::format("{} follows row ops but {}", ctx.describe(gemm), d.reason));
  std::vector<int32_t> head, views, tail;
  for (int32_t n : a.nodes) {
    if (n == gemm) continue;
    if (ctx.ancestors[gemm].test(n)) {
      (ctx.node_class[n] == NodeClass::View ? views : head).push_back(n);
    } else if (ctx.descendants[gemm].test(n)) {
      if (ctx.node_class[n] != NodeClass::Pointwise)
        return FusionDecision::no(fmt::format("{} {} after the matrix-vector product {}; only "
                                              "pointwise consumers may follow it",
                                              ctx.describe(n), class_sentence(ctx.node_class[n]),
                                              ctx.describe(gemm)));
      tail.push_back(n);
    } else {
      return FusionDecision::no(fmt::format("{} is neither before nor after the matrix-vector "
                                            "product {}",
                                            ctx.describe(n), ctx.describe(gemm)));
    }
  }
  // The vector: back from the product through the views, each read only by the next.
  TensorId x = mv.x;
  size_t views_on_path = 0;
  for (int32_t p = ctx.producer[x];
       p >= 0 && ctx.node_class[p] == NodeClass::View && contains(a.nodes, p);
       p = ctx.producer[x]) {
    if (ctx.graph_output[x] || ctx.consumers[x].size() != 1)
      return FusionDecision::no(fmt::format("the view {}'s result '{}' is read besides the "
                                            "product; the group never writes it",
                                            ctx.describe(p), g.tensor(x).name));
    x = g.nodes[p].inputs[0];
    ++views_on_path;
  }
  if (views_on_path != views.size())
    return FusionDecision::no(
        fmt::format("a view in the group is not on the path of {}'s vector", ctx.describe(gemm)));
  if (ctx.producer[x] < 0 || !contains(head, ctx.producer[x]))
    return FusionDecision::no(fmt::format("{}'s vector '{}' is not computed by the group's row ops",
                                          ctx.describe(gemm), g.tensor(x).name));
  for (TensorId t : {mv.b, mv.c})
    if (t != kNoTensor && contains(a.nodes, ctx.producer[t]))
      return FusionDecision::no(fmt::format("{} reads '{}' from inside the group; only its vector "
                                            "may come from there",
                                            ctx.describe(gemm), g.tensor(t).name));
  // Phase 1: the head is a Regional group of its own whose per-row values are x.
  for (int32_t n : head)
    if (ctx.node_class[n] != NodeClass::Pointwise && ctx.node_class[n] != NodeClass::RowOp)
      return FusionDecision::no(fmt::format("{} {}; only row ops and pointwise ops may come before "
                                            "the matrix-vector product",
                                            ctx.describe(n), class_sentence(ctx.node_class[n])));
  GroupAnalysis h;
  h.nodes = head;
  boundary(ctx, head, h);
  bool row_op = false;
  for (int32_t n : head)
    row_op = row_op || ctx.node_class[n] == NodeClass::RowOp;
  if (!row_op)
    return FusionDecision::no(fmt::format("no row op computes {}'s vector", ctx.describe(gemm)));
  if (FusionDecision d = analyze_regional(ctx, h); !d)
    return FusionDecision::no("the row ops before the matrix-vector product: " + d.reason);
  if (g.tensor(x).dtype != DType::Float32 || g.tensor(x).elements() != h.rows || h.rows != mv.k)
    return FusionDecision::no(fmt::format("the vector '{}' {} of {} is not the {} per-row values "
                                          "of the row ops",
                                          g.tensor(x).name, shape_str(g.tensor(x).shape),
                                          ctx.describe(gemm), h.rows));
  // Phase 2: the consumers, per element of y.
  const Shape& y = g.tensor(g.nodes[gemm].outputs[0]).shape;
  for (int32_t n : tail) {
    const Tensor& r = g.tensor(g.nodes[n].outputs[0]);
    if (!broadcasts_to(r.shape, y))
      return FusionDecision::no(fmt::format("{}'s result {} does not broadcast to the product's {}",
                                            ctx.describe(n), shape_str(r.shape), shape_str(y)));
    for (TensorId t : value_operands(g.nodes[n]))
      if (contains(head, ctx.producer[t]) || contains(views, ctx.producer[t]))
        return FusionDecision::no(fmt::format("{} reads '{}' of the row ops' phase; the consumers "
                                              "see only the product's phase",
                                              ctx.describe(n), g.tensor(t).name));
    a.recomputed += shape_elements(y) - r.elements();
  }
  for (TensorId t : a.outputs) {
    const int32_t p = ctx.producer[t];
    if ((p == gemm || contains(tail, p)) && g.tensor(t).shape != y)
      return FusionDecision::no(
          fmt::format("the group writes '{}' {}, not of the product's shape {}", g.tensor(t).name,
                      shape_str(g.tensor(t).shape), shape_str(y)));
  }
  a.rows = h.rows;
  a.row_length = h.row_length;
  a.cached_rows = h.cached_rows;
  a.shared_bytes = h.shared_bytes;
  a.iteration = h.iteration;
  a.recomputed += h.recomputed;
  a.registers = h.registers + kRegistersPerNode * static_cast<int64_t>(tail.size() + 2);
  if (FusionDecision d = fits_registers(ctx, a); !d) return d;
  a.group.mapping = h.group.mapping;
  LaunchConfig& launch = a.group.launch;
  launch = h.group.launch;
  // Every block resident: the SMs' thread slots and registers (cooperative_blocks_per_sm), and
  // their shared memory when the head keeps rows there.
  const int64_t block = launch.block[0];
  const int cooperative_sms =
      ctx.device.cooperative_sm_count > 0 ? ctx.device.cooperative_sm_count : ctx.device.sm_count;
  int64_t per_sm = cooperative_blocks_per_sm(ctx.device, block);
  if (launch.dynamic_shared_bytes > 0)
    per_sm = std::min(per_sm, std::max<int64_t>(1, ctx.device.max_shared_per_block /
                                                       launch.dynamic_shared_bytes));
  const int64_t resident = int64_t{cooperative_sms} * per_sm;
  const int64_t outputs_per_block = mv.b_rows_are_outputs ? block / 32 : block;
  const int64_t product_blocks = (mv.n + outputs_per_block - 1) / outputs_per_block;
  launch.grid = {std::clamp<int64_t>(std::max(launch.grid[0], product_blocks), 1, resident), 1, 1};
  launch.cooperative = true;
  launch.min_blocks_per_sm = (launch.grid[0] + cooperative_sms - 1) / cooperative_sms;
  // B's rows stream as 16-byte vectors when they are the outputs' and K is a multiple of 4 (a
  // constant B sits 16-byte aligned in the weights).
  launch.vector_width =
      mv.b_rows_are_outputs && mv.k % 4 == 0 && g.tensor(mv.b).is_constant() ? 4 : 1;
  a.scratch_bytes = mv.k * 4; // x, as fp32
  a.kind = GroupKind::Kernel;
  a.scheme = StitchScheme::Global;
  return FusionDecision::ok();
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

// Independent: unrelated parts, each a Local set or one node a single-op kernel runs.
FusionDecision analyze_independent(const FusionContext& ctx, GroupAnalysis& a,
                                   std::vector<std::vector<int32_t>> parts) {
  int64_t grid = 0;
  for (const std::vector<int32_t>& part : parts) {
    GroupAnalysis p;
    p.nodes = part;
    boundary(ctx, part, p);
    if (part.size() == 1) {
      if (ctx.node_class[part[0]] == NodeClass::Window)
        return FusionDecision::no(fmt::format("{} is a window op; it cannot be an independent part",
                                              ctx.describe(part[0])));
      p.group = single_node_group(ctx.graph, part[0], ctx.device);
      if (p.group.kind != GroupKind::Kernel || p.group.launch.block[0] != kBlock ||
          p.group.launch.block[1] != 1 || p.group.launch.cooperative)
        return FusionDecision::no(fmt::format("{} needs a launch of its own; it cannot be an "
                                              "independent part",
                                              ctx.describe(part[0])));
    } else if (FusionDecision d = analyze_local(ctx, p); !d) {
      return FusionDecision::no("as independent parts: " + d.reason);
    }
    // The part keeps the blocks its own kernel would have.
    const int64_t blocks = std::max<int64_t>(
        p.group.launch.grid[0] * p.group.launch.grid[1] * p.group.launch.grid[2], 1);
    a.group.part_blocks.push_back(blocks);
    grid += blocks;
    a.recomputed += p.recomputed;
    a.registers = std::max(a.registers, p.registers);
  }
  a.parts = std::move(parts);
  a.kind = GroupKind::Kernel;
  a.scheme = StitchScheme::Independent;
  a.group.mapping = ThreadMapping::Flat;
  a.group.launch.block = {kBlock, 1, 1};
  a.group.launch.grid = {grid, 1, 1};
  return FusionDecision::ok();
}

} // namespace

bool is_pointwise(OpKind op) {
  OpCategory c = op_category(op);
  if (c != OpCategory::Elementwise && c != OpCategory::Broadcast) return false;
  return !op_device_function(op).empty() || op == OpKind::Cast || op == OpKind::CastLike;
}

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
                             const std::vector<std::string>& no_fuse)
    : graph(g), device(d) {
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

FusionDecision analyze_group(const FusionContext& ctx, const std::vector<int32_t>& nodes,
                             GroupAnalysis& a) {
  a = GroupAnalysis{};
  a.nodes = nodes;
  boundary(ctx, nodes, a);
  if (nodes.size() == 1) {
    a.group = single_node_group(ctx.graph, nodes[0], ctx.device);
    a.kind = a.group.kind;
    a.scheme = StitchScheme::Local;
    a.iteration = ctx.graph.tensor(ctx.graph.nodes[nodes[0]].outputs[0]).shape;
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
    return FusionDecision::no(
        fmt::format("the group is not convex: a path leaves it and comes back "
                    "through {}",
                    ctx.describe(x)));
  bool gemm = false, column = false, row = false, window = false, conv = false;
  for (int32_t n : nodes) {
    conv = conv || ctx.node_class[n] == NodeClass::Conv;
    gemm = gemm || ctx.node_class[n] == NodeClass::Gemm;
    window = window || ctx.node_class[n] == NodeClass::Window;
    column = column || ctx.node_class[n] == NodeClass::ColumnReduction;
    row = row || ctx.node_class[n] == NodeClass::RowOp;
  }
  if (gemm) {
    int32_t first = -1;
    for (int32_t n : nodes) {
      if (ctx.node_class[n] != NodeClass::Gemm) continue;
      if (first >= 0)
        return FusionDecision::no(fmt::format("{} and {} are two matrix products in one group",
                                              ctx.describe(first), ctx.describe(n)));
      first = n;
    }
    return row ? analyze_row_gemv(ctx, a) : analyze_gemm(ctx, a);
  }
  if (conv) {
    for (int32_t n : nodes)
      if (n != nodes.front() && ctx.node_class[n] == NodeClass::Conv)
        return FusionDecision::no(fmt::format("{} and {} are two convolutions in one group",
                                              ctx.describe(nodes.front()), ctx.describe(n)));
    return analyze_conv(ctx, a);
  }
  for (int32_t n : nodes)
    if (ctx.node_class[n] == NodeClass::View)
      return FusionDecision::no(
          fmt::format("{} is a view; views fuse only between row ops' per-row "
                      "values and the matrix-vector product reading them",
                      ctx.describe(n)));
  FusionDecision d = window   ? analyze_window(ctx, a)
                     : column ? analyze_global(ctx, a)
                     : row    ? analyze_regional(ctx, a)
                              : analyze_local(ctx, a);
  if (d) return d;
  std::vector<std::vector<int32_t>> parts = components(ctx, nodes);
  if (parts.size() < 2) return d;
  GroupAnalysis independent;
  independent.nodes = nodes;
  independent.inputs = a.inputs;
  independent.outputs = a.outputs;
  FusionDecision di = analyze_independent(ctx, independent, std::move(parts));
  if (!di) return FusionDecision::no(d.reason + "; " + di.reason);
  a = std::move(independent);
  return di;
}

} // namespace stitch
