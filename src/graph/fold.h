// Host evaluators for constant folding: given a node whose inputs are all constant (or, for
// Shape and Size, merely typed), compute its outputs' bytes. Each op names its evaluator in
// the op table (ops.def); `no_fold` means the op is never folded.
#pragma once

#include <memory>
#include <vector>

#include "graph/graph.h"

namespace stitch {

// One entry per node output (null for an omitted output); empty when the node is not folded.
using FoldResult = std::vector<std::shared_ptr<const ConstantData>>;
using FoldFn = FoldResult (*)(const Graph& graph, const Node& node);

FoldResult no_fold(const Graph& graph, const Node& node);

#define STITCH_OP(name, category, rule, fold, device)                                              \
  FoldResult fold(const Graph& graph, const Node& node);
#include "graph/ops.def"
#undef STITCH_OP

FoldFn fold_function(OpKind op);
// Shape and Size read only their input's type, so they fold even when the input is computed.
bool folds_from_types_only(OpKind op);

} // namespace stitch
