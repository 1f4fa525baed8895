#!/usr/bin/env bash
# prebuild.sh: compiles the model fixtures for the CUDA target here (nvcc needs no GPU) into the
# pack, so that a short GPU lease spends its minutes running them, not compiling them. Run after
# pack.sh (which empties the pack); run.sh's fixtures and half stages then take the libraries
# from PACK/prebuilt/ (compare_with_ort.py --library, check_half_models.py --library-dir)
# instead of building their own.
#
#   scripts/gpu/prebuild.sh [--pack DIR] [--jobs N] [--precisions LIST]
#
# Layout: PACK/prebuilt/fp32/<fixture>.so (tests/models/*.onnx as they are),
# PACK/prebuilt/<p>/<fixture>.so for each --precisions entry (fp16, bf16: stitchc --precision),
# PACK/prebuilt/half/<fixture>.so (tests/models/half/*.onnx), all stripped; prebuilt.txt lists
# them with the stitchc commit. Default --precisions fp16. The folder is then packed as
# PACK/prebuilt.tar.xz (a third of its size, so that pack and tree stay under the device tool's
# 64 MiB); run.sh unpacks it on first use.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
pack="$repo/.gpu-pack" jobs=2 precisions="fp16"
while [ $# -gt 0 ]; do
  case "$1" in
    --pack) pack="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --precisions) precisions="$2"; shift 2 ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) echo "prebuild.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$pack/libexec/stitchc" ] || { echo "prebuild.sh: no pack at $pack: run pack.sh first" >&2; exit 1; }
python="$repo/.venv/bin/python"
[ -x "$python" ] || python=python3
stitchc="$pack/libexec/stitchc"
out="$pack/prebuilt"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rm -rf "$out"
mkdir -p "$out/fp32" "$out/half"

# One line per library: variant, model path, extra flags.
{
  for m in "$repo"/tests/models/*.onnx; do
    echo "fp32 $m"
    for p in ${precisions//,/ }; do echo "$p $m --precision $p"; done
  done
  for m in "$repo"/tests/models/half/*.onnx; do echo "half $m"; done
} > "$work/list"

export python stitchc repo work out
t0=$(date +%s)
xargs -P "$jobs" -L 1 bash -c '
  variant="$0" model="$1"; shift
  name="$(basename "$model" .onnx)"
  mkdir -p "$out/$variant"
  if [ "$variant" = half ]; then
    "$stitchc" "$model" --target cuda -j 1 -q -o "$work/$variant-$name.so" > "$work/$variant-$name.log" 2>&1
  else
    # compare_with_ort.py binds the fixture'"'"'s symbolic dims as its tests do; --target cuda only compiles.
    "$python" "$repo/scripts/models/compare_with_ort.py" --stitchc "$stitchc" --stitch-run /bin/false \
      --target cuda --work "$work/$variant-$name" "$@" "$model" > "$work/$variant-$name.log" 2>&1 &&
      mv "$work/$variant-$name/libmodel.so" "$work/$variant-$name.so"
  fi || { echo "FAIL $variant $name"; tail -5 "$work/$variant-$name.log"; exit 255; }
  strip -o "$out/$variant/$name.so" "$work/$variant-$name.so"
  echo "built $variant/$name.so ($(stat -c %s "$out/$variant/$name.so") bytes)"' < "$work/list"
{
  echo "prebuilt by scripts/gpu/prebuild.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) in $(( $(date +%s) - t0 )) s"
  echo "stitchc: $(head -2 "$pack/MANIFEST.txt" | tr '\n' ' ')"
  (cd "$out" && find . -name '*.so' | sort)
} > "$out/prebuilt.txt"
# The attention benchmark's cases (run.sh's attention stage): the models only; the GPU machine
# compiles their 16 small libraries in its first attention stage (the pack must stay small).
rm -rf "$pack/attention"
"$python" "$here/attention_bench.py" models "$pack/attention/models"
n=$(find "$out" -name '*.so' | wc -l) size="$(du -sh "$out" | cut -f1)"
rm -f "$pack/prebuilt.tar.xz"
tar cJf "$pack/prebuilt.tar.xz" -C "$pack" prebuilt && rm -rf "$out"
echo "prebuilt: $n libraries, $size, packed as $pack/prebuilt.tar.xz ($(du -h "$pack/prebuilt.tar.xz" | cut -f1)), $(( $(date +%s) - t0 )) s"
