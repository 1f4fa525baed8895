// plan_greedy: XLA-style producer-consumer fusion, the baseline the ILP is measured against.
//
// Two passes, like XLA's GEMM rewriter followed by its instruction fusion:
//   1. each MatMul/Gemm takes its chain of epilogue consumers while cuBLASLt can apply them,
//      and each Conv the residual add and Relu cuDNN's fused convolution applies;
//   2. visiting consumers from the last node back, a pointwise producer joins its consumer's
//      group when every consumer of it is in that group (no duplication), the merged group is
//      legal, and it costs less than the two apart.
// Reductions take producers but never join their consumers (in XLA a reduction is a fusion
// root), so an expanded LayerNorm splits at each of its reductions. Window ops (pools, a
// depthwise Conv) are roots the same way: they take their producers, not their consumers.
// Every merge keeps the group graph acyclic: the producer's only successors are in the group
// it joins.
//
// The same passes over part of a graph plan a GEMM chain's unfused form (plan_chain_fallback):
// the groups the library runs in the chain's place on a device that cannot hold its clusters.
#include <algorithm>

#include "graph/error.h"
#include "planner/plan_common.h"

namespace stitch {

namespace {

class GreedyFusion {
public:
  // Plans `only` (every node when null); the nodes outside are in no group and never join one.
  GreedyFusion(const Graph& graph, const PlannerOptions& options,
               const std::vector<int32_t>* only = nullptr)
      : ctx_(graph, options.device, options.no_fuse, options.attention, options.gemm_chain),
        group_of_(ctx_.size(), -1), members_(ctx_.size()), analyses_(ctx_.size()),
        costs_(ctx_.size(), 0), partial_(only != nullptr) {
    std::vector<int32_t> all;
    if (only == nullptr)
      for (size_t n = 0; n < ctx_.size(); ++n)
        all.push_back(static_cast<int32_t>(n));
    for (int32_t n : only != nullptr ? *only : all) {
      group_of_[n] = n;
      members_[n] = {n};
      analyze_group(ctx_, members_[n], analyses_[n]);
      costs_[n] = group_cost(ctx_, analyses_[n]).total();
    }
  }

  // The groups, numbered from `first_id`.
  FusionPlan run(int first_id = 0) {
    absorb_epilogues();
    fuse_producers();
    std::vector<GroupAnalysis> groups;
    for (size_t g = 0; g < ctx_.size(); ++g)
      if (!members_[g].empty()) groups.push_back(analyses_[g]);
    FusionPlan plan = assemble_plan(ctx_, groups, "greedy", partial_, first_id);
    plan.rejected = std::move(rejected_);
    return plan;
  }

private:
  // Merges group `from` into group `into` when legal and cheaper; records why not otherwise.
  bool try_merge(int32_t into, int32_t from) { return try_merge(into, std::vector{from}); }

  // The same for several groups at once (a Conv and its layouts, legal only together).
  bool try_merge(int32_t into, const std::vector<int32_t>& froms) {
    std::vector<int32_t> merged = members_[into];
    int64_t apart = costs_[into];
    for (int32_t from : froms) {
      merged.insert(merged.end(), members_[from].begin(), members_[from].end());
      apart += costs_[from];
    }
    std::sort(merged.begin(), merged.end());
    GroupAnalysis analysis;
    FusionDecision d = analyze_group(ctx_, merged, analysis);
    int64_t cost = d ? group_cost(ctx_, analysis).total() : 0;
    if (d && cost >= apart) d = FusionDecision::no("legal, but costs more fused than apart");
    if (!d) {
      if (rejected_.size() < kMaxRejectedFusions) rejected_.push_back({merged, d.reason});
      return false;
    }
    for (int32_t from : froms) {
      for (int32_t n : members_[from])
        group_of_[n] = into;
      members_[from].clear();
    }
    members_[into] = std::move(merged);
    analyses_[into] = std::move(analysis);
    costs_[into] = cost;
    return true;
  }

  void absorb_epilogues() {
    const Graph& g = ctx_.graph;
    for (size_t n = 0; n < ctx_.size(); ++n) {
      if (group_of_[n] < 0) continue; // not planned here
      if (ctx_.node_class[n] != NodeClass::Gemm && ctx_.node_class[n] != NodeClass::Conv) continue;
      int32_t group = static_cast<int32_t>(n);
      // A channels-last Conv takes its three layouts first (legal only together); its
      // epilogue then chains from the result's Transpose.
      std::vector<int32_t> layouts;
      for (int32_t k : conv_layout_nodes(ctx_, group))
        if (k != group) layouts.push_back(group_of_[k]);
      if (std::count(layouts.begin(), layouts.end(), -1) > 0) continue;
      if (!layouts.empty() && !try_merge(group, layouts)) continue;
      for (;;) {
        TensorId last = g.nodes[members_[group].back()].outputs[0];
        if (ctx_.consumers[last].size() != 1 || ctx_.graph_output[last]) break;
        int32_t next = ctx_.consumers[last][0];
        if (ctx_.node_class[next] != NodeClass::Pointwise || group_of_[next] < 0 ||
            members_[group_of_[next]].size() != 1 || !try_merge(group, group_of_[next]))
          break;
      }
    }
  }

  void fuse_producers() {
    const Graph& g = ctx_.graph;
    for (size_t v = ctx_.size(); v-- > 0;) {
      int32_t group = group_of_[v];
      if (group < 0) continue; // not planned here
      if (ctx_.node_class[v] == NodeClass::Alone || ctx_.node_class[v] == NodeClass::Gemm ||
          ctx_.node_class[v] == NodeClass::Conv || ctx_.node_class[v] == NodeClass::View ||
          ctx_.node_class[v] == NodeClass::Layout)
        continue;
      bool changed = true;
      while (changed) {
        changed = false;
        for (size_t i = 0; i < members_[group].size() && !changed; ++i)
          for (TensorId t : g.nodes[members_[group][i]].inputs) {
            if (t == kNoTensor || ctx_.producer[t] < 0) continue;
            int32_t u = ctx_.producer[t];
            if (group_of_[u] < 0 || group_of_[u] == group || members_[group_of_[u]].size() != 1)
              continue;
            // A Gather joins only a group of row ops (analyze_group refuses the rest). A
            // chain's unfused plan also reads movement (a merged product's halves) through
            // index remappings, as the ilp plan would.
            const bool movement = ctx_.node_class[u] == NodeClass::Movement ||
                                  ctx_.node_class[u] == NodeClass::Layout;
            if (ctx_.node_class[u] != NodeClass::Pointwise &&
                ctx_.node_class[u] != NodeClass::Gather && !(partial_ && movement))
              continue;
            bool all_inside = true;
            for (TensorId out : g.nodes[u].outputs)
              for (int32_t c : ctx_.consumers[out])
                all_inside = all_inside && group_of_[c] == group;
            if (!all_inside) continue;
            if (try_merge(group, group_of_[u])) {
              changed = true;
              break;
            }
          }
      }
    }
  }

  FusionContext ctx_;
  std::vector<int32_t> group_of_;
  std::vector<std::vector<int32_t>> members_; // per group id (the id of its first node)
  std::vector<GroupAnalysis> analyses_;
  std::vector<int64_t> costs_;
  std::vector<RejectedFusion> rejected_;
  bool partial_ = false; // some of the graph's nodes
};

} // namespace

FusionPlan plan_greedy(const Graph& graph, const PlannerOptions& options) {
  return GreedyFusion(graph, options).run();
}

ChainFallback plan_chain_fallback(const Graph& graph, const PlannerOptions& options,
                                  const FusionGroup& chain, int first_id) {
  STITCH_INTERNAL_CHECK(chain.kind == GroupKind::GemmChain, "group {} is no GEMM chain", chain.id);
  PlannerOptions unchained = options;
  unchained.gemm_chain = FusionMode::Unfused;
  ChainFallback fallback;
  fallback.chain_group = chain.id;
  fallback.groups = GreedyFusion(graph, unchained, &chain.nodes).run(first_id).groups;
  for (const FusionGroup& group : fallback.groups)
    STITCH_INTERNAL_CHECK(group.kind != GroupKind::GemmChain && group.scratch_bytes == 0,
                          "the unfused plan of GEMM chain {} holds a {} group", chain.id,
                          group_kind_name(group.kind));
  return fallback;
}

} // namespace stitch
