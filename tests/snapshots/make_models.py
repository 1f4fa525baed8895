#!/usr/bin/env python3
"""Writes the small ONNX models of the code-generation snapshots (tests/snapshots/cases.txt) into
tests/snapshots/models/, one per kernel kind or stitching scheme the emitter has. Each model is
the smallest graph whose plan (stitchc's default ILP planner, an H100) holds the group its name
says; README.md here lists which case covers what, and the snapshot tool checks it (the
`expect` column of cases.txt).

Deterministic: fixed seeds, no timestamps, the same bytes on every run, so rerunning it changes
nothing unless this script changes. Needs only onnx and numpy (the project's .venv):

    .venv/bin/python tests/snapshots/make_models.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
F32 = TensorProto.FLOAT
I64 = TensorProto.INT64


class Model:
    """A graph under construction: inputs, constants (initializers), nodes, outputs."""

    def __init__(self, name, opset=17, seed=0):
        self.name, self.opset = name, opset
        self.rng = np.random.default_rng(seed)
        self.inputs, self.outputs, self.nodes, self.initializers = [], [], [], []

    def input(self, name, shape, dtype=F32):
        self.inputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name

    def output(self, name, dtype=F32):
        self.outputs.append(helper.make_tensor_value_info(name, dtype, None))
        return name

    def const(self, name, value):
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(self, name, shape, scale=0.1):
        return self.const(name, (scale * self.rng.standard_normal(shape)).astype(np.float32))

    def scalar(self, name, value):
        return self.const(name, np.array(value, np.float32))

    def ints(self, name, values):
        return self.const(name, np.array(values, np.int64))

    def node(self, op, inputs, outputs, **attrs):
        self.nodes.append(helper.make_node(op, inputs, outputs, name=f"{outputs[0]}/{op}",
                                           **attrs))
        return outputs[0]

    def save(self):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs,
                                  initializer=self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  producer_name="tests/snapshots/make_models.py")
        model.ir_version = 8
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, os.path.join(OUT, self.name + ".onnx"))


def local_vec4():
    # Local, 16-byte vectors: every operand is the full [128,256] shape or a scalar.
    m = Model("local_vec4")
    x, y = m.input("x", [128, 256]), m.input("y", [128, 256])
    t = m.node("Add", [x, y], ["sum"])
    t = m.node("Mul", [t, m.scalar("half", 0.5)], ["scaled"])
    t = m.node("Tanh", [t], ["tanh"])
    m.node("Mul", [t, x], ["z"])
    m.output("z")
    m.save()


def local_broadcast():
    # Local, scalar accesses: a bias row and a per-row scale broadcast into [64,96], a leaky
    # Relu by hand (Greater, Where), and the comparison's bools cast to float as a second output.
    m = Model("local_broadcast", seed=1)
    x, s = m.input("x", [64, 96]), m.input("s", [64, 1])
    t = m.node("Add", [x, m.weight("bias", [96])], ["biased"])
    t = m.node("Mul", [t, s], ["scaled"])
    c = m.node("Greater", [t, m.scalar("zero", 0.0)], ["positive"])
    leak = m.node("Mul", [t, m.scalar("slope", 0.1)], ["leak"])
    m.node("Where", [c, t, leak], ["y"])
    m.node("Cast", [c], ["positive_f"], to=TensorProto.FLOAT)
    m.output("y")
    m.output("positive_f")
    m.save()


def window_maxpool():
    # Local around a MaxPool: a folded BatchNorm (Mul, Add) and Relu recomputed at every tap,
    # a channel bias and Sigmoid per output element.
    m = Model("window_maxpool", seed=2)
    x = m.input("x", [2, 16, 32, 32])
    t = m.node("Mul", [x, m.weight("bn_scale", [16, 1, 1])], ["bn_scaled"])
    t = m.node("Add", [t, m.weight("bn_shift", [16, 1, 1])], ["bn"])
    t = m.node("Relu", [t], ["relu"])
    t = m.node("MaxPool", [t], ["pool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    t = m.node("Add", [t, m.weight("pool_bias", [16, 1, 1])], ["pool_biased"])
    m.node("Sigmoid", [t], ["y"])
    m.output("y")
    m.save()


def window_dwconv_avgpool():
    # Two windows in a row: a MobileNet-style depthwise 3x3 Conv (with bias) between ReLU6s, then
    # a 2x2 AveragePool; each window op is its own Local group with the pointwise ops around it.
    m = Model("window_dwconv_avgpool", seed=3)
    x = m.input("x", [1, 32, 28, 28])
    lo, hi = m.scalar("zero", 0.0), m.scalar("six", 6.0)
    t = m.node("Mul", [x, m.weight("in_scale", [32, 1, 1])], ["in_scaled"])
    t = m.node("Clip", [t, lo, hi], ["relu6_in"])
    t = m.node("Conv", [t, m.weight("dw_weight", [32, 1, 3, 3]), m.weight("dw_bias", [32])],
               ["dwconv"], group=32, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    t = m.node("Clip", [t, lo, hi], ["relu6_out"])
    t = m.node("AveragePool", [t], ["avgpool"], kernel_shape=[2, 2], strides=[2, 2])
    m.node("Mul", [t, m.scalar("quarter", 0.25)], ["y"])
    m.output("y")
    m.save()


def regional_softmax():
    # Regional, a warp per row, the row in registers: a scaled softmax over rows of 256.
    m = Model("regional_softmax")
    x = m.input("x", [4096, 256])
    t = m.node("Mul", [x, m.scalar("scale", 0.125)], ["scaled"])
    m.node("Softmax", [t], ["y"], axis=-1)
    m.output("y")
    m.save()


def regional_layernorm():
    # Regional, a warp per row, the row (24 floats a lane) in registers: a residual add, then
    # LayerNormalization; both the sum and the normalized rows are outputs.
    m = Model("regional_layernorm", seed=5)
    x, r = m.input("x", [2048, 768]), m.input("residual", [2048, 768])
    s = m.node("Add", [x, r], ["sum"])
    m.node("LayerNormalization", [s, m.weight("gamma", [768]), m.weight("beta", [768])], ["y"],
           axis=-1, epsilon=1e-5)
    m.output("sum")
    m.output("y")
    m.save()


def regional_long_row():
    # Regional, a block per row, the row in shared memory: LayerNormalization over rows of 16384
    # (16 floats a thread of 1024 would need, more than registers hold), then a Relu. Its scale
    # and bias are graph inputs, which keeps 128 KiB of weights out of the tree.
    m = Model("regional_long_row", seed=6)
    x, gamma, beta = m.input("x", [8, 16384]), m.input("gamma", [16384]), m.input("beta", [16384])
    t = m.node("LayerNormalization", [x, gamma, beta], ["ln"], axis=-1, epsilon=1e-5)
    m.node("Relu", [t], ["y"])
    m.output("y")
    m.save()


def regional_masked_softmax():
    # Regional with per-row values: attention scores [2,4,16,32] scaled, plus a key mask's
    # (1 - mask) * -10000 (broadcast along the row) and a query mask's (one value per row,
    # evaluated once per row), softmax over the keys.
    m = Model("regional_masked_softmax")
    x = m.input("scores", [2, 4, 16, 32])
    kmask, qmask = m.input("key_mask", [2, 1, 1, 32]), m.input("query_mask", [2, 4, 16, 1])
    one, big = m.scalar("one", 1.0), m.scalar("big", -10000.0)
    kb = m.node("Mul", [m.node("Sub", [one, kmask], ["key_inv"]), big], ["key_bias"])
    qb = m.node("Mul", [m.node("Sub", [one, qmask], ["query_inv"]), big], ["query_bias"])
    t = m.node("Mul", [x, m.scalar("scale", 0.125)], ["scaled"])
    t = m.node("Add", [t, kb], ["key_masked"])
    t = m.node("Add", [t, qb], ["masked"])
    m.node("Softmax", [t], ["probs"], axis=-1)
    m.output("probs")
    m.save()


def regional_embedding():
    # Regional with row lookups: BERT's embeddings, a word table and a token-type table looked
    # up by the ids (Gathers), a position table added, LayerNormalization: one kernel, which
    # reads each row's index once and only the table rows it picks.
    m = Model("regional_embedding", seed=7)
    ids, types = m.input("input_ids", [4, 32], I64), m.input("token_type_ids", [4, 32], I64)
    w = m.node("Gather", [m.weight("word_table", [100, 64]), ids], ["words"])
    t = m.node("Gather", [m.weight("type_table", [2, 64]), types], ["types"])
    s = m.node("Add", [w, t], ["words_types"])
    s = m.node("Add", [s, m.weight("positions", [32, 64])], ["embedded"])
    m.node("LayerNormalization", [s, m.weight("gamma", [64]), m.weight("beta", [64])], ["y"],
           axis=-1, epsilon=1e-12)
    m.output("y")
    m.save()


def symbolic_block():
    # Symbolic dims (--dim batch=..., seq=...): a transformer block's pointwise and row parts
    # over [batch, seq, 64]: LayerNormalization, a feed-forward of two products (M = batch*seq
    # for the library) with a Relu, the residual, a per-row mask; kernels take the symbols'
    # values and size their grids per run.
    m = Model("symbolic_block", seed=8)
    x, mask = m.input("x", ["batch", "seq", 64]), m.input("mask", ["batch", "seq", 1])
    t = m.node("LayerNormalization", [x, m.weight("gamma", [64]), m.weight("beta", [64])], ["ln"],
               axis=-1, epsilon=1e-5)
    t = m.node("MatMul", [t, m.weight("w1", [64, 128])], ["h"])
    t = m.node("Relu", [m.node("Add", [t, m.weight("b1", [128])], ["hb"])], ["hr"])
    t = m.node("MatMul", [t, m.weight("w2", [128, 64])], ["o"])
    t = m.node("Add", [t, x], ["res"])
    m.node("Mul", [t, mask], ["y"])
    m.output("y")
    m.save()


def global_column():
    # Global: a column mean over 8192 rows (a cooperative grid, a grid-wide barrier) and its
    # broadcast consumers, (x - mean)^2.
    m = Model("global_column", opset=18)
    x = m.input("x", [8192, 96])
    mean = m.node("ReduceMean", [x, m.ints("axes", [0])], ["mean"], keepdims=1)
    d = m.node("Sub", [x, mean], ["centered"])
    m.node("Mul", [d, d], ["y"])
    m.output("y")
    m.output("mean")
    m.save()


def global_gemv_gemm():
    # Global, the matrix-vector form: a classifier head at batch 1. GlobalAveragePool's per-row
    # values, through Flatten (a view), are the vector of Gemm with B [N,K] (transB: a warp per
    # output, 16-byte vectors of B), then its Relu.
    m = Model("global_gemv_gemm", seed=8)
    x = m.input("x", [1, 128, 7, 7])
    t = m.node("GlobalAveragePool", [x], ["pooled"])
    t = m.node("Flatten", [t], ["flat"], axis=1)
    t = m.node("Gemm", [t, m.weight("fc_weight", [32, 128]), m.weight("fc_bias", [32])],
               ["fc"], transB=1)
    m.node("Relu", [t], ["y"])
    m.output("y")
    m.save()


def global_gemv_matmul():
    # Global, the matrix-vector form with B [K,N] (a thread per output): per-row maxima of a
    # scaled [1,24,40] feed MatMul, then a bias row and Sigmoid.
    m = Model("global_gemv_matmul", opset=18, seed=9)
    x, scale = m.input("x", [1, 24, 40]), m.input("scale", [1, 24, 1])
    t = m.node("Mul", [x, scale], ["scaled"])
    t = m.node("ReduceMax", [t, m.ints("axes", [-1])], ["maxima"], keepdims=0)
    t = m.node("MatMul", [t, m.weight("b", [24, 10])], ["product"])
    t = m.node("Add", [t, m.weight("shift", [10])], ["shifted"])
    m.node("Sigmoid", [t], ["y"])
    m.output("y")
    m.save()


def independent():
    # Independent: two unrelated small chains (a pointwise chain, a row sum) in one launch, each
    # on its own blocks.
    m = Model("independent", opset=18)
    a, b = m.input("a", [64, 64]), m.input("b", [33, 45])
    m.node("Exp", [m.node("Neg", [a], ["neg"])], ["y"])
    m.node("ReduceSum", [b, m.ints("axes", [1])], ["s"], keepdims=1)
    m.output("y")
    m.output("s")
    m.save()


def single_movement():
    # Movement ops, each a kernel of its own: one chain through Transpose, Slice, Pad, Concat,
    # Resize, Gather, Split, Tile, DepthToSpace, GatherElements, ScatterND, Trilu, Expand and
    # TopK (opaque), with side outputs so that every op is live.
    m = Model("single_movement", opset=18, seed=11)
    x = m.input("x", [2, 8, 16, 16])
    t = m.node("Transpose", [x], ["nhwc"], perm=[0, 2, 3, 1])  # [2,16,16,8]
    s = m.node("Slice", [t, m.ints("starts", [2, 1]), m.ints("ends", [14, 15]),
                         m.ints("slice_axes", [1, 2])], ["sliced"])  # [2,12,14,8]
    p = m.node("Pad", [s, m.ints("pads", [0, 2, 1, 0, 0, 2, 1, 0])], ["padded"],
               mode="reflect")  # [2,16,16,8]
    c = m.node("Concat", [p, t], ["joined"], axis=3)  # [2,16,16,16]
    r = m.node("Resize", [c, "", m.const("resize_scales", np.array([1, 2, 2, 1], np.float32))],
               ["resized"], mode="linear", coordinate_transformation_mode="half_pixel")
    g = m.node("Gather", [r, m.ints("rows", [0, 5, 31, 7])], ["gathered"], axis=1)  # [2,4,32,16]
    m.nodes.append(helper.make_node("Split", [g, m.ints("split", [8, 8])], ["left", "right"],
                                    name="left/Split", axis=3))
    tiled = m.node("Tile", ["left", m.ints("repeats", [1, 1, 1, 2])], ["tiled"])  # [2,4,32,16]
    m.node("DepthToSpace", [m.node("Transpose", ["right"], ["nchw"], perm=[0, 3, 1, 2])],
           ["d2s"], blocksize=2, mode="CRD")  # [2,2,8,64]
    ge = m.node("GatherElements", [tiled, m.const("ge_index", m.rng.integers(
        0, 16, (2, 4, 32, 3)).astype(np.int64))], ["picked"], axis=3)  # [2,4,32,3]
    sc = m.node("ScatterND", [tiled, m.ints("sc_index", [[[1, 2]], [[0, 3]]]),
                              m.weight("sc_update", [2, 1, 32, 16])], ["scattered"])
    m.node("Trilu", [sc], ["lower"], upper=0)
    m.node("Expand", [m.node("ReduceMax", [ge, m.ints("max_axes", [3])], ["pmax"]),
                      m.ints("expand_shape", [2, 4, 32, 5])], ["expanded"])
    m.nodes.append(helper.make_node("TopK", [r, m.ints("k", [3])], ["top_values", "top_indices"],
                                    name="top_values/TopK", axis=-1))
    for name in ["d2s", "lower", "expanded", "top_values"]:
        m.output(name)
    m.output("top_indices", TensorProto.INT64)
    m.save()


def single_reduction():
    # Reductions and scans, planned one kernel per op (cases.txt: planner none), each mapping of
    # kernel_reduction.cpp: a thread per output over a non-contiguous axis, a warp per row,
    # a block per row, a thread per short row, ArgMax, CumSum (a warp per row and a thread per
    # line), a global pool, and an Einsum that is no matrix product (it sums h of one operand
    # only), a kernel of its own; lower-composites makes the others MatMuls.
    m = Model("single_reduction", opset=18, seed=12)
    x = m.input("x", [4, 6, 8, 40])
    m.node("ReduceSum", [x, m.ints("axis1", [1])], ["sum_channels"], keepdims=1)
    m.node("ReduceMax", [x, m.ints("last", [-1])], ["max_rows"], keepdims=0)
    m.node("ReduceMean", [x, m.ints("last2", [2, 3])], ["mean_planes"], keepdims=0)
    m.node("ReduceL2", [x, m.ints("axis2", [2])], ["l2_short"], keepdims=0)
    m.node("ArgMax", [x], ["argmax"], axis=-1, keepdims=0)
    m.node("CumSum", [x, m.const("cum_axis", np.array(3, np.int64))], ["cumsum_rows"])
    m.node("CumSum", [x, m.const("cum_axis1", np.array(1, np.int64))], ["cumsum_lines"])
    m.node("GlobalAveragePool", [x], ["gap"])
    m.node("Einsum", [x, m.weight("einsum_b", [40, 5])], ["einsum"], equation="bchw,wk->bck")
    for name in ["sum_channels", "max_rows", "mean_planes", "l2_short", "cumsum_rows",
                 "cumsum_lines", "gap", "einsum"]:
        m.output(name)
    m.output("argmax", TensorProto.INT64)
    m.save()


def gemm_epilogues():
    # cuBLASLt with epilogues: MatMul + bias row + residual (C, beta 1) + Relu in one call; then
    # MatMul + bias + tanh Gelu (opset 20's Gelu), cuBLASLt's GELU epilogue.
    m = Model("gemm_epilogues", opset=20, seed=13)
    x, res = m.input("x", [32, 32]), m.input("residual", [32, 64])
    t = m.node("MatMul", [x, m.weight("w1", [32, 64])], ["mm1"])
    t = m.node("Add", [t, m.weight("b1", [64])], ["biased1"])
    t = m.node("Add", [t, res], ["residual_sum"])
    h = m.node("Relu", [t], ["hidden"])
    t = m.node("MatMul", [h, m.weight("w2", [64, 32])], ["mm2"])
    t = m.node("Add", [t, m.weight("b2", [32])], ["biased2"])
    m.node("Gelu", [t], ["y"], approximate="tanh")
    m.output("hidden")
    m.output("y")
    m.save()


def gemm_fill():
    # cuBLASLt whose addends need the generated "fill" kernel: Gemm's beta * C (a row given at
    # run time with beta 2, so not the bias epilogue; a constant C has its beta folded in) and
    # a residual are summed into Y first, then the GEMM accumulates alpha * A @ B^T onto it.
    m = Model("gemm_fill", seed=14)
    x, res = m.input("x", [32, 32]), m.input("residual", [32, 64])
    w = m.weight("w", [64, 32])
    t = m.node("Gemm", [x, w, m.input("c", [64])], ["gemm"], alpha=0.5, beta=2.0, transB=1)
    m.node("Add", [t, res], ["y"])
    m.output("y")
    m.save()


def conv_epilogue():
    # cuDNN: a biased 3x3 Conv with the residual add and Relu as its epilogue (one fused call),
    # then a ConvTranspose (stride 2), its own call.
    m = Model("conv_epilogue", seed=15)
    x = m.input("x", [1, 16, 16, 16])
    t = m.node("Conv", [x, m.weight("conv_w", [16, 16, 3, 3]), m.weight("conv_b", [16])],
               ["conv"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    t = m.node("Add", [t, x], ["residual_sum"])
    t = m.node("Relu", [t], ["block"])
    m.node("ConvTranspose", [t, m.weight("up_w", [16, 8, 2, 2]), m.weight("up_b", [8])], ["y"],
           kernel_shape=[2, 2], strides=[2, 2])
    m.output("block")
    m.output("y")
    m.save()


def views():
    # Views: Reshape, Flatten, Squeeze and Unsqueeze are aliases (no code); an output that is a
    # view of an input is copied by the launcher.
    m = Model("views", seed=16)
    x = m.input("x", [4, 8, 16])
    m.node("Reshape", [x, m.ints("shape", [32, 16])], ["x_rows"])
    t = m.node("Unsqueeze", [x, m.ints("unsq_axes", [0])], ["x5"])
    t = m.node("Relu", [t], ["relu"])
    t = m.node("Squeeze", [t, m.ints("sq_axes", [0])], ["relu3"])
    m.node("Flatten", [t], ["flat"], axis=1)
    m.output("x_rows")
    m.output("flat")
    m.save()


def half_layer():
    # float16 and bfloat16: a residual add and LayerNormalization (a Regional group storing the
    # 2-byte type, statistics in fp32), then a MatMul (cuBLASLt on half matrices) with a bias,
    # tanh Gelu and more pointwise ops; and a Local chain in 16-byte vectors of 8 elements.
    for dtype, name in [(TensorProto.FLOAT16, "half_layer_fp16"),
                        (TensorProto.BFLOAT16, "half_layer_bf16")]:
        m = Model(name, opset=20, seed=17)

        def weight(wname, shape):
            value = (0.1 * m.rng.standard_normal(shape)).astype(np.float32)
            m.initializers.append(helper.make_tensor(wname, dtype, shape, value.flatten()))
            return wname

        x, r = m.input("x", [64, 256], dtype), m.input("residual", [64, 256], dtype)
        s = m.node("Add", [x, r], ["sum"])
        t = m.node("LayerNormalization", [s, weight("gamma", [256]), weight("beta", [256])],
                   ["normed"], axis=-1, epsilon=1e-5)
        t = m.node("MatMul", [t, weight("w", [256, 128])], ["mm"])
        t = m.node("Add", [t, weight("b", [128])], ["biased"])
        t = m.node("Gelu", [t], ["hidden"], approximate="tanh")
        t = m.node("Mul", [t, t], ["squared"])
        m.node("Sigmoid", [t], ["y"])
        u = m.input("u", [64, 256], dtype)
        t = m.node("Tanh", [u], ["tanh_u"])
        m.node("Mul", [t, u], ["z"])
        m.output("sum", dtype)
        m.output("y", dtype)
        m.output("z", dtype)
        m.save()


def gemm_chain_gated():
    # A LLaMA-style gated MLP in float16: one MatMul of the merged gate and up weights, its column
    # halves (Slices), SiLU(gate) * up, the down MatMul and the residual: one gemm_chain kernel in
    # thread-block clusters, and the chain's unfused plan beside it.
    m = Model("gemm_chain_gated", opset=17, seed=19)

    def weight(wname, shape):
        value = (0.1 * m.rng.standard_normal(shape)).astype(np.float32)
        m.initializers.append(helper.make_tensor(wname, TensorProto.FLOAT16, shape,
                                                 value.flatten()))
        return wname

    x = m.input("x", [24, 64], TensorProto.FLOAT16)
    gu = m.node("MatMul", [x, weight("w_gate_up", [64, 192])], ["gate_up"])
    zero, half, full, axis = m.ints("zero", [0]), m.ints("half", [96]), m.ints("full", [192]), \
        m.ints("last", [-1])
    gate = m.node("Slice", [gu, zero, half, axis], ["gate"])
    up = m.node("Slice", [gu, half, full, axis], ["up"])
    sig = m.node("Sigmoid", [gate], ["gate_sigmoid"])
    silu = m.node("Mul", [gate, sig], ["gate_silu"])
    hidden = m.node("Mul", [silu, up], ["hidden"])
    down = m.node("MatMul", [hidden, weight("w_down", [96, 64])], ["down"])
    m.node("Add", [down, x], ["y"])
    m.output("y", TensorProto.FLOAT16)
    m.save()


def main():
    os.makedirs(OUT, exist_ok=True)
    for make in [local_vec4, local_broadcast, window_maxpool, window_dwconv_avgpool,
                 regional_softmax, regional_layernorm, regional_long_row, regional_masked_softmax,
                 regional_embedding, global_column, global_gemv_gemm, global_gemv_matmul, independent,
                 single_movement, single_reduction, gemm_epilogues, gemm_fill, conv_epilogue,
                 views, half_layer, gemm_chain_gated, symbolic_block]:
        make()
    print(f"wrote {len(os.listdir(OUT))} models under {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
