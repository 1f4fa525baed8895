#!/usr/bin/env python3
"""Times one benchmark model in every peer system, in one process, on the same inputs, and
profiles each one's kernel launches; also profiles stitchc's library (loaded with ctypes through
its C API) for its launches and for each fused kernel's time.

Systems (--systems, comma-separated, default all):
    eager           PyTorch eager (the module export_bench_models.py exported, rebuilt from
                    meta.json with the same seed; its outputs are checked against ref_<k>.npy)
    compile         torch.compile(model)                        (inductor, default mode)
    autotune        torch.compile(model, mode="max-autotune")   (inductor, CUDA graphs)
    xla             jax.jit of onnx_interp over the same model.onnx (XLA)
    stitchc         the stitchc library (--lib) through ctypes: outputs checked, launches and
                    per-kernel times profiled; its latency comes from bench_model (C++)

Precision (--precision, the same for every system of a run; the table is precisions.py):
    fp32   float32, TF32 off (torch.backends.cuda.matmul.allow_tf32 = False,
           torch.backends.cudnn.allow_tf32 = False, torch.set_float32_matmul_precision("highest"),
           jax_default_matmul_precision="highest" and Precision.HIGHEST on the convolutions);
           stitchc's libraries call cuBLASLt with CUBLAS_COMPUTE_32F and cuDNN with CUDNN_FMA_MATH
    tf32   the same switches on (allow_tf32 = True, float32_matmul_precision("high"),
           jax_default_matmul_precision="tensorfloat32", the convolutions at jax's default)
    fp16, bf16
           the module .half() / .to(torch.bfloat16), float inputs converted the same way, TF32
           off (no float32 GEMM is left), torch's other switches at their defaults (recorded in
           the JSON); XLA is not run (precisions.XLA_NOTE); stitchc's library takes the inputs
           in the types it was compiled for (--io-precision), converted from the same sets
Every system's errors are against PyTorch's float32 outputs (ref_<k>.npy).

Timing: after WARMUP runs, ITERS runs, each bracketed by CUDA events on the current stream and
followed by a stream synchronize (so the launch cost is inside); median and p90. XLA is timed
with time.perf_counter around the call and block_until_ready (its stream is not torch's).
Inputs rotate over several sets when one set is smaller than twice the L2 cache.

Launches per inference: torch.profiler (CUPTI) over PROFILE_ITERS runs after warm-up, counting
kernel records (not memcpy/memset), divided by the runs.

usage: bench_peers.py MODEL_DIR --out FILE.json [--lib LIB.so --plan plan.json]
                      [--systems ...] [--warmup N] [--iters N] [--precision P]
"""
import argparse
import ctypes
import json
import os
import sys
import time
import traceback

# JAX would otherwise take 75% of the GPU's memory at its first use, under torch's feet.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_bench_models as ebm  # noqa: E402
import precisions  # noqa: E402

PROFILE_ITERS = 5


def stats(ms):
    ms = np.asarray(ms, np.float64)
    return {"median_ms": float(np.median(ms)), "p90_ms": float(np.percentile(ms, 90)),
            "min_ms": float(ms.min()), "mean_ms": float(ms.mean()), "iters": int(ms.size)}


def time_events(fn, sets, warmup, iters):
    stream = torch.cuda.current_stream()
    for i in range(warmup):
        fn(sets[i % len(sets)])
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = []
    for i in range(iters):
        start.record(stream)
        fn(sets[i % len(sets)])
        stop.record(stream)
        stream.synchronize()
        ms.append(start.elapsed_time(stop))
    return stats(ms)


def profile_kernels(fn, sets, sync):
    """[(name, device microseconds)] of every kernel of PROFILE_ITERS runs, and the runs."""
    from torch.profiler import ProfilerActivity, profile
    for i in range(3):
        fn(sets[i % len(sets)])
    sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(PROFILE_ITERS):
            fn(sets[i % len(sets)])
        sync()
    kernels = []
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            n = e.name
            if n.startswith(("Memcpy", "Memset", "[memory]")) or "memcpy" in n.lower()[:12]:
                continue
            kernels.append((n, float(e.time_range.elapsed_us())))  # a device event's own span
    return kernels


def launches(kernels):
    return len(kernels) / PROFILE_ITERS


def max_errors(outs, refs):
    res = []
    for o, r in zip(outs, refs):
        o = np.asarray(o, np.float64)
        d = np.abs(o - r)
        res.append({"max_abs": float(d.max()), "max_abs_over_max_ref": float(d.max() / max(np.abs(r).max(), 1e-30)),
                    "rel_l2": float(np.linalg.norm(d) / max(np.linalg.norm(r), 1e-30)),
                    "nan": bool(np.isnan(o).any())})
    return res


def input_sets(meta, d, device, set_bytes):
    """Set 0 is the exported inputs; further sets (when small) are fresh random ones."""
    base = [np.load(os.path.join(d, f"input_{k}.npy")) for k in range(len(meta["inputs"]))]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size if device.type == "cuda" else 0
    n = 1 if set_bytes >= 2 * l2 else min(16, 2 * l2 // max(set_bytes, 1) + 1)
    rng = np.random.default_rng(99)
    family, c = meta["family"], meta["config"]
    sets = [base]
    for _ in range(n - 1):
        sets.append([v for _, v in ebm.make_inputs(family, c, rng)])
    return sets


def copy_bandwidth():
    """GB/s of a 1 GiB device-to-device copy, bytes read plus written, median of 20."""
    n = 1 << 28
    a = torch.empty(n, dtype=torch.float32, device="cuda").uniform_()
    b = torch.empty_like(a)
    ms = time_events(lambda _: b.copy_(a), [None], 5, 20)
    return 2 * a.numel() * 4 / (ms["median_ms"] * 1e-3) / 1e9, ms["median_ms"]


# --- stitchc through ctypes -----------------------------------------------------------------

class _Info(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("dims", ctypes.c_int64 * 8), ("bytes", ctypes.c_uint64)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("dims", ctypes.POINTER(ctypes.c_int64)), ("bytes", ctypes.c_uint64)]


_TORCH_DTYPES = {1: torch.float32, 7: torch.int64, 6: torch.int32, 9: torch.bool, 11: torch.float64,
                 10: torch.float16, 16: torch.bfloat16}


class StitchLibrary:
    def __init__(self, path, device):
        self.lib = ctypes.CDLL(os.path.abspath(path))
        L = self.lib
        L.stitch_target.restype = ctypes.c_char_p
        L.stitch_last_error.restype = ctypes.c_char_p
        self.device = device
        self.model = ctypes.c_void_p()
        self._check(L.stitch_model_create(ctypes.byref(self.model)), "model_create")
        n_in, n_out = ctypes.c_size_t(), ctypes.c_size_t()
        self._check(L.stitch_model_num_inputs(self.model, ctypes.byref(n_in)), "num_inputs")
        self._check(L.stitch_model_num_outputs(self.model, ctypes.byref(n_out)), "num_outputs")
        self.inputs, self.outputs = [], []
        for k in range(n_in.value):
            i = _Info()
            self._check(L.stitch_model_input(self.model, ctypes.c_size_t(k), ctypes.byref(i)), "input")
            self.inputs.append(i)
        for k in range(n_out.value):
            i = _Info()
            self._check(L.stitch_model_output(self.model, ctypes.c_size_t(k), ctypes.byref(i)), "output")
            self.outputs.append(i)
        self.contexts = {}

    def _check(self, status, what):
        if status != 0:
            raise RuntimeError(f"stitchc library: {what}: {self.lib.stitch_last_error().decode()}")

    def _tensor(self, info, t):
        dims = (ctypes.c_int64 * 8)(*info.dims)
        self._keep.append(dims)
        return _Tensor(ctypes.c_void_p(t.data_ptr()), info.dtype, info.rank,
                       ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64)), info.bytes)

    def prepare(self, arrays, key):
        """Device tensors for one input set (converted to the types the library was compiled
        for: float16/bfloat16 with --io-precision reduced), its outputs, and a context of its own."""
        ins = [torch.from_numpy(np.ascontiguousarray(a)).to(self.device).to(_TORCH_DTYPES[i.dtype])
               for a, i in zip(arrays, self.inputs)]
        outs = [torch.empty([i.dims[d] for d in range(i.rank)], dtype=_TORCH_DTYPES[i.dtype],
                            device=self.device) for i in self.outputs]
        self._keep = []
        tin = (_Tensor * len(ins))(*[self._tensor(i, t) for i, t in zip(self.inputs, ins)])
        tout = (_Tensor * len(outs))(*[self._tensor(i, t) for i, t in zip(self.outputs, outs)])
        ctx = ctypes.c_void_p()
        self._check(self.lib.stitch_context_create(self.model, ctypes.byref(ctx)), "context_create")
        self.contexts[key] = (ctx, ins, outs, tin, tout, self._keep)
        return key

    def run(self, key):
        ctx, ins, outs, tin, tout, _ = self.contexts[key]
        stream = torch.cuda.current_stream().cuda_stream if self.device.type == "cuda" else 0
        self._check(self.lib.stitch_run(ctx, tin, ctypes.c_size_t(len(ins)), tout,
                                        ctypes.c_size_t(len(outs)), ctypes.c_void_p(stream)), "run")
        return outs


# --- the systems --------------------------------------------------------------------------------

def run_torch(model, sets_dev, refs, warmup, iters, mode):
    import torch._dynamo
    torch._dynamo.reset()
    t0 = time.time()
    fn_model = model if mode == "eager" else (
        torch.compile(model) if mode == "compile" else torch.compile(model, mode="max-autotune"))

    def fn(x):
        with torch.inference_mode():
            return fn_model(*x)
    out = fn(sets_dev[0])
    torch.cuda.synchronize()
    first_s = time.time() - t0
    out = (out,) if isinstance(out, torch.Tensor) else out
    r = {"errors": max_errors([o.float().cpu().numpy() for o in out], refs), "first_call_s": first_s}
    r.update(time_events(fn, sets_dev, warmup, iters))
    r["launches"] = launches(profile_kernels(fn, sets_dev, torch.cuda.synchronize))
    return r


def run_xla(model_path, sets_np, refs, warmup, iters, matmul_precision):
    import jax
    jax.config.update("jax_default_matmul_precision", matmul_precision)
    import onnx_interp
    # float32: Precision.HIGHEST on the convolutions; tf32: the config's default for them.
    be = onnx_interp.JaxBackend(conv_precision="highest" if matmul_precision == "highest" else None)
    g = onnx_interp.OnnxGraph(model_path)
    weights = {k: jax.device_put(v) for k, v in g.weights.items()}
    fn_jit = jax.jit(lambda w, *x: g.run(be, w, x))
    sets = [[jax.device_put(a) for a in s] for s in sets_np]
    t0 = time.time()
    out = fn_jit(weights, *sets[0])
    jax.block_until_ready(out)
    first_s = time.time() - t0
    r = {"errors": max_errors([np.asarray(o) for o in out], refs), "first_call_s": first_s,
         "jax": jax.__version__, "jax_devices": str(jax.devices())}

    def fn(x):
        return jax.block_until_ready(fn_jit(weights, *x))
    for i in range(warmup):
        fn(sets[i % len(sets)])
    ms = []
    for i in range(iters):
        t = time.perf_counter()
        fn(sets[i % len(sets)])
        ms.append((time.perf_counter() - t) * 1e3)
    r.update(stats(ms))
    r["timer"] = "perf_counter + block_until_ready"
    try:
        k = profile_kernels(fn, sets, lambda: None)
        r["launches"] = launches(k) if k else None
        if not k:
            r["launches_note"] = "torch.profiler saw no XLA kernels"
    except Exception as e:  # the count is optional for XLA
        r["launches"], r["launches_note"] = None, f"profiler failed: {e}"
    return r


def run_stitchc(lib_path, plan_path, sets_np, refs, device, copy_gbps):
    lib = StitchLibrary(lib_path, device)
    keys = [lib.prepare(s, k) for k, s in enumerate(sets_np)]
    out = lib.run(keys[0])
    if device.type == "cuda":
        torch.cuda.synchronize()
    r = {"errors": max_errors([o.float().cpu().numpy() for o in out], refs)}
    if device.type != "cuda":
        return r
    r.update(time_events(lib.run, keys, 20, 100))
    r["timer"] = "cuda events via ctypes (cross-check of bench_model)"
    kernels = profile_kernels(lib.run, keys, torch.cuda.synchronize)
    r["launches"] = launches(kernels)
    # Per fused kernel: mean device time over the profiled runs, the plan's estimated bytes.
    plan = json.load(open(plan_path))["plan"]["groups"] if plan_path else []
    by_id = {g["id"]: g for g in plan}
    per = {}
    for name, us in kernels:
        per.setdefault(name, []).append(us)
    rows = []
    for name, times in sorted(per.items()):
        row = {"kernel": name, "calls_per_run": len(times) / PROFILE_ITERS,
               "mean_us": float(np.mean(times))}
        if name.startswith("stitch_g"):
            gid = int(name[len("stitch_g"):].split("_")[0])
            g = by_id.get(gid, {})
            row.update(group=gid, scheme=g.get("scheme"), estimated_bytes=g.get("estimated_bytes"),
                       nodes=len(g.get("nodes", [])))
            if g.get("estimated_bytes") and row["mean_us"] > 0:
                gbps = g["estimated_bytes"] / (row["mean_us"] * 1e-6) / 1e9
                row.update(achieved_gbps=gbps, fraction_of_copy=gbps / copy_gbps if copy_gbps else None)
        rows.append(row)
    r["kernels"] = rows
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("--out", required=True)
    ap.add_argument("--lib")
    ap.add_argument("--plan")
    ap.add_argument("--systems", default="eager,compile,autotune,xla,stitchc")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--precision", default="fp32", choices=list(precisions.PRECISIONS))
    ap.add_argument("--io-precision", default="reduced", choices=precisions.IO_PRECISIONS,
                    help="recorded only: the library's input types come from the library itself")
    args = ap.parse_args()
    prec = precisions.row(args.precision)
    torch_settings = precisions.apply_torch(args.precision)
    dtype = precisions.torch_dtype(args.precision)
    device = torch.device(args.device)
    d = args.model_dir
    meta = json.load(open(os.path.join(d, "meta.json")))
    refs = [np.load(os.path.join(d, f"ref_{k}.npy")).astype(np.float64) for k in range(len(meta["outputs"]))]
    # Bytes of one set as the systems hold it (float inputs and outputs in the row's dtype).
    fsize = torch.empty(0, dtype=dtype).element_size()
    ins_np = [np.load(os.path.join(d, f"input_{k}.npy"), mmap_mode="r") for k in range(len(meta["inputs"]))]
    set_bytes = sum(a.nbytes * fsize // 4 if a.dtype == np.float32 else a.nbytes for a in ins_np) \
        + sum(r.size * fsize for r in refs)
    sets_np = input_sets(meta, d, device, set_bytes)
    result = {"model": meta["name"], "meta": meta, "input_sets": len(sets_np), "systems": {},
              "torch": torch.__version__, "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
              "precision": args.precision, "io_precision": args.io_precision,
              "precision_text": precisions.describe(args.precision, args.io_precision),
              "torch_settings": torch_settings}
    if os.path.exists(args.out):  # a later pass (run.sh runs max-autotune last) adds its systems
        try:
            old = json.load(open(args.out))
            if old.get("model") == meta["name"] and old.get("precision") == args.precision:
                result["systems"] = old.get("systems", {})
                result.setdefault("copy_gbps", old.get("copy_gbps"))
        except ValueError:
            pass
    if device.type == "cuda" and not result.get("copy_gbps"):
        result["copy_gbps"], result["copy_ms"] = copy_bandwidth()
    systems = [s for s in args.systems.split(",") if s]

    def save():
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)

    model = None
    for s in systems:
        t0 = time.time()
        try:
            if s in ("eager", "compile", "autotune"):
                if model is None:
                    model = ebm.build_model(meta["family"], meta["config"]).to(device=device, dtype=dtype)
                sets_dev = [[torch.from_numpy(a).to(device).to(dtype) if a.dtype == np.float32
                             else torch.from_numpy(a).to(device) for a in st] for st in sets_np]
                r = run_torch(model, sets_dev, refs, args.warmup, args.iters, s)
            elif s == "xla":
                if prec["jax"] is None:
                    r = {"not_run": precisions.XLA_NOTE, "wall_s": 0.0}
                    result["systems"][s] = r
                    print(f"{meta['name']} {s}: not run in {args.precision}", flush=True)
                    save()
                    continue
                r = run_xla(os.path.join(d, "model.onnx"), sets_np, refs, args.warmup, args.iters, prec["jax"])
            elif s == "stitchc":
                r = run_stitchc(args.lib, args.plan, sets_np, refs, device, result.get("copy_gbps"))
            else:
                raise ValueError(f"unknown system {s}")
            r["wall_s"] = time.time() - t0
        except Exception as e:
            r = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-3000:],
                 "wall_s": time.time() - t0}
        result["systems"][s] = r
        brief = {k: r[k] for k in ("median_ms", "p90_ms", "launches", "error") if k in r}
        if "errors" in r:
            brief["max_abs_err"] = max(e["max_abs"] for e in r["errors"])
        print(f"{meta['name']} {args.precision} {s}: {json.dumps(brief)} ({r['wall_s']:.0f} s)", flush=True)
        save()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    save()


if __name__ == "__main__":
    main()
