// Library calls: the group functions of the groups the plan gives to the libraries of
// src/runtime/library/stitch_library.h (cuBLASLt and cuDNN on the CUDA target, C++ references
// on the host target). Each fills a descriptor with the node's constant shapes and calls
// stitch_library_gemm / _conv / _conv_transpose with the group's buffers, returning its status.
//
//   MatMul         numpy matmul as a strided batched GEMM. A 1-D A is one row and a 1-D B one
//                  column. Batch axes where each operand is either complete or broadcast
//                  (size 1) become the GEMM's batch, with stride 0 for a broadcast operand
//                  (folded into M when only A has them: one taller GEMM); outer batch axes
//                  that strides cannot express ([2,1] x [1,3]) become a loop in the group
//                  function, one batched GEMM per outer index.
//   Gemm           transA/transB, alpha. beta * C: a C of the full [M, N] is the GEMM's own C;
//                  a row vector ([N] or [1, N]) with beta == 1 is the bias epilogue; any other
//                  broadcast C is first written as beta * C into Y by a small generated kernel
//                  ("fill"), and the GEMM then accumulates into Y with beta = 1 (C aliasing D with
//                  the same layout, which the library allows).
//   Conv           groups, strides, dilations, bias, pads from auto_pad. The library takes
//                  symmetric pads only; asymmetric ones are used when the symmetric begin pad
//                  gives the same windows (the same output size), and refused otherwise.
//   ConvTranspose  output_padding, output_shape, auto_pad, groups, bias. The library computes
//                  with the begin pad on both sides and an output padding in [0, stride); an
//                  output that would need cropping beyond that is refused.
//
// A reduction of size 0 (MatMul or Gemm with K = 0) calls no library: the output is zeros,
// or beta * C, written by cudaMemsetAsync or the fill kernel.
//
// The refusals need scratch memory the plan does not give groups yet: see
// scratch_refusal() for exactly what each would need.
#include "emitter/kernels.h"

#include <cmath>

#include "graph/error.h"
#include "graph/infer_context.h"
#include "planner/launch_config.h"

namespace stitch {

namespace {

// A float as a C++ float literal ("0.5f", "1.0f", "INFINITY").
std::string float_literal(double value) {
  const float v = static_cast<float>(value); // ONNX float attributes are float32
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
  std::string s = fmt::format("{}", v); // the shortest text that reads back as v
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

std::string join_ints(const std::vector<int64_t>& v) {
  return fmt::format("{}", fmt::join(v, ", "));
}

// Every operand of a library call is float32 (the libraries are fp32 only).
void require_float32(const GroupEmitContext& ctx) {
  for (TensorId t : ctx.node().inputs)
    if (t != kNoTensor && ctx.tensor(t).dtype != DType::Float32)
      ctx.unsupported(
          fmt::format("{} on {}: the {} library call is float32 only", op_name(ctx.node().op),
                      dtype_name(ctx.tensor(t).dtype),
                      ctx.group().kind == GroupKind::GemmLibrary ? "GEMM" : "convolution"));
}

void open_group_function(const GroupEmitContext& ctx, CodeWriter& out) {
  out.open(fmt::format(fmt::runtime(kGroupSignature), ctx.group_function()));
}

// `float* const name = <pointer to t>;` (const float for inputs).
void bind(const GroupEmitContext& ctx, CodeWriter& out, const std::string& name, TensorId t,
          bool writable) {
  out.linef("{}float* const {} = {};", writable ? "" : "const ", name, ctx.pointer(t, writable));
}

// Zeros `result` (an empty sum: K = 0) and returns.
void emit_zero_fill(const GroupEmitContext& ctx, CodeWriter& out, TensorId result) {
  out.comment("K = 0: every output element is an empty sum");
  out.linef(
      "return stitch_call_result(cudaMemsetAsync(result, 0, {}, b->stream), \"cudaMemsetAsync\", "
      "error, error_size);",
      ctx.tensor(result).bytes());
}

// ---- MatMul ----

struct MatmulBatch {
  Shape outer;                         // batch axes looped over in the group function
  std::vector<int64_t> outer_stride_a; // per outer axis: elements of A per index (0: broadcast)
  std::vector<int64_t> outer_stride_b;
  int64_t inner = 1;                     // the GEMM's batch_count
  bool a_inner = false, b_inner = false; // the operand steps through the inner batch
};

// Splits the broadcast batch axes into the GEMM's batch (the innermost axes where each operand is
// complete or broadcast throughout) and the outer rest.
MatmulBatch split_matmul_batch(const Shape& a_batch, const Shape& b_batch, const Shape& out_batch,
                               int64_t a_matrix, int64_t b_matrix) {
  const size_t rank = out_batch.size();
  auto aligned = [&](const Shape& s) {
    Shape r(rank - s.size(), 1);
    r.insert(r.end(), s.begin(), s.end());
    return r;
  };
  Shape a = aligned(a_batch), b = aligned(b_batch);
  // Axes of size 1 in the output are 1 in both operands too: drop them.
  Shape o, a_kept, b_kept;
  for (size_t j = 0; j < rank; ++j)
    if (out_batch[j] != 1) {
      o.push_back(out_batch[j]);
      a_kept.push_back(a[j]);
      b_kept.push_back(b[j]);
    }
  // Element strides of each operand per kept axis.
  auto strides_of = [](const Shape& s, int64_t matrix) {
    std::vector<int64_t> st(s.size());
    int64_t acc = matrix;
    for (size_t j = s.size(); j-- > 0;) {
      st[j] = s[j] == 1 ? 0 : acc;
      acc *= s[j];
    }
    return st;
  };
  std::vector<int64_t> a_stride = strides_of(a_kept, a_matrix),
                       b_stride = strides_of(b_kept, b_matrix);
  // The inner axes: the longest suffix over which each operand is all-complete or all-broadcast.
  auto uniform = [&](const Shape& x, size_t from) {
    bool complete = true, broadcast = true;
    for (size_t j = from; j < o.size(); ++j) {
      complete = complete && x[j] == o[j];
      broadcast = broadcast && x[j] == 1;
    }
    return complete || broadcast;
  };
  size_t split = o.size();
  while (split > 0 && uniform(a_kept, split - 1) && uniform(b_kept, split - 1))
    --split;
  MatmulBatch m;
  for (size_t j = 0; j < split; ++j) {
    m.outer.push_back(o[j]);
    m.outer_stride_a.push_back(a_stride[j]);
    m.outer_stride_b.push_back(b_stride[j]);
  }
  for (size_t j = split; j < o.size(); ++j)
    m.inner *= o[j];
  m.a_inner = split < o.size() && a_kept[split] != 1;
  m.b_inner = split < o.size() && b_kept[split] != 1;
  return m;
}

void emit_matmul(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  require_float32(ctx);
  Shape a = ctx.tensor(node.inputs[0]).shape, b = ctx.tensor(node.inputs[1]).shape;
  if (a.size() == 1) a.insert(a.begin(), 1); // a row
  if (b.size() == 1) b.push_back(1);         // a column
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  Shape out_batch = *broadcast_shapes(a_batch, b_batch);
  MatmulBatch batch = split_matmul_batch(a_batch, b_batch, out_batch, m * k, k * n);

  out.comment(describe_node(ctx.graph(), node));
  open_group_function(ctx, out);
  bind(ctx, out, "lhs", node.inputs[0], false);
  bind(ctx, out, "rhs", node.inputs[1], false);
  bind(ctx, out, "result", node.outputs[0], true);
  if (ctx.tensor(node.outputs[0]).elements() == 0) {
    out.comment("the output is empty (a batch axis of size 0)");
    out.line("return 0;");
    out.close();
    return;
  }
  if (k == 0) {
    emit_zero_fill(ctx, out, node.outputs[0]);
    out.close();
    return;
  }
  int64_t rows = m, batch_count = batch.inner;
  if (batch.outer.empty() && batch.inner > 1 && batch.a_inner && !batch.b_inner) {
    out.comment(fmt::format("B is shared by all {} batches of A: one GEMM with M = {} x {}",
                            batch.inner, batch.inner, m));
    rows = m * batch.inner;
    batch_count = 1;
  }
  out.linef("stitch_gemm_desc desc = stitch_gemm_desc_packed({}, {}, {}); // m, n, k", rows, n, k);
  if (batch_count > 1) {
    out.linef("desc.batch_count = {};", batch_count);
    out.linef("desc.stride_a = {};{}", batch.a_inner ? m * k : 0,
              batch.a_inner ? "" : " // A broadcast");
    out.linef("desc.stride_b = {};{}", batch.b_inner ? k * n : 0,
              batch.b_inner ? "" : " // B broadcast");
  }
  if (batch.outer.empty()) {
    out.line("return stitch_library_gemm(b, &desc, lhs, rhs, nullptr, nullptr, result, error, "
             "error_size);");
    out.close();
    return;
  }
  // Outer batch axes: one batched GEMM per outer index.
  out.comment(fmt::format("outer batch axes [{}]: one call per index, {} batch(es) each",
                          join_ints(batch.outer), batch_count));
  out.open(
      fmt::format("for (int64_t outer = 0; outer < {}; ++outer)", shape_elements(batch.outer)));
  out.line("int64_t rest = outer;");
  std::vector<std::string> a_terms, b_terms;
  for (size_t j = batch.outer.size(); j-- > 0;) {
    if (j == 0)
      out.line("const int64_t c0 = rest;");
    else
      out.linef("const int64_t c{} = rest % {}; rest /= {};", j, batch.outer[j], batch.outer[j]);
    if (batch.outer_stride_a[j] != 0)
      a_terms.push_back(fmt::format("c{} * {}", j, batch.outer_stride_a[j]));
    if (batch.outer_stride_b[j] != 0)
      b_terms.push_back(fmt::format("c{} * {}", j, batch.outer_stride_b[j]));
  }
  auto offset = [](const std::vector<std::string>& terms) {
    return terms.empty() ? std::string() : fmt::format(" + {}", fmt::join(terms, " + "));
  };
  out.linef("const int32_t status = stitch_library_gemm(b, &desc, lhs{}, rhs{}, nullptr, nullptr, "
            "result + outer * {}, error, error_size);",
            offset(a_terms), offset(b_terms), batch_count * m * n);
  out.line("if (status != 0) return status;");
  out.close();
  out.line("return 0;");
  out.close();
}

// ---- Gemm ----

// The kernel writing beta * C, broadcast to [m, n], into the output.
std::string emit_gemm_fill_kernel(const GroupEmitContext& ctx, CodeWriter& out, const Shape& c,
                                  int64_t m, int64_t n, double beta) {
  const int64_t c_rows = c.size() == 2 ? c[0] : 1, c_cols = c.empty() ? 1 : c.back();
  std::string index;
  if (c_rows != 1 && c_cols != 1)
    index = "i";
  else if (c_rows != 1)
    index = fmt::format("i / {}", n);
  else if (c_cols != 1)
    index = fmt::format("i % {}", n);
  else
    index = "0";
  const std::string kernel = ctx.kernel_name("_fill_c");
  out.comment(
      fmt::format("Y = beta * C, C {} broadcast to [{}, {}]: the GEMM then adds alpha * A @ B",
                  shape_to_string(c), m, n));
  out.open(fmt::format("__global__ void __launch_bounds__(256) {}(const float* __restrict__ c, "
                       "float* __restrict__ y)",
                       kernel));
  out.linef("const int64_t n = {};", m * n);
  out.line("const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;");
  out.line("const int64_t stride = int64_t(gridDim.x) * blockDim.x;");
  out.open("for (int64_t i = first; i < n; i += stride)");
  if (beta == 1.0)
    out.linef("y[i] = c[{}];", index);
  else
    out.linef("y[i] = {} * c[{}];", float_literal(beta), index);
  out.close();
  out.close();
  out.line();
  return kernel;
}

// Launches the fill kernel from inside the group function and returns on failure.
void emit_fill_launch(const GroupEmitContext& ctx, CodeWriter& out, const std::string& kernel,
                      int64_t elements) {
  const LaunchConfig l = flat_launch(elements, 1, DeviceParams{});
  out.open("");
  out.linef("const dim3 grid({}, {}, {});", l.grid[0], l.grid[1], l.grid[2]);
  out.linef("const dim3 block({}, {}, {});", l.block[0], l.block[1], l.block[2]);
  out.linef(
      "const cudaError_t launched = STITCH_LAUNCH({}, grid, block, 0, b->stream, addend, result);",
      kernel);
  out.linef("const int32_t status = stitch_launch_result(launched, \"{}\", {}, error, error_size);",
            kernel, ctx.group().id);
  out.line("if (status != 0) return status;");
  out.close();
}

void emit_gemm(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  require_float32(ctx);
  NodeContext attrs(ctx.graph(), node);
  const Shape &a = ctx.tensor(node.inputs[0]).shape, &b = ctx.tensor(node.inputs[1]).shape;
  const bool trans_a = attrs.attr_flag("transA", false), trans_b = attrs.attr_flag("transB", false);
  const int64_t m = trans_a ? a[1] : a[0], k = trans_a ? a[0] : a[1], n = trans_b ? b[0] : b[1];
  const double alpha = attrs.attr_float("alpha", 1.0), beta = attrs.attr_float("beta", 1.0);
  const TensorId c_id = node.inputs.size() > 2 ? node.inputs[2] : kNoTensor;
  const bool reads_c = c_id != kNoTensor && beta != 0.0;
  const Shape c = reads_c ? ctx.tensor(c_id).shape : Shape{};
  const int64_t c_rows = c.size() == 2 ? c[0] : 1, c_cols = c.empty() ? 1 : c.back();

  // How beta * C gets in: none, the GEMM's own C, the bias epilogue, or the fill kernel.
  enum class Addend { None, GemmC, Bias, Fill } addend = Addend::None;
  if (reads_c) {
    if (k == 0)
      addend = Addend::Fill;
    else if (c == Shape{m, n})
      addend = Addend::GemmC;
    else if (beta == 1.0 && c_rows == 1 && c_cols == n)
      addend = Addend::Bias;
    else
      addend = Addend::Fill;
  }
  std::string fill_kernel;
  if (addend == Addend::Fill) fill_kernel = emit_gemm_fill_kernel(ctx, out, c, m, n, beta);

  out.comment(describe_node(ctx.graph(), node));
  open_group_function(ctx, out);
  bind(ctx, out, "lhs", node.inputs[0], false);
  bind(ctx, out, "rhs", node.inputs[1], false);
  if (reads_c) bind(ctx, out, "addend", c_id, false);
  bind(ctx, out, "result", node.outputs[0], true);
  if (addend == Addend::Fill) emit_fill_launch(ctx, out, fill_kernel, m * n);
  if (k == 0) {
    if (addend == Addend::Fill) {
      out.comment("K = 0: alpha * A @ B is zero");
      out.line("return 0;");
      out.close();
    } else {
      emit_zero_fill(ctx, out, node.outputs[0]);
      out.close();
    }
    return;
  }
  out.linef("stitch_gemm_desc desc = stitch_gemm_desc_packed({}, {}, {}); // m, n, k", m, n, k);
  if (trans_a) out.linef("desc.trans_a = 1; // A is stored [{}, {}]", k, m);
  if (trans_a || a[1] != k) out.linef("desc.lda = {};", a[1]);
  if (trans_b) out.linef("desc.trans_b = 1; // B is stored [{}, {}]", n, k);
  if (trans_b || b[1] != n) out.linef("desc.ldb = {};", b[1]);
  if (alpha != 1.0) out.linef("desc.alpha = {};", float_literal(alpha));
  std::string c_arg = "nullptr", bias_arg = "nullptr";
  switch (addend) {
  case Addend::None:
    break;
  case Addend::GemmC:
    out.linef("desc.beta = {};", float_literal(beta));
    c_arg = "addend";
    break;
  case Addend::Bias:
    out.comment("C is a row vector and beta is 1: the bias epilogue adds it to every row");
    bias_arg = "addend";
    break;
  case Addend::Fill:
    out.line("desc.beta = 1.0f; // accumulate onto beta * C, already in the output");
    c_arg = "result";
    break;
  }
  out.linef("return stitch_library_gemm(b, &desc, lhs, rhs, {}, {}, result, error, error_size);",
            c_arg, bias_arg);
  out.close();
}

// ---- Conv and ConvTranspose ----

// The spatial geometry of one convolution as the library takes it.
struct ConvGeometry {
  Shape in, out, kernel, strides, dilations, pads; // pads: symmetric, one per spatial axis
};

// What a refused geometry would need from the plan to be computed exactly.
[[noreturn]] void scratch_refusal(const GroupEmitContext& ctx, const std::string& what,
                                  int64_t bytes, const std::string& how) {
  ctx.unsupported(
      fmt::format("{} (the convolution library takes symmetric pads only; this needs {} "
                  "bytes of per-group scratch memory, which the plan does not reserve "
                  "yet, {})",
                  what, bytes, how));
}

void read_spatial_attributes(const NodeContext& attrs, size_t n, ConvGeometry& g) {
  g.strides = attrs.attr_ints("strides", std::vector<int64_t>(n, 1));
  g.dilations = attrs.attr_ints("dilations", std::vector<int64_t>(n, 1));
}

// Conv: pads as rule_conv reads them, resolved against auto_pad.
ConvGeometry conv_geometry(const GroupEmitContext& ctx) {
  const Node& node = ctx.node();
  NodeContext attrs(ctx.graph(), node);
  const Shape &x = ctx.tensor(node.inputs[0]).shape, &w = ctx.tensor(node.inputs[1]).shape,
              &y = ctx.tensor(node.outputs[0]).shape;
  const size_t n = x.size() - 2;
  ConvGeometry g;
  g.in.assign(x.begin() + 2, x.end());
  g.out.assign(y.begin() + 2, y.end());
  g.kernel.assign(w.begin() + 2, w.end());
  read_spatial_attributes(attrs, n, g);
  const std::vector<int64_t> pads = attrs.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  const std::string auto_pad = attrs.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> begins, ends;
  bool exact = true;
  for (size_t i = 0; i < n; ++i) {
    const int64_t extent = (g.kernel[i] - 1) * g.dilations[i] + 1;
    int64_t begin = 0, end = 0;
    if (auto_pad == "NOTSET") {
      begin = pads[i];
      end = pads[i + n];
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * g.strides[i] + extent - g.in[i]);
      begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end = total - begin;
    }
    // Windows start at o * stride - begin whatever the end pad; the end pad only decides how
    // many there are. The symmetric begin pad is exact when it gives the same count.
    const int64_t padded_symmetric = g.in[i] + 2 * begin;
    if (begin != end &&
        (padded_symmetric < extent || (padded_symmetric - extent) / g.strides[i] + 1 != g.out[i]))
      exact = false;
    begins.push_back(begin);
    ends.push_back(end);
  }
  if (!exact) {
    int64_t padded = x[0] * x[1];
    for (size_t i = 0; i < n; ++i)
      padded *= g.in[i] + begins[i] + ends[i];
    scratch_refusal(
        ctx,
        fmt::format("Conv with the asymmetric pads [{}] at the begin and [{}] at the end",
                    join_ints(begins), join_ints(ends)),
        padded * 4, "to hold X padded with zeros for a convolution with pads 0");
  }
  g.pads = begins;
  return g;
}

// ConvTranspose: the begin pad as ONNX defines it (from output_shape or auto_pad when either
// is given: the total padding split with the odd one at the begin except for SAME_UPPER), used
// on both sides with the output padding that gives the output size.
ConvGeometry conv_transpose_geometry(const GroupEmitContext& ctx) {
  const Node& node = ctx.node();
  NodeContext attrs(ctx.graph(), node);
  const Shape &x = ctx.tensor(node.inputs[0]).shape, &w = ctx.tensor(node.inputs[1]).shape,
              &y = ctx.tensor(node.outputs[0]).shape;
  const size_t n = x.size() - 2;
  ConvGeometry g;
  g.in.assign(x.begin() + 2, x.end());
  g.out.assign(y.begin() + 2, y.end());
  g.kernel.assign(w.begin() + 2, w.end());
  read_spatial_attributes(attrs, n, g);
  const std::vector<int64_t> pads = attrs.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  const std::vector<int64_t> output_padding =
      attrs.attr_ints("output_padding", std::vector<int64_t>(n, 0));
  const std::string auto_pad = attrs.attr_string("auto_pad", "NOTSET");
  const bool derived =
      attrs.has_attr("output_shape") || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  for (size_t i = 0; i < n; ++i) {
    const int64_t extent = (g.kernel[i] - 1) * g.dilations[i] + 1;
    const int64_t full = g.strides[i] * (g.in[i] - 1) + output_padding[i] + extent; // unpadded size
    int64_t begin = 0;
    if (derived) {
      const int64_t total = std::max<int64_t>(0, full - g.out[i]);
      begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else if (auto_pad == "NOTSET") {
      begin = pads[i];
    }
    const int64_t base = g.strides[i] * (g.in[i] - 1) + extent - 2 * begin;
    const int64_t library_padding = g.out[i] - base;
    if (base < 1 || library_padding < 0 || library_padding >= g.strides[i]) {
      int64_t full_output = shape_elements({y[0], y[1]});
      for (size_t j = 0; j < n; ++j)
        full_output *= g.strides[j] * (g.in[j] - 1) + (g.kernel[j] - 1) * g.dilations[j] + 1;
      scratch_refusal(ctx,
                      fmt::format("ConvTranspose whose output size {} on spatial axis {} needs the "
                                  "output padding {} with the begin pad {} on both sides, outside "
                                  "[0, stride {})",
                                  g.out[i], i, library_padding, begin, g.strides[i]),
                      full_output * 4,
                      "to hold the output computed without pads for a kernel that crops it and "
                      "adds the bias");
    }
    g.pads.push_back(begin);
  }
  return g;
}

void emit_conv(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  require_float32(ctx);
  const bool transpose = node.op == OpKind::ConvTranspose;
  const Shape &x = ctx.tensor(node.inputs[0]).shape, &y = ctx.tensor(node.outputs[0]).shape;
  const size_t n = x.size() - 2;
  if (n > 3)
    ctx.unsupported(
        fmt::format("{} with {} spatial axes (the library takes 1 to 3)", op_name(node.op), n));
  NodeContext attrs(ctx.graph(), node);
  const int64_t groups = attrs.attr_int("group", 1);
  ConvGeometry g = transpose ? conv_transpose_geometry(ctx) : conv_geometry(ctx);
  const TensorId bias = node.inputs.size() > 2 ? node.inputs[2] : kNoTensor;

  out.comment(describe_node(ctx.graph(), node));
  open_group_function(ctx, out);
  bind(ctx, out, "x", node.inputs[0], false);
  bind(ctx, out, "w", node.inputs[1], false);
  if (bias != kNoTensor) bind(ctx, out, "bias", bias, false);
  bind(ctx, out, "y", node.outputs[0], true);
  out.line("stitch_conv_desc desc = {};");
  out.linef("desc.spatial_rank = {};", n);
  out.line("desc.allow_tf32 = 0;");
  out.linef("desc.batch = {};", x[0]);
  out.linef("desc.in_channels = {};", x[1]);
  out.linef("desc.out_channels = {};", y[1]);
  out.linef("desc.groups = {};", groups);
  auto array = [&](const char* field, const std::vector<int64_t>& v) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < v.size(); ++i)
      parts.push_back(fmt::format("desc.{}[{}] = {};", field, i, v[i]));
    out.line(fmt::format("{}", fmt::join(parts, " ")));
  };
  array("in_spatial", g.in);
  array("out_spatial", g.out);
  array("kernel", g.kernel);
  array("strides", g.strides);
  array("dilations", g.dilations);
  array("pads_begin", g.pads);
  array("pads_end", g.pads);
  out.linef("return stitch_library_conv{}(b, &desc, x, w, {}, y, error, error_size);",
            transpose ? "_transpose" : "", bias != kNoTensor ? "bias" : "nullptr");
  out.close();
}

} // namespace

bool emit_library_call(const GroupEmitContext& ctx, CodeWriter& out) {
  const GroupKind kind = ctx.group().kind;
  if (kind != GroupKind::GemmLibrary && kind != GroupKind::ConvLibrary) return false;
  const OpKind op = ctx.node().op;
  STITCH_INTERNAL_CHECK(ctx.group().nodes.size() == 1, "library group {} holds {} nodes",
                        ctx.group().id, ctx.group().nodes.size());
  out.line("#include \"library/stitch_library.h\"");
  out.line();
  if (op == OpKind::MatMul)
    emit_matmul(ctx, out);
  else if (op == OpKind::Gemm)
    emit_gemm(ctx, out);
  else if (op == OpKind::Conv || op == OpKind::ConvTranspose)
    emit_conv(ctx, out);
  else
    ctx.unsupported(fmt::format("no library call for op {} yet", op_name(op)));
  return true;
}

} // namespace stitch
