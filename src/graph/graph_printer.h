// A readable text form of the graph for --print-after and for debugging:
//   %y: float32[2,3] = Add(%x, %b)  // 'add_1'
#pragma once

#include <string>

#include "graph/graph.h"

namespace stitch {

std::string print_graph(const Graph& graph);

} // namespace stitch
