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

usage: compare_with_ort.py --stitchc STITCHC --stitch-run STITCH_RUN --work DIR
                           [--target host|cuda] [--seed N] [--rtol R] [--atol A]
                           [--precision P [--max-rel-l2 X]] [--library LIB] MODEL.onnx
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


def make_inputs(spec, rng):
    """Random inputs as the fixture's inputs.json describes them (check_models.random_feed),
    except that a 0/1 mask ("fill": "ones") gets a random padded tail on each row."""
    feed = random_feed(spec, rng)
    for inp in spec["inputs"]:
        if inp["fill"] != "ones":
            continue
        mask = feed[inp["name"]]
        rows = mask.reshape(-1, mask.shape[-1])
        for row in rows:
            row[rng.integers(1, mask.shape[-1] + 1):] = 0
        feed[inp["name"]] = rows.reshape(mask.shape)
    return feed


def input_shape_args(spec):
    """stitchc's --input-shape arguments binding the fixture's symbolic dims, as a user would."""
    args = []
    for inp in spec["inputs"]:
        if any(isinstance(d, str) for d in inp["shape"]):
            shape = [spec["dims"][d] if isinstance(d, str) else d for d in inp["shape"]]
            args += ["--input-shape", inp["name"] + "=" + "x".join(map(str, shape))]
    return args


AIMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "models",
                    "precision_aims.json")


def run(argv, what):
    print("+", " ".join(argv), flush=True)
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(result.stdout, end="", flush=True)
    if result.returncode != 0:
        print(f"{what} failed with exit code {result.returncode}", flush=True)
        sys.exit(1)


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
    args = parser.parse_args()
    reduced = args.precision in ("fp16", "bf16")

    spec_path = args.model[: -len(".onnx")] + ".inputs.json"
    with open(spec_path) as f:
        spec = json.load(f)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)

    # Symbolic dims are bound on the command line, as a user would.
    stitchc = [args.stitchc, args.model, "--target", args.target,
               "-o", os.path.join(args.work, "libmodel.so")]
    if args.planner:
        stitchc += ["--planner", args.planner]
    if args.precision:
        stitchc += ["--precision", args.precision]
    stitchc += input_shape_args(spec)
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

    rng = np.random.default_rng(args.seed)
    feed = make_inputs(spec, rng)
    session = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    outputs = session.run(names, feed)

    command = [args.stitch_run, library]
    if reduced:
        aim = args.max_rel_l2 if args.max_rel_l2 is not None else precision_aim(args.model,
                                                                                args.precision)
        command += ["--max-rel-l2", str(aim)]
    else:
        command += ["--rtol", str(args.rtol), "--atol", str(args.atol)]
    for name, value in feed.items():
        path = os.path.join(args.work, f"input_{len(command)}.npy")
        np.save(path, value)
        command += ["--input", f"{name}={path}"]
    for k, (name, value) in enumerate(zip(names, outputs)):
        path = os.path.join(args.work, f"expected_{k}.npy")
        np.save(path, value)
        command += ["--expected", f"{name}={path}"]
    run(command, "stitch-run")


if __name__ == "__main__":
    main()
