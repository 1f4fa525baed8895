#!/usr/bin/env bash
# Reruns the conformance survey: every test of the ONNX backend node suite end to end on the
# host target, then rewrites tests/conformance/allowlist.txt (what passes, keeping tolerance
# overrides), tests/conformance/exclusions.txt (everything else with its reason, keeping
# hand-written reasons) and docs/conformance.md. Review the diff and commit all three.
#
# usage: scripts/conformance/survey.sh [BUILD_DIR] [-- extra stitch_conformance flags]
#   BUILD_DIR defaults to build/ (configured and built here, like scripts/build.sh).
#   JOBS (default: the number of cores) tests run at once.
#   The per-test results also go to BUILD_DIR/conformance-survey.tsv.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build
if [[ $# -gt 0 && $1 != -- ]]; then build=$1; shift; fi
[[ ${1:-} == -- ]] && shift
jobs=${JOBS:-$(nproc)}

if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
# The tools, the runtime archives every host-target library links against, and the
# precompiled runtime header.
cmake --build "$build" -j"$jobs" --target stitch_conformance stitchc stitch-run \
  stitch_runtime_host stitch_library_host stitch_runtime_host_pch

suite=$(ls -d .venv/lib/python3*/site-packages/onnx/backend/test/data/node | head -n 1)
runner=$(find "$build" -name stitch_conformance -type f -perm -u+x | head -n 1)
"$runner" --suite "$suite" \
  --stitchc "$build/stitchc" --stitch-run "$build/src/driver/run/stitch-run" \
  --survey --jobs "$jobs" \
  --allowlist tests/conformance/allowlist.txt \
  --exclusions tests/conformance/exclusions.txt \
  --doc docs/conformance.md --models tests/models \
  --results "$build/conformance-survey.tsv" "$@"
