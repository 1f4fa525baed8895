// Normalization kernels: Softmax and LogSoftmax (max-subtracted), LayerNormalization,
// InstanceNormalization and GroupNormalization (two-pass mean and variance), RMSNormalization,
// and inference BatchNormalization (elementwise with per-channel statistics).
//
// A row kernel reads its row from global memory once, keeps it where the plan's RowCache says
// (registers, shared memory, or nowhere: then it reads the row again), reduces in registers
// and across the row's threads with warp shuffles (and shared memory for a block), and writes
// each output element once. Statistics accumulate in fp32, or in double for float64 data or a
// float64 stash_type.
#include "emitter/kernels.h"

#include "emitter/row_kernel.h"
#include "graph/error.h"
#include "graph/infer_context.h"

namespace stitch {

namespace {

// Everything a normalization kernel writer needs about its node.
struct NormKernel {
  const GroupEmitContext& ctx;
  const Node& node;
  LineLoop loop;
  RowCache cache;
  DType acc_dtype;
  std::string acc;       // accumulator ctype
  std::string x_type;    // X's ctype
  std::string kernel;

  NormKernel(const GroupEmitContext& c)
      : ctx(c), node(c.node()), loop(c, reduction_space(c.graph(), c.node())),
        acc_dtype(normalization_accumulator(c.graph(), c.node())), acc(ctype(acc_dtype, c)),
        x_type(ctype(c.tensor(c.node().inputs[0]).dtype, c)), kernel(c.kernel_name()) {
    cache = row_cache(c.group(), loop.space().length, dtype_size(acc_dtype));
  }

  std::string literal(double v) const { return float_literal(v, acc_dtype); }
  // Element k of the line in X (or Y), as an index.
  std::string element_index() const {
    std::string offset = loop.element_offset();
    return offset == "0" ? "base" : "base + " + offset;
  }
  std::string load_x() const {
    std::string value = fmt::format("x[{}]", element_index());
    return x_type == acc ? value : fmt::format("{}({})", acc, value);
  }
  std::string as(const std::string& type, const std::string& value) const {
    return type == acc ? value : fmt::format("{}({})", type, value);
  }
  std::string operand(size_t i, const std::string& name, const std::string& index) const {
    std::string type = ctype(ctx.tensor(node.inputs[i]).dtype, ctx);
    std::string value = fmt::format("{}[{}]", name, index);
    return type == acc ? value : fmt::format("{}({})", acc, value);
  }
  std::string cache_comment() const {
    switch (cache) {
    case RowCache::Registers: return "the row is kept in registers between passes";
    case RowCache::Shared: return "the row is kept in shared memory between passes";
    case RowCache::None: return "each pass reads the row from global memory";
    }
    return "";
  }

  void open(CodeWriter& out, const std::vector<std::string>& params) const {
    out.comment(describe_node(ctx.graph(), node));
    out.comment(loop.describe() + "; " + cache_comment() + ".");
    out.open(kernel_head(ctx, kernel, params));
    loop.declare_cache(out, cache, acc, false);
    loop.open_lines(out);
    loop.declare_cache(out, cache, acc, true);
  }
  void open_pass(CodeWriter& out, bool first) const {
    loop.open_cached_pass(out, cache, acc, load_x(), first);
  }
  // `name = combine(name)` across the line's threads, when there are several.
  void combine(CodeWriter& out, const std::string& name, const char* functor) const {
    if (loop.mapping() != ThreadMapping::Flat) out.linef("{} = {};", name, loop.combine(name, functor));
  }
};

std::string param(const GroupEmitContext& ctx, TensorId t, const std::string& name, bool output) {
  return fmt::format("{}{}* __restrict__ {}", output ? "" : "const ", ctype(ctx.tensor(t).dtype, ctx), name);
}

bool present(const Node& node, size_t i, bool output) {
  const auto& list = output ? node.outputs : node.inputs;
  return i < list.size() && list[i] != kNoTensor;
}

// Softmax: exp(x - max) / sum; LogSoftmax: x - max - log(sum), sum = sum(exp(x - max)).
void emit_softmax(const NormKernel& k, CodeWriter& out) {
  const GroupEmitContext& ctx = k.ctx;
  const bool log = k.node.op == OpKind::LogSoftmax;
  k.open(out, {param(ctx, k.node.inputs[0], "x", false), param(ctx, k.node.outputs[0], "y", true)});
  out.linef("{} line_max = stitch::rows::lowest<{}>();", k.acc, k.acc);
  k.open_pass(out, true);
  out.line("line_max = stitch::rows::Max{}(line_max, v);");
  out.close();
  k.combine(out, "line_max", "stitch::rows::Max{}");
  out.linef("{} sum = {};", k.acc, k.literal(0));
  k.open_pass(out, false);
  out.linef("const {} e = stitch::rows::exp_of(v - line_max);", k.acc);
  if (!log && k.cache != RowCache::None) out.linef("{} = e;  // later passes read exp(x - max)", k.loop.cached_element(k.cache));
  out.line("sum += e;");
  out.close();
  k.combine(out, "sum", "stitch::rows::Sum{}");
  std::string result;
  if (log) {
    out.linef("const {} log_sum = stitch::rows::log_of(sum);", k.acc);
    result = "v - line_max - log_sum";
  } else {
    result = k.cache != RowCache::None ? "v / sum" : "stitch::rows::exp_of(v - line_max) / sum";
  }
  k.open_pass(out, false);
  out.linef("y[{}] = {};", k.element_index(), k.as(k.x_type, result));
  out.close();
  out.close();
  out.close();
}

// Mean and variance (two passes over the kept row), then (x - mean) * inv_std_dev * scale + bias.
// `scale_index` and `bias_index` are expressions of `line` and `k`.
void emit_mean_variance_norm(const NormKernel& k, CodeWriter& out, const std::string& scale_index,
                             const std::string& bias_index, double epsilon) {
  const GroupEmitContext& ctx = k.ctx;
  const Node& node = k.node;
  const bool has_bias = present(node, 2, false);
  const bool has_mean = present(node, 1, true), has_inv = present(node, 2, true);
  std::vector<std::string> params = {param(ctx, node.inputs[0], "x", false),
                                     param(ctx, node.inputs[1], "scale", false)};
  if (has_bias) params.push_back(param(ctx, node.inputs[2], "bias", false));
  params.push_back(param(ctx, node.outputs[0], "y", true));
  if (has_mean) params.push_back(param(ctx, node.outputs[1], "mean_out", true));
  if (has_inv) params.push_back(param(ctx, node.outputs[2], "inv_std_dev_out", true));
  k.open(out, params);
  const std::string length = k.literal(static_cast<double>(k.loop.space().length));
  out.linef("{} sum = {};", k.acc, k.literal(0));
  k.open_pass(out, true);
  out.line("sum += v;");
  out.close();
  k.combine(out, "sum", "stitch::rows::Sum{}");
  out.linef("const {} mean = sum / {};", k.acc, length);
  out.linef("{} squares = {};  // sum of squared deviations from the mean", k.acc, k.literal(0));
  k.open_pass(out, false);
  out.linef("const {} d = v - mean;", k.acc);
  out.line("squares += d * d;");
  out.close();
  k.combine(out, "squares", "stitch::rows::Sum{}");
  out.linef("const {} inv_std_dev = {} / stitch::rows::sqrt_of(squares / {} + {});", k.acc,
            k.literal(1), length, k.literal(epsilon));
  k.open_pass(out, false);
  std::string value = fmt::format("(v - mean) * inv_std_dev * {}", k.operand(1, "scale", scale_index));
  if (has_bias) value += " + " + k.operand(2, "bias", bias_index);
  out.linef("y[{}] = {};", k.element_index(), k.as(k.x_type, value));
  out.close();
  if (has_mean)
    k.loop.leader_writes(out, fmt::format("mean_out[line] = {};",
                                          k.as(ctype(ctx.tensor(node.outputs[1]).dtype, ctx), "mean")));
  if (has_inv)
    k.loop.leader_writes(out, fmt::format("inv_std_dev_out[line] = {};",
                                          k.as(ctype(ctx.tensor(node.outputs[2]).dtype, ctx), "inv_std_dev")));
  out.close();
  out.close();
}

// The index of a Scale or B operand (broadcast to X) for element k of a row that spans X's
// axes [axis, rank): from k alone when the operand varies only within the row.
std::string row_operand_index(const Shape& operand, const Shape& x, int64_t axis) {
  size_t lead = 0;
  while (lead < operand.size() && operand[lead] == 1) ++lead;
  if (static_cast<int64_t>(operand.size() - lead) <= static_cast<int64_t>(x.size()) - axis)
    return broadcast_offset(Shape(operand.begin() + lead, operand.end()),
                            Shape(x.begin() + axis, x.end()), "k");
  return broadcast_offset(operand, x, "base + k");
}

void emit_layer_norm(const NormKernel& k, CodeWriter& out) {
  NodeContext params(k.ctx.graph(), k.node);
  const Shape& x = params.shape(0);
  int64_t axis = params.normalize_axis(params.attr_int("axis", -1), params.rank(0));
  std::string bias_index =
      params.has_input(2) ? row_operand_index(params.shape(2), x, axis) : std::string();
  emit_mean_variance_norm(k, out, row_operand_index(params.shape(1), x, axis), bias_index,
                          params.attr_float("epsilon", 1e-5));
}

void emit_instance_norm(const NormKernel& k, CodeWriter& out) {
  NodeContext params(k.ctx.graph(), k.node);
  std::string channel = fmt::format("line % {}", params.shape(0)[1]); // line = n * C + c
  emit_mean_variance_norm(k, out, channel, channel, params.attr_float("epsilon", 1e-5));
}

void emit_group_norm(const NormKernel& k, CodeWriter& out) {
  NodeContext params(k.ctx.graph(), k.node);
  const Shape& x = params.shape(0);
  const int64_t groups = params.req_int("num_groups");
  const int64_t per_group = x[1] / groups;
  int64_t spatial = 1;
  for (size_t d = 2; d < x.size(); ++d) spatial *= x[d];
  // line = n * G + g; element k of the group is channel g * C/G + k / spatial.
  std::string group = fmt::format("line % {}", groups);
  std::string index = group; // opset 18: one scale and bias per group
  if (params.opset() >= 21) {
    std::string within = spatial == 1 ? "k" : fmt::format("k / {}", spatial);
    index = per_group == 1 ? group : fmt::format("({}) * {} + {}", group, per_group, within);
  }
  emit_mean_variance_norm(k, out, index, index, params.attr_float("epsilon", 1e-5));
}

// x / sqrt(mean(x^2) + epsilon) * scale.
void emit_rms_norm(const NormKernel& k, CodeWriter& out) {
  const GroupEmitContext& ctx = k.ctx;
  NodeContext params(ctx.graph(), k.node);
  const Shape& x = params.shape(0);
  int64_t axis = params.normalize_axis(params.attr_int("axis", -1), params.rank(0));
  k.open(out, {param(ctx, k.node.inputs[0], "x", false), param(ctx, k.node.inputs[1], "scale", false),
               param(ctx, k.node.outputs[0], "y", true)});
  out.linef("{} squares = {};", k.acc, k.literal(0));
  k.open_pass(out, true);
  out.line("squares += v * v;");
  out.close();
  k.combine(out, "squares", "stitch::rows::Sum{}");
  out.linef("const {} inv_rms = {} / stitch::rows::sqrt_of(squares / {} + {});", k.acc,
            k.literal(1), k.literal(static_cast<double>(k.loop.space().length)),
            k.literal(params.attr_float("epsilon", 1e-5)));
  k.open_pass(out, false);
  std::string y_type = ctype(ctx.tensor(k.node.outputs[0]).dtype, ctx);
  out.linef("y[{}] = {};", k.element_index(),
            k.as(y_type, fmt::format("v * inv_rms * {}", k.operand(1, "scale", row_operand_index(params.shape(1), x, axis)))));
  out.close();
  out.close();
  out.close();
}

// Inference BatchNormalization: (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c],
// one thread per element (the plan's flat launch), grid-stride.
void emit_batch_norm(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  NodeContext params(ctx.graph(), node);
  if (ctx.group().mapping != ThreadMapping::Flat)
    internal_fail("group {}: BatchNormalization is emitted with the flat mapping only", ctx.group().id);
  const Shape& x = params.shape(0);
  const DType acc_dtype = params.dtype(0) == DType::Float64 ? DType::Float64 : DType::Float32;
  const std::string acc = ctype(acc_dtype, ctx);
  int64_t spatial = 1;
  for (size_t d = 2; d < x.size(); ++d) spatial *= x[d];
  const std::string kernel = ctx.kernel_name();
  static constexpr const char* kNames[] = {"x", "scale", "bias", "mean", "var"};
  std::vector<std::string> kernel_params;
  for (size_t i = 0; i < 5; ++i) kernel_params.push_back(param(ctx, node.inputs[i], kNames[i], false));
  kernel_params.push_back(param(ctx, node.outputs[0], "y", true));
  auto read = [&](size_t i, const std::string& index) {
    std::string type = ctype(ctx.tensor(node.inputs[i]).dtype, ctx);
    std::string value = fmt::format("{}[{}]", kNames[i], index);
    return type == acc ? value : fmt::format("{}({})", acc, value);
  };
  out.comment(describe_node(ctx.graph(), node));
  out.open(kernel_head(ctx, kernel, kernel_params));
  out.linef("const int64_t n = {};", shape_elements(x));
  out.line("const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;");
  out.line("const int64_t stride = int64_t(gridDim.x) * blockDim.x;");
  out.open("for (int64_t i = first; i < n; i += stride)");
  std::string channel = spatial == 1 ? "i" : fmt::format("i / {}", spatial);
  if (x[0] != 1) channel = fmt::format("{} % {}", channel, x[1]);
  out.linef("const int64_t c = {};", channel);
  out.linef("const {} inv_std_dev = {} / stitch::rows::sqrt_of({} + {});", acc,
            float_literal(1, acc_dtype), read(4, "c"), float_literal(params.attr_float("epsilon", 1e-5), acc_dtype));
  std::string value = fmt::format("({} - {}) * inv_std_dev * {} + {}", read(0, "i"), read(3, "c"),
                                  read(1, "c"), read(2, "c"));
  std::string y_type = ctype(ctx.tensor(node.outputs[0]).dtype, ctx);
  out.linef("y[i] = {};", y_type == acc ? value : fmt::format("{}({})", y_type, value));
  out.close();
  out.close();
  out.line();
  std::vector<std::string> args;
  for (size_t i = 0; i < 5; ++i) args.push_back(ctx.pointer(node.inputs[i], false));
  args.push_back(ctx.pointer(node.outputs[0], true));
  emit_launch(ctx, out, kernel, args);
}

} // namespace

bool emit_normalization(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  if (node.op == OpKind::BatchNormalization) {
    emit_batch_norm(ctx, out);
    return true;
  }
  switch (node.op) {
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
  case OpKind::LayerNormalization:
  case OpKind::InstanceNormalization:
  case OpKind::GroupNormalization:
  case OpKind::RMSNormalization: break;
  default: return false;
  }
  NormKernel k(ctx);
  switch (node.op) {
  case OpKind::Softmax:
  case OpKind::LogSoftmax: emit_softmax(k, out); break;
  case OpKind::LayerNormalization: emit_layer_norm(k, out); break;
  case OpKind::InstanceNormalization: emit_instance_norm(k, out); break;
  case OpKind::GroupNormalization: emit_group_norm(k, out); break;
  default: emit_rms_norm(k, out); break;
  }
  out.line();
  std::vector<std::string> args;
  for (TensorId t : node.inputs)
    if (t != kNoTensor) args.push_back(ctx.pointer(t, false));
  for (TensorId t : node.outputs)
    if (t != kNoTensor) args.push_back(ctx.pointer(t, true));
  emit_launch(ctx, out, k.kernel, args);
  return true;
}

} // namespace stitch
