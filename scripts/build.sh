#!/usr/bin/env bash
# Configures and builds stitchc in build/ (Release with debug info), using every core.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
