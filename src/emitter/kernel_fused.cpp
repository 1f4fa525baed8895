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
// With a plan's vector width (every input the full shape or one element, every access of one
// size: 4 lanes of 4 bytes or 8 of 2), a 16-byte vector body evaluates the chain once per lane,
// and a scalar loop does the tail.
#include "emitter/kernel_fused.h"

#include "graph/constant.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

#include "emitter/kernels.h"
#include "emitter/pointwise_expression.h"
#include "emitter/row_kernel.h"
#include "graph/error.h"

namespace stitch {

std::string fused_kernel_name(const GroupEmitContext& ctx) {
  std::string scheme(scheme_name(ctx.group().scheme));
  for (char& c : scheme)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return fmt::format("stitch_g{}_{}{}", ctx.group().id, scheme, ctx.variant_suffix());
}

namespace {

std::string describe_tensor(const Graph& g, TensorId t) {
  const Tensor& x = g.tensor(t);
  return fmt::format("'{}' {}{}", x.name, dtype_name(x.dtype), sym_shape_to_string(x.sym_shape()));
}

std::string constant_literal(const Tensor& t) {
  // The one element, exactly (a float16 or bfloat16 value is a float; kernels compute in float).
  return float_literal(constant_as_double(t).at(0),
                       t.dtype == DType::Float64 ? DType::Float64 : DType::Float32);
}

} // namespace

FusedSignature fused_signature(const GroupEmitContext& ctx, const KernelInterface& io) {
  const Graph& g = ctx.graph();
  FusedSignature sig;
  for (TensorId t : io.literals)
    sig.literals[t] = constant_literal(g.tensor(t));
  for (TensorId t : io.reads) {
    std::string name = fmt::format("in{}", sig.inputs.size());
    sig.inputs[t] = name;
    sig.params.push_back(
        fmt::format("const {}* __restrict__ {}", storage_ctype(g.tensor(t).dtype, ctx), name));
    sig.args.push_back(ctx.pointer(t, false));
    sig.legend.push_back(fmt::format("{}: {}", name, describe_tensor(g, t)));
  }
  for (TensorId t : io.writes) {
    std::string name = fmt::format("out{}", sig.outputs.size());
    sig.outputs[t] = name;
    sig.params.push_back(
        fmt::format("{}* __restrict__ {}", storage_ctype(g.tensor(t).dtype, ctx), name));
    sig.args.push_back(ctx.pointer(t, true));
    sig.legend.push_back(fmt::format("{}: {}", name, describe_tensor(g, t)));
  }
  return sig;
}

std::string load_broadcast(const GroupEmitContext& ctx, const FusedSignature& sig, TensorId t,
                           const Shape& against, CodeWriter& out, const std::string& linear,
                           const std::string& coordinate, const SymShape* against_dims) {
  const Graph& g = ctx.graph();
  if (auto literal = sig.literals.find(t); literal != sig.literals.end()) return literal->second;
  auto param = sig.inputs.find(t);
  if (param == sig.inputs.end())
    ctx.spec_error(fmt::format("'{}' is read but not in the kernel's interface", g.tensor(t).name));
  std::string name = "x" + param->second.substr(2);
  const std::string index = tensor_index(
      g, t, against, against_dims ? *against_dims : sym_shape_of(against), linear, coordinate);
  const std::string type = ctype(g.tensor(t).dtype, ctx);
  if (const std::string value = symbolic_value_code(g, t, index, type); !value.empty())
    out.linef("const {} {} = {};  // computed from the symbols", type, name, value);
  else
    out.linef("const {} {} = {}[{}];", type, name, param->second, index);
  return name;
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
    if (op_is_pointwise(node.op)) pointwise_producer_[node.outputs[0]] = n;
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
  for (TensorId operand : value_operands(node))
    values.push_back(operand == kNoTensor ? std::string() : value(operand));
  std::string name = fresh("t");
  out_.comment(fmt::format("{} = '{}' ({})", name, node.name, op_name(node.op)));
  out_.linef("const {} {} = {};", ctype(ctx_.tensor(t).dtype, ctx_), name,
             pointwise_expression(ctx_, node, values));
  defined_[t] = name;
  return name;
}

// ---- Local ----

void emit_local_body(const GroupEmitContext& ctx, const FusedSignature& sig, const LocalSpec& spec,
                     const BlockRange& blocks, CodeWriter& out) {
  if (!spec.moves.empty()) {
    emit_remapped_local_body(ctx, sig, spec, blocks, out);
    return;
  }
  const Graph& g = ctx.graph();
  const Shape& shape = spec.iteration;
  const SymShape dims = spec.iteration_dims.empty() ? sym_shape_of(shape) : spec.iteration_dims;
  const std::vector<TensorId>& reads = spec.io.reads;
  std::vector<std::pair<TensorId, std::string>> writes;
  for (TensorId t : spec.io.writes)
    writes.emplace_back(t, sig.outputs.at(t));

  out.linef("const int64_t n = {};  // elements of {}", element_count_code(g, dims),
            sym_shape_to_string(dims));
  out.linef("const int64_t first = int64_t({}) * blockDim.x + threadIdx.x;", blocks.index);
  out.linef("const int64_t stride = int64_t({}) * blockDim.x;", blocks.count);
  auto literal_or = [&](TensorId t, const std::function<std::string()>& load) {
    auto lit = sig.literals.find(t);
    return lit != sig.literals.end() ? lit->second : load();
  };

  std::string tail_start = "0";
  if (spec.vector_width > 1) {
    // 16-byte vectors: every input is the full shape or one element, all accesses of one size.
    const int width = spec.vector_width;
    for (TensorId t : reads) {
      const Tensor& x = g.tensor(t);
      if (!tensor_is_scalar(g, t) && !tensor_is_whole(g, t, dims))
        ctx.spec_error(fmt::format("vector width {} with input '{}' {} (iteration shape {})", width,
                                   x.name, sym_shape_to_string(x.sym_shape()),
                                   sym_shape_to_string(dims)));
    }
    out.comment(fmt::format(
        "16-byte vectors of {0} elements; the loop after this one does the last n % {0}.", width));
    out.open(fmt::format("for (int64_t v = first; v < n / {}; v += stride)", width));
    // Each read tensor's lane expression, by lane: a scalar's name, or "x0.y".
    std::map<TensorId, std::vector<std::string>> loaded;
    for (TensorId t : reads) {
      const Tensor& x = g.tensor(t);
      const std::string& param = sig.inputs.at(t);
      const std::string name = "x" + param.substr(2);
      if (!tensor_is_whole(g, t, dims)) {
        out.linef("const {} {} = {}[0];", ctype(x.dtype, ctx), name, param);
        loaded[t].assign(width, name);
        continue;
      }
      const VectorAccess access = vector_access(x.dtype, width, ctx);
      out.linef("const {0} {1} = reinterpret_cast<const {0}*>({2})[v];", access.type, name, param);
      for (const std::string& lane : access.lanes)
        loaded[t].push_back(
            access.widen ? fmt::format("static_cast<{}>({}.{})", ctype(x.dtype, ctx), name, lane)
                         : fmt::format("{}.{}", name, lane));
    }
    std::map<TensorId, VectorAccess> stored;
    for (const auto& [t, name] : writes) {
      stored.emplace(t, vector_access(g.tensor(t).dtype, width, ctx));
      out.linef("{} r{};", stored.at(t).type, name.substr(3));
    }
    for (int lane = 0; lane < width; ++lane) {
      out.open("");
      ValueScope scope(ctx, spec.nodes, out, [&](TensorId t) {
        return literal_or(t, [&] { return loaded.at(t)[lane]; });
      });
      for (const auto& [t, name] : writes) {
        std::string v = scope.value(t);
        out.linef("r{}.{} = {};", name.substr(3), stored.at(t).lanes[lane], v);
      }
      out.close();
    }
    for (const auto& [t, name] : writes)
      out.linef("reinterpret_cast<decltype(r{0})*>({1})[v] = r{0};", name.substr(3), name);
    out.close();
    tail_start = fmt::format("n / {0} * {0}", width);
  }

  out.open(fmt::format("for (int64_t i = {}{}; i < n; i += stride)",
                       tail_start == "0" ? "" : tail_start + " + ", "first"));
  bool coordinates = false;
  for (TensorId t : reads)
    coordinates |= tensor_needs_coordinates(g, t, shape, dims);
  if (coordinates) emit_coordinates(out, shape, "i", "c", &dims);
  if (std::any_of(reads.begin(), reads.end(),
                  [&](TensorId t) { return needs_symbolic_coordinates(g, t, dims); }))
    emit_symbolic_coordinates(out, g, dims, "i", "c", ctx.group().launch.index32);
  ValueScope scope(ctx, spec.nodes, out, [&](TensorId t) {
    return load_broadcast(ctx, sig, t, shape, out, "i", "c", &dims);
  });
  for (const auto& [t, name] : writes)
    out.linef("{}[i] = {};", name, scope.value(t));
  out.close();
}

namespace {

void emit_fused_local(const GroupEmitContext& ctx, CodeWriter& out) {
  const FusionGroup& group = ctx.group();
  const LocalSpec& spec = ctx.spec<LocalSpec>();
  const FusedSignature sig = fused_signature(ctx, spec.io);
  const std::string kernel = fused_kernel_name(ctx);
  fused_kernel_banner(
      ctx, sig, group.nodes,
      spec.moves.empty()
          ? fmt::format("Fused group {} (Local): {} pointwise nodes evaluated per element in "
                        "registers.",
                        group.id, group.nodes.size())
          : fmt::format("Fused group {} (Local): {} nodes evaluated per element in registers, "
                        "{} of them movement nodes read through as index remappings.",
                        group.id, group.nodes.size(), spec.moves.size()),
      out);
  std::vector<std::string> params = sig.params;
  for (const std::string& p : launch_symbol_params(ctx))
    params.push_back(p);
  out.open(kernel_head(ctx, kernel, params));
  emit_local_body(ctx, sig, spec, BlockRange{}, out);
  out.close();
  out.line();
  emit_launch(ctx, out, kernel, sig.args);
}

} // namespace

std::string interface_name(const GroupEmitContext& ctx, const FusedSignature& sig, TensorId t,
                           const std::string& what) {
  if (auto in = sig.inputs.find(t); in != sig.inputs.end()) return in->second;
  if (auto o = sig.outputs.find(t); o != sig.outputs.end()) return o->second;
  ctx.spec_error(fmt::format("the {} '{}' is not in the kernel's interface", what,
                             ctx.graph().tensor(t).name));
}

TemplateKernelNames template_kernel_names(const GroupEmitContext& ctx, std::string_view what) {
  const int id = ctx.group().id;
  const std::string suffix = ctx.variant_suffix();
  return {fmt::format("stitch_g{}_{}{}", id, what, suffix),
          fmt::format("stitch_g{}_tiles{}", id, suffix), fmt::format("stitch_g{}_problem", id)};
}

std::vector<std::string> interface_members(const FusedSignature& sig, const KernelInterface& io) {
  std::vector<std::string> members;
  for (TensorId t : io.reads)
    members.push_back(sig.inputs.at(t));
  for (TensorId t : io.writes)
    members.push_back(sig.outputs.at(t));
  return members;
}

bool emit_fused(const GroupEmitContext& ctx, CodeWriter& out) {
  const GroupSpec& spec = ctx.group().spec;
  if (std::holds_alternative<LocalSpec>(spec))
    emit_fused_local(ctx, out);
  else if (std::holds_alternative<WindowSpec>(spec))
    emit_fused_window(ctx, out);
  else if (std::holds_alternative<RegionalSpec>(spec))
    emit_fused_regional(ctx, out);
  else if (std::holds_alternative<ColumnSpec>(spec))
    emit_fused_global(ctx, out);
  else if (std::holds_alternative<RowGemvSpec>(spec))
    emit_fused_row_gemv(ctx, out);
  else if (std::holds_alternative<IndependentSpec>(spec))
    emit_fused_independent(ctx, out);
  else if (std::holds_alternative<AttentionSpec>(spec))
    emit_attention(ctx, out);
  else if (std::holds_alternative<GemmChainSpec>(spec))
    emit_gemm_chain(ctx, out);
  else
    return false; // single ops, library calls, aliases
  return true;
}

} // namespace stitch
