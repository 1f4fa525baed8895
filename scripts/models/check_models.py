#!/usr/bin/env python3
"""Checks the real-model fixtures in tests/models/ without torch: each <name>.onnx passes
onnx.checker (full check) and runs in onnxruntime on random inputs made from its
<name>.inputs.json; with --stitchc, stitchc's frontend and graph passes load it too (no code
generation), with --input-shape for the symbolic dims. Prints one line per fixture and a
table of the ops each uses.

The fixtures with symbolic dims (tests/models/dynamic/, whose inputs.json gives each dim a
range) run at several sizes (dim_points: each dim's minimum, example, a size between and
maximum), with masks of ones and with padded masks; onnxruntime's outputs must be finite and
of the declared shapes, and equal the fixed-shape fixture of the same name (tests/models/) at
its shape. With --torch (run by the export venv) they must also match the torch model, rebuilt
by export_models.py, within 1e-4 of the largest output.

usage: .venv/bin/python scripts/models/check_models.py [--stitchc build/stitchc] [MODEL_DIR ...]
       .venv-models/bin/python scripts/models/check_models.py --torch tests/models/dynamic
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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def dim_sizes(spec):
    """The size to bind each symbolic dim to: inputs.json's value for it, or its example where
    it gives a range ({"min", "max", "example"}, the fixtures in dynamic/)."""
    return {d: v["example"] if isinstance(v, dict) else v for d, v in spec["dims"].items()}


# A size between each range's ends that is neither 1 nor the example: dim_points' third point.
BETWEEN = {"batch": 2, "seq": 37}


def dim_points(ranges):
    """The sizes a fixture with symbolic dims is checked at ({dim: size} each): every dim at its
    minimum, at its example, at BETWEEN (clamped to the range) and at its maximum."""
    points = []
    for pick in ("min", "example", "between", "max"):
        point = {d: min(max(BETWEEN.get(d, r["example"]), r["min"]), r["max"])
                 if pick == "between" else r[pick] for d, r in ranges.items()}
        if point not in points:
            points.append(point)
    return points


def random_feed(spec, rng, dims=None):
    """Fresh random inputs as the fixture's inputs.json describes them, its symbolic dims bound
    to dims (default: dim_sizes)."""
    dims = dims or dim_sizes(spec)
    feed = {}
    for inp in spec["inputs"]:
        shape = [dims[d] if isinstance(d, str) else d for d in inp["shape"]]
        if inp["fill"] == "normal":
            feed[inp["name"]] = rng.standard_normal(shape).astype(inp["dtype"])
        elif inp["fill"] == "randint":
            feed[inp["name"]] = rng.integers(inp["low"], inp["high"], shape).astype(inp["dtype"])
        elif inp["fill"] == "ones":
            feed[inp["name"]] = np.ones(shape, inp["dtype"])
        else:
            raise ValueError(f"unknown fill '{inp['fill']}' for input {inp['name']}")
    return feed


def pad_masks(feed, inputs, rng):
    """feed with each 0/1 mask ("fill": "ones") given a random padded tail on every row (at
    least one position kept), as compare_with_ort.py's inputs have."""
    for inp in inputs:
        if inp["fill"] != "ones":
            continue
        rows = feed[inp["name"]].reshape(-1, feed[inp["name"]].shape[-1])
        for row in rows:
            row[rng.integers(1, rows.shape[-1] + 1):] = 0
    return feed


def run_stitchc(stitchc, path, spec, session, outputs, sizes=None):
    """Runs the frontend and passes, the symbolic dims bound to sizes (default: dim_sizes) with
    --input-shape; returns 'loaded ...' when the graph's outputs have the shapes and dtypes
    onnxruntime gave, else what went wrong."""
    sizes = sizes or dim_sizes(spec)
    args = [stitchc, path]
    for inp in spec["inputs"]:
        if any(isinstance(d, str) for d in inp["shape"]):
            dims = [str(sizes[d]) if isinstance(d, str) else str(d) for d in inp["shape"]]
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


def shapes_as_declared(session, sizes, got):
    """Whether the outputs' shapes `got` are the ones the model declares, its symbolic dims
    bound to sizes. A declared dim named after no symbol is computed from them (a decode step's
    `total` = past + seq): any size, the same wherever that name appears."""
    computed = {}
    declared = [o.shape for o in session.get_outputs()]
    if len(got) != len(declared):
        return False
    for shape, want in zip(got, declared):
        if len(shape) != len(want):
            return False
        for n, d in zip(shape, want):
            if isinstance(d, str) and d not in sizes:
                if computed.setdefault(d, n) != n:
                    return False
            elif n != (sizes[d] if isinstance(d, str) else d):
                return False
    return True


def rel_error(got, want):
    """The largest difference over all outputs, relative to the largest magnitude in want."""
    scale = max(float(np.max(np.abs(w))) for w in want) + 1e-6
    return max(float(np.max(np.abs(g - w))) for g, w in zip(got, want, strict=True)) / scale


def check_dynamic(path, spec, session, rng, stitchc, torch_model):
    """A fixture with symbolic dims (dynamic/): at each of dim_points, with masks of ones and
    with padded masks, onnxruntime's outputs are finite and have the declared shapes (with
    torch_model, they match it within 1e-4 of the largest output; with stitchc, its frontend
    loads the fixture bound to those sizes); and at the shape of the fixture of the same name in
    the folder above (same model and weights, fixed dims) both give the same outputs. Returns
    (failures, what to print)."""
    failures, notes = 0, []
    worst = 0.0
    for sizes in dim_points(spec["dims"]):
        for padded in (False, True):
            feed = random_feed(spec, rng, sizes)
            if padded:
                feed = pad_masks(feed, spec["inputs"], rng)
            outputs = session.run(None, feed)
            point = ",".join(f"{d}={n}" for d, n in sizes.items()) + (" padded" if padded else "")
            if not all(np.isfinite(o).all() for o in outputs):
                failures += 1
                notes.append(f"NON-FINITE at {point}")
            if not shapes_as_declared(session, sizes, [list(o.shape) for o in outputs]):
                failures += 1
                notes.append(f"output shapes {[o.shape for o in outputs]} at {point}")
            if torch_model is not None:
                import torch
                with torch.no_grad():
                    want = torch_model(*(torch.from_numpy(feed[i["name"]])
                                         for i in spec["inputs"]))
                want = [want] if isinstance(want, torch.Tensor) else list(want)
                err = rel_error(outputs, [w.numpy() for w in want])
                worst = max(worst, err)
                if err > 1e-4:
                    failures += 1
                    notes.append(f"torch differs by {err:.1e} at {point}")
        if stitchc:
            result = run_stitchc(stitchc, path, spec, session, outputs, sizes)
            failures += not result.startswith("loaded")
            notes.append(f"stitchc at {point.removesuffix(' padded')}: {result}")
    points = "; ".join(",".join(f"{d}={n}" for d, n in p.items()) for p in dim_points(spec["dims"]))
    torch_note = f", torch within {worst:.1e}" if torch_model is not None else ""
    notes.insert(0, f"onnxruntime at {points}{torch_note}")
    static = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(path))),
                          os.path.basename(path))
    if os.path.exists(static):
        with open(static[: -len(".onnx")] + ".inputs.json") as f:
            static_spec = json.load(f)
        feed = random_feed(static_spec, rng)
        want = ort.InferenceSession(static, providers=["CPUExecutionProvider"]).run(None, feed)
        err = rel_error(session.run(None, feed), want)
        failures += err > 1e-5
        notes.append(f"../{os.path.basename(static)} at its shape: {err:.1e}")
    return failures, "; ".join(notes)


def torch_model_for(spec):
    """The torch model of a fixture, as export_models.py builds it (needs the export venv); None
    for a fixture written with onnx.helper (scripts/models/make_dynamic_ffn.py), which has none."""
    if spec.get("exporter", "").startswith("onnx.helper"):
        return None
    import export_models
    return export_models.build(spec["model"])[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", nargs="*", default=[DEFAULT_DIR],
                        help="folders of fixtures (default tests/models; tests/models/dynamic "
                             "holds the fixtures with symbolic dims)")
    parser.add_argument("--stitchc", help="the stitchc binary; omit to skip the frontend check")
    parser.add_argument("--torch", action="store_true",
                        help="compare fixtures with symbolic dims with the torch model "
                             "(needs the export venv, .venv-models)")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    failures = 0
    paths = [p for d in args.model_dir for p in sorted(glob.glob(os.path.join(d, "*.onnx")))]
    for path in paths:
        name = os.path.basename(path)[: -len(".onnx")]
        with open(os.path.join(os.path.dirname(path), f"{name}.inputs.json")) as f:
            spec = json.load(f)
        if any(isinstance(v, dict) for v in spec["dims"].values()):
            model = onnx.load(path)
            onnx.checker.check_model(model, full_check=True)
            session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            torch_model = torch_model_for(spec) if args.torch else None
            n, notes = check_dynamic(path, spec, session, rng, args.stitchc, torch_model)
            failures += n
            print(f"{name}: {os.path.getsize(path) / 1024:.0f} KiB, opset {spec['opset']}, "
                  f"{len(model.graph.node)} nodes, {'ok' if n == 0 else 'FAILED'}: {notes}",
                  flush=True)
            print(f"    {', '.join(f'{op} {k}' for op, k in spec['ops'].items())}")
            continue
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
