// The Global scheme around a matrix-vector product: row ops whose per-row values are, through
// views, the vector x of a one-row float32 MatMul/Gemm, and that product's pointwise
// consumers, in one cooperative launch whose blocks are all resident:
//
//   phase 1  the row ops with the group's row mapping (the Regional body), each row's value
//            x[row] into global scratch (and to memory when it is an output)
//   barrier  stitch_grid_sync()
//   phase 2  y[j] = alpha * sum_k x[k] * B(k, j) + beta * C[j], then the consumers of y, per
//            output j: a warp per output when B's rows are the outputs ([N,K], a Linear
//            layer's weights; its lanes stride along the row, in 16-byte vectors where the plan
//            says, and a warp allreduce combines them), else a thread per output ([K,N]: the
//            threads of a warp read consecutive columns)
//
//   for (int64_t j = first_output; j < 1000; j += output_stride) {
//     const float* const weights = in2 + j * 512;  // row j of B
//     float acc = 0.0f;
//     for (int64_t k = lane * 4; k < 512; k += 128) { ... acc += row_values[k] * w.x; ... }
//     acc = stitch::rows::warp_allreduce(acc, stitch::rows::Sum{});
//     if (lane == 0) { const float y = acc + in3[j]; out0[j] = y; }
//   }
//
// The sums run in fp32 in a fixed order (each lane's stride, then the shuffle tree): the result
// does not depend on timing. B and C are read from memory; only x comes from the group.
#include "emitter/kernel_fused.h"

#include <set>

#include "emitter/kernels.h"
#include "emitter/pointwise_expression.h"
#include "emitter/row_kernel.h"

namespace stitch {

void emit_fused_row_gemv(const GroupEmitContext& ctx, CodeWriter& out) {
  const FusionGroup& group = ctx.group();
  const Graph& g = ctx.graph();
  const RowGemvSpec& spec = ctx.spec<RowGemvSpec>();
  if (!group.launch.cooperative)
    ctx.spec_error("a Global group needs a cooperative launch (launch.cooperative)");
  const MatrixVector& mv = spec.mv;
  const Node& product = g.nodes[spec.product];
  const TensorId x = spec.vector;
  const std::vector<int32_t>& tail = spec.consumers;
  if (group.scratch_bytes < mv.k * 4)
    ctx.spec_error(fmt::format("scratch_bytes {} < the {} bytes of the vector", group.scratch_bytes,
                               mv.k * 4));
  const bool vectors = spec.vectors;
  if (vectors && (!mv.b_rows_are_outputs || mv.k % 4 != 0))
    ctx.spec_error("16-byte vectors need B's rows to be the outputs and K a multiple of 4");

  const FusedSignature sig = fused_signature(ctx, spec.io);
  const TensorId y = product.outputs[0];
  const Shape& shape = spec.output_shape;
  const int64_t blocks = group.launch.grid[0];
  const std::string kernel = fused_kernel_name(ctx);
  fused_kernel_banner(
      ctx, sig, group.nodes,
      fmt::format(
          "Fused group {} (Global): row ops over {} rows of {}, whose per-row values are the "
          "vector of '{}' ({}), a grid-wide barrier, then the product ({} outputs, {} per "
          "output) and {} consumer(s); {} blocks.",
          group.id, spec.head.rows, spec.head.row_length, product.name, op_name(product.op), mv.n,
          mv.b_rows_are_outputs ? "a warp" : "a thread", tail.size(), blocks),
      out);
  std::vector<std::string> params = sig.params;
  params.push_back("float* __restrict__ scratch");
  out.open(kernel_head(ctx, kernel, params));
  out.comment(fmt::format("The vector: '{}', {} values, in scratch.", g.tensor(x).name, mv.k));
  out.line("float* const row_values = scratch;");

  out.comment("Phase 1: the row ops, each row's value into row_values.");
  FusedSignature head_sig = sig;
  head_sig.outputs[x] = "row_values";
  out.open("");
  emit_regional_body(ctx, head_sig, spec.head, BlockRange{}, out);
  out.close();
  out.line("stitch_grid_sync();");

  out.comment(fmt::format("Phase 2: y = {} (K = {}, N = {}), then the consumers, per output j.",
                          product.op == OpKind::Gemm ? "alpha * x B + beta * C" : "x B", mv.k,
                          mv.n));
  if (spec.vector_is_output) {
    const std::string& written = sig.outputs.at(x);
    out.open(fmt::format("for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < {}; "
                         "k += int64_t(gridDim.x) * blockDim.x)",
                         mv.k));
    out.linef("{}[k] = row_values[k];  // the vector is an output too", written);
    out.close();
  }
  const std::string& b = sig.inputs.at(mv.b);
  if (mv.b_rows_are_outputs) {
    out.line("const int lane = threadIdx.x % 32;");
    out.line("const int64_t first_output = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;");
    out.line("const int64_t output_stride = int64_t(gridDim.x) * (blockDim.x / 32);");
    out.open(fmt::format("for (int64_t j = first_output; j < {}; j += output_stride)", mv.n));
    out.linef("const float* const weights = {} + j * {};  // row j of B", b, mv.k);
    out.line("float acc = 0.0f;");
    if (vectors) {
      out.open(fmt::format("for (int64_t k = lane * 4; k < {}; k += 128)", mv.k));
      out.line("const float4 w = *reinterpret_cast<const float4*>(weights + k);");
      out.line("acc += row_values[k] * w.x;");
      out.line("acc += row_values[k + 1] * w.y;");
      out.line("acc += row_values[k + 2] * w.z;");
      out.line("acc += row_values[k + 3] * w.w;");
      out.close();
    } else {
      out.linef("for (int64_t k = lane; k < {}; k += 32) acc += row_values[k] * weights[k];", mv.k);
    }
    out.line("acc = stitch::rows::warp_allreduce(acc, stitch::rows::Sum{});");
    out.open("if (lane == 0)");
  } else {
    out.line("const int64_t first_output = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;");
    out.line("const int64_t output_stride = int64_t(gridDim.x) * blockDim.x;");
    out.open(fmt::format("for (int64_t j = first_output; j < {}; j += output_stride)", mv.n));
    out.line("float acc = 0.0f;");
    out.linef("for (int64_t k = 0; k < {}; ++k) acc += row_values[k] * {}[k * {} + j];", mv.k, b,
              mv.n);
    out.open("");
  }
  std::string value =
      mv.alpha == 1.0 ? "acc" : fmt::format("{} * acc", float_literal(mv.alpha, DType::Float32));
  if (mv.c != kNoTensor && mv.beta != 0.0) {
    std::string c;
    if (auto literal = sig.literals.find(mv.c); literal != sig.literals.end())
      c = literal->second;
    else
      c = fmt::format("{}[{}]", sig.inputs.at(mv.c), g.tensor(mv.c).elements() == 1 ? "0" : "j");
    value += mv.beta == 1.0 ? fmt::format(" + {}", c)
                            : fmt::format(" + {} * {}", float_literal(mv.beta, DType::Float32), c);
  }
  out.linef("const float y = {};", value);
  bool coordinates = false;
  std::set<TensorId> made;
  for (int32_t n : tail)
    made.insert(g.nodes[n].outputs[0]);
  for (int32_t n : tail)
    for (TensorId t : value_operands(g.nodes[n]))
      coordinates |=
          t != kNoTensor && sig.inputs.count(t) && needs_coordinates(g.tensor(t).shape, shape);
  if (coordinates) emit_coordinates(out, shape, "j", "c");
  // The product's value under each of its views (the consumers' reads of them).
  std::set<TensorId> y_views;
  for (int32_t v : spec.result_views) {
    const TensorId viewed = g.nodes[v].outputs[0];
    y_views.insert(viewed);
    out.comment(fmt::format("'{}' {} views the product: the same value y at output j.",
                            g.tensor(viewed).name, shape_to_string(g.tensor(viewed).shape)));
  }
  ValueScope consumers(ctx, tail, out, [&](TensorId t) -> std::string {
    return t == y || y_views.count(t) ? std::string("y")
                                      : load_broadcast(ctx, sig, t, shape, out, "j", "c");
  });
  for (TensorId t : spec.io.writes)
    if (t == y || made.count(t)) {
      const bool viewed =
          !spec.result_views.empty() && g.tensor(t).elements() == shape_elements(shape);
      if (g.tensor(t).shape != shape && !viewed)
        ctx.spec_error(fmt::format("output '{}' {} is not of the product's shape {}",
                                   g.tensor(t).name, shape_to_string(g.tensor(t).shape),
                                   shape_to_string(shape)));
      out.linef("{}[j] = {};", sig.outputs.at(t), consumers.value(t));
    }
  out.close();
  out.close();
  out.close();
  out.line();
  std::vector<std::string> args = sig.args;
  args.push_back(ctx.scratch_pointer("float"));
  emit_launch(ctx, out, kernel, args);
}

} // namespace stitch
