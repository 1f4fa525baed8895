// infer-shapes: gives every tensor a dtype and a concrete shape, in topological order, by
// running each node's shape rule (shape_rules.h). Where all of a node's inputs are constant
// (or, for Shape and Size, merely typed) and the op has a host evaluator, it also computes
// the node's values, so that rules downstream can read them: this is how
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains give Reshape a constant shape.
// The nodes stay; fold-constants removes them. Finally, the inferred types of the graph
// outputs are checked against the types the model declares.
#pragma once

#include "graph/graph.h"

namespace stitch {

// Values larger than this are left to be computed at run time rather than folded.
constexpr int64_t kMaxFoldBytes = int64_t{256} << 20;

bool infer_shapes(Graph& graph);

} // namespace stitch
