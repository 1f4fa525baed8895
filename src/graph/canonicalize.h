// canonicalize: gives the few computations that exporters spell in several ways one spelling,
// so that a composite lowered by lower-composites and the same composite expanded by an
// exporter (torch writes LayerNorm as ReduceMean, Sub, Pow 2, ReduceMean, Add, Sqrt, Div,
// Mul, Add; GELU as Div, Erf, Add, Mul, Mul) become the same graph, planned and emitted the
// same way.
//
//   Pow(x, 2)               -> Mul(x, x)      exact, and no pow() on the device
//   Mul(a, Reciprocal(b))   -> Div(a, b)      one rounding instead of two (rsqrt as a / sqrt)
//   Sum(a, b)               -> Add(a, b)
//   Transpose(Transpose(x, p1), p2) -> Transpose(x, p1[p2[j]])   one copy, or none (Identity)
//     (a head split followed by a key transpose is one layout a GEMM can read in place)
//   Gemm(A, B, C, beta) with C a float32 constant -> Gemm(A, B, beta * C, beta 1), a C along
//     M ([], [1], [1, 1]) the row of N: as the library's epilogue takes it (bias or C), where
//     it needed a fill kernel (beta 0 leaves C unread and untouched)
//   Conv(X [1, C, 1, ...], W [C', C, 1, ...], B), group 1, unpadded
//                           -> View(Gemm(View(X) [1, C], W as [C', C], B, transB=1))
//     a 1 x 1 convolution of one image of 1 x 1 pixels (a squeeze-and-excitation block's,
//     after its global pool) is a matrix-vector product, which the planner stitches to the
//     pool before it and the activation after it, where cuDNN's call would stand alone
//   0.5 * x * (1 + erf(x / sqrt(2)))                              -> Gelu(x)
//   0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))       -> Gelu(x, approximate="tanh")
//     in the orders and associations exporters write (x / 1.41421 or x * 0.70711, the 0.5
//     applied first or last, Pow(x, 3) or x * x * x). Gelu is the one canonical form of GELU:
//     a single pointwise op the planner fuses anywhere, and the activation cuBLASLt applies
//     in a GEMM epilogue (tanh form).
//
// Only values read by the matched chain alone are folded into the new node; nodes the
// rewrites leave unread are removed.
#pragma once

#include "graph/graph.h"

namespace stitch {

bool canonicalize(Graph& graph);

// The GELU rewrites alone (the last two above). convert-precision runs them first, so that a
// GELU chain is one node before it gives values their types: its x^3 would otherwise be a Pow
// kept in float32, the chain split by Casts that canonicalize cannot see through.
bool raise_gelu(Graph& graph);

} // namespace stitch
