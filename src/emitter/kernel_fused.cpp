// Fused kernels: dispatch by stitching scheme, the shared signature and value scopes, and the
// Local scheme: every node pointwise, one flat grid-stride loop over the shape of the outputs;
// each element evaluates the chain in registers, reading each input through its broadcast
// index (a smaller intermediate is recomputed per element) and writing every output.
//
//   for (int64_t i = first; i < n; i += stride) {
//     ... coordinates c0..cR-1 of i, when an input is broadcast ...
//     const float x0 = in0[i];              // loads
//     const float t0 = stitch::ops::mul(x0, 0.125f);
//     const float t1 = stitch::ops::add(t0, x1);
//     out0[i] = t1;                          // stores
//   }
//
// With the plan's vector_width 4 (every input the full shape or one element, every access 4
// bytes), a 16-byte vector body evaluates the chain once per lane, and a scalar loop does the
// tail.
#include "emitter/kernel_fused.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

#include "emitter/kernels.h"
#include "emitter/pointwise_expression.h"
#include "emitter/row_kernel.h"
#include "graph/error.h"

namespace stitch {

void refuse_fused(const GroupEmitContext& ctx, const std::string& reason) {
  ctx.unsupported(fmt::format("fused group {} ({}): {}", ctx.group().id,
                              scheme_name(ctx.group().scheme), reason));
}

std::string fused_kernel_name(const GroupEmitContext& ctx) {
  std::string scheme(scheme_name(ctx.group().scheme));
  for (char& c : scheme)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return fmt::format("stitch_g{}_{}", ctx.group().id, scheme);
}

std::vector<bool> produced_by(const Graph& graph, const std::vector<int32_t>& nodes) {
  std::vector<bool> produced(graph.tensors.size(), false);
  for (int32_t n : nodes)
    for (TensorId t : graph.nodes[n].outputs)
      if (t != kNoTensor) produced[t] = true;
  return produced;
}

namespace {

std::string describe_tensor(const Graph& g, TensorId t) {
  const Tensor& x = g.tensor(t);
  return fmt::format("'{}' {}{}", x.name, dtype_name(x.dtype), shape_to_string(x.shape));
}

bool is_scalar_float_constant(const Tensor& t) {
  return t.is_constant() && t.elements() == 1 &&
         (t.dtype == DType::Float32 || t.dtype == DType::Float64) && t.view_of == kNoTensor;
}

std::string constant_literal(const Tensor& t) {
  double value = 0;
  if (t.dtype == DType::Float32) {
    float f = 0;
    std::memcpy(&f, t.constant->bytes.data(), sizeof f);
    value = f;
  } else {
    std::memcpy(&value, t.constant->bytes.data(), sizeof value);
  }
  return float_literal(value, t.dtype);
}

} // namespace

std::vector<TensorId> fused_value_inputs(const Node& node) {
  std::vector<TensorId> inputs = is_pointwise(node) ? pointwise_operands(node) : node.inputs;
  size_t values = inputs.size();
  if (op_category(node.op) == OpCategory::Reduction) values = 1; // the data, not the axes
  inputs.resize(std::min(values, inputs.size()));
  std::erase(inputs, kNoTensor);
  return inputs;
}

FusedSignature fused_signature(const GroupEmitContext& ctx, const std::vector<int32_t>& nodes) {
  const Graph& g = ctx.graph();
  const FusionGroup& group = ctx.group();
  const std::vector<bool> produced = produced_by(g, nodes);
  FusedSignature sig;
  auto add_input = [&](TensorId t) {
    if (sig.inputs.count(t) || sig.literals.count(t)) return;
    if (produced[t]) {
      STITCH_INTERNAL_CHECK(
          std::find(group.inputs.begin(), group.inputs.end(), t) == group.inputs.end(),
          "group {}: tensor '{}' is both an input and produced inside", group.id, g.tensor(t).name);
      return;
    }
    if (is_scalar_float_constant(g.tensor(t))) {
      sig.literals[t] = constant_literal(g.tensor(t));
      return;
    }
    std::string name = fmt::format("in{}", sig.inputs.size());
    sig.inputs[t] = name;
    sig.params.push_back(
        fmt::format("const {}* __restrict__ {}", ctype(g.tensor(t).dtype, ctx), name));
    sig.args.push_back(ctx.pointer(t, false));
    sig.legend.push_back(fmt::format("{}: {}", name, describe_tensor(g, t)));
  };
  // In the plan's order of inputs, then any constant the plan left out; shape-only inputs
  // (Reduce* axes, Expand's shape) are not read by the kernel.
  std::set<TensorId> values;
  for (int32_t n : nodes)
    for (TensorId t : fused_value_inputs(g.nodes[n]))
      values.insert(t);
  for (TensorId t : group.inputs)
    if (values.count(t)) add_input(t);
  for (int32_t n : nodes)
    for (TensorId t : fused_value_inputs(g.nodes[n]))
      add_input(t);
  for (TensorId t : group.outputs) {
    if (!produced[t]) continue; // another part's output (Independent)
    std::string name = fmt::format("out{}", sig.outputs.size());
    sig.outputs[t] = name;
    sig.params.push_back(fmt::format("{}* __restrict__ {}", ctype(g.tensor(t).dtype, ctx), name));
    sig.args.push_back(ctx.pointer(t, true));
    sig.legend.push_back(fmt::format("{}: {}", name, describe_tensor(g, t)));
  }
  return sig;
}

void fused_kernel_banner(const GroupEmitContext& ctx, const FusedSignature& sig,
                         const std::vector<int32_t>& nodes, const std::string& summary,
                         CodeWriter& out) {
  out.comment(summary);
  for (int32_t n : nodes)
    out.comment("  " + describe_node(ctx.graph(), ctx.graph().nodes[n]));
  for (const std::string& line : sig.legend)
    out.comment("  " + line);
}

ValueScope::ValueScope(const GroupEmitContext& ctx, const std::vector<int32_t>& nodes,
                       CodeWriter& out, Leaf leaf)
    : ctx_(ctx), out_(out), leaf_(std::move(leaf)) {
  for (int32_t n : nodes) {
    const Node& node = ctx.graph().nodes[n];
    if (is_pointwise(node)) pointwise_producer_[node.outputs[0]] = n;
  }
}

std::string ValueScope::value(TensorId t) {
  if (auto it = defined_.find(t); it != defined_.end()) return it->second;
  auto producer = pointwise_producer_.find(t);
  if (producer == pointwise_producer_.end()) {
    std::string leaf = leaf_(t);
    defined_[t] = leaf;
    return leaf;
  }
  const Node& node = ctx_.graph().nodes[producer->second];
  std::vector<std::string> values;
  for (TensorId operand : pointwise_operands(node))
    values.push_back(operand == kNoTensor ? std::string() : value(operand));
  std::string name = fresh("t");
  out_.comment(fmt::format("{} = '{}' ({})", name, node.name, op_name(node.op)));
  out_.linef("const {} {} = {};", ctype(ctx_.tensor(t).dtype, ctx_), name,
             pointwise_expression(ctx_, node, values));
  defined_[t] = name;
  return name;
}

// ---- Local ----

namespace {

// The iteration shape of a Local body: the shape of every output it writes. Every value of the
// chain must broadcast to it.
Shape local_shape(const GroupEmitContext& ctx, const FusedSignature& sig,
                  const std::vector<int32_t>& nodes) {
  const Graph& g = ctx.graph();
  const std::vector<bool> produced = produced_by(g, nodes);
  std::vector<TensorId> outputs;
  for (const auto& [t, name] : sig.outputs)
    if (produced[t]) outputs.push_back(t);
  if (outputs.empty()) refuse_fused(ctx, "a Local part writes no output");
  const Shape& shape = g.tensor(outputs[0]).shape;
  for (TensorId t : outputs)
    if (g.tensor(t).shape != shape)
      refuse_fused(ctx, fmt::format("Local outputs of different shapes ({} and {})",
                                    shape_to_string(shape), shape_to_string(g.tensor(t).shape)));
  auto broadcasts = [&](const Shape& s) {
    if (s.size() > shape.size()) return false;
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] != 1 && s[d] != shape[shape.size() - s.size() + d]) return false;
    return true;
  };
  for (int32_t n : nodes) {
    const Node& node = g.nodes[n];
    if (!is_pointwise(node))
      refuse_fused(ctx, fmt::format("node '{}' ({}) is not pointwise; a Local group holds only "
                                    "pointwise nodes",
                                    node.name, op_name(node.op)));
    for (TensorId t : fused_value_inputs(node))
      if (!broadcasts(g.tensor(t).shape))
        refuse_fused(ctx, fmt::format("'{}' {} does not broadcast to the iteration shape {}",
                                      g.tensor(t).name, shape_to_string(g.tensor(t).shape),
                                      shape_to_string(shape)));
  }
  return shape;
}

} // namespace

void emit_local_body(const GroupEmitContext& ctx, const FusedSignature& sig,
                     const std::vector<int32_t>& nodes, const BlockRange& blocks, CodeWriter& out) {
  const Graph& g = ctx.graph();
  const Shape shape = local_shape(ctx, sig, nodes);
  const int64_t n = shape_elements(shape);
  const std::vector<bool> produced = produced_by(g, nodes);
  // Inputs this body reads (an Independent kernel's signature holds other parts' too).
  std::vector<TensorId> reads;
  for (int32_t node : nodes)
    for (TensorId t : fused_value_inputs(g.nodes[node]))
      if (!produced[t] && sig.inputs.count(t) &&
          std::find(reads.begin(), reads.end(), t) == reads.end())
        reads.push_back(t);
  std::vector<std::pair<TensorId, std::string>> writes;
  for (const auto& [t, name] : sig.outputs)
    if (produced[t]) writes.emplace_back(t, name);

  out.linef("const int64_t n = {};  // elements of {}", n, shape_to_string(shape));
  out.linef("const int64_t first = int64_t({}) * blockDim.x + threadIdx.x;", blocks.index);
  out.linef("const int64_t stride = int64_t({}) * blockDim.x;", blocks.count);
  auto literal_or = [&](TensorId t, const std::function<std::string()>& load) {
    auto lit = sig.literals.find(t);
    return lit != sig.literals.end() ? lit->second : load();
  };

  std::string tail_start = "0";
  if (ctx.group().launch.vector_width == 4) {
    // 16-byte vectors: every input is the full shape or one element, every access 4 bytes.
    for (TensorId t : reads) {
      const Tensor& x = g.tensor(t);
      STITCH_INTERNAL_CHECK(dtype_size(x.dtype) == 4 && (x.shape == shape || x.elements() == 1),
                            "group {}: vector width 4 with input '{}' {} (iteration shape {})",
                            ctx.group().id, x.name, shape_to_string(x.shape),
                            shape_to_string(shape));
    }
    for (const auto& [t, name] : writes)
      STITCH_INTERNAL_CHECK(dtype_size(g.tensor(t).dtype) == 4,
                            "group {}: vector width 4 with "
                            "output '{}' of {}-byte elements",
                            ctx.group().id, g.tensor(t).name, dtype_size(g.tensor(t).dtype));
    out.comment("16-byte vectors; the loop after this one does the last n % 4 elements.");
    out.open("for (int64_t v = first; v < n / 4; v += stride)");
    std::map<TensorId, std::string> loaded;
    for (TensorId t : reads) {
      const Tensor& x = g.tensor(t);
      const std::string& param = sig.inputs.at(t);
      std::string name = "x" + param.substr(2);
      if (x.elements() == 1) {
        out.linef("const {} {} = {}[0];", ctype(x.dtype, ctx), name, param);
      } else {
        out.linef("const {0} {1} = reinterpret_cast<const {0}*>({2})[v];",
                  vector4_type(x.dtype, ctx), name, param);
        name += ".{lane}";
      }
      loaded[t] = name;
    }
    for (const auto& [t, name] : writes)
      out.linef("{} r{};", vector4_type(g.tensor(t).dtype, ctx), name.substr(3));
    for (const char* lane : {"x", "y", "z", "w"}) {
      out.open("");
      ValueScope scope(ctx, nodes, out, [&](TensorId t) {
        return literal_or(
            t, [&] { return fmt::format(fmt::runtime(loaded.at(t)), fmt::arg("lane", lane)); });
      });
      for (const auto& [t, name] : writes) {
        std::string v = scope.value(t);
        out.linef("r{}.{} = {};", name.substr(3), lane, v);
      }
      out.close();
    }
    for (const auto& [t, name] : writes)
      out.linef("reinterpret_cast<decltype(r{0})*>({1})[v] = r{0};", name.substr(3), name);
    out.close();
    tail_start = "n / 4 * 4";
  }

  out.open(fmt::format("for (int64_t i = {}{}; i < n; i += stride)",
                       tail_start == "0" ? "" : tail_start + " + ", "first"));
  bool coordinates = false;
  for (TensorId t : reads)
    coordinates |= needs_coordinates(g.tensor(t).shape, shape);
  if (coordinates) emit_coordinates(out, shape);
  ValueScope scope(ctx, nodes, out, [&](TensorId t) {
    return literal_or(t, [&] {
      const std::string& param = sig.inputs.at(t);
      std::string name = "x" + param.substr(2);
      out.linef("const {} {} = {}[{}];", ctype(g.tensor(t).dtype, ctx), name, param,
                broadcast_index(g.tensor(t).shape, shape));
      return name;
    });
  });
  for (const auto& [t, name] : writes)
    out.linef("{}[i] = {};", name, scope.value(t));
  out.close();
}

namespace {

void emit_fused_local(const GroupEmitContext& ctx, CodeWriter& out) {
  const FusionGroup& group = ctx.group();
  if (group.mapping != ThreadMapping::Flat)
    refuse_fused(ctx, fmt::format("a Local group runs with the flat mapping, not {}",
                                  mapping_name(group.mapping)));
  FusedSignature sig = fused_signature(ctx, group.nodes);
  const std::string kernel = fused_kernel_name(ctx);
  fused_kernel_banner(
      ctx, sig, group.nodes,
      fmt::format("Fused group {} (Local): {} pointwise nodes evaluated per element "
                  "in registers.",
                  group.id, group.nodes.size()),
      out);
  out.open(kernel_head(ctx, kernel, sig.params));
  emit_local_body(ctx, sig, group.nodes, BlockRange{}, out);
  out.close();
  out.line();
  emit_launch(ctx, out, kernel, sig.args);
}

} // namespace

bool emit_fused(const GroupEmitContext& ctx, CodeWriter& out) {
  const FusionGroup& group = ctx.group();
  if (group.kind != GroupKind::Kernel) return false;
  if (group.nodes.size() <= 1 && group.parts.empty()) return false;
  switch (group.scheme) {
  case StitchScheme::Local:
    if (has_window_op(ctx.graph(), group.nodes))
      emit_fused_window(ctx, out);
    else
      emit_fused_local(ctx, out);
    break;
  case StitchScheme::Regional:
    emit_fused_regional(ctx, out);
    break;
  case StitchScheme::Independent:
    emit_fused_independent(ctx, out);
    break;
  case StitchScheme::Global:
    if (has_matrix_product(ctx.graph(), group.nodes))
      emit_fused_row_gemv(ctx, out);
    else
      emit_fused_global(ctx, out);
    break;
  }
  return true;
}

} // namespace stitch
