// eliminate-dead: removes nodes none of whose outputs reach a graph output, e.g. what
// folding or identity removal left unread, or branches an exporter wrote but never used.
#pragma once

#include "graph/graph.h"

namespace stitch {

bool eliminate_dead(Graph& graph);

} // namespace stitch
