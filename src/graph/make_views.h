// make-views: Reshape, Flatten, Squeeze, Unsqueeze (and what remove-identity kept) become
// View nodes whose output shares its input's storage: a reshape costs no kernel and no
// copy. The View keeps the target shape in its attribute "shape".
#pragma once

#include "graph/graph.h"

namespace stitch {

bool make_views(Graph& graph);

} // namespace stitch
