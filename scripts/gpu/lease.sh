#!/usr/bin/env bash
# lease.sh: the GPU visit sized for one device call of a short lease (the device tool's 15
# minutes, start included): correctness and the benchmark build side by side, then the
# benchmark alone on a quiet GPU, every part under one deadline.
#
#   scripts/gpu/lease.sh OUTBASE [--deadline S] [--shard I/N] [--models LIST]
#                        [--precisions LIST] [--systems LIST] [--jobs N]
#                        [--no-attention] [--chain] [--target cuda|host] [--quick]
#                        (the last two for a dry run here)
#
# Phase 1 (in parallel, CPU-bound, the GPU barely used):
#   check  run.sh OUTBASE/check: setup, fixtures, half, sanitizer (memcheck only), taking the
#          libraries prebuild.sh put in the pack; then run.sh OUTBASE/conf: the conformance
#          allowlist's --shard (default 0/8, every 8th test) with what is left of phase 1
#   build  run.sh OUTBASE/bench: setup, export and compile of --models in --precisions
#   attention-check  run.sh OUTBASE/attcheck: the attention stage's checks and compute-sanitizer
#          (memcheck, racecheck), no timing (skipped with --no-attention)
#   chain-check  with --chain: run.sh OUTBASE/chain: the chain stage's models, builds, checks and
#          compute-sanitizer, no timing
# Phase 2 (alone, so that no other process disturbs the timing): run.sh OUTBASE/atttime: the
#   attention stage's timing (stitchc fused and unfused, torch's SDPA); with --chain, the chain
#   stage's timing in OUTBASE/chain (its models and libraries from phase 1); then run.sh
#   OUTBASE/bench: check, bench, report until the deadline (default 560 s after the start; run.sh's --budget keeps
#   30 s for the report).
# Every part writes its logs and stages.tsv in its folder; OUTBASE/lease.txt has the phases.
# With $OUT set (the device tool), the bundles, results.json, table.md and lease.txt go there.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -ge 1 ] || { sed -n 2,23p "$0"; exit 2; }
base="$1"; shift
deadline=560 shard="0/8" models="bert_b1,bert_b32,resnet50_b64" precisions="fp16,fp32"
systems="stitchc,eager,compile,xla" jobs=8 common=() attention=1 chain=0
while [ $# -gt 0 ]; do
  case "$1" in
    --deadline) deadline="$2"; shift 2 ;;
    --shard) shard="$2"; shift 2 ;;
    --models) models="$2"; shift 2 ;;
    --precisions) precisions="$2"; shift 2 ;;
    --systems) systems="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --no-attention) attention=0; shift ;;
    --chain) chain=1; shift ;;
    --target) common+=(--target "$2"); shift 2 ;;
    --quick) common+=(--quick); shift ;;
    *) echo "lease.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$base"
base="$(cd "$base" && pwd)"
t0=$(date +%s)
left() { echo $(( deadline - ($(date +%s) - t0) )); }
log() { echo "[lease $(( $(date +%s) - t0 )) s] $*" | tee -a "$base/lease.txt"; }
# Phase 1 ends at 55% of the deadline; the benchmark gets the rest.
phase1=$(( deadline * 55 / 100 ))

log "phase 1: check and build in parallel, until $phase1 s"
(
  "$here/run.sh" "$base/check" "${common[@]}" --stages setup,fixtures,half,sanitizer --sanitizer-tools memcheck \
    --budget $(( phase1 - 60 )) --jobs "$jobs" > "$base/check.out" 2>&1
  r=$(( phase1 - ($(date +%s) - t0) ))
  if [ $r -gt 60 ]; then
    "$here/run.sh" "$base/conf" "${common[@]}" --stages conformance --shard "$shard" --budget "$r" --jobs "$jobs" \
      > "$base/conf.out" 2>&1
  else echo "no time left for conformance" > "$base/conf.out"; fi
) &
check_pid=$!
att_pid=""
if [ "$attention" = 1 ]; then
  "$here/run.sh" "$base/attcheck" "${common[@]}" --stages attention --no-timing --budget "$phase1" --jobs 4 \
    > "$base/attcheck.out" 2>&1 &
  att_pid=$!
fi
chain_pid=""
if [ "$chain" = 1 ]; then
  "$here/run.sh" "$base/chain" "${common[@]}" --stages chain --no-timing --budget "$phase1" \
    --jobs 4 > "$base/chaincheck.out" 2>&1 &
  chain_pid=$!
fi
"$here/run.sh" "$base/bench" "${common[@]}" --stages setup,export,compile --models "$models" --precisions "$precisions" \
  --budget "$phase1" --jobs "$jobs" > "$base/build.out" 2>&1
log "build done: $(cut -f1,2,4 "$base/bench/stages.tsv" | tr '\t\n' ' ;')"
wait "$check_pid"
if [ -n "$att_pid" ]; then
  wait "$att_pid"
  log "attention check done: $(cut -f1,2,4 "$base/attcheck/stages.tsv" | tr '\t\n' ' ;')"
fi
if [ -n "$chain_pid" ]; then
  wait "$chain_pid"
  log "chain check done: $(cut -f1,2,4 "$base/chain/stages.tsv" | tr '\t\n' ' ;')"
  cp "$base/chain/chain/chain.md" "$base/chain/chain/chain-check.md" 2>/dev/null
fi
log "check done: $(cut -f1,2,4 "$base/check/stages.tsv" | tr '\t\n' ' ;')"
[ -f "$base/conf/stages.tsv" ] && log "conformance done: $(cut -f1,2,4 "$base/conf/stages.tsv" | tr '\t\n' ' ;')"
cp "$base/bench/stages.tsv" "$base/bench/stages-build.tsv"

if [ "$attention" = 1 ] && [ "$(left)" -lt 120 ]; then
  log "phase 2: no time left for the attention timing ($(left) s)"
elif [ "$attention" = 1 ]; then
  log "phase 2: attention timing alone, $(left) s left"
  "$here/run.sh" "$base/atttime" "${common[@]}" --stages attention --sanitizer-tools "" \
    --budget "$(( $(left) / 2 ))" > "$base/atttime.out" 2>&1
  log "attention timing done: $(cut -f1,2,4 "$base/atttime/stages.tsv" | tr '\t\n' ' ;')"
fi
if [ "$chain" = 1 ] && [ "$(left)" -ge 120 ]; then
  log "phase 2: chain timing alone, $(left) s left"
  "$here/run.sh" "$base/chain" "${common[@]}" --stages chain --sanitizer-tools "" \
    --budget "$(( $(left) / 3 ))" > "$base/chaintime.out" 2>&1
  log "chain timing done: $(cut -f1,2,4 "$base/chain/stages.tsv" | tr '\t\n' ' ;')"
fi
log "phase 2: check, bench, report alone, $(left) s left"
"$here/run.sh" "$base/bench" "${common[@]}" --stages check,bench,report --models "$models" --precisions "$precisions" \
  --systems "$systems" --iters 100 --warmup 10 --budget "$(left)" > "$base/bench.out" 2>&1
log "bench done: $(cut -f1,2,4 "$base/bench/stages.tsv" | tr '\t\n' ' ;')"

cp "$base/build.out" "$base/bench/build.out"
for part in check conf bench attcheck atttime chain; do
  [ -d "$base/$part" ] || continue
  cp "$base/$part.out" "$base/$part/run.out" 2>/dev/null
  tar czf "$base/lease-$part.tgz" -C "$base" --exclude='*.onnx' --exclude='*.so' --exclude='*.npy' \
    --exclude='work' --exclude='out_*' --exclude='inputs' "$part"
done
if [ -n "${OUT:-}" ]; then
  cp "$base"/lease-*.tgz "$base/lease.txt" "$OUT/"
  cp "$base/bench/results.json" "$base/bench/table.md" "$OUT/" 2>/dev/null
fi
echo; cat "$base/lease.txt"
for part in check conf attcheck atttime bench; do
  [ -f "$base/$part/stages.tsv" ] && { echo "== $part"; (column -t -s $'\t' "$base/$part/stages.tsv" 2>/dev/null || cat "$base/$part/stages.tsv"); }
done
for part in attcheck atttime; do
  [ -f "$base/$part/attention/attention.md" ] && { echo; echo "== $part"; cat "$base/$part/attention/attention.md"; }
done
[ -f "$base/chain/chain/chain.md" ] && { echo; echo "== chain"; cat "$base/chain/chain/chain.md"; }
[ -f "$base/bench/table.txt" ] && { echo; cat "$base/bench/table.txt"; }
exit 0
