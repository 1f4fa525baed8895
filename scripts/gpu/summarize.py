#!/usr/bin/env python3
"""Results of scripts/gpu/run.sh: errors against PyTorch, and the report.

    summarize.py errors MODEL_DIR PRECISION TARGET RC
        stitch-run's outputs of one row (MODEL_DIR/PRECISION/out_TARGET/<output>.npy, float16
        and bfloat16 included) against PyTorch's float32 outputs (MODEL_DIR/ref_<k>.npy): max
        |error|, max |error| / max |ref|, relative L2 error; writes
        MODEL_DIR/PRECISION/check_TARGET.json (RC is stitch-run's exit status at the
        precision's tolerance, precisions.check_flags) and prints one line.
    summarize.py report OUTDIR --target T --models A,B,... --precisions P,Q,...
                        [--io-precision reduced|model]
        results keyed by (model, precision): OUTDIR/results.json (everything), results.csv (one
        row per model, precision and system), kernels.csv (stitchc's kernels: time, estimated
        bytes, GB/s, fraction of the copy), table.md (the tables of docs/benchmarks.md),
        table.txt (the short table run.sh prints last) and, for a CUDA run with matplotlib,
        benchmarks.png. Every error is against PyTorch float32; "peer/stitchc" compares systems
        within one precision.
    summarize.py plot RESULTS.json PNG
        the plot alone (latency per model, precision and system, relative to stitchc's in the
        same precision).
"""
import csv
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import precisions  # noqa: E402

SYSTEMS = [("stitchc", "stitchc"), ("eager", "PyTorch eager"), ("compile", "torch.compile"),
           ("autotune", "torch.compile max-autotune"), ("xla", "XLA (jax.jit)")]


def errors(d, precision, target, rc):
    meta = json.load(open(os.path.join(d, "meta.json")))
    r_dir = os.path.join(d, precision)
    rows = []
    for k, o in enumerate(meta["outputs"]):
        ref = np.load(os.path.join(d, f"ref_{k}.npy")).astype(np.float64)
        p = os.path.join(r_dir, f"out_{target}", o["name"] + ".npy")
        if not os.path.exists(p):
            rows.append({"output": o["name"], "missing": True})
            continue
        got = precisions.load_float(p)
        diff = np.abs(got - ref)
        rows.append({"output": o["name"], "max_abs": float(diff.max()),
                     "max_ref": float(np.abs(ref).max()),
                     "max_abs_over_max_ref": float(diff.max() / max(np.abs(ref).max(), 1e-30)),
                     "rel_l2": float(np.linalg.norm(diff) / max(np.linalg.norm(ref), 1e-30)),
                     "nan": bool(np.isnan(got).any())})
    r = {"model": meta["name"], "precision": precision, "target": target, "pass": int(rc) == 0,
         "tolerance": " ".join(precisions.check_flags(precision, d)), "reference": "PyTorch float32",
         "torch_rel_l2_same_precision": precisions.torch_error(precision, d),
         "reference_device": meta.get("reference_device"), "outputs": rows}
    json.dump(r, open(os.path.join(r_dir, f"check_{target}.json"), "w"), indent=1)
    worst = max((x.get("max_abs", float("nan")) for x in rows), default=float("nan"))
    rel = max((x.get("rel_l2", float("nan")) for x in rows), default=float("nan"))
    print(f"{meta['name']} {precision}: {'PASS' if r['pass'] else 'FAIL'} ({r['tolerance']}) vs PyTorch "
          f"float32 ({meta.get('reference_device')}): max abs err {worst:.3g}, worst relative L2 {rel:.3g}")


def load(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return None


def fmt_ms(x):
    if x is None:
        return "-"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}" if x < 1000 else f"{x:.0f}"


def fmt_count(x):
    return "-" if x is None else f"{x:.0f}"


def fmt_err(x):
    return "-" if x is None else f"{x:.2g}"


def worst(outputs, key):
    vals = [o[key] for o in outputs or [] if o.get(key) is not None]
    return max(vals) if vals else None


def plan_summary(plan):
    groups = plan["plan"]["groups"]
    return {"groups": len(groups),
            "kernels": sum(1 for g in groups if g["kind"] == "kernel"),
            "library_calls": sum(1 for g in groups if g["kind"] in ("cublaslt", "cudnn")),
            "schemes": {s: sum(1 for g in groups if g.get("scheme") == s)
                        for s in ("local", "regional", "independent", "global")},
            "estimated_bytes": sum(g.get("estimated_bytes", 0) for g in groups),
            "precision": plan.get("precision")}


def report(out, target, models, precision_names, io_precision="reduced"):
    env = load(os.path.join(out, "env.json")) or {}
    stages = []
    if os.path.exists(os.path.join(out, "stages.tsv")):
        for line in open(os.path.join(out, "stages.tsv")):
            f = line.rstrip("\n").split("\t")
            if len(f) >= 4:
                stages.append({"stage": f[0], "status": f[1], "seconds": int(f[2]), "note": f[3]})
    res = {"target": target, "env": env, "stages": stages, "io_precision": io_precision,
           "precisions": {p: precisions.describe(p, io_precision) for p in precision_names},
           "models": {}}
    rows, kernel_rows = [], []
    for p in precision_names:
        for m in models:
            d = os.path.join(out, "models", m)
            r_dir = os.path.join(d, p)
            meta = load(os.path.join(d, "meta.json"))
            if meta is None:
                continue
            entry = {"meta": meta, "precision": p,
                     "compile": load(os.path.join(r_dir, f"compile_{target}.json")),
                     "check": load(os.path.join(r_dir, f"check_{target}.json")),
                     "stitchc": load(os.path.join(r_dir, f"bench_stitchc_{target}.json")),
                     "peers": load(os.path.join(r_dir, "bench_peers.json")) if target == "cuda" else None}
            plan = load(os.path.join(r_dir, "plan.json"))
            if plan:
                entry["plan"] = plan_summary(plan)
            res["models"][f"{m}:{p}"] = entry
            rows += system_rows(m, p, target, entry)
            peers = (entry["peers"] or {}).get("systems", {})
            for k in (peers.get("stitchc") or {}).get("kernels", []):
                kernel_rows.append(dict(model=m, precision=p, **{x: k.get(x) for x in (
                    "kernel", "group", "scheme", "nodes", "calls_per_run", "mean_us", "estimated_bytes",
                    "achieved_gbps", "fraction_of_copy")}))
            if entry["peers"]:
                res.setdefault("copy_gbps", entry["peers"].get("copy_gbps"))
                res.setdefault("torch_settings", {})[p] = entry["peers"].get("torch_settings")
    res["rows"] = rows
    json.dump(res, open(os.path.join(out, "results.json"), "w"), indent=1)
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        cols = ["model", "precision", "system", "target", "median_ms", "p90_ms", "iters", "launches",
                "launches_from", "max_abs_err_vs_pytorch_fp32", "rel_l2_vs_pytorch_fp32", "check_pass",
                "vs_stitchc", "error"]
        w = csv.DictWriter(f, cols)
        w.writeheader()
        w.writerows(rows)
    if kernel_rows:
        with open(os.path.join(out, "kernels.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, list(kernel_rows[0].keys()))
            w.writeheader()
            w.writerows(kernel_rows)

    # The short table: one line per model, precision and system.
    unit = "ms" if target == "cuda" else "ms (host CPU)"
    lines = [f"{'model':<13} {'prec':<5} {'system':<27} {'median ' + unit:>16} {'p90':>9} {'launches':>8} "
             f"{'max|err|':>9} {'relL2':>8} {'peer/stitchc':>12}"]
    for r in rows:
        lines.append(f"{r['model']:<13} {r['precision']:<5} {r['system']:<27} {fmt_ms(r['median_ms']):>16} "
                     f"{fmt_ms(r['p90_ms']):>9} {fmt_count(r['launches']):>8} "
                     f"{fmt_err(r['max_abs_err_vs_pytorch_fp32']):>9} {fmt_err(r['rel_l2_vs_pytorch_fp32']):>8} "
                     f"{('-' if r['vs_stitchc'] is None or r['system'] == 'stitchc' else format(r['vs_stitchc'], '.2f') + 'x'):>12}"
                     + (f"  ERROR {r['error'][:60]}" if r.get("error") else ""))
    lines.append("errors: against PyTorch float32 (TF32 off); peer/stitchc: within the row's precision")
    if target == "host":
        lines.append("HOST DRY RUN: the host target emulates the CUDA kernels on the CPU; these are not "
                     "performance numbers.")
    if res.get("copy_gbps"):
        lines.append(f"device-to-device copy: {res['copy_gbps']:.0f} GB/s (read + write)")
    table = "\n".join(lines)
    open(os.path.join(out, "table.txt"), "w").write(table + "\n")

    # Markdown for docs/benchmarks.md.
    md = [f"Precisions: " + "; ".join(f"**{p}** {t}" for p, t in res["precisions"].items()) + ".", "",
          "| model | precision | system | median ms | p90 ms | launches | max abs err vs PyTorch fp32 "
          "| rel. L2 err vs PyTorch fp32 | time / stitchc |",
          "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        md.append(f"| {r['model']} | {r['precision']} | {r['system']} | {fmt_ms(r['median_ms'])} | {fmt_ms(r['p90_ms'])} | "
                  f"{fmt_count(r['launches'])} | {fmt_err(r['max_abs_err_vs_pytorch_fp32'])} | "
                  f"{fmt_err(r['rel_l2_vs_pytorch_fp32'])} | "
                  f"{'-' if r['vs_stitchc'] is None or r['system'] == 'stitchc' else format(r['vs_stitchc'], '.2f')} |")
    if kernel_rows:
        md += ["", "| model | precision | kernel | scheme | µs | est. bytes | GB/s | of copy |",
               "|---|---|---|---|---:|---:|---:|---:|"]
        for k in kernel_rows:
            if k.get("group") is None:
                continue
            md.append(f"| {k['model']} | {k['precision']} | {k['kernel']} | {k['scheme']} | {k['mean_us']:.1f} | "
                      f"{k['estimated_bytes']} | {(k['achieved_gbps'] or 0):.0f} | {(k['fraction_of_copy'] or 0):.0%} |")
    md += ["", "| stage | status | seconds | note |", "|---|---|---:|---|"]
    md += [f"| {s['stage']} | {s['status']} | {s['seconds']} | {s['note']} |" for s in stages]
    open(os.path.join(out, "table.md"), "w").write("\n".join(md) + "\n")
    print(table)
    if target == "cuda":
        plot(os.path.join(out, "results.json"), os.path.join(out, "benchmarks.png"))
    else:
        print("plot: skipped (a plot is drawn only from a CUDA run)")


def system_rows(m, p, target, entry):
    """The result rows of one (model, precision): stitchc's, then each peer's that ran."""
    peers = (entry["peers"] or {}).get("systems", {})
    st = entry["stitchc"] or {}
    base = st.get("median_ms")
    check = entry["check"] or {}
    plan = entry.get("plan") or {}
    rows = []
    for key, label in SYSTEMS:
        if key == "stitchc":
            r = dict(st)
            pr = peers.get("stitchc", {})
            r["launches"] = pr.get("launches", plan.get("kernels", 0) + plan.get("library_calls", 0)
                                   if target == "host" else None)
            r["launches_from"] = "profiler" if "launches" in pr else ("plan (kernels + library calls)" if target == "host" else None)
            outputs, ok = check.get("outputs", []), check.get("pass")
        else:
            r = peers.get(key)
            if not r or "not_run" in r:
                continue
            outputs, ok = r.get("errors", []), None
        if not r or ("median_ms" not in r and "error" not in r):
            continue
        rows.append({"model": m, "precision": p, "system": label, "target": target,
                     "median_ms": r.get("median_ms"), "p90_ms": r.get("p90_ms"),
                     "iters": r.get("iters"), "launches": r.get("launches"),
                     "launches_from": r.get("launches_from", "torch.profiler" if r.get("launches") is not None else None),
                     "max_abs_err_vs_pytorch_fp32": worst(outputs, "max_abs"),
                     "rel_l2_vs_pytorch_fp32": worst(outputs, "rel_l2"), "check_pass": ok,
                     "vs_stitchc": (r["median_ms"] / base) if base and r.get("median_ms") else None,
                     "error": r.get("error")})
    return rows


def plot(results_path, png):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot: skipped (no matplotlib in this python)")
        return
    res = json.load(open(results_path))
    rows = [r for r in res["rows"] if r.get("median_ms")]
    keys = list(dict.fromkeys((r["model"], r.get("precision", "fp32")) for r in rows))
    labels = [lab for _, lab in SYSTEMS]
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(keys)), 4))
    width = 0.8 / len(labels)

    def median(m, p, lab):
        return next((r["median_ms"] for r in rows if r["model"] == m
                     and r.get("precision", "fp32") == p and r["system"] == lab), None)
    for i, lab in enumerate(labels):
        ys = []
        for m, p in keys:
            base, v = median(m, p, "stitchc"), median(m, p, lab)
            ys.append(v / base if v and base else 0)
        ax.bar([x + i * width for x in range(len(keys))], ys, width, label=lab)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(keys))], [f"{m} {p}" for m, p in keys],
                  rotation=30, fontsize=7)
    ax.set_ylabel("median latency / stitchc's in the same precision\n(lower is faster)", fontsize=8)
    env = res.get("env", {})
    ax.set_title(f"{env.get('device', '?')}, fp32 = TF32 off; fp16/bf16 io {res.get('io_precision', '?')}, "
                 f"{env.get('date', '')}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"plot: {png}")


def main():
    if len(sys.argv) >= 6 and sys.argv[1] == "errors":
        errors(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif len(sys.argv) >= 3 and sys.argv[1] == "report":
        import argparse
        ap = argparse.ArgumentParser()
        ap.add_argument("out")
        ap.add_argument("--target", default="cuda")
        ap.add_argument("--models", default="")
        ap.add_argument("--precisions", default="fp32")
        ap.add_argument("--io-precision", default="reduced", choices=precisions.IO_PRECISIONS)
        a = ap.parse_args(sys.argv[2:])
        report(a.out, a.target, [m for m in a.models.split(",") if m],
               [p for p in a.precisions.split(",") if p], a.io_precision)
    elif len(sys.argv) == 4 and sys.argv[1] == "plot":
        plot(sys.argv[2], sys.argv[3])
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
