#!/usr/bin/env python3
"""The cost of being dynamic: per-shape latency of one library compiled with --dim ranges
against libraries compiled for each shape alone, on the same model, and the table written to
docs/benchmarks.md (between the "dynamic-shapes" markers) and printed.

The model is a transformer block's feed-forward half over [batch, seq, hidden] (LayerNorm, two
products with a Gelu between them, the residual, a per-token mask), written here with onnx's
helper, fixed seed. Every library is timed through the C API (ctypes): `--warmup` untimed runs,
then the median of `--iters` runs of stitch_run, for each shape, on one context per library.
The outputs of the dynamic library are compared with the shape-specialized ones at each shape.

On the host target (the default; the build machine has no GPU) the numbers are the CPU
emulation's and say nothing about GPU speed: they show that the dynamic library runs each
shape in range with the same plan and compare the work per shape. On a GPU (`--target cuda`,
torch for device memory and synchronization) they are the issue's measure: at most 5% slower.

usage: scripts/bench/dynamic_shapes.py [--stitchc build/stitchc] [--target host|cuda]
                                      [--out docs/benchmarks.md] [--no-write]
(--out: a file with the "dynamic-shapes" markers gets the table between them; a file that does
not exist yet gets the table alone)
"""
import argparse
import ctypes
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
HIDDEN, FFN = 256, 1024
RANGES = {"batch": (1, 16, 4), "seq": (1, 256, 128)}  # min, max, planned at
SHAPES = [(1, 1), (1, 128), (3, 77), (4, 128), (16, 256)]
BEGIN, END = "<!-- dynamic-shapes: begin -->", "<!-- dynamic-shapes: end -->"


def write_model(path):
    rng = np.random.default_rng(0)

    def weight(name, shape, scale=0.05):
        return numpy_helper.from_array((scale * rng.standard_normal(shape)).astype(np.float32),
                                       name)

    inits = [weight("gamma", [HIDDEN], 1.0), weight("beta", [HIDDEN]),
             weight("w1", [HIDDEN, FFN]), weight("b1", [FFN]), weight("w2", [FFN, HIDDEN]),
             weight("b2", [HIDDEN]),
             numpy_helper.from_array(np.array(0.5, np.float32), "half"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(1 / np.sqrt(2), np.float32), "rsqrt2")]
    nodes = [
        helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln"], axis=-1,
                         epsilon=1e-5),
        helper.make_node("MatMul", ["ln", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        # Gelu (erf form)
        helper.make_node("Mul", ["hb", "rsqrt2"], ["hs"]),
        helper.make_node("Erf", ["hs"], ["he"]),
        helper.make_node("Add", ["he", "one"], ["h1"]),
        helper.make_node("Mul", ["hb", "h1"], ["hm"]),
        helper.make_node("Mul", ["hm", "half"], ["g"]),
        helper.make_node("MatMul", ["g", "w2"], ["o"]),
        helper.make_node("Add", ["o", "b2"], ["ob"]),
        helper.make_node("Add", ["ob", "x"], ["res"]),
        helper.make_node("Mul", ["res", "mask"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "ffn_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", HIDDEN]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "seq", 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", HIDDEN])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("dims", ctypes.c_int64 * 8), ("bytes", ctypes.c_uint64)]


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("dims", ctypes.POINTER(ctypes.c_int64)), ("bytes", ctypes.c_uint64)]


class Library:
    """A compiled model through its C API: one model, one context."""

    def __init__(self, path, target):
        self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        self.lib.stitch_last_error.restype = ctypes.c_char_p
        self.target = target
        self.model, self.context = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.lib.stitch_model_create(ctypes.byref(self.model)))
        self.check(self.lib.stitch_context_create(self.model, ctypes.byref(self.context)))

    def check(self, status):
        if status != 0:
            raise RuntimeError(self.lib.stitch_last_error().decode())

    def prepare(self, feeds):
        """The argument arrays of a run on `feeds` (numpy, or torch tensors on the GPU)."""
        keep, inputs = [], []
        for array in feeds:
            dims = (ctypes.c_int64 * len(array.shape))(*array.shape)
            keep.append(dims)
            pointer = array.data_ptr() if self.target == "cuda" else array.ctypes.data
            nbytes = array.numel() * 4 if self.target == "cuda" else array.nbytes
            inputs.append(Tensor(pointer, 1, len(array.shape), dims, nbytes))
        inputs = (Tensor * len(inputs))(*inputs)
        info = (TensorInfo * 1)()
        self.check(self.lib.stitch_model_output_shapes(self.model, inputs, len(feeds), info, 1))
        shape = tuple(info[0].dims[:info[0].rank])
        if self.target == "cuda":
            import torch
            out = torch.empty(shape, dtype=torch.float32, device="cuda")
            pointer = out.data_ptr()
        else:
            out = np.empty(shape, np.float32)
            pointer = out.ctypes.data
        dims = (ctypes.c_int64 * len(shape))(*shape)
        keep.append(dims)
        outputs = (Tensor * 1)(Tensor(pointer, 1, len(shape), dims, info[0].bytes))
        return inputs, outputs, out, keep

    def time(self, feeds, warmup, iters):
        inputs, outputs, out, keep = self.prepare(feeds)
        synchronize = lambda: None  # noqa: E731 (host runs are synchronous)
        if self.target == "cuda":
            import torch
            synchronize = torch.cuda.synchronize
        for _ in range(warmup):
            self.check(self.lib.stitch_run(self.context, inputs, len(feeds), outputs, 1, None))
        synchronize()
        times = []
        for _ in range(iters):
            start = time.perf_counter()
            self.check(self.lib.stitch_run(self.context, inputs, len(feeds), outputs, 1, None))
            synchronize()
            times.append((time.perf_counter() - start) * 1e3)
        del keep
        result = out.cpu().numpy() if self.target == "cuda" else out
        return statistics.median(times), result


def compile_library(stitchc, model, out, target, dims):
    flags = []
    for name, value in dims.items():
        flags += ["--dim", f"{name}={value}"]
    subprocess.run([stitchc, model, "--target", target, "-o", out, "-q"] + flags, check=True)


def feeds_for(batch, seq, target):
    rng = np.random.default_rng(batch * 1000 + seq)
    x = rng.standard_normal((batch, seq, HIDDEN)).astype(np.float32)
    mask = (rng.random((batch, seq, 1)) > 0.1).astype(np.float32)
    if target == "cuda":
        import torch
        return [torch.from_numpy(x).cuda(), torch.from_numpy(mask).cuda()]
    return [x, mask]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stitchc", default=os.path.join(ROOT, "build", "stitchc"))
    parser.add_argument("--target", choices=["host", "cuda"], default="host")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--iters", type=int, default=9)
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "ffn_block.onnx")
        write_model(model)
        ranges = {name: f"{lo}..{hi}@{at}" for name, (lo, hi, at) in RANGES.items()}
        dynamic_path = os.path.join(tmp, "libdynamic.so")
        compile_library(args.stitchc, model, dynamic_path, args.target, ranges)
        dynamic = Library(dynamic_path, args.target)
        for batch, seq in SHAPES:
            fixed_path = os.path.join(tmp, f"lib_{batch}x{seq}.so")
            compile_library(args.stitchc, model, fixed_path, args.target,
                            {"batch": batch, "seq": seq})
            fixed = Library(fixed_path, args.target)
            feeds = feeds_for(batch, seq, args.target)
            fixed_ms, fixed_out = fixed.time(feeds, args.warmup, args.iters)
            dynamic_ms, dynamic_out = dynamic.time(feeds, args.warmup, args.iters)
            diff = float(np.abs(fixed_out - dynamic_out).max())
            rows.append((batch, seq, fixed_ms, dynamic_ms, dynamic_ms / fixed_ms, diff))
            print(f"batch {batch} seq {seq}: fixed {fixed_ms:.3f} ms, dynamic {dynamic_ms:.3f} ms,"
                  f" max |diff| {diff:.2e}", flush=True)

    ranges_text = ", ".join(f"`--dim {n}={lo}..{hi}@{at}`" for n, (lo, hi, at) in RANGES.items())
    lines = [BEGIN, "",
             f"Model: the feed-forward half of a transformer block over [batch, seq, {HIDDEN}] "
             f"(LayerNorm, {HIDDEN}->{FFN} Gelu {FFN}->{HIDDEN}, residual, mask), "
             f"`scripts/bench/dynamic_shapes.py --target {args.target}`. One library compiled "
             f"with {ranges_text} against one compiled for each shape (`--dim batch=B "
             f"--dim seq=S`); median of {args.iters} `stitch_run`s after {args.warmup} "
             "warm-up runs, one context each; the last column compares the two libraries' "
             "outputs.", "",
             "| batch | seq | shape-specialized ms | dynamic ms | dynamic / specialized | "
             "max abs diff |",
             "|---:|---:|---:|---:|---:|---:|"]
    for batch, seq, fixed_ms, dynamic_ms, ratio, diff in rows:
        lines.append(f"| {batch} | {seq} | {fixed_ms:.3f} | {dynamic_ms:.3f} | {ratio:.2f} | "
                     f"{diff:.1e} |")
    lines += ["", END]
    table = "\n".join(lines)
    print(table)
    if args.no_write:
        return 0
    if not os.path.exists(args.out):  # a file of its own (scripts/gpu/run.sh's dynamic stage)
        with open(args.out, "w") as f:
            f.write(table + "\n")
        return 0
    with open(args.out) as f:
        text = f.read()
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: table, text,
                      flags=re.S)
    else:
        print(f"{args.out} has no dynamic-shapes markers; add them where the table goes",
              file=sys.stderr)
        return 1
    with open(args.out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
