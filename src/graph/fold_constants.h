// fold-constants: removes every node whose outputs all have values known at compile time
// (computed by infer-shapes), leaving those values as constant tensors. What remains is
// the computation that really depends on the model's inputs.
#pragma once

#include "graph/graph.h"

namespace stitch {

bool fold_constants(Graph& graph);

} // namespace stitch
