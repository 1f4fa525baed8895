// A model loaded, run through the passes and planned the way stitchc does, for the report tests.
#pragma once

#include <string>

#include "graph/graph.h"
#include "planner/fusion_plan.h"
#include "planner/memory_plan.h"

namespace stitch::test {

struct PlannedModel {
  Graph graph;
  FusionPlan plan;
  MemoryPlan memory;
};

PlannedModel plan_model(const std::string& path, const std::string& planner);

} // namespace stitch::test
