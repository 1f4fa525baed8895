// lower-composites: rewrites the ONNX ops that hide reductions behind one node into the
// primitive ops of the op table, so that the planner sees (and fuses) their elementwise and
// reduction parts like any other chain, and the emitter needs no kernel per composite.
//
//   Softmax        ReduceMax, Sub, Exp, ReduceSum, Div              (max-subtracted)
//   LogSoftmax     ReduceMax, Sub, Exp, ReduceSum, Log, Sub
//   LayerNorm      ReduceMean, Sub, Mul(d, d), ReduceMean, Add eps, Sqrt, Div, Mul scale, Add B
//   RMSNorm        Mul(x, x), ReduceMean, Add eps, Sqrt, Div, Mul scale
//   InstanceNorm   the LayerNorm chain over the spatial axes, scale and B per channel
//   GroupNorm      the same over [N, G, C/G * D...] (Reshape), scale and bias per group
//                  (opset 18) or per channel (opset 21)
//   BatchNorm      Mul(x, s) and Add b' per channel, s = scale / sqrt(var + eps),
//                  b' = B - mean * s, computed here when the statistics are constants
//   RotaryEmbedding  Slices of the rotated halves (or even and odd elements), x1 cos - x2 sin
//                  and x1 sin + x2 cos, Concats, the caches looked up by position_ids (Gather),
//                  the head transposes: index remappings and pointwise ops one Local kernel runs
//   Einsum         of two operands that is a (batched) matrix product: Transposes and
//                  Reshapes to [batch, rows, summed] and [batch, summed, columns], MatMul, the
//                  result reshaped and transposed to the output's labels (a constant operand
//                  permuted here); without summed labels a broadcast Mul, without rows and
//                  columns a Mul and a ReduceSum. Other Einsums stay one node (a loop nest)
//   Attention      heads split, past keys and values concatenated, K and V repeated for
//                  grouped-query heads (Expand), MatMul of the scaled Q and K^T, the masks
//                  added (bool as 0 / -inf, causal as a constant), softcap, Softmax (as above),
//                  MatMul with V, heads merged
//
// The forms follow the ONNX spec's function bodies except where the numerics call for more:
// the variance is two-pass (the mean of squared deviations, never E[x^2] - E[x]^2), softmax
// subtracts the row's maximum, and statistics are computed in float32 (float64 for float64
// inputs or stash_type), with Casts around them for half-precision inputs. The chains are
// already in the canonical forms of canonicalize.h (x*x, a / sqrt(v)), so a model whose
// exporter expanded these ops by hand ends up with the very same graph.
//
// The composite's outputs keep their tensors (and so their ONNX names); the new nodes are
// named "<composite>/<Op>" and their new tensors "<composite>/<role>". Shape rules type each
// new node as it is made; constant operands (epsilon, reshaped or cast scales, BatchNorm's
// folded statistics) are computed here, so no node of constants is left for folding.
//
// Kept on purpose, as single nodes:
//   - pointwise ops with a device function (Gelu, HardSwish, Mish, Softplus, Selu, ...): one
//     node the planner already fuses anywhere; splitting them would only add nodes. Gelu in
//     particular stays one op: cuBLASLt applies tanh-Gelu in a GEMM epilogue, and canonicalize
//     turns the GELU chains exporters write into it.
//   - the Reduce* variants (ReduceL1/L2/SumSquare/LogSum/LogSumExp), ArgMax/ArgMin, CumSum
//     and the global pools: each is one reduction or scan the planner sees as such.
#pragma once

#include "graph/graph.h"

namespace stitch {

bool lower_composites(Graph& graph);

} // namespace stitch
