// The pointwise kernel: one elementwise or broadcast node (the op table's "device" column),
// Cast/CastLike, and Expand. One thread per output element (or per 16-byte vector when the
// plan chose a vector width: 4 lanes of 4 bytes or 8 of 2), grid-stride, broadcast indices computed
// from constant shapes.
#include "emitter/kernels.h"

#include <cctype>
#include <cmath>

#include "emitter/pointwise_expression.h"

#include "emitter/row_kernel.h"
#include "graph/error.h"
#include <algorithm>

namespace stitch {

namespace {

struct DeviceCall {
  std::string function;
  std::vector<std::pair<std::string, std::string>> params; // name, default
};

// "leaky_relu(alpha=0.01)" -> {leaky_relu, {{alpha, 0.01}}}
DeviceCall parse_device_spec(std::string_view spec) {
  DeviceCall call;
  size_t open = spec.find('(');
  call.function = std::string(spec.substr(0, open));
  if (open == std::string_view::npos) return call;
  std::string_view rest = spec.substr(open + 1, spec.size() - open - 2);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    size_t eq = item.find('=');
    call.params.emplace_back(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return call;
}

// The trailing arguments for the node's attributes, as C++ literals.
std::vector<std::string> param_arguments(const Node& node, const DeviceCall& call) {
  std::vector<std::string> args;
  for (const auto& [name, dflt] : call.params) {
    auto it = node.attrs.find(name);
    if (it == node.attrs.end()) {
      bool is_number =
          !dflt.empty() && (std::isdigit(static_cast<unsigned char>(dflt[0])) || dflt[0] == '-');
      args.push_back(is_number ? (dflt.find('.') != std::string::npos ? dflt + "f" : dflt) : "0");
      continue;
    }
    const Attribute::Value& v = it->second.value;
    if (auto* i = std::get_if<int64_t>(&v))
      args.push_back(fmt::format("{}", *i));
    else if (auto* f = std::get_if<double>(&v))
      args.push_back(float_literal(*f, DType::Float32));
    else if (auto* s = std::get_if<std::string>(&v))
      args.push_back(*s == dflt ? "0" : "1");
    else
      internal_fail("attribute '{}' of a pointwise op has an unexpected kind", name);
  }
  return args;
}

std::string literal_limit(DType t, bool lowest) {
  if (dtype_is_float(t)) return lowest ? "-INFINITY" : "INFINITY";
  switch (t) {
  case DType::Int64:
    return lowest ? "(-9223372036854775807LL - 1)" : "9223372036854775807LL";
  case DType::Int32:
    return lowest ? "(-2147483647 - 1)" : "2147483647";
  case DType::Int16:
    return lowest ? "-32768" : "32767";
  case DType::Int8:
    return lowest ? "-128" : "127";
  case DType::UInt64:
    return lowest ? "0ull" : "18446744073709551615ull";
  case DType::UInt32:
    return lowest ? "0u" : "4294967295u";
  case DType::UInt16:
    return lowest ? "0" : "65535";
  case DType::UInt8:
    return lowest ? "0" : "255";
  default:
    return "0";
  }
}

} // namespace

// The index into `in` (numpy-broadcast against `out`) of output element coordinates c0..cR-1.
std::string broadcast_index(const Shape& in, const Shape& out, const std::string& linear,
                            const std::string& coordinate) {
  if (in == out) return linear;
  if (shape_elements(in) == 1) return "0";
  std::vector<std::string> terms;
  int64_t stride = 1;
  size_t offset = out.size() - in.size();
  for (size_t d = in.size(); d-- > 0;) {
    if (in[d] != 1)
      terms.push_back(stride == 1 ? fmt::format("{}{}", coordinate, d + offset)
                                  : fmt::format("{}{} * {}", coordinate, d + offset, stride));
    stride *= in[d];
  }
  return terms.empty() ? "0" : fmt::format("{}", fmt::join(terms, " + "));
}

VectorAccess vector_access(DType t, int width, const GroupEmitContext& ctx) {
  const std::string value = ctype(t, ctx), storage = storage_ctype(t, ctx);
  if (width * dtype_size(t) != 16)
    ctx.spec_error(fmt::format("a 16-byte vector of {} {} elements", width, dtype_name(t)));
  if (width == 4)
    return {value == "float"     ? "float4"
            : value == "int32_t" ? "int4"
                                 : "uint4",
            {"x", "y", "z", "w"}};
  VectorAccess v{fmt::format("stitch::lanes8<{}>", storage), {}, value != storage};
  for (int k = 0; k < 8; ++k)
    v.lanes.push_back(fmt::format("lane[{}]", k));
  return v;
}

std::string element_count_code(const Graph& g, const SymShape& dims) {
  return dim_code(g, sym_elements(dims));
}

bool tensor_is_whole(const Graph& g, TensorId t, const SymShape& against_dims) {
  return g.tensor(t).sym_shape() == against_dims;
}

bool tensor_is_scalar(const Graph& g, TensorId t) {
  return !g.tensor(t).is_dynamic() && g.tensor(t).elements() == 1;
}

std::string tensor_index(const Graph& g, TensorId t, const Shape& against,
                         const SymShape& against_dims, const std::string& linear,
                         const std::string& coordinate) {
  if (tensor_is_whole(g, t, against_dims)) return linear;
  if (tensor_is_scalar(g, t)) return "0";
  const Shape& in = g.tensor(t).shape;
  const size_t offset = against.size() - in.size();
  // Over symbolic dims, the axes up to the last symbolic one are either all 1 in `t` or the
  // iteration's own (legality): then the block of `t` that the leading index picks starts at
  // that index (what emit_coordinates leaves in rest) times the block's size.
  const size_t fixed_from = symbolic_prefix(against_dims);
  std::vector<std::string> terms;
  int64_t stride = 1;
  for (size_t d = in.size(); d-- > 0;) {
    if (d + offset < fixed_from) break;
    if (in[d] != 1)
      terms.push_back(stride == 1 ? fmt::format("{}{}", coordinate, d + offset)
                                  : fmt::format("{}{} * {}", coordinate, d + offset, stride));
    stride *= in[d];
  }
  if (fixed_from > 0) {
    const SymShape dims = g.tensor(t).sym_shape();
    if (needs_symbolic_coordinates(g, t, against_dims)) {
      // Broadcast along the symbolic axes: each of its coordinates times its stride over the
      // symbols (emit_symbolic_coordinates wrote them).
      DimExpr sym_stride = stride;
      // The operand's axes before the first fixed one of the iteration, innermost first.
      const size_t leading = fixed_from > offset ? std::min(in.size(), fixed_from - offset) : 0;
      for (size_t d = leading; d-- > 0;) {
        if (!(dims[d].is_constant() && dims[d].constant_value() == 1))
          terms.push_back(
              sym_stride.is_constant() && sym_stride.constant_value() == 1
                  ? fmt::format("{}{}", coordinate, d + offset)
                  : fmt::format("{}{} * {}", coordinate, d + offset, dim_code(g, sym_stride)));
        sym_stride = sym_stride * dims[d];
      }
    } else {
      bool leading = false;
      for (size_t d = 0; d + offset < fixed_from && d < dims.size(); ++d)
        leading = leading || !(dims[d].is_constant() && dims[d].constant_value() == 1);
      if (leading) {
        const std::string rest = linear == "i" ? "rest" : linear + "_rest";
        terms.push_back(stride == 1 ? rest : fmt::format("{} * {}", rest, stride));
      }
    }
  }
  return terms.empty() ? "0" : fmt::format("{}", fmt::join(terms, " + "));
}

bool needs_symbolic_coordinates(const Graph& g, TensorId t, const SymShape& against_dims) {
  const size_t fixed_from = symbolic_prefix(against_dims);
  if (fixed_from == 0 || tensor_is_whole(g, t, against_dims) || tensor_is_scalar(g, t))
    return false;
  // The operand's dims right-aligned against the iteration's, its missing leading axes 1.
  SymShape dims = g.tensor(t).sym_shape();
  dims.insert(dims.begin(), against_dims.size() - std::min(against_dims.size(), dims.size()),
              DimExpr(1));
  bool ones = true, same = true;
  for (size_t d = 0; d < fixed_from; ++d) {
    ones = ones && dims[d].is_constant() && dims[d].constant_value() == 1;
    same = same && dims[d] == against_dims[d];
  }
  return !ones && !same;
}

void emit_symbolic_coordinates(CodeWriter& out, const Graph& g, const SymShape& dims,
                               const std::string& linear, const std::string& coordinate,
                               bool index32) {
  const size_t fixed_from = symbolic_prefix(dims);
  const std::string rest = linear == "i" ? "rest" : linear + "_rest";
  out.comment(
      fmt::format("the coordinates of the axes up to the last symbolic one, from {}", rest));
  out.linef("int64_t {}_lead = {};", linear, rest);
  for (size_t d = fixed_from; d-- > 0;) {
    if (d == 0)
      out.linef("const int64_t {}0 = {}_lead;", coordinate, linear);
    else if (index32 && !dims[d].is_constant())
      out.linef("const int64_t {0}{1} = stitch::dims::mod32({2}_lead, {3}); {2}_lead = "
                "stitch::dims::div32({2}_lead, {3});",
                coordinate, d, linear, dim_code(g, dims[d]));
    else
      out.linef("const int64_t {0}{1} = {2}_lead % {3}; {2}_lead /= {3};", coordinate, d, linear,
                dim_code(g, dims[d]));
  }
}

bool tensor_needs_coordinates(const Graph& g, TensorId t, const Shape& against,
                              const SymShape& against_dims) {
  return tensor_index(g, t, against, against_dims) != "i" &&
         tensor_index(g, t, against, against_dims) != "0";
}

bool needs_coordinates(const Shape& in, const Shape& out) {
  return in != out && shape_elements(in) != 1;
}

void emit_coordinates(CodeWriter& out, const Shape& shape, const std::string& linear,
                      const std::string& coordinate, const SymShape* dims) {
  const std::string rest = linear == "i" ? "rest" : linear + "_rest";
  const size_t fixed_from = dims != nullptr ? symbolic_prefix(*dims) : 0;
  if (fixed_from > 0) {
    if (fixed_from < shape.size())
      out.comment(fmt::format("the coordinates of the axes after the last symbolic one ({} on)",
                              fixed_from));
    out.linef("int64_t {} = {};", rest, linear);
    for (size_t d = shape.size(); d-- > fixed_from;)
      out.linef("const int64_t {0}{1} = {2} % {3}; {2} /= {3};", coordinate, d, rest, shape[d]);
    return;
  }
  out.linef("int64_t {} = {};", rest, linear);
  for (size_t d = shape.size(); d-- > 0;) {
    if (d == 0)
      out.linef("const int64_t {}0 = {};", coordinate, rest);
    else
      out.linef("const int64_t {0}{1} = {2} % {3}; {2} /= {3};", coordinate, d, rest, shape[d]);
  }
}

namespace {

// pointwise_expression before its result is rounded to the output's dtype.
std::string exact_expression(const GroupEmitContext& ctx, const Node& node,
                             const std::vector<std::string>& values) {
  const std::vector<TensorId> operands = value_operands(node);
  STITCH_INTERNAL_CHECK(values.size() == operands.size(),
                        "node '{}': {} operand values for {} operands", node.name, values.size(),
                        operands.size());
  const Tensor& out = ctx.tensor(node.outputs[0]);
  std::string out_type = ctype(out.dtype, ctx);
  if (node.op == OpKind::Cast || node.op == OpKind::CastLike) {
    // To a 2-byte float from a type wider than float's 24 significant bits: through float by
    // rounding to odd, so that the one rounding to the 2-byte type is the correct one.
    const DType from = ctx.tensor(operands[0]).dtype;
    const bool wide = from == DType::Float64 || (dtype_is_integer(from) && dtype_size(from) >= 4);
    if ((out.dtype == DType::Float16 || out.dtype == DType::BFloat16) && wide)
      return fmt::format("stitch::float_round_to_odd(static_cast<double>({}))", values[0]);
    return fmt::format("stitch::ops::cast_to<{}>({})", out_type, values[0]);
  }
  if (node.op == OpKind::Expand) return values[0];
  DeviceCall call = parse_device_spec(op_device_function(node.op));
  std::vector<std::string> extra = param_arguments(node, call);
  std::string fn = "stitch::ops::" + call.function;
  auto apply = [&](std::vector<std::string> args) {
    for (const std::string& e : extra)
      args.push_back(e);
    return fmt::format("{}({})", fn, fmt::join(args, ", "));
  };
  std::string in_type = ctype(ctx.tensor(operands[0]).dtype, ctx);
  switch (node.op) {
  case OpKind::Clip: {
    // Bounds are optional inputs from opset 11, attributes before; a missing bound is none.
    auto bound = [&](size_t k, const char* attr, bool lowest) -> std::string {
      if (node.opset < 11) {
        auto it = node.attrs.find(attr);
        if (it == node.attrs.end()) return literal_limit(out.dtype, lowest);
        return float_literal(std::get<double>(it->second.value), DType::Float32);
      }
      if (k < operands.size() && operands[k] != kNoTensor) return values[k];
      return literal_limit(out.dtype, lowest);
    };
    return fmt::format("stitch::ops::clip<{0}>({3}, ({0})({1}), ({0})({2}))", out_type,
                       bound(1, "min", true), bound(2, "max", false), values[0]);
  }
  case OpKind::Pow: // the exponent may have another type than the base
    return fmt::format("stitch::ops::pow_({}, ({}){})", values[0], in_type, values[1]);
  case OpKind::Sum:
  case OpKind::Max:
  case OpKind::Min:
  case OpKind::Mean: {
    std::string acc = values[0];
    for (size_t k = 1; k < operands.size(); ++k)
      acc = apply({acc, values[k]});
    if (node.op == OpKind::Mean) acc = fmt::format("({}) / ({}){}", acc, in_type, operands.size());
    return acc;
  }
  default:
    return apply(values);
  }
}

} // namespace

std::string pointwise_expression(const GroupEmitContext& ctx, const Node& node,
                                 const std::vector<std::string>& values) {
  const DType result = ctx.tensor(node.outputs[0]).dtype;
  // Expand only repeats a value that is already of its dtype.
  if (node.op == OpKind::Expand) return exact_expression(ctx, node, values);
  return rounded_to(result, exact_expression(ctx, node, values));
}

bool emit_pointwise(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  if (!op_is_pointwise(node.op)) return false;
  const Graph& g = ctx.graph();
  const Tensor& result = g.tensor(node.outputs[0]);
  const std::vector<TensorId> operands = value_operands(node);
  const int vec = ctx.group().launch.vector_width;
  const SymShape dims = result.sym_shape();
  std::string kernel = ctx.kernel_name();

  // The kernel.
  std::vector<std::string> params;
  for (size_t k = 0; k < operands.size(); ++k)
    if (operands[k] != kNoTensor)
      params.push_back(fmt::format("const {}* __restrict__ in{}",
                                   storage_ctype(g.tensor(operands[k]).dtype, ctx), k));
  params.push_back(fmt::format("{}* __restrict__ out", storage_ctype(result.dtype, ctx)));
  for (const std::string& p : launch_symbol_params(ctx))
    params.push_back(p);
  out.comment(describe_node(g, node));
  out.open(fmt::format("__global__ void __launch_bounds__({}) {}({})", ctx.group().launch.block[0],
                       kernel, fmt::join(params, ", ")));
  out.linef("const int64_t n = {};", element_count_code(g, dims));
  out.line("const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;");
  out.line("const int64_t stride = int64_t(gridDim.x) * blockDim.x;");
  std::vector<std::string> values;
  for (size_t k = 0; k < operands.size(); ++k)
    values.push_back(fmt::format("v{}", k));
  std::string expr = pointwise_expression(ctx, node, values);
  std::string tail_start = "0";
  if (vec > 1) {
    // 16-byte vectors: every operand is the full shape or a scalar (the plan checked).
    const VectorAccess result_vector = vector_access(result.dtype, vec, ctx);
    out.open(fmt::format("for (int64_t v = first; v < n / {}; v += stride)", vec));
    for (size_t k = 0; k < operands.size(); ++k) {
      if (operands[k] == kNoTensor) continue;
      const Tensor& t = g.tensor(operands[k]);
      if (!tensor_is_whole(g, operands[k], dims) && !tensor_is_scalar(g, operands[k]))
        ctx.spec_error(fmt::format("vector width {} with operand '{}' {}", vec, t.name,
                                   sym_shape_to_string(t.sym_shape())));
      if (const std::string value = symbolic_value_code(g, operands[k], "0", ctype(t.dtype, ctx));
          !value.empty())
        out.linef("const {} s{} = {};  // computed from the symbols", ctype(t.dtype, ctx), k,
                  value);
      else if (!tensor_is_whole(g, operands[k], dims))
        out.linef("const {0} s{1} = in{1}[0];", ctype(t.dtype, ctx), k);
      else
        out.linef("const {0} x{1} = reinterpret_cast<const {0}*>(in{1})[v];",
                  vector_access(t.dtype, vec, ctx).type, k);
    }
    out.linef("{} r;", result_vector.type);
    for (size_t lane = 0; lane < result_vector.lanes.size(); ++lane) {
      out.open("");
      for (size_t k = 0; k < operands.size(); ++k) {
        if (operands[k] == kNoTensor) continue;
        const Tensor& t = g.tensor(operands[k]);
        out.linef("const {} v{} = {};", ctype(t.dtype, ctx), k,
                  !tensor_is_whole(g, operands[k], dims)
                      ? fmt::format("s{}", k)
                      : fmt::format("x{}.{}", k, vector_access(t.dtype, vec, ctx).lanes[lane]));
      }
      out.linef("r.{} = {};", result_vector.lanes[lane], expr);
      out.close();
    }
    out.line("reinterpret_cast<decltype(r)*>(out)[v] = r;");
    out.close();
    tail_start = fmt::format("n / {0} * {0}", vec);
  }
  out.open(fmt::format("for (int64_t i = {} + first; i < n; i += stride)", tail_start));
  bool needs_coords = false;
  for (TensorId t : operands)
    if (t != kNoTensor && tensor_needs_coordinates(g, t, result.shape, dims)) needs_coords = true;
  if (needs_coords) emit_coordinates(out, result.shape, "i", "c", &dims);
  if (std::any_of(operands.begin(), operands.end(), [&](TensorId t) {
        return t != kNoTensor && needs_symbolic_coordinates(g, t, dims);
      }))
    emit_symbolic_coordinates(out, g, dims, "i", "c", ctx.group().launch.index32);
  for (size_t k = 0; k < operands.size(); ++k) {
    if (operands[k] == kNoTensor) continue;
    const Tensor& t = g.tensor(operands[k]);
    const std::string index = tensor_index(g, operands[k], result.shape, dims);
    if (const std::string value = symbolic_value_code(g, operands[k], index, ctype(t.dtype, ctx));
        !value.empty())
      out.linef("const {} v{} = {};  // computed from the symbols", ctype(t.dtype, ctx), k, value);
    else
      out.linef("const {} v{} = in{}[{}];", ctype(t.dtype, ctx), k, k, index);
  }
  out.linef("out[i] = {};", expr);
  out.close();
  out.close();
  out.line();

  // The launch.
  std::vector<std::string> args;
  for (TensorId t : operands)
    if (t != kNoTensor) args.push_back(ctx.pointer(t, false));
  args.push_back(ctx.pointer(node.outputs[0], true));
  emit_launch(ctx, out, kernel, args);
  return true;
}

} // namespace stitch
