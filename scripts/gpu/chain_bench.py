#!/usr/bin/env python3
"""chain_bench.py: stitchc's GEMM chains (issue 19) against their unfused plans, on one GPU.

  chain_bench.py models DIR [--quick]
      writes DIR/<case>.onnx, its weights' float64 copies and DIR/cases.json: feed-forward blocks
      in float16 as exporters write them, each GEMM -> pointwise -> GEMM plus the residual:
      BERT-base's (768 -> 3072 -> 768, biases, erf GELU), GPT-2's (768 -> 3072 -> 768, biases,
      tanh GELU) and a LLaMA-style gated MLP (4096 -> 11008 -> 4096, one MatMul of the merged
      gate and up weights, its halves by Slices, SiLU(gate) * up), each at M = 1, 128 and 2048
      rows. --quick: the same forms at 64 -> 256 -> 64 and M = 1, 24 (for the host target).
  chain_bench.py build DIR --stitchc STITCHC --out LIBDIR [--target cuda|host] [--jobs N]
      compiles each case twice: fused (`--gemm-chain fused`: one gemm_chain group, whatever the
      cost model would choose) and unfused (`--gemm-chain unfused`: cuBLASLt GEMMs with their
      epilogues and a kernel between them); writes each plan's report.
  chain_bench.py run DIR --libs LIBDIR --stitch-run STITCH_RUN --bench-model BENCH_MODEL
                     --out OUTDIR [--iters N] [--warmup N] [--sanitizer TOOLS] [--cases LIST]
      per case: random inputs (fixed seed), a float64 reference (numpy), stitch-run's check of
      both libraries against it (relative L2 5e-3), their latency with bench_model and the
      achieved TFLOP/s of the products (not with --no-timing), the chain's configuration from
      the report (tile rows, cluster, its modeled time), and compute-sanitizer (each of TOOLS)
      around stitch-run on the fused libraries at M <= 128. Writes OUTDIR/chain.json and
      OUTDIR/chain.md (the table) and prints the table.
"""
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from attention_bench import bench_parser, launches, library_only_hazards, rel_l2  # noqa: E402

FORMS = {  # name: (inner, hidden, activation)
    "bert": (768, 3072, "gelu"),
    "gpt2": (768, 3072, "gelu_tanh"),
    "llama": (4096, 11008, "silu_gated"),
}


def cases(quick=False):
    rows = [1, 24] if quick else [1, 128, 2048]
    out = []
    for form, (inner, hidden, activation) in FORMS.items():
        if quick:
            inner, hidden = 64, 256
        for m in rows:
            out.append({"name": f"{form}_m{m}", "form": form, "rows": m, "inner": inner,
                        "hidden": hidden, "activation": activation})
    return out


def weights(case):
    """The block's weights (float16 values, kept as float64 for the reference), fixed seeds."""
    rng = np.random.default_rng(case["inner"] * 7 + case["hidden"])
    k, h = case["inner"], case["hidden"]
    scale1, scale2 = 1.0 / np.sqrt(k), 1.0 / np.sqrt(h)
    w = {}
    if case["activation"] == "silu_gated":
        w["w_gate_up"] = rng.standard_normal((k, 2 * h)) * scale1
    else:
        w["w1"] = rng.standard_normal((k, h)) * scale1
        w["b1"] = rng.standard_normal(h) * 0.1
        w["b2"] = rng.standard_normal(k) * 0.1
    w["w2"] = rng.standard_normal((h, k)) * scale2
    return {n: v.astype(np.float16).astype(np.float64) for n, v in w.items()}


def make_model(case, path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = weights(case)
    k, h, m = case["inner"], case["hidden"], case["rows"]
    inits = [numpy_helper.from_array(v.astype(np.float16), n) for n, v in w.items()]
    if case["activation"] == "silu_gated":
        for n, v in (("zero", 0), ("half", h), ("full", 2 * h), ("last", -1)):
            inits.append(numpy_helper.from_array(np.array([v], np.int64), n))
        nodes = [helper.make_node("MatMul", ["x", "w_gate_up"], ["gate_up"], name="gate_up"),
                 helper.make_node("Slice", ["gate_up", "zero", "half", "last"], ["gate"],
                                  name="gate"),
                 helper.make_node("Slice", ["gate_up", "half", "full", "last"], ["up"], name="up"),
                 helper.make_node("Sigmoid", ["gate"], ["gate_sigmoid"], name="sigmoid"),
                 helper.make_node("Mul", ["gate", "gate_sigmoid"], ["silu"], name="silu"),
                 helper.make_node("Mul", ["silu", "up"], ["hidden"], name="gated"),
                 helper.make_node("MatMul", ["hidden", "w2"], ["down"], name="down"),
                 helper.make_node("Add", ["down", "x"], ["y"], name="residual")]
    else:
        approximate = "tanh" if case["activation"] == "gelu_tanh" else "none"
        nodes = [helper.make_node("MatMul", ["x", "w1"], ["p"], name="fc1"),
                 helper.make_node("Add", ["p", "b1"], ["pb"], name="bias1"),
                 helper.make_node("Gelu", ["pb"], ["hidden"], name="gelu",
                                  approximate=approximate),
                 helper.make_node("MatMul", ["hidden", "w2"], ["o"], name="fc2"),
                 helper.make_node("Add", ["o", "b2"], ["ob"], name="bias2"),
                 helper.make_node("Add", ["ob", "x"], ["y"], name="residual")]
    f16 = TensorProto.FLOAT16
    graph = helper.make_graph(nodes, case["name"], [helper.make_tensor_value_info("x", f16, [m, k])],
                              [helper.make_tensor_value_info("y", f16, [m, k])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    onnx.save(model, path)


def reference(case, x):
    """y in float64 from the float16 weights and input (no intermediate rounding)."""
    w = weights(case)
    x = x.astype(np.float64)
    if case["activation"] == "silu_gated":
        gu = x @ w["w_gate_up"]
        g, u = gu[:, :case["hidden"]], gu[:, case["hidden"]:]
        hidden = g / (1.0 + np.exp(-g)) * u
        return hidden @ w["w2"] + x
    p = x @ w["w1"] + w["b1"]
    if case["activation"] == "gelu_tanh":
        hidden = 0.5 * p * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (p + 0.044715 * p ** 3)))
    else:
        from math import erf
        hidden = 0.5 * p * (1.0 + np.vectorize(erf)(p / np.sqrt(2.0)))
    return hidden @ w["w2"] + w["b2"] + x


def flops(case):
    products = 2 if case["activation"] == "silu_gated" else 1
    return 2.0 * case["rows"] * case["hidden"] * (case["inner"] * products + case["inner"])


def cmd_models(args):
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    cs = cases(args.quick)
    for c in cs:
        make_model(c, d / f"{c['name']}.onnx")
    (d / "cases.json").write_text(json.dumps(cs, indent=1))
    print(f"chain_bench: {len(cs)} models in {d}")


def chain_config(report_path):
    """The gemm_chain group's configuration from a plan's report, or None."""
    plan = json.loads(Path(report_path).read_text())["plan"]
    for g in plan["groups"]:
        if g["kind"] == "gemm_chain":
            s = g["spec"]
            return {"tile_rows": s["tile"]["rows"], "cluster": s["cluster_blocks"],
                    "blocks": g["grid"][0], "modeled_us": s["search"]["modeled_us"]}
    return None


def cmd_build(args):
    d, out = Path(args.dir), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cs = json.loads((d / "cases.json").read_text())
    jobs = []
    for c in cs:
        for variant in ("fused", "unfused"):
            base = out / f"{c['name']}_{variant}"
            jobs.append([args.stitchc, str(d / f"{c['name']}.onnx"), "--target", args.target,
                         "-q", "-j", "1", "-o", f"{base}.so", "--report", f"{base}.json",
                         "--gemm-chain", variant])

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
                print(f"chain_bench: {name}: stitchc failed ({r.returncode}): {r.stderr.strip()}")
                continue
            n, kinds = launches(out / f"{name}.json")
            config = chain_config(out / f"{name}.json")
            if name.endswith("_fused") and config is None:
                failed += 1
                print(f"chain_bench: {name}: the fused plan holds no gemm_chain group")
            print(f"built {name} in {secs:.1f} s: {n} launches {kinds} {config or ''}")
    (out / "target.txt").write_text(args.target + "\n")
    return 1 if failed else 0


def stitch_run_check(stitch_run, lib, data, outdir, timeout, wrapper=()):
    cmd = [*wrapper, stitch_run, str(lib), "--input", f"x={data}/input_0.npy",
           "--expected", f"y={data}/ref.npy", "--max-rel-l2", "5e-3", "--output-dir", str(outdir)]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        rc, text = r.returncode, (r.stdout + r.stderr)
    except subprocess.TimeoutExpired as e:
        rc, text = 124, f"timed out after {timeout} s: {e}"
    return rc, text, time.time() - t0


def cmd_run(args):
    d, libs, out = Path(args.dir), Path(args.libs), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cs = json.loads((d / "cases.json").read_text())
    if args.cases:
        want = set(args.cases.split(","))
        cs = [c for c in cs if c["name"] in want]
    target = (libs / "target.txt").read_text().strip() if (libs / "target.txt").exists() else "?"
    deadline = time.time() + args.budget if args.budget > 0 else float("inf")
    results = {"target": target, "cases": []}
    overall = 0
    for c in cs:
        if time.time() > deadline:
            results["cases"].append({"case": c, "skipped": "out of --budget"})
            continue
        data = out / "data" / c["name"]
        data.mkdir(parents=True, exist_ok=True)
        x = np.random.default_rng(c["rows"] + 17).standard_normal((c["rows"], c["inner"]))
        x = x.astype(np.float16)
        np.save(data / "input_0.npy", x)
        ref = reference(c, x)
        np.save(data / "ref.npy", ref.astype(np.float32))
        row = {"case": c}
        for variant in ("fused", "unfused"):
            lib = libs / f"{c['name']}_{variant}.so"
            if not lib.exists():
                row[variant] = {"error": "no library"}
                overall = 1
                continue
            n, kinds = launches(libs / f"{c['name']}_{variant}.json")
            rc, text, _ = stitch_run_check(args.stitch_run, lib, data, data / variant, 600)
            got = data / variant / "y.npy"
            err = rel_l2(np.load(got), ref) if got.exists() else None
            v = {"launches": n, "kinds": kinds, "check": "PASS" if rc == 0 else f"FAIL ({rc})",
                 "rel_l2": err, "config": chain_config(libs / f"{c['name']}_{variant}.json")}
            if rc != 0:
                overall = 1
                v["check_output"] = text[-1500:]
            if not args.no_timing:
                bj = data / f"bench_{variant}.json"
                r = subprocess.run([args.bench_model, str(lib), "--inputs", str(data), "--warmup",
                                    str(args.warmup), "--iters", str(args.iters), "--json", str(bj)],
                                   capture_output=True, text=True, timeout=600)
                if r.returncode == 0 and bj.exists():
                    b = json.loads(bj.read_text())
                    v.update({"median_ms": b["median_ms"], "p90_ms": b["p90_ms"],
                              "tflops": flops(c) / (b["median_ms"] * 1e-3) / 1e12})
                else:
                    v["bench_error"] = (r.stdout + r.stderr)[-800:]
                    overall = 1
            row[variant] = v
            print(f"{c['name']} {variant}: {v['check']} rel_l2 {err} "
                  f"{v.get('median_ms', float('nan')):.4f} ms, {n} launches {kinds}", flush=True)
        results["cases"].append(row)

    # compute-sanitizer around stitch-run on the fused libraries at M <= 128 (on a GPU only).
    san = []
    tools = [t for t in args.sanitizer.split(",") if t] if target == "cuda" else []
    wrapper = Path(__file__).with_name("stitch-run-sanitized")
    for tool in tools:
        for c in [c for c in cs if c["rows"] <= 128]:
            data = out / "data" / c["name"]
            if time.time() > deadline or not (data / "ref.npy").exists():
                san.append({"tool": tool, "case": c["name"], "result": "SKIP"})
                continue
            os.environ["STITCH_RUN_REAL"] = args.stitch_run
            os.environ["STITCH_SANITIZER_TOOL"] = tool
            os.environ["STITCH_SANITIZER_PRINT_LIMIT"] = "10000"
            rc, text, secs = stitch_run_check(str(wrapper), libs / f"{c['name']}_fused.so", data,
                                              data / f"san_{tool}", 600)
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
    (out / "chain.json").write_text(json.dumps(results, indent=1))
    table = render(results)
    (out / "chain.md").write_text(table)
    print(table)
    return overall


def render(results):
    def ms(v):
        return f"{v['median_ms']:.4f}" if "median_ms" in v else "–"

    lines = ["| case | M x K -> H -> K | fused ms (launches) | TFLOP/s | unfused ms (launches) "
             "| TFLOP/s | fused / unfused | tile rows, cluster (blocks) | modeled µs "
             "| fused error | unfused error |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in results["cases"]:
        c = row["case"]
        if "skipped" in row:
            lines.append(f"| {c['name']} | skipped: {row['skipped']} |" + " |" * 9)
            continue
        f, u = row.get("fused", {}), row.get("unfused", {})
        ratio = (f"{f['median_ms'] / u['median_ms']:.2f}"
                 if "median_ms" in f and "median_ms" in u else "–")
        cfg = f.get("config") or {}
        err = lambda v: f"{v['rel_l2']:.1e} {v['check']}" if v.get("rel_l2") is not None else "–"
        lines.append(
            f"| {c['name']} | {c['rows']} x {c['inner']} -> {c['hidden']} -> {c['inner']} "
            f"| {ms(f)} ({f.get('launches', '?')}) | {f.get('tflops', 0):.1f} "
            f"| {ms(u)} ({u.get('launches', '?')}) | {u.get('tflops', 0):.1f} | {ratio} "
            f"| {cfg.get('tile_rows', '?')}, {cfg.get('cluster', '?')} ({cfg.get('blocks', '?')}) "
            f"| {cfg.get('modeled_us', '–')} | {err(f)} | {err(u)} |")
    if results.get("sanitizer"):
        lines += ["", "| sanitizer | case | result | s |", "|---|---|---|---|"]
        lines += [f"| {s['tool']} | {s['case']} | {s['result']} | {s.get('seconds', '')} |"
                  for s in results["sanitizer"]]
    return "\n".join(lines) + "\n"


def main():
    a = bench_parser(__doc__).parse_args()
    return {"models": cmd_models, "build": cmd_build, "run": cmd_run}[a.cmd](a) or 0


if __name__ == "__main__":
    sys.exit(main())
