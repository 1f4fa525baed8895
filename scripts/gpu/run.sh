#!/usr/bin/env bash
# run.sh: the whole GPU visit in one command (issue 6), or its dry run on the host target.
#
#   scripts/gpu/run.sh OUTDIR [--target cuda|host] [--quick] [--stages LIST] [--models LIST]
#                      [--systems LIST] [--shard I/N] [--budget SECONDS] [--iters N]
#                      [--warmup N] [--jobs N] [--pack DIR] [--bundle FILE]
#                      [--precisions LIST] [--io-precision reduced|model]
#                      [--sanitizer-tools LIST] [--no-timing]
#
# Stages (--stages, comma-separated; default: all, in this order):
#   setup        the carried stitchc works here (pack's libraries, nvcc, cuDNN, python);
#                compiles and runs one tiny model; records device, driver and versions
#   conformance  the allowlist of tests/conformance on the target (stitchc + stitch-run against
#                output_N.pb, the tolerances of the allowlist); --shard I/N runs a part;
#                --quick runs every 40th test
#   fixtures     the model fixtures of tests/models against ONNX Runtime (CPU) on the target
#   half         the fixtures in 16 bits on the target: each fp32 fixture built with --precision
#                fp16 against ORT's float32 outputs (its relative-L2 aim), and the native
#                float16/bfloat16 fixtures of tests/models/half against torch's outputs
#   sanitizer    compute-sanitizer memcheck and racecheck on stitch-run over a subset holding
#                every kernel kind (tests/conformance's nvcc sample) and every stitching scheme
#                (make_scheme_models.py, and the BERT and ResNet fixtures); on the host target
#                the subset runs without the sanitizer
#   attention    attention_bench.py: the attention group against its unfused plan and torch's
#                scaled_dot_product_attention (sequence 128, 512, 2048; a decode step; float32
#                and float16): check, latency, compute-sanitizer on the smaller cases
#                (--sanitizer-tools); prebuild.sh's models in PACK/attention, built there once;
#                --no-timing: checks and sanitizer only (lease.sh runs those beside other work)
#   chain        chain_bench.py: the GEMM chains (issue 19) against their unfused plans (BERT's and
#                GPT-2's feed-forward blocks, a 4096 -> 11008 -> 4096 gated MLP; M = 1, 128,
#                2048; float16): check, latency and TFLOP/s, compute-sanitizer at M <= 128; the
#                models (up to 270 MB of weights each) are written and built on the machine
#   dynamic      scripts/bench/dynamic_shapes.py: one library compiled with --dim ranges against
#                libraries compiled for each shape (issue 20's cost of being dynamic): the
#                feed-forward model and the BERT and LLaMA fixtures, and the memory of a context
#                laid out for each shape (stitch_model_context_memory_for, with the library
#                workspace); the tables in dynamic/dynamic.md, for docs/benchmarks.md
#   export       export_bench_models.py: the benchmark models, inputs, PyTorch's outputs
#   compile      stitchc on each benchmark model in each precision (--report plan.json,
#                --time-passes; --precision fp16|bf16|tf32)
#   check        stitch-run on each against PyTorch's float32 outputs (fp32: rtol 1e-3, atol
#                1e-4; fp16, bf16, tf32: --max-rel-l2 1e-2, 4e-2, 1e-2, or twice PyTorch's own
#                error in that precision where larger: precisions.py), errors
#   bench        bench_model (stitchc, C++, CUDA events) and, on a GPU, bench_peers.py (PyTorch
#                eager, torch.compile default and max-autotune, XLA, stitchc's launches and
#                per-kernel bandwidth), each row in its precision
#   report       results.json, results.csv, table.md, the plot; prints the short table last
#
# --models: bert_b1,bert_b32,gpt2,vit_b1,vit_b32,resnet50_b1,resnet50_b64 (default all).
# --precisions: fp32,tf32,fp16,bf16 (default fp32,fp16,bf16; fp32 is float32 with TF32 off
#   everywhere). --io-precision (default reduced): fp16/bf16 libraries take and return
#   float16/bfloat16 as the torch peers do; `model` keeps them float32 (precisions.py).
# --systems: eager,compile,autotune,xla,stitchc (bench_peers.py; default all on a GPU, none on
#   the host target). --sanitizer-tools: compute-sanitizer's tools (default memcheck,racecheck).
#   Libraries that prebuild.sh put in PACK/prebuilt/ (CUDA target) are run by the fixtures,
#   half and sanitizer stages instead of being compiled again. --budget S: stop starting new work S seconds after the start, leaving
#   time for the report (long steps run under `timeout`), so that a device call never ends
#   killed with nothing written. --bundle FILE: a .tar.gz of OUTDIR's logs and results (no
#   models, libraries or arrays), for the device tool's $OUT (8 files at most come back).
#
# Every stage writes OUTDIR/logs/<stage>.log and a line to OUTDIR/stages.tsv (stage, status,
# seconds, note). The exit status is 0 when every stage that ran passed.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

usage() { sed -n 2,53p "$0"; }
[ $# -ge 1 ] || { usage; exit 2; }
case "$1" in -h|--help) usage; exit 0 ;; esac
out="$1"; shift
target=cuda quick=0 stages="" models="" systems="" shard="" budget=0 iters="" warmup="" jobs=""
pack="$repo/.gpu-pack" bundle="" precisions="fp32,fp16,bf16" io_precision=reduced
sanitizer_tools="memcheck,racecheck" no_timing=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) target="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    --stages) stages="$2"; shift 2 ;;
    --models) models="$2"; shift 2 ;;
    --systems) systems="$2"; shift 2 ;;
    --shard) shard="$2"; shift 2 ;;
    --budget) budget="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --pack) pack="$2"; shift 2 ;;
    --bundle) bundle="$2"; shift 2 ;;
    --precisions) precisions="$2"; shift 2 ;;
    --io-precision) io_precision="$2"; shift 2 ;;
    --sanitizer-tools) sanitizer_tools="$2"; shift 2 ;;
    --no-timing) no_timing=(--no-timing); shift ;;
    *) echo "run.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
case "$target" in cuda|host) ;; *) echo "run.sh: --target cuda or host" >&2; exit 2 ;; esac
case "$io_precision" in reduced|model) ;; *) echo "run.sh: --io-precision reduced or model" >&2; exit 2 ;; esac
for p in ${precisions//,/ }; do
  case "$p" in fp32|tf32|fp16|bf16) ;; *) echo "run.sh: unknown precision '$p' in --precisions (fp32, tf32, fp16, bf16)" >&2; exit 2 ;; esac
done
all_stages="setup conformance fixtures half sanitizer attention chain dynamic export compile check bench report"
stages="${stages:-${all_stages// /,}}"
all_models="bert_b1,bert_b32,gpt2,vit_b1,vit_b32,resnet50_b1,resnet50_b64"
models="${models:-$all_models}"
if [ -z "$systems" ]; then
  if [ "$target" = cuda ]; then systems="stitchc,eager,compile,autotune,xla"; else systems="none"; fi
fi
ncpu="$(nproc)"
jobs="${jobs:-$([ "$target" = cuda ] && echo "$ncpu" || echo 2)}"
if [ "$quick" = 1 ]; then iters="${iters:-5}"; warmup="${warmup:-1}"; else iters="${iters:-200}"; warmup="${warmup:-20}"; fi

mkdir -p "$out/logs" "$out/work"
out="$(cd "$out" && pwd)"
t_start=$(date +%s)
: > "$out/stages.tsv"
{
  echo "run.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) target=$target quick=$quick stages=$stages"
  echo "models=$models systems=$systems shard=${shard:-all} budget=${budget}s iters=$iters warmup=$warmup jobs=$jobs"
  echo "precisions=$precisions io_precision=$io_precision"
} | tee "$out/run.txt"

# --- the carried tools --------------------------------------------------------------------------
[ -x "$pack/libexec/stitchc" ] || { echo "run.sh: no pack at $pack: run scripts/gpu/pack.sh on the build machine and carry it" >&2; exit 1; }
# A copy that lost its modes in transit still runs.
chmod +x "$pack"/libexec/stitchc "$pack"/libexec/stitch-run "$pack"/libexec/stitch_conformance \
  "$pack"/bin/* "$here"/stitchc-target "$here"/stitch-run-sanitized "$here"/*.sh 2>/dev/null || true
# Only the libraries this machine lacks go on the path (ours are older builds of the same sonames).
active="$out/work/pack-lib"
rm -rf "$active"; mkdir -p "$active"
system_libs="$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null) | awk '{print $1}')"
for f in "$pack"/lib/*; do
  so="$(basename "$f")"
  if ! grep -qxF "$so" <<< "$system_libs"; then ln -s "$f" "$active/$so"; fi
done
export LD_LIBRARY_PATH="$active${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! "$pack/libexec/stitchc" --help >/dev/null 2>"$out/work/stitchc-probe.txt"; then
  # The machine's libstdc++ is older than the build machine's: use the carried one.
  for f in "$pack"/lib-fallback/*; do ln -sf "$f" "$active/$(basename "$f")"; done
fi
# prebuild.sh's libraries travel packed; the first run.sh to need them unpacks them (atomically:
# lease.sh runs two at once).
if [ ! -d "$pack/prebuilt" ] && [ -f "$pack/prebuilt.tar.xz" ]; then
  unpack="$(mktemp -d "$pack/.prebuilt.XXXXXX")"
  tar xJf "$pack/prebuilt.tar.xz" -C "$unpack" && mv -T "$unpack/prebuilt" "$pack/prebuilt" 2>/dev/null
  rm -rf "$unpack"
fi
STITCHC="$pack/libexec/stitchc"
STITCH_RUN="$pack/libexec/stitch-run"
CONFORMANCE="$pack/libexec/stitch_conformance"
BENCH_MODEL="$pack/bin/bench_model"
export STITCHC
# The host target compiles fastest with the build's precompiled runtime header, when there is one.
if [ "$target" = host ] && [ -z "${STITCH_RUNTIME_DIR:-}" ] && [ -f "$repo/build/runtime/host_pch/stitch_generated.h.gch" ]; then
  export STITCH_RUNTIME_DIR="$repo/build/runtime"
fi

# python: the one with torch (the GPU machine's python3; here .venv-models)
if [ -z "${PYTHON:-}" ]; then
  for p in python3 "$repo/.venv-models/bin/python"; do
    if "$p" -c 'import torch, onnx, onnxruntime, numpy' 2>/dev/null; then PYTHON="$p"; break; fi
  done
fi
PYTHON="${PYTHON:-python3}"

# cuDNN for linking (-lcudnn) and running: /usr/local/cuda/lib64, the system, or a pip wheel.
if [ "$target" = cuda ]; then
  export PATH="$PATH:/usr/local/cuda/bin"
  if [ ! -e /usr/local/cuda/lib64/libcudnn.so ] && ! ldconfig -p | grep -q 'libcudnn\.so '; then
    cudnn="$("$PYTHON" -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null || true)"
    if [ -n "$cudnn" ] && ls "$cudnn"/libcudnn.so* >/dev/null 2>&1; then
      mkdir -p "$out/work/cudnn-link"
      ln -sf "$(ls "$cudnn"/libcudnn.so.* | head -1)" "$out/work/cudnn-link/libcudnn.so"
      export LIBRARY_PATH="$out/work/cudnn-link${LIBRARY_PATH:+:$LIBRARY_PATH}"
      export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$cudnn"
    fi
  fi
fi

# --- stage plumbing ----------------------------------------------------------------------------
overall=0
elapsed() { echo $(( $(date +%s) - t_start )); }
# Seconds a step may still take (a large number without --budget); 30 s stay for the report.
remaining() {
  if [ "$budget" -gt 0 ]; then local r=$(( budget - $(elapsed) - 30 )); [ $r -lt 5 ] && r=5; echo $r; else echo 100000; fi
}
out_of_time() { [ "$budget" -gt 0 ] && [ $(( budget - $(elapsed) )) -lt 45 ]; }
wants() { [[ ",$stages," == *",$1,"* ]]; }
record() { # stage status seconds note
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$out/stages.tsv"
  printf '== %-11s %-7s %5ss  %s\n' "$1" "$2" "$3" "$4"
  [ "$2" = FAIL ] && overall=1
  return 0
}
run_stage() { # name function
  local _stage="$1" _fn="$2" _t0 _status
  if ! wants "$_stage"; then return; fi
  if out_of_time; then record "$_stage" SKIP 0 "out of --budget"; return; fi
  _t0=$(date +%s)
  echo "== $_stage: started at $(elapsed) s (log: $out/logs/$_stage.log)"
  note="" stage_status=""
  if "$_fn" > "$out/logs/$_stage.log" 2>&1; then _status=${stage_status:-PASS}; else _status=FAIL; fi
  record "$_stage" "$_status" $(( $(date +%s) - _t0 )) "$note"
  if [ "$_status" = FAIL ]; then tail -15 "$out/logs/$_stage.log" | sed 's/^/   | /'; fi
}
model_list() { tr ',' ' ' <<< "$models"; }
# A library prebuild.sh made for this fixture and variant (fp32, fp16, bf16, half), if any.
prebuilt_of() { local f="$pack/prebuilt/$1/$2.so"; [ "$target" = cuda ] && [ -f "$f" ] && echo "$f"; return 0; }
precision_list() { tr ',' ' ' <<< "$precisions"; }
# The rows: model:precision, every model of a precision before the next precision (so a --budget
# cut takes whole precisions last in the list). A row's files live in models/<model>/<precision>/.
row_list() { local p m; for p in $(precision_list); do for m in $(model_list); do echo "$m:$p"; done; done; }
n_rows() { row_list | wc -l; }
lib_of() { echo "$out/models/$1/$2/lib_$target.so"; }

# --- stages --------------------------------------------------------------------------------------
stage_setup() ( # a subshell: set -e stays inside
  set -e
  echo "pack: $pack"; head -3 "$pack/MANIFEST.txt" || true
  echo "libraries taken from the pack: $(ls "$active" | tr '\n' ' ')"
  "$STITCHC" --help | head -1
  echo "python: $PYTHON"
  "$PYTHON" - <<'EOF' > "$out/env.json"
import json, platform, subprocess, datetime
env = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
       "host": platform.node(), "python": platform.python_version()}
for m in ["torch", "torchvision", "transformers", "onnx", "onnxruntime", "numpy", "jax", "jaxlib", "triton"]:
    try:
        env[m] = __import__(m).__version__
    except Exception:
        env[m] = None
try:
    import torch
    env["cuda_available"] = torch.cuda.is_available()
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        env.update(device=p.name, sm_count=p.multi_processor_count, memory_gib=round(p.total_memory / 2**30, 1),
                   l2_mib=round(getattr(p, "L2_cache_size", 0) / 2**20, 1), torch_cuda=torch.version.cuda,
                   cudnn=torch.backends.cudnn.version())
except Exception as e:
    env["torch_error"] = str(e)
for cmd, key in [(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit", "--format=csv,noheader"], "nvidia_smi"),
                 (["nvcc", "--version"], "nvcc"), (["g++", "--version"], "gxx"),
                 (["compute-sanitizer", "--version"], "compute_sanitizer")]:
    try:
        env[key] = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[-1 if key in ("nvcc", "compute_sanitizer") else 0]
    except Exception:
        env[key] = None
print(json.dumps(env, indent=1))
EOF
  cat "$out/env.json"
  [ -x "$BENCH_MODEL" ] || { echo "bench_model missing from the pack"; return 1; }
  # One tiny model end to end on the target.
  local t="$out/work/setup"; mkdir -p "$t"
  "$PYTHON" "$here/make_scheme_models.py" "$t" > /dev/null
  "$STITCHC" "$t/scheme_regional/model.onnx" --target "$target" -o "$t/lib.so" --time-passes -q
  "$STITCH_RUN" "$t/lib.so" --test-data "$t/scheme_regional/test_data_set_0" --rtol 1e-4 --atol 1e-5
  "$BENCH_MODEL" "$t/lib.so" --warmup 2 --iters 5 $([ "$target" = cuda ] && echo --copy-mib 1024)
)

conformance_suite() {
  if [ -f "$pack/suite/node.tar.gz" ]; then
    local s="$out/work/suite"
    [ -f "$s/.done" ] || { mkdir -p "$s"; tar xzf "$pack/suite/node.tar.gz" -C "$s" && touch "$s/.done"; }
    echo "$s"
  else
    "$PYTHON" -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/node"))'
  fi
}

stage_conformance() {
  local suite; suite="$(conformance_suite)"
  local sh="$shard"
  [ -z "$sh" ] && [ "$quick" = 1 ] && sh="0/40"
  local args=(--suite "$suite" --stitchc "$here/stitchc-target" --stitch-run "$STITCH_RUN"
              --list "$repo/tests/conformance/allowlist.txt" --work-dir "$out/work/conformance" -j "$jobs")
  [ -n "$sh" ] && args+=(--shard "$sh")
  echo "suite: $suite; shard: ${sh:-all}; jobs: $jobs; target: $target"
  STITCH_FORCE_TARGET="$target" STITCH_FORCE_JOBS=1 timeout "$(remaining)" "$CONFORMANCE" "${args[@]}"
  local rc=$?
  note="$(grep -E '^[0-9]+ tests: ' "$out/logs/conformance.log" | tail -1 | cut -d';' -f1)"
  [ $rc = 124 ] && note="$note (stopped by --budget: $(grep -c '^\[' "$out/logs/conformance.log") tests ran)"
  return $rc
}

fixture_list() {
  if [ "$quick" = 1 ]; then echo "bert_dynamo17 gpt2_dynamo23 vit_dynamo21 resnet18_dynamo18"
  else for f in "$repo"/tests/models/*.onnx; do basename "$f" .onnx; done; fi
}

stage_fixtures() {
  local n=0 failed=0 per_job=$(( jobs >= 4 ? jobs / 4 : 1 ))
  local par=$(( jobs >= 4 ? 4 : 1 ))
  export STITCH_FORCE_TARGET="$target" STITCH_FORCE_JOBS="$per_job" STITCH_RUN PYTHON here repo out pack target
  export -f prebuilt_of
  fixture_list | tr ' ' '\n' | timeout "$(remaining)" xargs -P "$par" -I{} bash -c '
    f={}; w="$out/work/fixtures/$f"; lib="$(prebuilt_of fp32 "$f")"
    if "$PYTHON" "$repo/scripts/models/compare_with_ort.py" --stitchc "$here/stitchc-target" \
         --stitch-run "$STITCH_RUN" --work "$w" --target host ${lib:+--library "$lib"} \
         "$repo/tests/models/$f.onnx" > "$out/logs/fixture_$f.log" 2>&1; then
      echo "PASS $f${lib:+ (prebuilt)}"; else echo "FAIL $f"; fi' | tee "$out/work/fixtures.txt"
  n=$(grep -c . "$out/work/fixtures.txt"); failed=$(grep -c '^FAIL' "$out/work/fixtures.txt")
  note="$((n - failed))/$(fixture_list | wc -w) fixtures pass against ONNX Runtime"
  for f in $(grep '^FAIL' "$out/work/fixtures.txt" | cut -d' ' -f2); do tail -20 "$out/logs/fixture_$f.log"; done
  [ "$failed" = 0 ] && [ "$n" = "$(fixture_list | wc -w)" ]
}

# The fixtures in 16 bits: the fp32 fixtures built with --precision fp16 against ORT's float32
# outputs (precision_aims.json), and the native float16/bfloat16 fixtures against torch's.
stage_half() {
  local failed=0 n=0 native=pass f lib half_dir="$pack/prebuilt/half"
  export STITCH_FORCE_TARGET="$target" STITCH_FORCE_JOBS="$(( jobs >= 4 ? jobs / 4 : 1 ))"
  for f in $(fixture_list); do
    out_of_time && { echo "out of --budget before $f"; failed=$((failed + 1)); break; }
    lib="$(prebuilt_of fp16 "$f")"
    n=$((n + 1))
    if "$PYTHON" "$repo/scripts/models/compare_with_ort.py" --stitchc "$here/stitchc-target" \
         --stitch-run "$STITCH_RUN" --work "$out/work/half/$f" --target host --precision fp16 \
         ${lib:+--library "$lib"} "$repo/tests/models/$f.onnx" > "$out/logs/half_$f.log" 2>&1; then
      echo "PASS fp16 $f"; else echo "FAIL fp16 $f"; tail -8 "$out/logs/half_$f.log"; failed=$((failed + 1)); fi
  done
  local dir=(); [ "$target" = cuda ] && [ -d "$half_dir" ] && dir=(--library-dir "$half_dir")
  echo "== native float16/bfloat16 fixtures"
  timeout "$(remaining)" "$PYTHON" "$repo/scripts/models/check_half_models.py" --stitchc "$here/stitchc-target" \
    --stitch-run "$STITCH_RUN" --work "$out/work/half/native" "${dir[@]}" || native=FAIL
  note="$((n - failed))/$n fp16 fixtures within their aims; native half fixtures: $native"
  [ $failed = 0 ] && [ $native = pass ]
}

# The compute-sanitizer subset: one allowlisted conformance test per kernel kind (the nvcc sample
# of tests/conformance/CMakeLists.txt, plus the movement, row, scan and arg-reduction kinds),
# run by the conformance runner (which freezes inputs and compares outputs as usual); the two
# fixtures with cuBLASLt + regional rows and with cuDNN; the global, independent and regional
# scheme models. Each under memcheck and racecheck (stitch-run-sanitized as the runner's
# stitch-run). On the host target the same runs happen without a sanitizer.
SANITIZER_TESTS="test_sigmoid test_reduce_sum_keepdims_example test_globalaveragepool
  test_layer_normalization_4d_axis1 test_instancenorm_epsilon test_batchnorm_epsilon
  test_transpose_all_permutations_4 test_slice test_gather_elements_0 test_einsum_batch_diagonal
  test_resize_upsample_scales_linear test_top_k test_cumsum_2d_axis_0 test_argmax_keepdims_random
  test_softmax_axis_0 test_maxpool_2d_pads test_averagepool_2d_default test_gemm_all_attributes
  test_conv_with_strides_padding test_convtranspose"
SANITIZER_FIXTURES="bert_dynamo17 resnet18_dynamo18"

stage_sanitizer() {
  local w="$out/work/sanitizer"; mkdir -p "$w"
  local suite; suite="$(conformance_suite)"
  "$PYTHON" "$here/make_scheme_models.py" "$w/schemes" > /dev/null || return 1
  local tools=(${sanitizer_tools//,/ }) failed=0 ran=0 tool s f lib
  if [ "$target" = cuda ]; then
    COMPUTE_SANITIZER="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)"
    [ -n "$COMPUTE_SANITIZER" ] || { echo "compute-sanitizer not found"; return 1; }
    export COMPUTE_SANITIZER
    "$COMPUTE_SANITIZER" --version | tail -1
    # Some GPU sandboxes refuse the sanitizer ("Device not supported"): say so once, skip.
    local probe="$w/probe"; mkdir -p "$probe"
    "$PYTHON" "$here/make_scheme_models.py" "$probe" > /dev/null &&
      "$STITCHC" "$probe/scheme_regional/model.onnx" --target "$target" -o "$probe/lib.so" -j 2 -q &&
      "$COMPUTE_SANITIZER" --tool memcheck --error-exitcode 99 "$STITCH_RUN" "$probe/lib.so" \
        --test-data "$probe/scheme_regional/test_data_set_0" --atol 1e-5 > "$probe/log" 2>&1
    local prc=$?
    cat "$probe/log"
    if [ $prc != 0 ] && grep -qiE 'not supported|error 999|Unable to' "$probe/log"; then
      stage_status=SKIP; note="compute-sanitizer refuses this machine: $(grep -iE 'not supported|error 999|Unable to' "$probe/log" | head -1)"
      return 0
    fi
  else
    echo "host target: no compute-sanitizer; the subset runs without it, to prove the stage"
    tools=(none)
  fi
  # The scheme models are compiled once; the runner and compare_with_ort compile their own.
  for s in global independent regional; do
    "$STITCHC" "$w/schemes/scheme_$s/model.onnx" --target "$target" -o "$w/schemes/scheme_$s/lib.so" -j 2 -q || failed=$((failed + 1))
  done
  export STITCH_RUN_REAL="$STITCH_RUN" STITCH_FORCE_TARGET="$target" STITCH_FORCE_JOBS=1
  for tool in "${tools[@]}"; do
    out_of_time && { echo "out of --budget before $tool"; failed=$((failed + 1)); break; }
    export STITCH_SANITIZER_TOOL="$tool"
    echo "== $tool: $(wc -w <<< "$SANITIZER_TESTS") conformance tests"
    timeout "$(remaining)" "$CONFORMANCE" --suite "$suite" --stitchc "$here/stitchc-target" \
      --stitch-run "$here/stitch-run-sanitized" --allowlist "$repo/tests/conformance/allowlist.txt" \
      --work-dir "$w/conformance-$tool" -j "$(( jobs < 8 ? jobs : 8 ))" $SANITIZER_TESTS
    [ $? = 0 ] || failed=$((failed + 1))
    ran=$((ran + $(wc -w <<< "$SANITIZER_TESTS")))
    for s in global independent regional; do
      echo "== $tool: scheme_$s"
      timeout "$(remaining)" "$here/stitch-run-sanitized" "$w/schemes/scheme_$s/lib.so" \
        --test-data "$w/schemes/scheme_$s/test_data_set_0" --atol 1e-5 || failed=$((failed + 1))
      ran=$((ran + 1))
    done
    for f in $SANITIZER_FIXTURES; do
      echo "== $tool: fixture $f"
      lib="$(prebuilt_of fp32 "$f")"
      timeout "$(remaining)" "$PYTHON" "$repo/scripts/models/compare_with_ort.py" --stitchc "$here/stitchc-target" \
        --stitch-run "$here/stitch-run-sanitized" --work "$w/fixture-$tool-$f" --target host \
        ${lib:+--library "$lib"} "$repo/tests/models/$f.onnx" 2>&1 | grep -v '^+ ' | tail -25
      [ "${PIPESTATUS[0]}" = 0 ] || failed=$((failed + 1))
      ran=$((ran + 1))
    done
  done
  note="$ran runs ($(IFS=,; echo "${tools[*]}")), $failed failing step(s)"
  if [ "$target" = host ]; then stage_status=SKIP; note="compute-sanitizer needs a GPU: skipped; $note without it"; fi
  [ $failed = 0 ]
}

# The attention group (issue 18) against its unfused plan and torch's SDPA. The cases' models are
# written here; their libraries come from the pack (prebuild.sh) or are built now.
stage_attention() {
  local d="$out/attention" models="$pack/attention/models" libs="$pack/attention/libs" q=()
  [ "$quick" = 1 ] && q=(--quick)
  mkdir -p "$d"
  if [ ! -f "$models/cases.json" ] || [ "$quick" = 1 ]; then
    models="$d/models"
    "$PYTHON" "$here/attention_bench.py" models "$models" "${q[@]}" || return 1
  fi
  # Built once per pack and target (lease.sh's second attention run finds the first one's).
  [ "$target" = cuda ] && [ "$models" = "$pack/attention/models" ] || libs="$d/libs"
  if [ ! -f "$libs/target.txt" ]; then
    timeout "$(remaining)" "$PYTHON" "$here/attention_bench.py" build "$models" --stitchc "$STITCHC" \
      --out "$libs" --target "$target" --jobs "$jobs" || return 1
  fi
  local tools="$sanitizer_tools"
  [ "$target" = host ] && tools=""
  timeout "$(remaining)" "$PYTHON" "$here/attention_bench.py" run "$models" --libs "$libs" \
    --stitch-run "$STITCH_RUN" --bench-model "$BENCH_MODEL" --out "$d" --sanitizer "$tools" \
    --iters "$(( iters < 100 ? iters : 100 ))" --warmup "$(( warmup < 10 ? warmup : 10 ))" \
    --budget "$(( $(remaining) > 40 ? $(remaining) - 20 : 20 ))" "${no_timing[@]}"
  local rc=$?
  local passed
  passed="$(grep -c '^| [a-z0-9_]* | [0-9]*×.* PASS |' "$d/attention.md" 2>/dev/null)"
  note="${passed:-0} attention cases pass their checks; table in attention/attention.md"
  return $rc
}

# The GEMM chains (issue 19) against their unfused plans: models written and built here (their
# weights are too large for the pack).
stage_dynamic() {
  local d="$out/dynamic"
  mkdir -p "$d"
  # Two of the real fixtures (BERT, LLaMA): each shape is a library of its own to build.
  timeout "$(remaining)" "$PYTHON" "$repo/scripts/bench/dynamic_shapes.py" --stitchc "$STITCHC" \
    --target "$target" --fixtures bert_ts16,llama_ts19 --out "$d/dynamic.md" || return 1
  note="table in dynamic/dynamic.md"
}

stage_chain() {
  local d="$out/chain" q=()
  [ "$quick" = 1 ] && q=(--quick)
  mkdir -p "$d"
  if [ ! -f "$d/models/cases.json" ]; then
    "$PYTHON" "$here/chain_bench.py" models "$d/models" "${q[@]}" || return 1
  fi
  if [ ! -f "$d/libs/target.txt" ]; then
    timeout "$(remaining)" "$PYTHON" "$here/chain_bench.py" build "$d/models" --stitchc "$STITCHC" \
      --out "$d/libs" --target "$target" --jobs "$jobs" || return 1
  fi
  local tools="$sanitizer_tools"
  [ "$target" = host ] && tools=""
  timeout "$(remaining)" "$PYTHON" "$here/chain_bench.py" run "$d/models" --libs "$d/libs" \
    --stitch-run "$STITCH_RUN" --bench-model "$BENCH_MODEL" --out "$d" --sanitizer "$tools" \
    --iters "$(( iters < 100 ? iters : 100 ))" --warmup "$(( warmup < 10 ? warmup : 10 ))" \
    --budget "$(( $(remaining) > 40 ? $(remaining) - 20 : 20 ))" "${no_timing[@]}"
  local rc=$?
  local passed
  passed="$(grep -c ' PASS | [0-9.e+-]* PASS |$' "$d/chain.md" 2>/dev/null)"
  note="${passed:-0} chain cases pass both checks; table in chain/chain.md"
  return $rc
}

stage_export() {
  local q=(); [ "$quick" = 1 ] && q=(--quick)
  # Models in parallel processes with 8 or more jobs (each traces on the CPU; the references
  # use the GPU briefly).
  local par=$(( jobs >= 8 ? 4 : 1 ))
  tr ',' '\n' <<< "$models" | timeout "$(remaining)" xargs -P "$par" -I{} \
    "$PYTHON" "$here/export_bench_models.py" "$out/models" "${q[@]}" --only {}
  local ok=0
  for m in $(model_list); do [ -f "$out/models/$m/meta.json" ] && ok=$((ok + 1)); done
  note="$ok/$(model_list | wc -w) models exported"
  [ $ok = "$(model_list | wc -w)" ]
}

stage_compile() {
  local par per
  par=$(( jobs >= 8 ? 4 : 1 )); per=$(( jobs / par > 0 ? jobs / par : 1 ))
  export out target STITCHC PYTHON here io_precision
  row_list | timeout "$(remaining)" xargs -P "$par" -I{} bash -c '
    m="$(cut -d: -f1 <<< {})" p="$(cut -d: -f2 <<< {})"; d="$out/models/$m"; r="$d/$p"
    [ -f "$d/model.onnx" ] || { echo "FAIL $m $p (not exported)"; exit 0; }
    mkdir -p "$r"
    flags="$("$PYTHON" "$here/precisions.py" stitchc-flags "$p" "$io_precision")"
    t0=$(date +%s.%N)
    if "$STITCHC" "$d/model.onnx" --target "$target" -o "$r/lib_$target.so" --report "$r/plan.json" \
         $flags --time-passes -j '"$per"' -q > "$out/logs/compile_${m}_$p.log" 2>&1; then
      t1=$(date +%s.%N)
      printf "{\"model\": \"%s\", \"precision\": \"%s\", \"stitchc_flags\": \"%s\", \"target\": \"%s\", \"compile_s\": %.2f, \"library_bytes\": %d}\n" \
        "$m" "$p" "$flags" "$target" "$(awk "BEGIN {print $t1 - $t0}")" "$(stat -c %s "$r/lib_$target.so")" > "$r/compile_$target.json"
      echo "PASS $m $p $(cat "$r/compile_$target.json")"
    else echo "FAIL $m $p"; tail -5 "$out/logs/compile_${m}_$p.log"; fi' | tee "$out/work/compile.txt"
  local n; n=$(grep -c '^PASS' "$out/work/compile.txt")
  note="$n/$(n_rows) model x precision rows compiled for $target"
  [ "$n" = "$(n_rows)" ]
}

# Each row's library on its inputs (the exported float32 ones, or rounded to float16/bfloat16
# for --io-precision reduced) against PyTorch's float32 outputs, at the precision's aim.
stage_check() {
  local failed=0 n=0 row m p
  for row in $(row_list); do
    m="${row%%:*}" p="${row##*:}"
    local d="$out/models/$m" r="$out/models/$m/$p" lib; lib="$(lib_of "$m" "$p")"
    [ -f "$lib" ] || { echo "$m $p: no library"; failed=$((failed + 1)); continue; }
    local ins tol args=()
    ins="$("$PYTHON" "$here/precisions.py" inputs "$d" "$p" "$io_precision" "$r/inputs")" || { failed=$((failed + 1)); continue; }
    tol="$("$PYTHON" "$here/precisions.py" check-flags "$p" "$d")"
    args=($("$PYTHON" - "$d" "$ins" <<'EOF'
import json, sys, os
d, ins = sys.argv[1], sys.argv[2]; m = json.load(open(os.path.join(d, "meta.json")))
for k, i in enumerate(m["inputs"]):
    print("--input", f"{i['name']}={ins}/input_{k}.npy")
for k, o in enumerate(m["outputs"]):
    print("--expected", f"{o['name']}={d}/ref_{k}.npy")
EOF
))
    rm -rf "$r/out_$target"
    timeout "$(remaining)" "$STITCH_RUN" "$lib" "${args[@]}" $tol --output-dir "$r/out_$target" > "$r/check_$target.log" 2>&1
    local rc=$?
    n=$((n + 1))
    "$PYTHON" "$here/summarize.py" errors "$d" "$p" "$target" "$rc"
    [ $rc = 0 ] || { failed=$((failed + 1)); cat "$r/check_$target.log"; }
  done
  note="$((n - failed))/$(n_rows) model x precision rows match PyTorch float32 (fp32: rtol 1e-3, atol 1e-4; others: relative L2 aim)"
  [ $failed = 0 ]
}

# Two passes over the models, so that a --budget cut takes the slowest system only: first
# bench_model and every peer but max-autotune, then max-autotune (minutes of inductor autotuning
# per model). bench_peers.py merges its systems into the model's bench_peers.json.
stage_bench() {
  local failed=0 m d lib pass fast="" slow=""
  for s in $(tr ',' ' ' <<< "$systems"); do
    case "$s" in none) ;; autotune) slow="autotune" ;; *) fast="${fast:+$fast,}$s" ;; esac
  done
  rm -f "$out"/models/*/*/bench_peers.json
  local row p r ins
  for pass in fast slow; do
    for row in $(row_list); do
      m="${row%%:*}" p="${row##*:}"
      out_of_time && { echo "out of --budget before $m $p ($pass pass)"; failed=1; break 2; }
      d="$out/models/$m"; r="$d/$p"; lib="$(lib_of "$m" "$p")"
      [ -f "$lib" ] || { echo "$m $p: no library"; failed=1; continue; }
      if [ "$pass" = fast ]; then
        local copy=(); [ "$target" = cuda ] && copy=(--copy-mib 1024)
        ins="$("$PYTHON" "$here/precisions.py" inputs "$d" "$p" "$io_precision" "$r/inputs")" || { failed=1; continue; }
        timeout "$(remaining)" "$BENCH_MODEL" "$lib" --inputs "$ins" --warmup "$warmup" --iters "$iters" \
          "${copy[@]}" --json "$r/bench_stitchc_$target.json" || failed=1
      fi
      local sys; [ "$pass" = fast ] && sys="$fast" || sys="$slow"
      if [ "$target" = cuda ] && [ -n "$sys" ]; then
        PYTHONUNBUFFERED=1 timeout "$(remaining)" "$PYTHON" "$here/bench_peers.py" "$d" --out "$r/bench_peers.json" \
          --lib "$lib" --plan "$r/plan.json" --systems "$sys" --warmup "$warmup" \
          --iters "$(( iters < 100 ? iters : 100 ))" --precision "$p" --io-precision "$io_precision" || failed=1
      fi
    done
  done
  [ "$target" = host ] && note="stitchc only (host target, steady_clock; peers need a GPU)"
  [ $failed = 0 ]
}

stage_report() {
  "$PYTHON" "$here/summarize.py" report "$out" --target "$target" --models "$models" \
    --precisions "$precisions" --io-precision "$io_precision"
}

run_stage setup stage_setup
run_stage conformance stage_conformance
run_stage fixtures stage_fixtures
run_stage half stage_half
run_stage sanitizer stage_sanitizer
run_stage attention stage_attention
run_stage chain stage_chain
run_stage dynamic stage_dynamic
run_stage export stage_export
run_stage compile stage_compile
run_stage check stage_check
run_stage bench stage_bench
run_stage report stage_report

if [ -n "$bundle" ]; then
  tar czf "$bundle" -C "$(dirname "$out")" --exclude='*.onnx' --exclude='*.so' --exclude='*.npy' \
      --exclude='work' --exclude='out_*' "$(basename "$out")" 2>/dev/null
  echo "bundle: $bundle ($(du -h "$bundle" | cut -f1))"
fi
echo
echo "stages (total $(elapsed) s):"
column -t -s $'\t' "$out/stages.tsv" 2>/dev/null || cat "$out/stages.tsv"
[ -f "$out/table.txt" ] && { echo; cat "$out/table.txt"; }
exit $overall
