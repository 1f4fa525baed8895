// Every planner's plan of every allowlisted ONNX backend node test emits: each test of
// tests/conformance/allowlist.txt is loaded as the conformance runner loads it (shape inputs
// frozen to the test's values, tests/backend/shape_input_freezing.h), planned by each planner
// (none, greedy, ilp) as stitchc --target host plans, and must pass the memory plan and the
// host target's code generation: no UserError, no InternalError. Emission only (no compiler
// runs): the conformance shards compile and run these tests under the default planner.
//
// usage: stitch_backend_plans NODE_TEST_DIR ALLOWLIST
#include <filesystem>
#include <iostream>
#include <map>

#include "backend/shape_input_freezing.h"
#include "conformance/test_lists.h"
#include "emitter/emit_model.h"
#include "graph/error.h"
#include "planner/memory_plan.h"
#include "planner/planner.h"

namespace fs = std::filesystem;
using namespace stitch;

namespace {

// The plan stitchc --target host --planner `planner` makes.
FusionPlan plan_for_host(const Graph& g, const std::string& planner) {
  PlannerOptions options;
  options.planner = planner;
  options.device.cooperative_sm_count = kHostTargetMultiprocessors;
  return plan_fusion(g, options);
}

// "" when the memory plan and the host target's code generation accept `plan`, else the error.
std::string emission_error(const Graph& g, const FusionPlan& plan) {
  try {
    MemoryPlan memory = plan_memory(g, plan);
    emit_model(g, plan, memory, "host");
    return "";
  } catch (const UserError& e) {
    return e.what();
  } catch (const InternalError& e) {
    return e.what();
  }
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: stitch_backend_plans NODE_TEST_DIR ALLOWLIST\n";
    return 2;
  }
  fs::path root = argv[1];
  int failed = 0;
  std::map<std::string, int> failures_by_planner, fused_groups;
  std::vector<conformance::AllowlistEntry> allowlist = conformance::read_allowlist(argv[2]);
  for (const conformance::AllowlistEntry& entry : allowlist) {
    Graph g;
    try {
      LoadOptions options;
      std::vector<std::string> frozen;
      g = testing::load_freezing_shape_inputs(root / entry.test, options, frozen);
    } catch (const std::exception& e) {
      std::cout << "FAIL    " << entry.test << ": does not load: " << e.what() << "\n";
      ++failed;
      continue;
    }
    bool ok = true;
    for (const char* planner : {"none", "greedy", "ilp"}) {
      FusionPlan plan = plan_for_host(g, planner);
      for (const FusionGroup& group : plan.groups)
        fused_groups[planner] += group.nodes.size() > 1;
      std::string error = emission_error(g, plan);
      if (error.empty()) continue;
      std::cout << "FAIL    " << entry.test << " (planner " << planner << "): " << error << "\n";
      ++failures_by_planner[planner];
      ok = false;
    }
    failed += !ok;
  }
  std::cout << "\nallowlisted backend node tests: " << allowlist.size() << "; every plan emits for "
            << allowlist.size() - failed << ", not for " << failed;
  for (const auto& [planner, n] : failures_by_planner)
    std::cout << "; planner " << planner << " refused " << n;
  std::cout << "\nfused groups (more than one node) planned: greedy " << fused_groups["greedy"]
            << ", ilp " << fused_groups["ilp"] << "\n";
  return failed == 0 && !allowlist.empty() ? 0 : 1;
}
