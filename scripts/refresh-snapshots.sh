#!/usr/bin/env bash
# Rewrites the code-generation snapshots (tests/snapshots/expected/) from the current compiler:
# builds the snapshot tool if needed, runs it with --update, and shows what changed. Review the
# diff (git diff tests/snapshots) and commit it with the change that caused it.
#
#   scripts/refresh-snapshots.sh              every case of tests/snapshots/cases.txt
#   scripts/refresh-snapshots.sh CASE...      only these
#   STITCH_BUILD_DIR=build-x scripts/...      build the tool there (default: build/)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
build=${STITCH_BUILD_DIR:-build}

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target stitch_snapshots -j"$(nproc)"

status=0
"$build/tests/snapshots/stitch_snapshots" --source-dir "$repo" --update "$@" || status=$?
echo
git status --short tests/snapshots
exit "$status"
