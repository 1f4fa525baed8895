// Topological ordering of a graph's nodes, iterative (a chain of 20,000 nodes must not blow
// the stack), with cycle detection that names a node on the cycle.
#pragma once

#include "graph/graph.h"

namespace stitch {

// Reorders graph.nodes so that every node follows the producers of its inputs. Ties keep the
// model's order. A cycle is a user error naming one node on it.
void topo_sort(Graph& graph);

} // namespace stitch
