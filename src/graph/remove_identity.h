// remove-identity: Identity, inference-time Dropout, and any reshape-like node that leaves
// the shape unchanged compute nothing; their consumers read the input directly. A node
// whose output is a graph output stays (make-views turns it into a view), so output names
// are kept. Dropout's mask output, when read, becomes a constant of all true.
#pragma once

#include "graph/graph.h"

namespace stitch {

bool remove_identity(Graph& graph);

} // namespace stitch
