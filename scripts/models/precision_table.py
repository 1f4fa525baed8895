#!/usr/bin/env python3
"""Measures the relative L2 error of every real-model fixture built with stitchc --precision
fp16 and bf16 (host target) against ONNX Runtime's float32 outputs, and prints the Markdown
table docs/precision.md keeps, with each fixture's aim from tests/models/precision_aims.json.

Each build is compare_with_ort.py --precision P --max-rel-l2 1e30 (report only, same inputs as
the ctest models/<name>/host-<P>); the errors are read from stitch-run's "rel L2 err" lines.

usage: precision_table.py --stitchc STITCHC --stitch-run STITCH_RUN --work DIR
                          [--precision fp16 --precision bf16] [MODEL.onnx ...]
(default: every tests/models/*.onnx). Exit status 0 when every build ran, 1 otherwise.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare_with_ort import precision_aim  # noqa: E402

LINE = re.compile(r"^  output (\S+): .*\n    vs [^:]*: .*rel L2 err (\S+)", re.M)


def measure(args, model, precision):
    name = os.path.basename(model)[: -len(".onnx")]
    work = os.path.join(args.work, name, precision)
    command = [sys.executable, os.path.join(HERE, "compare_with_ort.py"), "--stitchc",
               args.stitchc, "--stitch-run", args.stitch_run, "--target", "host",
               "--precision", precision, "--max-rel-l2", "1e30", "--work", work, model]
    start = time.monotonic()
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.monotonic() - start
    errors = [(out, float(err.rstrip(","))) for out, err in LINE.findall(result.stdout)]
    if result.returncode != 0 or not errors:
        tail = result.stdout.strip().splitlines()[-1:] or ["no output"]
        return name, None, "failed: " + tail[0], seconds
    return name, errors, None, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*")
    parser.add_argument("--stitchc", required=True)
    parser.add_argument("--stitch-run", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--precision", action="append", choices=["fp16", "bf16"])
    args = parser.parse_args()
    models = args.models or sorted(glob.glob(os.path.join(HERE, "..", "..", "tests", "models",
                                                          "*.onnx")))
    precisions = args.precision or ["fp16", "bf16"]
    ok = True
    start = time.monotonic()
    # docs/precision.md's table: one row per fixture output, each precision's error and aim.
    header = ["fixture", "output"] + [f"{p} {c}" for p in precisions for c in ("rel L2", "aim")]
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for model in models:
        rows = {}  # output -> cells, in the order of the precisions
        problems = []
        name = os.path.basename(model)[: -len(".onnx")]
        for precision in precisions:
            name, errors, problem, _ = measure(args, model, precision)
            aim = precision_aim(model, precision)
            if problem:
                ok = False
                problems.append(f"{precision}: {problem}")
                continue
            for output, error in errors:
                mark = "" if error <= aim else " (over)"
                ok = ok and not mark
                rows.setdefault(output, {})[precision] = [f"{error:.2e}{mark}", f"{aim:g}"]
        for output, cells in rows.items():
            values = [v for p in precisions for v in cells.get(p, ["-", "-"])]
            print(f"| `{name}` | `{output}` | " + " | ".join(values) + " |")
        for problem in problems:
            print(f"| `{name}` | | {problem} |")
        sys.stdout.flush()
    print(f"\n{time.monotonic() - start:.0f} s", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
