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
//   Gemm           transA/transB, alpha, and beta * C as the first addend of the epilogue.
//   Epilogue       the group's nodes after the MatMul/Gemm (planner/fusion_plan.h): adds of a
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
//                  gives the same windows (the same output size), and refused otherwise.
//                  The group's nodes after a biased Conv, a residual add of its output's
//                  shape and then Relu, are its epilogue: stitch_library_conv_epilogue
//                  (cudnnConvolutionBiasActivationForward, one pass).
//   ConvTranspose  output_padding, output_shape, auto_pad, groups, bias. The library computes
//                  with the begin pad on both sides and an output padding in [0, stride); an
//                  output that would need cropping beyond that is refused.
//
// A reduction of size 0 (MatMul or Gemm with K = 0) calls no library: the output is zeros, or
// the activation of the addends' sum, written by cudaMemsetAsync or the fill kernel.
//
// The refusals need scratch memory the plan does not give groups yet: see
// scratch_refusal() for exactly what each would need.
#include "emitter/kernels.h"
#include "emitter/row_kernel.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "graph/error.h"
#include "graph/infer_context.h"
#include "planner/launch_config.h"

namespace stitch {

namespace {

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

// ---- The epilogue ----
//
// What a GemmLibrary group adds to the product and the activation it applies last (the contract
// in planner/fusion_plan.h): Gemm's own beta * C, then the Add nodes of the epilogue (a bias row
// or a residual of the output's shape), then a Relu or a tanh Gelu. Each addend goes where the
// library takes it (AddendPlan); the GEMM computes D = act(alpha * A @ B + beta * C + bias).

enum class Activation { None, Relu, GeluTanh };

// One tensor added to the product, scaled, broadcast to the output's shape.
struct Addend {
  TensorId tensor = kNoTensor;
  double scale = 1.0;
  std::string variable;  // its pointer in the group function
  std::string parameter; // its pointer in the fill kernel
};

struct Epilogue {
  std::vector<Addend> addends;
  Activation activation = Activation::None;
  TensorId result = kNoTensor; // what the group writes: its last node's output
};

// The group's nodes after nodes[0], as the planner's contract says they are; anything else is a
// planner bug.
Epilogue read_epilogue(const GroupEmitContext& ctx) {
  const FusionGroup& group = ctx.group();
  Epilogue epilogue;
  epilogue.result = ctx.node().outputs[0];
  for (size_t i = 1; i < group.nodes.size(); ++i) {
    const Node& node = ctx.node(i);
    const TensorId chained = epilogue.result;
    STITCH_INTERNAL_CHECK(epilogue.activation == Activation::None,
                          "library group {}: {} follows the epilogue's activation", group.id,
                          describe_node(ctx.graph(), node));
    STITCH_INTERNAL_CHECK(!node.inputs.empty() && node.outputs.size() == 1 &&
                              ctx.tensor(node.outputs[0]).shape == ctx.tensor(chained).shape &&
                              ctx.tensor(node.outputs[0]).dtype == DType::Float32,
                          "library group {}: {} is not an epilogue node of the product", group.id,
                          describe_node(ctx.graph(), node));
    if (node.op == OpKind::Relu || node.op == OpKind::Gelu) {
      STITCH_INTERNAL_CHECK(node.inputs[0] == chained,
                            "library group {}: {} does not read the product", group.id,
                            describe_node(ctx.graph(), node));
      // cuBLASLt's GELU is the tanh approximation; the erf form must stay out (legality.cpp).
      STITCH_INTERNAL_CHECK(node.op == OpKind::Relu ||
                                NodeContext(ctx.graph(), node).attr_string("approximate", "none") ==
                                    "tanh",
                            "library group {}: {} is not the tanh Gelu of the GELU epilogue",
                            group.id, describe_node(ctx.graph(), node));
      epilogue.activation = node.op == OpKind::Relu ? Activation::Relu : Activation::GeluTanh;
    } else {
      STITCH_INTERNAL_CHECK(node.op == OpKind::Add && node.inputs.size() == 2 &&
                                (node.inputs[0] == chained) != (node.inputs[1] == chained),
                            "library group {}: {} is not a bias or residual add of the product",
                            group.id, describe_node(ctx.graph(), node));
      const TensorId other = node.inputs[0] == chained ? node.inputs[1] : node.inputs[0];
      const std::string name = fmt::format("addend{}", i);
      epilogue.addends.push_back({other, 1.0, name, name});
    }
    epilogue.result = node.outputs[0];
  }
  return epilogue;
}

// Where each addend goes (indices into Epilogue::addends).
//   bias  the library's bias: a row of n values (scale 1) added to every row of every batch;
//   c     the library's C with beta = its scale: an addend of the output's full shape, which
//         is D's layout, when it is the only addend left;
//   fill  every addend left otherwise, summed into the output by a generated kernel before the
//         GEMM, which then accumulates onto it (C is D, beta 1). With K = 0 there is no GEMM:
//         everything goes to the fill kernel, which applies the activation too.
struct AddendPlan {
  int bias = -1;
  int c = -1;
  std::vector<int> fill;
};

// `columns_are_n`: the output's last axis is the GEMM's n (false for a MatMul with a 1-D B,
// whose output's last axis is m).
AddendPlan place_addends(const GroupEmitContext& ctx, const Epilogue& epilogue, int64_t n,
                         bool columns_are_n, int64_t k) {
  const Shape& out = ctx.tensor(epilogue.result).shape;
  AddendPlan plan;
  std::vector<int> rest;
  for (int i = 0; i < static_cast<int>(epilogue.addends.size()); ++i) {
    const Addend& addend = epilogue.addends[i];
    const Shape& s = ctx.tensor(addend.tensor).shape;
    const std::optional<Shape> broadcast = broadcast_shapes(s, out);
    const bool row = k > 0 && addend.scale == 1.0 && broadcast && *broadcast == out &&
                     shape_elements(s) == n && (n == 1 || (columns_are_n && s.back() == n));
    if (row && plan.bias < 0)
      plan.bias = i;
    else
      rest.push_back(i);
  }
  if (k > 0 && rest.size() == 1 && ctx.tensor(epilogue.addends[rest[0]].tensor).shape == out)
    plan.c = rest[0];
  else
    plan.fill = rest;
  return plan;
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
std::string emit_fill_kernel(const GroupEmitContext& ctx, CodeWriter& out, const Epilogue& epilogue,
                             const AddendPlan& plan, int64_t k) {
  const Shape& shape = ctx.tensor(epilogue.result).shape;
  std::vector<std::string> parameters, terms, described;
  for (int i : plan.fill) {
    const Addend& addend = epilogue.addends[i];
    const Shape& s = ctx.tensor(addend.tensor).shape;
    parameters.push_back(fmt::format("const float* __restrict__ {}", addend.parameter));
    const std::string element = fmt::format("{}[{}]", addend.parameter, broadcast_index(s, shape));
    terms.push_back(
        addend.scale == 1.0
            ? element
            : fmt::format("{} * {}", float_literal(addend.scale, DType::Float32), element));
    described.push_back(
        addend.scale == 1.0
            ? fmt::format("{} {}", addend.parameter, shape_to_string(s))
            : fmt::format("{} * {} {}", addend.scale, addend.parameter, shape_to_string(s)));
  }
  std::string value = fmt::format("{}", fmt::join(terms, " + "));
  const bool activates = k == 0 && epilogue.activation != Activation::None;
  if (activates && epilogue.activation == Activation::Relu)
    value = fmt::format("::stitch::ops::relu({})", value);
  if (activates && epilogue.activation == Activation::GeluTanh)
    value = fmt::format("::stitch::ops::gelu({}, 1)", value);
  const std::string kernel = ctx.kernel_name("_fill_c");
  out.comment(fmt::format("Y = {}{} broadcast to {}{}", activates ? "act(" : "",
                          fmt::join(described, " + "), shape_to_string(shape),
                          activates ? "): K = 0, no GEMM follows"
                                    : ": the GEMM then adds alpha * A @ B onto Y"));
  out.open(fmt::format("__global__ void __launch_bounds__(256) {}({}, float* __restrict__ y)",
                       kernel, fmt::join(parameters, ", ")));
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

// Launches the fill kernel from inside the group function and returns on failure.
void emit_fill_launch(const GroupEmitContext& ctx, CodeWriter& out, const std::string& kernel,
                      const Epilogue& epilogue, const AddendPlan& plan) {
  const LaunchConfig l = flat_launch(ctx.tensor(epilogue.result).elements(), 1, DeviceParams{});
  std::vector<std::string> arguments;
  for (int i : plan.fill)
    arguments.push_back(epilogue.addends[i].variable);
  arguments.push_back("result");
  out.open("");
  out.linef("const dim3 grid({}, {}, {});", l.grid[0], l.grid[1], l.grid[2]);
  out.linef("const dim3 block({}, {}, {});", l.block[0], l.block[1], l.block[2]);
  out.linef("const cudaError_t launched = STITCH_LAUNCH({}, grid, block, 0, b->stream, {});",
            kernel, fmt::join(arguments, ", "));
  out.linef("const int32_t status = stitch_launch_result(launched, \"{}\", {}, error, error_size);",
            kernel, ctx.group().id);
  out.line("if (status != 0) return status;");
  out.close();
}

// The group function's start, shared by MatMul and Gemm: the epilogue nodes in comments, the
// pointers, and the fill. Returns false when nothing is left to do (an empty output, or K = 0).
bool open_gemm_function(const GroupEmitContext& ctx, CodeWriter& out, const Epilogue& epilogue,
                        const AddendPlan& plan, int64_t k) {
  std::string fill_kernel;
  if (!plan.fill.empty() && ctx.tensor(epilogue.result).elements() > 0)
    fill_kernel = emit_fill_kernel(ctx, out, epilogue, plan, k);
  for (size_t i = 0; i < ctx.group().nodes.size(); ++i)
    out.comment((i == 0 ? "" : "epilogue: ") + describe_node(ctx.graph(), ctx.node(i)));
  open_group_function(ctx, out);
  const Node& node = ctx.node();
  bind(ctx, out, "lhs", node.inputs[0], false);
  bind(ctx, out, "rhs", node.inputs[1], false);
  for (const Addend& addend : epilogue.addends)
    bind(ctx, out, addend.variable, addend.tensor, false);
  bind(ctx, out, "result", epilogue.result, true);
  if (ctx.tensor(epilogue.result).elements() == 0) {
    out.comment("the output is empty");
    out.line("return 0;");
    out.close();
    return false;
  }
  if (!fill_kernel.empty()) emit_fill_launch(ctx, out, fill_kernel, epilogue, plan);
  if (k > 0) return true;
  if (fill_kernel.empty()) {
    emit_zero_fill(ctx, out, epilogue.result); // act(0) is 0 for Relu and Gelu alike
  } else {
    out.comment("K = 0: alpha * A @ B is zero, and the fill wrote the whole result");
    out.line("return 0;");
  }
  out.close();
  return false;
}

// The library call's C and bias arguments.
struct GemmArguments {
  std::string c = "nullptr", bias = "nullptr";
};

// Sets desc.beta and desc.epilogue as `plan` places the addends.
GemmArguments emit_epilogue_fields(const GroupEmitContext& ctx, CodeWriter& out,
                                   const Epilogue& epilogue, const AddendPlan& plan) {
  GemmArguments arguments;
  if (plan.c >= 0) {
    const Addend& addend = epilogue.addends[plan.c];
    out.linef("desc.beta = {};", float_literal(addend.scale, DType::Float32));
    arguments.c = addend.variable;
  } else if (!plan.fill.empty()) {
    out.line("desc.beta = 1.0f; // accumulate onto the addends, already in the output");
    arguments.c = "result";
  }
  if (plan.bias >= 0) {
    const Addend& addend = epilogue.addends[plan.bias];
    out.comment(fmt::format("{} {} is a row of N: the bias epilogue adds it to every row",
                            addend.variable, shape_to_string(ctx.tensor(addend.tensor).shape)));
    arguments.bias = addend.variable;
  }
  if (epilogue.activation == Activation::Relu)
    out.line("desc.epilogue = STITCH_GEMM_EPILOGUE_RELU;");
  if (epilogue.activation == Activation::GeluTanh)
    out.line("desc.epilogue = STITCH_GEMM_EPILOGUE_GELU_TANH; // Gelu with approximate=\"tanh\"");
  return arguments;
}

void emit_matmul(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  require_float32(ctx);
  Shape a = ctx.tensor(node.inputs[0]).shape, b = ctx.tensor(node.inputs[1]).shape;
  const bool columns_are_n = b.size() >= 2;
  if (a.size() == 1) a.insert(a.begin(), 1); // a row
  if (b.size() == 1) b.push_back(1);         // a column
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  Shape out_batch = *broadcast_shapes(a_batch, b_batch);
  MatmulBatch batch = split_matmul_batch(a_batch, b_batch, out_batch, m * k, k * n);
  const Epilogue epilogue = read_epilogue(ctx);
  const AddendPlan plan = place_addends(ctx, epilogue, n, columns_are_n, k);

  if (!open_gemm_function(ctx, out, epilogue, plan, k)) return;
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
  // C, when read, has D's layout (the output's full shape): stride_c = stride_d = m * n.
  const GemmArguments arguments = emit_epilogue_fields(ctx, out, epilogue, plan);
  if (batch.outer.empty()) {
    out.linef("return stitch_library_gemm(b, &desc, lhs, rhs, {}, {}, result, error, "
              "error_size);",
              arguments.c, arguments.bias);
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
  const std::string output_offset = fmt::format(" + outer * {}", batch_count * m * n);
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

// ---- Gemm ----

void emit_gemm(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  require_float32(ctx);
  NodeContext attrs(ctx.graph(), node);
  const Shape &a = ctx.tensor(node.inputs[0]).shape, &b = ctx.tensor(node.inputs[1]).shape;
  const bool trans_a = attrs.attr_flag("transA", false), trans_b = attrs.attr_flag("transB", false);
  const int64_t m = trans_a ? a[1] : a[0], k = trans_a ? a[0] : a[1], n = trans_b ? b[0] : b[1];
  const double alpha = attrs.attr_float("alpha", 1.0), beta = attrs.attr_float("beta", 1.0);
  const TensorId c_id = node.inputs.size() > 2 ? node.inputs[2] : kNoTensor;
  Epilogue epilogue = read_epilogue(ctx);
  // Gemm's own beta * C is the first addend (a full [M, N] C becomes the library's C, a row
  // vector with beta 1 its bias, any other broadcast C the fill).
  if (c_id != kNoTensor && beta != 0.0)
    epilogue.addends.insert(epilogue.addends.begin(), Addend{c_id, beta, "addend", "c"});
  const AddendPlan plan = place_addends(ctx, epilogue, n, /*columns_are_n=*/true, k);

  if (!open_gemm_function(ctx, out, epilogue, plan, k)) return;
  out.linef("stitch_gemm_desc desc = stitch_gemm_desc_packed({}, {}, {}); // m, n, k", m, n, k);
  if (trans_a) out.linef("desc.trans_a = 1; // A is stored [{}, {}]", k, m);
  if (trans_a || a[1] != k) out.linef("desc.lda = {};", a[1]);
  if (trans_b) out.linef("desc.trans_b = 1; // B is stored [{}, {}]", n, k);
  if (trans_b || b[1] != n) out.linef("desc.ldb = {};", b[1]);
  if (alpha != 1.0) out.linef("desc.alpha = {};", float_literal(alpha, DType::Float32));
  const GemmArguments arguments = emit_epilogue_fields(ctx, out, epilogue, plan);
  out.linef("return stitch_library_gemm(b, &desc, lhs, rhs, {}, {}, result, error, error_size);",
            arguments.c, arguments.bias);
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
  // The epilogue (legality.cpp's analyze_conv): a residual add, then a Relu, chained on the
  // convolution's result; the group writes the last node's result.
  TensorId residual = kNoTensor, result = node.outputs[0];
  bool relu = false;
  const std::vector<int32_t>& nodes = ctx.group().nodes;
  for (size_t i = 1; i < nodes.size(); ++i) {
    const Node& e = ctx.node(i);
    const bool chained = std::find(e.inputs.begin(), e.inputs.end(), result) != e.inputs.end();
    if (transpose || bias == kNoTensor || !chained || relu ||
        (e.op != OpKind::Relu && (e.op != OpKind::Add || residual != kNoTensor)))
      ctx.unsupported(fmt::format("node '{}' ({}) as an epilogue of '{}': cuDNN's fused "
                                  "convolution takes a biased Conv's residual add, then Relu",
                                  e.name, op_name(e.op), node.name));
    if (e.op == OpKind::Relu)
      relu = true;
    else
      residual = e.inputs[0] == result ? e.inputs[1] : e.inputs[0];
    result = e.outputs[0];
  }
  if (residual != kNoTensor && ctx.tensor(residual).shape != y)
    ctx.unsupported(fmt::format("the residual '{}' {} is not of the convolution's shape {}",
                                ctx.tensor(residual).name,
                                shape_to_string(ctx.tensor(residual).shape), shape_to_string(y)));

  out.comment(describe_node(ctx.graph(), node));
  open_group_function(ctx, out);
  bind(ctx, out, "x", node.inputs[0], false);
  bind(ctx, out, "w", node.inputs[1], false);
  if (bias != kNoTensor) bind(ctx, out, "bias", bias, false);
  if (residual != kNoTensor) bind(ctx, out, "z", residual, false);
  bind(ctx, out, "y", result, true);
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
  if (nodes.size() > 1)
    out.linef("return stitch_library_conv_epilogue(b, &desc, x, w, bias, {}, {}, y, error, "
              "error_size);  // y = {}(conv + bias{})",
              residual != kNoTensor ? "z" : "nullptr", relu ? 1 : 0, relu ? "relu" : "",
              residual != kNoTensor ? " + z" : "");
  else
    out.linef("return stitch_library_conv{}(b, &desc, x, w, {}, y, error, error_size);",
              transpose ? "_transpose" : "", bias != kNoTensor ? "bias" : "nullptr");
  out.close();
}

} // namespace

bool emit_library_call(const GroupEmitContext& ctx, CodeWriter& out) {
  const GroupKind kind = ctx.group().kind;
  if (kind != GroupKind::GemmLibrary && kind != GroupKind::ConvLibrary) return false;
  const OpKind op = ctx.node().op;
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
