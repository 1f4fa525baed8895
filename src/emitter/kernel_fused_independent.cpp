// The Independent scheme: unrelated parts in one launch. Each part runs on its own range of
// blocks, and the kernel branches on the block index:
//
//   if (blockIdx.x < 40) {                 // part 0: blocks [0, 40)
//     const unsigned part_block = blockIdx.x;
//     ... a Local or Regional body over 40 blocks ...
//   } else {                               // part 1: blocks [40, 64)
//     const unsigned part_block = blockIdx.x - 40;
//     ...
//   }
//
// A part is Local (pointwise nodes) or Regional (row ops with their pointwise nodes, a thread
// or a warp per row), each printed from its own spec with its own mapping. The spec gives each
// part's blocks (the grid its own kernel would have) and every body grid-strides over its
// range. All parts run with the group's block size; a branch is uniform across a block, so
// warp-wide reductions inside a part stay legal. Over symbolic dims each part's blocks are the
// run's, computed from the symbols (`part0_end`, ...).
#include "emitter/kernel_fused.h"

#include <algorithm>

#include "emitter/kernels.h"
#include "emitter/pointwise_expression.h"
#include "emitter/row_kernel.h"
#include "graph/error.h"

namespace stitch {

void emit_fused_independent(const GroupEmitContext& ctx, CodeWriter& out) {
  const FusionGroup& group = ctx.group();
  const IndependentSpec& spec = ctx.spec<IndependentSpec>();
  if (spec.parts.empty()) ctx.spec_error("an Independent group without parts");
  int64_t given = 0;
  for (const IndependentSpec::Part& part : spec.parts) {
    if (part.blocks < 1) ctx.spec_error(fmt::format("a part of {} blocks", part.blocks));
    if (const auto* regional = std::get_if<RegionalSpec>(&part.body);
        regional != nullptr && regional->block != group.launch.block[0])
      ctx.spec_error(fmt::format("a Regional part planned for blocks of {} threads in a launch of "
                                 "{}",
                                 regional->block, group.launch.block[0]));
    given += part.blocks;
  }
  if (given != group.launch.grid[0] || group.launch.grid[1] != 1 || group.launch.grid[2] != 1)
    ctx.spec_error(fmt::format("the parts' {} blocks are not the plan's grid of {}x{}x{}", given,
                               group.launch.grid[0], group.launch.grid[1], group.launch.grid[2]));

  const FusedSignature sig = fused_signature(ctx, spec.io);
  const std::string kernel = fused_kernel_name(ctx);
  fused_kernel_banner(ctx, sig, group.nodes,
                      fmt::format("Fused group {} (Independent): {} unrelated parts, each on its "
                                  "own blocks of one launch.",
                                  group.id, spec.parts.size()),
                      out);
  std::vector<std::string> params = sig.params;
  for (const std::string& p : launch_symbol_params(ctx))
    params.push_back(p);
  out.open(kernel_head(ctx, kernel, params));
  // Over symbolic dims each part's blocks are the run's (IndependentSpec::Part::run_blocks, as
  // the launcher's grid sums them): the parts' ends from the symbols.
  const bool run_blocks = spec.parts.front().run_blocks.has_value();
  if (run_blocks) {
    for (size_t p = 0; p < spec.parts.size(); ++p) {
      if (!spec.parts[p].run_blocks) ctx.spec_error("a part without its blocks over the symbols");
      const DimExpr& blocks = *spec.parts[p].run_blocks;
      out.linef("const int64_t part{}_end = {}{};  // + {}", p,
                p == 0 ? std::string() : fmt::format("part{}_end + ", p - 1),
                dim_code(ctx.graph(), blocks), blocks.to_string());
    }
  }
  int64_t first_block = 0;
  for (size_t p = 0; p < spec.parts.size(); ++p) {
    const IndependentSpec::Part& part = spec.parts[p];
    const int64_t end = first_block + part.blocks;
    const std::string end_name = run_blocks ? fmt::format("part{}_end", p) : std::to_string(end);
    const std::string first_name = run_blocks ? (p == 0 ? "0" : fmt::format("part{}_end", p - 1))
                                              : std::to_string(first_block);
    if (p == 0)
      out.open(fmt::format("if (blockIdx.x < {})", end_name));
    else if (p + 1 < spec.parts.size())
      out.open(fmt::format("else if (blockIdx.x < {})", end_name));
    else
      out.open("else");
    const auto* local = std::get_if<LocalSpec>(&part.body);
    const auto* regional = std::get_if<RegionalSpec>(&part.body);
    out.comment(fmt::format("Part {}: blocks [{}, {}), {}.", p, first_name, end_name,
                            local ? "pointwise nodes" : "row ops"));
    std::vector<int32_t> nodes;
    if (local) nodes = local->nodes;
    if (regional)
      for (const RegionalSpec::Member& m : regional->members)
        nodes.push_back(m.node);
    for (int32_t n : nodes)
      out.comment("  " + describe_node(ctx.graph(), ctx.graph().nodes[n]));
    out.linef("const unsigned part_block = blockIdx.x{};",
              p == 0 ? "" : fmt::format(" - {}", first_name));
    BlockRange blocks{"part_block",
                      run_blocks
                          ? (p == 0 ? end_name : fmt::format("({} - {})", end_name, first_name))
                          : std::to_string(part.blocks)};
    if (local)
      emit_local_body(ctx, sig, *local, blocks, out);
    else
      emit_regional_body(ctx, sig, *regional, blocks, out);
    // Close without a newline before `else`: CodeWriter puts "}" on its own line, which is fine.
    out.close();
    first_block = end;
  }
  out.close();
  out.line();
  emit_launch(ctx, out, kernel, sig.args);
}

} // namespace stitch
