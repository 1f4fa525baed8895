// Every planner's plan (none, greedy, ilp) of every real-model fixture (tests/models/*.onnx,
// loaded as the driver loads it) passes the memory plan and the host target's code generation:
// no UserError, no InternalError. Emission only: test_fused_models.cpp and the models/* ctests
// compile and run the fixtures.
#include <catch2/catch.hpp>

#include <filesystem>

#include "fixture_models.h"
#include "plan_agreement.h"

using namespace stitch;
using namespace stitch::test;

TEST_CASE("plan fixtures: every plan of every model fixture emits", "[planner][models][emit]") {
  // Proves: the transformers and CNNs of tests/models, from both exporters, emit under each
  // planner.
  std::vector<std::string> names;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(STITCH_SOURCE_DIR) + "/tests/models"))
    if (entry.path().extension() == ".onnx") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  REQUIRE(names.size() >= 14);
  for (const std::string& name : names) {
    Graph g = load_fixture_graph(name);
    for (const std::string& planner : all_planners()) {
      INFO(name << ", planner " << planner);
      check_emits(g, plan_for_host(g, planner));
    }
  }
}
