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
  // symbolic dims (dim_param) of that input, and through their names, of others. A dim may be
  // a symbol that `dims` names (`NAME=batchx3x224x224`).
  std::map<std::string, SymShape> input_shapes;
  // Symbolic dims by name (`--dim batch=1..64@8`): kept symbolic over a range, or bound to
  // one value where min == max (`--dim batch=8`).
  std::vector<SymbolicDim> dims;
  // Graph inputs given a fixed value, as ONNX TensorProto files (`--freeze-input
  // NAME=FILE.pb`): they become constants, e.g. a shape operand fed as an input.
  std::map<std::string, std::string> frozen_inputs;
  // The caps on the model's size (graph/limits.h), raised or lowered by stitchc's --max-* flags.
  ModelLimits limits;
};

Graph load_onnx(const std::string& path, const LoadOptions& options = {});

// Parses "1x3x224x224" (or "" for a scalar) into a shape; nullopt when malformed.
std::optional<Shape> parse_shape_spec(const std::string& spec);
// Parses "batchx3x224x224" (or, where a name holds an x, "batch,3,224,224"): numbers and
// symbol names; nullopt when malformed.
std::optional<SymShape> parse_symbolic_shape_spec(const std::string& spec);
// A symbolic dim's name: an identifier ([A-Za-z_][A-Za-z0-9_]*, at most 64 characters).
bool is_dim_name(const std::string& name);
// Parses --dim's "NAME=MIN..MAX", "NAME=MIN..MAX@TYPICAL" or "NAME=VALUE" (the typical value
// defaults to the maximum); nullopt when malformed. The values are not checked against
// each other.
std::optional<SymbolicDim> parse_dim_spec(const std::string& arg);

} // namespace stitch
