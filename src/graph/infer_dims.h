// The symbolic half of infer-shapes. Where a graph keeps symbolic dims (`--dim seq=1..512`),
// every shape is inferred twice: the shape rules compute it at the planning binding (each
// symbol at its typical value: Tensor::shape), and `infer_node_dims` computes it as
// expressions of the symbols (Tensor::dims), for every op whose output shape depends only
// on its inputs' shapes and on constant operands.
//
// Shape computations become expressions too: a Shape op's output, and what Gather, Slice,
// Concat, Unsqueeze, Squeeze, Reshape, Cast, Add, Sub, Mul, Div, Mod, Max, Min, Equal and
// Where compute from it, carry their elements as expressions (Tensor::sym_values), so that
// a Reshape, Expand, ConstantOfShape, Slice or Range that takes them gets a symbolic shape.
// A value computed from symbolic dims that is not such a shape computation (a float made
// from a dim, a comparison the symbols' ranges do not decide) is refused with that reason,
// and so is an op whose output shape stitchc cannot yet express over the symbols.
//
// Every expression is checked against the rule's concrete shape at the planning binding: a
// disagreement is an internal error.
#pragma once

#include "graph/infer_context.h"

namespace stitch {

// Runs after the node's shape rule and host evaluation; does nothing for a node whose inputs
// depend on no symbol. A folded value (Tensor::constant) that depends on the symbols is
// dropped where the output's shape is symbolic: the node then computes it at run time.
void infer_node_dims(InferContext& ctx);

// After a pass (`pass`, for messages): every node's output expressions derived again from its
// inputs' by the symbolic rules, so that the tensors a pass made or reshaped get theirs.
// Graph inputs keep theirs, and constants their values as expressions (Tensor::sym_values:
// a pass that makes a shape operand from a symbolic shape gives it those). A View keeps the
// expressions of the node it replaced. A node whose expressions no longer derive is an
// internal error naming the pass.
void derive_dims(Graph& graph, const std::string& pass);

} // namespace stitch
