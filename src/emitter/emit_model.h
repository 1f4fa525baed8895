// emit_model: the whole generated source of one model library from its graph, fusion plan
// and memory plan — one .cu file per group that does work, one launcher that describes the
// model to the runtime (src/runtime/stitch_model_abi.h) and runs the groups in order, and
// the binary blob embedded into the library (weights, then tensor names), with the assembly
// stub that embeds it.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "planner/fusion_plan.h"
#include "planner/memory_plan.h"

namespace stitch {

struct GeneratedFile {
  std::string name; // a file name made by stitchc ("group_003.cu")
  std::string text;
};

struct GeneratedModel {
  std::vector<GeneratedFile> groups; // one per group with work
  GeneratedFile launcher;            // "launcher.cu"
  GeneratedFile blob_stub;           // "model_blob.S": .incbin of "model.bin"
  std::string blob;                  // the bytes of model.bin
};

// Debugging aids; neither changes the plan nor any kernel of it.
struct EmitOptions {
  // --debug-taps: after each group, the launcher copies every tensor the group writes to
  // memory into a buffer of its own (stitch_abi_tap), readable after the run.
  bool debug_taps = false;
  // Test only (--test-plant-wrong-group): group_<id>.cu also launches a kernel that changes
  // one element of the group's first float32 output, so tests can check that a debugging
  // tool finds the group. -1: none.
  int plant_wrong_group = -1;
};

GeneratedModel emit_model(const Graph& graph, const FusionPlan& plan, const MemoryPlan& memory,
                          const std::string& target, const EmitOptions& options = {});

} // namespace stitch
