// make_group, assemble_plan, find_group_cycle, explain_rejections, the plan totals, and the
// channels-last Conv's layouts (conv_layout_nodes).
#include "planner/plan_common.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <set>

#include <fmt/format.h>

#include "graph/error.h"

namespace stitch {

std::vector<int32_t> conv_layout_nodes(const FusionContext& ctx, int32_t node) {
  const Graph& g = ctx.graph;
  int32_t conv = -1;
  if (ctx.node_class[node] == NodeClass::Conv) {
    conv = node;
  } else if (ctx.node_class[node] == NodeClass::Layout) {
    for (int32_t k : ctx.succs[node])
      if (ctx.node_class[k] == NodeClass::Conv) conv = k;
    for (int32_t k : ctx.preds[node])
      if (ctx.node_class[k] == NodeClass::Conv) conv = k;
  }
  if (conv < 0) return {};
  std::vector<int32_t> nodes = {conv};
  const Node& c = g.nodes[conv];
  for (size_t i = 0; i < 2 && i < c.inputs.size(); ++i) {
    const TensorId t = c.inputs[i];
    const int32_t p = t == kNoTensor ? -1 : ctx.producer[t];
    if (p >= 0 && ctx.node_class[p] == NodeClass::Layout && ctx.consumers[t].size() == 1)
      nodes.push_back(p);
  }
  const TensorId out = c.outputs[0];
  if (ctx.consumers[out].size() == 1 && !ctx.graph_output[out] &&
      ctx.node_class[ctx.consumers[out][0]] == NodeClass::Layout)
    nodes.push_back(ctx.consumers[out][0]);
  if (nodes.size() != 4) return {}; // not a channels-last Conv
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

FusionGroup make_group(const FusionContext& ctx, const GroupAnalysis& a) {
  FusionGroup group = a.group;
  group.kind = a.kind;
  group.nodes = a.nodes;
  group.scheme = a.scheme;
  group.inputs = a.inputs;
  group.outputs = a.outputs;
  group.rows = a.rows;
  group.row_length = a.row_length;
  group.parts = a.parts;
  GroupCost cost = group_cost(ctx, a);
  group.estimated_bytes = cost.bytes;
  group.estimated_cost = cost.total();
  return group;
}

std::vector<int32_t> find_group_cycle(const FusionContext& ctx, const GroupOf& group_of,
                                      int32_t group_count) {
  std::vector<std::set<int32_t>> next(group_count);
  for (size_t v = 0; v < ctx.size(); ++v)
    for (int32_t s : ctx.succs[v])
      if (group_of[v] != group_of[s]) next[group_of[v]].insert(group_of[s]);
  // Depth-first search with an explicit stack; a grey successor closes a cycle.
  std::vector<int> color(group_count, 0); // 0 white, 1 grey, 2 black
  std::vector<int32_t> parent(group_count, -1);
  for (int32_t root = 0; root < group_count; ++root) {
    if (color[root]) continue;
    std::vector<std::pair<int32_t, std::set<int32_t>::const_iterator>> stack;
    stack.emplace_back(root, next[root].begin());
    color[root] = 1;
    while (!stack.empty()) {
      auto& [g, it] = stack.back();
      if (it == next[g].end()) {
        color[g] = 2;
        stack.pop_back();
        continue;
      }
      int32_t h = *it++;
      if (color[h] == 1) { // g -> h closes the cycle h -> ... -> g -> h
        std::vector<int32_t> cycle;
        for (int32_t x = g; x != h; x = parent[x])
          cycle.push_back(x);
        cycle.push_back(h);
        std::reverse(cycle.begin(), cycle.end());
        return cycle;
      }
      if (color[h] == 0) {
        color[h] = 1;
        parent[h] = g;
        stack.emplace_back(h, next[h].begin());
      }
    }
  }
  return {};
}

FusionPlan assemble_plan(const FusionContext& ctx, const std::vector<GroupAnalysis>& groups,
                         const std::string& planner, bool partial, int first_id) {
  const int32_t count = static_cast<int32_t>(groups.size());
  GroupOf group_of(ctx.size(), -1);
  for (int32_t gi = 0; gi < count; ++gi)
    for (int32_t n : groups[gi].nodes) {
      if (group_of[n] >= 0) internal_fail("node {} is in two groups", ctx.describe(n));
      group_of[n] = gi;
    }
  for (size_t n = 0; n < ctx.size() && !partial; ++n)
    if (group_of[n] < 0)
      internal_fail("node {} is in no group", ctx.describe(static_cast<int32_t>(n)));
  std::vector<std::set<int32_t>> next(count);
  std::vector<int> indegree(count, 0);
  for (size_t v = 0; v < ctx.size(); ++v)
    for (int32_t s : ctx.succs[v])
      if (group_of[v] >= 0 && group_of[s] >= 0 && group_of[v] != group_of[s] &&
          next[group_of[v]].insert(group_of[s]).second)
        ++indegree[group_of[s]];
  // Kahn's algorithm, the ready group with the smallest first node first: deterministic and
  // close to the graph's own order.
  using Entry = std::pair<int32_t, int32_t>; // first node, group
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  for (int32_t gi = 0; gi < count; ++gi)
    if (indegree[gi] == 0) ready.emplace(groups[gi].nodes.front(), gi);
  FusionPlan plan;
  plan.planner = planner;
  while (!ready.empty()) {
    int32_t gi = ready.top().second;
    ready.pop();
    FusionGroup group = make_group(ctx, groups[gi]);
    group.id = first_id + static_cast<int>(plan.groups.size());
    plan.groups.push_back(std::move(group));
    for (int32_t h : next[gi])
      if (--indegree[h] == 0) ready.emplace(groups[h].nodes.front(), h);
  }
  if (static_cast<int32_t>(plan.groups.size()) != count)
    internal_fail("the {} planner's groups form a cycle", planner);
  return plan;
}

void explain_rejections(const FusionContext& ctx, FusionPlan& plan) {
  GroupOf group_of(ctx.size(), -1);
  for (size_t gi = 0; gi < plan.groups.size(); ++gi)
    for (int32_t n : plan.groups[gi].nodes)
      group_of[n] = static_cast<int32_t>(gi);
  std::set<std::pair<int32_t, int32_t>> seen;
  for (size_t v = 0; v < ctx.size() && plan.rejected.size() < kMaxRejectedFusions; ++v) {
    // Views are left out: alone they are aliases, and a view's merges say nothing new.
    if (ctx.node_class[v] == NodeClass::Alone || ctx.node_class[v] == NodeClass::View) continue;
    for (int32_t s : ctx.succs[v]) {
      int32_t a = group_of[v], b = group_of[s];
      if (a == b || ctx.node_class[s] == NodeClass::Alone || ctx.node_class[s] == NodeClass::View ||
          !seen.insert({a, b}).second)
        continue;
      std::vector<int32_t> merged = plan.groups[a].nodes;
      merged.insert(merged.end(), plan.groups[b].nodes.begin(), plan.groups[b].nodes.end());
      std::sort(merged.begin(), merged.end());
      GroupAnalysis analysis;
      FusionDecision d = analyze_group(ctx, merged, analysis);
      std::string reason = d.reason;
      if (d) {
        int64_t together = group_cost(ctx, analysis).total();
        int64_t apart = plan.groups[a].estimated_cost + plan.groups[b].estimated_cost;
        if (together < apart)
          reason = fmt::format("legal and cheaper on its own ({} < {}), but the plan as a whole "
                               "did better without it",
                               together, apart);
        else
          reason = fmt::format("legal, but costs more fused ({}) than apart ({})", together, apart);
      }
      plan.rejected.push_back({merged, reason});
      if (plan.rejected.size() >= kMaxRejectedFusions) break;
    }
  }
}

PlanTotals plan_totals(const FusionPlan& plan) {
  PlanTotals t;
  t.planner = plan.planner;
  for (const FusionGroup& g : plan.groups) {
    t.launches += group_launches(g);
    t.bytes += g.estimated_bytes;
    t.cost += g.estimated_cost;
  }
  return t;
}

namespace {

// The per-op planner does not build a FusionContext; the report's costs need one.
void cost_per_op_groups(const FusionContext& ctx, FusionPlan& plan) {
  for (FusionGroup& group : plan.groups) {
    GroupAnalysis a;
    analyze_group(ctx, group.nodes, a); // a single node is always legal
    const GroupCost cost = group_cost(ctx, a);
    group.estimated_bytes = cost.bytes;
    group.estimated_cost = cost.total();
  }
}

} // namespace

void compare_with_other_planners(const Graph& graph, const PlannerOptions& options,
                                 FusionPlan& plan) {
  FusionContext ctx(graph, options.device, options.no_fuse, options.attention, options.gemm_chain);
  if (plan.planner == "none") cost_per_op_groups(ctx, plan);
  plan.totals = {plan_totals(plan)};
  if (plan.planner != "none") {
    FusionPlan none = plan_one_kernel_per_op(graph, options.device);
    cost_per_op_groups(ctx, none);
    plan.totals.push_back(plan_totals(none));
  }
  if (plan.planner != "greedy") plan.totals.push_back(plan_totals(plan_greedy(graph, options)));
}

} // namespace stitch
