// Library calls: the group functions of the groups the plan gives to the libraries of
// src/runtime/library/stitch_library.h (cuBLASLt and cuDNN on the CUDA target, C++ references
// on the host target), printed from their GemmSpec / ConvSpec (legality_library.cpp decided
// the geometry and where each epilogue operand goes). Each fills a descriptor with the spec's
// constant shapes and calls stitch_library_gemm / _conv / _conv_transpose with the group's
// buffers, returning its status.
//
//   MatMul         numpy matmul as a strided batched GEMM. A 1-D A is one row and a 1-D B one
//                  column. Batch axes where each operand is either complete or broadcast
//                  (size 1) become the GEMM's batch, with stride 0 for a broadcast operand
//                  (folded into M when only A has them: one taller GEMM); outer batch axes
//                  that strides cannot express ([2,1] x [1,3]) become a loop in the group
//                  function, one batched GEMM per outer index. A and B may be read, and
//                  the result written, through Transposes (GemmSpec::layout_*): the spec's
//                  trans flags, leading dimensions and strides, printed as they are.
//   Gemm           transA/transB, alpha, and beta * C as the first addend of the epilogue.
//   Epilogue       the group's nodes after the MatMul/Gemm: adds of a
//                  bias row or a residual of the output's shape, then Relu or a tanh Gelu
//                  (cuBLASLt's GELU, STITCH_GEMM_EPILOGUE_GELU_TANH). The addends, Gemm's
//                  beta * C included, go where the library takes them: one row of N with scale
//                  1 is the bias epilogue; a lone addend of the output's full shape is the
//                  GEMM's C with beta = its scale; any others are first summed into Y by a small
//                  generated kernel ("fill"), and the GEMM then accumulates onto Y with beta = 1
//                  (C aliasing D with the same layout, which the library allows). The library
//                  applies act(alpha * A @ B + beta * C + bias) in one pass.
//   Conv           groups, strides, dilations, bias, pads from auto_pad. The library takes
//                  symmetric pads only; asymmetric ones are used when the symmetric begin pad
//                  gives the same windows (the same output size); otherwise (and for the pads
//                  of the run over symbolic extents) a generated kernel first copies X padded
//                  into the group's scratch ("_pad_x"), which the call convolves unpadded.
//                  The group's nodes after a biased Conv, a residual add of its output's
//                  shape and then Relu, are its epilogue: stitch_library_conv_epilogue
//                  (cudnnConvolutionBiasActivationForward, one pass). A channels-last
//                  group (the Transposes of X, W and the result in it) sets
//                  desc.channels_last and binds the Transposes' stored tensors.
//   ConvTranspose  output_padding, output_shape, auto_pad, groups, bias. The library computes
//                  with the begin pad on both sides and an output padding in [0, stride); an
//                  output that needs more is computed whole and unpadded into the group's
//                  scratch and cropped out by a generated kernel ("_crop_y").
//
// A reduction of size 0 (MatMul or Gemm with K = 0) calls no library: the output is zeros, or
// the activation of the addends' sum, written by cudaMemsetAsync or the fill kernel.
//
// Element types and math: the spec's dtype (float32, float16, bfloat16) types the pointers
// (stitch::float16 / stitch::bfloat16 storage for the 2-byte types) and is the descriptor's
// dtype; the spec's math sets allow_tf32. The fill kernel computes in float and rounds each
// element once to the dtype.
#include "emitter/kernel_movement.h"
#include "emitter/kernels.h"
#include "emitter/row_kernel.h"

#include <algorithm>

#include "graph/error.h"

namespace stitch {

namespace {

std::string join_ints(const std::vector<int64_t>& v) {
  return fmt::format("{}", fmt::join(v, ", "));
}

void open_group_function(const GroupEmitContext& ctx, CodeWriter& out) {
  out.open(fmt::format(fmt::runtime(kGroupSignature), ctx.group_function()));
}

// `T* const name = <pointer to t>;` with T t's storage type (const for inputs).
void bind_pointer(const GroupEmitContext& ctx, CodeWriter& out, const std::string& name, TensorId t,
                  bool writable, int64_t offset = 0) {
  out.linef("{}{}* const {} = {}{};", writable ? "" : "const ",
            storage_ctype(ctx.tensor(t).dtype, ctx), name, ctx.pointer(t, writable),
            offset == 0 ? std::string() : fmt::format(" + {}", offset));
}

// The descriptor's dtype where the spec's differs from a fresh descriptor's (float32, in
// stitch_gemm_desc_packed's and a zeroed stitch_conv_desc).
void emit_dtype_field(CodeWriter& out, DType dtype) {
  if (dtype == DType::Float16)
    out.line("desc.dtype = STITCH_LIBRARY_FLOAT16; // fp32 accumulation");
  if (dtype == DType::BFloat16)
    out.line("desc.dtype = STITCH_LIBRARY_BFLOAT16; // fp32 accumulation");
}

// ---- GEMM ----

// An addend's name, as its pointer in the group function and as the fill kernel's parameter:
// Gemm's own C is "c", the epilogue node i's addend "addend<i>".
std::string addend_variable(const GemmSpec::Addend& a) {
  return a.epilogue_index == 0 ? "c" : fmt::format("addend{}", a.epilogue_index);
}

// The element of `s` (right-aligned against `out`, to which it broadcasts) that element `i` of
// a row-major `out` reads, as an expression of i.
std::string broadcast_index(const Shape& s, const Shape& out) {
  if (s == out) return "i";
  Shape aligned(out.size() - s.size(), 1);
  aligned.insert(aligned.end(), s.begin(), s.end());
  std::vector<std::string> terms;
  int64_t out_inner = 1, s_inner = 1;
  for (size_t j = out.size(); j-- > 0;) {
    if (aligned[j] != 1) {
      std::string coordinate = out_inner == 1 ? "i" : fmt::format("i / {}", out_inner);
      if (j > 0) coordinate = fmt::format("{} % {}", coordinate, out[j]);
      terms.push_back(s_inner == 1 ? coordinate : fmt::format("({}) * {}", coordinate, s_inner));
    }
    out_inner *= out[j];
    s_inner *= aligned[j];
  }
  if (terms.empty()) return "0";
  std::reverse(terms.begin(), terms.end());
  return fmt::format("{}", fmt::join(terms, " + "));
}

// The kernel writing the fill addends' sum, broadcast to the output, into the output (and, for
// K = 0, the activation of it: the whole result).
std::string emit_fill_kernel(const GroupEmitContext& ctx, CodeWriter& out, const GemmSpec& spec) {
  const Shape& shape = ctx.tensor(spec.result).shape;
  const std::string element = storage_ctype(spec.dtype, ctx);
  std::vector<std::string> parameters, terms, described;
  for (int i : spec.fill) {
    const GemmSpec::Addend& addend = spec.addends[i];
    const Shape& s = ctx.tensor(addend.tensor).shape;
    const std::string parameter = addend_variable(addend);
    parameters.push_back(fmt::format("const {}* __restrict__ {}", element, parameter));
    std::string value = fmt::format("{}[{}]", parameter, broadcast_index(s, shape));
    if (spec.dtype != DType::Float32) value = fmt::format("float({})", value);
    terms.push_back(
        addend.scale == 1.0
            ? value
            : fmt::format("{} * {}", float_literal(addend.scale, DType::Float32), value));
    described.push_back(addend.scale == 1.0 ? fmt::format("{} {}", parameter, shape_to_string(s))
                                            : fmt::format("{} * {} {}", addend.scale, parameter,
                                                          shape_to_string(s)));
  }
  std::string value = fmt::format("{}", fmt::join(terms, " + "));
  const bool activates = spec.k == 0 && spec.activation != EpilogueActivation::None;
  if (activates && spec.activation == EpilogueActivation::Relu)
    value = fmt::format("::stitch::ops::relu({})", value);
  if (activates && spec.activation == EpilogueActivation::GeluTanh)
    value = fmt::format("::stitch::ops::gelu({}, 1)", value);
  const std::string kernel = ctx.kernel_name("_fill_c");
  out.comment(fmt::format("Y = {}{} broadcast to {}{}", activates ? "act(" : "",
                          fmt::join(described, " + "), shape_to_string(shape),
                          activates ? "): K = 0, no GEMM follows"
                                    : ": the GEMM then adds alpha * A @ B onto Y"));
  out.open(fmt::format("__global__ void __launch_bounds__(256) {}({}, {}* __restrict__ y)", kernel,
                       fmt::join(parameters, ", "), element));
  out.linef("const int64_t n = {};", shape_elements(shape));
  out.line("const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;");
  out.line("const int64_t stride = int64_t(gridDim.x) * blockDim.x;");
  out.open("for (int64_t i = first; i < n; i += stride)");
  out.linef("y[i] = {};", value);
  out.close();
  out.close();
  out.line();
  return kernel;
}

// Launches `kernel` (a GEMM's fill, a padded copy or a crop: 256 threads a block, an element a
// thread of a grid-stride loop) from inside the group function with `arguments` and returns on
// failure. `blocks` is the planned grid; where the kernel's element count, the product of
// `work`, depends on the symbols, the grid covers the run's elements once, at most `blocks`.
void emit_helper_launch(const GroupEmitContext& ctx, CodeWriter& out, const std::string& kernel,
                        int64_t blocks, const SymShape& work,
                        const std::vector<std::string>& arguments) {
  out.open("");
  if (is_static(work)) {
    out.linef("const dim3 grid({}, 1, 1);", blocks);
  } else {
    std::vector<std::string> factors, described;
    for (const DimExpr& d : work) {
      factors.push_back(dim_code(ctx.graph(), d));
      described.push_back(d.is_constant() || d.as_symbol() ? d.to_string()
                                                           : "(" + d.to_string() + ")");
    }
    out.linef("const int64_t work = {}; // {}", fmt::join(factors, " * "),
              fmt::join(described, " * "));
    out.linef("const dim3 grid(stitch::dims::grid_for(work, 256, {}), 1, 1);", blocks);
  }
  out.line("const dim3 block(256, 1, 1);");
  out.linef("const cudaError_t launched = STITCH_LAUNCH({}, grid, block, 0, b->stream, {});",
            kernel, fmt::join(arguments, ", "));
  out.linef("const int32_t status = stitch_launch_result(launched, \"{}\", {}, error, "
            "error_size);",
            kernel, ctx.group().id);
  out.line("if (status != 0) return status;");
  out.close();
}

// The group function's start: the epilogue nodes in comments, the pointers, and the fill.
// Returns false when nothing is left to do (an empty output, or K = 0).
bool open_gemm_function(const GroupEmitContext& ctx, CodeWriter& out, const GemmSpec& spec) {
  std::string fill_kernel;
  // Over symbolic dims the result is empty, and K is 0, only at some sizes: the call takes
  // the run's extents (an empty call; the empty sum's epilogue).
  const bool empty = !spec.symbolic && ctx.tensor(spec.result).elements() == 0;
  if (!spec.fill.empty() && !empty) {
    if (spec.fill_blocks < 1) ctx.spec_error("a fill kernel without its grid");
    fill_kernel = emit_fill_kernel(ctx, out, spec);
  }
  for (size_t i = 0; i < ctx.group().nodes.size(); ++i) {
    const int32_t n = ctx.group().nodes[i];
    const char* role = n == spec.product                          ? ""
                       : n == spec.layout_a || n == spec.layout_b ? "operand layout: "
                       : n == spec.slice_a || n == spec.slice_b   ? "operand slice: "
                       : n == spec.layout_result                  ? "result layout: "
                                                                  : "epilogue: ";
    out.comment(role + describe_node(ctx.graph(), ctx.node(i)));
  }
  open_group_function(ctx, out);
  bind_pointer(ctx, out, "lhs", spec.a, false, spec.offset_a);
  bind_pointer(ctx, out, "rhs", spec.b, false, spec.offset_b);
  for (const GemmSpec::Addend& addend : spec.addends)
    bind_pointer(ctx, out, addend_variable(addend), addend.tensor, false);
  bind_pointer(ctx, out, "result", spec.result, true);
  if (empty) {
    out.comment("the output is empty");
    out.line("return 0;");
    out.close();
    return false;
  }
  if (!fill_kernel.empty()) {
    std::vector<std::string> arguments;
    for (int i : spec.fill)
      arguments.push_back(addend_variable(spec.addends[i]));
    arguments.push_back("result");
    emit_helper_launch(ctx, out, fill_kernel, spec.fill_blocks,
                       {DimExpr(ctx.tensor(spec.result).elements())}, arguments);
  }
  if (spec.k > 0 || spec.symbolic) return true;
  if (fill_kernel.empty()) {
    // K = 0: every output element is an empty sum, and act(0) is 0 for Relu and Gelu alike.
    out.comment("K = 0: every output element is an empty sum");
    out.linef("return stitch_call_result(cudaMemsetAsync(result, 0, {}, b->stream), "
              "\"cudaMemsetAsync\", error, error_size);",
              ctx.tensor(spec.result).bytes());
  } else {
    out.comment("K = 0: alpha * A @ B is zero, and the fill wrote the whole result");
    out.line("return 0;");
  }
  out.close();
  return false;
}

// The library call's C and bias arguments, after desc.beta and desc.epilogue are set as the
// spec places the addends.
struct GemmArguments {
  std::string c = "nullptr", bias = "nullptr";
};

GemmArguments emit_epilogue_fields(const GroupEmitContext& ctx, CodeWriter& out,
                                   const GemmSpec& spec) {
  GemmArguments arguments;
  if (spec.c >= 0) {
    const GemmSpec::Addend& addend = spec.addends[spec.c];
    out.linef("desc.beta = {};", float_literal(addend.scale, DType::Float32));
    arguments.c = addend_variable(addend);
  } else if (!spec.fill.empty()) {
    out.line("desc.beta = 1.0f; // accumulate onto the addends, already in the output");
    arguments.c = "result";
  }
  if (spec.bias >= 0) {
    const GemmSpec::Addend& addend = spec.addends[spec.bias];
    out.comment(fmt::format("{} {} is a row of N: the bias epilogue adds it to every row",
                            addend_variable(addend),
                            shape_to_string(ctx.tensor(addend.tensor).shape)));
    arguments.bias = addend_variable(addend);
  }
  if (spec.activation == EpilogueActivation::Relu)
    out.line("desc.epilogue = STITCH_GEMM_EPILOGUE_RELU;");
  if (spec.activation == EpilogueActivation::GeluTanh)
    out.line("desc.epilogue = STITCH_GEMM_EPILOGUE_GELU_TANH; // Gelu with approximate=\"tanh\"");
  return arguments;
}

void emit_gemm_call(const GroupEmitContext& ctx, CodeWriter& out) {
  const GemmSpec& spec = ctx.spec<GemmSpec>();
  if (!open_gemm_function(ctx, out, spec)) return;
  // The call's extents: the plan's numbers, or over symbolic dims the run's values of their
  // expressions.
  const Graph& g = ctx.graph();
  using Extents = GemmSpec::SymbolicExtents;
  const std::optional<Extents>& e = spec.symbolic;
  auto extent = [&](DimExpr Extents::*field, int64_t planned) {
    return e ? dim_code(g, (*e).*field) : std::to_string(planned);
  };
  auto text = [&](DimExpr Extents::*field, int64_t planned) {
    return e ? ((*e).*field).to_string() : std::to_string(planned);
  };
  if (e) {
    emit_symbol_reads(g, symbols_of(g, {e->m, e->n, e->k, e->lda, e->ldb, e->batch_count}), out);
    out.comment(fmt::format("over symbolic dims: M = {}, N = {}, K = {}{}; the library's layouts "
                            "and algorithm are cached per shape",
                            e->m.to_string(), e->n.to_string(), e->k.to_string(),
                            e->batch_count != DimExpr(1)
                                ? fmt::format(", {} batches", e->batch_count.to_string())
                                : std::string()));
  }
  if (spec.rows_folded)
    out.comment(fmt::format("B is shared by all batches of A: one GEMM with M = {}",
                            text(&Extents::m, spec.m)));
  if (e ? e->stacked != DimExpr(1) : spec.stacked > 1)
    out.comment(fmt::format("B is shared by A's trailing batch axes: their {} matrices stack "
                            "into M = {}, one B per batch",
                            text(&Extents::stacked, spec.stacked), text(&Extents::m, spec.m)));
  out.linef("stitch_gemm_desc desc = stitch_gemm_desc_packed({}, {}, {}); // m, n, k",
            extent(&Extents::m, spec.m), extent(&Extents::n, spec.n), extent(&Extents::k, spec.k));
  emit_dtype_field(out, spec.dtype);
  if (spec.math == LibraryMath::Tf32) out.line("desc.allow_tf32 = 1; // --precision tf32");
  if (spec.trans_a)
    out.linef("desc.trans_a = 1; // A is stored [{}, {}]", text(&Extents::k, spec.k),
              text(&Extents::m, spec.m));
  if (spec.trans_a || (e ? e->lda != e->k : spec.lda != spec.k))
    out.linef("desc.lda = {};", extent(&Extents::lda, spec.lda));
  if (spec.trans_b)
    out.linef("desc.trans_b = 1; // B is stored [{}, {}]", text(&Extents::n, spec.n),
              text(&Extents::k, spec.k));
  if (spec.trans_b || (e ? e->ldb != e->n : spec.ldb != spec.n))
    out.linef("desc.ldb = {};", extent(&Extents::ldb, spec.ldb));
  if (spec.slice_a >= 0)
    out.comment(fmt::format("A is a slice of lhs {} from element {}, read in place: no copy",
                            shape_to_string(ctx.tensor(spec.a).shape), spec.offset_a));
  if (spec.slice_b >= 0)
    out.comment(fmt::format("B is a slice of rhs {} from element {}, read in place: no copy",
                            shape_to_string(ctx.tensor(spec.b).shape), spec.offset_b));
  if (spec.layout_a >= 0)
    out.comment(fmt::format("A is lhs {} read in place through the Transpose that feeds the "
                            "product: no copy",
                            shape_to_string(ctx.tensor(spec.a).shape)));
  if (spec.layout_b >= 0)
    out.comment(fmt::format("B is rhs {} read in place through the Transpose that feeds the "
                            "product: no copy",
                            shape_to_string(ctx.tensor(spec.b).shape)));
  // With a result layout there is no C (legality refuses it): the library reads none.
  if (spec.layout_result >= 0)
    out.comment(fmt::format("the product is written straight into the layout of its Transpose, "
                            "result {}",
                            shape_to_string(ctx.tensor(spec.result).shape)));
  if (e ? e->ldd != e->n : spec.ldd != spec.n)
    out.linef("desc.ldd = {}; // rows of D written into the transposed result",
              extent(&Extents::ldd, spec.ldd));
  if (spec.alpha != 1.0) out.linef("desc.alpha = {};", float_literal(spec.alpha, DType::Float32));
  if (e ? e->batch_count != DimExpr(1) : spec.batch_count > 1) {
    const bool a_broadcast = e ? e->stride_a == DimExpr(0) : spec.stride_a == 0;
    const bool b_broadcast = e ? e->stride_b == DimExpr(0) : spec.stride_b == 0;
    out.linef("desc.batch_count = {};", extent(&Extents::batch_count, spec.batch_count));
    out.linef("desc.stride_a = {};{}", extent(&Extents::stride_a, spec.stride_a),
              a_broadcast ? " // A broadcast" : "");
    out.linef("desc.stride_b = {};{}", extent(&Extents::stride_b, spec.stride_b),
              b_broadcast ? " // B broadcast" : "");
    if (e ? e->stride_d != e->m * e->n : spec.stride_d != spec.m * spec.n)
      out.linef("desc.stride_d = {};", extent(&Extents::stride_d, spec.stride_d));
  }
  // C, when read, has D's layout (the output's full shape): stride_c = stride_d = m * n.
  const GemmArguments arguments = emit_epilogue_fields(ctx, out, spec);
  if (spec.outer.empty()) {
    out.linef("return stitch_library_gemm(b, &desc, lhs, rhs, {}, {}, result, error, "
              "error_size);",
              arguments.c, arguments.bias);
    out.close();
    return;
  }
  // Outer batch axes: one batched GEMM per outer index.
  out.comment(fmt::format("outer batch axes [{}]: one call per index, {} batch(es) each",
                          join_ints(spec.outer), spec.batch_count));
  out.open(fmt::format("for (int64_t outer = 0; outer < {}; ++outer)", shape_elements(spec.outer)));
  out.line("int64_t rest = outer;");
  std::vector<std::string> a_terms, b_terms, d_terms;
  for (size_t j = spec.outer.size(); j-- > 0;) {
    if (j == 0)
      out.line("const int64_t c0 = rest;");
    else
      out.linef("const int64_t c{} = rest % {}; rest /= {};", j, spec.outer[j], spec.outer[j]);
    if (spec.outer_stride_a[j] != 0)
      a_terms.push_back(fmt::format("c{} * {}", j, spec.outer_stride_a[j]));
    if (spec.outer_stride_b[j] != 0)
      b_terms.push_back(fmt::format("c{} * {}", j, spec.outer_stride_b[j]));
    d_terms.push_back(fmt::format("c{} * {}", j, spec.outer_stride_d[j]));
  }
  auto offset = [](const std::vector<std::string>& terms) {
    return terms.empty() ? std::string() : fmt::format(" + {}", fmt::join(terms, " + "));
  };
  // D's (and C's, which has D's layout) offset for this outer index.
  const std::string output_offset = offset(d_terms);
  const std::string c_argument =
      arguments.c == "nullptr" ? arguments.c : arguments.c + output_offset;
  out.linef("const int32_t status = stitch_library_gemm(b, &desc, lhs{}, rhs{}, {}, {}, "
            "result{}, error, error_size);",
            offset(a_terms), offset(b_terms), c_argument, arguments.bias, output_offset);
  out.line("if (status != 0) return status;");
  out.close();
  out.line("return 0;");
  out.close();
}

// ---- Conv and ConvTranspose ----

// A kernel copying one image tensor into another of the same layout ([N, C, spatial...], or
// channels-last), one element per thread of a grid-stride loop: each target element reads the
// source's element of its image and channel at its spatial position plus `from` (per axis: the
// source position of the target's first element), or is `outside` where that position lies
// outside the source. A Conv's padded copy of X and a ConvTranspose's crop of Y.
struct ImageCopy {
  std::string suffix;  // the kernel's name after the group's: "_pad_x"
  std::string name;    // the kernel's whole name, once printed
  std::string comment; // what it copies, above the kernel
  std::string source, target;
  std::vector<std::string> inputs; // more read-only pointers, between source and target
  DimExpr batch;
  int64_t channels = 0;
  SymShape source_dims, target_dims, from;
  std::string outside, outside_comment;
};

// Prints `copy`'s kernel; its parameters are the source, `inputs`, the target, then the symbols
// `symbols` lists. Returns its name.
std::string emit_image_copy_kernel(const GroupEmitContext& ctx, CodeWriter& out,
                                   const ConvSpec& spec, const ImageCopy& copy,
                                   const std::vector<int>& symbols) {
  const Graph& g = ctx.graph();
  const size_t n = copy.target_dims.size();
  const std::string element = storage_ctype(spec.dtype, ctx);
  const std::string kernel = ctx.kernel_name(copy.suffix);
  out.comment(copy.comment);
  std::vector<std::string> parameters = {
      fmt::format("const {}* __restrict__ {}", element, copy.source)};
  for (const std::string& input : copy.inputs)
    parameters.push_back(fmt::format("const {}* __restrict__ {}", element, input));
  parameters.push_back(fmt::format("{}* __restrict__ {}", element, copy.target));
  for (int k : symbols)
    parameters.push_back(fmt::format("const int64_t sym{}", k));
  out.open(fmt::format("__global__ void __launch_bounds__(256) {}({})", kernel,
                       fmt::join(parameters, ", ")));
  for (size_t d = 0; d < n; ++d)
    out.linef("const int64_t source{0} = {1}, target{0} = {2}, from{0} = {3};", d,
              dim_code(g, copy.source_dims[d]), dim_code(g, copy.target_dims[d]),
              dim_code(g, copy.from[d]));
  std::string count = fmt::format("{} * {}", dim_code(g, copy.batch), copy.channels);
  for (size_t d = 0; d < n; ++d)
    count += fmt::format(" * target{}", d);
  out.linef("const int64_t count = {};", count);
  out.line("const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;");
  out.line("const int64_t stride = int64_t(gridDim.x) * blockDim.x;");
  out.open("for (int64_t i = first; i < count; i += stride)");
  out.line("int64_t rest = i;");
  const int64_t channels = copy.channels;
  if (spec.channels_last) out.linef("const int64_t c = rest % {0}; rest /= {0};", channels);
  for (size_t d = n; d-- > 0;)
    out.linef("const int64_t s{0} = rest % target{0} + from{0}; rest /= target{0};", d);
  if (!spec.channels_last) out.linef("const int64_t c = rest % {0}; rest /= {0};", channels);
  out.line("const int64_t image = rest;");
  std::vector<std::string> outside;
  for (size_t d = 0; d < n; ++d) {
    const bool never_before = copy.from[d].is_constant() && copy.from[d].constant_value() >= 0;
    if (!never_before) outside.push_back(fmt::format("s{} < 0", d));
    outside.push_back(fmt::format("s{0} >= source{0}", d));
  }
  out.linef("if ({}) {{ {}[i] = {}; continue; }} // {}", fmt::join(outside, " || "), copy.target,
            copy.outside, copy.outside_comment);
  // The element's offset in the source, outermost axis first (Horner's form).
  std::string offset = spec.channels_last ? "image" : fmt::format("image * {} + c", channels);
  for (size_t d = 0; d < n; ++d)
    offset = fmt::format("({}) * source{} + s{}", offset, d, d);
  if (spec.channels_last) offset = fmt::format("({}) * {} + c", offset, channels);
  out.linef("{}[i] = {}[{}];", copy.target, copy.source, offset);
  out.close();
  out.close();
  out.line();
  return kernel;
}

// The kernel copying X, in its layout, into the group's scratch with ConvSpec::pre_pad_begin /
// pre_pad_end zeros around each spatial axis; the copy it prints (its name by ImageCopy::name).
// Its parameters: x, the copy, then the symbols `symbols` lists.
ImageCopy emit_pre_pad_kernel(const GroupEmitContext& ctx, CodeWriter& out, const ConvSpec& spec,
                              const std::vector<int>& symbols) {
  ImageCopy copy;
  copy.suffix = "_pad_x";
  copy.source = "x";
  copy.target = "padded";
  copy.batch = spec.batch_dims ? *spec.batch_dims : DimExpr(spec.batch);
  copy.channels = spec.in_channels;
  copy.source_dims =
      spec.in_spatial_dims.empty() ? sym_shape_of(spec.in_spatial) : spec.in_spatial_dims;
  copy.target_dims = spec.padded_spatial_dims;
  std::vector<std::string> begins, ends;
  for (size_t d = 0; d < spec.pre_pad_begin.size(); ++d) {
    copy.from.push_back(-spec.pre_pad_begin[d]);
    begins.push_back(spec.pre_pad_begin[d].to_string());
    ends.push_back(spec.pre_pad_end[d].to_string());
  }
  copy.comment = fmt::format("X [{}] padded with zeros into the group's scratch, {} by [{}] "
                             "before and [{}] after its spatial axes: the library pads "
                             "symmetrically",
                             spec.channels_last ? "N, spatial..., C" : "N, C, spatial...",
                             spec.channels_last ? "channels-last" : "channels-first",
                             fmt::join(begins, ", "), fmt::join(ends, ", "));
  copy.outside = typed_literal(spec.dtype, 0.0, ctx);
  copy.outside_comment = "a pad";
  copy.name = emit_image_copy_kernel(ctx, out, spec, copy, symbols);
  return copy;
}

// The kernel copying the result's window of a ConvTranspose's uncropped output (in the group's
// scratch) into the result, ConvSpec::crop_begin on, the bias alone past the output's end; the
// copy it prints. Its parameters: the uncropped output, the bias (when the op has one), the
// result, then the symbols `symbols` lists.
ImageCopy emit_crop_kernel(const GroupEmitContext& ctx, CodeWriter& out, const ConvSpec& spec,
                           const std::vector<int>& symbols) {
  ImageCopy copy;
  copy.suffix = "_crop_y";
  copy.source = "full";
  copy.target = "y";
  if (spec.bias != kNoTensor) copy.inputs.push_back("bias");
  copy.batch = spec.batch_dims ? *spec.batch_dims : DimExpr(spec.batch);
  copy.channels = spec.out_channels;
  copy.source_dims = spec.full_spatial_dims;
  copy.target_dims =
      spec.out_spatial_dims.empty() ? sym_shape_of(spec.out_spatial) : spec.out_spatial_dims;
  for (int64_t begin : spec.crop_begin)
    copy.from.push_back(DimExpr(begin));
  copy.comment = fmt::format("Y [{}] cropped out of the whole unpadded output in the group's "
                             "scratch from [{}] on (the library computes with the begin pad on "
                             "both sides and an output padding below the stride, which cannot "
                             "give Y)",
                             spec.channels_last ? "N, spatial..., C" : "N, C, spatial...",
                             fmt::join(spec.crop_begin, ", "));
  copy.outside = spec.bias != kNoTensor ? "bias[c]" : typed_literal(spec.dtype, 0.0, ctx);
  copy.outside_comment = "reached by no input";
  copy.name = emit_image_copy_kernel(ctx, out, spec, copy, symbols);
  return copy;
}

void emit_conv_call(const GroupEmitContext& ctx, CodeWriter& out) {
  const ConvSpec& spec = ctx.spec<ConvSpec>();
  out.comment(describe_node(ctx.graph(), ctx.graph().nodes[spec.conv]));
  for (int32_t n : {spec.layout_x, spec.layout_w, spec.layout_result})
    if (n >= 0)
      out.comment("channels-last layout (read or written in place): " +
                  describe_node(ctx.graph(), ctx.graph().nodes[n]));
  for (int32_t n : spec.epilogue)
    out.comment("epilogue: " + describe_node(ctx.graph(), ctx.graph().nodes[n]));
  const Graph& g = ctx.graph();
  SymShape run_dims = spec.in_spatial_dims;
  run_dims.insert(run_dims.end(), spec.out_spatial_dims.begin(), spec.out_spatial_dims.end());
  if (spec.batch_dims) run_dims.push_back(*spec.batch_dims);
  for (const SymShape* dims :
       {&spec.pre_pad_begin, &spec.padded_spatial_dims, &spec.full_spatial_dims})
    run_dims.insert(run_dims.end(), dims->begin(), dims->end());
  const std::vector<int> symbols = symbols_of(g, run_dims);
  std::vector<std::string> symbol_arguments;
  for (int k : symbols)
    symbol_arguments.push_back(fmt::format("sym{}", k));
  ImageCopy pre_pad, crop;
  if (spec.pre_pads()) {
    if (spec.transpose || spec.pre_pad_blocks < 1 || ctx.group().scratch_bytes <= 0)
      ctx.spec_error("a padded copy of X without its grid or scratch, or for a ConvTranspose");
    pre_pad = emit_pre_pad_kernel(ctx, out, spec, symbols);
  }
  if (spec.crops()) {
    if (!spec.transpose || spec.crop_blocks < 1 || ctx.group().scratch_bytes <= 0 ||
        !spec.epilogue.empty())
      ctx.spec_error("a crop without its grid or scratch, or for a forward Conv");
    crop = emit_crop_kernel(ctx, out, spec, symbols);
  }
  open_group_function(ctx, out);
  bind_pointer(ctx, out, "x", spec.x, false);
  bind_pointer(ctx, out, "w", spec.w, false);
  if (spec.bias != kNoTensor) bind_pointer(ctx, out, "bias", spec.bias, false);
  if (spec.residual != kNoTensor) bind_pointer(ctx, out, "z", spec.residual, false);
  bind_pointer(ctx, out, "y", spec.result, true);
  emit_symbol_reads(g, symbols, out);
  if (spec.pre_pads()) {
    out.linef("{}* const padded = {};", storage_ctype(spec.dtype, ctx),
              ctx.scratch_pointer(storage_ctype(spec.dtype, ctx)));
    std::vector<std::string> arguments = {"x", "padded"};
    arguments.insert(arguments.end(), symbol_arguments.begin(), symbol_arguments.end());
    emit_helper_launch(ctx, out, pre_pad.name, spec.pre_pad_blocks, spec.pre_pad_work, arguments);
  }
  if (spec.crops())
    out.linef("{}* const full = {}; // the uncropped output", storage_ctype(spec.dtype, ctx),
              ctx.scratch_pointer(storage_ctype(spec.dtype, ctx)));
  out.line("stitch_conv_desc desc = {};");
  out.linef("desc.spatial_rank = {};", spec.in_spatial.size());
  out.line(spec.math == LibraryMath::Tf32 ? "desc.allow_tf32 = 1; // --precision tf32"
                                          : "desc.allow_tf32 = 0;");
  emit_dtype_field(out, spec.dtype);
  if (spec.batch_dims)
    out.linef("desc.batch = {}; // {}", dim_code(g, *spec.batch_dims),
              spec.batch_dims->to_string());
  else
    out.linef("desc.batch = {};", spec.batch);
  out.linef("desc.in_channels = {};", spec.in_channels);
  out.linef("desc.out_channels = {};", spec.out_channels);
  out.linef("desc.groups = {};", spec.groups);
  auto array = [&](const char* field, const std::vector<int64_t>& v) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < v.size(); ++i)
      parts.push_back(fmt::format("desc.{}[{}] = {};", field, i, v[i]));
    out.line(fmt::format("{}", fmt::join(parts, " ")));
  };
  // The spatial extents of the run: one statement per axis, its expression in a comment.
  auto run_array = [&](const char* field, const SymShape& dims) {
    for (size_t i = 0; i < dims.size(); ++i)
      out.linef("desc.{}[{}] = {};{}", field, i, dim_code(g, dims[i]),
                dims[i].is_constant() ? "" : " // " + dims[i].to_string());
  };
  if (spec.pre_pads()) {
    out.comment("X's padded copy: the call pads no more");
    run_array("in_spatial", spec.padded_spatial_dims);
  } else if (spec.in_spatial_dims.empty()) {
    array("in_spatial", spec.in_spatial);
  } else {
    run_array("in_spatial", spec.in_spatial_dims);
  }
  if (spec.crops()) {
    out.comment("the whole unpadded output, cropped after the call");
    run_array("out_spatial", spec.full_spatial_dims);
  } else if (spec.out_spatial_dims.empty()) {
    array("out_spatial", spec.out_spatial);
  } else {
    run_array("out_spatial", spec.out_spatial_dims);
  }
  array("kernel", spec.kernel);
  array("strides", spec.strides);
  array("dilations", spec.dilations);
  array("pads_begin", spec.pads);
  array("pads_end", spec.pads);
  if (spec.channels_last)
    out.linef("desc.channels_last = 1; // X, Y and Z [N, spatial..., C]; W [{}]",
              spec.transpose ? "in, kernel..., out / groups" : "out, kernel..., in / groups");
  if (spec.batch_dims || !spec.in_spatial_dims.empty())
    out.comment("the library's descriptors and algorithm are cached per shape");
  if (!spec.epilogue.empty())
    out.linef("return stitch_library_conv_epilogue(b, &desc, {}, w, bias, {}, {}, y, error, "
              "error_size);  // y = {}(conv + bias{})",
              spec.pre_pads() ? "padded" : "x", spec.residual != kNoTensor ? "z" : "nullptr",
              spec.relu ? 1 : 0, spec.relu ? "relu" : "", spec.residual != kNoTensor ? " + z" : "");
  else if (!spec.crops())
    out.linef("return stitch_library_conv{}(b, &desc, {}, w, {}, y, error, error_size);",
              spec.transpose ? "_transpose" : "", spec.pre_pads() ? "padded" : "x",
              spec.bias != kNoTensor ? "bias" : "nullptr");
  else {
    out.linef("const int32_t called = stitch_library_conv_transpose(b, &desc, x, w, {}, full, "
              "error, error_size);",
              spec.bias != kNoTensor ? "bias" : "nullptr");
    out.line("if (called != 0) return called;");
    std::vector<std::string> arguments = {"full"};
    if (spec.bias != kNoTensor) arguments.push_back("bias");
    arguments.push_back("y");
    arguments.insert(arguments.end(), symbol_arguments.begin(), symbol_arguments.end());
    emit_helper_launch(ctx, out, crop.name, spec.crop_blocks, spec.crop_work, arguments);
    out.line("return 0;");
  }
  out.close();
}

} // namespace

bool emit_library_call(const GroupEmitContext& ctx, CodeWriter& out) {
  const GroupKind kind = ctx.group().kind;
  if (kind != GroupKind::GemmLibrary && kind != GroupKind::ConvLibrary) return false;
  out.line("#include \"library/stitch_library.h\"");
  out.line();
  if (kind == GroupKind::GemmLibrary)
    emit_gemm_call(ctx, out);
  else
    emit_conv_call(ctx, out);
  return true;
}

} // namespace stitch
