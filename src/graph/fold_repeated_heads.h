// fold-repeated-heads: grouped-query attention repeats each key head for `rep` query heads
// (Unsqueeze, Expand, Reshape: [B, KV, S, D] -> [B, KV, rep, S, D] -> [B, KV * rep, S, D]) before
// the scores' MatMul; the copy is never needed. The rep query heads that share a key head are
// adjacent in Q [B, KV * rep, S, D], so Q viewed as [B, KV, rep * S, D] has their rows one after
// another, and one product per key head gives all their scores:
//
//   scores = MatMul(Q, Transpose(Reshape(Expand(Unsqueeze(K)))))       [B, KV*rep, S, S]
// becomes
//   scores = Reshape(MatMul(Reshape(Q, [B, KV, rep*S, D]), Transpose(K)), [B, KV*rep, S, S])
//
// (the same without the Transpose when the repeated tensor is read as it is: the context
// P V, P viewed as [B, KV, rep * S, S]). The Reshapes are views; the Expand and its Reshape are
// left to eliminate-dead. A head merge's Transpose after the context product then reads a view
// of it, which the library cannot write through, and becomes a copy (a Local group): it replaces
// the repeat's copy of V, and the product is one batched call where writing through the merge
// took a loop of calls over the batch (heads and batch are no single stride there).
//
// Runs after canonicalize, before make-views (the Reshapes it reads and writes are still
// Reshapes) and eliminate-dead.
#pragma once

#include "graph/graph.h"

namespace stitch {

// Returns true when it changed the graph.
bool fold_repeated_heads(Graph& graph);

} // namespace stitch
