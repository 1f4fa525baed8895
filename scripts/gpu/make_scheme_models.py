#!/usr/bin/env python3
"""Writes small ONNX models whose fusion plans (stitchc's default ILP planner) hold the stitching
schemes that the model fixtures lack, for the compute-sanitizer stage, each with random inputs
and numpy's outputs as an ONNX test-data folder (so stitch-run checks the numbers too):

    scheme_global       a column mean over many rows and its broadcast consumers: one cooperative
                        kernel with grid barriers (the global scheme)
    scheme_independent  two unrelated small chains (a pointwise chain, a row sum): one launch
                        with disjoint blocks (the independent scheme)
    scheme_regional     x - max, exp, sum, divide over rows (a softmax by hand) plus a LayerNorm:
                        a row in registers or shared memory (the regional scheme)

usage: make_scheme_models.py OUT_DIR   (needs onnx and numpy only)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(out, name, nodes, inputs, outputs, feeds, results, opset=17):
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, v.shape) for n, v in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, r.shape)
         for n, r in zip(outputs, results)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    d = os.path.join(out, name)
    data = os.path.join(d, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (n, v) in enumerate(feeds):
        with open(os.path.join(data, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, n).SerializeToString())
    for k, (n, v) in enumerate(zip(outputs, results)):
        with open(os.path.join(data, f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v.astype(np.float32), n).SerializeToString())


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "scheme_models"
    rng = np.random.default_rng(7)

    # Global: mean over axis 0 of a tall matrix, then (x - mean)^2; positive inputs keep the
    # reordered sums well conditioned.
    x = rng.uniform(0.5, 1.5, (8192, 96)).astype(np.float32)
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
    nodes = [helper.make_node("Constant", [], ["axes"], value=axes),
             helper.make_node("ReduceMean", ["x", "axes"], ["mean"], keepdims=1),
             helper.make_node("Sub", ["x", "mean"], ["d"]),
             helper.make_node("Mul", ["d", "d"], ["y"])]
    mean = x.astype(np.float64).mean(axis=0, keepdims=True)
    save(out, "scheme_global", nodes, [("x", x)], ["y", "mean"], [("x", x)],
         [((x - mean) ** 2), mean], opset=18)

    # Independent: two unrelated chains in one graph.
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = rng.standard_normal((33, 45)).astype(np.float32)
    nodes = [helper.make_node("Neg", ["a"], ["na"]),
             helper.make_node("Exp", ["na"], ["y"]),
             helper.make_node("ReduceSum", ["b", "axes"], ["s"], keepdims=1),
             helper.make_node("Constant", [], ["axes"],
                              value=numpy_helper.from_array(np.array([1], np.int64), "axes"))]
    nodes = [nodes[3]] + nodes[:3]
    save(out, "scheme_independent", nodes, [("a", a), ("b", b)], ["y", "s"], [("a", a), ("b", b)],
         [np.exp(-a.astype(np.float64)), b.astype(np.float64).sum(axis=1, keepdims=True)])

    # Regional: softmax by hand and LayerNormalization over rows of 768.
    x = rng.standard_normal((256, 768)).astype(np.float32)
    g = (1 + 0.1 * rng.standard_normal(768)).astype(np.float32)
    beta = (0.1 * rng.standard_normal(768)).astype(np.float32)
    nodes = [helper.make_node("ReduceMax", ["x"], ["m"], axes=[-1], keepdims=1),
             helper.make_node("Sub", ["x", "m"], ["xm"]),
             helper.make_node("Exp", ["xm"], ["e"]),
             helper.make_node("ReduceSum", ["e", "ax"], ["s"], keepdims=1),
             helper.make_node("Div", ["e", "s"], ["p"]),
             helper.make_node("LayerNormalization", ["x", "g", "beta"], ["ln"], axis=-1,
                              epsilon=1e-5),
             helper.make_node("Constant", [], ["ax"],
                              value=numpy_helper.from_array(np.array([-1], np.int64), "ax")),
             helper.make_node("Constant", [], ["g"], value=numpy_helper.from_array(g, "g")),
             helper.make_node("Constant", [], ["beta"], value=numpy_helper.from_array(beta, "beta"))]
    nodes = nodes[6:] + nodes[:6]
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    mu = x64.mean(-1, keepdims=True)
    var = ((x64 - mu) ** 2).mean(-1, keepdims=True)
    ln = (x64 - mu) / np.sqrt(var + 1e-5) * g + beta
    save(out, "scheme_regional", nodes, [("x", x)], ["p", "ln"], [("x", x)],
         [e / e.sum(-1, keepdims=True), ln], opset=17)
    print(f"wrote scheme_global, scheme_independent, scheme_regional under {out}")


if __name__ == "__main__":
    main()
