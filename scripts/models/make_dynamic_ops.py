#!/usr/bin/env python3
"""Writes two fixtures with symbolic dims into tests/models/dynamic, each with its inputs.json,
weights from fixed seeds (the files are the same on every run), of the ops other exporters
write where PyTorch's do not:

- einsum_dynamic: a Keras-style attention layer (what tf2onnx writes for EinsumDense and
  MultiHeadAttention) over x float32[batch, seq, 32]: the projections to 4 heads of 8 as
  Einsum "abc,cde->abde", the scores "aecd,abcd->acbe" scaled and softmaxed, the context
  "acbe,aecd->abcd", the output projection "abcd,cde->abe"; besides, each token's dot product
  with the mean token "abc,ac->ab" and an outer product "ab,ac->abc" of two slices.
- image_ops_dynamic: what detection and super-resolution models hold over their batch, x
  float32[batch, 8, 6, 6]: DepthToSpace (DCR) and SpaceToDepth, Resize (nearest by scales,
  linear to sizes computed from the input's shape), TopK along the channels and GatherElements
  by its indices, and a Slice flipping the batch.

The ctests models/dynamic/<name>/host and host-unfused compile each once with stitchc --dim
and compare it with ONNX Runtime at several shapes (compare_with_ort.py).

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

    def finish(self, name, inputs, outputs):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="make_dynamic_ops.py")
        model.ir_version = 8  # what the project's onnxruntime reads
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
    probs = b.node("Softmax", [scaled], "probs", axis=-1)
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
    vi = helper.make_tensor_value_info
    return b.finish(
        "einsum_dynamic", [vi("x", TensorProto.FLOAT, ["batch", "seq", HIDDEN])],
        [vi("y", TensorProto.FLOAT, ["batch", "seq", HIDDEN]),
         vi("dots", TensorProto.FLOAT, ["batch", "seq"]),
         vi("outer", TensorProto.FLOAT, ["batch", "seq", 1, 4])])


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
    vi = helper.make_tensor_value_info
    f = TensorProto.FLOAT
    return b.finish(
        "image_ops_dynamic", [vi(x, f, ["batch", 8, 6, 6])],
        [vi("d2s_sigmoid", f, ["batch", 2, 12, 12]), vi("s2d", f, ["batch", 8, 6, 6]),
         vi("nearest", f, ["batch", 8, 12, 12]), vi("linear", f, ["batch", 8, 9, 4]),
         vi("top_values", f, ["batch", 3, 6, 6]),
         vi("top_indices", TensorProto.INT64, ["batch", 3, 6, 6]),
         vi("gathered", f, ["batch", 3, 6, 6]), vi("flipped", f, ["batch", 8, 6, 6])])


def spec(model, name, inputs, dims):
    """The fixture's inputs.json, in the form check_models.py and compare_with_ort.py read."""
    ops = {}
    for n in model.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    return {
        "model": name,
        "exporter": "onnx.helper (scripts/models/make_dynamic_ops.py)",
        "opset": OPSET,
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
    for name, model, inputs, dims in fixtures:
        onnx.save(model, os.path.join(out_dir, name + ".onnx"))
        with open(os.path.join(out_dir, name + ".inputs.json"), "w") as f:
            json.dump(spec(model, name.split("_dynamic")[0], inputs, dims), f, indent=1)
            f.write("\n")
        print(f"wrote {name}")


if __name__ == "__main__":
    main()
