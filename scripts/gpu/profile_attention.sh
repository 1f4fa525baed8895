#!/usr/bin/env bash
# profile_attention.sh OUTDIR CASE...: Nsight Compute's view of the fused attention kernel of each
# attention-stage case, after `run.sh OUTDIR --stages setup,attention` on the GPU machine (its
# inputs in OUTDIR/attention/data, its libraries in the pack): duration, throughput against the
# SM's and memory's peaks, occupancy, and where the warps stall. One stitch-run each, its first
# attention launch profiled. Prints the report; writes OUTDIR/profile/CASE.txt.
set -u
out="$1"; shift
here="$(cd "$(dirname "$0")" && pwd)"
pack="${PACK:-$here/../../.gpu-pack}"
ncu="$(command -v ncu || echo /usr/local/cuda/bin/ncu)"
[ -x "$ncu" ] || { echo "profile_attention.sh: no ncu" >&2; exit 1; }
export LD_LIBRARY_PATH="$out/work/pack-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$out/profile"
for c in "$@"; do
  data="$out/attention/data/$c"
  lib="$pack/attention/libs/${c}_fused.so"
  [ -f "$lib" ] || { echo "profile_attention.sh: no $lib" >&2; continue; }
  args=()
  for i in 0 1 2 3; do
    n=(q k v bias)
    args+=(--input "${n[$i]}=$data/input_$i.npy")
  done
  timeout 120 "$ncu" --kernel-name regex:attention --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    "$pack/libexec/stitch-run" "$lib" "${args[@]}" --output-dir "$out/profile/$c-out" \
    > "$out/profile/$c.txt" 2>&1
  echo "== $c (rc $?)"
  grep -E "Duration|Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Stall|Warp Cycles Per Issued|Issue Slots Busy|Executed Ipc A|Bank Conflicts|L1/TEX Hit|Shared Memory Configuration Size|Dynamic Shared" "$out/profile/$c.txt" | sed 's/  */ /g' | head -40
  grep -E "^ *(OPT|WRN)" -A3 "$out/profile/$c.txt" | cut -c1-300 | head -30
done
