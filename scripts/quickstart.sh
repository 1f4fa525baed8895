#!/usr/bin/env bash
# From a fresh machine: installs dependencies, builds stitchc, and compiles the example
# model in examples/, printing what the compiler did and writing its report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
mkdir -p out
echo
echo "== stitchc examples/transformer_block.onnx =="
build/stitchc examples/transformer_block.onnx --input-shape tokens=2x16x64 \
  --report out/transformer_block.json --print-after make-views
echo
echo "report: out/transformer_block.json"
