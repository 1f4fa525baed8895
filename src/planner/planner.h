// The planners: Graph -> FusionPlan. `plan_fusion` picks one by name:
//   none  one group per node (every op its own kernel or library call)
// The fusion planners (greedy, ilp) build on the same legality checks and cost model.
#pragma once

#include <string>

#include "planner/fusion_plan.h"
#include "planner/launch_config.h"

namespace stitch {

struct PlannerOptions {
  std::string planner = "none";
  DeviceParams device;
};

FusionPlan plan_fusion(const Graph& graph, const PlannerOptions& options);

// One group per node: views become aliases, Gemm-category ops cuBLASLt calls, convolutions
// cuDNN calls, and every other node one kernel with a mapping chosen from its shapes.
FusionPlan plan_one_kernel_per_op(const Graph& graph, const DeviceParams& device);

} // namespace stitch
