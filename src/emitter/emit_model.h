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

GeneratedModel emit_model(const Graph& graph, const FusionPlan& plan, const MemoryPlan& memory,
                          const std::string& target);

} // namespace stitch
