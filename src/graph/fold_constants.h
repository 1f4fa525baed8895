// fold-constants: removes every node whose outputs all have values known at compile time
// (computed by infer-shapes), leaving those values as constant tensors. What remains is
// the computation that really depends on the model's inputs.
//
// One fold is done differently: a Transpose (perm [1, 0]) of a 2-D float32 weight W that other
// nodes read too, read only as the B of MatMuls. Folding it would store W a second time,
// transposed (GPT-2's tied embedding: a Gather reads it, and the LM head's MatMul reads its
// transpose; the vocabulary times the width, 154 MB at GPT-2's size). Instead each such
// MatMul becomes Gemm(A, W, transB = 1), which cuBLASLt runs reading W transposed; an A with
// more than two axes is flattened to [M, K] before it and the [M, N] product reshaped back
// after it (both become views).
#pragma once

#include "graph/graph.h"

namespace stitch {

bool fold_constants(Graph& graph);

} // namespace stitch
