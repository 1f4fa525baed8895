#!/usr/bin/env python3
"""Writes four fixtures with symbolic dims into tests/models/dynamic, each with its inputs.json,
weights from fixed seeds (the files are the same on every run), of the ops other exporters
write where PyTorch's do not:

- einsum_dynamic: a Keras-style attention layer (what tf2onnx writes for EinsumDense and
  MultiHeadAttention) over x float32[batch, seq, 32]: the projections to 4 heads of 8 as
  Einsum "abc,cde->abde", the scores "aecd,abcd->acbe" scaled, masked by a key padding mask
  [batch, 1, 1, seq] from the tokens and softmaxed over the run's keys, the context
  "acbe,aecd->abcd", the output projection "abcd,cde->abe", each token's scaled score with
  itself "acbb->acb" (a diagonal, no matrix product: a loop nest), the sequence padded to a
  multiple of 8 by pads computed from its Shape, the features' products over the sequence less
  its last token plus a bias (a MatMul of K = seq - 1: 0 at one token) and that shorter sequence
  projected (M = batch x (seq - 1): none at one token), each feature normalized over the
  sequence
  (InstanceNormalization of [batch, 32, seq]); besides, each token's dot product
  with the mean token "abc,ac->ab", an outer product "ab,ac->abc" of two slices, and the
  largest value of each feature over the sequence with its position (TopK along seq).
- attention_dynamic (opset 23): the ONNX Attention op over batch, seq and past, as exporters
  of opset 23 write torch's scaled_dot_product_attention: a causal grouped-query attention
  (3-D Q [batch, seq, 4 x 8], K and V [batch, seq, 2 x 8], 4 query heads over 2 key-value
  heads) after a key-value cache past_key and past_value [batch, 2, past, 8], returning the
  extended caches; and a 4-D attention [batch, 4, seq, 8] with an additive mask
  [batch, 1, seq, seq] and a softcap.
- image_ops_dynamic: what detection and super-resolution models hold over their batch, x
  float32[batch, 8, 6, 6]: DepthToSpace (DCR) and SpaceToDepth, Resize (nearest by scales,
  linear to sizes computed from the input's shape), TopK along the channels and GatherElements
  by its indices, a Slice flipping the batch, a strided Conv with asymmetric pads (one more
  at the end, as tf2onnx writes TF's SAME), a row of class tokens tiled over the batch by
  multiples computed from the input's Shape (tf2onnx's tf.tile) and prepended, and the batch
  tiled twice.

- windows_dynamic: convolutions and pooling over symbolic image sizes, x float32[batch, 4, height,
  width] and s float32[batch, 6, length]: a dilated Conv and ReLU, a MaxPool with ceil_mode and
  its Indices, an AveragePool with count_include_pad, a depthwise Conv with auto_pad SAME_LOWER
  and a Sigmoid, a ConvTranspose doubling the size, a GlobalMaxPool, a reflect Pad of the width
  (by less than its smallest size: ONNX Runtime and the ONNX reference differ beyond), Resizes by
  scales (nearest x2, cubic x1.5, linear x0.6 x0.55), to the size of another tensor (sizes from
  its Shape: the pooled map upsampled back and added, as in a feature pyramid) and to a fixed 24 x
  24, CBAM's spatial attention (the mean and the maximum over the channels, a 7 x 7 Conv, a
  Sigmoid gate), a DepthToSpace of the Conv (a sub-pixel convolution) and a SpaceToDepth of the
  doubled map, a downsampling block as tf2onnx writes TF's (Convs with auto_pad SAME_UPPER at
  stride 2, 3 x 3 and a 1 x 1 shortcut, added), pooling with SAME at stride 2 (a MaxPool with its
  Indices, one fused between a ReLU and a Sigmoid, an AveragePool counting its pads), a
  ConvTranspose with SAME at stride 2 (computed whole and cropped), and over s a strided 1-D Conv,
  Tanh and MaxPool and a 1-D Conv with asymmetric pads. (ceil_mode with count_include_pad is left
  out: there ONNX Runtime 1.23 divides a last partial window differently from the ONNX reference,
  which stitchc follows.)

The ctest models/dynamic/<name>/host compiles each once with stitchc --dim, fused and one
kernel per op, and compares both with ONNX Runtime, and each other, at several shapes
(compare_with_ort.py --unfused-too).

usage: .venv/bin/python scripts/models/make_dynamic_ops.py [OUT_DIR]
"""
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
DEFAULT_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                            "..", "tests", "models", "dynamic"))
HIDDEN, HEADS, HEAD = 32, 4, 8
EINSUM_DIMS = {"batch": {"min": 1, "max": 8, "example": 3},
               "seq": {"min": 1, "max": 64, "example": 12}}
IMAGE_DIMS = {"batch": {"min": 1, "max": 8, "example": 3}}


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.inits, self.nodes = [], []

    def const(self, name, array, dtype=np.float32):
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype), name))
        return name

    def weight(self, name, shape, fan_in):
        return self.const(name, self.rng.standard_normal(shape) / math.sqrt(fan_in))

    def node(self, op, inputs, outputs, **attrs):
        outputs = [outputs] if isinstance(outputs, str) else outputs
        self.nodes.append(helper.make_node(op, inputs, outputs,
                                           name=f"{op.lower()}_{len(self.nodes)}", **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def finish(self, name, inputs, outputs, opset=OPSET):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name="make_dynamic_ops.py")
        model.ir_version = 8 if opset < 21 else 10  # what the project's onnxruntime reads
        onnx.checker.check_model(model, full_check=True)
        return model


def build_einsum():
    b = Builder(20261130)
    proj = {}
    for p in "qkv":
        proj[p] = b.node("Einsum", ["x", b.weight(f"w_{p}", [HIDDEN, HEADS, HEAD], HIDDEN)],
                         f"{p}_heads", equation="abc,cde->abde")
    scores = b.node("Einsum", [proj["k"], proj["q"]], "scores", equation="aecd,abcd->acbe")
    scaled = b.node("Mul", [scores, b.const("scale", 1.0 / math.sqrt(HEAD))], "scores_scaled")
    # A key padding mask [batch, 1, 1, seq] from the tokens (a key is masked where its first
    # feature is negative: a comparison of inputs, exact everywhere), added before the softmax.
    first_all = b.node("Slice", ["x", b.const("m_s", [0], np.int64), b.const("m_e", [1], np.int64),
                                 b.const("m_a", [2], np.int64)], "first_of_token")
    keep = b.node("Greater", [first_all, b.const("zero", 0.0)], "key_kept")
    bias = b.node("Where", [keep, b.const("open", 0.0), b.const("closed", -1e4)], "key_bias")
    bias = b.node("Unsqueeze", [b.node("Transpose", [bias], "key_bias_t", perm=[0, 2, 1]),
                                b.const("m_axis", [1], np.int64)], "key_mask")
    probs = b.node("Softmax", [b.node("Add", [scaled, bias], "scores_masked")], "probs", axis=-1)
    b.node("Einsum", [scaled], "self_scores", equation="acbb->acb")  # a diagonal: a loop nest
    context = b.node("Einsum", [probs, proj["v"]], "context", equation="acbe,aecd->abcd")
    b.node("Einsum", [context, b.weight("w_o", [HEADS, HEAD, HIDDEN], HIDDEN)], "y",
           equation="abcd,cde->abe")
    mean = b.node("ReduceMean", ["x"], "mean_token", axes=[1], keepdims=0)
    b.node("Einsum", ["x", mean], "dots", equation="abc,ac->ab")
    first = b.node("Slice", ["x", b.const("s0", [0], np.int64), b.const("e0", [1], np.int64),
                             b.const("a2", [2], np.int64)], "first_feature")
    rest = b.node("Slice", ["x", b.const("s1", [1], np.int64), b.const("e1", [5], np.int64),
                            b.const("a2b", [2], np.int64)], "next_features")
    b.node("Einsum", [first, rest], "outer", equation="abx,aby->abxy")
    b.node("TopK", ["x", b.const("one", [1], np.int64)], ["top_value", "top_position"], axis=1)
    # The sequence padded with zeros to a multiple of 8, its pads computed from the Shape:
    # (8 - seq % 8) % 8 at the end (as windowed attention pads its tokens).
    seq = b.node("Gather", [b.node("Shape", ["x"], "x_shape"), b.const("seq_axis", 1, np.int64)],
                 "seq_len", axis=0)
    eight = b.const("eight", 8, np.int64)
    tail = b.node("Mod", [b.node("Sub", [eight, b.node("Mod", [seq, eight], "seq_rem")],
                                 "to_eight"), eight], "tail")
    pads = b.node("Concat", [b.const("pads_head", [0, 0, 0, 0], np.int64),
                             b.node("Unsqueeze", [tail, b.const("axis0", [0], np.int64)],
                                    "tail_1"),
                             b.const("pads_rest", [0], np.int64)], "pads", axis=0)
    b.node("Pad", ["x", pads], "padded_to_8")
    # The features' products summed over the sequence less its last token (a next-token shift),
    # plus a bias: a batched MatMul whose K is seq - 1, 0 at one token (an empty sum: the bias
    # alone). (A MatMul, not an Einsum: ONNX Runtime 1.23's Einsum crashes on an empty K.)
    shifted = b.node("Slice", ["x", b.const("shift_s", [0], np.int64),
                               b.const("shift_e", [-1], np.int64),
                               b.const("shift_a", [1], np.int64)], "shifted")
    gram = b.node("MatMul", [b.node("Transpose", [shifted], "shifted_t", perm=[0, 2, 1]),
                             shifted], "shifted_product")
    b.node("Add", [gram, b.const("gram_bias", np.linspace(-1.0, 1.0, HIDDEN))], "shifted_gram")
    # The shortened sequence projected, with a bias: M is batch x (seq - 1), none at one token.
    b.node("Add", [b.node("MatMul", [shifted, b.weight("w_shift", [HIDDEN, 8], HIDDEN)],
                          "shifted_matmul"),
                   b.const("shift_bias", np.linspace(0.5, -0.5, 8))], "shifted_projection")
    # Each feature normalized over the sequence (InstanceNormalization over [batch, 32, seq], as
    # audio models normalize over time): rows of the run's length.
    b.node("InstanceNormalization",
           [b.node("Transpose", ["x"], "features", perm=[0, 2, 1]),
            b.const("in_scale", np.linspace(0.5, 1.5, HIDDEN)),
            b.const("in_bias", np.linspace(-0.25, 0.25, HIDDEN))], "seq_normalized")
    # Multi-query scores: four query heads against one key head broadcast over them ([batch,
    # 4, seq, 8] @ [batch, 1, 8, seq], as a model sharing one key head exports them unexpanded):
    # one batched call per run whose M stacks the heads.
    mq_q = b.node("Transpose", [b.node("Reshape", ["x", b.const("mq_shape", [0, 0, HEADS, HEAD],
                                                                np.int64)], "mq_q_heads")],
                  "mq_q", perm=[0, 2, 1, 3])
    mq_k = b.node("MatMul", [b.weight("w_mq_k", [HEAD, HIDDEN], HIDDEN),
                             b.node("Transpose", ["x"], "mq_x_t", perm=[0, 2, 1])], "mq_k_t")
    b.node("MatMul", [mq_q, b.node("Unsqueeze", [mq_k, b.const("mq_axis", [1], np.int64)],
                                   "mq_k_head")], "mqa_scores")
    vi = helper.make_tensor_value_info
    return b.finish(
        "einsum_dynamic", [vi("x", TensorProto.FLOAT, ["batch", "seq", HIDDEN])],
        [vi("y", TensorProto.FLOAT, ["batch", "seq", HIDDEN]),
         vi("dots", TensorProto.FLOAT, ["batch", "seq"]),
         vi("outer", TensorProto.FLOAT, ["batch", "seq", 1, 4]),
         vi("top_value", TensorProto.FLOAT, ["batch", 1, HIDDEN]),
         vi("top_position", TensorProto.INT64, ["batch", 1, HIDDEN]),
         vi("self_scores", TensorProto.FLOAT, ["batch", HEADS, "seq"]),
         vi("padded_to_8", TensorProto.FLOAT, ["batch", "padded_seq", HIDDEN]),
         vi("seq_normalized", TensorProto.FLOAT, ["batch", HIDDEN, "seq"]),
         vi("shifted_gram", TensorProto.FLOAT, ["batch", HIDDEN, HIDDEN]),
         vi("shifted_projection", TensorProto.FLOAT, ["batch", "shorter_seq", 8]),
         vi("mqa_scores", TensorProto.FLOAT, ["batch", HEADS, "seq", "seq"])])


def build_image_ops():
    b = Builder(20261131)
    x = "x"
    d2s = b.node("DepthToSpace", [x], "d2s", blocksize=2, mode="DCR")
    b.node("Sigmoid", [d2s], "d2s_sigmoid")
    b.node("SpaceToDepth", [b.node("DepthToSpace", [x], "crd", blocksize=2, mode="CRD")],
           "s2d", blocksize=2)
    b.node("Resize", [x, "", b.const("scales", [1, 1, 2, 2])], "nearest", mode="nearest")
    shape = b.node("Shape", [x], "x_shape")
    lead = b.node("Slice", [shape, b.const("z", [0], np.int64), b.const("two", [2], np.int64)],
                  "lead_dims")
    sizes = b.node("Concat", [lead, b.const("spatial", [9, 4], np.int64)], "sizes", axis=0)
    b.node("Resize", [x, "", "", sizes], "linear", mode="linear",
           coordinate_transformation_mode="half_pixel")
    values, indices = b.node("TopK", [x, b.const("k", [3], np.int64)],
                             ["top_values", "top_indices"], axis=1)
    b.node("GatherElements", [b.node("Neg", [x], "negated"), indices], "gathered", axis=1)
    b.node("Slice", [x, b.const("rs", [-1], np.int64), b.const("re", [-2**62], np.int64),
                     b.const("ra", [0], np.int64), b.const("rstep", [-1], np.int64)],
           "flipped")
    # tf2onnx's padding of TF's SAME at stride 2 over an even size, as explicit pads: one more
    # at the end, which adds a window (the library pads symmetrically: a padded copy of X).
    b.node("Conv", [x, b.weight("w_asym", [4, 8, 3, 3], 72), b.weight("b_asym", [4], 4)],
           "asym_conv", strides=[2, 2], pads=[0, 0, 1, 1])
    # A row of class tokens tiled over the run's batch by multiples computed from the input's
    # Shape (as tf2onnx writes tf.tile) and prepended to the rows; the batch repeated twice.
    batch = b.node("Slice", [shape, b.const("z1", [0], np.int64), b.const("one1", [1], np.int64)],
                   "batch_dim")
    multiples = b.node("Concat", [batch, b.const("ones3", [1, 1, 1], np.int64)], "multiples",
                       axis=0)
    tokens = b.node("Tile", [b.weight("cls", [1, 8, 1, 6], 1), multiples], "tokens")
    b.node("Concat", [tokens, x], "with_tokens", axis=2)
    b.node("Tile", [x, b.const("twice", [2, 1, 1, 1], np.int64)], "doubled")
    vi = helper.make_tensor_value_info
    f = TensorProto.FLOAT
    return b.finish(
        "image_ops_dynamic", [vi(x, f, ["batch", 8, 6, 6])],
        [vi("d2s_sigmoid", f, ["batch", 2, 12, 12]), vi("s2d", f, ["batch", 8, 6, 6]),
         vi("nearest", f, ["batch", 8, 12, 12]), vi("linear", f, ["batch", 8, 9, 4]),
         vi("top_values", f, ["batch", 3, 6, 6]),
         vi("top_indices", TensorProto.INT64, ["batch", 3, 6, 6]),
         vi("gathered", f, ["batch", 3, 6, 6]), vi("flipped", f, ["batch", 8, 6, 6]),
         vi("asym_conv", f, ["batch", 4, 3, 3]), vi("with_tokens", f, ["batch", 8, 7, 6]),
         vi("doubled", f, ["2*batch", 8, 6, 6])])


def build_windows():
    b = Builder(20261133)
    x, s = "x", "s"
    conv = b.node("Conv", [x, b.weight("w", [8, 4, 3, 3], 36), b.weight("bias", [8], 8)], "conv",
                  dilations=[2, 2], pads=[2, 2, 2, 2])
    relu = b.node("Relu", [conv], "relu")
    b.node("MaxPool", [relu], ["pooled", "pooled_at"], kernel_shape=[3, 3], strides=[2, 2],
           pads=[1, 1, 1, 1], ceil_mode=1)
    average = b.node("AveragePool", [relu], "average", kernel_shape=[3, 3], strides=[2, 2],
                     pads=[1, 1, 1, 1], count_include_pad=1)
    depthwise = b.node("Conv", [average, b.weight("w_dw", [8, 1, 3, 3], 9)], "depthwise",
                       group=8, auto_pad="SAME_LOWER")
    gated = b.node("Sigmoid", [depthwise], "gated")
    up = b.node("ConvTranspose", [gated, b.weight("w_up", [8, 4, 4, 4], 32)], "up",
                strides=[2, 2], pads=[1, 1, 1, 1])
    b.node("GlobalMaxPool", [up], "global_max")
    b.node("Pad", [x, b.const("pads", [0, 0, 0, 2, 0, 0, 0, 1], np.int64)], "reflected",
           mode="reflect")
    # Resizes over the image size: by scales (nearest x2, cubic x1.5, linear x0.6 x0.55), back
    # to the size of another tensor (sizes from its Shape, as feature pyramids upsample), and
    # to a fixed size.
    upsampled = b.node("Resize", [relu, "", b.const("twice", [1, 1, 2, 2])], "upsampled",
                       mode="nearest")
    # By scales that are no power-of-two fractions (floor(in * scale) of the float32 scale).
    b.node("Resize", [upsampled, "", b.const("shrink", [1, 1, 0.6, 0.55])], "shrunk",
           mode="linear")
    b.node("Resize", [x, "", b.const("half_again", [1, 1, 1.5, 1.5])], "cubic", mode="cubic")
    relu_shape = b.node("Shape", [relu], "relu_shape")
    back = b.node("Resize", ["pooled", "", "", relu_shape], "pooled_back", mode="linear")
    b.node("Add", [relu, back], "pyramid")
    # Spatial attention as CBAM computes it: the mean and the maximum over the channels (lines
    # height x width apart), a 7 x 7 Conv of both, a Sigmoid gating the map.
    channel_stats = b.node("Concat", [b.node("ReduceMean", [relu], "channel_mean", axes=[1]),
                                      b.node("ReduceMax", [relu], "channel_max", axes=[1])],
                           "channel_stats", axis=1)
    attention = b.node("Sigmoid", [b.node("Conv", [channel_stats,
                                                   b.weight("w_spatial", [1, 2, 7, 7], 98)],
                                          "spatial_logits", pads=[3, 3, 3, 3])], "spatial_gate")
    b.node("Mul", [relu, attention], "spatial_attended")
    x_lead = b.node("Slice", [b.node("Shape", [x], "x_shape"), b.const("z", [0], np.int64),
                              b.const("two", [2], np.int64)], "x_lead")
    b.node("Resize", [x, "", "", b.node("Concat", [x_lead, b.const("to", [24, 24], np.int64)],
                                         "fixed_sizes", axis=0)],
           "fixed_size", mode="linear", coordinate_transformation_mode="align_corners")
    # Sub-pixel convolution (ESPCN's PixelShuffle) over the image size, and SpaceToDepth of
    # the doubled map (its extents multiples of 2 at every size).
    shuffled = b.node("DepthToSpace", [conv], "shuffled", blocksize=2, mode="CRD")
    b.node("SpaceToDepth", ["upsampled"], "unshuffled", blocksize=2)
    line = b.node("Conv", [s, b.weight("w_line", [5, 6, 5], 30)], "line", pads=[2, 2],
                  strides=[2])
    b.node("MaxPool", [b.node("Tanh", [line], "line_tanh")], "line_pooled", kernel_shape=[2],
           strides=[2])
    # A TF model's downsampling block as tf2onnx writes it for unknown image sizes: auto_pad
    # SAME_UPPER at stride 2 (padding by the run's size, asymmetric at even sizes), a 1 x 1
    # shortcut the same way, added; and explicit asymmetric pads over the symbolic length.
    strided = b.node("Conv", [x, b.weight("w_strided", [6, 4, 3, 3], 36),
                              b.weight("b_strided", [6], 6)], "strided", strides=[2, 2],
                     auto_pad="SAME_UPPER")
    shortcut = b.node("Conv", [x, b.weight("w_shortcut", [6, 4, 1, 1], 4)], "shortcut",
                      strides=[2, 2], auto_pad="SAME_UPPER")
    b.node("Add", [b.node("Relu", [strided], "strided_relu"), shortcut], "downsampled")
    b.node("Conv", [s, b.weight("w_line_asym", [3, 6, 3], 18)], "line_asym", pads=[0, 1],
           strides=[2])
    # Pooling with SAME padding at stride 2 (the run's pads): a MaxPool with its Indices, one
    # fused with the ReLU before it and a Sigmoid after, and an AveragePool counting its pads.
    b.node("MaxPool", [strided], ["same_pooled", "same_pooled_at"], kernel_shape=[3, 3],
           strides=[2, 2], auto_pad="SAME_UPPER")
    b.node("Sigmoid", [b.node("MaxPool", ["strided_relu"], "same_fused", kernel_shape=[2, 3],
                              strides=[2, 2], auto_pad="SAME_LOWER")], "same_gated")
    b.node("AveragePool", [x], "same_average", kernel_shape=[3, 2], strides=[2, 3],
           auto_pad="SAME_UPPER", count_include_pad=1)
    # A ConvTranspose with SAME at stride 2 (in * 2 out of 2 * in + 1: the library's symmetric
    # pads cannot give it, so the whole output is computed and cropped).
    b.node("ConvTranspose", [gated, b.weight("w_same_up", [8, 3, 3, 3], 72),
                             b.weight("b_same_up", [3], 3)], "same_up", strides=[2, 2],
           auto_pad="SAME_UPPER")
    vi = helper.make_tensor_value_info
    f = TensorProto.FLOAT
    return b.finish(
        "windows_dynamic",
        [vi(x, f, ["batch", 4, "height", "width"]), vi(s, f, ["batch", 6, "length"])],
        [vi("pooled", f, ["batch", 8, "pooled_height", "pooled_width"]),
         vi("pooled_at", TensorProto.INT64, ["batch", 8, "pooled_height", "pooled_width"]),
         vi("up", f, ["batch", 4, "up_height", "up_width"]),
         vi("global_max", f, ["batch", 4, 1, 1]),
         vi("reflected", f, ["batch", 4, "padded_height", "padded_width"]),
         vi("line_pooled", f, ["batch", 5, "pooled_length"]),
         vi("upsampled", f, ["batch", 8, "twice_height", "twice_width"]),
         vi("cubic", f, ["batch", 4, "cubic_height", "cubic_width"]),
         vi("shrunk", f, ["batch", 8, "shrunk_height", "shrunk_width"]),
         vi("pyramid", f, ["batch", 8, "height", "width"]),
         vi("spatial_attended", f, ["batch", 8, "height", "width"]),
         vi("fixed_size", f, ["batch", 4, 24, 24]),
         vi(shuffled, f, ["batch", 2, "twice_height", "twice_width"]),
         vi("unshuffled", f, ["batch", 32, "height", "width"]),
         vi("downsampled", f, ["batch", 6, "half_height", "half_width"]),
         vi("line_asym", f, ["batch", 3, "half_length"]),
         vi("same_pooled", f, ["batch", 6, "quarter_height", "quarter_width"]),
         vi("same_pooled_at", TensorProto.INT64,
            ["batch", 6, "quarter_height", "quarter_width"]),
         vi("same_gated", f, ["batch", 6, "quarter_height", "quarter_width"]),
         vi("same_average", f, ["batch", 4, "half_height", "third_width"]),
         vi("same_up", f, ["batch", 3, "same_up_height", "same_up_width"])])


WINDOW_DIMS = {"batch": {"min": 1, "max": 4, "example": 2},
               "height": {"min": 1, "max": 40, "example": 13},
               "width": {"min": 3, "max": 40, "example": 22},
               "length": {"min": 3, "max": 64, "example": 29}}

ATTENTION_OPSET = 23
ATTENTION_DIMS = {"batch": {"min": 1, "max": 4, "example": 2},
                  "seq": {"min": 1, "max": 16, "example": 3},
                  "past": {"min": 1, "max": 32, "example": 5}}


def build_attention():
    b = Builder(20261132)
    b.node("Attention", ["q", "k", "v", "", "past_key", "past_value"],
           ["y", "present_key", "present_value"], q_num_heads=4, kv_num_heads=2, is_causal=1)
    b.node("Attention", ["q4", "k4", "v4", "mask"], ["y4"], softcap=3.0)
    vi = helper.make_tensor_value_info
    f = TensorProto.FLOAT
    return b.finish(
        "attention_dynamic",
        [vi("q", f, ["batch", "seq", 32]), vi("k", f, ["batch", "seq", 16]),
         vi("v", f, ["batch", "seq", 16]), vi("past_key", f, ["batch", 2, "past", 8]),
         vi("past_value", f, ["batch", 2, "past", 8]), vi("q4", f, ["batch", 4, "seq", 8]),
         vi("k4", f, ["batch", 4, "seq", 8]), vi("v4", f, ["batch", 4, "seq", 8]),
         vi("mask", f, ["batch", 1, "seq", "seq"])],
        [vi("y", f, ["batch", "seq", 32]), vi("present_key", f, ["batch", 2, "total", 8]),
         vi("present_value", f, ["batch", 2, "total", 8]), vi("y4", f, ["batch", 4, "seq", 8])],
        opset=ATTENTION_OPSET)


def spec(model, name, inputs, dims, opset=OPSET):
    """The fixture's inputs.json, in the form check_models.py and compare_with_ort.py read."""
    ops = {}
    for n in model.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    return {
        "model": name,
        "exporter": "onnx.helper (scripts/models/make_dynamic_ops.py)",
        "opset": opset,
        "inputs": inputs,
        "outputs": [o.name for o in model.graph.output],
        "dims": dims,
        "ops": dict(sorted(ops.items())),
    }


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DIR
    os.makedirs(out_dir, exist_ok=True)
    fixtures = [
        ("einsum_dynamic", build_einsum(),
         [{"name": "x", "dtype": "float32", "shape": ["batch", "seq", HIDDEN], "fill": "normal"}],
         EINSUM_DIMS),
        ("image_ops_dynamic", build_image_ops(),
         [{"name": "x", "dtype": "float32", "shape": ["batch", 8, 6, 6], "fill": "normal"}],
         IMAGE_DIMS),
    ]
    normal = [("q", ["batch", "seq", 32]), ("k", ["batch", "seq", 16]),
              ("v", ["batch", "seq", 16]), ("past_key", ["batch", 2, "past", 8]),
              ("past_value", ["batch", 2, "past", 8]), ("q4", ["batch", 4, "seq", 8]),
              ("k4", ["batch", 4, "seq", 8]), ("v4", ["batch", 4, "seq", 8]),
              ("mask", ["batch", 1, "seq", "seq"])]
    fixtures.append(("attention_dynamic", build_attention(),
                     [{"name": n, "dtype": "float32", "shape": s, "fill": "normal"}
                      for n, s in normal], ATTENTION_DIMS))
    fixtures.append(("windows_dynamic", build_windows(),
                     [{"name": "x", "dtype": "float32", "shape": ["batch", 4, "height", "width"],
                       "fill": "normal"},
                      {"name": "s", "dtype": "float32", "shape": ["batch", 6, "length"],
                       "fill": "normal"}], WINDOW_DIMS))
    for name, model, inputs, dims in fixtures:
        onnx.save(model, os.path.join(out_dir, name + ".onnx"))
        opset = model.opset_import[0].version
        with open(os.path.join(out_dir, name + ".inputs.json"), "w") as f:
            json.dump(spec(model, name.split("_dynamic")[0], inputs, dims, opset), f, indent=1)
            f.write("\n")
        print(f"wrote {name}")


if __name__ == "__main__":
    main()
