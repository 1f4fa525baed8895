#!/usr/bin/env bash
# The whole test suite from a fresh machine: installs dependencies, builds once, runs every
# test under ctest in parallel, then the sanitizer stage. This is the README's test command and
# what CI runs.
#
#   scripts/test.sh              both stages
#   scripts/test.sh main         build/ and its ctest only
#   scripts/test.sh sanitizers   the sanitizer stage only
#
# The sanitizer stage builds, in their own folders and only the targets its tests need, with
# -Og for ASan, -O1 for TSan (cmake/stitch_sanitizers.cmake):
#   build-asan/  ASan + UBSan: the unit tests, the error corpus (stitchc under ASan), the host
#                target's tests (runtime, library, model runtime; the generated libraries the
#                unit tests compile and load get the same -fsanitize flags) and the fuzz
#                target's replay of its seed corpus (tests/fuzz).
#   build-tsan/  TSan: the model runtime's tests on the host target, its concurrency test
#                ("model runtime threads") among them.
# Environment: STITCH_TEST_JOBS (parallelism, default every core), STITCH_ASAN_BUILD and
# STITCH_TSAN_BUILD (the folders), STITCH_SANITIZER_CMAKE_ARGS (more cmake arguments for both,
# e.g. -DCMAKE_CXX_COMPILER_LAUNCHER=ccache).
set -euo pipefail
cd "$(dirname "$0")/.."

stages=${1:-all}
case "$stages" in
  all | main | sanitizers) ;;
  *) echo "usage: scripts/test.sh [all|main|sanitizers]" >&2; exit 2 ;;
esac
jobs=${STITCH_TEST_JOBS:-$(nproc)}

scripts/install-deps.sh

if [ "$stages" != sanitizers ]; then
  scripts/build.sh
  (cd build && ctest -j"$jobs" --output-on-failure --timeout 600)
fi
[ "$stages" != main ] || exit 0

# One sanitizer build: configure DIR with STITCH_SANITIZE=CHECKS, build TARGETS, run its ctest.
sanitizer_build() {
  local dir=$1 checks=$2
  shift 2
  local start=$SECONDS
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTITCH_SANITIZE="$checks" \
    ${STITCH_SANITIZER_CMAKE_ARGS:-} >/dev/null
  cmake --build "$dir" -j"$jobs" --target "$@"
  local built=$SECONDS
  # Leaks are errors; UBSan stops at the first report (also compiled in); TSan fails the test.
  # A test without its own TIMEOUT stops after 600 s (the longest take about 90 s here): a
  # sanitizer's fault inside a signal handler can leave the process waiting on a lock for good.
  # Use-after-return detection stays off: Boost.Context (Debian's, built without BOOST_USE_ASAN)
  # switches onto a new fiber's stack to create it without telling AddressSanitizer, and with
  # fake stacks on, the first switch into a generated library's fiber crashes in Boost's entry.
  (cd "$dir" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
     ctest -j"$jobs" --output-on-failure --timeout 600)
  echo "test.sh: $dir ($checks): build $((built - start)) s, tests $((SECONDS - built)) s"
}

sanitizer_build "${STITCH_ASAN_BUILD:-build-asan}" address,undefined \
  stitchc stitch_unit_tests stitch_runtime_tests stitch_half_tests stitch_library_tests \
  stitch_model_runtime_tests \
  stitch_runtime_host stitch_library_host stitch_runtime_host_pch stitch_fuzz_replay
sanitizer_build "${STITCH_TSAN_BUILD:-build-tsan}" thread stitch_model_runtime_tests
