#!/usr/bin/env python3
"""attention_bench.py: stitchc's attention group against its unfused plan and torch's
scaled_dot_product_attention, on one GPU (issue 18's timing and sanitizer check).

  attention_bench.py models DIR [--quick]
      writes DIR/<case>.onnx and DIR/cases.json: scaled dot-product attention as exporters write
      it (Q·Kᵀ through a Transpose, a Mul by 1/sqrt(d), an additive padding bias [B,1,1,S],
      Softmax, ·V), float32 and float16, at sequence 128, 512 and 2048 (batch 4, 12 heads, head
      dim 64) and one decode step (1 query over 2048 keys, batch 1: flash-decoding's split);
      and float16 at sequence 512 and 2048 with rotary embedding of Q and K first (rotate_half
      as LLaMA's exports write it, the cos and sin tables inputs [1,1,S,D]: the attention's
      prologues).
  attention_bench.py build DIR --stitchc STITCHC --out LIBDIR [--target cuda|host] [--jobs N]
      compiles each case twice: fused (`--attention fused`: one attention group, whatever the
      cost model would choose) and unfused (`--attention unfused`: Q·Kᵀ and ·V are cuBLASLt
      calls with the scores in memory, the softmax a kernel between them); writes each plan's
      report.
  attention_bench.py run DIR --libs LIBDIR --stitch-run STITCH_RUN --bench-model BENCH_MODEL
                     --out OUTDIR [--iters N] [--warmup N] [--sanitizer TOOLS] [--cases LIST]
      per case: random inputs (fixed seeds), a float64 reference (torch on the GPU, else numpy),
      stitch-run's check of both libraries against it (float32: rtol 1e-3, atol 1e-4; float16:
      relative L2 5e-3), their latency with bench_model (the C API, CUDA events, input sets
      rotated when small; not with --no-timing), torch's latency and error (the default SDPA, each SDPA backend that
      takes the mask, the math written out), and compute-sanitizer (each of TOOLS) around
      stitch-run on the fused libraries of the small cases. Writes OUTDIR/attention.json and
      OUTDIR/attention.md (the table) and prints the table.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from fusion_table import launches_of  # noqa: E402  the plan's launch count, one definition

HEADS, HEAD_DIM = 12, 64


def cases(quick=False):
    """(name, batch, queries, keys, dtype, rotary): the prefill cases, one decode step, and
    rotary prefill cases."""
    seqs = [32, 64] if quick else [128, 512, 2048]
    batch = 2 if quick else 4
    out = []
    for dtype in ("fp32", "fp16"):
        for s in seqs:
            out.append({"name": f"s{s}_{dtype}", "batch": batch, "queries": s, "keys": s,
                        "dtype": dtype, "rotary": False})
        keys = 256 if quick else 2048
        out.append({"name": f"decode{keys}_{dtype}", "batch": 1, "queries": 1, "keys": keys,
                    "dtype": dtype, "rotary": False})
    for s in ([32] if quick else [512, 2048]):
        out.append({"name": f"rope{s}_fp16", "batch": batch, "queries": s, "keys": s,
                    "dtype": "fp16", "rotary": True})
    return out


def input_names(case):
    return ["q", "k", "v", "bias"] + (["cos", "sin"] if case.get("rotary") else [])


def make_model(case, path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    et = TensorProto.FLOAT if case["dtype"] == "fp32" else TensorProto.FLOAT16
    npt = np.float32 if case["dtype"] == "fp32" else np.float16
    b, q, k = case["batch"], case["queries"], case["keys"]
    scale = numpy_helper.from_array(np.array(1.0 / math.sqrt(HEAD_DIM), dtype=npt), "scale")
    initializers = [scale]
    nodes = []
    q_in, k_in = "q", "k"
    if case.get("rotary"):
        # x cos + Concat(-x[..., D/2:], x[..., :D/2]) sin, for Q and for K.
        half = HEAD_DIM // 2
        for name, values in (("axis", [3]), ("zero", [0]), ("half", [half]), ("dim", [HEAD_DIM])):
            initializers.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        for x in ("q", "k"):
            nodes += [
                helper.make_node("Slice", [x, "zero", "half", "axis"], [f"{x}1"], name=f"{x}_lo"),
                helper.make_node("Slice", [x, "half", "dim", "axis"], [f"{x}2"], name=f"{x}_hi"),
                helper.make_node("Neg", [f"{x}2"], [f"{x}2n"], name=f"{x}_neg"),
                helper.make_node("Concat", [f"{x}2n", f"{x}1"], [f"{x}_rot"], name=f"{x}_cat",
                                 axis=-1),
                helper.make_node("Mul", [x, "cos"], [f"{x}_c"], name=f"{x}_cos"),
                helper.make_node("Mul", [f"{x}_rot", "sin"], [f"{x}_s"], name=f"{x}_sin"),
                helper.make_node("Add", [f"{x}_c", f"{x}_s"], [f"{x}_r"], name=f"{x}_rope"),
            ]
        q_in, k_in = "q_r", "k_r"
    nodes += [
        helper.make_node("Transpose", [k_in], ["kt"], name="transpose_k", perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", [q_in, "kt"], ["scores"], name="qk"),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"], name="scale_mul"),
        helper.make_node("Add", ["scaled", "bias"], ["biased"], name="bias_add"),
        helper.make_node("Softmax", ["biased"], ["probs"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "v"], ["o"], name="pv"),
    ]
    inputs = [helper.make_tensor_value_info("q", et, [b, HEADS, q, HEAD_DIM]),
              helper.make_tensor_value_info("k", et, [b, HEADS, k, HEAD_DIM]),
              helper.make_tensor_value_info("v", et, [b, HEADS, k, HEAD_DIM]),
              helper.make_tensor_value_info("bias", et, [b, 1, 1, k])]
    if case.get("rotary"):  # queries and keys at the same positions (prefill)
        inputs += [helper.make_tensor_value_info(n, et, [1, 1, k, HEAD_DIM]) for n in ("cos", "sin")]
    graph = helper.make_graph(
        nodes, case["name"], inputs,
        [helper.make_tensor_value_info("o", et, [b, HEADS, q, HEAD_DIM])],
        initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def cmd_models(args):
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    cs = cases(args.quick)
    for c in cs:
        make_model(c, d / f"{c['name']}.onnx")
    (d / "cases.json").write_text(json.dumps(cs, indent=1))
    print(f"attention_bench: {len(cs)} models in {d}")


def launches(report_path):
    """Kernels and library calls of a plan (fusion_table.py's count) and its group kinds."""
    plan = json.loads(Path(report_path).read_text())["plan"]
    kinds = {}
    for g in plan["groups"]:
        if g["kind"] != "alias":
            kinds[g["kind"]] = kinds.get(g["kind"], 0) + 1
    return sum(launches_of(g) for g in plan["groups"]), kinds


def cmd_build(args):
    d, out = Path(args.dir), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cs = json.loads((d / "cases.json").read_text())
    jobs = []
    for c in cs:
        for variant, extra in (("fused", ["--attention", "fused"]), ("unfused", ["--attention", "unfused"])):
            base = out / f"{c['name']}_{variant}"
            jobs.append([args.stitchc, str(d / f"{c['name']}.onnx"), "--target", args.target,
                         "-q", "-j", "1", "-o", f"{base}.so", "--report", f"{base}.json", *extra])

    def one(cmd):
        t0 = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True)
        return cmd, r, time.time() - t0

    failed = 0
    with ThreadPoolExecutor(args.jobs) as pool:
        for cmd, r, secs in pool.map(one, jobs):
            name = Path(cmd[cmd.index("-o") + 1]).stem
            if r.returncode != 0:
                failed += 1
                print(f"attention_bench: {name}: stitchc failed ({r.returncode}): {r.stderr.strip()}")
                continue
            n, kinds = launches(out / f"{name}.json")
            print(f"built {name} in {secs:.1f} s: {n} launches {kinds}")
    (out / "target.txt").write_text(args.target + "\n")
    return 1 if failed else 0


# --- run -------------------------------------------------------------------------------------

def make_inputs(case, seed):
    """q, k, v ~ N(0, 1) in the case's type; the bias masks a padded tail of each batch row
    (row r keeps keys - r * keys // 8 keys, at least one) with -10000, as BERT's exports do."""
    rng = np.random.default_rng(seed)
    npt = np.float32 if case["dtype"] == "fp32" else np.float16
    b, q, k = case["batch"], case["queries"], case["keys"]
    arrays = [rng.standard_normal((b, HEADS, n, HEAD_DIM), dtype=np.float32).astype(npt)
              for n in (q, k, k)]
    bias = np.zeros((b, 1, 1, k), dtype=np.float32)
    for r in range(b):
        keep = max(1, k - r * k // 8)
        bias[r, :, :, keep:] = -10000.0
    arrays.append(bias.astype(npt))
    if case.get("rotary"):
        # LLaMA's tables: angle p * 10000^(-2i/D) for position p, the halves repeated.
        inv = 10000.0 ** (-np.arange(0, HEAD_DIM, 2, dtype=np.float64) / HEAD_DIM)
        angles = np.arange(k, dtype=np.float64)[:, None] * inv[None, :]
        angles = np.concatenate([angles, angles], axis=-1)[None, None]
        arrays += [np.cos(angles).astype(npt), np.sin(angles).astype(npt)]
    return arrays


def rotate(x, cos, sin, lib):
    """x cos + rotate_half(x) sin (numpy or torch)."""
    h = x.shape[-1] // 2
    cat = lib.concatenate if lib is np else lib.cat
    return x * cos + cat([-x[..., h:], x[..., :h]], -1) * sin


def reference(arrays, torch_mod, device):
    """float64 attention of the inputs as they are (rounded to their type), the graph's order:
    scale after the product, bias, max-subtracted softmax, ·V."""
    q, k, v, bias = arrays[:4]
    scale = 1.0 / math.sqrt(HEAD_DIM)
    if torch_mod is not None:
        t = [torch_mod.from_numpy(a.astype(np.float64)).to(device) for a in arrays]
        if len(t) == 6:
            t[0], t[1] = rotate(t[0], t[4], t[5], torch_mod), rotate(t[1], t[4], t[5], torch_mod)
        s = (t[0] @ t[1].transpose(-1, -2)) * scale + t[3]
        return torch_mod.softmax(s, dim=-1).matmul(t[2]).cpu().numpy()
    q, k, v, bias = (a.astype(np.float64) for a in (q, k, v, bias))
    if len(arrays) == 6:
        cos, sin = (a.astype(np.float64) for a in arrays[4:])
        q, k = rotate(q, cos, sin, np), rotate(k, cos, sin, np)
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * scale + bias
    s = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhqk,bhkd->bhqd", s / s.sum(-1, keepdims=True), v)


def rel_l2(got, ref):
    got, ref = got.astype(np.float64), ref.astype(np.float64)
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300))


def library_only_hazards(text):
    """The kernels racecheck names in its hazards, when every hazard was printed and none is in
    a kernel stitchc generated (stitch_*): the finding is then a library's (cuBLASLt's
    warp-specialized GEMMs synchronize through barriers racecheck does not model)."""
    summary = re.search(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?", text)
    names = sorted(set(re.findall(r"(?:Read|Write) Thread \([^)]*\) at ([A-Za-z_][\w]*)", text)))
    if not summary or summary.group(1) != summary.group(2) or not names:
        return None
    return None if any(n.startswith("stitch_") for n in names) else names


def check_args(case):
    if case["dtype"] == "fp32":
        return ["--rtol", "1e-3", "--atol", "1e-4"]
    return ["--max-rel-l2", "5e-3"]


def stitch_run_check(stitch_run, lib, case, data, outdir, timeout, wrapper=()):
    names = input_names(case)
    cmd = [*wrapper, stitch_run, str(lib)]
    for i, n in enumerate(names):
        cmd += ["--input", f"{n}={data}/input_{i}.npy"]
    cmd += ["--expected", f"o={data}/ref.npy", *check_args(case), "--output-dir", str(outdir)]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        rc, text = r.returncode, (r.stdout + r.stderr)
    except subprocess.TimeoutExpired as e:
        rc, text = 124, f"timed out after {timeout} s: {e}"
    return rc, text, time.time() - t0


def torch_timings(case, arrays, ref, torch, iters, warmup):
    """Median ms of each torch system with bench_model's protocol (CUDA events around each run,
    then a synchronize; input sets rotated when one set is under twice the L2), and each one's
    relative L2 error against the float64 reference."""
    import torch.nn.functional as F

    dev = torch.device("cuda")
    dt = torch.float32 if case["dtype"] == "fp32" else torch.float16
    set_bytes = sum(a.nbytes for a in arrays) + ref.size * (4 if case["dtype"] == "fp32" else 2)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    nsets = min(16, 2 * l2 // max(set_bytes, 1) + 1) if set_bytes < 2 * l2 else 1
    sets = []
    for s in range(nsets):
        sets.append([torch.from_numpy(a).to(dev, dt) for a in arrays])
    scale = 1.0 / math.sqrt(HEAD_DIM)

    def rotated(fn):
        # The rotary cases: Q and K rotated first, in eager torch ops, as the model runs them.
        if not case.get("rotary"):
            return fn
        return lambda q, k, v, bias, cos, sin: fn(rotate(q, cos, sin, torch),
                                                  rotate(k, cos, sin, torch), v, bias)

    @rotated
    def math_attention(q, k, v, bias):
        return torch.softmax((q @ k.transpose(-1, -2)) * scale + bias, dim=-1) @ v

    @rotated
    def sdpa(q, k, v, bias):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=scale)

    systems = [("torch math", math_attention, None), ("sdpa default", sdpa, None)]
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        systems += [("sdpa efficient", sdpa, SDPBackend.EFFICIENT_ATTENTION),
                    ("sdpa cudnn", sdpa, SDPBackend.CUDNN_ATTENTION),
                    ("sdpa flash (no mask)",
                     rotated(lambda q, k, v, bias: F.scaled_dot_product_attention(q, k, v,
                                                                                  scale=scale)),
                     SDPBackend.FLASH_ATTENTION)]
    except ImportError:
        sdpa_kernel = None
    results = {}
    for name, fn, backend in systems:
        try:
            ctx = sdpa_kernel([backend]) if backend is not None else _null()
            with ctx, torch.no_grad():
                out = fn(*sets[0])
                torch.cuda.synchronize()
                err = None if "no mask" in name else rel_l2(out.float().cpu().numpy(), ref)
                for i in range(warmup):
                    fn(*sets[i % nsets])
                torch.cuda.synchronize()
                ms = []
                start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                for i in range(iters):
                    x = sets[i % nsets]
                    start.record()
                    fn(*x)
                    stop.record()
                    stop.synchronize()
                    ms.append(start.elapsed_time(stop))
            results[name] = {"median_ms": float(np.median(ms)),
                             "p90_ms": float(np.percentile(ms, 90)), "rel_l2": err}
        except Exception as e:  # a backend that refuses the shape or the mask
            results[name] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"}
    del sets
    torch.cuda.empty_cache()
    return results


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def cmd_run(args):
    d, libs, out = Path(args.dir), Path(args.libs), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cs = json.loads((d / "cases.json").read_text())
    if args.cases:
        want = set(args.cases.split(","))
        cs = [c for c in cs if c["name"] in want]
    try:
        import torch
        gpu = torch.cuda.is_available()
    except ImportError:
        torch, gpu = None, False
    device = "cuda" if gpu else "cpu"
    deadline = time.time() + args.budget if args.budget > 0 else float("inf")
    env = {}
    if gpu:
        p = torch.cuda.get_device_properties(0)
        env = {"device": p.name, "sms": p.multi_processor_count, "l2_bytes": p.L2_cache_size,
               "torch": torch.__version__, "cuda": torch.version.cuda,
               "cudnn": torch.backends.cudnn.version()}
    results = {"env": env, "target": (libs / "target.txt").read_text().strip()
               if (libs / "target.txt").exists() else "?", "cases": []}
    overall = 0
    for c in cs:
        if time.time() > deadline:
            print(f"attention_bench: out of budget before {c['name']}")
            results["cases"].append({"case": c, "skipped": "out of --budget"})
            continue
        data = out / "data" / c["name"]
        data.mkdir(parents=True, exist_ok=True)
        arrays = make_inputs(c, seed=len(c["name"]) * 1000 + c["keys"])
        for i, a in enumerate(arrays):
            np.save(data / f"input_{i}.npy", a)
        ref = reference(arrays, torch, device)
        np.save(data / "ref.npy", ref.astype(np.float32))
        row = {"case": c}
        for variant in ("fused", "unfused"):
            lib = libs / f"{c['name']}_{variant}.so"
            if not lib.exists():
                row[variant] = {"error": "no library"}
                overall = 1
                continue
            n, kinds = launches(libs / f"{c['name']}_{variant}.json")
            rc, text, secs = stitch_run_check(args.stitch_run, lib, c, data, data / variant, 300)
            got = data / variant / "o.npy"
            err = rel_l2(np.load(got), ref) if got.exists() else None
            v = {"launches": n, "kinds": kinds, "check": "PASS" if rc == 0 else f"FAIL ({rc})",
                 "rel_l2": err}
            if rc != 0:
                overall = 1
                v["check_output"] = text[-1500:]
            bj = data / f"bench_{variant}.json"
            if args.no_timing:
                row[variant] = v
                print(f"{c['name']} {variant}: {v.get('check')} rel_l2 {err}, {n} launches {kinds}",
                      flush=True)
                continue
            r = subprocess.run([args.bench_model, str(lib), "--inputs", str(data), "--warmup",
                                str(args.warmup), "--iters", str(args.iters), "--json", str(bj)],
                               capture_output=True, text=True, timeout=300)
            if r.returncode == 0 and bj.exists():
                b = json.loads(bj.read_text())
                v.update({"median_ms": b["median_ms"], "p90_ms": b["p90_ms"],
                          "rotate_sets": b.get("rotate_sets")})
            else:
                v["bench_error"] = (r.stdout + r.stderr)[-800:]
                overall = 1
            row[variant] = v
            print(f"{c['name']} {variant}: {v.get('check')} rel_l2 {err} "
                  f"{v.get('median_ms', float('nan')):.4f} ms, {n} launches {kinds}", flush=True)
        if gpu and not args.no_timing:
            row["torch"] = torch_timings(c, arrays, ref, torch, args.iters, args.warmup)
            print(f"{c['name']} torch: " + ", ".join(
                f"{k} {v.get('median_ms', float('nan')):.4f} ms" for k, v in row["torch"].items()),
                flush=True)
        results["cases"].append(row)

    # compute-sanitizer around stitch-run on the fused libraries of the smaller cases.
    san = []
    tools = [t for t in args.sanitizer.split(",") if t] if gpu else []
    # memcheck on sequence 512 and below and the decode step; racecheck (slower: it tracks every
    # shared-memory access) on sequence 128 and the decode step.
    def small(tool):
        limit = 128 if tool == "racecheck" else 512
        return [c for c in cs if c["keys"] <= limit or c["queries"] == 1]
    wrapper_script = Path(__file__).with_name("stitch-run-sanitized")
    for tool in tools:
        for c in small(tool):
            if time.time() > deadline:
                san.append({"tool": tool, "case": c["name"], "result": "SKIP (out of --budget)"})
                continue
            data = out / "data" / c["name"]
            if not (data / "ref.npy").exists():
                continue
            os.environ["STITCH_RUN_REAL"] = args.stitch_run
            os.environ["STITCH_SANITIZER_TOOL"] = tool
            os.environ["STITCH_SANITIZER_PRINT_LIMIT"] = "10000"
            rc, text, secs = stitch_run_check(str(wrapper_script), libs / f"{c['name']}_fused.so",
                                              c, data, data / f"san_{tool}", 240)
            res = "PASS" if rc == 0 else ("FINDINGS" if rc == 99 else f"FAIL ({rc})")
            library = library_only_hazards(text) if rc == 99 and tool == "racecheck" else None
            if library and "PASS:" in text:
                res = "PASS (hazards only in library kernels: " + ", ".join(library) + ")"
            elif rc != 0:
                overall = 1
            san.append({"tool": tool, "case": c["name"], "result": res, "seconds": round(secs, 1),
                        "output": text[-1500:] if rc != 0 else ""})
            print(f"sanitizer {tool} {c['name']}: {res} in {secs:.1f} s", flush=True)
    results["sanitizer"] = san
    (out / "attention.json").write_text(json.dumps(results, indent=1))
    table = render(results)
    (out / "attention.md").write_text(table)
    print(table)
    return overall


def fmt(v, key="median_ms"):
    if not isinstance(v, dict) or key not in v or v[key] is None:
        return "–"
    return f"{v[key]:.4f}" if key == "median_ms" else f"{v[key]:.1e}"


def render(results):
    lines = ["| case | B×H×Sq×Skv | fused ms (launches) | unfused ms (launches) | fused / unfused "
             "| sdpa default | sdpa efficient | sdpa cudnn | sdpa flash, no mask | torch math "
             "| fused error | sdpa default error |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in results["cases"]:
        c = row["case"]
        if "skipped" in row:
            lines.append(f"| {c['name']} | skipped: {row['skipped']} |" + " |" * 10)
            continue
        f, u, t = row.get("fused", {}), row.get("unfused", {}), row.get("torch", {})
        ratio = (f"{f['median_ms'] / u['median_ms']:.2f}"
                 if "median_ms" in f and "median_ms" in u else "–")
        lines.append(
            f"| {c['name']} | {c['batch']}×{HEADS}×{c['queries']}×{c['keys']} "
            f"| {fmt(f)} ({f.get('launches', '?')}) | {fmt(u)} ({u.get('launches', '?')}) | {ratio} "
            f"| {fmt(t.get('sdpa default'))} | {fmt(t.get('sdpa efficient'))} "
            f"| {fmt(t.get('sdpa cudnn'))} | {fmt(t.get('sdpa flash (no mask)'))} "
            f"| {fmt(t.get('torch math'))} | {fmt(f, 'rel_l2')} {f.get('check', '')} "
            f"| {fmt(t.get('sdpa default'), 'rel_l2')} |")
    if results.get("sanitizer"):
        lines += ["", "| sanitizer | case | result | s |", "|---|---|---|---|"]
        lines += [f"| {s['tool']} | {s['case']} | {s['result']} | {s.get('seconds', '')} |"
                  for s in results["sanitizer"]]
    return "\n".join(lines) + "\n"


def bench_parser(doc):
    """The three subcommands (models, build, run) and their options, as this script and
    chain_bench.py take them."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("models")
    m.add_argument("dir")
    m.add_argument("--quick", action="store_true")
    b = sub.add_parser("build")
    b.add_argument("dir")
    b.add_argument("--stitchc", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--target", default="cuda", choices=["cuda", "host"])
    b.add_argument("--jobs", type=int, default=2)
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--libs", required=True)
    r.add_argument("--stitch-run", required=True)
    r.add_argument("--bench-model", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--iters", type=int, default=100)
    r.add_argument("--warmup", type=int, default=10)
    r.add_argument("--sanitizer", default="memcheck,racecheck")
    r.add_argument("--cases", default="")
    r.add_argument("--no-timing", action="store_true",
                   help="check and sanitize only: no bench_model, no torch (for a busy GPU)")
    r.add_argument("--budget", type=float, default=0, help="seconds; cases not started by then are skipped")
    return ap


def main():
    a = bench_parser(__doc__).parse_args()
    return {"models": cmd_models, "build": cmd_build, "run": cmd_run}[a.cmd](a) or 0


if __name__ == "__main__":
    sys.exit(main())
