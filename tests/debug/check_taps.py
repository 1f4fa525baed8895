#!/usr/bin/env python3
"""The debugging workflow of stitchc on one real model, end to end on the host target:

1. `stitchc --debug-taps` builds the model; `stitch-run --taps-onnx` compares every group's
   tensors with ONNX Runtime's on the fixture's random inputs: all must match.
2. For each of a few groups (a fused kernel, a library call where the model has one), a build
   with `--test-plant-wrong-group K` (group K's output made wrong on purpose): stitch-run must
   fail and name group K as the first diverging group.
3. `--no-fuse NODE` on a node of a fused group: the node is alone in its group, and the taps
   of that build match ONNX Runtime again.

usage: check_taps.py --stitchc STITCHC --stitch-run STITCH_RUN --work DIR MODEL.onnx
Exit status 0 when every check holds; otherwise 1 with what went wrong.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "models"))
from compare_with_ort import input_shape_args, make_inputs  # noqa: E402  (the fixtures' recipe)


class CheckFailed(Exception):
    pass


def run(argv, expect_rc):
    print("+", " ".join(argv), flush=True)
    result = subprocess.run(argv, capture_output=True, text=True)
    print(result.stdout, end="", flush=True)
    print(result.stderr, end="", flush=True)
    if result.returncode != expect_rc:
        raise CheckFailed(f"{os.path.basename(argv[0])} exited with {result.returncode}, "
                          f"expected {expect_rc}")
    return result.stdout


class Model:
    def __init__(self, args):
        self.args = args
        self.path = os.path.abspath(args.model)
        with open(self.path[: -len(".onnx")] + ".inputs.json") as f:
            self.spec = json.load(f)
        onnx_model = onnx.load(self.path)
        self.onnx_tensors = {name for node in onnx_model.graph.node for name in node.output}
        self.shape_args = input_shape_args(self.spec)
        feed = make_inputs(self.spec, np.random.default_rng(args.seed))
        self.input_args = []
        for name, value in feed.items():
            path = os.path.join(args.work, f"input_{len(self.input_args) // 2}.npy")
            np.save(path, value)
            self.input_args += ["--input", f"{name}={path}"]

    def build(self, tag, extra):
        """Compiles with --debug-taps (and `extra`); returns (library, report)."""
        folder = os.path.join(self.args.work, tag)
        os.makedirs(folder, exist_ok=True)
        library = os.path.join(folder, "libmodel.so")
        report = os.path.join(folder, "plan.json")
        run([self.args.stitchc, self.path, "--target", "host", "--debug-taps", "-o", library,
             "--report", report] + self.shape_args + extra, 0)
        with open(report) as f:
            return library, json.load(f)

    def run_taps(self, library, expect_rc):
        return run([self.args.stitch_run, library, "--taps-onnx", self.path,
                    "--python", sys.executable, "--rtol", str(self.args.rtol),
                    "--atol", str(self.args.atol)] + self.input_args, expect_rc)


def tensor_dtypes(report):
    """dtype of every tensor the report's graph names."""
    dtypes = {}

    def visit(value):
        if isinstance(value, dict):
            if isinstance(value.get("name"), str) and isinstance(value.get("dtype"), str):
                dtypes[value["name"]] = value["dtype"]
            for item in value.values():
                visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)

    visit({k: v for k, v in report.items() if k != "plan"})
    return dtypes


def plantable(group, dtypes, onnx_tensors):
    """True when the group's first float32 output (the one a planted error changes) is a
    tensor ONNX Runtime can give a value for."""
    for name in group["outputs"]:
        if dtypes.get(name) == "float32":
            return name in onnx_tensors
    return False


def pick_groups(report, onnx_tensors):
    """A fused kernel group from the middle of the plan, and the middle library call."""
    dtypes = tensor_dtypes(report)
    groups = [g for g in report["plan"]["groups"]
              if g["kind"] != "alias" and plantable(g, dtypes, onnx_tensors)]
    fused = [g for g in groups if g["kind"] == "kernel" and len(g["nodes"]) >= 2]
    library = [g for g in groups if g["kind"] in ("cublaslt", "cudnn")]
    picked = []
    if fused:
        picked.append(fused[len(fused) // 2])
    if library:
        picked.append(library[len(library) // 2])
    if not fused:
        raise CheckFailed("no fused kernel group with a float32 ONNX tensor to plant an error in")
    return picked


def check_all_taps_match(output):
    match = re.search(r"taps: all (\d+) compared taps match ONNX Runtime", output)
    if not match or int(match.group(1)) == 0:
        raise CheckFailed("stitch-run did not report every tap matching ONNX Runtime")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--stitchc", required=True)
    parser.add_argument("--stitch-run", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--atol", type=float, default=1e-4)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    model = Model(args)
    try:
        library, report = model.build("taps", [])
        check_all_taps_match(model.run_taps(library, 0))

        picked = pick_groups(report, model.onnx_tensors)
        for group in picked:
            gid = group["id"]
            planted, _ = model.build(f"planted_{gid}", ["--test-plant-wrong-group", str(gid)])
            output = model.run_taps(planted, 1)
            match = re.search(r"first diverging group: (\d+) \(group_\d+\.cu\)", output)
            if not match or int(match.group(1)) != gid:
                raise CheckFailed(f"planted a wrong kernel in group {gid} ({group['kind']}); "
                                  f"stitch-run named {match.group(1) if match else 'no group'}")
            print(f"check: a wrong group {gid} ({group['kind']}, {len(group['nodes'])} nodes) "
                  f"is named by stitch-run", flush=True)

        node = picked[0]["nodes"][0]["name"]  # picked[0] is the fused kernel group
        unfused, unfused_report = model.build("no_fuse", ["--no-fuse", node])
        holding = [g for g in unfused_report["plan"]["groups"]
                   if any(n["name"] == node for n in g["nodes"])]
        if len(holding) != 1 or len(holding[0]["nodes"]) != 1:
            raise CheckFailed(f"--no-fuse {node}: the node is not alone in its group")
        check_all_taps_match(model.run_taps(unfused, 0))
        print(f"check: --no-fuse {node} keeps it alone, and the build still matches", flush=True)
    except CheckFailed as failure:
        print(f"FAIL: {failure}", flush=True)
        return 1
    print("PASS", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
