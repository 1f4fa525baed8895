// Global groups around a matrix-vector product (kernel_fused_gemv.cpp prints them): a Regional
// head (row ops and their pointwise producers) whose per-row values are, through views, the
// vector x of a one-row float32 MatMul/Gemm (K = the head's rows), then pointwise consumers of
// its result y. One cooperative launch: the head with its row mapping, x into global scratch, a
// grid-wide barrier, then the product (a warp per output when B's rows are the outputs, else a
// thread per output) and the consumers per output element. A product this small (one row) is
// memory-bound: it streams B once, and fused it saves the launch and the round trip of x (e.g.
// ResNet's classifier after its global average pool).
#include "planner/launch_config.h"
#include "planner/legality_internal.h"

namespace stitch::legality {

FusionDecision analyze_row_gemv(const FusionContext& ctx, GroupAnalysis& a,
                                const AnalysisOverrides& overrides) {
  const Graph& g = ctx.graph;
  int32_t gemm = -1;
  for (int32_t n : a.nodes)
    if (ctx.node_class[n] == NodeClass::Gemm) gemm = n;
  RowGemvSpec spec;
  spec.product = gemm;
  MatrixVector& mv = spec.mv;
  if (FusionDecision d = matrix_vector(g, g.nodes[gemm], mv); !d)
    return FusionDecision::no(
        fmt::format("{} follows row ops but {}", ctx.describe(gemm), d.reason));
  std::vector<int32_t> head;
  for (int32_t n : a.nodes) {
    if (n == gemm) continue;
    if (ctx.ancestors[gemm].test(n)) {
      (ctx.node_class[n] == NodeClass::View ? spec.views : head).push_back(n);
    } else if (ctx.descendants[gemm].test(n)) {
      if (ctx.node_class[n] == NodeClass::View) {
        spec.result_views.push_back(n);
        continue;
      }
      if (ctx.node_class[n] != NodeClass::Pointwise)
        return FusionDecision::no(fmt::format("{} {} after the matrix-vector product {}; only "
                                              "pointwise consumers may follow it",
                                              ctx.describe(n), class_sentence(ctx.node_class[n]),
                                              ctx.describe(gemm)));
      spec.consumers.push_back(n);
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
  if (views_on_path != spec.views.size())
    return FusionDecision::no(
        fmt::format("a view in the group is not on the path of {}'s vector", ctx.describe(gemm)));
  if (ctx.producer[x] < 0 || !contains(head, ctx.producer[x]))
    return FusionDecision::no(fmt::format("{}'s vector '{}' is not computed by the group's row "
                                          "ops",
                                          ctx.describe(gemm), g.tensor(x).name));
  for (TensorId t : {mv.b, mv.c})
    if (t != kNoTensor && contains(a.nodes, ctx.producer[t]))
      return FusionDecision::no(fmt::format("{} reads '{}' from inside the group; only its "
                                            "vector may come from there",
                                            ctx.describe(gemm), g.tensor(t).name));
  spec.vector = x;
  // Phase 1: the head is a Regional group of its own whose per-row values are x.
  for (int32_t n : head)
    if (ctx.node_class[n] != NodeClass::Pointwise && ctx.node_class[n] != NodeClass::RowOp)
      return FusionDecision::no(fmt::format("{} {}; only row ops and pointwise ops may come "
                                            "before the matrix-vector product",
                                            ctx.describe(n), class_sentence(ctx.node_class[n])));
  GroupAnalysis h;
  h.nodes = head;
  boundary(ctx, head, h);
  if (FusionDecision d = regional_spec(ctx, h, overrides, spec.head); !d)
    return FusionDecision::no("the row ops before the matrix-vector product: " + d.reason);
  const bool row_output = std::find(spec.head.row_outputs.begin(), spec.head.row_outputs.end(),
                                    x) != spec.head.row_outputs.end();
  if (!row_output || g.tensor(x).dtype != DType::Float32 || g.tensor(x).elements() != h.rows ||
      h.rows != mv.k)
    return FusionDecision::no(fmt::format("the vector '{}' {} of {} is not the {} per-row values "
                                          "of the row ops",
                                          g.tensor(x).name, shape_str(g.tensor(x).shape),
                                          ctx.describe(gemm), h.rows));
  spec.vector_is_output = std::find(a.outputs.begin(), a.outputs.end(), x) != a.outputs.end();
  // Phase 2: the consumers, per element of y.
  spec.output_shape = g.tensor(g.nodes[gemm].outputs[0]).shape;
  const Shape& y = spec.output_shape;
  // The views of y (each of y or of one before it), read inside the group alone: the same
  // values; consumers reading them see nothing else but y's values, their own and scalars.
  std::vector<TensorId> y_values = {g.nodes[gemm].outputs[0]};
  auto is_y_value = [&](TensorId t) {
    return std::find(y_values.begin(), y_values.end(), t) != y_values.end();
  };
  for (int32_t v : spec.result_views) {
    const TensorId in = g.nodes[v].inputs[0], out = g.nodes[v].outputs[0];
    if (!is_y_value(in))
      return FusionDecision::no(fmt::format("the view {} after the matrix-vector product {} "
                                            "views neither its result nor a view of it",
                                            ctx.describe(v), ctx.describe(gemm)));
    if (std::find(a.outputs.begin(), a.outputs.end(), out) != a.outputs.end())
      return FusionDecision::no(fmt::format("the view {}'s result '{}' is read outside the "
                                            "group; the group never writes it",
                                            ctx.describe(v), g.tensor(out).name));
    y_values.push_back(out);
  }
  if (!spec.result_views.empty()) {
    for (int32_t n : spec.consumers) {
      if (g.tensor(g.nodes[n].outputs[0]).elements() != shape_elements(y))
        return FusionDecision::no(fmt::format("{} reads the product {} through a view but its "
                                              "result is not one value per output",
                                              ctx.describe(n), ctx.describe(gemm)));
      for (TensorId t : present_operands(g.nodes[n])) {
        const int32_t p = ctx.producer[t];
        if (contains(head, p) || contains(spec.views, p))
          return FusionDecision::no(fmt::format("{} reads '{}' of the row ops' phase; the "
                                                "consumers see only the product's phase",
                                                ctx.describe(n), g.tensor(t).name));
        if (!is_y_value(t) && !contains(spec.consumers, p) && g.tensor(t).elements() != 1)
          return FusionDecision::no(fmt::format("{} reads '{}' {} beside the product's values "
                                                "through a view (only scalars may be read "
                                                "there)",
                                                ctx.describe(n), g.tensor(t).name,
                                                shape_str(g.tensor(t).shape)));
      }
    }
  }
  for (int32_t n : spec.consumers) {
    if (!spec.result_views.empty()) continue; // checked above
    const Tensor& r = g.tensor(g.nodes[n].outputs[0]);
    if (!broadcasts_to(r.shape, y))
      return FusionDecision::no(fmt::format("{}'s result {} does not broadcast to the product's "
                                            "{}",
                                            ctx.describe(n), shape_str(r.shape), shape_str(y)));
    for (TensorId t : present_operands(g.nodes[n])) {
      if (contains(head, ctx.producer[t]) || contains(spec.views, ctx.producer[t]))
        return FusionDecision::no(fmt::format("{} reads '{}' of the row ops' phase; the "
                                              "consumers see only the product's phase",
                                              ctx.describe(n), g.tensor(t).name));
      if (!broadcasts_to(g.tensor(t).shape, y) && !is_scalar_float_literal(g.tensor(t)))
        return FusionDecision::no(fmt::format("{} reads '{}' {}, which does not broadcast to the "
                                              "product's {}",
                                              ctx.describe(n), g.tensor(t).name,
                                              shape_str(g.tensor(t).shape), shape_str(y)));
    }
    a.recomputed += shape_elements(y) - r.elements();
  }
  for (TensorId t : a.outputs) {
    const int32_t p = ctx.producer[t];
    const bool product_phase = p == gemm || std::find(spec.consumers.begin(), spec.consumers.end(),
                                                      p) != spec.consumers.end();
    if (product_phase && g.tensor(t).shape != y &&
        (spec.result_views.empty() || g.tensor(t).elements() != shape_elements(y)))
      return FusionDecision::no(fmt::format("the group writes '{}' {}, not of the product's "
                                            "shape {}",
                                            g.tensor(t).name, shape_str(g.tensor(t).shape),
                                            shape_str(y)));
  }
  a.rows = h.rows;
  a.row_length = h.row_length;
  a.cached_rows = h.cached_rows;
  a.shared_bytes = h.shared_bytes;
  a.iteration = h.iteration;
  a.recomputed += h.recomputed;
  a.registers = h.registers + kRegistersPerNode * static_cast<int64_t>(spec.consumers.size() + 2);
  if (FusionDecision d = fits_registers(ctx, a); !d) return d;
  a.group.mapping = h.group.mapping;
  LaunchConfig& launch = a.group.launch;
  launch = h.group.launch;
  // Every block resident: the SMs' thread slots and registers (cooperative_blocks_per_sm), and
  // their shared memory when the head keeps rows there.
  const int64_t block = launch.block[0];
  const int sms = cooperative_sms(ctx.device);
  int64_t per_sm = cooperative_blocks_per_sm(ctx.device, block);
  if (launch.dynamic_shared_bytes > 0)
    per_sm = std::min(per_sm, std::max<int64_t>(1, ctx.device.max_shared_per_block /
                                                       launch.dynamic_shared_bytes));
  const int64_t resident = int64_t{sms} * per_sm;
  const int64_t outputs_per_block = mv.b_rows_are_outputs ? block / 32 : block;
  const int64_t product_blocks = (mv.n + outputs_per_block - 1) / outputs_per_block;
  launch.grid = {std::clamp<int64_t>(std::max(launch.grid[0], product_blocks), 1, resident), 1, 1};
  launch.cooperative = true;
  launch.min_blocks_per_sm = (launch.grid[0] + sms - 1) / sms;
  // B's rows stream as 16-byte vectors when they are the outputs' and K is a multiple of 4 (a
  // constant B sits 16-byte aligned in the weights).
  spec.vectors = mv.b_rows_are_outputs && mv.k % 4 == 0 && g.tensor(mv.b).is_constant();
  launch.vector_width = spec.vectors ? 4 : 1;
  a.group.scratch_bytes = mv.k * 4; // x, as fp32
  spec.io = kernel_interface(ctx, a.nodes, a.inputs, a.outputs);
  a.kind = GroupKind::Kernel;
  a.scheme = StitchScheme::Global;
  a.group.spec = std::move(spec);
  return FusionDecision::ok();
}

} // namespace stitch::legality
