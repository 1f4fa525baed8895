#!/usr/bin/env bash
# pack.sh: collects what the GPU machine needs from this build machine into one git-ignored
# folder (default .gpu-pack/ in the repository root) that the device tool carries: the GPU
# machine has CUDA, python3 with torch/jax/onnx, but no GLPK, protobuf or fmt and no network.
#
#   scripts/gpu/pack.sh [--build DIR] [--out DIR]
#
# Layout of the pack:
#   libexec/stitchc, libexec/stitch-run, libexec/stitch_conformance   stripped copies
#   libexec/runtime/*.a            the runtime archives stitchc links into every library
#                                  (found beside the binary; debug info stripped); no host_pch
#                                  (the host target still works without it, only slower)
#   lib/                           the ldd closure of the three binaries, minus the C library,
#                                  libstdc++ and libgcc_s (those go to lib-fallback/); run.sh
#                                  puts on LD_LIBRARY_PATH only the ones the machine lacks
#   lib-fallback/                  libstdc++ and libgcc_s, used only if the machine's are too old
#   bin/bench_model                scripts/gpu/bench_model.cpp, built with g++ against cudart
#   suite/node.tar.gz              the allowlisted ONNX backend node tests (inputs, outputs,
#                                  models) of the onnx version the allowlist was made with
#   MANIFEST.txt                   what is in it, sizes, versions, the commit
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="$repo/build"
out="$repo/.gpu-pack"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n 2,25p "$0"; exit 0 ;;
    *) echo "pack.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

stitchc="$build/stitchc"
stitch_run="$build/src/driver/run/stitch-run"
conformance="$build/tests/conformance/stitch_conformance"
for f in "$stitchc" "$stitch_run" "$conformance"; do
  [ -x "$f" ] || { echo "pack.sh: $f is missing: build first (scripts/build.sh)" >&2; exit 1; }
done
for a in libstitch_runtime_cuda.a libstitch_library_cuda.a libstitch_runtime_host.a libstitch_library_host.a; do
  [ -f "$build/runtime/$a" ] || { echo "pack.sh: $build/runtime/$a is missing" >&2; exit 1; }
done

rm -rf "$out"
mkdir -p "$out/libexec/runtime" "$out/lib" "$out/lib-fallback" "$out/bin" "$out/suite"
strip -o "$out/libexec/stitchc" "$stitchc"
strip -o "$out/libexec/stitch-run" "$stitch_run"
strip -o "$out/libexec/stitch_conformance" "$conformance"
for a in "$build"/runtime/*.a; do strip --strip-debug -o "$out/libexec/runtime/$(basename "$a")" "$a"; done

# The shared libraries: everything ldd resolves, except what every Linux machine with a C++
# toolchain has (the C library and the dynamic loader); libstdc++/libgcc_s as a fallback.
basics='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libresolv)'
for bin in "$stitchc" "$stitch_run" "$conformance"; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r soname path; do
  if [[ "$soname" =~ $basics ]]; then continue; fi
  if [[ "$soname" =~ ^(libstdc\+\+|libgcc_s) ]]; then
    cp -L "$path" "$out/lib-fallback/$soname"
  else
    cp -L "$path" "$out/lib/$soname"
  fi
done
strip --strip-unneeded "$out"/lib/*.so* "$out"/lib-fallback/*.so* 2>/dev/null || true

# The harness for stitchc's latency (no Python), built here against cudart.
cuda_home="${CUDA_HOME:-/usr/local/cuda}"
g++ -O2 -std=c++17 "$here/bench_model.cpp" -I"$repo/include" -I"$cuda_home/include" \
    -L"$cuda_home/lib64" -Wl,-rpath,"$cuda_home/lib64" -lcudart -ldl -o "$out/bin/bench_model"

# The allowlisted tests of the ONNX backend node suite that the allowlist was made with.
suite=""
for s in "$repo"/.venv/lib/python3*/site-packages/onnx/backend/test/data/node; do [ -d "$s" ] && suite="$s"; done
if [ -n "$suite" ]; then
  grep -v '^#' "$repo/tests/conformance/allowlist.txt" | awk 'NF {print $1}' > "$out/suite/allowlist-names.txt"
  tar czf "$out/suite/node.tar.gz" -C "$suite" -T "$out/suite/allowlist-names.txt"
  onnx_version="$("$repo/.venv/bin/python" -c 'import onnx; print(onnx.__version__)' 2>/dev/null || echo '?')"
else
  echo "pack.sh: no onnx backend node suite under .venv: the conformance stage will look for one on the GPU machine" >&2
  onnx_version="(not packed)"
fi

# Check: with only the pack's lib/ on the path, every library of the binaries resolves
# (into the pack or to the basics).
for bin in "$out"/libexec/stitchc "$out"/libexec/stitch-run "$out"/libexec/stitch_conformance; do
  missing="$(LD_LIBRARY_PATH="$out/lib" ldd "$bin" | grep 'not found' || true)"
  [ -z "$missing" ] || { echo "pack.sh: $bin: $missing" >&2; exit 1; }
done
"$out/libexec/stitchc" --help >/dev/null

{
  echo "stitchc GPU pack, made $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -n)"
  echo "commit: $(git -C "$repo" rev-parse HEAD 2>/dev/null || echo '?')$(git -C "$repo" diff --quiet HEAD -- src include 2>/dev/null || echo ' (src/ or include/ modified)')"
  echo "build: $build"
  echo "onnx backend node suite: onnx $onnx_version"
  echo "glibc here: $(ldd --version | head -1)"
  echo
  (cd "$out" && find . -type f -printf '%s\t%p\n' | sort -k2)
  echo
  echo "total: $(du -sb "$out" | cut -f1) bytes"
} > "$out/MANIFEST.txt"
echo "pack.sh: wrote $out ($(du -sh "$out" | cut -f1)); see $out/MANIFEST.txt"
