#!/usr/bin/env python3
"""Compiles the native float16/bfloat16 fixtures in tests/models/half/ with stitchc for the host
target (or takes them from --library-dir DIR, <fixture>.so, built earlier for any target) and
compares each library's outputs, on the fixture's stored inputs, with torch's 16-bit
outputs (<name>.expected/, element-wise within --rtol/--atol) and with the float32 model's
(<name>.fp32/, relative L2 within --max-rel-l2). stitch-run does the comparing (a 16-bit output
against a float32 file is compared as double); this script prints its error measures as one
Markdown table row per output. Needs no packages beyond Python's own.

usage: check_half_models.py --stitchc STITCHC --stitch-run STITCH_RUN --work DIR
                            [--planner P] [--rtol R] [--atol A] [--max-rel-l2 X]
                            [--library-dir DIR] [FIXTURE.onnx ...]
Exit status: 0 when every fixture compiles and every output passes both checks, 1 otherwise.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

DEFAULT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                           "models", "half")
# stitch-run's line for one compared output.
MEASURES = re.compile(r"vs (\S+): max abs err (\S+), max rel err (\S+), rel L2 err ([^ ,;]+)"
                      r"(?:.*?(\d+) of (\d+) elements mismatch)?")


def run(argv):
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return result.returncode, result.stdout


def compare(args, library, spec, folder, files, tolerance):
    """stitch-run on the fixture's inputs against `files`; (passed, {output: measures}, log)."""
    command = [args.stitch_run, library]
    for inp in spec["inputs"]:
        command += ["--input", f"{inp['name']}={os.path.join(folder, inp['file'])}"]
    for name, path in files.items():
        command += ["--expected", f"{name}={os.path.join(folder, path)}"]
    code, log = run(command + tolerance)
    measures = {}
    for m in MEASURES.finditer(log):
        name = next(n for n, p in files.items() if m.group(1).endswith(p))
        measures[name] = m.groups()[1:]
    return code == 0, measures, " ".join(command + tolerance) + "\n" + log


def check(args, model):
    """The table rows for one fixture, and whether it passed."""
    folder = os.path.dirname(os.path.abspath(model))
    name = os.path.basename(model)[: -len(".onnx")]
    with open(os.path.join(folder, f"{name}.inputs.json")) as f:
        spec = json.load(f)
    library = os.path.join(args.work, f"{name}.so")
    command = [args.stitchc, model, "--target", "host", "-q", "-o", library]
    if args.planner:
        command += ["--planner", args.planner]
    if args.library_dir:
        library = os.path.join(os.path.abspath(args.library_dir), f"{name}.so")
        code, log = (0, "") if os.path.exists(library) else (1, f"{library}: no such library")
    else:
        code, log = run(command)
    if code != 0:
        print(" ".join(command) + "\n" + log, file=sys.stderr)
        message = log.strip().splitlines()[-1] if log.strip() else f"exit status {code}"
        return [f"| `{name}` | stitchc refuses: {message.split('.onnx: ')[-1]} |"], False
    half_ok, half, half_log = compare(args, library, spec, folder, spec["expected"],
                                      ["--rtol", str(args.rtol), "--atol", str(args.atol)])
    full_ok, full, full_log = compare(args, library, spec, folder, spec["expected_fp32"],
                                      ["--max-rel-l2", str(args.max_rel_l2)])
    if not (half_ok and full_ok):
        print(half_log + full_log, file=sys.stderr)
    rows = []
    for output in spec["outputs"]:
        h = half.get(output, ("?",) * 5)
        w = full.get(output, ("?",) * 5)
        mismatches = f"{h[3]}/{h[4]}" if h[3] is not None and h[4] is not None else "?"
        rows.append(f"| `{name}` | {output} | {fmt(h[0])} | {fmt(h[1])} | {fmt(h[2])} | "
                    f"{mismatches} | {fmt(w[0])} | {fmt(w[1])} | {fmt(w[2])} |")
    return rows, half_ok and full_ok


def fmt(text):
    try:
        return f"{float(text):.3g}"
    except (TypeError, ValueError):
        return str(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="fixtures (default: all in tests/models/half)")
    parser.add_argument("--stitchc", required=True)
    parser.add_argument("--stitch-run", required=True)
    parser.add_argument("--work", required=True, help="folder for the compiled libraries")
    parser.add_argument("--planner", default=None, help="stitchc's --planner (default: its own)")
    parser.add_argument("--rtol", type=float, default=1e-2)
    parser.add_argument("--atol", type=float, default=1e-2)
    parser.add_argument("--max-rel-l2", type=float, default=1e-2)
    parser.add_argument("--library-dir", default=None,
                        help="take <fixture>.so from here (built earlier) instead of compiling")
    args = parser.parse_args()
    models = args.models or sorted(glob.glob(os.path.join(DEFAULT_DIR, "*.onnx")))
    os.makedirs(args.work, exist_ok=True)
    print(f"| fixture | output | vs torch: max abs | max rel | rel L2 | "
          f"mismatches (rtol {args.rtol:g}, atol {args.atol:g}) | "
          f"vs float32: max abs | max rel | rel L2 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    failed = []
    for model in models:
        rows, passed = check(args, model)
        print("\n".join(rows), flush=True)
        if not passed:
            failed.append(os.path.basename(model))
    if failed:
        print(f"failed: {' '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
