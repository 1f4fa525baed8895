// What the fusion planners share: turning a partition of the nodes into an ordered plan,
// finding cycles between groups, the report's rejected fusions and plan totals.
#pragma once

#include <vector>

#include "planner/cost_model.h"
#include "planner/legality.h"
#include "planner/planner.h"

namespace stitch {

// A partition of the nodes: per node, the index of its group.
using GroupOf = std::vector<int32_t>;

// The plan's group for a legal analysis: kind, scheme, launch, inputs, outputs, costs.
// A channels-last Conv (or ConvTranspose) with its three layouts, when `node` is the Conv or
// one of them: the Transposes producing X and W for it alone and the one Transpose reading its
// result (ConvSpec takes the three together, so planners add them in one step). Empty
// otherwise.
std::vector<int32_t> conv_layout_nodes(const FusionContext& ctx, int32_t node);

FusionGroup make_group(const FusionContext& ctx, const GroupAnalysis& analysis);

// Orders legal groups so that every group comes after the groups it reads from (ties by the
// first node), numbers them from `first_id` and returns the plan. An internal error if they form
// a cycle, or if a node is in no group (unless `partial`: groups of some of the nodes).
FusionPlan assemble_plan(const FusionContext& ctx, const std::vector<GroupAnalysis>& groups,
                         const std::string& planner, bool partial = false, int first_id = 0);

// A cycle between the groups of a partition (group indices, each feeding the next and the
// last the first), or empty when the groups are acyclic.
std::vector<int32_t> find_group_cycle(const FusionContext& ctx, const GroupOf& group_of,
                                      int32_t group_count);

// The fusions the plan did not make between producer-consumer neighbours in different
// groups: the legality check's reason, or the costs when the merge was legal (bounded).
void explain_rejections(const FusionContext& ctx, FusionPlan& plan);

PlanTotals plan_totals(const FusionPlan& plan);

// Fills plan.totals: this plan's, then none's and greedy's (and the groups' estimated_cost
// of a none plan, which the per-op planner leaves unset).
void compare_with_other_planners(const Graph& graph, const PlannerOptions& options,
                                 FusionPlan& plan);

} // namespace stitch
