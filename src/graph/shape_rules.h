// Shape rules: one function per kind of operator, named in the op table (ops.def), that
// checks a node's operands and attributes and sets the dtype and shape of its outputs.
// The rules live in shape_rules_{elementwise,reduction,movement,generators,spatial,compute}.cpp;
// what rules and folds both read (reduce axes, slice bounds, ...) is in op_params.h.
#pragma once

#include "graph/infer_context.h"

namespace stitch {

using ShapeRule = void (*)(InferContext&);

#define STITCH_OP(name, category, rule, fold, device) void rule(InferContext& ctx);
#include "graph/ops.def"
#undef STITCH_OP

// The rule of an op, from the table.
ShapeRule shape_rule(OpKind op);

} // namespace stitch
