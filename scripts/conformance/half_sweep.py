#!/usr/bin/env python3
"""Half-precision sweep of the ONNX backend node suite: float16 and bfloat16 variants of every
allowlisted test that computes on float32, compiled for the host target (and, for a sample, for
CUDA) and compared with the suite's float32 outputs.

The backend suite has few float16 tests, so most ops' half paths (movement kernels, windows,
reductions, ...) are otherwise untested. For each test this writes a variant per type: every
float32 tensor (graph inputs, outputs, value_info, initializers, Constant values, ConstantOfShape
and other tensor attributes, Cast to=FLOAT, dtype/output_datatype attributes equal to FLOAT,
subgraphs) becomes float16 or bfloat16, and the float32 inputs are rounded to nearest even.
Kept float32: Resize's roi/scales and Upsample's scales (they pick output shapes; ONNX lets them
differ from the data's type) and LayerNormalization's Mean/InvStdDev (stash_type's). Tests
without float32 are converted from float64 (CumSum, Einsum, ReduceLogSumExp, Mod, ... are
float64 only), and integer Trilu tests have their data converted (small integers, exact).
Skipped: Cast/CastLike tests (they test float32 itself) and integer-only tests.
Shape operands fed as graph inputs are frozen with --freeze-input, as the conformance runner does.

Classes, per variant:
  COMPILE-FAIL  stitchc exit 2 (internal error) or the C++ compile of generated code failed:
                a compiler bug
  REFUSED       stitchc exit 1 with a user error (the message is kept)
  RUN-FAIL      stitch-run failed to load or run the library
  MISMATCH-*    outside tolerance (TOLERANCE) against the float32 outputs; then compared with
                ONNX Runtime's float32 model run on the rounded inputs, and with the float16
                model on ONNX Runtime where it runs (ORT computes many float16 ops in float32):
                INHERENT when one of those agrees, or the reference holds values the type cannot
                (range, integers past 2^11 / 2^8); else SUSPICIOUS, to be looked at (an
                intermediate overflow of a native float16 graph, e.g. Exp(60), lands here too)
  PASS
  SKIP          see above

usage: .venv/bin/python scripts/conformance/half_sweep.py [--filter REGEX] [--jobs 2]
           [--work /tmp/half_sweep] [--dtypes fp16,bf16] [--per-op N] [--compile-only]
           [--resume] [--summarize] [--cuda-sample N [--cuda-only]]
Variants are ordered round-robin over ops (the first test of every op first), so a sweep cut
short still covers every op; --resume continues one. Results: WORK/results.jsonl (one line per
variant, written as it finishes), WORK/cuda.jsonl, WORK/summary.md (per-op table, failures).
Exit status 1 when a variant is COMPILE-FAIL, RUN-FAIL or MISMATCH-SUSPICIOUS.
"""
import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

try:
    import ml_dtypes
except ImportError:  # bfloat16 by bit manipulation
    ml_dtypes = None

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FLOAT = TensorProto.FLOAT
TYPES = {"fp16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}
# (rel-L2 bound, atol, rtol) against float32 references.
TOLERANCE = {"fp16": (1e-2, 1e-2, 1e-2), "bf16": (4e-2, 2e-2, 5e-2)}
# Largest integer each type holds exactly, and its largest finite value.
EXACT_INT = {"fp16": 2048, "bf16": 256}
MAX_FINITE = {"fp16": 65504.0, "bf16": 3.3895e38}
# Float operands that pick shapes, kept float32: op -> input positions.
KEEP_FLOAT32 = {"Resize": (1, 2), "Upsample": (1,)}
# Outputs whose type an attribute fixes, kept: LayerNormalization's Mean and InvStdDev are
# stash_type's (float32 by default).
KEEP_FLOAT32_OUTPUTS = {"LayerNormalization": (1, 2)}
DTYPE_ATTRIBUTES = ("dtype", "output_datatype", "output_dtype")
# Movement ops whose integer tests are converted (data input positions): values move unchanged.
INT_MOVEMENT_OPS = {"Trilu": (0,), "Pad": (0,)}
INTEGER_TYPES = (TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
                 TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64)
SKIP_OPS = ("Cast", "CastLike")
# The CUDA sample: ops with kernels of their own (movement, windows, reductions, library calls,
# composites), with how many tests of each.
CUDA_SAMPLE = {
    "Resize": 4, "Pad": 3, "MaxPool": 2, "AveragePool": 2, "Conv": 1, "ConvTranspose": 1,
    "Gather": 1, "GatherElements": 1, "GatherND": 1, "ScatterND": 1, "TopK": 1, "Trilu [int]": 1,
    "Tile": 1, "DepthToSpace": 1, "SpaceToDepth": 1, "CumSum [f64]": 2, "ArgMax": 1, "ArgMin": 1,
    "Einsum [f64]": 2, "Where": 1, "Clip": 1, "ReduceMax": 1, "ReduceSum": 1, "ReduceMean": 1,
    "ReduceL2": 1, "ReduceLogSumExp": 1, "ReduceProd": 1, "Softmax": 1, "LogSoftmax": 1,
    "LayerNormalization (expanded)": 1, "GroupNormalization": 1, "InstanceNormalization": 1,
    "BatchNormalization": 1, "RMSNormalization": 1, "MatMul": 1, "Gemm": 1,
    "GlobalAveragePool": 1, "GlobalMaxPool": 1, "Concat": 1, "Split": 1, "Slice": 1,
    "Transpose": 1, "Expand": 1, "Attention (expanded)": 1, "RotaryEmbedding (expanded)": 1,
    "Mod": 1, "Round": 1, "IsNaN": 1, "Range": 1,
}


# ---- rounding -----------------------------------------------------------------------------

def bf16_bits(a):
    """float32 array -> bfloat16 bit patterns (uint16), round to nearest even, NaN kept."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    rounded[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded


def bits_to_float(bits, kind):
    if kind == "fp16":
        return bits.view(np.float16).astype(np.float32)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def to_bits(a, kind):
    """float array -> the type's bit patterns (uint16)."""
    a = np.asarray(a, dtype=np.float32)
    if kind == "fp16":
        return a.astype(np.float16).view(np.uint16)
    return bf16_bits(a)


def rounded(a, kind):
    """float32 array rounded to the type and back (what the variant's input holds)."""
    return bits_to_float(to_bits(a, kind), kind).reshape(np.shape(a))


def half_tensor(name, a, kind):
    t = TensorProto()
    t.name = name
    t.data_type = TYPES[kind]
    t.dims.extend(np.shape(a))
    t.raw_data = to_bits(a, kind).astype("<u2").tobytes()
    return t


def save_npy(path, a, kind):
    bits = to_bits(a, kind).reshape(np.shape(a))
    if kind == "fp16":
        np.save(path, bits.view(np.float16))
    elif ml_dtypes is not None:
        np.save(path, bits.view(ml_dtypes.bfloat16))
    else:  # ml_dtypes' layout: descr '<V2'
        np.save(path, bits.view("V2"))


def load_npy(path):
    a = np.load(path, allow_pickle=False)
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        return bits_to_float(a.view(np.uint16), "bf16").reshape(a.shape)
    if str(a.dtype) == "bfloat16":
        return a.astype(np.float32)
    return a


# ---- conversion ---------------------------------------------------------------------------

def convert_type(tp, kind, src):
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        if tp.tensor_type.elem_type == src:
            tp.tensor_type.elem_type = TYPES[kind]
    elif which == "sequence_type":
        convert_type(tp.sequence_type.elem_type, kind, src)
    elif which == "optional_type":
        convert_type(tp.optional_type.elem_type, kind, src)


def convert_tensor(t, kind, src):
    if t.data_type != src:
        return
    converted = half_tensor(t.name, numpy_helper.to_array(t), kind)
    t.CopyFrom(converted)


def kept_names(graph):
    keep = set()
    for node in graph.node:
        for i in KEEP_FLOAT32.get(node.op_type, ()):
            if i < len(node.input) and node.input[i]:
                keep.add(node.input[i])
        for i in KEEP_FLOAT32_OUTPUTS.get(node.op_type, ()):
            if i < len(node.output) and node.output[i]:
                keep.add(node.output[i])
    return keep


def convert_graph(graph, kind, src=FLOAT):
    """Converts every `src` (float32, or float64 in a model without float32) tensor to `kind`;
    returns the names kept as they are."""
    keep = kept_names(graph)
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        if vi.name not in keep:
            convert_type(vi.type, kind, src)
    for t in graph.initializer:
        if t.name not in keep:
            convert_tensor(t, kind, src)
    for node in graph.node:
        produces_kept = any(o in keep for o in node.output)
        if node.op_type == "ConstantOfShape" and src == FLOAT and not produces_kept and not any(
                a.name == "value" for a in node.attribute):  # the default value is float32 0
            node.attribute.append(helper.make_attribute("value", half_tensor("", np.zeros(1), kind)))
        if node.op_type == "Constant" and not produces_kept and src == FLOAT:
            for a in list(node.attribute):
                if a.name in ("value_float", "value_floats"):
                    value = np.array(a.f if a.name == "value_float" else list(a.floats), np.float32)
                    node.attribute.remove(a)
                    node.attribute.append(helper.make_attribute("value", half_tensor("", value, kind)))
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR and not produces_kept:
                convert_tensor(a.t, kind, src)
            elif a.type == onnx.AttributeProto.TENSORS:
                for t in a.tensors:
                    convert_tensor(t, kind, src)
            elif a.type == onnx.AttributeProto.GRAPH:
                convert_graph(a.g, kind, src)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    convert_graph(g, kind, src)
            elif a.type == onnx.AttributeProto.INT and a.i == src and (
                (node.op_type == "Cast" and a.name == "to") or a.name in DTYPE_ATTRIBUTES
            ):
                a.i = TYPES[kind]
    return keep


def has_type(model, src):
    g = model.graph
    if any(vi.type.tensor_type.elem_type == src for vi in list(g.input) + list(g.output)):
        return True
    if any(t.data_type == src for t in g.initializer):
        return True
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == src:
                return True
            if src == FLOAT and a.name in ("value_float", "value_floats"):
                return True
    return False


def source_type(model, name):
    """The type the variants replace: float32; else float64 (the CumSum, Einsum and
    ReduceLogSumExp tests are float64 only); else, for the integer tests of pure movement ops
    (Trilu, Pad), int64, standing for "their integer data"."""
    if has_type(model, FLOAT):
        return FLOAT
    if has_type(model, TensorProto.DOUBLE):
        return TensorProto.DOUBLE
    ops = {n.op_type for n in model.graph.node}
    if len(model.graph.node) == 1 and ops <= set(INT_MOVEMENT_OPS):
        return TensorProto.INT64
    return None


def convert_int_movement(graph, kind):
    """An integer movement test (Trilu, Pad): its data input and its outputs become `kind`; the
    values are small integers, exact in both types. Returns the names kept."""
    node = graph.node[0]
    data = {node.input[i] for i in INT_MOVEMENT_OPS[node.op_type]}
    outputs = {vi.name for vi in graph.output}
    for vi in list(graph.input) + list(graph.output):
        if vi.name in data or vi.name in outputs:
            convert_type(vi.type, kind, vi.type.tensor_type.elem_type)
    return {vi.name for vi in graph.input if vi.name not in data}


def primary_op(name, model, suite):
    """The op a test is about: its one node, the unexpanded sibling's, or the node whose name
    the test name starts with."""
    base = re.sub(r"_expanded(_ver\d+)?$", "", name)
    if base != name and os.path.exists(os.path.join(suite, base, "model.onnx")):
        sibling = onnx.load(os.path.join(suite, base, "model.onnx"), load_external_data=False)
        if len(sibling.graph.node) == 1:
            return sibling.graph.node[0].op_type + " (expanded)"
    ops = [n.op_type for n in model.graph.node]
    if len(set(ops)) == 1:
        return ops[0]
    flat = name[len("test_"):].replace("_", "").lower()
    matches = [op for op in set(ops) if flat.startswith(op.lower())]
    if matches:
        return max(matches, key=len)
    return next((op for op in ops if op != "Constant"), ops[0])


# ---- one test ---------------------------------------------------------------------------

def load_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def prepare(name, suite, work, kinds):
    """Writes WORK/NAME/KIND/{model.onnx, inputs} and returns the variants, or a SKIP record."""
    tdir = os.path.join(suite, name)
    model = onnx.load(os.path.join(tdir, "model.onnx"), load_external_data=False)
    op = primary_op(name, model, suite)
    base = {"test": name, "op": op}
    if op.split()[0] in SKIP_OPS:
        return [dict(base, kind=k, cls="SKIP", detail="Cast test: its semantics are float32's") for k in kinds]
    src = source_type(model, name)
    if src is None:
        return [dict(base, kind=k, cls="SKIP", detail="no float value") for k in kinds]
    if src != FLOAT:
        base["op"] = op + (" [f64]" if src == TensorProto.DOUBLE else " [int]")
    data = os.path.join(tdir, "test_data_set_0")
    init_names = {t.name for t in model.graph.initializer}
    inputs = [vi for vi in model.graph.input if vi.name not in init_names]
    all_inputs = [vi.name for vi in model.graph.input]
    outputs = [vi.name for vi in model.graph.output]
    for vi in model.graph.output:
        if vi.type.WhichOneof("value") != "tensor_type":
            return [dict(base, kind=k, cls="SKIP", detail="non-tensor output") for k in kinds]
    variants = []
    for kind in kinds:
        vdir = os.path.join(work, name, kind)
        shutil.rmtree(vdir, ignore_errors=True)
        os.makedirs(vdir)
        m = onnx.ModelProto()
        m.CopyFrom(model)
        if src == TensorProto.INT64:
            keep = convert_int_movement(m.graph, kind)
        else:
            keep = convert_graph(m.graph, kind, src)
        onnx.save(m, os.path.join(vdir, "model.onnx"))
        feeds = []  # (name, stitch-run file, freeze file, value as float32 for ORT)
        for vi in inputs:
            pb = os.path.join(data, "input_%d.pb" % all_inputs.index(vi.name))
            if not os.path.exists(pb):
                continue
            t = load_pb(pb)
            value = numpy_helper.to_array(t)
            convert = t.data_type == src or (src == TensorProto.INT64 and t.data_type in INTEGER_TYPES)
            if convert and vi.name not in keep:
                safe = re.sub(r"[^A-Za-z0-9_.-]", "_", vi.name)
                npy = os.path.join(vdir, "in_%s.npy" % safe)
                save_npy(npy, value, kind)
                frozen = os.path.join(vdir, "in_%s.pb" % safe)
                with open(frozen, "wb") as f:
                    f.write(half_tensor(vi.name, value, kind).SerializeToString())
                feeds.append((vi.name, npy, frozen, rounded(value, kind).astype(value.dtype)))
            else:
                feeds.append((vi.name, pb, pb, value))
        expected = []
        for i, out in enumerate(outputs):
            pb = os.path.join(data, "output_%d.pb" % i)
            if os.path.exists(pb):
                expected.append((out, pb))
        variants.append(dict(base, kind=kind, dir=vdir, feeds=feeds, expected=expected,
                             model_path=os.path.join(tdir, "model.onnx")))
    return variants


def run_tool(argv, timeout):
    """subprocess.run, waiting out a tool being relinked (a build in the same tree makes it
    briefly missing or not executable; --build can point at a private copy instead)."""
    for attempt in range(30):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except (PermissionError, FileNotFoundError, OSError) as e:
            if attempt == 29 or isinstance(e, subprocess.TimeoutExpired):
                raise
            time.sleep(2)


FREEZE_HINT = re.compile(r"depends on graph input\(s\) (.*?), which --freeze-input")


def first_error_lines(output, n=6):
    lines = [l for l in output.splitlines() if re.search(r"\berror\b", l)]
    return "\n".join(lines[:n]) if lines else "\n".join(output.splitlines()[:n])


def compile_variant(v, stitchc, target="host", timeout=300):
    """stitchc with --freeze-input retries, like the conformance runner. Sets cls on failure."""
    suffix = "" if target == "host" else "_" + target
    lib = os.path.join(v["dir"], "model%s.so" % suffix)
    emit = os.path.join(v["dir"], "emit%s" % suffix)
    frozen = v.setdefault("frozen", [])
    by_name = {f[0]: f for f in v["feeds"]}
    start = time.time()
    while True:
        argv = [stitchc, os.path.join(v["dir"], "model.onnx"), "-o", lib, "--target", target,
                "-j1", "-q", "--emit-dir", emit]
        for name in frozen:
            argv += ["--freeze-input", "%s=%s" % (name, by_name[name][2])]
        try:
            r = run_tool(argv, timeout)
            rc, out = r.returncode, r.stdout + r.stderr
        except subprocess.TimeoutExpired:
            rc, out = -1, "stitchc timed out after %d s" % timeout
        hint = FREEZE_HINT.search(out) if rc == 1 else None
        if hint:
            more = [n.strip() for n in hint.group(1).split(",")
                    if n.strip() in by_name and n.strip() not in frozen]
            if more:
                frozen.extend(more)
                continue
        break
    result = {"rc": rc, "seconds": round(time.time() - start, 2), "lib": lib, "emit": emit}
    message = next((l for l in out.splitlines() if l.startswith("stitchc")), out.strip()[:300])
    if rc == 0:
        result["cls"] = "OK"
    elif rc == 2 or rc < 0:
        result.update(cls="COMPILE-FAIL", detail="internal: " + message[:400], log=out[-4000:])
    elif re.search(r" failed \((exit code|signal)", out):
        result.update(cls="COMPILE-FAIL", detail="C++: " + first_error_lines(out), log=out[-4000:])
    else:
        result.update(cls="REFUSED", detail=message.split(": ", 3)[-1][:400])
    return result


def compare(got, ref, kind, exact):
    """Metrics of one output and whether it is within tolerance."""
    if got.shape != ref.shape:
        return {"ok": False, "why": "shape %s vs %s" % (got.shape, ref.shape)}
    if exact or ref.dtype.kind in "biu":
        bad = int(np.count_nonzero(got != ref))
        return {"ok": bad == 0, "why": "%d of %d elements differ" % (bad, ref.size) if bad else ""}
    l2, atol, rtol = TOLERANCE[kind]
    g, r = got.astype(np.float64), ref.astype(np.float64)
    special = ~np.isfinite(r) | ~np.isfinite(g)
    same_special = np.all((np.isnan(g) == np.isnan(r))[special]) and np.all(
        (g[special & ~np.isnan(r)] == r[special & ~np.isnan(r)]))
    fin = ~special
    diff = np.abs(g[fin] - r[fin])
    norm = np.linalg.norm(r[fin])
    rel_l2 = float(np.linalg.norm(diff) / norm) if norm > 0 else float(np.linalg.norm(diff))
    max_abs = float(diff.max()) if diff.size else 0.0
    over = diff > atol + rtol * np.abs(r[fin])
    m = {"rel_l2": rel_l2, "max_abs": max_abs, "n_over": int(over.sum()), "n": int(ref.size),
         "special_ok": bool(same_special)}
    m["ok"] = bool(same_special) and rel_l2 <= l2 and not over.any()
    if not m["ok"]:
        m["why"] = "rel-L2 %.3g, max abs %.3g, %d/%d elements over atol %g + rtol %g%s" % (
            rel_l2, max_abs, m["n_over"], ref.size, atol, rtol,
            "" if same_special else ", NaN/inf placement differs")
    return m


def ort_session(model_bytes):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def ort_rounded_reference(v):
    """The float32 model on the rounded inputs (float32 values), by output name."""
    sess = ort_session(open(v["model_path"], "rb").read())
    wanted = {i.name for i in sess.get_inputs()}
    feeds = {name: value for name, _, _, value in v["feeds"] if name in wanted}
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


def ort_half_reference(v):
    """The float16 model itself on ONNX Runtime, where it runs (float16 only)."""
    if v["kind"] != "fp16":
        return None
    sess = ort_session(open(os.path.join(v["dir"], "model.onnx"), "rb").read())
    types = {i.name: i.type for i in sess.get_inputs()}
    feeds = {name: (value.astype(np.float16) if types.get(name) == "tensor(float16)" else value)
             for name, _, _, value in v["feeds"] if name in types}
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


def inherent_reason(ref, kind):
    r = ref[np.isfinite(ref)].astype(np.float64) if ref.dtype.kind == "f" else None
    if r is None or r.size == 0:
        return None
    if np.abs(r).max() > MAX_FINITE[kind]:
        return "reference values past the type's range (%.3g)" % np.abs(r).max()
    if np.all(r == np.round(r)) and np.abs(r).max() > EXACT_INT[kind]:
        return "integer outputs past %d, which the type cannot all hold" % EXACT_INT[kind]
    return None


def run_variant(v, stitch_run, timeout=120):
    outdir = os.path.join(v["dir"], "out")
    shutil.rmtree(outdir, ignore_errors=True)
    argv = [stitch_run, v["compile"]["lib"], "--output-dir", outdir]
    for name, path, _, _ in v["feeds"]:
        if name not in v["frozen"]:
            argv += ["--input", "%s=%s" % (name, path)]
    try:
        r = run_tool(argv, timeout)
        rc, out = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired:
        rc, out = -1, "timed out"
    if rc != 0:
        return {"cls": "RUN-FAIL", "detail": out.strip()[-600:]}
    metrics, bad = {}, []
    for name, pb in v["expected"]:
        path = os.path.join(outdir, name + ".npy")
        if not os.path.exists(path):
            return {"cls": "RUN-FAIL", "detail": "no output %s written" % name}
        ref = numpy_helper.to_array(load_pb(pb))
        got = load_npy(path)
        m = compare(got, ref, v["kind"], exact=ref.dtype.kind != "f")
        metrics[name] = m
        if not m["ok"]:
            bad.append(name)
    if not bad:
        return {"cls": "PASS", "metrics": metrics}
    # Mismatch: is it the type's, or the compiler's?
    detail = "; ".join("%s: %s" % (n, metrics[n]["why"]) for n in bad)
    reasons = []
    for n in bad:
        ref = numpy_helper.to_array(load_pb(dict(v["expected"])[n]))
        why = inherent_reason(ref, v["kind"])
        if why:
            reasons.append("%s: %s" % (n, why))
    result = {"metrics": metrics, "detail": detail}
    for label, reference in (("fp32 model on rounded inputs", ort_rounded_reference),
                             ("fp16 model on ONNX Runtime", ort_half_reference)):
        try:
            outs = reference(v)
        except Exception as e:  # ONNX Runtime may not run the model (opset, op, type)
            result.setdefault("ort_errors", []).append("%s: %s" % (label, str(e).splitlines()[0][:200]))
            continue
        if outs is None:
            continue
        still = []
        for n in bad:
            got = load_npy(os.path.join(outdir, n + ".npy"))
            ref = np.asarray(outs[n])
            m = compare(got, ref, v["kind"], exact=ref.dtype.kind != "f")
            if not m["ok"]:
                still.append("%s: %s" % (n, m["why"]))
        result.setdefault("rechecks", {})[label] = "; ".join(still) if still else "agrees"
        if not still:
            reasons.append("agrees with the " + label)
            break
    if reasons:
        result.update(cls="MISMATCH-INHERENT", inherent="; ".join(reasons))
    else:
        result["cls"] = "MISMATCH-SUSPICIOUS"
    return result


# ---- the sweep --------------------------------------------------------------------------

def allowlisted(path):
    names = []
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(line.split()[0])
    return names


def summarize(records, cuda, seconds, path):
    classes = ["PASS", "MISMATCH-INHERENT", "MISMATCH-SUSPICIOUS", "RUN-FAIL", "COMPILE-FAIL",
               "REFUSED", "SKIP", "COMPILED"]
    table = collections.defaultdict(collections.Counter)
    for r in records:
        table[r["op"]][r["kind"] + " " + r["cls"]] += 1
    present = [c for c in classes if any(r["cls"] == c for r in records)]
    lines = ["# Half-precision sweep of the node suite", "",
             "%d variants%s (%s)" % (len(records), " in %.0f s" % seconds if seconds else "",
                                      time.strftime("%Y-%m-%d %H:%M")), ""]
    totals = collections.Counter(r["kind"] + " " + r["cls"] for r in records)
    head = ["op"] + ["%s %s" % (k, c) for k in ("fp16", "bf16") for c in present]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for op in sorted(table, key=str.lower):
        row = [op] + [str(table[op][h]) if table[op][h] else "" for h in head[1:]]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("| **total** | " + " | ".join(str(totals[h]) for h in head[1:]) + " |")
    for cls in ("COMPILE-FAIL", "MISMATCH-SUSPICIOUS", "RUN-FAIL", "REFUSED", "MISMATCH-INHERENT"):
        hits = [r for r in records if r["cls"] == cls]
        if not hits:
            continue
        lines += ["", "## %s (%d)" % (cls, len(hits)), ""]
        for r in sorted(hits, key=lambda r: (r["op"], r["test"], r["kind"])):
            extra = r.get("inherent") or ""
            lines.append("- `%s` %s [%s]: %s%s" % (r["test"], r["kind"], r["op"],
                                                  (r.get("detail") or "").replace("\n", " | ")[:700],
                                                  " -- " + extra if extra else ""))
    if cuda:
        lines += ["", "## CUDA target (sample, %d variants)" % len(cuda), ""]
        cuda = sorted(cuda, key=lambda r: (r["cls"] == "PASS", r["op"]))
        for r in cuda:
            lines.append("- `%s` %s [%s]: %s %s" % (r["test"], r["kind"], r["op"], r["cls"],
                                                    (r.get("detail") or "").replace("\n", " | ")[:700]))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def public(v):
    return {k: v[k] for k in ("test", "op", "kind", "cls", "detail", "frozen", "inherent",
                              "rechecks", "ort_errors", "metrics", "dir") if k in v}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default=(glob.glob(os.path.join(
        ROOT, ".venv/lib/python3*/site-packages/onnx/backend/test/data/node")) or [""])[0])
    ap.add_argument("--allowlist", default=os.path.join(ROOT, "tests/conformance/allowlist.txt"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="/tmp/half_sweep")
    ap.add_argument("--filter", default="", help="regex on test names")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--per-op", type=int, default=0,
                    help="at most N tests per op and type (0: all); the first of each op go first")
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--resume", action="store_true",
                    help="keep WORK/results.jsonl and skip the variants it holds")
    ap.add_argument("--summarize", action="store_true",
                    help="only write WORK/summary.md from WORK/results.jsonl")
    ap.add_argument("--cuda-sample", type=int, default=0,
                    help="also compile up to N variants (one per op and type, CUDA_SAMPLE first) for CUDA")
    ap.add_argument("--cuda-only", action="store_true",
                    help="skip the host target: only the --cuda-sample compiles")
    args = ap.parse_args()
    stitchc = os.path.join(args.build, "stitchc")
    stitch_run = os.path.join(args.build, "src/driver/run/stitch-run")
    kinds = args.dtypes.split(",")
    os.makedirs(args.work, exist_ok=True)
    results = os.path.join(args.work, "results.jsonl")
    cuda_results = os.path.join(args.work, "cuda.jsonl")
    start = time.time()
    if args.summarize:
        summarize(read_jsonl(results), read_jsonl(cuda_results), 0,
                  os.path.join(args.work, "summary.md"))
        return 0
    done = set()
    if args.resume:
        done = {(r["test"], r["kind"]) for r in read_jsonl(results)}
    else:
        for path in (results, cuda_results):
            if os.path.exists(path):
                os.remove(path)

    names = [n for n in allowlisted(args.allowlist) if re.search(args.filter, n)]
    skipped, variants = [], []
    for name in names:
        if all((name, k) in done for k in kinds):
            continue
        try:
            for v in prepare(name, args.suite, args.work, [k for k in kinds if (name, k) not in done]):
                (skipped if "cls" in v else variants).append(v)
        except Exception as e:
            skipped += [{"test": name, "op": "?", "kind": k, "cls": "SKIP",
                         "detail": "cannot convert: %s" % e} for k in kinds]
    # Round-robin over ops: the first test of every op (both types) first, then the second, ...
    # so that every op's compile failures come early and a cut-short sweep still covers all ops.
    rank = collections.Counter()
    for v in variants:
        v["rank"] = rank[(v["op"], v["kind"])]
        rank[(v["op"], v["kind"])] += 1
    if args.per_op:
        variants = [v for v in variants if v["rank"] < args.per_op]
    variants.sort(key=lambda v: v["rank"])
    print("%d tests, %d variants, %d skipped" % (len(names), len(variants), len(skipped)), flush=True)
    lock = threading.Lock()
    out = open(results, "a")

    def record(v):
        with lock:
            out.write(json.dumps(public(v), default=str) + "\n")
            out.flush()
            if v["cls"] not in ("PASS", "SKIP", "COMPILED"):
                print("  %-19s %s %s [%s]: %s" % (v["cls"], v["kind"], v["test"], v["op"],
                                                  (v.get("detail") or "").replace("\n", " | ")[:300]),
                      flush=True)

    for v in skipped if not args.cuda_only else []:
        record(v)

    def one(v):
        try:
            v["compile"] = compile_variant(v, stitchc)
            c = v["compile"]
            if c["cls"] != "OK":
                v.update(cls=c["cls"], detail=c["detail"])
            elif args.compile_only:
                v["cls"] = "COMPILED"
            else:
                v.update(run_variant(v, stitch_run))
        except Exception as e:
            v.update(cls="RUN-FAIL", detail="sweep error: %r" % e)
        record(v)

    if args.cuda_only:
        variants = [dict(v, cls="COMPILED") for v in variants]
    else:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for f in concurrent.futures.as_completed([pool.submit(one, v) for v in variants]):
                f.result()
    print("host target: %d variants in %.0f s" % (len(variants), time.time() - start), flush=True)

    if args.cuda_sample:
        # The ops with their own kernels first (CUDA_SAMPLE, some several times), then one
        # test of every other op, up to N.
        picked, taken = [], collections.Counter()
        candidates = [v for v in variants if v["cls"] not in ("REFUSED", "COMPILE-FAIL")]
        for op, n in list(CUDA_SAMPLE.items()) + [(v["op"], 1) for v in candidates]:
            for v in candidates:
                key = (op, v["kind"])
                if v["op"] == op and taken[key] < n and v not in picked and len(picked) < args.cuda_sample:
                    taken[key] += 1
                    picked.append(v)
        cuda_out = open(cuda_results, "a")

        def cuda_one(v):
            c = compile_variant(v, stitchc, target="cuda", timeout=600)
            r = {"test": v["test"], "op": v["op"], "kind": v["kind"],
                 "cls": "PASS" if c["cls"] == "OK" else c["cls"], "detail": c.get("detail", ""),
                 "seconds": c["seconds"]}
            with lock:
                cuda_out.write(json.dumps(r) + "\n")
                cuda_out.flush()
                print("  cuda %-12s %s (%.0f s) %s" % (r["cls"], r["test"], r["seconds"],
                                                     r["detail"].replace("\n", " | ")[:300]), flush=True)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(cuda_one, picked))

    seconds = time.time() - start
    records = read_jsonl(results)
    summarize(records, read_jsonl(cuda_results), seconds, os.path.join(args.work, "summary.md"))
    counts = collections.Counter(r["kind"] + " " + r["cls"] for r in records)
    print("\n".join("%-28s %d" % kv for kv in sorted(counts.items())))
    print("%.0f s; %s" % (seconds, os.path.join(args.work, "summary.md")))
    return 1 if any(r["cls"] in ("COMPILE-FAIL", "MISMATCH-SUSPICIOUS", "RUN-FAIL") for r in records) else 0


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    return [json.loads(l) for l in open(path) if l.strip()]


if __name__ == "__main__":
    sys.exit(main())
