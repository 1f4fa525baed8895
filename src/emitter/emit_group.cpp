// emit_group: dispatch on the group's spec to the kernel emitters, and the shared
// launch-function writer.
#include "emitter/kernels.h"

#include "emitter/kernel_fused.h"
#include "graph/error.h"

namespace stitch {

void emit_launch(const GroupEmitContext& ctx, CodeWriter& out, const std::string& kernel,
                 const std::vector<std::string>& args) {
  const LaunchConfig& l = ctx.group().launch;
  out.open(fmt::format(fmt::runtime(kGroupSignature), ctx.group_function()));
  std::vector<std::string> names;
  for (size_t k = 0; k < args.size(); ++k) {
    out.linef("auto* const a{} = {};", k, args[k]);
    names.push_back(fmt::format("a{}", k));
  }
  const int group = ctx.group().id;
  const std::vector<int> symbols = launch_symbols(ctx);
  if (!symbols.empty()) {
    emit_symbol_reads(ctx.graph(), symbols, out);
    for (int k : symbols)
      names.push_back(fmt::format("sym{}", k));
  }
  if (l.work_per_block > 0) {
    STITCH_INTERNAL_CHECK(!l.cooperative && l.grid[1] == 1 && l.grid[2] == 1,
                          "group {}: a grid computed per run must be one-dimensional", group);
    out.linef("const int64_t work = {};", dim_code(ctx.graph(), l.work));
    out.comment(fmt::format("The grid covers the work once, {} item{} per block, at most {} "
                            "blocks (the grid at the symbols' maxima), then strides.",
                            l.work_per_block, l.work_per_block == 1 ? "" : "s", l.grid[0]));
    out.linef("const dim3 grid(stitch::dims::grid_for(work, {}, {}), 1, 1);", l.work_per_block,
              l.grid[0]);
  } else if (l.cooperative) {
    STITCH_INTERNAL_CHECK(ctx.cooperative_index() >= 0 && l.grid[1] == 1 && l.grid[2] == 1,
                          "group {}: a cooperative launch without its place among the model's",
                          group);
    out.linef("const dim3 grid(b->cooperative_grids[{}], 1, 1); // this device's (at most {})",
              ctx.cooperative_index(), l.grid[0]);
  } else {
    out.linef("const dim3 grid({}, {}, {});", l.grid[0], l.grid[1], l.grid[2]);
  }
  out.linef("const dim3 block({}, {}, {});", l.block[0], l.block[1], l.block[2]);
  emit_shared_memory_opt_in(ctx, out, kernel, l.dynamic_shared_bytes);
  out.linef("const cudaError_t status = {}({}, grid, block, {}, b->stream, {});",
            l.cooperative ? "STITCH_LAUNCH_COOPERATIVE" : "STITCH_LAUNCH", kernel,
            l.dynamic_shared_bytes, fmt::join(names, ", "));
  out.linef("return stitch_launch_result(status, \"{}\", {}, error, error_size);", kernel, group);
  out.close();
  if (!l.cooperative) return;
  out.line();
  out.comment(
      fmt::format("The blocks of {} this device keeps resident at once (a grid-wide barrier "
                  "needs every block resident), at most the plan's {}, whose scratch the "
                  "arena holds: asked once, when the model is created.",
                  kernel, l.grid[0]));
  out.open(fmt::format("int32_t {}_grid(int32_t* grid, char* error, size_t error_size)",
                       ctx.group_function()));
  out.linef(
      "return stitch_cooperative_grid(grid, {0}, \"{0}\", {1}, dim3({2}, {3}, {4}), {5}, {6}, "
      "error, error_size);",
      kernel, group, l.block[0], l.block[1], l.block[2], l.dynamic_shared_bytes, l.grid[0]);
  out.close();
}

void emit_group(const GroupEmitContext& ctx, CodeWriter& out) {
  if (emit_fused(ctx, out)) return; // the fused specs
  if (emit_library_call(ctx, out)) return;
  if (!std::holds_alternative<OpSpec>(ctx.group().spec))
    ctx.spec_error("an alias group reached code generation");
  if (emit_pointwise(ctx, out)) return;
  if (emit_reduction(ctx, out)) return;
  if (emit_movement(ctx, out)) return;
  if (emit_window(ctx, out)) return;
  ctx.spec_error(fmt::format("no kernel for op {}", op_name(ctx.node().op)));
}

} // namespace stitch
