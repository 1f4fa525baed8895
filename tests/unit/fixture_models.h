// Loading the real-model fixtures of tests/models the way the driver does: symbolic dims
// bound from the fixture's <name>.inputs.json, then the graph passes.
#pragma once

#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "frontend/onnx_loader.h"
#include "graph/pipeline.h"

namespace stitch::test {

// The fixture's graph after the passes; `spec`, when given, receives its inputs.json.
inline Graph load_fixture_graph(const std::string& name, nlohmann::json* spec = nullptr) {
  std::string base = std::string(STITCH_SOURCE_DIR) + "/tests/models/" + name;
  std::ifstream f(base + ".inputs.json");
  REQUIRE(f);
  nlohmann::json parsed = nlohmann::json::parse(f);
  LoadOptions load;
  for (const auto& input : parsed["inputs"]) {
    Shape shape;
    for (const auto& d : input["shape"])
      shape.push_back(d.is_string() ? parsed["dims"][d.get<std::string>()].get<int64_t>()
                                    : d.get<int64_t>());
    load.input_shapes[input["name"].get<std::string>()] = sym_shape_of(shape);
  }
  Graph g = load_onnx(base + ".onnx", load);
  run_pipeline(g, {});
  if (spec) *spec = std::move(parsed);
  return g;
}

} // namespace stitch::test
