#!/usr/bin/env python3
"""Plans every real-model fixture (tests/models/*.onnx) with stitchc's three planners and writes
the table of modeled launches and HBM bytes per model to docs/fusion.md (and prints it), a
second table of launches per transformer layer and lone data-movement kernels, one of attention
groups, and one of GEMM chains in float16 plans.

Only planning runs (`stitchc --report`, no compilation), so this takes seconds. The numbers are
the cost model's estimates (src/planner/cost_model.h), not measurements on a GPU.

usage: scripts/bench/fusion_table.py [--stitchc build/stitchc] [--out docs/fusion.md]
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def shape_flags(model):
    """--input-shape for each input with a symbolic dim, from the fixture's inputs.json."""
    with open(model[: -len(".onnx")] + ".inputs.json") as f:
        spec = json.load(f)
    flags = []
    for inp in spec["inputs"]:
        if any(isinstance(d, str) for d in inp["shape"]):
            dims = [spec["dims"][d] if isinstance(d, str) else d for d in inp["shape"]]
            flags += ["--input-shape", inp["name"] + "=" + "x".join(map(str, dims))]
    return flags


def plan(stitchc, model, planner, extra=()):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "plan.json")
        subprocess.run([stitchc, model, "--planner", planner, "--report", report]
                       + shape_flags(model) + list(extra), check=True)
        with open(report) as f:
            return json.load(f)["plan"]


def chain_stats(chained, unchained):
    """(chains, their modeled HBM bytes, what the unchained plan's groups of the same nodes
    move, launches per layer with and without chains) of float16 plans with and without
    --gemm-chain unfused."""
    chains = [g for g in chained["groups"] if g["kind"] == "gemm_chain"]
    members = set()
    for g in chains:
        members |= {n["name"] for n in g["nodes"]}
    chain_bytes = sum(g["estimated_bytes"] for g in chains)
    unchained_bytes = sum(g["estimated_bytes"] for g in unchained["groups"]
                          if g["nodes"] and all(n["name"] in members for n in g["nodes"]))
    return (len(chains), chain_bytes, unchained_bytes, layer_stats(chained)[0],
            layer_stats(unchained)[0])


# Ops that only move data: a kernel of nothing but these is a lone movement kernel.
MOVEMENT = {"Transpose", "Slice", "Concat", "Expand", "Gather", "GatherElements", "GatherND",
            "Pad", "Split", "Tile", "DepthToSpace", "SpaceToDepth", "ScatterND", "ScatterElements"}
# The layer index in a node name as torch's exporters write it (h.0, layer.0, layers.0, blocks.0).
LAYER = re.compile(r"(?:^|[/._])(?:h|layer|layers|block|blocks)[._](\d+)(?:[/._]|$)")


def has_layers(name):
    """Whether the fixture is a stack of layers (its inputs.json config counts them)."""
    with open(os.path.join(ROOT, "tests", "models", name + ".inputs.json")) as f:
        config = json.load(f).get("config", {})
    return any(k in config for k in ("num_hidden_layers", "n_layer", "num_layers"))


def launches_of(group):
    """Kernels and library calls one group makes (its fill kernel and loop of calls included)."""
    if group["kind"] == "alias":
        return 0
    spec = group.get("spec", {})
    return (1 + (1 if spec.get("fill_kernel") else 0) + (spec.get("calls", 1) - 1)
            + (1 if spec.get("splits", 1) > 1 else 0))


def layer_stats(plan):
    """(launches per layer, lone movement kernels per layer, lone movement kernels in all); the
    per-layer numbers are None when the node names carry no layer index (dynamo's exports)."""
    per_layer, movement_per_layer, movement = {}, {}, 0
    for group in plan["groups"]:
        ops = {n["op"] for n in group["nodes"]}
        lone = group["kind"] == "kernel" and ops <= MOVEMENT
        movement += 1 if lone else 0
        layers = {int(m.group(1)) for n in group["nodes"] for m in [LAYER.search(n["name"])] if m}
        if len(layers) != 1:
            continue
        layer = layers.pop()
        per_layer[layer] = per_layer.get(layer, 0) + launches_of(group)
        movement_per_layer[layer] = movement_per_layer.get(layer, 0) + (1 if lone else 0)
    if not per_layer:
        return None, None, movement
    return (max(per_layer.values()), max(movement_per_layer.values()), movement)


def attention_stats(plan):
    """(softmaxes, attention groups, their operands with a prologue) of the plan: a softmax is a
    ReduceMax node, as lowering writes Softmax; an operand's prologue, the nodes computing it
    that the kernel evaluates as it loads it."""
    softmaxes = attention = prologues = 0
    for group in plan["groups"]:
        ops = [n["op"] for n in group["nodes"]]
        softmaxes += ops.count("ReduceMax")
        if group["kind"] == "attention":
            attention += 1
            prologues += sum(1 for o in ("q", "k", "v") if group["spec"][o].get("prologue"))
    return softmaxes, attention, prologues


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stitchc", default=os.path.join(ROOT, "build", "stitchc"))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "fusion.md"))
    args = parser.parse_args()

    rows = []
    for model in sorted(glob.glob(os.path.join(ROOT, "tests", "models", "*.onnx"))):
        name = os.path.basename(model)[: -len(".onnx")]
        plans = {p: plan(args.stitchc, model, p) for p in ("none", "greedy", "ilp")}
        totals = {p: plans[p]["totals"] for p in plans}
        layers = {p: layer_stats(plans[p]) for p in plans}
        half = ["--precision", "fp16"]
        chains = chain_stats(plan(args.stitchc, model, "ilp", half),
                             plan(args.stitchc, model, "ilp", half + ["--gemm-chain", "unfused"]))
        rows.append((name, totals, plans["ilp"]["ilp"], layers, attention_stats(plans["ilp"]),
                     chains))

    lines = [
        "# Fusion plans of the model fixtures",
        "",
        "<!-- Generated by scripts/bench/fusion_table.py; do not edit by hand. -->",
        "",
        "Each fixture of `tests/models/` planned by stitchc's three planners: `none` (one kernel "
        "or library call per op), `greedy` (producer-consumer fusion, the XLA-style baseline) and "
        "`ilp` (the plan of minimum modeled cost, solved with GLPK). Launches count kernels and "
        "library calls; bytes are the cost model's HBM bytes read and written "
        "(`src/planner/cost_model.h`) — estimates, not measurements. The ILP columns give its "
        "candidate groups, its optimality gap and its solve time on the build machine.",
        "",
        "| model | launches none | greedy | ilp | KiB none | greedy | ilp | candidates | gap | solve ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, t, ilp, _, _, _ in rows:
        lines.append(
            f"| `{name}` | {t['none']['launches']} | {t['greedy']['launches']} | "
            f"{t['ilp']['launches']} | {t['none']['estimated_bytes'] / 1024:.0f} | "
            f"{t['greedy']['estimated_bytes'] / 1024:.0f} | {t['ilp']['estimated_bytes'] / 1024:.0f} | "
            f"{ilp['candidates']} | {ilp['gap']:.3g} | {ilp['solve_seconds'] * 1000:.1f} |")
    lines += [
        "",
        "## Launches per transformer layer and lone movement kernels",
        "",
        "Per layer: the launches (kernels and library calls, a loop of calls counted per call) of "
        "the groups whose nodes all carry one layer's index in their names (`h.0`, `layer.0`, "
        "`layers.0`, `blocks.0`: torch's TorchScript exports; the dynamo exports' names carry "
        "none, `-`), the largest over the layers. Lone movement kernels: generated kernels of "
        "nothing but data movement (Transpose, Slice, Concat, Expand, Gather, Pad, Split, Tile, "
        "...), per layer and in the whole model. Fixtures that are no stack of layers (their "
        "inputs.json config counts none) are left out. A LLaMA-style layer's launches are its "
        "four GEMMs (Q, K and V merged into one; O with the residual; gate and up merged into "
        "one; down with the residual), the attention (the rotary embedding of Q and K inside it), "
        "its two RMSNorms and the SiLU gate between its gate-up and down GEMMs: 8 in float32, "
        "where the GEMM chain (gate-up, SiLU gate, down, the residual: one kernel) needs 16-bit "
        "products; in float16 at most 7 (the table below: 6 in the first layer, whose "
        "input norm the embedding's kernel takes, 7 in the last, whose count holds the final "
        "norm its residual add joins).",
        "",
        "| model | per layer none | greedy | ilp | lone movement per layer none | greedy | ilp "
        "| lone movement in all none | greedy | ilp |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, _, _, layers, _, _ in rows:
        if not has_layers(name):
            continue
        cell = lambda v: "-" if v is None else str(v)  # noqa: E731
        lines.append(
            f"| `{name}` | {cell(layers['none'][0])} | {cell(layers['greedy'][0])} | "
            f"{cell(layers['ilp'][0])} | {cell(layers['none'][1])} | {cell(layers['greedy'][1])} | "
            f"{cell(layers['ilp'][1])} | {layers['none'][2]} | {layers['greedy'][2]} | "
            f"{layers['ilp'][2]} |")
    lines += [
        "",
        "## Attention",
        "",
        "Softmaxes (a ReduceMax over the keys, as lowering writes Softmax) in the ilp plan, and "
        "its `attention` groups: softmax(logits(Q Kᵀ)) V in one kernel with the head split and "
        "merge read and written through (`src/planner/legality_attention.cpp`). Fixtures "
        "without a softmax are left out. The group's kernel computes Q·Kᵀ and P·V in fp32 FMA, or "
        "on tensor cores (m16n8k16 products, the scores, probabilities and outputs in registers) "
        "where both products read float16 or bfloat16, the queries fill a warp's 16 rows and "
        "every --arch is sm_80 or later. The cost model charges those products at rates set from "
        "H100 measurements (docs/benchmarks.md), so an attention where the fused kernel was "
        "slower than cuBLASLt's products and a softmax kernel (the 4 x 12 x 512 x 512 of "
        "scripts/gpu/attention_bench.py, say) stays unfused; `--attention fused` or `unfused` "
        "overrides the cost model. These fixtures' attentions are small, and the launches saved "
        "decide. Prologues: operands (Q, K or V) computed by pointwise nodes and index "
        "remappings the kernel evaluates as it loads each element (rotary embedding's Slices, "
        "Neg, Concat, Muls and Add after the head split; a Cast), instead of a kernel writing "
        "them out first; the cost model charges such an operand's bytes once more (its rows load "
        "element by element, not as 16-byte vectors) and K's and V's prologues again for every "
        "query tile, so a bias a GEMM's epilogue adds anyway stays there.",
        "",
        "| model | softmaxes | attention groups | operands with a prologue |",
        "|---|---|---|---|",
    ]
    for name, _, _, _, (softmaxes, attention, prologues), _ in rows:
        if softmaxes:
            lines.append(f"| `{name}` | {softmaxes} | {attention} | {prologues} |")
    lines += [
        "",
        "## GEMM chains (float16)",
        "",
        "Each fixture planned with `--precision fp16` (ilp), with GEMM chains (the default) and "
        "with `--gemm-chain unfused`: its `gemm_chain` groups (`src/planner/legality_chain.cpp`: "
        "MatMul/Gemm, pointwise, MatMul/Gemm in one kernel of thread-block clusters; a "
        "feed-forward block's bias and GELU, a gated MLP's SiLU gate of two products or of one "
        "merged product's halves), the modeled HBM bytes of those groups against what the "
        "unchained plan's groups lying wholly within the chains' nodes move (the products and "
        "hidden values written and read back; a group reaching past a chain, a residual add "
        "fused into the next norm, is left out of both; FlashFuser reports -58% for this "
        "traffic), and the launches per layer "
        "(as above) with and without chains. Each chain's tile rows (16, 32 or 64) and cluster "
        "(1 to 8 blocks, or 16 non-portable) are searched by an analytic model (`chain_traffic` "
        "in `src/planner/cost_model.h`; the report's `search`): its bytes at each memory level "
        "(HBM; L2, which serves the weights again to each later row tile while they fit; "
        "distributed shared memory, over which a cluster sums its partial tiles) over that "
        "level's bandwidth and its products at the chain's rate, over the share of SMs its "
        "blocks occupy. The cost model charges that time beyond the group's bytes and beyond "
        "what cuBLASLt would take for the products, at rates not yet measured for the chain on "
        "a GPU (`chain_tensor_flops_per_us`), so large feed-forward blocks stay with the "
        "library. "
        "Each chain also carries its unfused plan (the report's `fallbacks`): a device that "
        "cannot hold the chain's clusters (before sm_90, or too little shared memory, asked "
        "through `cudaOccupancyMaxActiveClusters` when the model is created) runs that instead, "
        "in a buffer of its own allocated only there (`fallback_bytes`). "
        "Fixtures without a chain are left out.",
        "",
        "| model | chains | chain KiB | unchained KiB | change | per layer with chains | "
        "without |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, _, _, _, _, (chains, chain_bytes, unchained_bytes, with_, without) in rows:
        if not chains:
            continue
        cell = lambda v: "-" if v is None else str(v)  # noqa: E731
        change = (f"{(chain_bytes / unchained_bytes - 1) * 100:+.0f}%" if unchained_bytes
                  else "-")
        lines.append(f"| `{name}` | {chains} | {chain_bytes / 1024:.0f} | "
                     f"{unchained_bytes / 1024:.0f} | {change} | {cell(with_)} | "
                     f"{cell(without)} |")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
