#!/usr/bin/env python3
"""The precisions of the benchmark rows (run.sh --precisions): one table, read by run.sh (through
the command line below), bench_peers.py and summarize.py, so that a precision's stitchc flags,
check aim and peer settings are written once.

    fp32   stitchc as the model is; every peer in float32 with TF32 off (today's rows)
    tf32   stitchc --precision tf32; peers in float32 with TF32 on (optional row)
    fp16   stitchc --precision fp16; torch's module .half(), float inputs .half()
    bf16   stitchc --precision bf16; torch's module .to(torch.bfloat16), float inputs too

Every row is checked against PyTorch's float32 outputs (ref_<k>.npy of the export, TF32 off):
fp32 elementwise (rtol 1e-3, atol 1e-4), the others by relative L2 error (stitch-run
--max-rel-l2, the worst output) within the larger of
  - the row's aim: docs/precision.md's fixture aims (fp16 5e-3, bf16 3e-2, against ONNX
    Runtime's float32, 2 to 18 layers) doubled and rounded to 1e-2 and 4e-2 (the benchmark
    models have 12 layers, full-size widths, and their inputs and outputs rounded too, see
    --io-precision); tf32 rounds the operands of GEMMs and convolutions only (10 bits, as
    float16), so fp16's aim;
  - twice PyTorch's own error in that precision: export_bench_models.py runs the module in
    fp16 and bf16 (and tf32 on a GPU) too and records each output's relative L2 error against
    its float32 outputs in meta.json ("torch_rel_l2"). A model can be ill-conditioned in half
    precision whoever computes it: ResNet-50 with random weights (--quick, 64x64) is 6.4% off
    in torch's fp16 and 33% in bf16 (CPU), stitchc 5.0% and 29%, while BERT is 1e-3 and 7.5e-3
    for both. "Twice torch's" is what stitchc must hold on such a model.

--io-precision (run.sh; default reduced): `reduced` compiles with stitchc --io-precision reduced,
so the library takes and returns float16/bfloat16 tensors as the torch peers do; its float
inputs are the exported float32 inputs rounded to nearest even. `model` keeps the library's
inputs and outputs float32 (Casts fused into the first and last kernels). fp32 and tf32 rows
ignore it.

usage (run.sh's side):
    precisions.py stitchc-flags P IO        the stitchc flags of a row
    precisions.py check-flags P [MODEL_DIR] stitch-run's tolerance flags (with MODEL_DIR: the
                                            aim raised to twice torch's error in meta.json)
    precisions.py describe P                one line: what the row compares
    precisions.py inputs MODEL_DIR P IO DEST
        the inputs the row's library takes: MODEL_DIR/input_<k>.npy as they are, or (reduced
        io) rounded to float16 / bfloat16 (ml_dtypes' '<V2' .npy) in DEST; prints the folder
"""
import os
import sys

import numpy as np

# name -> what each side does. "aim": stitch-run --max-rel-l2 against PyTorch float32 (None:
# elementwise rtol/atol); "dtype": torch's module and float input dtype; "tf32": the peers'
# TF32 switches; "jax": jax_default_matmul_precision, or None where XLA is not run (see
# XLA_NOTE).
PRECISIONS = {
    "fp32": {"stitchc": [], "dtype": "float32", "tf32": False, "aim": None, "rtol": 1e-3,
             "atol": 1e-4, "jax": "highest", "reduced": None},
    "tf32": {"stitchc": ["--precision", "tf32"], "dtype": "float32", "tf32": True, "aim": 1e-2,
             "jax": "tensorfloat32", "reduced": None},
    "fp16": {"stitchc": ["--precision", "fp16"], "dtype": "float16", "tf32": False, "aim": 1e-2,
             "jax": None, "reduced": "float16"},
    "bf16": {"stitchc": ["--precision", "bf16"], "dtype": "bfloat16", "tf32": False, "aim": 4e-2,
             "jax": None, "reduced": "bfloat16"},
}
IO_PRECISIONS = ("reduced", "model")
XLA_NOTE = ("XLA runs float32 and tf32 rows only: onnx_interp evaluates the float32 ONNX graph, "
            "and running it in float16 would need a precision conversion of its own (BERT's "
            "attention mask is (1 - mask) * float32.min: float32.min is -inf in float16 and "
            "0 * -inf is NaN; stitchc's convert-precision keeps such index math float32)")


def row(p):
    if p not in PRECISIONS:
        raise SystemExit(f"precisions: unknown precision '{p}' (known: {', '.join(PRECISIONS)})")
    return PRECISIONS[p]


def stitchc_flags(p, io):
    r = row(p)
    flags = list(r["stitchc"])
    if r["reduced"] and io == "reduced":
        flags += ["--io-precision", "reduced"]
    return flags


def torch_error(p, model_dir):
    """PyTorch's own worst relative L2 error in precision p against its float32 outputs, as
    export_bench_models.py measured it (tf32 without a GPU: fp16's; None when not measured)."""
    import json
    if not model_dir:
        return None
    try:
        measured = json.load(open(os.path.join(model_dir, "meta.json"))).get("torch_rel_l2", {})
    except (OSError, ValueError):
        return None
    errs = measured.get(p)
    if errs is None and p == "tf32":
        # TF32 exists only on a GPU; an export without one measured fp16, whose 10-bit mantissa
        # TF32 shares (and rounds more values: every activation, not only GEMM operands).
        errs = measured.get("fp16")
    return max(errs) if errs else None


def aim(p, model_dir=None):
    """The relative L2 bound of a row (None: elementwise rtol/atol)."""
    r = row(p)
    if r["aim"] is None:
        return None
    t = torch_error(p, model_dir)
    return max(r["aim"], float(f"{2 * t:.2g}")) if t is not None else r["aim"]


def check_flags(p, model_dir=None):
    r = row(p)
    a = aim(p, model_dir)
    if a is None:
        return ["--rtol", str(r["rtol"]), "--atol", str(r["atol"])]
    return ["--max-rel-l2", f"{a:g}"]


def describe(p, io="reduced"):
    r = row(p)
    if p == "fp32":
        return "float32, TF32 off everywhere"
    if p == "tf32":
        return "float32 tensors, TF32 on for GEMMs and convolutions everywhere"
    t = r["dtype"]
    io_text = f"{t} inputs and outputs" if io == "reduced" else "float32 inputs and outputs (Casts fused)"
    return (f"{t}: stitchc --precision {p} ({io_text}); torch module and float inputs in {t}; "
            f"errors against PyTorch float32")


def apply_torch(p):
    """Sets torch's global switches for a row and returns them as recorded in bench_peers.json."""
    import torch
    r = row(p)
    torch.backends.cuda.matmul.allow_tf32 = r["tf32"]
    torch.backends.cudnn.allow_tf32 = r["tf32"]
    torch.set_float32_matmul_precision("high" if r["tf32"] else "highest")
    return {"dtype": r["dtype"], "matmul.allow_tf32": r["tf32"], "cudnn.allow_tf32": r["tf32"],
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "allow_fp16_reduced_precision_reduction":
                torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
            "allow_bf16_reduced_precision_reduction":
                torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
            "cudnn.benchmark": torch.backends.cudnn.benchmark}


def torch_dtype(p):
    import torch
    return getattr(torch, row(p)["dtype"])


# --- bfloat16 in numpy (ml_dtypes when present, else bit patterns) -----------------------------

def bf16_bits(a):
    """float32 -> bfloat16 bit patterns (uint16), round to nearest even, NaN kept a NaN."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(a, np.float32))
    return np.where(nan, np.uint16(0x7FC0), rounded)


def save_bf16(path, a):
    """A float32 array saved as bfloat16 the way ml_dtypes saves it (descr '<V2')."""
    bits = bf16_bits(a)
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<V2", "fortran_order": False, "shape": tuple(bits.shape)})
        f.write(bits.astype("<u2").tobytes())


def load_float(path):
    """A .npy as float64, bfloat16 ('<V2', what stitch-run and ml_dtypes write) included."""
    a = np.load(path)
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        bits = a.view(np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def write_inputs(model_dir, p, io, dest):
    """The folder of the inputs the row's library takes (see the module's usage)."""
    import json
    r = row(p)
    if not r["reduced"] or io != "reduced":
        return model_dir
    meta = json.load(open(os.path.join(model_dir, "meta.json")))
    os.makedirs(dest, exist_ok=True)
    for k in range(len(meta["inputs"])):
        a = np.load(os.path.join(model_dir, f"input_{k}.npy"))
        path = os.path.join(dest, f"input_{k}.npy")
        if a.dtype != np.float32:
            np.save(path, a)
        elif r["reduced"] == "float16":
            np.save(path, a.astype(np.float16))
        else:
            save_bf16(path, a)
    return dest


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == "stitchc-flags":
        print(" ".join(stitchc_flags(a[1], a[2])))
    elif len(a) in (2, 3) and a[0] == "check-flags":
        print(" ".join(check_flags(a[1], a[2] if len(a) > 2 else None)))
    elif len(a) >= 2 and a[0] == "describe":
        print(describe(a[1], a[2] if len(a) > 2 else "reduced"))
    elif len(a) == 5 and a[0] == "inputs":
        print(write_inputs(a[1], a[2], a[3], a[4]))
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
