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
  // It includes device/stitch_grid.cuh (its group launches cooperatively): the CUDA target's
  // build compiles such files together, since that header is expensive for nvcc.
  bool grid_barrier = false;
};

struct GeneratedModel {
  std::vector<GeneratedFile> groups; // one per group with work
  GeneratedFile launcher;            // "launcher.cu"
  GeneratedFile blob_stub;           // "model_blob.S": .incbin of "model.bin"
  std::string blob;                  // the bytes of model.bin
};

// How the library was built, embedded for stitch_library_build_info (include/stitch/stitch.h).
// The launcher reads every string from the blob: none becomes code.
struct BuildInfo {
  std::string stitchc_version;
  std::string model_sha256; // hex
  std::string model_file;   // without its folder
  std::string archs;        // "sm_80,sm_90"; "" for the host target
  std::string planner;
  std::string precision;
  std::string flags;                    // stitchc's arguments
  std::string symbol_prefix = "stitch"; // the exported C API's prefix
};

// What the library embeds besides the model, and debugging aids; none of it changes the plan
// or any kernel of it.
struct EmitOptions {
  BuildInfo build;
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
