// merge-matmuls: MatMuls that read the same activation with constant weights (the Q, K and V
// projections of attention; the gate and up projections of a gated MLP) become one MatMul over
// the weights concatenated along N at compile time, so that the activation is read once and
// the library is called once; each original result is a Slice of the merged one.
//
//   Q = MatMul(x, Wq)  K = MatMul(x, Wk)  V = MatMul(x, Wv)       Wq [64,64], Wk, Wv [64,32]
// becomes
//   QKV = MatMul(x, Wqkv)                                         Wqkv [64,128] (a constant)
//   Q = Slice(QKV, 0..64, axis -1)  K = Slice(QKV, 64..96)  V = Slice(QKV, 96..128)
//
// When every one of them is read only by a bias Add of a constant row (Linear layers exported as
// MatMul + Add), the biases are concatenated too and the Add follows the merged MatMul (one
// bias epilogue), the Slices then giving the Adds' results.
//
// The Slices are index remappings the planner fuses into their readers (a Local group reads
// through them). A head split right after one, Reshape of the sliced last axis N into [N/d, d],
// would sit between the Slice and its reader as a view the kernel cannot read through; the pass
// moves the Slice after it instead: the merged result is viewed as [..., sum N / d, d] once and
// sliced along its heads, [o/d, (o + N)/d), when d divides every offset.
//
// A Gemm among such siblings (a Linear layer on 2-D input: A * B + C with transA 0, alpha 1,
// beta 1, B constant and transposed or not, C a constant) is first rewritten as MatMul(A, B),
// B transposed at compile time when transB, and Add(product, C), so that it merges as they do;
// a lone Gemm stays a Gemm.
//
// A Split of a runtime tensor's last axis whose every result is read only by such head
// splits (a model that merged the projections itself: GPT-2's one Linear for Q, K and V, split
// after it) becomes the same head slices, so that its kernel goes too; a Split read otherwise
// stays one kernel writing all its parts.
//
// Which MatMuls: a runtime A of rank 2 or more; B a constant [K, N] of A's dtype, every sibling
// with the same K; non-empty results. Runs after canonicalize and channels-last, before
// remove-identity, eliminate-dead (which drop the replaced nodes' leftovers) and make-views.
#pragma once

#include "graph/graph.h"

namespace stitch {

// Returns true when it changed the graph.
bool merge_matmuls(Graph& graph);

} // namespace stitch
