#!/usr/bin/env bash
# Fuzzes stitchc's compile pipeline (load -> passes -> plan -> emit, tests/fuzz) with libFuzzer
# under ASan and UBSan, then prints a summary.
#
#   scripts/fuzz.sh [SECONDS=600] [JOBS=1]
#
# Builds tests/fuzz's stitch_fuzz_compile with clang in build-fuzz/ (-DSTITCH_FUZZ=ON), seeds
# the corpus with the ONNX backend node models, tests/models/*.onnx and the error corpus, and
# runs libFuzzer in fork mode with JOBS workers (one CPU each) for SECONDS of wall time; a
# crash, leak, timeout or out-of-memory input is saved and fuzzing goes on. Afterwards:
#   build-fuzz/corpus/     the corpus, kept and extended by every run
#   build-fuzz/findings/   crash-*, leak-*, timeout-*, oom-* inputs (replay one with
#                          build-fuzz/tests/fuzz/stitch_fuzz_compile FILE); each finding,
#                          once fixed, becomes a case in tests/errors (make_corpus.py)
#   build-fuzz/fuzz.log    libFuzzer's output (STITCH_FUZZ_LOG)
# Exits 1 when this run saved a finding. Needs clang and libFuzzer (Debian: clang-14,
# libclang-rt-14-dev). Environment: STITCH_FUZZ_BUILD (build folder), STITCH_FUZZ_TIMEOUT
# (seconds one input may take, default 60), STITCH_FUZZ_RSS_MB (default 4096).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-600}
jobs=${2:-1}
build=${STITCH_FUZZ_BUILD:-build-fuzz}
timeout=${STITCH_FUZZ_TIMEOUT:-60}
log=${STITCH_FUZZ_LOG:-$build/fuzz.log}
rss_mb=${STITCH_FUZZ_RSS_MB:-4096}

cxx=$(command -v clang++ || command -v clang++-14 || true)
cc=$(command -v clang || command -v clang-14 || true)
if [ -z "$cxx" ] || [ -z "$cc" ]; then
  echo "fuzz.sh: clang is not installed (Debian: apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 2
fi

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -DSTITCH_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" "${launcher[@]}" >/dev/null
cmake --build "$build" -j"${STITCH_FUZZ_BUILD_JOBS:-$(nproc)}" --target stitch_fuzz_compile
fuzzer="$build/tests/fuzz/stitch_fuzz_compile"

# Seeds, rebuilt every run (cheap): one file per model, named after where it came from.
seeds="$build/seeds"
rm -rf "$seeds"
mkdir -p "$seeds" "$build/corpus" "$build/findings"
for model in .venv/lib/python3*/site-packages/onnx/backend/test/data/node/*/model.onnx; do
  [ -f "$model" ] || continue
  name=$(basename "$(dirname "$model")")
  cp "$model" "$seeds/node_$name.onnx"
done
cp tests/models/*.onnx "$seeds/"
for model in tests/errors/cases/*/model.onnx; do
  [ -f "$model" ] || continue # one case's model is a folder
  cp "$model" "$seeds/error_$(basename "$(dirname "$model")").onnx"
done

# A dictionary of the words a model is made of: op types (src/graph/ops.def), attribute names
# the shape rules read, and string attribute values.
dict="$build/onnx.dict"
{
  sed -n 's/^STITCH_OP(\([A-Za-z0-9_]*\),.*/\1/p' src/graph/ops.def
  grep -rhoE 'attr(_[a-z]+)?\("[a-z_]+"' src/graph src/frontend | sed 's/.*("//; s/"$//'
  printf '%s\n' ai.onnx NOTSET SAME_UPPER SAME_LOWER VALID constant reflect edge nearest linear \
    cubic asymmetric half_pixel align_corners tanh none mean sum batch
} | sort -u | sed 's/.*/"&"/' > "$dict"

before=$(find "$build/findings" -type f | wc -l)
echo "fuzz.sh: $(find "$seeds" -type f | wc -l) seeds, $(find "$build/corpus" -type f | wc -l)" \
     "corpus inputs; fuzzing for ${seconds}s with $jobs job(s); log in $log"
set +e
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
  "$fuzzer" -fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
  -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb="$rss_mb" \
  -dict="$dict" -artifact_prefix="$build/findings/" -print_final_stats=1 \
  "$build/corpus" "$seeds" > "$log" 2>&1
status=$?
set -e

after=$(find "$build/findings" -type f | wc -l)
echo "fuzz.sh: libFuzzer exited with $status; its last progress line:"
grep -E '^#[0-9]+' "$log" | tail -1 || true
grep -E '^(stat::|INFO: fuzzed for|INFO: exiting)' "$log" | tail -8 || true
echo "fuzz.sh: corpus $(find "$build/corpus" -type f | wc -l) inputs;" \
     "findings this run: $((after - before)) (all: $after, in $build/findings)"
grep -E 'FINDING|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error' \
  "$log" | sort | uniq -c | sort -rn | head -20 || true
[ "$after" -eq "$before" ]
