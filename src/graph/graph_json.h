// The graph as JSON, for `stitchc --report FILE`: inputs, outputs, every tensor's dtype,
// shape and role, and every node with its op, category, operands and attributes.
#pragma once

#include <nlohmann/json.hpp>

#include "graph/graph.h"

namespace stitch {

nlohmann::json graph_to_json(const Graph& graph);

} // namespace stitch
