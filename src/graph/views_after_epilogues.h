// views-after-epilogues: a view between a product and the nodes a library call's epilogue
// applies moves after them. An exporter that flattens a Linear layer's input to rows and
// unflattens its result (Conv1D in GPT-2: Reshape, Gemm, Reshape, then the tanh Gelu) puts the
// activation after a View, where the call's epilogue cannot take it: the activation costs a
// kernel that reads and writes the whole intermediate. Moved before the View, it reads the
// product directly:
//
//     y = Gelu(View(Gemm(a, w, b)))   becomes   y = View(Gelu(Gemm(a, w, b)))
//
// The moved node is a Relu, a tanh Gelu (cuBLASLt's activations) or the Add of a constant
// bias row along the last axis, which the View keeps; the product (or the epilogue nodes
// already after it) is read by the View alone, and the View's result by that node alone. The
// node's result keeps its name and values as the View's result; the node writes a new tensor of
// the product's shape. Chains move node by node (a bias Add, then the Gelu after it).
#pragma once

#include "graph/graph.h"

namespace stitch {

bool views_after_epilogues(Graph& graph);

} // namespace stitch
