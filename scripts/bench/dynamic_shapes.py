#!/usr/bin/env python3
"""The cost of being dynamic: per-shape latency of one library compiled with --dim ranges
against libraries compiled for each shape alone, on the same model, and two tables written to
docs/benchmarks.md (each between its markers) and printed.

The feed-forward table ("dynamic-shapes" markers): a transformer block's feed-forward half over
[batch, seq, hidden] (LayerNorm, two products with a Gelu between them, the residual, a
per-token mask), written here with onnx's helper, fixed seed, at five shapes.

The fixtures table ("dynamic-fixtures" markers): the real-model fixtures of tests/models/dynamic/
with symbolic dims (BERT, GPT-2, Llama and a decoder block over batch and seq, a decode step
with a key-value cache over batch, seq and past, ViT and three CNNs over batch),
each compiled once with the ranges of its <name>.inputs.json (--dim NAME=MIN..MAX@EXAMPLE) and
once for each of a few shapes; the inputs follow the fixture's recipe (compare_with_ort.py's:
random token ids, 0/1 masks with a padded tail, normal floats), the same for both libraries.

Every library is timed through the C API (ctypes): `--warmup` untimed runs, then the median of
`--iters` runs of stitch_run (`--fixture-warmup`, `--fixture-iters` for the fixtures), for each
shape, on one context per library. The outputs of the dynamic library (all of them) are
compared with the shape-specialized ones at each shape: the largest absolute difference.

The memory table ("dynamic-memory" markers): for the same fixtures, the memory of a context laid
out for each timed shape alone (stitch_model_context_memory_for) against one for the maxima.

On the host target (the default; the build machine has no GPU) the numbers are the CPU
emulation's and say nothing about GPU speed: they show that the dynamic library runs each
shape in range with the same plan and compare the work per shape. On a GPU (`--target cuda`,
torch for device memory and synchronization) they are the issue's measure: at most 5% slower.

usage: scripts/bench/dynamic_shapes.py [--stitchc build/stitchc] [--target host|cuda]
                                      [--only ffn|fixtures|memory] [--fixtures NAME,...]
                                      [--warmup N] [--iters N]
                                      [--fixture-warmup N] [--fixture-iters N]
                                      [--out docs/benchmarks.md] [--no-write]
(--out: a file with the markers of the tables run gets each table between its markers; a file
that does not exist yet gets the tables alone)
"""
import argparse
import ctypes
import json
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

FIXTURE_DIR = os.path.join(ROOT, "tests", "models", "dynamic")
FIXTURES = ["bert_ts16", "gpt2_ts17", "llama_ts19", "decoder_block_ts20", "decoder_step_ts17",
            "vit_ts18", "resnet18_ts13", "mobilenet_v2_dynamo19", "efficientnet_b0_ts15",
            "einsum_dynamic", "attention_dynamic", "image_ops_dynamic", "resnet18_hw_ts13",
            "efficientnet_b0_hw_ts15", "windows_dynamic"]
# The shapes each fixture is timed at, by its symbolic dims in sorted order (a size past the
# fixture's range is taken at its maximum).
FIXTURE_SHAPES = {("batch", "seq"): [(1, 1), (1, 64), (3, 12), (8, 64)],
                  ("batch", "past", "seq"): [(1, 1, 1), (1, 64, 1), (3, 13, 3), (8, 64, 16)],
                  ("batch",): [(1,), (3,), (8,)],
                  ("batch", "height", "width"): [(1, 1, 1), (5, 40, 56), (1, 96, 96), (8, 33, 7)],
                  ("batch", "height", "length", "width"): [(1, 1, 3, 3), (2, 13, 29, 22),
                                                           (4, 40, 64, 40)]}
FIXTURES_BEGIN = "<!-- dynamic-fixtures: begin -->"
FIXTURES_END = "<!-- dynamic-fixtures: end -->"
MEMORY_BEGIN = "<!-- dynamic-memory: begin -->"
MEMORY_END = "<!-- dynamic-memory: end -->"

sys.path.insert(0, os.path.join(ROOT, "scripts", "models"))
from compare_with_ort import make_inputs  # noqa: E402  (the fixtures' input recipe)

# The C API's element types (stitch_dtype, numbered as ONNX's TensorProto.DataType) by the
# name numpy and torch give them.
DTYPES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
          "bool": 9, "float16": 10, "float64": 11, "uint32": 12, "uint64": 13, "bfloat16": 16}
DTYPE_NAMES = {code: name for name, code in DTYPES.items()}


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


class SymbolInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("min", ctypes.c_int64), ("max", ctypes.c_int64)]


class Library:
    """A compiled model through its C API: one model, one context."""

    def __init__(self, path, target):
        self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        self.lib.stitch_last_error.restype = ctypes.c_char_p
        self.target = target
        self.model, self.context = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.lib.stitch_model_create(ctypes.byref(self.model)))
        self.check(self.lib.stitch_context_create(self.model, ctypes.byref(self.context)))
        count = ctypes.c_size_t()
        self.check(self.lib.stitch_model_num_outputs(self.model, ctypes.byref(count)))
        self.num_outputs = count.value

    def check(self, status):
        if status != 0:
            raise RuntimeError(self.lib.stitch_last_error().decode())

    def names(self, count_function, info_function, info_type):
        """The `name` of each of the model's inputs or symbols (count_function, info_function and
        their info struct), in the model's order."""
        count = ctypes.c_size_t()
        self.check(count_function(self.model, ctypes.byref(count)))
        names = []
        for index in range(count.value):
            info = info_type()
            self.check(info_function(self.model, ctypes.c_size_t(index), ctypes.byref(info)))
            names.append(info.name.decode())
        return names

    def symbols(self):
        """The symbolic dims' names, in the model's order."""
        return self.names(self.lib.stitch_model_num_symbols, self.lib.stitch_model_symbol,
                          SymbolInfo)

    def context_memory(self, maxima=None):
        """The bytes of a context for the model's maxima, or (maxima: {symbol: size}) of one for
        runs up to those sizes (stitch_model_context_memory_for)."""
        size = ctypes.c_uint64()
        if maxima is None:
            self.check(self.lib.stitch_model_context_memory(self.model, ctypes.byref(size)))
            return size.value
        names = self.symbols()
        values = (ctypes.c_int64 * len(names))(*(maxima[n] for n in names))
        self.check(self.lib.stitch_model_context_memory_for(self.model, values, len(names),
                                                            ctypes.byref(size)))
        return size.value

    def input_names(self):
        """The model's inputs' names, in the order stitch_run takes them."""
        return self.names(self.lib.stitch_model_num_inputs, self.lib.stitch_model_input,
                          TensorInfo)

    def prepare(self, feeds):
        """The argument arrays of a run on `feeds` (numpy, or torch tensors on the GPU; any of
        the C API's dtypes), every output allocated at the shape stitch_model_output_shapes
        gives for these inputs."""
        keep, inputs = [], []
        for array in feeds:
            dims = (ctypes.c_int64 * len(array.shape))(*array.shape)
            keep.append(dims)
            dtype = DTYPES[str(array.dtype).replace("torch.", "")]
            if self.target == "cuda":
                pointer, nbytes = array.data_ptr(), array.numel() * array.element_size()
            else:
                pointer, nbytes = array.ctypes.data, array.nbytes
            inputs.append(Tensor(pointer, dtype, len(array.shape), dims, nbytes))
        inputs = (Tensor * len(inputs))(*inputs)
        info = (TensorInfo * self.num_outputs)()
        self.check(self.lib.stitch_model_output_shapes(self.model, inputs, len(feeds), info,
                                                       self.num_outputs))
        outs, outputs = [], []
        for output in info:
            shape = tuple(output.dims[:output.rank])
            dtype = DTYPE_NAMES[output.dtype]
            if self.target == "cuda":
                import torch
                out = torch.empty(shape, dtype=getattr(torch, dtype), device="cuda")
                pointer = out.data_ptr()
            else:
                out = np.empty(shape, dtype)
                pointer = out.ctypes.data
            dims = (ctypes.c_int64 * len(shape))(*shape)
            keep.append(dims)
            outs.append(out)
            outputs.append(Tensor(pointer, output.dtype, len(shape), dims, output.bytes))
        outputs = (Tensor * len(outputs))(*outputs)
        return inputs, outputs, outs, keep

    def time(self, feeds, warmup, iters):
        """The median milliseconds of `iters` runs after `warmup`, and the outputs (numpy, in
        model order)."""
        inputs, outputs, outs, keep = self.prepare(feeds)
        synchronize = lambda: None  # noqa: E731 (host runs are synchronous)
        if self.target == "cuda":
            import torch
            synchronize = torch.cuda.synchronize

        def run():
            self.check(self.lib.stitch_run(self.context, inputs, len(feeds), outputs,
                                           len(outs), None))

        for _ in range(warmup):
            run()
        synchronize()
        times = []
        for _ in range(iters):
            start = time.perf_counter()
            run()
            synchronize()
            times.append((time.perf_counter() - start) * 1e3)
        del keep
        results = [out.cpu().numpy() if self.target == "cuda" else out for out in outs]
        return statistics.median(times), results


def max_abs_diff(outputs, others):
    """The largest absolute difference between two runs' outputs, over all of them."""
    return max(float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max())
               for a, b in zip(outputs, others))


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


def on_target(arrays, target):
    """numpy arrays as stitch_run takes them on `target`: torch tensors on the GPU for cuda."""
    if target == "cuda":
        import torch
        return [torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in arrays]
    return [np.ascontiguousarray(a) for a in arrays]


def ffn_table(args):
    """Times the feed-forward model at SHAPES; the table (markers included)."""
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
            diff = max_abs_diff(fixed_out, dynamic_out)
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
    return "\n".join(lines)


def fixture_shapes(ranges):
    """The shapes ({dim: size}) a fixture with these symbolic dims ({dim: {"min", "max"}}) is
    timed at: FIXTURE_SHAPES, each size brought within its range."""
    names = tuple(sorted(ranges))
    if names not in FIXTURE_SHAPES:
        sys.exit(f"no shapes to time for symbolic dims {list(names)}; add them to "
                 "FIXTURE_SHAPES")
    shapes = []
    for sizes in FIXTURE_SHAPES[names]:
        shape = {d: min(max(n, ranges[d]["min"]), ranges[d]["max"]) for d, n in zip(names, sizes)}
        if shape not in shapes:
            shapes.append(shape)
    return shapes


def load_fixture(name):
    """A fixture of tests/models/dynamic: its model's path, its inputs.json, its symbolic dims'
    ranges ({dim: {"min", "max"[, "example"]}}) and stitchc's --dim values for them
    ({dim: "MIN..MAX@EXAMPLE"})."""
    model = os.path.join(FIXTURE_DIR, name + ".onnx")
    with open(os.path.join(FIXTURE_DIR, name + ".inputs.json")) as f:
        spec = json.load(f)
    ranges = {d: r for d, r in spec["dims"].items() if isinstance(r, dict)}
    dims = {d: f"{r['min']}..{r['max']}" + (f"@{r['example']}" if "example" in r else "")
            for d, r in ranges.items()}
    return model, spec, ranges, dims


def fixtures_table(args):
    """Times each fixture of --fixtures at fixture_shapes; the table (markers included)."""
    rows, flags = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.fixtures.split(","):
            model, spec, ranges, dims = load_fixture(name)
            flags.setdefault(" ".join(f"--dim {d}={v}" for d, v in dims.items()), []).append(name)
            dynamic_path = os.path.join(tmp, f"lib{name}_dynamic.so")
            compile_library(args.stitchc, model, dynamic_path, args.target, dims)
            dynamic = Library(dynamic_path, args.target)
            order = dynamic.input_names()
            for k, shape in enumerate(fixture_shapes(ranges)):
                text = "x".join(str(n) for n in shape.values())
                fixed_path = os.path.join(tmp, f"lib{name}_{text}.so")
                compile_library(args.stitchc, model, fixed_path, args.target, shape)
                fixed = Library(fixed_path, args.target)
                feed = make_inputs(spec, np.random.default_rng(k), {**spec["dims"], **shape})
                feeds = on_target([feed[n] for n in order], args.target)
                fixed_ms, fixed_out = fixed.time(feeds, args.fixture_warmup, args.fixture_iters)
                dynamic_ms, dynamic_out = dynamic.time(feeds, args.fixture_warmup,
                                                       args.fixture_iters)
                diff = max_abs_diff(fixed_out, dynamic_out)
                rows.append((name, ", ".join(f"{d} {n}" for d, n in shape.items()), fixed_ms,
                             dynamic_ms, dynamic_ms / fixed_ms, diff))
                print(f"{name} {' '.join(f'{d} {n}' for d, n in shape.items())}: fixed "
                      f"{fixed_ms:.3f} ms, dynamic {dynamic_ms:.3f} ms, max |diff| {diff:.2e}",
                      flush=True)

    ranges_text = "; ".join(f"`{text}` for {', '.join(names)}" for text, names in flags.items())
    runs = "run" if args.fixture_warmup == 1 else "runs"
    fewer = (" (fewer than for the feed-forward model, to keep the run short)"
             if args.fixture_iters < args.iters else "")
    host = (" On the host target these are the CPU emulation's times and say nothing about a "
            "GPU." if args.target == "host" else "")
    lines = [FIXTURES_BEGIN, "",
             "Models: the fixtures of `tests/models/dynamic/` with symbolic dims (small exports, "
             "hidden size 64: BERT, GPT-2, Llama and a decoder block over [batch, seq], the "
             "decode step with a key-value cache over [batch, seq] and past, ViT, ResNet-18, "
             "MobileNetV2 and EfficientNet-B0 over batch; the ops other exporters write: a "
             "Keras-style attention layer of Einsums over [batch, seq], the ONNX Attention op "
             "with a key-value cache over [batch, seq] and past, DepthToSpace, Resize, TopK and "
             "GatherElements over batch; ResNet-18 and EfficientNet-B0 also over their image "
             "size [batch, 3, height, width], and convolutions, pooling and resizes over "
             "[batch, 4, height, width] and a 1-D length), "
             f"`scripts/bench/dynamic_shapes.py --target {args.target}`. For each, one "
             f"library compiled with the ranges of its `inputs.json` ({ranges_text}) against one "
             "compiled for each shape (each symbolic dim bound: `--dim batch=B --dim seq=S`), both "
             "run on the same inputs, made by the fixture's recipe (random token ids, 0/1 masks "
             f"with a padded tail, normal floats); median of {args.fixture_iters} `stitch_run`s "
             f"after {args.fixture_warmup} warm-up {runs}{fewer}, one context each; the last "
             "column is the largest absolute difference between the two libraries' outputs, "
             f"over all of them.{host}", "",
             "| fixture | shape | shape-specialized ms | dynamic ms | "
             "dynamic / specialized | max abs diff |",
             "|---|---|---:|---:|---:|---:|"]
    for name, shape, fixed_ms, dynamic_ms, ratio, diff in rows:
        lines.append(f"| {name} | {shape} | {fixed_ms:.3f} | {dynamic_ms:.3f} | "
                     f"{ratio:.2f} | {diff:.1e} |")
    lines += ["", FIXTURES_END]
    return "\n".join(lines)


def memory_table(args):
    """The context memory of each fixture of --fixtures' library at fixture_shapes against the
    maxima's; the table (markers included)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.fixtures.split(","):
            model, spec, ranges, dims = load_fixture(name)
            path = os.path.join(tmp, f"lib{name}.so")
            compile_library(args.stitchc, model, path, args.target, dims)
            library = Library(path, args.target)
            full = library.context_memory()
            for shape in fixture_shapes(ranges):
                own = library.context_memory(shape)
                text = ", ".join(f"{d} {n}" for d, n in shape.items())
                rows.append((name, text, own, full))
                print(f"{name} {text}: {own} bytes of {full}", flush=True)
    workspace = (" On the host target a context has no library workspace, so this is its arena "
                 "of intermediates (and the scratch of its groups); on the CUDA target the "
                 "cuBLASLt and cuDNN workspace comes on top of both columns." if args.target ==
                 "host" else " On the CUDA target both columns include the library workspace.")
    lines = [MEMORY_BEGIN, "",
             "The memory of a context for one shape (`stitch_model_context_memory_for` with the "
             "shape's sizes as the maxima: its arena laid out for them) against a context for the "
             "symbols' maxima (`stitch_context_create`), each fixture of `tests/models/dynamic/` "
             "compiled once with the ranges of its `inputs.json`, `scripts/bench/dynamic_shapes.py "
             f"--only memory --target {args.target}`.{workspace}", "",
             "| fixture | shape | context for the shape, KiB | for the maxima, KiB | share |",
             "|---|---|---:|---:|---:|"]
    for name, text, own, full in rows:
        lines.append(f"| {name} | {text} | {own / 1024:.1f} | {full / 1024:.1f} | "
                     f"{100.0 * own / full if full else 100.0:.1f}% |")
    lines += ["", MEMORY_END]
    return "\n".join(lines)


def write_tables(path, tables):
    """Writes each table of `tables` ([(markers' name, begin, end, table)]) between its markers
    in the file at path, or the tables alone to a file that does not exist yet. Returns the exit
    status."""
    if not os.path.exists(path):  # a file of its own (scripts/gpu/run.sh's dynamic stage)
        with open(path, "w") as f:
            f.write("\n\n".join(table for _, _, _, table in tables) + "\n")
        return 0
    with open(path) as f:
        text = f.read()
    for name, begin, end, table in tables:
        if begin not in text or end not in text:
            print(f"{path} has no {name} markers; add them where the table goes",
                  file=sys.stderr)
            return 1
        text = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: table, text,
                      flags=re.S)
    with open(path, "w") as f:
        f.write(text)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stitchc", default=os.path.join(ROOT, "build", "stitchc"))
    parser.add_argument("--target", choices=["host", "cuda"], default="host")
    parser.add_argument("--only", choices=["ffn", "fixtures", "memory"], default=None,
                        help="measure and write one table only (default: all)")
    parser.add_argument("--fixtures", default=",".join(FIXTURES),
                        help="the fixtures of tests/models/dynamic to time, comma-separated")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--iters", type=int, default=9)
    parser.add_argument("--fixture-warmup", type=int, default=2)
    parser.add_argument("--fixture-iters", type=int, default=15)
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    parser.add_argument("--no-write", action="store_true", help="print the tables only")
    args = parser.parse_args()

    parts = [("ffn", "dynamic-shapes", BEGIN, END, ffn_table),
             ("fixtures", "dynamic-fixtures", FIXTURES_BEGIN, FIXTURES_END, fixtures_table),
             ("memory", "dynamic-memory", MEMORY_BEGIN, MEMORY_END, memory_table)]
    parts = [part for part in parts if args.only in (None, part[0])]
    if not args.no_write and os.path.exists(args.out):  # the markers, before measuring
        with open(args.out) as f:
            text = f.read()
        for _, name, begin, end, _ in parts:
            if begin not in text or end not in text:
                print(f"{args.out} has no {name} markers; add them where the table goes",
                      file=sys.stderr)
                return 1
    tables = [(name, begin, end, measure(args)) for _, name, begin, end, measure in parts]
    for _, _, _, table in tables:
        print(table)
    if args.no_write:
        return 0
    return write_tables(args.out, tables)


if __name__ == "__main__":
    sys.exit(main())
