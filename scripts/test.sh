#!/usr/bin/env bash
# The whole test suite from a fresh machine: installs dependencies, builds once, runs every
# test under ctest in parallel. This is the README's test command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
ctest -j"$(nproc)" --output-on-failure --timeout 1500
