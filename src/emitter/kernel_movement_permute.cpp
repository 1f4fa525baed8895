// Permuting copies: Transpose, and DepthToSpace / SpaceToDepth (transposes of a 6-D view of
// their input), in the canonical form of planner/movement_mapping.h. When the plan's tiling
// applies, each block moves 2-D tiles through padded shared memory so that both the reads and
// the writes walk contiguous memory; otherwise one thread per output element gathers. Also the
// plain copies of ops that only reinterpret their input, when they were not made views.
#include "emitter/kernel_movement.h"

#include "graph/infer_context.h"
#include "planner/group_spec.h"
#include "planner/movement_mapping.h"

namespace stitch {

namespace {

// The strides of `dims` for the output axes, as an input-axis-indexed vector.
std::vector<int64_t> output_strides_by_input_axis(const PermutedCopy& copy) {
  Shape out_strides = row_major_strides(copy.out_dims());
  std::vector<int64_t> by_input(copy.dims.size());
  for (size_t d = 0; d < copy.perm.size(); ++d)
    by_input[copy.perm[d]] = out_strides[d];
  return by_input;
}

void emit_tiled(const GroupEmitContext& ctx, CodeWriter& out, const PermutedCopy& copy,
                const TransposeTiling& t) {
  const std::string type = storage_ctype(ctx.tensor(ctx.node().outputs[0]).dtype, ctx);
  const Shape in_strides = row_major_strides(copy.dims);
  const std::vector<int64_t> out_strides = output_strides_by_input_axis(copy);
  const int64_t v = t.vector, dx = copy.dims[t.x_axis], dy = copy.dims[t.y_axis];
  const int64_t width = t.tile_x * v; // elements per tile row
  const int64_t tiles_x = (dx + t.tile_x - 1) / t.tile_x, tiles_y = (dy + t.tile_y - 1) / t.tile_y;
  // Batch axes: the others, outermost output axis first.
  std::vector<int64_t> batch;
  int64_t reduced = static_cast<int64_t>(copy.dims.size()) - (v > 1 ? 1 : 0);
  for (int64_t p : copy.perm)
    if (p < reduced && p != t.x_axis && p != t.y_axis) batch.push_back(p);

  out.linef("STITCH_SHARED_2D({}, tile, {}, {}); // padded: column reads do not conflict", type,
            t.tile_y, width + 1);
  out.line("const int64_t thread = stitch::linear_thread_index();");
  out.line("const int64_t threads = stitch::block_thread_count();");
  out.open(fmt::format("for (int64_t t = blockIdx.x; t < {}; t += gridDim.x)", t.tiles));
  out.line("int64_t rest = t;");
  out.linef("const int64_t x0 = rest % {} * {}; rest /= {};", tiles_x, t.tile_x, tiles_x);
  out.linef("const int64_t y0 = rest % {} * {}; rest /= {};", tiles_y, t.tile_y, tiles_y);
  std::vector<std::string> in_terms = {linear_index({"x0"}, {in_strides[t.x_axis]}),
                                       linear_index({"y0"}, {in_strides[t.y_axis]})};
  std::vector<std::string> out_terms = {linear_index({"x0"}, {out_strides[t.x_axis]}),
                                        linear_index({"y0"}, {out_strides[t.y_axis]})};
  for (size_t j = batch.size(); j-- > 0;) {
    int64_t a = batch[j];
    std::string name = fmt::format("b{}", j);
    if (j == 0)
      out.linef("const int64_t {} = rest;", name);
    else
      out.linef("const int64_t {0} = rest % {1}; rest /= {1};", name, copy.dims[a]);
    in_terms.push_back(linear_index({name}, {in_strides[a]}));
    out_terms.push_back(linear_index({name}, {out_strides[a]}));
  }
  out.linef("const int64_t in_base = {};", fmt::join(in_terms, " + "));
  out.linef("const int64_t out_base = {};", fmt::join(out_terms, " + "));
  out.linef("const int64_t x_count = {1} - x0 < {0} ? {1} - x0 : {0}; // x positions in this tile",
            t.tile_x, dx);
  out.linef("const int64_t y_count = {1} - y0 < {0} ? {1} - y0 : {0};", t.tile_y, dy);
  out.comment("Read: consecutive threads walk the input's contiguous run along x.");
  out.open(fmt::format("for (int64_t e = thread; e < {}; e += threads)", t.tile_y * width));
  out.linef("const int64_t y = e / {}, column = e % {};", width, width);
  out.linef("if (y < y_count && column < x_count{}) tile[y][column] = in[in_base + {}column];",
            v > 1 ? fmt::format(" * {}", v) : "",
            linear_index({"y"}, {in_strides[t.y_axis]}) + " + ");
  out.close();
  out.line("__syncthreads();");
  out.comment("Write: consecutive threads walk the output's contiguous run along y.");
  out.open(fmt::format("for (int64_t e = thread; e < {}; e += threads)", t.tile_x * t.tile_y * v));
  const int64_t run = t.tile_y * v;
  out.linef("const int64_t x = e / {}, along = e % {};", run, run);
  if (v > 1) {
    out.linef("const int64_t y = along / {}, lane = along % {};", v, v);
    out.linef(
        "if (x < x_count && y < y_count) out[out_base + {} + along] = tile[y][x * {} + lane];",
        linear_index({"x"}, {out_strides[t.x_axis]}), v);
  } else {
    out.linef("if (x < x_count && along < y_count) out[out_base + {} + along] = tile[along][x];",
              linear_index({"x"}, {out_strides[t.x_axis]}));
  }
  out.close();
  out.line("__syncthreads(); // the tile is refilled only after every write");
  out.close();
}

} // namespace

// A permuting copy over symbolic dims (a Transpose; DepthToSpace and SpaceToDepth over their
// batch): one thread per output element, its coordinates divided out of the flat index by the
// output view's dims (the symbols' values where they are symbolic), the input read at those
// coordinates times the input view's strides over the symbols.
void emit_symbolic_permutation(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  const SymbolicPermutation copy = symbolic_permutation(ctx.graph(), node);
  const SymShape& in = copy.dims;
  std::vector<DimExpr> strides(in.size(), DimExpr(1));
  for (size_t d = in.size(); d-- > 1;)
    strides[d - 1] = strides[d] * in[d];
  SymShape result;
  std::vector<DimExpr> read_strides;
  for (int64_t p : copy.perm) {
    result.push_back(in[static_cast<size_t>(p)]);
    read_strides.push_back(strides[static_cast<size_t>(p)]);
  }
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {input_arg(ctx, node.inputs[0], "in"),
                                 output_arg(ctx, node.outputs[0], "out")};
  open_kernel(ctx, out, kernel, args,
              {fmt::format("The copy of {} with perm [{}] into {}, one thread per output element.",
                           sym_shape_to_string(in), fmt::join(copy.perm, ","),
                           sym_shape_to_string(result))});
  open_symbolic_loop(ctx, out);
  emit_symbolic_strided_read(ctx, out, result, read_strides, DimExpr(0));
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

void emit_permuted_copy(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  if (ctx.group().launch.work_per_block > 0) return emit_symbolic_permutation(ctx, out);
  const OpSpec& spec = ctx.spec<OpSpec>();
  if (!spec.permutation) ctx.spec_error("a permuting copy without its canonical form");
  const PermutedCopy& copy = *spec.permutation;
  const TransposeTiling& tiling = spec.tiling;
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {input_arg(ctx, node.inputs[0], "in"),
                                 output_arg(ctx, node.outputs[0], "out")};
  std::vector<std::string> notes = {
      fmt::format("The copy of {} with perm [{}] (size-1 axes dropped, adjacent axes merged);",
                  shape_to_string(copy.dims), fmt::join(copy.perm, ","))};
  if (tiling.tiled)
    notes.push_back(fmt::format("tiles of {} x {} (x {}) through shared memory.", tiling.tile_y,
                                tiling.tile_x, tiling.vector));
  else
    notes.push_back("one thread per output element.");
  open_kernel(ctx, out, kernel, args, notes);
  if (tiling.tiled) {
    emit_tiled(ctx, out, copy, tiling);
  } else {
    Shape in_strides = row_major_strides(copy.dims);
    StridedView view;
    view.dims = copy.out_dims();
    for (int64_t p : copy.perm)
      view.strides.push_back(in_strides[p]);
    open_grid_stride_loop(out, ctx.tensor(node.outputs[0]).elements());
    emit_strided_read(out, view);
    out.close();
  }
  finish_kernel(ctx, out, kernel, args);
}

void emit_copy(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {input_arg(ctx, node.inputs[0], "in"),
                                 output_arg(ctx, node.outputs[0], "out")};
  bool mask = node.op == OpKind::Dropout && node.outputs.size() > 1 && node.outputs[1] != kNoTensor;
  if (mask) args.push_back(output_arg(ctx, node.outputs[1], "mask"));
  open_kernel(ctx, out, kernel, args,
              {mask ? "A copy; Dropout at inference keeps every element (the mask is all true)."
                    : "A copy: the op only reinterprets its input."});
  open_grid_stride_loop(out, ctx.tensor(node.outputs[0]).elements());
  out.line("out[i] = in[i];");
  if (mask) out.linef("mask[i] = {};", int_literal(ctx.tensor(node.outputs[1]).dtype, 1, ctx));
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

} // namespace stitch
