#!/usr/bin/env python3
"""Exports native float16 and bfloat16 real-model fixtures into tests/models/half/, with torch's
own outputs as the reference. The models are export_models.py's (imported, same seeds, so the
weights are the float32 fixtures' rounded to 16 bits), converted with .half() or
.to(torch.bfloat16) before export: weights, float inputs and outputs are 16-bit in the ONNX file.
BatchNorms are folded into their Convs in float32 first (fold_batchnorms), so that the 16-bit
model torch runs is the one in the file. The dynamo exporter writes them all (the TorchScript
exporter fails in bfloat16: it stops at opset 20, where Conv takes no bfloat16, and writes a
Cast to complex128 for the decoder block's -inf); float16 at opset 18, bfloat16 at 22.

ONNX Runtime's CPU kernels cover float16 and bfloat16 only in part, so the reference is torch's:
each fixture gets fixed inputs, made by the recipe compare_with_ort.py uses (numpy default_rng,
seed 1; a 0/1 attention mask keeps a random prefix per row) and rounded to the fixture's dtype,
and the outputs of the 16-bit model run by torch on the CPU on them. Next to <name>.onnx go
  <name>.inputs.json         the usual recipe, plus each input's "file" and the output files
  <name>.inputs/<input>.npy  the inputs (float16, bfloat16 as ml_dtypes saves it: descr '<V2')
  <name>.expected/<out>.npy  float32 values of the torch 16-bit model's outputs
  <name>.fp32/<out>.npy      the float32 model's outputs on the same (rounded) inputs
so that stitch-run can compare a library with both (--input, --expected; --max-rel-l2).

Every fixture is checked before it is kept: onnx.checker (full check), finite torch outputs,
and the 16-bit torch outputs against float32 (relative L2, printed). ONNX Runtime is tried too,
for information only: its verdict (agreement with torch, or the op it lacks) is printed.

Needs the export environment (see export_models.py):
usage: .venv-models/bin/python scripts/models/export_half_models.py [--only NAME ...] [OUT_DIR]
"""
import argparse
import hashlib
import json
import os
import shutil
import sys
import warnings

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.fx.experimental.optimization

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models as fp32  # noqa: E402  (the models, the exporters, the metadata strip)
from compare_with_ort import make_inputs  # noqa: E402  (the recipe the model tests use)

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                           "models", "half")
INPUT_SEED = 1  # compare_with_ort.py's default --seed

# (torch dtype, dtype name in inputs.json and numpy/ml_dtypes, file-name suffix)
PRECISIONS = {
    "fp16": (torch.float16, "float16", np.float16),
    "bf16": (torch.bfloat16, "bfloat16", ml_dtypes.bfloat16),
}

# (model, exporter, {precision: opset}). The dynamo exporter: float16 at opset 18, the opset it
# writes without a conversion step; bfloat16 at 22, the first opset whose Conv, MaxPool and
# GlobalAveragePool (and many others) take bfloat16 (at 18 onnx.checker refuses a bfloat16
# Conv), converted from 18 by the exporter.
MODELS = [
    ("decoder_block", "dynamo", {"fp16": 18, "bf16": 22}),
    ("bert", "dynamo", {"fp16": 18, "bf16": 22}),
    ("gpt2", "dynamo", {"fp16": 18, "bf16": 22}),
    ("vit", "dynamo", {"fp16": 18, "bf16": 22}),
    ("resnet18", "dynamo", {"fp16": 18, "bf16": 22}),
    ("mobilenet_v2", "dynamo", {"fp16": 18, "bf16": 22}),
    ("llama", "dynamo", {"fp16": 18, "bf16": 22}),
]
EXPORTER_TAG = {"torchscript": "ts", "dynamo": "dynamo"}


def fixture_names():
    """(fixture name, model, exporter, opset, precision) for every fixture."""
    return [(f"{m}_{EXPORTER_TAG[e]}{opsets[p]}_{p}", m, e, opsets[p], p)
            for m, e, opsets in MODELS for p in PRECISIONS]


def build(model_name):
    """The model as export_models.py builds it (same seeds, so the same float32 weights)."""
    torch.manual_seed(fp32.SEED)
    gen = torch.Generator().manual_seed(fp32.SEED)
    model, inputs, specs, output_names, config = fp32.BUILDERS[model_name](gen)
    return model.eval(), inputs, specs, output_names, config


def fold_batchnorms(model):
    """Folds each eval-mode BatchNorm into the Conv before it, in float32 and in torch, so that
    the 16-bit model torch runs is the one in the file. (Left to the dynamo exporter, the fold
    happens in its optimizer after the cast: for bfloat16 it writes float32 Conv weights, an
    invalid model; for float16 torch's reference would keep a BatchNorm the file does not have.)"""
    if not any(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules()):
        return model
    fused = torch.fx.experimental.optimization.fuse(model)
    if any(isinstance(m, torch.nn.BatchNorm2d) for m in fused.modules()):
        raise RuntimeError("a BatchNorm was left unfolded")
    return fused


def as_list(outputs):
    return [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)


def rel_l2(got, want):
    got, want = got.astype(np.float64), want.astype(np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def ort_verdict(path, feed, expected):
    """ONNX Runtime (CPU) on the fixture, for information: its worst relative L2 against torch's
    16-bit outputs, or why it cannot run the model."""
    try:
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = session.run(None, feed)
    except Exception as e:  # ORT lacks many 16-bit CPU kernels; say which
        return "ort cannot run it: " + str(e).splitlines()[0][:200]
    worst = max(rel_l2(np.asarray(g).astype(np.float32), w) for g, w in zip(got, expected))
    return f"ort vs torch rel L2 {worst:.1e}"


def export_fixture(out_dir, name, model_name, exporter, opset, precision):
    torch_dtype, dtype_name, np_dtype = PRECISIONS[precision]
    model, example, specs, output_names, config = build(model_name)

    # The fixed inputs: compare_with_ort.py's recipe on the float32 specs, floats rounded to
    # the fixture's dtype; the float32 model gets the same (exactly widened) values.
    feed32 = make_inputs({"inputs": specs, "dims": {}}, np.random.default_rng(INPUT_SEED))
    feed, torch_half, torch_full = {}, [], []
    for spec in specs:
        value = feed32[spec["name"]]
        if spec["dtype"] == "float32":
            value = value.astype(np_dtype)
            torch_half.append(torch.from_numpy(value.astype(np.float32)).to(torch_dtype))
            torch_full.append(torch.from_numpy(value.astype(np.float32)))
            spec["dtype"] = dtype_name
        else:
            torch_half.append(torch.from_numpy(value))
            torch_full.append(torch.from_numpy(value))
        feed[spec["name"]] = value

    with torch.no_grad():
        want32 = [t.numpy() for t in as_list(model(*torch_full))]
        model = fold_batchnorms(model).to(torch_dtype)
        half = [t.float().numpy() for t in as_list(model(*torch_half))]
    example = tuple(t.to(torch_dtype) if t.is_floating_point() else t for t in example)

    path = os.path.join(out_dir, f"{name}.onnx")
    fp32.export(model, example, specs, output_names, exporter, opset, None, path)
    fp32.strip_metadata(path)
    onnx_model = onnx.load(path)
    onnx.checker.check_model(onnx_model, full_check=True)
    onnx_dtype = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(np_dtype))
    for value in list(onnx_model.graph.input) + list(onnx_model.graph.output):
        elem = value.type.tensor_type.elem_type
        if elem in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE):
            raise RuntimeError(f"{name}: graph input/output {value.name} is not {dtype_name}")
    for init in onnx_model.graph.initializer:
        if init.data_type == onnx.TensorProto.FLOAT and int(np.prod(init.dims)) > 1:
            raise RuntimeError(f"{name}: weight {init.name} {list(init.dims)} is float32")
    if not all(np.isfinite(h).all() for h in half):
        raise RuntimeError(f"{name}: torch's {dtype_name} outputs are not all finite")

    # The data files, each folder written afresh.
    files = {}
    for kind, names, values in (("inputs", [s["name"] for s in specs], [feed[s["name"]] for s in specs]),
                                ("expected", output_names, half), ("fp32", output_names, want32)):
        folder = os.path.join(out_dir, f"{name}.{kind}")
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        files[kind] = {}
        for n, v in zip(names, values):
            np.save(os.path.join(folder, f"{n}.npy"), v)
            files[kind][n] = f"{name}.{kind}/{n}.npy"
    for spec in specs:
        spec["file"] = files["inputs"][spec["name"]]

    info = fp32.describe(path, model_name, exporter, opset, specs, output_names, {}, config)
    info["precision"] = precision
    info["input_seed"] = INPUT_SEED
    info["expected"] = files["expected"]
    info["expected_fp32"] = files["fp32"]
    info["torch_vs_fp32_rel_l2"] = {n: float(f"{rel_l2(h, w):.3e}")
                                    for n, h, w in zip(output_names, half, want32)}
    with open(os.path.join(out_dir, f"{name}.inputs.json"), "w") as f:
        json.dump(info, f, indent=1)
        f.write("\n")

    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    l2 = ", ".join(f"{n} {v:.1e}" for n, v in info["torch_vs_fp32_rel_l2"].items())
    print(f"{name}: {os.path.getsize(path) / 1024:.0f} KiB, {len(onnx_model.graph.node)} nodes, "
          f"torch {dtype_name} vs float32 rel L2: {l2}; {ort_verdict(path, feed, half)}; "
          f"sha256 {digest}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", nargs="?", default=DEFAULT_OUT)
    parser.add_argument("--only", nargs="*", default=None, help="fixture names to export")
    args = parser.parse_args()
    fixtures = fixture_names()
    unknown = set(args.only or []) - {f[0] for f in fixtures}
    if unknown:
        parser.error(f"no fixture named {', '.join(sorted(unknown))}")
    os.makedirs(args.out_dir, exist_ok=True)
    warnings.filterwarnings("ignore")
    torch.use_deterministic_algorithms(True)
    failures = []
    for name, model_name, exporter, opset, precision in fixtures:
        if args.only and name not in args.only:
            continue
        try:
            export_fixture(args.out_dir, name, model_name, exporter, opset, precision)
        except Exception as e:  # report every failing fixture, not just the first
            failures.append(name)
            print(f"{name}: FAILED: {type(e).__name__}: {e}", flush=True)
            path = os.path.join(args.out_dir, f"{name}.onnx")
            if os.path.exists(path):
                os.remove(path)
    if failures:
        print(f"failed: {' '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
