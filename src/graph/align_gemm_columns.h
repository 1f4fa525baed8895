// align-gemm-columns: a float16 or bfloat16 MatMul whose constant weight B [K, N] has rows that
// are not a multiple of 16 bytes (N not a multiple of 8: GPT-2's vocabulary of 50257, BERT's
// 30522) computes over B padded with zero columns to the next multiple, and its result is a
// Slice of the padded one:
//
//   Y = MatMul(x, W)                      W [768, 50257]
// becomes
//   Y' = MatMul(x, W')                    W' [768, 50264], columns 50257.. zero (a constant)
//   Y = Slice(Y', 0..50257, axis -1)
//
// cuBLASLt's tensor-core kernels on sm_90 need 16-byte aligned leading dimensions; with an odd
// one the library falls back to an older, slower kernel (GPT-2's LM head on an H100: a
// cutlass sm75 kernel, 127.5 us of a 622 us run). The Slice is an index remapping: a Local
// group reading Y reads through it, and where Y is a graph output it is one copy. A bias Add
// reading only Y (a Linear layer) is padded too (its row with zeros) and sliced after, so that
// it stays the GEMM's epilogue. Values are unchanged: the padded columns are never read.
//
// A Gemm likewise (its B [K, N] padded with zero columns, or with transB its [N, K] with zero
// rows; a C with a column per output column with zero columns): exporters write a tied LM head,
// x times the embedding matrix transposed, as Gemm(x, E, transB=1).
//
// Which: a runtime A of rank 2 or more; B a constant [K, N] (or [N, K]) of A's dtype, float16 or
// bfloat16, of 1 MiB or more (a projection as wide as a vocabulary; a small one's extra copy
// would cost more than the kernel it saves). Runs after convert-precision (the weights are
// half then) and merge-matmuls, before remove-identity, eliminate-dead and make-views.
#pragma once

#include "graph/graph.h"

namespace stitch {

// Returns true when it changed the graph.
bool align_gemm_columns(Graph& graph);

} // namespace stitch
