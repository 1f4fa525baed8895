#!/usr/bin/env bash
# Compiles the example model with stitchc, builds the example inference app
# (examples/run_model.cpp) against the library, and runs it.
#   scripts/run-example.sh [BUILD_DIR] [TARGET]    (defaults: build, host on a machine without
#                                                   a GPU, cuda where nvidia-smi sees one)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
target=${2:-}
if [ -z "$target" ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then target=cuda; else target=host; fi
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/stitch-example-XXXXXX")
trap 'rm -rf "$out"' EXIT
echo "== stitchc examples/transformer_block.onnx --target $target =="
"$build/stitchc" examples/transformer_block.onnx --input-shape tokens=2x16x64 --target "$target" \
  -o "$out/libtransformer_block.so" --report "$out/report.json"
echo "== building examples/run_model.cpp against it =="
c++ -std=c++17 -O1 examples/run_model.cpp -Iinclude -I/usr/local/cuda/include \
  -L"$out" -ltransformer_block -L/usr/local/cuda/lib64 -lcudart \
  -Wl,-rpath,"$out" -Wl,-rpath,/usr/local/cuda/lib64 -o "$out/run_model"
echo "== running it =="
"$out/run_model"
