// Movement kernels: the dispatch over the movement ops, and the pieces their emitters share
// (kernel_movement.h). The ops themselves are in kernel_movement_*.cpp.
#include "emitter/kernel_movement.h"

#include "emitter/row_kernel.h"
#include "graph/constant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "graph/error.h"

namespace stitch {

namespace {

using MovementEmitter = void (*)(const GroupEmitContext&, CodeWriter&);

constexpr std::pair<OpKind, MovementEmitter> kEmitters[] = {
    {OpKind::Transpose, emit_permuted_copy},
    {OpKind::DepthToSpace, emit_permuted_copy},
    {OpKind::SpaceToDepth, emit_permuted_copy},
    // Ops that only reinterpret their input, when they were not made views.
    {OpKind::Identity, emit_copy},
    {OpKind::Dropout, emit_copy},
    {OpKind::Reshape, emit_copy},
    {OpKind::Flatten, emit_copy},
    {OpKind::Squeeze, emit_copy},
    {OpKind::Unsqueeze, emit_copy},
    {OpKind::Concat, emit_concat},
    {OpKind::Split, emit_split},
    {OpKind::Slice, emit_slice},
    {OpKind::Tile, emit_tile},
    {OpKind::Pad, emit_pad},
    {OpKind::Trilu, emit_trilu},
    {OpKind::Range, emit_range},
    {OpKind::ConstantOfShape, emit_constant_fill},
    {OpKind::Gather, emit_gather},
    {OpKind::GatherElements, emit_gather_elements},
    {OpKind::GatherND, emit_gather_nd},
    {OpKind::ScatterND, emit_scatter_nd},
    {OpKind::Resize, emit_resize},
    {OpKind::TopK, emit_topk},
    {OpKind::Einsum, emit_einsum},
};

} // namespace

bool emit_movement(const GroupEmitContext& ctx, CodeWriter& out) {
  if (ctx.group().kind != GroupKind::Kernel) return false;
  for (const auto& [op, emit] : kEmitters) {
    if (op != ctx.node().op) continue;
    emit(ctx, out);
    return true;
  }
  return false;
}

// ---- Kernel skeleton ----

KernelArg input_arg(const GroupEmitContext& ctx, TensorId t, const std::string& name) {
  return {fmt::format("const {}* __restrict__ {}", storage_ctype(ctx.tensor(t).dtype, ctx), name),
          ctx.pointer(t, false)};
}

KernelArg output_arg(const GroupEmitContext& ctx, TensorId t, const std::string& name) {
  return {fmt::format("{}* __restrict__ {}", storage_ctype(ctx.tensor(t).dtype, ctx), name),
          ctx.pointer(t, true)};
}

void open_kernel(const GroupEmitContext& ctx, CodeWriter& out, const std::string& kernel,
                 const std::vector<KernelArg>& args, const std::vector<std::string>& notes) {
  out.comment(describe_node(ctx.graph(), ctx.node()));
  for (const std::string& note : notes)
    out.comment(note);
  const LaunchConfig& l = ctx.group().launch;
  std::vector<std::string> params;
  for (const KernelArg& a : args)
    params.push_back(a.declaration);
  for (const std::string& p : launch_symbol_params(ctx))
    params.push_back(p);
  out.open(fmt::format("__global__ void __launch_bounds__({}) {}({})",
                       l.block[0] * l.block[1] * l.block[2], kernel, fmt::join(params, ", ")));
}

void open_grid_stride_loop(CodeWriter& out, int64_t count, std::string_view index) {
  out.linef("const int64_t n = {};", count);
  out.line("const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;");
  out.line("const int64_t stride = int64_t(gridDim.x) * blockDim.x;");
  out.open(fmt::format("for (int64_t {0} = first; {0} < n; {0} += stride)", index));
}

void open_symbolic_loop(const GroupEmitContext& ctx, CodeWriter& out) {
  const LaunchConfig& launch = ctx.group().launch;
  out.linef("const int64_t n = {};  // elements: {}", dim_code(ctx.graph(), launch.work),
            launch.work.to_string());
  out.line("const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;");
  out.line("const int64_t stride = int64_t(gridDim.x) * blockDim.x;");
  out.open("for (int64_t i = first; i < n; i += stride)");
}

void emit_run_coordinates(const GroupEmitContext& ctx, CodeWriter& out, const SymShape& dims) {
  const Graph& g = ctx.graph();
  out.line("int64_t rest = i;");
  for (size_t d = dims.size(); d-- > 0;) {
    if (d == 0)
      out.line("const int64_t c0 = rest;");
    else if (ctx.group().launch.index32 && !dims[d].is_constant())
      out.linef("const int64_t c{0} = stitch::dims::mod32(rest, {1}); rest = "
                "stitch::dims::div32(rest, {1});",
                d, dim_code(g, dims[d]));
    else
      out.linef("const int64_t c{0} = rest % {1}; rest /= {1};", d, dim_code(g, dims[d]));
  }
}

std::string symbolic_offset(const GroupEmitContext& ctx, const std::vector<std::string>& coords,
                            const std::vector<DimExpr>& strides) {
  std::vector<std::string> terms; // innermost first
  for (size_t d = coords.size(); d-- > 0;) {
    const DimExpr& s = strides[d];
    if (coords[d] == "0" || (s.is_constant() && s.constant_value() == 0)) continue;
    terms.push_back(s.is_constant() && s.constant_value() == 1
                        ? coords[d]
                        : fmt::format("{} * {}", coords[d], dim_code(ctx.graph(), s)));
  }
  return terms.empty() ? "0" : fmt::format("{}", fmt::join(terms, " + "));
}

void emit_symbolic_strided_read(const GroupEmitContext& ctx, CodeWriter& out,
                                const SymShape& result, const std::vector<DimExpr>& strides,
                                const DimExpr& base) {
  emit_run_coordinates(ctx, out, result);
  std::string offset = symbolic_offset(ctx, coordinate_names(result.size(), "c"), strides);
  if (!(base.is_constant() && base.constant_value() == 0))
    offset = offset == "0" ? dim_code(ctx.graph(), base)
                           : fmt::format("{} + {}", offset, dim_code(ctx.graph(), base));
  out.linef("out[i] = in[{}];", offset);
}

void finish_kernel(const GroupEmitContext& ctx, CodeWriter& out, const std::string& kernel,
                   const std::vector<KernelArg>& args) {
  out.close();
  out.line();
  std::vector<std::string> values;
  for (const KernelArg& a : args)
    values.push_back(a.value);
  emit_launch(ctx, out, kernel, values);
}

void emit_launches(const GroupEmitContext& ctx, CodeWriter& out,
                   const std::vector<std::pair<std::string, std::vector<KernelArg>>>& kernels) {
  const LaunchConfig& l = ctx.group().launch;
  out.open(fmt::format(fmt::runtime(kGroupSignature), ctx.group_function()));
  // Each distinct pointer once, as in emit_launch.
  std::vector<std::string> pointers;
  auto name_of = [&](const std::string& value) {
    auto it = std::find(pointers.begin(), pointers.end(), value);
    if (it == pointers.end()) {
      out.linef("auto* const a{} = {};", pointers.size(), value);
      pointers.push_back(value);
      return fmt::format("a{}", pointers.size() - 1);
    }
    return fmt::format("a{}", it - pointers.begin());
  };
  std::vector<std::vector<std::string>> names;
  for (const auto& kernel : kernels) {
    names.emplace_back();
    for (const KernelArg& a : kernel.second)
      names.back().push_back(name_of(a.value));
  }
  out.linef("const dim3 grid({}, {}, {});", l.grid[0], l.grid[1], l.grid[2]);
  out.linef("const dim3 block({}, {}, {});", l.block[0], l.block[1], l.block[2]);
  out.line("int32_t status = 0;");
  for (size_t k = 0; k < kernels.size(); ++k) {
    const std::string& kernel = kernels[k].first;
    emit_shared_memory_opt_in(ctx, out, kernel, l.dynamic_shared_bytes);
    out.linef("status = stitch_launch_result(STITCH_LAUNCH({}, grid, block, {}, b->stream, {}), "
              "\"{}\", {}, error, error_size);",
              kernel, l.dynamic_shared_bytes, fmt::join(names[k], ", "), kernel, ctx.group().id);
    out.line("if (status != 0) return status;");
  }
  out.line("return status;");
  out.close();
}

// ---- Index arithmetic ----

std::vector<std::string> coordinate_names(size_t rank, std::string_view prefix) {
  std::vector<std::string> names;
  for (size_t d = 0; d < rank; ++d)
    names.push_back(fmt::format("{}{}", prefix, d));
  return names;
}

std::vector<std::string> coordinate_names(const Shape& dims, std::string_view prefix) {
  std::vector<std::string> names;
  for (size_t d = 0; d < dims.size(); ++d)
    names.push_back(dims[d] == 1 ? std::string("0") : fmt::format("{}{}", prefix, d));
  return names;
}

void emit_coordinates(CodeWriter& out, const Shape& dims, std::string_view index,
                      std::string_view prefix) {
  if (dims.empty()) return;
  if (dims.size() == 1) {
    out.linef("const int64_t {}0 = {};", prefix, index);
    return;
  }
  std::string rest = prefix == "c" ? "rest" : fmt::format("rest_{}", prefix);
  out.linef("int64_t {} = {};", rest, index);
  for (size_t d = dims.size(); d-- > 0;) {
    if (d == 0)
      out.linef("const int64_t {}0 = {};", prefix, rest);
    else if (dims[d] == 1)
      out.linef("const int64_t {}{} = 0;", prefix, d);
    else
      out.linef("const int64_t {0}{1} = {2} % {3}; {2} /= {3};", prefix, d, rest, dims[d]);
  }
}

std::string linear_index(const std::vector<std::string>& coords,
                         const std::vector<int64_t>& strides) {
  std::vector<std::string> terms;
  for (size_t d = 0; d < coords.size(); ++d) {
    if (strides[d] == 0 || coords[d] == "0") continue;
    if (strides[d] == 1)
      terms.push_back(coords[d]);
    else if (strides[d] < 0)
      terms.push_back(fmt::format("{} * ({})", coords[d], strides[d]));
    else
      terms.push_back(fmt::format("{} * {}", coords[d], strides[d]));
  }
  return terms.empty() ? "0" : fmt::format("{}", fmt::join(terms, " + "));
}

StridedView simplify_view(const StridedView& view) {
  StridedView s;
  s.base = view.base;
  for (size_t d = 0; d < view.dims.size(); ++d) {
    if (view.dims[d] == 1) continue;
    s.dims.push_back(view.dims[d]);
    s.strides.push_back(view.strides[d]);
  }
  // Merge an axis into the one before it when the pair walks memory as one axis would.
  StridedView merged;
  merged.base = s.base;
  for (size_t d = 0; d < s.dims.size(); ++d) {
    if (!merged.dims.empty() && merged.strides.back() == s.strides[d] * s.dims[d]) {
      merged.dims.back() *= s.dims[d];
      merged.strides.back() = s.strides[d];
      continue;
    }
    merged.dims.push_back(s.dims[d]);
    merged.strides.push_back(s.strides[d]);
  }
  return merged;
}

void emit_strided_read(CodeWriter& out, const StridedView& view) {
  StridedView v = simplify_view(view);
  std::string offset;
  if (v.dims.size() == 1) {
    offset = linear_index({"i"}, v.strides);
  } else {
    emit_coordinates(out, v.dims, "i");
    offset = linear_index(coordinate_names(v.dims.size()), v.strides);
  }
  if (v.base != 0)
    offset = offset == "0" ? fmt::format("{}", v.base) : fmt::format("{} + {}", v.base, offset);
  out.linef("out[i] = in[{}];", offset);
}

// ---- Literals ----

std::string typed_literal(DType dtype, double value, const GroupEmitContext& ctx) {
  if (!dtype_is_float(dtype)) {
    if (dtype == DType::Bool) return value != 0 ? "true" : "false";
    return fmt::format("{}({})", ctype(dtype, ctx), static_cast<int64_t>(value));
  }
  ctype(dtype, ctx); // refuses the float types code generation does not support
  // A float32 value is rounded to float first, so the literal is the value the kernel holds; a
  // float16 or bfloat16 one is an element of its storage type (movement kernels copy those).
  if (dtype == DType::Float16)
    return fmt::format(
        "stitch::float16({})",
        stitch::float_literal(half_to_float(float_to_half(static_cast<float>(value))),
                              DType::Float32));
  if (dtype == DType::BFloat16)
    return fmt::format(
        "stitch::bfloat16({})",
        stitch::float_literal(bfloat16_to_float(float_to_bfloat16(static_cast<float>(value))),
                              DType::Float32));
  return dtype == DType::Float64 ? stitch::float_literal(value, dtype)
                                 : stitch::float_literal(static_cast<float>(value), dtype);
}

std::string int_literal(DType dtype, int64_t value, const GroupEmitContext& ctx) {
  if (dtype_is_float(dtype)) return typed_literal(dtype, static_cast<double>(value), ctx);
  switch (dtype) {
  case DType::Bool:
    return value != 0 ? "true" : "false";
  case DType::Int64:
    return value == INT64_MIN ? "(-9223372036854775807LL - 1)" : fmt::format("{}LL", value);
  case DType::UInt64:
    return fmt::format("{}ull", static_cast<uint64_t>(value));
  default:
    return fmt::format("{}({})", ctype(dtype, ctx), value);
  }
}

std::string constant_element_literal(const GroupEmitContext& ctx, const Tensor& t, int64_t i) {
  STITCH_INTERNAL_CHECK(t.is_constant(), "tensor '{}' has no value", t.name);
  const char* bytes = t.constant->bytes.data() + i * dtype_size(t.dtype);
  auto read = [&](auto v) {
    std::memcpy(&v, bytes, sizeof(v));
    return v;
  };
  switch (t.dtype) {
  case DType::Float32:
    return typed_literal(t.dtype, read(float{}), ctx);
  case DType::Float64:
    return typed_literal(t.dtype, read(double{}), ctx);
  case DType::Int64:
    return int_literal(t.dtype, read(int64_t{}), ctx);
  case DType::Int32:
    return int_literal(t.dtype, read(int32_t{}), ctx);
  case DType::Int16:
    return int_literal(t.dtype, read(int16_t{}), ctx);
  case DType::Int8:
    return int_literal(t.dtype, read(int8_t{}), ctx);
  case DType::UInt64:
    return int_literal(t.dtype, static_cast<int64_t>(read(uint64_t{})), ctx);
  case DType::UInt32:
    return int_literal(t.dtype, read(uint32_t{}), ctx);
  case DType::UInt16:
    return int_literal(t.dtype, read(uint16_t{}), ctx);
  case DType::UInt8:
    return int_literal(t.dtype, read(uint8_t{}), ctx);
  case DType::Bool:
    return read(uint8_t{}) != 0 ? "true" : "false";
  case DType::Float16:
  case DType::BFloat16:
    break;
  }
  ctx.spec_error(fmt::format("dtype {}", dtype_name(t.dtype)));
}

} // namespace stitch
