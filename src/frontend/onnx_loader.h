// The ONNX frontend: reads a .onnx file into stitchc's Graph.
//
// It reads models up to protobuf's 2 GiB limit, initializers in every storage form
// (raw_data, typed fields, external data files beside the model), attributes, the default
// domain's opset, and graph inputs and outputs with symbolic dims bound by the caller.
// Every problem with the file is a UserError naming the file, the node and the reason.
#pragma once

#include <map>
#include <string>

#include "graph/graph.h"

namespace stitch {

struct LoadOptions {
  // Shapes for graph inputs by name (`--input-shape NAME=1x3x224x224`); they bind the
  // symbolic dims (dim_param) of that input, and through their names, of others.
  std::map<std::string, Shape> input_shapes;
  // Graph inputs given a fixed value, as ONNX TensorProto files (`--freeze-input
  // NAME=FILE.pb`): they become constants, e.g. a shape operand fed as an input.
  std::map<std::string, std::string> frozen_inputs;
  // The caps on the model's size (graph/limits.h), raised or lowered by stitchc's --max-* flags.
  ModelLimits limits;
};

Graph load_onnx(const std::string& path, const LoadOptions& options = {});

// Parses "1x3x224x224" (or "" for a scalar) into a shape; nullopt when malformed.
std::optional<Shape> parse_shape_spec(const std::string& spec);

} // namespace stitch
