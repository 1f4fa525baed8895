#!/usr/bin/env python3
"""Writes examples/transformer_block.onnx: one pre-norm transformer encoder block in the form
exporters write it (expanded LayerNorm, erf GELU, Shape->Gather->Unsqueeze->Concat->Reshape
chains for the head split, Dropout and Identity), with symbolic batch and sequence dims and
random weights from a fixed seed.

usage: .venv/bin/python scripts/models/make_example.py [OUT.onnx]
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, HEADS, FFN = 64, 4, 256
rng = np.random.default_rng(20261121)
nodes, inits = [], []


def const(name, array):
    inits.append(numpy_helper.from_array(np.asarray(array), name))
    return name


def weight(name, shape, scale=0.05):
    return const(name, (rng.standard_normal(shape) * scale).astype(np.float32))


def node(op, inputs, outputs, **attrs):
    nodes.append(helper.make_node(op, inputs, outputs, name=f"{op.lower()}_{len(nodes)}", **attrs))
    return outputs[0]


def layer_norm(x, prefix):
    """The ReduceMean/Sub/Pow/Sqrt/Div chain that exporters write for LayerNorm."""
    mean = node("ReduceMean", [x], [f"{prefix}_mean"], axes=[-1], keepdims=1)
    centered = node("Sub", [x, mean], [f"{prefix}_centered"])
    sq = node("Pow", [centered, const(f"{prefix}_two", np.float32(2.0))], [f"{prefix}_sq"])
    var = node("ReduceMean", [sq], [f"{prefix}_var"], axes=[-1], keepdims=1)
    var_eps = node("Add", [var, const(f"{prefix}_eps", np.float32(1e-5))], [f"{prefix}_var_eps"])
    std = node("Sqrt", [var_eps], [f"{prefix}_std"])
    normed = node("Div", [centered, std], [f"{prefix}_normed"])
    scaled = node("Mul", [normed, weight(f"{prefix}_gamma", [HIDDEN], 1.0)], [f"{prefix}_scaled"])
    return node("Add", [scaled, weight(f"{prefix}_beta", [HIDDEN])], [f"{prefix}_out"])


def dense(x, prefix, n_in, n_out):
    y = node("MatMul", [x, weight(f"{prefix}_w", [n_in, n_out])], [f"{prefix}_mm"])
    return node("Add", [y, weight(f"{prefix}_b", [n_out])], [f"{prefix}_out"])


def split_heads(x, prefix):
    """Reshape [B,S,H] -> [B,S,heads,H/heads] through the runtime-shape chain, then transpose."""
    shape = node("Shape", [x], [f"{prefix}_shape"])
    batch = node("Gather", [shape, const(f"{prefix}_i0", np.int64(0))], [f"{prefix}_b"], axis=0)
    seq = node("Gather", [shape, const(f"{prefix}_i1", np.int64(1))], [f"{prefix}_s"], axis=0)
    axes = const(f"{prefix}_axes0", np.array([0], np.int64))
    b1 = node("Unsqueeze", [batch, axes], [f"{prefix}_b1"])
    s1 = node("Unsqueeze", [seq, axes], [f"{prefix}_s1"])
    tail = const(f"{prefix}_tail", np.array([HEADS, HIDDEN // HEADS], np.int64))
    new_shape = node("Concat", [b1, s1, tail], [f"{prefix}_newshape"], axis=0)
    r = node("Reshape", [x, new_shape], [f"{prefix}_split"])
    return node("Transpose", [r], [f"{prefix}_heads"], perm=[0, 2, 1, 3])


x = "tokens"
h = layer_norm(x, "ln1")
q = split_heads(dense(h, "q", HIDDEN, HIDDEN), "qh")
k = split_heads(dense(h, "k", HIDDEN, HIDDEN), "kh")
v = split_heads(dense(h, "v", HIDDEN, HIDDEN), "vh")
kt = node("Transpose", [k], ["k_t"], perm=[0, 1, 3, 2])
scores = node("MatMul", [q, kt], ["scores"])
scale = const("scale", np.float32(1.0 / np.sqrt(HIDDEN // HEADS)))
scaled = node("Mul", [scores, scale], ["scores_scaled"])
probs = node("Softmax", [scaled], ["probs"], axis=-1)
probs = node("Dropout", [probs], ["probs_dropped"])
ctx = node("MatMul", [probs, v], ["context"])
ctx = node("Transpose", [ctx], ["context_t"], perm=[0, 2, 1, 3])
ctx = node("Reshape", [ctx, const("merge_shape", np.array([0, 0, HIDDEN], np.int64))], ["context_merged"])
attn = dense(ctx, "o", HIDDEN, HIDDEN)
x1 = node("Add", [x, attn], ["residual1"])
h2 = layer_norm(x1, "ln2")
f = dense(h2, "ff1", HIDDEN, FFN)
# GELU, erf form: 0.5 * f * (1 + erf(f / sqrt(2)))
g = node("Div", [f, const("sqrt2", np.float32(np.sqrt(2.0)))], ["gelu_div"])
g = node("Erf", [g], ["gelu_erf"])
g = node("Add", [g, const("one", np.float32(1.0))], ["gelu_add"])
g = node("Mul", [f, g], ["gelu_mul"])
g = node("Mul", [g, const("half", np.float32(0.5))], ["gelu"])
f2 = dense(g, "ff2", FFN, HIDDEN)
out = node("Add", [x1, f2], ["residual2"])
node("Identity", [out], ["hidden_out"])

graph = helper.make_graph(
    nodes, "transformer_block",
    [helper.make_tensor_value_info("tokens", TensorProto.FLOAT, ["batch", "seq", HIDDEN])],
    [helper.make_tensor_value_info("hidden_out", TensorProto.FLOAT, ["batch", "seq", HIDDEN])],
    inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="stitchc scripts/models/make_example.py")
model.ir_version = 8
onnx.checker.check_model(model)
out_path = sys.argv[1] if len(sys.argv) > 1 else "examples/transformer_block.onnx"
onnx.save(model, out_path)
print(f"wrote {out_path}: {len(nodes)} nodes")
