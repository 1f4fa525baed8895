// The ColumnSpec printer: a column reduction (over the leading axes) and the consumers of its
// result, in one cooperative launch whose blocks are all resident:
//
//   phase 1  block b reduces its slice of rows for every column into scratch[b][c]
//   barrier  stitch_grid_sync()
//   phase 2  each column's partials combine in block order 0, 1, ... (fixed, no atomics) and
//            the finished value goes to scratch[blocks][c] (and to memory when it is an
//            output); the per-column consumers that are outputs are evaluated for column c
//   barrier  stitch_grid_sync()
//   phase 3  a flat grid-stride loop evaluates the element consumers per element, reading the
//            column values from scratch as a tensor of the reduction's output shape
//
// The row space is `rows` reduced rows of `columns` columns. The reduction reads its input of
// the full shape; the consumers may read any input broadcast to their phase's shape. Scratch is
// global memory of the group's `scratch_bytes`: (blocks + 1) * columns accumulators, in the
// arena where the memory plan placed it (live only during this group).
#include "emitter/kernel_fused.h"

#include <algorithm>

#include "emitter/kernels.h"
#include "emitter/pointwise_expression.h"
#include "emitter/row_kernel.h"
#include "graph/error.h"

namespace stitch {

void emit_fused_global(const GroupEmitContext& ctx, CodeWriter& out) {
  const FusionGroup& group = ctx.group();
  const Graph& g = ctx.graph();
  const ColumnSpec& spec = ctx.spec<ColumnSpec>();
  const int64_t rows = spec.rows, columns = spec.columns;
  if (!group.launch.cooperative)
    ctx.spec_error("a Global group needs a cooperative launch (launch.cooperative)");
  const Node& reduce = g.nodes[spec.reduction];
  const TensorId x = reduce.inputs[0], reduced = reduce.outputs[0];
  const FusedSignature sig = fused_signature(ctx, spec.io);
  const DType x_dtype = g.tensor(x).dtype;
  const ReduceForm form = reduce_form(ctx, reduce.op, x_dtype, rows);
  const std::string acc = accumulator_type(x_dtype);
  const std::string x_type = ctype(x_dtype, ctx);
  const std::string reduced_type = ctype(g.tensor(reduced).dtype, ctx);
  const int64_t blocks = spec.blocks;
  const int64_t scratch_needed = (blocks + 1) * columns * dtype_size(spec.accumulator);
  if (blocks != group.launch.grid[0] || group.scratch_bytes < scratch_needed)
    ctx.spec_error(fmt::format("scratch_bytes {} and grid {} for the {} bytes of ({} blocks + 1) x "
                               "{} columns of {}",
                               group.scratch_bytes, group.launch.grid[0], scratch_needed, blocks,
                               columns, acc));

  const std::string kernel = fused_kernel_name(ctx);
  fused_kernel_banner(ctx, sig, group.nodes,
                      fmt::format("Fused group {} (Global): a reduction over {} rows of {} columns "
                                  "and its consumers ({} per column, {} per element), two "
                                  "grid-wide barriers, {} blocks.",
                                  group.id, rows, columns, spec.column_nodes.size(),
                                  spec.element_nodes.size(), blocks),
                      out);
  std::vector<std::string> params = sig.params;
  params.push_back(fmt::format("{}* __restrict__ scratch", acc));
  out.open(kernel_head(ctx, kernel, params));
  out.linef("const int64_t rows = {};  // reduced", rows);
  out.linef("const int64_t columns = {};", columns);
  out.linef("const int64_t blocks = gridDim.x; // this device's, at most {} (the scratch's)",
            blocks);

  // Phase 1.
  out.comment("Phase 1: this block's slice of rows, per column, into scratch[block][column].");
  out.line("const int64_t rows_per_block = (rows + blocks - 1) / blocks;");
  out.line("const int64_t row_begin = min(rows, int64_t(blockIdx.x) * rows_per_block);");
  out.line("const int64_t row_end = min(rows, row_begin + rows_per_block);");
  out.open("for (int64_t c = threadIdx.x; c < columns; c += blockDim.x)");
  out.linef("{} acc = {};", acc, form.identity);
  out.open("for (int64_t r = row_begin; r < row_end; ++r)");
  const std::string& x_param = sig.inputs.at(x);
  std::string v = fmt::format("{}[r * columns + c]", x_param);
  if (x_type != acc) v = fmt::format("{}({})", acc, v);
  out.linef("const {} v = {};", acc, v);
  out.line(fmt::format(fmt::runtime(form.step), form.contribution));
  out.close();
  out.line("scratch[blockIdx.x * columns + c] = acc;");
  out.close();
  out.line("stitch_grid_sync();");

  // Phase 2.
  out.comment("Phase 2: each column's partials in block order, finished, into "
              "scratch[blocks][column]; the per-column outputs.");
  out.linef("{0}* const column_values = scratch + blocks * columns;", acc);
  out.open("for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < columns; "
           "c += int64_t(gridDim.x) * blockDim.x)");
  out.linef("{} acc = {};", acc, form.identity);
  out.linef("for (int64_t b = 0; b < blocks; ++b) acc = {}(acc, scratch[b * columns + c]);",
            form.functor);
  out.linef("column_values[c] = {};", rounded_to(g.tensor(reduced).dtype, form.finish));
  const std::string finished = convert("column_values[c]", acc, reduced_type);
  bool coordinates = false;
  for (int32_t n : spec.column_nodes)
    for (TensorId t : value_operands(g.nodes[n]))
      coordinates |= t != kNoTensor && sig.inputs.count(t) &&
                     needs_coordinates(g.tensor(t).shape, spec.column_shape);
  if (!spec.column_outputs.empty() && coordinates)
    emit_coordinates(out, spec.column_shape, "c", "cc");
  ValueScope per_column(ctx, spec.column_nodes, out, [&](TensorId t) -> std::string {
    if (t == reduced) return finished;
    return load_broadcast(ctx, sig, t, spec.column_shape, out, "c", "cc");
  });
  for (TensorId t : spec.column_outputs)
    out.linef("{}[c] = {};", sig.outputs.at(t), per_column.value(t));
  out.close();
  out.line("stitch_grid_sync();");

  // Phase 3.
  if (!spec.element_outputs.empty()) {
    const Shape& shape = spec.full;
    out.comment(fmt::format("Phase 3: the consumers per element of {}; the reduction's result {} "
                            "is read from column_values.",
                            shape_to_string(shape), shape_to_string(g.tensor(reduced).shape)));
    std::string values = "column_values";
    if (reduced_type != acc) {
      values = "reduced";
      out.linef("{}* const reduced = reinterpret_cast<{}*>(scratch);  // the results as {}",
                reduced_type, reduced_type, reduced_type);
      out.open("for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < columns; "
               "c += int64_t(gridDim.x) * blockDim.x)");
      out.linef("reduced[c] = {};", convert("column_values[c]", acc, reduced_type));
      out.close();
      out.line("stitch_grid_sync();");
    }
    std::vector<int32_t> consumers = spec.column_nodes;
    consumers.insert(consumers.end(), spec.element_nodes.begin(), spec.element_nodes.end());
    std::sort(consumers.begin(), consumers.end());
    out.linef("const int64_t n = {};  // elements of {}", shape_elements(shape),
              shape_to_string(shape));
    out.line("const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;");
    out.line("const int64_t stride = int64_t(gridDim.x) * blockDim.x;");
    out.open("for (int64_t i = first; i < n; i += stride)");
    bool element_coordinates = needs_coordinates(g.tensor(reduced).shape, shape);
    for (int32_t n : consumers)
      for (TensorId t : value_operands(g.nodes[n]))
        element_coordinates |=
            t != kNoTensor && sig.inputs.count(t) && needs_coordinates(g.tensor(t).shape, shape);
    if (element_coordinates) emit_coordinates(out, shape);
    ValueScope per_element(ctx, consumers, out, [&](TensorId t) -> std::string {
      if (t == reduced) {
        out.linef("const {} column = {}[{}];", reduced_type, values,
                  broadcast_index(g.tensor(reduced).shape, shape));
        return "column";
      }
      return load_broadcast(ctx, sig, t, shape, out);
    });
    for (TensorId t : spec.element_outputs)
      out.linef("{}[i] = {};", sig.outputs.at(t), per_element.value(t));
    out.close();
  }
  out.close();
  out.line();
  std::vector<std::string> args = sig.args;
  args.push_back(ctx.scratch_pointer(acc));
  emit_launch(ctx, out, kernel, args);
}

} // namespace stitch
