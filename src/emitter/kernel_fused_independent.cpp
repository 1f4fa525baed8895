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
// A part is Local (pointwise nodes), or one row op (a Reduce* or global pool over contiguous
// trailing axes) written as a one-node Regional body with the group's mapping.
// The plan gives each part's blocks (FusionGroup::part_blocks, the grid its own kernel would
// have) and every body grid-strides over its range. All
// parts run with the group's block size; a branch is uniform across a block, so block-wide
// reductions inside a part stay legal.
#include "emitter/kernel_fused.h"

#include <algorithm>

#include "emitter/kernels.h"
#include "emitter/pointwise_expression.h"
#include "emitter/row_kernel.h"
#include "graph/error.h"
#include "planner/reduction_mapping.h"

namespace stitch {

namespace {

struct Part {
  std::vector<int32_t> nodes;
  bool local = true;
  int64_t rows = 0, row_length = 0; // a row-op part
  int64_t blocks = 0, first_block = 0;
};

Part describe_part(const GroupEmitContext& ctx, const std::vector<int32_t>& nodes) {
  const Graph& g = ctx.graph();
  Part part;
  part.nodes = nodes;
  for (int32_t n : nodes) {
    if (std::find(ctx.group().nodes.begin(), ctx.group().nodes.end(), n) == ctx.group().nodes.end())
      internal_fail("group {}: a part holds node {}, which is not in the group", ctx.group().id, n);
    part.local &= is_pointwise(g.nodes[n]);
  }
  if (nodes.empty()) refuse_fused(ctx, "an empty part");
  if (part.local) return part;
  const Node& node = g.nodes[nodes[0]];
  if (nodes.size() != 1 || op_category(node.op) != OpCategory::Reduction)
    refuse_fused(ctx, fmt::format("a part must be pointwise nodes or one row op; node '{}' ({}) "
                                  "with {} node(s) is neither",
                                  node.name, op_name(node.op), nodes.size()));
  ReductionSpace space = reduction_space(g, node);
  if (!space.rows())
    refuse_fused(ctx, fmt::format("node '{}' ({}) does not reduce contiguous trailing axes; only "
                                  "row ops run as parts",
                                  node.name, op_name(node.op)));
  part.rows = space.lines;
  part.row_length = space.length;
  return part;
}

} // namespace

void emit_fused_independent(const GroupEmitContext& ctx, CodeWriter& out) {
  const FusionGroup& group = ctx.group();
  if (group.parts.empty()) refuse_fused(ctx, "an Independent group without parts");
  if (group.part_blocks.size() != group.parts.size())
    refuse_fused(ctx, fmt::format("the plan gives {} block counts for {} parts",
                                  group.part_blocks.size(), group.parts.size()));
  std::vector<Part> parts;
  int64_t given = 0;
  for (size_t p = 0; p < group.parts.size(); ++p) {
    parts.push_back(describe_part(ctx, group.parts[p]));
    if (group.part_blocks[p] < 1)
      refuse_fused(ctx, fmt::format("the plan gives part {} {} blocks", p, group.part_blocks[p]));
    parts.back().first_block = given;
    parts.back().blocks = group.part_blocks[p];
    given += group.part_blocks[p];
  }
  if (given != group.launch.grid[0] || group.launch.grid[1] != 1 || group.launch.grid[2] != 1)
    refuse_fused(ctx,
                 fmt::format("the parts' {} blocks are not the plan's grid of {}x{}x{}", given,
                             group.launch.grid[0], group.launch.grid[1], group.launch.grid[2]));

  FusedSignature sig = fused_signature(ctx, group.nodes);
  const std::string kernel = fused_kernel_name(ctx);
  fused_kernel_banner(
      ctx, sig, group.nodes,
      fmt::format("Fused group {} (Independent): {} unrelated parts, each on its own "
                  "blocks of one launch.",
                  group.id, parts.size()),
      out);
  out.open(kernel_head(ctx, kernel, sig.params));
  for (size_t p = 0; p < parts.size(); ++p) {
    const Part& part = parts[p];
    const int64_t end = part.first_block + part.blocks;
    if (p == 0)
      out.open(fmt::format("if (blockIdx.x < {})", end));
    else if (p + 1 < parts.size())
      out.open(fmt::format("else if (blockIdx.x < {})", end));
    else
      out.open("else");
    out.comment(fmt::format("Part {}: blocks [{}, {}), {}.", p, part.first_block, end,
                            part.local ? "pointwise nodes" : "one row op"));
    for (int32_t n : part.nodes)
      out.comment("  " + describe_node(ctx.graph(), ctx.graph().nodes[n]));
    out.linef("const unsigned part_block = blockIdx.x{};",
              part.first_block == 0 ? "" : fmt::format(" - {}", part.first_block));
    BlockRange blocks{"part_block", std::to_string(part.blocks)};
    if (part.local)
      emit_local_body(ctx, sig, part.nodes, blocks, out);
    else
      emit_regional_body(ctx, sig, part.nodes, part.rows, part.row_length, blocks, out);
    // Close without a newline before `else`: CodeWriter puts "}" on its own line, which is fine.
    out.close();
  }
  out.close();
  out.line();
  emit_launch(ctx, out, kernel, sig.args);
}

} // namespace stitch
