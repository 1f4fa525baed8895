// Independent groups (kernel_fused_independent.cpp prints them): unrelated parts launched
// together, each on its own range of blocks of one 256-thread-block grid. A part is Local
// (pointwise nodes, index remappings, Views between them) or Regional (row ops with their pointwise
// nodes, a thread or a warp per row: a block per row would need its own block size); it keeps the
// blocks its own kernel would have.
#include "planner/legality_internal.h"

namespace stitch::legality {

FusionDecision analyze_independent(const FusionContext& ctx, GroupAnalysis& a,
                                   std::vector<std::vector<int32_t>> parts,
                                   const AnalysisOverrides& overrides) {
  IndependentSpec spec;
  int64_t grid = 0;
  for (const std::vector<int32_t>& part : parts) {
    GroupAnalysis p;
    p.nodes = part;
    boundary(ctx, part, p);
    bool row = false;
    int32_t view = -1;
    for (int32_t n : part) {
      const NodeClass c = ctx.node_class[n];
      if (c != NodeClass::Pointwise && c != NodeClass::RowOp && c != NodeClass::Movement &&
          c != NodeClass::Layout && c != NodeClass::Gather && c != NodeClass::View)
        return FusionDecision::no(fmt::format("{} {}; an independent part holds pointwise ops, "
                                              "index remappings, views, row lookups and row ops "
                                              "only",
                                              ctx.describe(n), class_sentence(c)));
      row = row || c == NodeClass::RowOp;
      if (c == NodeClass::View) view = n;
    }
    if (row && view >= 0)
      return FusionDecision::no(fmt::format("{} is a view in a part of row ops; views join a "
                                            "Local part only",
                                            ctx.describe(view)));
    if (row) {
      if (FusionDecision d = analyze_regional(ctx, p, overrides); !d)
        return FusionDecision::no("as independent parts: " + d.reason);
      const LaunchConfig& l = p.group.launch;
      if (l.block[0] != kBlock || l.block[1] != 1 || l.dynamic_shared_bytes > 0)
        return FusionDecision::no(fmt::format("{}'s rows need blocks of {} threads; an "
                                              "independent part runs with the group's {}",
                                              ctx.describe(part.front()), l.block[0], kBlock));
    } else if (FusionDecision d = analyze_local(ctx, p); !d) {
      return FusionDecision::no("as independent parts: " + d.reason);
    }
    const LaunchConfig& l = p.group.launch;
    const int64_t blocks = std::max<int64_t>(l.grid[0] * l.grid[1] * l.grid[2], 1);
    IndependentSpec::Part spec_part;
    spec_part.blocks = blocks;
    if (row)
      spec_part.body = std::get<RegionalSpec>(std::move(p.group.spec));
    else
      spec_part.body = std::get<LocalSpec>(std::move(p.group.spec));
    spec.parts.push_back(std::move(spec_part));
    a.group.part_blocks.push_back(blocks);
    grid += blocks;
    a.recomputed += p.recomputed;
    a.registers = std::max(a.registers, p.registers);
  }
  spec.io = kernel_interface(ctx, a.nodes, a.inputs, a.outputs);
  a.group.parts = parts; // each part's nodes, for the symbolic support of each part alone
  a.parts = std::move(parts);
  a.kind = GroupKind::Kernel;
  a.scheme = StitchScheme::Independent;
  a.group.mapping = ThreadMapping::Flat;
  a.group.launch.block = {kBlock, 1, 1};
  a.group.launch.grid = {grid, 1, 1};
  a.group.spec = std::move(spec);
  return FusionDecision::ok();
}

} // namespace stitch::legality
