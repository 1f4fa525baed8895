#!/usr/bin/env python3
"""Compiles one real-model fixture with stitchc and compares every output of the library with
ONNX Runtime's (CPU) on fresh random inputs. The ctest targets models/<name>/host run this.

Inputs follow the fixture's <name>.inputs.json: normal floats, random token ids in their
range; a 0/1 attention mask gets ones with a random padded tail per batch row (at least one
position kept), so that masking is exercised rather than a mask of ones. The inputs and ORT's
outputs are written as .npy files; stitch-run reads those and compares (its --rtol/--atol).
With --target cuda the model is only compiled (nvcc), not run. With --library LIB the library
is not compiled: LIB (built earlier with the same flags, for any target) is run instead.

With --precision fp16|bf16 the library is compiled so (stitchc --precision) and each floating
output passes when its relative L2 error against ORT's float32 output is within the fixture's
aim in tests/models/precision_aims.json (or --max-rel-l2); with --target cuda it is compiled
in that precision.

Symbolic dims: with --dim NAME=MIN..MAX[@T] (repeatable, passed to stitchc), or by default for
a fixture whose inputs.json gives its dims as ranges ({"min", "max", "example"}: the fixtures
in tests/models/dynamic/, compiled with --dim NAME=MIN..MAX@EXAMPLE), the library is compiled
once with those dims symbolic and compared at each shape of --shapes ("batch=1,seq=1;batch=3,
seq=12": every ranged dim in each), by default every dim at its minimum, then at its example
(or @T; else the middle of the range), then at its maximum. Each shape gets fresh inputs of
that shape by the same recipe; the run fails if any shape fails. A symbolic dim of the model
that no --dim ranges is bound by inputs.json with --input-shape, as for a fixed fixture. With
--shape-context, each shape also runs in a context created for that shape alone (its arena laid
out for those dims), whose outputs must be bitwise the same. With --unfused-too (host), the
model is also compiled with one kernel per op (--planner none), that library compared with ORT
the same way, and at each shape the unfused library's outputs with the fused one's (--rtol and
--atol, or the precision's aim): the fused plan computes what the unfused one does.

usage: compare_with_ort.py --stitchc STITCHC --stitch-run STITCH_RUN --work DIR
                           [--target host|cuda] [--seed N] [--rtol R] [--atol A]
                           [--precision P [--max-rel-l2 X]] [--library LIB]
                           [--dim NAME=MIN..MAX[@T] ...] [--shapes SHAPES] [--shape-context]
                           [--unfused-too] [--uncompared OUTPUT ...] MODEL.onnx
Exit status: 0 when every output matches, 1 otherwise (stitch-run's or stitchc's output says
why).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_models import random_feed  # noqa: E402  (the fixtures' input recipe)


def make_inputs(spec, rng, dims=None):
    """Random inputs as the fixture's inputs.json describes them (check_models.random_feed), its
    symbolic dims bound to dims (default: inputs.json's), except that a 0/1 mask ("fill":
    "ones") gets a random padded tail on each row."""
    feed = random_feed(spec, rng, dims)
    for inp in spec["inputs"]:
        if inp["fill"] != "ones":
            continue
        mask = feed[inp["name"]]
        if mask.size == 0:
            continue
        rows = mask.reshape(-1, mask.shape[-1])
        for row in rows:
            row[rng.integers(1, mask.shape[-1] + 1):] = 0
        feed[inp["name"]] = rows.reshape(mask.shape)
    return feed


def input_shape_args(spec, ranges=None):
    """stitchc's --input-shape arguments binding the fixture's symbolic dims, as a user would,
    but for the inputs whose symbolic dims are all ranged (by stitchc --dim: `ranges`)."""
    ranges = ranges or {}
    args = []
    for inp in spec["inputs"]:
        symbolic = [d for d in inp["shape"] if isinstance(d, str)]
        if not symbolic or all(d in ranges for d in symbolic):
            continue
        if any(d in ranges for d in symbolic):
            sys.exit(f"input {inp['name']} {inp['shape']}: --dim ranges some of its symbolic dims "
                     f"but not {[d for d in symbolic if d not in ranges]}; range them all")
        sizes = [spec["dims"].get(d) for d in symbolic]
        if not all(isinstance(n, int) for n in sizes):
            sys.exit(f"input {inp['name']} {inp['shape']}: inputs.json gives no size for its "
                     f"symbolic dims; range them with --dim NAME=MIN..MAX")
        shape = [spec["dims"][d] if isinstance(d, str) else d for d in inp["shape"]]
        args += ["--input-shape", inp["name"] + "=" + "x".join(map(str, shape))]
    return args


def parse_range(arg):
    """--dim NAME=MIN..MAX[@T] -> (NAME, {"min", "max"[, "example"]}), as stitchc reads it."""
    name, sep, text = arg.rpartition("=")
    bounds, _, typical = text.partition("@")
    low, dots, high = bounds.partition("..")
    try:
        spec = {"min": int(low), "max": int(high)}
        if typical:
            spec["example"] = int(typical)
    except ValueError:
        spec = None
    if not sep or not name or not dots or spec is None or not 0 <= spec["min"] <= spec["max"]:
        sys.exit(f"--dim '{arg}' is not NAME=MIN..MAX[@T] with 0 <= MIN <= MAX")
    return name, spec


def symbolic_ranges(args, spec):
    """The dims compiled symbolic, {name: {"min", "max"[, "example"]}}: --dim's, else the
    ranges inputs.json gives (a fixture of tests/models/dynamic/); {} for fixed shapes."""
    if args.dim:
        ranges = dict(parse_range(arg) for arg in args.dim)
        if len(ranges) != len(args.dim):
            sys.exit("--dim gives a dim twice")
        return ranges
    return {d: r for d, r in spec["dims"].items() if isinstance(r, dict)}


def dim_args(ranges):
    """stitchc's --dim arguments for the ranges (the example, if any, as the typical size)."""
    args = []
    for name, r in ranges.items():
        typical = f"@{r['example']}" if "example" in r else ""
        args += ["--dim", f"{name}={r['min']}..{r['max']}{typical}"]
    return args


def parse_shapes(text, ranges):
    """--shapes "batch=1,seq=1;batch=3,seq=12" -> [{"batch": 1, "seq": 1}, ...]; each shape gives
    every ranged dim a size in its range."""
    shapes = []
    for item in filter(None, (part.strip() for part in text.split(";"))):
        shape = {}
        for assignment in item.split(","):
            name, sep, value = assignment.strip().partition("=")
            if not sep or not value.strip().isdigit():
                sys.exit(f"--shapes: '{assignment.strip()}' in '{item}' is not NAME=SIZE")
            shape[name.strip()] = int(value)
        if set(shape) != set(ranges):
            sys.exit(f"--shapes: '{item}' gives {sorted(shape)}, but the symbolic dims are "
                     f"{sorted(ranges)}")
        for name, size in shape.items():
            if not ranges[name]["min"] <= size <= ranges[name]["max"]:
                sys.exit(f"--shapes: '{item}': {name} must be in "
                         f"{ranges[name]['min']}..{ranges[name]['max']}")
        shapes.append(shape)
    if not shapes:
        sys.exit("--shapes gives no shape")
    return shapes


def default_shapes(ranges):
    """Every ranged dim at its minimum, at its example (else the middle of its range) and at
    its maximum, without repeats."""
    shapes = []
    for pick in ("min", "example", "max"):
        shape = {d: r.get(pick, (r["min"] + r["max"]) // 2) for d, r in ranges.items()}
        if shape not in shapes:
            shapes.append(shape)
    return shapes


def describe_shape(shape):
    return " ".join(f"{d}={n}" for d, n in shape.items())


AIMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "models",
                    "precision_aims.json")


def run(argv, what, exit_on_failure=True):
    """Runs argv, printing its output; exits on failure unless told not to. Returns whether it
    succeeded."""
    print("+", " ".join(argv), flush=True)
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(result.stdout, end="", flush=True)
    if result.returncode != 0:
        print(f"{what} failed with exit code {result.returncode}", flush=True)
        if exit_on_failure:
            sys.exit(1)
    return result.returncode == 0


def precision_aim(model, precision):
    """The fixture's relative-L2 aim for --precision, from tests/models/precision_aims.json."""
    with open(AIMS) as f:
        aims = json.load(f)
    name = os.path.basename(model)[: -len(".onnx")]
    return aims["fixtures"].get(name, {}).get(precision, aims["default"][precision])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--stitchc", required=True)
    parser.add_argument("--stitch-run", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--target", choices=["host", "cuda"], default="host")
    parser.add_argument("--planner", default=None, help="stitchc's --planner (default: its own)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("--precision", choices=["fp32", "tf32", "fp16", "bf16"], default=None,
                        help="stitchc's --precision; fp16 and bf16 are checked by relative L2")
    parser.add_argument("--max-rel-l2", type=float, default=None,
                        help="with --precision fp16|bf16: the aim instead of precision_aims.json")
    parser.add_argument("--require-gemm-chains", action="store_true",
                        help="fail unless the plan holds gemm_chain groups, each with its "
                             "unfused plan (the report's fallbacks)")
    parser.add_argument("--require-cooperative", action="store_true",
                        help="fail unless the plan holds a cooperative (grid-barrier) group")
    parser.add_argument("--library", default=None,
                        help="run this library (built earlier with the same flags) instead of compiling")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=MIN..MAX[@T]",
                        help="compile the dim NAME symbolic over this range (stitchc --dim; "
                             "repeatable); default: the ranges of inputs.json, if it gives any")
    parser.add_argument("--shapes", default=None,
                        help="with symbolic dims: the shapes to compare at, "
                             "'batch=1,seq=1;batch=3,seq=12' (default: every dim at its minimum, "
                             "example and maximum)")
    parser.add_argument("--shape-context", action="store_true",
                        help="with symbolic dims: at each shape, also run in a context created "
                             "for that shape alone and require bitwise the same outputs "
                             "(stitch-run --shape-context)")
    parser.add_argument("--uncompared", action="append", default=[], metavar="OUTPUT",
                        help="an output run but not compared (repeatable): a MaxPool's Indices "
                             "in fp16, where rounding makes ties float32 does not have")
    parser.add_argument("--unfused-too", action="store_true",
                        help="also compile one kernel per op (--planner none), compare it with "
                             "ORT, and at each shape compare the two libraries' outputs")
    args = parser.parse_args()
    reduced = args.precision in ("fp16", "bf16")
    if args.unfused_too and (args.library or args.planner or args.target != "host"):
        sys.exit("--unfused-too compiles both plans for the host target: no --library, no "
                 "--planner")

    spec_path = args.model[: -len(".onnx")] + ".inputs.json"
    with open(spec_path) as f:
        spec = json.load(f)
    ranges = symbolic_ranges(args, spec)
    if args.shapes and not ranges:
        sys.exit("--shapes needs symbolic dims: --dim NAME=MIN..MAX, or ranges in inputs.json")
    if args.shape_context and not ranges:
        sys.exit("--shape-context needs symbolic dims: --dim NAME=MIN..MAX, or ranges in "
                 "inputs.json")
    shapes = (parse_shapes(args.shapes, ranges) if args.shapes else default_shapes(ranges)
              ) if ranges else [None]
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)

    # Symbolic dims are ranged (--dim) or bound (--input-shape) on the command line, as a user
    # would.
    stitchc = [args.stitchc, args.model, "--target", args.target,
               "-o", os.path.join(args.work, "libmodel.so")]
    if args.planner:
        stitchc += ["--planner", args.planner]
    if args.precision:
        stitchc += ["--precision", args.precision]
    stitchc += dim_args(ranges) + input_shape_args(spec, ranges)
    report = os.path.join(args.work, "report.json")
    if args.require_gemm_chains or args.require_cooperative:
        stitchc += ["--report", report]
    library = os.path.join(args.work, "libmodel.so")
    if args.library:
        library = os.path.abspath(args.library)
    else:
        run(stitchc, "stitchc")
        if args.require_cooperative:
            with open(report) as f:
                plan = json.load(f)["plan"]
            if not any(g.get("cooperative") for g in plan["groups"]):
                sys.exit("FAIL: the plan holds no cooperative (grid-barrier) group")
        if args.require_gemm_chains:
            with open(report) as f:
                plan = json.load(f)["plan"]
            chains = [g["id"] for g in plan["groups"] if g["kind"] == "gemm_chain"]
            fallbacks = [f["chain_group"] for f in plan["fallbacks"]]
            if not chains or fallbacks != chains:
                sys.exit(f"FAIL: the plan's gemm_chain groups {chains} and the chains with an "
                         f"unfused plan {fallbacks}: expected the same, at least one")
        if args.target == "cuda":
            return
    unfused = os.path.join(args.work, "libunfused.so")
    if args.unfused_too:
        run([unfused if arg == library else arg for arg in stitchc] + ["--planner", "none"],
            "stitchc --planner none")

    rng = np.random.default_rng(args.seed)
    session = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    base = [args.stitch_run, library]
    if reduced:
        aim = args.max_rel_l2 if args.max_rel_l2 is not None else precision_aim(args.model,
                                                                                args.precision)
        base += ["--max-rel-l2", str(aim)]
    else:
        base += ["--rtol", str(args.rtol), "--atol", str(args.atol)]
    results = []
    for k, shape in enumerate(shapes):
        # A fixed-shape library is compared once, in the work folder itself, as before.
        work = args.work if shape is None else os.path.join(args.work, f"shape_{k}")
        os.makedirs(work, exist_ok=True)
        if shape is not None:
            print(f"=== shape {describe_shape(shape)} ===", flush=True)
        sizes = None if shape is None else {**spec["dims"], **shape}
        feed = make_inputs(spec, rng, sizes)
        outputs = session.run(names, feed)
        command = list(base)
        if args.shape_context and shape is not None:
            command.append("--shape-context")
        for name, value in feed.items():
            path = os.path.join(work, f"input_{len(command)}.npy")
            np.save(path, value)
            command += ["--input", f"{name}={path}"]
        for i, (name, value) in enumerate(zip(names, outputs)):
            if name in args.uncompared:
                continue
            path = os.path.join(work, f"expected_{i}.npy")
            np.save(path, value)
            command += ["--expected", f"{name}={path}"]
        if not args.unfused_too:
            results.append(run(command, "stitch-run", exit_on_failure=shape is None))
            continue
        # Each plan against ORT, writing its outputs; then the unfused outputs against the fused.
        passed = True
        for lib, folder in ((library, "fused"), (unfused, "unfused")):
            print(f"--- the {folder} plan against ONNX Runtime ---", flush=True)
            own = [lib if c == library else c for c in command]
            own += ["--output-dir", os.path.join(work, folder)]
            passed = run(own, "stitch-run", exit_on_failure=False) and passed
        between = [args.stitch_run, unfused] + (
            ["--max-rel-l2", str(aim)] if reduced
            else ["--rtol", str(args.rtol), "--atol", str(args.atol)])
        for flag, value in zip(command, command[1:]):
            if flag == "--input":
                between += ["--input", value]
        for name in (n for n in names if n not in args.uncompared):
            between += ["--expected", f"{name}={os.path.join(work, 'fused', name + '.npy')}"]
        print("--- the unfused plan against the fused one ---", flush=True)
        passed = run(between, "stitch-run", exit_on_failure=False) and passed
        if not passed and shape is None:
            sys.exit(1)
        results.append(passed)
    if shapes != [None]:
        for shape, passed in zip(shapes, results):
            print(f"shape {describe_shape(shape)}: {'PASS' if passed else 'FAIL'}", flush=True)
        if not all(results):
            sys.exit(f"FAIL: {results.count(False)} of {len(results)} shapes mismatch")
        print(f"PASS: all {len(results)} shapes match", flush=True)


if __name__ == "__main__":
    main()
