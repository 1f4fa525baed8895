// fold-residual-bias: the sum of two biased convolutions (a residual block whose shortcut is a
// convolution: ResNet's downsampling blocks) adds both biases once:
//
//   Add(Conv(x, W1, b1), Conv(s, W2, b2))  ->  Add(Conv(x, W1, b1 + b2), Conv(s, W2))
//
// cuDNN's fused call computes act(conv + Z + bias) for the first; the second, without a bias,
// is one plain convolution. Left biased, the second is a convolution whose only epilogue is its
// bias, which cuDNN fuses with the identity activation only for one algorithm: on an H100 with
// float16 NHWC tensors it refused, and each such bias went through cudnnAddTensor, a pass over
// the result (five calls of 76 us in a 3.3 ms ResNet-50 at batch 64). b1 + b2 is computed in
// double and rounded once to the biases' type; the sum's value changes only by the rounding of
// the two partial sums it no longer makes. The two Convs' results are no longer the model's
// values: they get tensors of their own (`/with_residual_bias`, `/unbiased`), so that debug
// taps find no model name on them.
//
// Which: a two-operand Add whose operands are each the result of a Conv (not a ConvTranspose)
// read by nothing else and not a graph output, both with a constant bias of one shape and the
// Add's dtype. Runs after canonicalize and before channels-last (which puts Transposes between
// the Convs and the Add).
#pragma once

#include "graph/graph.h"

namespace stitch {

// Returns true when it changed the graph.
bool fold_residual_bias(Graph& graph);

} // namespace stitch
