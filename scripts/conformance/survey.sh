#!/usr/bin/env bash
# Reruns the conformance survey: every test of the ONNX backend node suite end to end on the
# host target, then rewrites tests/conformance/allowlist.txt (what passes, keeping tolerance
# overrides), tests/conformance/exclusions.txt (everything else with its reason, keeping
# hand-written reasons) and docs/conformance.md. Review the diff and commit all three.
#
# usage: scripts/conformance/survey.sh [--fast] [BUILD_DIR] [-- extra stitch_conformance flags]
#   --fast    host compiles ~7x cheaper: stitchc's compiler is fast_host_cxx.sh, which adds a
#             precompiled runtime header and the launch machinery compiled once (prepared by
#             fast_host_setup.sh from the current src/runtime). The kernels, flags and
#             runtime are the tree's; the ctest shards always use stitchc unchanged.
#   BUILD_DIR defaults to build/ (configured and built here, like scripts/build.sh).
#   JOBS (default: the number of cores) tests run at once.
#   The per-test results also go to BUILD_DIR/conformance-survey.tsv.
set -euo pipefail
cd "$(dirname "$0")/../.."
fast=no
if [[ ${1:-} == --fast ]]; then fast=yes; shift; fi
build=build
if [[ $# -gt 0 && $1 != -- ]]; then build=$1; shift; fi
[[ ${1:-} == -- ]] && shift
jobs=${JOBS:-$(nproc)}

if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
# The tools, and the runtime archives every host-target library links against.
cmake --build "$build" -j"$jobs" --target stitch_conformance stitchc stitch-run \
  stitch_runtime_host stitch_library_host

if [[ $fast == yes ]]; then
  export STITCH_FAST_HOST_DIR=$(cd "$build" && pwd)/conformance-fast-host
  export STITCH_REAL_CXX=${CXX:-g++}
  scripts/conformance/fast_host_setup.sh "$STITCH_FAST_HOST_DIR"
  export CXX=$PWD/scripts/conformance/fast_host_cxx.sh
fi

suite=$(ls -d .venv/lib/python3*/site-packages/onnx/backend/test/data/node | head -n 1)
runner=$(find "$build" -name stitch_conformance -type f -perm -u+x | head -n 1)
"$runner" --suite "$suite" \
  --stitchc "$build/stitchc" --stitch-run "$build/src/driver/run/stitch-run" \
  --survey --jobs "$jobs" \
  --allowlist tests/conformance/allowlist.txt \
  --exclusions tests/conformance/exclusions.txt \
  --doc docs/conformance.md \
  --results "$build/conformance-survey.tsv" "$@"
