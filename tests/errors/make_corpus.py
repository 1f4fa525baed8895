#!/usr/bin/env python3
"""Writes stitchc's error corpus: models stitchc must reject, each with the message it must print.

Every case is one function in cases_*.py whose docstring says what the case proves. It becomes
cases/NAME/ holding model.onnx (plus any data files the case needs), expected.txt (one line
that stitchc's error must contain) and, when the case needs flags, args.txt (one argument a
line). check_error.cmake runs each case under ctest.

    .venv/bin/python tests/errors/make_corpus.py           # rewrite cases/ from scratch
    .venv/bin/python tests/errors/make_corpus.py --check   # exit 1 if cases/ is stale

The output is deterministic: the same script writes the same bytes. Keep files tiny; they
are committed.
"""

import argparse
import filecmp
import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # keep __pycache__ out of tests/errors

import onnx  # noqa: E402

import cases_graph  # noqa: E402,F401  (registers cases)
import cases_nodes  # noqa: E402,F401
import cases_codegen  # noqa: E402,F401
import cases_tensors  # noqa: E402,F401
import cases_limits  # noqa: E402,F401
from corpus_lib import CASES, OUTSIDE_FILE, W_BYTES, serialize, write  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CASES_DIR = os.path.join(HERE, "cases")


# ---- the writer ------------------------------------------------------------------------

def write_corpus(root):
    os.makedirs(root)
    write(root, OUTSIDE_FILE, W_BYTES)
    names = set()
    for name, fn, expected, args in CASES:
        assert name not in names, name
        names.add(name)
        folder = os.path.join(root, name)
        os.makedirs(folder)
        result = fn(folder)
        if isinstance(result, onnx.ModelProto):
            result = serialize(result)
        if result is not None:
            write(folder, "model.onnx", result)
        write(folder, "expected.txt", (expected + "\n").encode())
        if args:
            assert all(a and "\n" not in a and ";" not in a for a in args), name
            write(folder, "args.txt", ("\n".join(args) + "\n").encode())


def same_tree(a, b):
    """True when folders a and b hold the same names, file bytes and symlink targets."""
    names_a, names_b = sorted(os.listdir(a)), sorted(os.listdir(b))
    if names_a != names_b:
        print(f"{a}: {names_a} != {names_b}", file=sys.stderr)
        return False
    for name in names_a:
        pa, pb = os.path.join(a, name), os.path.join(b, name)
        if os.path.islink(pa) or os.path.islink(pb):
            if not (os.path.islink(pa) and os.path.islink(pb) and
                    os.readlink(pa) == os.readlink(pb)):
                print(f"{pa}: symlink differs", file=sys.stderr)
                return False
        elif os.path.isdir(pa) or os.path.isdir(pb):
            if not (os.path.isdir(pa) and os.path.isdir(pb) and same_tree(pa, pb)):
                return False
        elif not filecmp.cmp(pa, pb, shallow=False):
            print(f"{pa}: contents differ", file=sys.stderr)
            return False
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare cases/ with a fresh generation instead of rewriting it")
    options = parser.parse_args()
    if options.check:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = os.path.join(tmp, "cases")
            write_corpus(fresh)
            if not os.path.isdir(CASES_DIR) or not same_tree(CASES_DIR, fresh):
                print("tests/errors/cases is stale: run tests/errors/make_corpus.py",
                      file=sys.stderr)
                return 1
        return 0
    if os.path.lexists(CASES_DIR):
        shutil.rmtree(CASES_DIR)
    write_corpus(CASES_DIR)
    print(f"wrote {len(CASES)} cases to {CASES_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
