#!/usr/bin/env python3
"""Results of scripts/gpu/run.sh: errors against PyTorch, and the report.

    summarize.py errors MODEL_DIR TARGET RC
        stitch-run's outputs (MODEL_DIR/out_TARGET/<output>.npy) against PyTorch's
        (MODEL_DIR/ref_<k>.npy): max |error|, max |error| / max |ref|, relative L2 error;
        writes MODEL_DIR/check_TARGET.json (RC is stitch-run's exit status at rtol 1e-3,
        atol 1e-4) and prints one line.
    summarize.py report OUTDIR --target T --models A,B,...
        OUTDIR/results.json (everything), results.csv (one row per model and system),
        kernels.csv (stitchc's kernels: time, estimated bytes, GB/s, fraction of the copy),
        table.md (the tables of docs/benchmarks.md), table.txt (the short table run.sh prints
        last) and, for a CUDA run with matplotlib, benchmarks.png.
    summarize.py plot RESULTS.json PNG
        the plot alone (latency per model and system, relative to stitchc).
"""
import csv
import json
import os
import sys

import numpy as np

SYSTEMS = [("stitchc", "stitchc"), ("eager", "PyTorch eager"), ("compile", "torch.compile"),
           ("autotune", "torch.compile max-autotune"), ("xla", "XLA (jax.jit)")]


def errors(d, target, rc):
    meta = json.load(open(os.path.join(d, "meta.json")))
    rows = []
    for k, o in enumerate(meta["outputs"]):
        ref = np.load(os.path.join(d, f"ref_{k}.npy")).astype(np.float64)
        p = os.path.join(d, f"out_{target}", o["name"] + ".npy")
        if not os.path.exists(p):
            rows.append({"output": o["name"], "missing": True})
            continue
        got = np.load(p).astype(np.float64)
        diff = np.abs(got - ref)
        rows.append({"output": o["name"], "max_abs": float(diff.max()),
                     "max_ref": float(np.abs(ref).max()),
                     "max_abs_over_max_ref": float(diff.max() / max(np.abs(ref).max(), 1e-30)),
                     "rel_l2": float(np.linalg.norm(diff) / max(np.linalg.norm(ref), 1e-30)),
                     "nan": bool(np.isnan(got).any())})
    r = {"model": meta["name"], "target": target, "pass": int(rc) == 0, "rtol": 1e-3, "atol": 1e-4,
         "reference_device": meta.get("reference_device"), "outputs": rows}
    json.dump(r, open(os.path.join(d, f"check_{target}.json"), "w"), indent=1)
    worst = max((x.get("max_abs", float("nan")) for x in rows), default=float("nan"))
    rel = max((x.get("rel_l2", float("nan")) for x in rows), default=float("nan"))
    print(f"{meta['name']}: {'PASS' if r['pass'] else 'FAIL'} vs PyTorch ({meta.get('reference_device')}): "
          f"max abs err {worst:.3g}, worst relative L2 {rel:.3g}")


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


def report(out, target, models):
    env = load(os.path.join(out, "env.json")) or {}
    stages = []
    if os.path.exists(os.path.join(out, "stages.tsv")):
        for line in open(os.path.join(out, "stages.tsv")):
            f = line.rstrip("\n").split("\t")
            if len(f) >= 4:
                stages.append({"stage": f[0], "status": f[1], "seconds": int(f[2]), "note": f[3]})
    res = {"target": target, "env": env, "stages": stages, "models": {}}
    rows, kernel_rows = [], []
    for m in models:
        d = os.path.join(out, "models", m)
        meta = load(os.path.join(d, "meta.json"))
        if meta is None:
            continue
        entry = {"meta": meta, "compile": load(os.path.join(d, f"compile_{target}.json")),
                 "check": load(os.path.join(d, f"check_{target}.json")),
                 "stitchc": load(os.path.join(d, f"bench_stitchc_{target}.json")),
                 "peers": load(os.path.join(d, "bench_peers.json")) if target == "cuda" else None}
        plan = load(os.path.join(d, "plan.json"))
        if plan:
            groups = plan["plan"]["groups"]
            entry["plan"] = {"groups": len(groups),
                             "kernels": sum(1 for g in groups if g["kind"] == "kernel"),
                             "library_calls": sum(1 for g in groups if g["kind"] in ("cublaslt", "cudnn")),
                             "schemes": {s: sum(1 for g in groups if g.get("scheme") == s)
                                         for s in ("local", "regional", "independent", "global")},
                             "estimated_bytes": sum(g.get("estimated_bytes", 0) for g in groups)}
        res["models"][m] = entry
        peers = (entry["peers"] or {}).get("systems", {})
        st = entry["stitchc"] or {}
        base = st.get("median_ms")
        check = entry["check"] or {}
        for key, label in SYSTEMS:
            if key == "stitchc":
                r = dict(st)
                p = peers.get("stitchc", {})
                r["launches"] = p.get("launches", (entry.get("plan") or {}).get("kernels", 0)
                                      + (entry.get("plan") or {}).get("library_calls", 0) if target == "host" else None)
                r["launches_from"] = "profiler" if "launches" in p else ("plan (kernels + library calls)" if target == "host" else None)
                err = max((o.get("max_abs", float("nan")) for o in check.get("outputs", [])), default=None)
                ok = check.get("pass")
            else:
                r = peers.get(key)
                if not r:
                    continue
                err = max((e["max_abs"] for e in r.get("errors", [])), default=None)
                ok = None
            if not r or ("median_ms" not in r and "error" not in r):
                continue
            rows.append({"model": m, "system": label, "target": target,
                         "median_ms": r.get("median_ms"), "p90_ms": r.get("p90_ms"),
                         "iters": r.get("iters"), "launches": r.get("launches"),
                         "launches_from": r.get("launches_from", "torch.profiler" if r.get("launches") is not None else None),
                         "max_abs_err_vs_pytorch": err, "check_pass": ok,
                         "vs_stitchc": (r["median_ms"] / base) if base and r.get("median_ms") else None,
                         "error": r.get("error")})
        for k in (peers.get("stitchc") or {}).get("kernels", []):
            kernel_rows.append(dict(model=m, **{x: k.get(x) for x in (
                "kernel", "group", "scheme", "nodes", "calls_per_run", "mean_us", "estimated_bytes",
                "achieved_gbps", "fraction_of_copy")}))
        if entry["peers"]:
            res.setdefault("copy_gbps", entry["peers"].get("copy_gbps"))
    res["rows"] = rows
    json.dump(res, open(os.path.join(out, "results.json"), "w"), indent=1)
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        cols = ["model", "system", "target", "median_ms", "p90_ms", "iters", "launches", "launches_from",
                "max_abs_err_vs_pytorch", "check_pass", "vs_stitchc", "error"]
        w = csv.DictWriter(f, cols)
        w.writeheader()
        w.writerows(rows)
    if kernel_rows:
        with open(os.path.join(out, "kernels.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, list(kernel_rows[0].keys()))
            w.writeheader()
            w.writerows(kernel_rows)

    # The short table: one line per model and system.
    unit = "ms" if target == "cuda" else "ms (host CPU)"
    lines = [f"{'model':<13} {'system':<27} {'median ' + unit:>16} {'p90':>9} {'launches':>8} "
             f"{'max|err|':>9} {'peer/stitchc':>12}"]
    for r in rows:
        lines.append(f"{r['model']:<13} {r['system']:<27} {fmt_ms(r['median_ms']):>16} {fmt_ms(r['p90_ms']):>9} "
                     f"{fmt_count(r['launches']):>8} "
                     f"{('-' if r['max_abs_err_vs_pytorch'] is None else format(r['max_abs_err_vs_pytorch'], '.2g')):>9} "
                     f"{('-' if r['vs_stitchc'] is None or r['system'] == 'stitchc' else format(r['vs_stitchc'], '.2f') + 'x'):>12}"
                     + (f"  ERROR {r['error'][:60]}" if r.get("error") else ""))
    if target == "host":
        lines.append("HOST DRY RUN: the host target emulates the CUDA kernels on the CPU; these are not "
                     "performance numbers.")
    if res.get("copy_gbps"):
        lines.append(f"device-to-device copy: {res['copy_gbps']:.0f} GB/s (read + write)")
    table = "\n".join(lines)
    open(os.path.join(out, "table.txt"), "w").write(table + "\n")

    # Markdown for docs/benchmarks.md.
    md = ["| model | system | median ms | p90 ms | launches | max abs err vs PyTorch | time / stitchc |",
          "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        md.append(f"| {r['model']} | {r['system']} | {fmt_ms(r['median_ms'])} | {fmt_ms(r['p90_ms'])} | "
                  f"{'-' if r['launches'] is None else format(r['launches'], '.0f')} | "
                  f"{'-' if r['max_abs_err_vs_pytorch'] is None else format(r['max_abs_err_vs_pytorch'], '.2g')} | "
                  f"{'-' if r['vs_stitchc'] is None or r['system'] == 'stitchc' else format(r['vs_stitchc'], '.2f')} |")
    if kernel_rows:
        md += ["", "| model | kernel | scheme | µs | est. bytes | GB/s | of copy |", "|---|---|---|---:|---:|---:|---:|"]
        for k in kernel_rows:
            if k.get("group") is None:
                continue
            md.append(f"| {k['model']} | {k['kernel']} | {k['scheme']} | {k['mean_us']:.1f} | {k['estimated_bytes']} | "
                      f"{(k['achieved_gbps'] or 0):.0f} | {(k['fraction_of_copy'] or 0):.0%} |")
    md += ["", "| stage | status | seconds | note |", "|---|---|---:|---|"]
    md += [f"| {s['stage']} | {s['status']} | {s['seconds']} | {s['note']} |" for s in stages]
    open(os.path.join(out, "table.md"), "w").write("\n".join(md) + "\n")
    print(table)
    if target == "cuda":
        plot(os.path.join(out, "results.json"), os.path.join(out, "benchmarks.png"))
    else:
        print("plot: skipped (a plot is drawn only from a CUDA run)")


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
    models = list(dict.fromkeys(r["model"] for r in rows))
    labels = [lab for _, lab in SYSTEMS]
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(models)), 4))
    width = 0.8 / len(labels)
    for i, lab in enumerate(labels):
        ys = []
        for m in models:
            base = next((r["median_ms"] for r in rows if r["model"] == m and r["system"] == "stitchc"), None)
            v = next((r["median_ms"] for r in rows if r["model"] == m and r["system"] == lab), None)
            ys.append(v / base if v and base else 0)
        ax.bar([x + i * width for x in range(len(models))], ys, width, label=lab)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(models))], models, rotation=20)
    ax.set_ylabel("median latency / stitchc's (lower is faster)")
    env = res.get("env", {})
    ax.set_title(f"{env.get('device', '?')}, float32 (TF32 off), {env.get('date', '')}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"plot: {png}")


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "errors":
        errors(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) >= 3 and sys.argv[1] == "report":
        import argparse
        ap = argparse.ArgumentParser()
        ap.add_argument("out")
        ap.add_argument("--target", default="cuda")
        ap.add_argument("--models", default="")
        a = ap.parse_args(sys.argv[2:])
        report(a.out, a.target, [m for m in a.models.split(",") if m])
    elif len(sys.argv) == 4 and sys.argv[1] == "plot":
        plot(sys.argv[2], sys.argv[3])
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
