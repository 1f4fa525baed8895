// TopK: a block per row (grid-stride over rows), the selection in stitch_sort.cuh as the plan
// chose it (planner/movement_mapping.h: a bitonic sort of the row in shared memory, the row
// streamed through the buffer, or rank counting). Values come out sorted whatever `sorted`
// says (ONNX leaves the order free then), equal values by ascending index, NaN as the largest.
#include "emitter/kernel_movement.h"
#include "planner/group_spec.h"

namespace stitch {

void emit_topk(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  NodeContext nc(ctx.graph(), node);
  const OpSpec& spec = ctx.spec<OpSpec>();
  if (!spec.topk) ctx.spec_error("a TopK kernel without its selection plan");
  const TopKPlan& plan = *spec.topk;
  const bool largest = nc.opset() < 11 || nc.attr_flag("largest", true);
  if (node.outputs.size() < 2 || node.outputs[0] == kNoTensor || node.outputs[1] == kNoTensor)
    ctx.spec_error("TopK without both its values and indices outputs");
  const Tensor& input = ctx.tensor(node.inputs[0]);
  const std::string type = storage_ctype(input.dtype, ctx); // keys are compared as floats
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {input_arg(ctx, node.inputs[0], "in"),
                                 output_arg(ctx, node.outputs[0], "values"),
                                 output_arg(ctx, node.outputs[1], "indices")};
  // Over symbolic dims the rows are the run's (LaunchConfig::work; the selected axis and the
  // axes after it fixed).
  const bool symbolic = ctx.group().launch.work_per_block > 0;
  const std::string rows =
      symbolic ? dim_code(ctx.graph(), ctx.group().launch.work) : std::to_string(plan.rows);
  // A symbolic selected axis: the row's length is the run's (the buffer serves the longest).
  const std::string length =
      plan.length_dims ? dim_code(ctx.graph(), *plan.length_dims) : std::to_string(plan.length);
  std::string method =
      plan.capacity == 0 ? "each element's rank counted"
      : plan.length_dims
          ? fmt::format("the row sorted in, or streamed through, a shared buffer of {}",
                        plan.capacity)
      : plan.capacity >= plan.length
          ? fmt::format("the row sorted in a shared buffer of {}", plan.capacity)
          : fmt::format("the row streamed through a sorted shared buffer of {}", plan.capacity);
  open_kernel(
      ctx, out, kernel, args,
      {fmt::format("TopK: the {} {} of each of {} rows of {} (stride {}), sorted; {}.", plan.k,
                   largest ? "largest" : "smallest",
                   symbolic ? ctx.group().launch.work.to_string() : std::to_string(plan.rows),
                   plan.length_dims ? plan.length_dims->to_string() : std::to_string(plan.length),
                   plan.inner, method)});
  if (plan.k == 0 || (!symbolic && !plan.length_dims && plan.rows == 0)) {
    out.line("// Nothing to select.");
    finish_kernel(ctx, out, kernel, args);
    return;
  }
  if (plan.capacity > 0) {
    out.linef("STITCH_SHARED({}, keys, {});", type, plan.capacity);
    out.linef("STITCH_SHARED(int64_t, slots, {});", plan.capacity);
  }
  out.open(fmt::format("for (int64_t row = blockIdx.x; row < {}; row += gridDim.x)", rows));
  if (plan.inner == 1)
    out.line("const int64_t outer = row, inner = 0;");
  else
    out.linef("const int64_t outer = row / {0}, inner = row % {0};", plan.inner);
  const std::string row_elements =
      plan.length_dims ? (plan.inner == 1 ? length : fmt::format("{} * {}", length, plan.inner))
                       : std::to_string(plan.length * plan.inner);
  out.linef("const {}* x = in + outer * {} + inner;", type, row_elements);
  out.linef("const int64_t out_offset = outer * {} + inner;", plan.k * plan.inner);
  if (plan.capacity > 0)
    out.linef("stitch::sort::block_top_k<{}, {}>(x, {}, {}, {}, values + out_offset, indices + "
              "out_offset, {}, keys, slots);",
              largest ? "true" : "false", plan.capacity, length, plan.inner, plan.k, plan.inner);
  else
    out.linef("stitch::sort::block_top_k_by_rank<{}>(x, {}, {}, {}, values + out_offset, indices + "
              "out_offset, {});",
              largest ? "true" : "false", length, plan.inner, plan.k, plan.inner);
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

} // namespace stitch
