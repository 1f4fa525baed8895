#!/usr/bin/env bash
# From a fresh machine: installs dependencies, builds stitchc, compiles the example model in
# examples/ (for the host target on a machine without a GPU, for CUDA where one is present),
# builds the example inference app against the library, and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
scripts/run-example.sh build
