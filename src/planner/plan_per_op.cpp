// plan_one_kernel_per_op and the planner entry point, which refuses what no plan could compile
// (check_code_generation) before any planner runs.
#include "planner/planner.h"

#include <algorithm>

#include "graph/error.h"
#include "planner/code_generation_support.h"
#include "planner/plan_common.h"

namespace stitch {

FusionPlan plan_one_kernel_per_op(const Graph& g, const DeviceParams& device) {
  FusionPlan plan;
  plan.planner = "none";
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    FusionGroup group = single_node_group(g, static_cast<int32_t>(n), device);
    group.id = static_cast<int>(plan.groups.size());
    plan.groups.push_back(std::move(group));
  }
  return plan;
}

FusionPlan plan_fusion(const Graph& graph, const PlannerOptions& options) {
  check_code_generation(graph);
  FusionPlan plan;
  if (options.planner == "none") {
    plan = plan_one_kernel_per_op(graph, options.device);
  } else if (options.planner == "greedy") {
    plan = plan_greedy(graph, options);
  } else if (options.planner == "ilp") {
    plan = plan_ilp(graph, options);
  } else {
    user_fail({}, "unknown planner '{}' (planners: none, greedy, ilp)", options.planner);
  }
  compare_with_other_planners(graph, options, plan);
  int next_id = static_cast<int>(plan.groups.size());
  for (const FusionGroup& group : plan.groups)
    if (group.kind == GroupKind::GemmChain) {
      plan.fallbacks.push_back(plan_chain_fallback(graph, options, group, next_id));
      next_id += static_cast<int>(plan.fallbacks.back().groups.size());
    }
  choose_library_math(plan, options.tf32);
  return plan;
}

} // namespace stitch
