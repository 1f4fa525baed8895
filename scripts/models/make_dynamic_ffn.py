#!/usr/bin/env python3
"""Writes two fixtures with symbolic batch and sequence dims into tests/models/dynamic, each with
its inputs.json, weights from fixed seeds (the files are the same on every run):

- ffn_dynamic: a transformer's feed-forward block, x float32[batch, seq, 64] ->
  y = x + (GELU(x W1 + b1) W2 + b2), W1 [64, 256], W2 [256, 64], the GELU written with Erf as
  exporters write it (0.5 h (1 + erf(h / sqrt 2))), no LayerNorm.
- block_dynamic: what a transformer layer holds besides its attention, over ids int64[batch,
  seq] and mask float32[batch, seq]: an embedding lookup, LayerNorm over rows of 256 (its best
  thread mapping changes within the rows' range: a block per row for few rows, a warp per row
  for many), a feed-forward block with a residual, the mask unsqueezed and broadcast, a
  Reshape into 4 heads of 64 and a Transpose to [batch, 4, seq, 64], a softmax over each
  head's 64, and the mean of each token's row.

The ctest models/dynamic/<name>/host compiles each once with stitchc --dim, fused and one
kernel per op, and compares both with ONNX Runtime, and each other, at several shapes
(compare_with_ort.py --unfused-too).

usage: .venv/bin/python scripts/models/make_dynamic_ffn.py [OUT_DIR]
"""
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, FFN = 64, 256
DIMS = {"batch": {"min": 1, "max": 8, "example": 3}, "seq": {"min": 1, "max": 64, "example": 12}}
OPSET = 17
DEFAULT_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                            "..", "tests", "models", "dynamic"))


def build():
    rng = np.random.default_rng(20261128)
    inits = []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array, np.float32), name))
        return name

    def weight(name, shape, fan_in):
        return const(name, rng.standard_normal(shape) / math.sqrt(fan_in))

    nodes = []

    def node(op, inputs, output):
        nodes.append(helper.make_node(op, inputs, [output], name=f"{op.lower()}_{len(nodes)}"))
        return output

    h = node("MatMul", ["x", weight("w1", [HIDDEN, FFN], HIDDEN)], "h_mm")
    h = node("Add", [h, weight("b1", [FFN], 4.0)], "h")
    scaled = node("Div", [h, const("sqrt2", math.sqrt(2.0))], "h_scaled")
    erf = node("Erf", [scaled], "h_erf")
    one_plus = node("Add", [erf, const("one", 1.0)], "h_one_plus")
    half = node("Mul", [h, const("half", 0.5)], "h_half")
    gelu = node("Mul", [half, one_plus], "gelu")
    out = node("MatMul", [gelu, weight("w2", [FFN, HIDDEN], FFN)], "out_mm")
    out = node("Add", [out, weight("b2", [HIDDEN], 4.0)], "out")
    node("Add", ["x", out], "y")

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", HIDDEN])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", HIDDEN])
    graph = helper.make_graph(nodes, "ffn_dynamic", [x], [y], inits)
    return finish(graph)


def finish(graph):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="make_dynamic_ffn.py")
    model.ir_version = 8  # what the project's onnxruntime reads
    onnx.checker.check_model(model, full_check=True)
    return model


BLOCK_HIDDEN, BLOCK_FFN, BLOCK_VOCAB, BLOCK_HEADS = 256, 512, 100, 4
BLOCK_DIMS = {"batch": {"min": 1, "max": 8, "example": 3},
              "seq": {"min": 1, "max": 256, "example": 12}}


def build_block():
    rng = np.random.default_rng(20261129)
    inits = []

    def const(name, array, dtype=np.float32):
        inits.append(numpy_helper.from_array(np.asarray(array, dtype), name))
        return name

    def weight(name, shape, fan_in):
        return const(name, rng.standard_normal(shape) / math.sqrt(fan_in))

    nodes = []

    def node(op, inputs, output, **attrs):
        nodes.append(helper.make_node(op, inputs, [output], name=f"{op.lower()}_{len(nodes)}",
                                      **attrs))
        return output

    e = node("Gather", [weight("embedding", [BLOCK_VOCAB, BLOCK_HIDDEN], 1.0), "ids"], "embedded")
    x = node("LayerNormalization", [e, const("gamma", 1.0 + 0.1 * rng.standard_normal(
        BLOCK_HIDDEN)), const("beta", 0.1 * rng.standard_normal(BLOCK_HIDDEN))], "ln",
        axis=-1, epsilon=1e-5)
    h = node("MatMul", [x, weight("w1", [BLOCK_HIDDEN, BLOCK_FFN], BLOCK_HIDDEN)], "h_mm")
    h = node("Relu", [node("Add", [h, weight("b1", [BLOCK_FFN], 4.0)], "h")], "h_relu")
    o = node("MatMul", [h, weight("w2", [BLOCK_FFN, BLOCK_HIDDEN], BLOCK_FFN)], "o_mm")
    o = node("Add", [node("Add", [o, weight("b2", [BLOCK_HIDDEN], 4.0)], "o"), x], "residual")
    m = node("Unsqueeze", ["mask", const("last", [-1], np.int64)], "mask_column")
    y = node("Mul", [o, m], "masked")
    heads = node("Reshape", [y, const("head_shape", [0, 0, BLOCK_HEADS,
                                                     BLOCK_HIDDEN // BLOCK_HEADS], np.int64)],
                 "heads")
    t = node("Transpose", [heads], "heads_first", perm=[0, 2, 1, 3])
    node("Softmax", [t], "probs", axis=-1)
    node("ReduceMean", [y], "token_mean", axes=[-1], keepdims=0)
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes, "block_dynamic",
        [vi("ids", TensorProto.INT64, ["batch", "seq"]),
         vi("mask", TensorProto.FLOAT, ["batch", "seq"])],
        [vi("probs", TensorProto.FLOAT, ["batch", BLOCK_HEADS, "seq", BLOCK_HIDDEN // BLOCK_HEADS]),
         vi("token_mean", TensorProto.FLOAT, ["batch", "seq"])], inits)
    return finish(graph)


def block_spec(model):
    ops = {}
    for n in model.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    return {
        "model": "block",
        "exporter": "onnx.helper (scripts/models/make_dynamic_ffn.py)",
        "opset": OPSET,
        "inputs": [{"name": "ids", "dtype": "int64", "shape": ["batch", "seq"], "fill": "randint",
                    "low": 0, "high": BLOCK_VOCAB},
                   {"name": "mask", "dtype": "float32", "shape": ["batch", "seq"],
                    "fill": "normal"}],
        "outputs": ["probs", "token_mean"],
        "dims": BLOCK_DIMS,
        "config": {"hidden_size": BLOCK_HIDDEN, "intermediate_size": BLOCK_FFN,
                   "heads": BLOCK_HEADS, "vocab_size": BLOCK_VOCAB},
        "ops": dict(sorted(ops.items())),
    }


def spec(model):
    """The fixture's inputs.json, in the form check_models.py and compare_with_ort.py read."""
    ops = {}
    for n in model.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    return {
        "model": "ffn",
        "exporter": "onnx.helper (scripts/models/make_dynamic_ffn.py)",
        "opset": OPSET,
        "inputs": [{"name": "x", "dtype": "float32", "shape": ["batch", "seq", HIDDEN],
                    "fill": "normal"}],
        "outputs": ["y"],
        "dims": DIMS,
        "config": {"hidden_size": HIDDEN, "intermediate_size": FFN},
        "ops": dict(sorted(ops.items())),
    }


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DIR
    os.makedirs(out_dir, exist_ok=True)
    for name, make, describe in [("ffn_dynamic", build, spec),
                                 ("block_dynamic", build_block, block_spec)]:
        model = make()
        path = os.path.join(out_dir, name + ".onnx")
        onnx.save(model, path)
        with open(os.path.join(out_dir, name + ".inputs.json"), "w") as f:
            json.dump(describe(model), f, indent=1)
            f.write("\n")
        print(f"wrote {path} ({os.path.getsize(path) / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
