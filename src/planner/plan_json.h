// The fusion plan and memory plan as JSON for `--report`: per group its ONNX node names,
// kind, scheme, mapping, launch dims, inputs, outputs, estimated bytes and cost; the arena's
// peak against the sum of all intermediates; the totals of none, greedy and this plan; the
// rejected fusions with their reasons; the ILP's objective, bound, gap and solve time.
#pragma once

#include <nlohmann/json.hpp>

#include "planner/fusion_plan.h"
#include "planner/memory_plan.h"

namespace stitch {

nlohmann::json plan_to_json(const Graph& graph, const FusionPlan& plan, const MemoryPlan& memory);

} // namespace stitch
