// channels-last: convolutions on tensor cores read and write [N, spatial..., C] (NHWC); this
// pass stores the activations between them that way, so that cuDNN runs its tensor-core
// kernels without transforming NCHW tensors (each such transform a pass over the tensor and
// workspace the size of it).
//
// Which convolutions: Conv and ConvTranspose nodes of float16 or bfloat16 (and float32 under
// --precision tf32, group 1), 1 to 3 spatial axes, a constant filter, no zero-size tensor. Float32
// convs computed exactly keep channels-first: cuDNN's FMA kernels read it as they are.
//
// How, all in standard ops (the graph stays an ONNX graph, each step exact):
//   1. Each chosen Conv reads X through Transpose(Transpose(X, to_last), to_first), reads its
//      filter as Transpose(W', to_first) where W' is the constant with its second axis last,
//      and its result Y' is given back as Transpose(Transpose(Y', to_last), to_first). The
//      three Transposes next to the Conv are its layouts: the planner puts them in the Conv's
//      library group, which then reads and writes channels-last itself (ConvSpec).
//      A Conv (group 1) whose input channels are not a multiple of 16 bytes of elements (8
//      float16 or bfloat16, 4 float32: a network's RGB stem has 3) reads X channels-last
//      through a Pad of zero channels up to that multiple, and its filter gets as many zero
//      filters: cuDNN's tensor-core NHWC kernels need that alignment, and without it ran a
//      generic kernel (ResNet-50 float16's stem on an H100: 774 us of its 3.3 ms). The products
//      of the zero channels are exact zeros; the Pad joins the input's Transpose in one kernel.
//   2. Every other to_first Transpose (a channels-last value shown channels-first) moves
//      past its pointwise readers: Relu(Transpose(v)) becomes Transpose(Relu(v)); a
//      binary op's other operand is taken channels-last too (a constant permuted here, a
//      broadcast scalar as it is, another such Transpose's input, or, for a non-constant
//      operand of full rank, a to_last Transpose of it). A to_first Transpose read by a
//      to_last one cancels. A MaxPool (without Indices) or AveragePool with explicit pads
//      pools the channels-last tensor viewed as [N, 1, spatial..., C]: the same pool with one
//      more spatial axis, the channels, of window 1 (every output element the same fold of the
//      same taps), its result viewed back as [N, out..., C]. What stays (another reader that
//      is not pointwise, such as Concat, or a graph output) reads a to_first Transpose, which
//      the planner runs as a copy.
// Runs after canonicalize (which would compose the Conv's own Transposes away) and before
// remove-identity and eliminate-dead, which drop the cancelled pairs.
#pragma once

#include "graph/convert_precision.h"
#include "graph/graph.h"

namespace stitch {

// Returns true when it changed the graph.
bool channels_last(Graph& graph, Precision precision);

} // namespace stitch
