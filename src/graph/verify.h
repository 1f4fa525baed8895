// verify_graph: the invariants every pass must keep. The pipeline runs it after each pass;
// a violation is an internal error naming the pass that broke it.
//  - nodes are in topological order and none is marked removed;
//  - every tensor has at most one producer, and every node input is a graph input, a
//    constant, or produced by an earlier node;
//  - every tensor a node or the graph names is typed with a non-negative, representable
//    shape; constants hold exactly their byte size;
//  - a view has the byte size of the tensor it views, and view chains end;
//  - every graph output is produced, a constant or a graph input.
#pragma once

#include <string>

#include "graph/graph.h"

namespace stitch {

// Before infer-shapes, node outputs are not typed yet: `require_types` is false only then.
void verify_graph(const Graph& graph, const std::string& after_pass, bool require_types = true);

} // namespace stitch
