// copy-shared-ranges: a Range read by several pointwise nodes, directly or through views (an
// exporter's position ids, unsqueezed once and read by both a rotary embedding and a causal
// mask), becomes one Range, with its views, per reader. A Range costs a kernel of its own
// wherever its result must be stored; each copy can instead be generated in place by the
// group of the node that reads it. Nothing else is copied: a Range whose readers are not all
// pointwise, or one read by more than kMaxRangeCopies of them, or a graph output, stays.
#pragma once

#include "graph/graph.h"

namespace stitch {

inline constexpr int kMaxRangeCopies = 8;

bool copy_shared_ranges(Graph& graph);

} // namespace stitch
