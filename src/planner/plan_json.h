// The fusion plan and memory plan as JSON for `--report`: per group its ONNX node names,
// kind, scheme, mapping, launch dims and estimated bytes; the arena's peak against the sum of
// all intermediates.
#pragma once

#include <nlohmann/json.hpp>

#include "planner/fusion_plan.h"
#include "planner/memory_plan.h"

namespace stitch {

nlohmann::json plan_to_json(const Graph& graph, const FusionPlan& plan, const MemoryPlan& memory);

} // namespace stitch
