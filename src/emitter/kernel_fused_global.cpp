// The Global scheme: a column reduction (over the leading axes) and the consumers of its result
// broadcast back over the reduced rows, in one cooperative launch whose blocks are all resident:
//
//   phase 1  block b reduces its slice of rows for every column into scratch[b][c]
//   barrier  stitch_grid_sync()
//   phase 2  each column's partials combine in block order 0, 1, ... (fixed, no atomics) and
//            the finished value goes to scratch[blocks][c] (and to memory when it is an output)
//   barrier  stitch_grid_sync()
//   phase 3  a flat grid-stride loop evaluates the consumers per element (Local), reading the
//            column values from scratch as a tensor of the reduction's output shape
//
// The row space is `rows` reduced rows of `row_length` columns. The reduction's operand may be
// a pointwise chain of inputs of the full shape (or single elements); the consumers may read
// any input broadcast to the full shape. Scratch is global memory of the group's
// `scratch_bytes`: (blocks + 1) * row_length accumulators, in the arena where the memory plan
// placed it (live only during this group).
#include "emitter/kernel_fused.h"

#include <algorithm>

#include "emitter/kernels.h"
#include "emitter/pointwise_expression.h"
#include "emitter/row_kernel.h"
#include "graph/error.h"
#include "planner/reduction_mapping.h"

namespace stitch {

namespace {

bool is_column_reduction(const Graph& g, const Node& node, int64_t rows, int64_t columns) {
  switch (node.op) {
  case OpKind::ReduceSum:
  case OpKind::ReduceMean:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
  case OpKind::ReduceProd:
  case OpKind::ReduceL1:
  case OpKind::ReduceL2:
  case OpKind::ReduceSumSquare:
  case OpKind::ReduceLogSum:
    break;
  default:
    return false;
  }
  ReductionSpace space = reduction_space(g, node);
  // [rows, columns] reducing the leading dim: one reduced dim followed by kept ones.
  return space.single_block() && space.length == rows && space.lines == columns &&
         space.inner == columns && (space.dims.size() == 1 || space.reduced[0]);
}

} // namespace

void emit_fused_global(const GroupEmitContext& ctx, CodeWriter& out) {
  const FusionGroup& group = ctx.group();
  const Graph& g = ctx.graph();
  const int64_t rows = group.rows, columns = group.row_length;
  if (!group.launch.cooperative)
    refuse_fused(ctx, "a Global group needs a cooperative launch (launch.cooperative)");
  if (group.mapping != ThreadMapping::Flat)
    refuse_fused(ctx, fmt::format("a Global group runs with the flat mapping, not {}",
                                  mapping_name(group.mapping)));
  // The reduction, its producers before it, its consumers after it.
  int reduction = -1;
  for (size_t i = 0; i < group.nodes.size(); ++i) {
    const Node& node = g.nodes[group.nodes[i]];
    if (is_pointwise(node)) continue;
    if (reduction >= 0 || !is_column_reduction(g, node, rows, columns))
      refuse_fused(ctx,
                   fmt::format("node '{}' ({}) is not pointwise and not the one reduction over "
                               "the leading {} rows of {} columns a Global group holds",
                               node.name, op_name(node.op), rows, columns));
    reduction = static_cast<int>(i);
  }
  if (reduction < 0) refuse_fused(ctx, "a Global group without a column reduction");
  const Node& reduce = g.nodes[group.nodes[reduction]];
  const TensorId x = reduce.inputs[0], reduced = reduce.outputs[0];
  const Shape full = g.tensor(x).shape;
  const std::vector<int32_t> producers(group.nodes.begin(), group.nodes.begin() + reduction);
  const std::vector<int32_t> consumers(group.nodes.begin() + reduction + 1, group.nodes.end());

  FusedSignature sig = fused_signature(ctx, group.nodes);
  const DType x_dtype = g.tensor(x).dtype;
  const ReduceForm form = reduce_form(ctx, reduce.op, x_dtype, rows);
  const std::string acc = accumulator_type(x_dtype);
  const std::string x_type = ctype(x_dtype, ctx);
  const std::string reduced_type = ctype(g.tensor(reduced).dtype, ctx);
  const int64_t blocks = group.launch.grid[0];
  const int64_t scratch_needed =
      (blocks + 1) * columns * (acc == "double" || acc == "int64_t" || acc == "uint64_t" ? 8 : 4);
  if (group.scratch_bytes < scratch_needed)
    refuse_fused(ctx, fmt::format("scratch_bytes {} < the {} bytes ({} blocks + 1) x {} columns of "
                                  "{} need",
                                  group.scratch_bytes, scratch_needed, blocks, columns, acc));
  for (int32_t n : producers)
    for (TensorId t : pointwise_operands(g.nodes[n]))
      if (t != kNoTensor && sig.inputs.count(t) && g.tensor(t).shape != full &&
          g.tensor(t).elements() != 1)
        refuse_fused(ctx,
                     fmt::format("the reduction's producer reads '{}' {} broadcast; only inputs "
                                 "of the full shape {} are supported there",
                                 g.tensor(t).name, shape_to_string(g.tensor(t).shape),
                                 shape_to_string(full)));

  const std::string kernel = fused_kernel_name(ctx);
  fused_kernel_banner(ctx, sig, group.nodes,
                      fmt::format("Fused group {} (Global): a reduction over {} rows of {} columns "
                                  "and its consumers, two grid-wide barriers, {} blocks.",
                                  group.id, rows, columns, blocks),
                      out);
  std::vector<std::string> params = sig.params;
  params.push_back(fmt::format("{}* __restrict__ scratch", acc));
  out.open(kernel_head(ctx, kernel, params));
  out.linef("const int64_t rows = {};  // reduced", rows);
  out.linef("const int64_t columns = {};", columns);
  out.linef("const int64_t blocks = {};", blocks);

  // Phase 1.
  out.comment("Phase 1: this block's slice of rows, per column, into scratch[block][column].");
  out.line("const int64_t rows_per_block = (rows + blocks - 1) / blocks;");
  out.line("const int64_t row_begin = min(rows, int64_t(blockIdx.x) * rows_per_block);");
  out.line("const int64_t row_end = min(rows, row_begin + rows_per_block);");
  out.open("for (int64_t c = threadIdx.x; c < columns; c += blockDim.x)");
  out.linef("{} acc = {};", acc, form.identity);
  out.open("for (int64_t r = row_begin; r < row_end; ++r)");
  out.line("const int64_t i = r * columns + c;");
  ValueScope producer_scope(ctx, producers, out, [&](TensorId t) -> std::string {
    if (auto lit = sig.literals.find(t); lit != sig.literals.end()) return lit->second;
    const std::string& param = sig.inputs.at(t);
    std::string name = "x" + param.substr(2);
    out.linef("const {} {} = {}[{}];", ctype(g.tensor(t).dtype, ctx), name, param,
              g.tensor(t).elements() == 1 ? "0" : "i");
    return name;
  });
  std::string v = producer_scope.value(x);
  if (x_type != acc) v = fmt::format("{}({})", acc, v);
  out.linef("const {} v = {};", acc, v);
  out.line(fmt::format(fmt::runtime(form.step), form.contribution));
  out.close();
  out.line("scratch[blockIdx.x * columns + c] = acc;");
  out.close();
  out.line("stitch_grid_sync();");

  // Phase 2.
  out.comment(
      "Phase 2: each column's partials in block order, finished, into scratch[blocks][column].");
  out.linef("{0}* const column_values = scratch + blocks * columns;", acc);
  out.open("for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < columns; "
           "c += int64_t(gridDim.x) * blockDim.x)");
  out.linef("{} acc = {};", acc, form.identity);
  out.linef("for (int64_t b = 0; b < blocks; ++b) acc = {}(acc, scratch[b * columns + c]);",
            form.functor);
  out.linef("column_values[c] = {};", form.finish);
  if (sig.outputs.count(reduced))
    out.linef("{}[c] = {};", sig.outputs.at(reduced), convert(form.finish, acc, reduced_type));
  out.close();
  out.line("stitch_grid_sync();");

  // Phase 3.
  if (!consumers.empty()) {
    out.comment(fmt::format("Phase 3: the consumers per element; the reduction's result {} is read "
                            "from column_values.",
                            shape_to_string(g.tensor(reduced).shape)));
    FusedSignature phase3 = sig;
    phase3.outputs.erase(reduced);
    std::string name = fmt::format("in{}", sig.inputs.size());
    phase3.inputs[reduced] = name;
    if (reduced_type == acc) {
      out.linef("const {}* const {} = column_values;", acc, name);
    } else {
      out.linef("{}* const {} = reinterpret_cast<{}*>(scratch);  // the results as {}",
                reduced_type, name, reduced_type, reduced_type);
      out.open("for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < columns; "
               "c += int64_t(gridDim.x) * blockDim.x)");
      out.linef("{}[c] = {};", name, convert("column_values[c]", acc, reduced_type));
      out.close();
      out.line("stitch_grid_sync();");
    }
    out.open("");
    emit_local_body(ctx, phase3, consumers, BlockRange{}, out);
    out.close();
  }
  out.close();
  out.line();
  std::vector<std::string> args = sig.args;
  args.push_back(ctx.scratch_pointer(acc));
  emit_launch(ctx, out, kernel, args);
}

} // namespace stitch
