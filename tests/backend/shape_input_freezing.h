// Loading an ONNX backend node test the way a user would compile it: some tests feed a
// shape-defining operand (Reshape's shape, Unsqueeze's axes, Pad's pads, ...) as a graph
// input, which stitchc refuses with a NonConstantOperandError naming the graph inputs the
// operand depends on. A user holding the value freezes those inputs with --freeze-input; the
// harnesses do the same with the test's own input_N.pb and retry until the model loads.
//
// Shared by the backend shape suite (tests/backend/backend_shapes.cpp) and the conformance
// runner (tests/conformance/), header-only so that each harness needs no extra source file.
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "frontend/onnx_loader.h"
#include "graph/infer_context.h"
#include "graph/pipeline.h"

namespace stitch::testing {

// The names of the model's graph inputs, in order: input_N.pb of a test-data folder feeds
// the N-th of them. Initializers listed as inputs are included, as ONNX numbers them.
inline std::vector<std::string> model_input_names(const std::filesystem::path& model_path) {
  std::ifstream f(model_path, std::ios::binary);
  onnx::ModelProto model;
  std::vector<std::string> names;
  if (!model.ParseFromIstream(&f)) return names;
  for (const onnx::ValueInfoProto& input : model.graph().input())
    names.push_back(input.name());
  return names;
}

// The test-data file holding graph input `name` (test_data_set_0/input_N.pb, N its position
// in the model), or "" when there is none.
inline std::string test_input_file(const std::filesystem::path& test_dir, const std::string& name) {
  std::vector<std::string> names = model_input_names(test_dir / "model.onnx");
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] != name) continue;
    std::filesystem::path pb =
        test_dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
    return std::filesystem::exists(pb) ? pb.string() : "";
  }
  return "";
}

// Loads test_dir/model.onnx and runs the pass pipeline. Each graph input a shape operand
// depends on is frozen to the test's value (added to options.frozen_inputs as NAME -> file,
// exactly what `stitchc --freeze-input NAME=FILE` takes) and the load is retried; `frozen`
// lists the names in the order they were frozen. Rethrows the NonConstantOperandError when
// freezing cannot help, and every other error as it comes.
inline Graph load_freezing_shape_inputs(const std::filesystem::path& test_dir, LoadOptions& options,
                                        std::vector<std::string>& frozen) {
  for (;;) {
    try {
      Graph g = load_onnx((test_dir / "model.onnx").string(), options);
      run_pipeline(g, {});
      return g;
    } catch (const NonConstantOperandError& e) {
      bool progress = false;
      for (const std::string& input : e.graph_inputs()) {
        if (options.frozen_inputs.count(input)) continue;
        std::string pb = test_input_file(test_dir, input);
        if (pb.empty()) continue;
        options.frozen_inputs[input] = pb;
        frozen.push_back(input);
        progress = true;
      }
      if (!progress) throw;
    }
  }
}

} // namespace stitch::testing
