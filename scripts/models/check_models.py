#!/usr/bin/env python3
"""Checks the real-model fixtures in tests/models/ without torch: each <name>.onnx passes
onnx.checker (full check) and runs in onnxruntime on random inputs made from its
<name>.inputs.json; with --stitchc, stitchc's frontend and graph passes load it too (no code
generation), with --input-shape for the symbolic dims. Prints one line per fixture and a
table of the ops each uses.

usage: .venv/bin/python scripts/models/check_models.py [--stitchc build/stitchc] [MODEL_DIR]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

DEFAULT_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "models")


def random_feed(spec, rng):
    """Fresh random inputs as the fixture's inputs.json describes them."""
    feed = {}
    for inp in spec["inputs"]:
        shape = [spec["dims"][d] if isinstance(d, str) else d for d in inp["shape"]]
        if inp["fill"] == "normal":
            feed[inp["name"]] = rng.standard_normal(shape).astype(inp["dtype"])
        elif inp["fill"] == "randint":
            feed[inp["name"]] = rng.integers(inp["low"], inp["high"], shape).astype(inp["dtype"])
        elif inp["fill"] == "ones":
            feed[inp["name"]] = np.ones(shape, inp["dtype"])
        else:
            raise ValueError(f"unknown fill '{inp['fill']}' for input {inp['name']}")
    return feed


def run_stitchc(stitchc, path, spec, session, outputs):
    """Runs the frontend and passes; returns 'loaded ...' when the graph's outputs have the
    shapes and dtypes onnxruntime gave, else what went wrong."""
    args = [stitchc, path]
    for inp in spec["inputs"]:
        if any(isinstance(d, str) for d in inp["shape"]):
            dims = [str(spec["dims"][d]) if isinstance(d, str) else str(d) for d in inp["shape"]]
            args += ["--input-shape", f"{inp['name']}={'x'.join(dims)}"]
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        result = subprocess.run(args + ["--report", report], capture_output=True, text=True)
        if result.returncode != 0:
            return f"rc={result.returncode}: {result.stderr.strip()}"
        with open(report) as f:
            graph = json.load(f)
    for meta, value, got in zip(session.get_outputs(), outputs, graph["outputs"], strict=True):
        want = {"name": meta.name, "dtype": str(value.dtype), "shape": list(value.shape)}
        if {k: got[k] for k in want} != want:
            return f"output {meta.name}: stitchc says {got}, onnxruntime {want}"
    return f"loaded ({len(graph['nodes'])} nodes after the passes)"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", nargs="?", default=DEFAULT_DIR)
    parser.add_argument("--stitchc", help="the stitchc binary; omit to skip the frontend check")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    failures = 0
    for path in sorted(glob.glob(os.path.join(args.model_dir, "*.onnx"))):
        name = os.path.basename(path)[: -len(".onnx")]
        with open(os.path.join(args.model_dir, f"{name}.inputs.json")) as f:
            spec = json.load(f)
        model = onnx.load(path)
        onnx.checker.check_model(model, full_check=True)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        outputs = session.run(None, random_feed(spec, rng))
        finite = all(np.isfinite(o).all() for o in outputs)
        failures += not finite
        line = (f"{name}: {os.path.getsize(path) / 1024:.0f} KiB, opset {spec['opset']}, "
                f"{len(model.graph.node)} nodes, onnxruntime {'ok' if finite else 'NON-FINITE'}")
        if args.stitchc:
            result = run_stitchc(args.stitchc, path, spec, session, outputs)
            failures += not result.startswith("loaded")
            line += f"; stitchc {result}"
        print(line, flush=True)
        ops = ", ".join(f"{op} {n}" for op, n in spec["ops"].items())
        print(f"    {ops}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
