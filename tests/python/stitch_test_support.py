"""What the Python binding's tests share: the stitchc they compile with, tiny ONNX models built
with onnx.helper, their host-target libraries, random inputs, and the command line.

    STITCHC=build/stitchc PYTHONPATH=<installed package> python test_<name>.py [-v]
    python test_<name>.py --stitchc build/stitchc [--work DIR] [unittest arguments]

Libraries are compiled once per process into the work folder (--work, $STITCH_PYTHON_TEST_WORK,
else a temporary folder removed at exit), in a subfolder named after the test script.
"""

import argparse
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

_config = {"stitchc": os.environ.get("STITCHC"), "work": os.environ.get("STITCH_PYTHON_TEST_WORK")}
_compiled = {}

# A fresh seed each run, printed, so that a failure can be replayed with STITCH_TEST_SEED.
SEED = int(os.environ.get("STITCH_TEST_SEED", np.random.SeedSequence().entropy % 2**32))


def _vi(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def _add_relu(elem_type):
    """y = Relu(x + b): x [2,3,4] (or [3,8] in 16 bits), b broadcast along the last axis."""
    shape = [2, 3, 4] if elem_type == TensorProto.FLOAT else [3, 8]
    nodes = [helper.make_node("Add", ["x", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    return nodes, [_vi("x", elem_type, shape), _vi("b", elem_type, shape[-1:])], [
        _vi("y", elem_type, shape)]


def _two_in_two_out():
    """prod = (a + b) * b and mean = ReduceMean(a + b, last axis)."""
    nodes = [
        helper.make_node("Add", ["a", "b"], ["s"]),
        helper.make_node("Mul", ["s", "b"], ["prod"]),
        helper.make_node("ReduceMean", ["s"], ["mean"], axes=[-1], keepdims=0),
    ]
    inputs = [_vi("a", TensorProto.FLOAT, [4, 8]), _vi("b", TensorProto.FLOAT, [4, 8])]
    outputs = [_vi("prod", TensorProto.FLOAT, [4, 8]), _vi("mean", TensorProto.FLOAT, [4])]
    return nodes, inputs, outputs


def _int64():
    """y = float(ids) + x and sq = ids * ids (an int64 input and output)."""
    nodes = [
        helper.make_node("Cast", ["ids"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["f", "x"], ["y"]),
        helper.make_node("Mul", ["ids", "ids"], ["sq"]),
    ]
    inputs = [_vi("ids", TensorProto.INT64, [2, 5]), _vi("x", TensorProto.FLOAT, [2, 5])]
    outputs = [_vi("y", TensorProto.FLOAT, [2, 5]), _vi("sq", TensorProto.INT64, [2, 5])]
    return nodes, inputs, outputs


def _gated_mlp():
    """Symbolic dims batch and seq: y = Relu(x @ w + bias) [batch,seq,16] (a matrix product
    whose rows alone are symbolic) and gated = x * Sigmoid(g) [batch,seq,8] (pointwise, over
    two inputs that share the symbols). w and bias are fixed random constants."""
    rng = np.random.default_rng(7)

    def constant(name, shape):
        value = numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
        return helper.make_node("Constant", [], [name], value=value)

    nodes = [
        constant("w", (8, 16)),
        constant("bias", (16,)),
        helper.make_node("MatMul", ["x", "w"], ["xw"]),
        helper.make_node("Add", ["xw", "bias"], ["pre"]),
        helper.make_node("Relu", ["pre"], ["y"]),
        helper.make_node("Sigmoid", ["g"], ["gate"]),
        helper.make_node("Mul", ["x", "gate"], ["gated"]),
    ]
    inputs = [_vi(name, TensorProto.FLOAT, ["batch", "seq", 8]) for name in ("x", "g")]
    outputs = [_vi("y", TensorProto.FLOAT, ["batch", "seq", 16]),
               _vi("gated", TensorProto.FLOAT, ["batch", "seq", 8])]
    return nodes, inputs, outputs


MODELS = {
    "add_relu": lambda: _add_relu(TensorProto.FLOAT),
    "add_relu_fp16": lambda: _add_relu(TensorProto.FLOAT16),
    "add_relu_bf16": lambda: _add_relu(TensorProto.BFLOAT16),
    "two_in_two_out": _two_in_two_out,
    "int64": _int64,
    "gated_mlp": _gated_mlp,
}

# stitchc's flags for a model beyond the usual: gated_mlp is compiled for every shape in range
# (one library), planned at seq 5.
STITCHC_FLAGS = {"gated_mlp": ["--dim", "batch=1..4", "--dim", "seq=1..16@5"]}


def work_dir():
    if _config["work"] is None:
        _config["work"] = tempfile.mkdtemp(prefix="stitch_python_tests_")
        atexit.register(shutil.rmtree, _config["work"], ignore_errors=True)
    script = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    folder = os.path.join(_config["work"], script)
    os.makedirs(folder, exist_ok=True)
    return folder


def onnx_path(name):
    """The model's .onnx file, written on first use."""
    path = os.path.join(work_dir(), f"{name}.onnx")
    if not os.path.exists(path):
        nodes, inputs, outputs = MODELS[name]()
        graph = helper.make_graph(nodes, name, inputs, outputs)
        # IR version 8 (opset 17's): onnx 1.20 writes 13 by default, more than ORT 1.23 reads.
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                  ir_version=8)
        onnx.checker.check_model(model)
        onnx.save(model, path)
    return path


def library(name, symbol_prefix=None):
    """The host-target library of model `name` (built with --symbol-prefix where given, then
    named lib<prefix>.so, as stitch-run guesses a prefix from)."""
    key = (name, symbol_prefix)
    if key not in _compiled:
        if not _config["stitchc"]:
            raise unittest.SkipTest("no stitchc: set STITCHC or pass --stitchc")
        base = symbol_prefix or name
        path = os.path.join(work_dir(), f"lib{base}.so")
        command = [_config["stitchc"], onnx_path(name), "--target", "host", "--quiet", "-o", path]
        command += STITCHC_FLAGS.get(name, [])
        if symbol_prefix:
            command += ["--symbol-prefix", symbol_prefix]
        subprocess.run(command, check=True)
        _compiled[key] = path
    return _compiled[key]


def random_inputs(model, rng, symbols=None):
    """Random values for every input of a stitch.Model, by name: normal floats of both signs,
    integers in [-9, 9] (never all zeros). A symbolic dim takes its symbol's value in
    `symbols` (a dict name -> value)."""
    values = {}
    for info in model.inputs:
        shape = tuple(symbols[name] if dim is None else dim
                      for dim, name in zip(info.shape, info.symbols))
        if info.dtype_name in ("float32", "float16", "bfloat16", "float64"):
            values[info.name] = rng.standard_normal(shape).astype(info.dtype)
        else:
            values[info.name] = rng.integers(-9, 10, shape).astype(info.dtype)
    return values


def main():
    """Runs the calling test module: our options first, the rest to unittest."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--stitchc", default=_config["stitchc"])
    parser.add_argument("--work", default=_config["work"])
    options, rest = parser.parse_known_args()
    _config.update(stitchc=options.stitchc, work=options.work)
    import stitch

    print(f"stitch from {os.path.dirname(stitch.__file__)}, stitchc {_config['stitchc']}, "
          f"seed {SEED}", file=sys.stderr)
    unittest.main(module="__main__", argv=[sys.argv[0]] + rest)
