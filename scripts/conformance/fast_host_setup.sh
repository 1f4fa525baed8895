#!/usr/bin/env bash
# Prepares the survey's fast host compiles (survey.sh --fast), a prototype of the two changes
# that would make every host-target compile of stitchc ~6x cheaper (about 0.7 s of CPU per
# small model instead of 4.5 s):
#   1. the host launch machinery (check_launch, run_ordinary, run_cooperative, run_launch:
#      the whole fiber scheduler, worker pool and stall report) compiled once, into
#      DIR/host_launch.o, instead of inline in every model's translation unit;
#   2. a precompiled header of stitch_generated.h (DIR/pch/stitch_generated.h.gch).
# fast_host_cxx.sh then hands both to the compile and the link stitchc runs. Nothing in the
# tree changes: DIR/pch is a copy of src/runtime with launch.h split in two. When launch.h no
# longer has the markers this split looks for, only the precompiled header is used.
#
# usage: scripts/conformance/fast_host_setup.sh DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$1
cxx=${STITCH_REAL_CXX:-g++}
rm -rf "$dir"
mkdir -p "$dir"
cp -r src/runtime "$dir/pch"
flags=(-std=c++20 -O2 -fPIC -fvisibility=hidden -DSTITCH_HOST_TARGET)

split=$(python3 - "$dir/pch/host/launch.h" <<'EOF'
import sys
path = sys.argv[1]
text = open(path).read()
begin = text.find("// The launch's geometry, or the error CUDA would return for it.")
end = text.find("// Binds the arguments")
if begin < 0 or end < begin or "inline cudaError_t run_launch(" not in text[begin:end]:
    print("no")
    sys.exit(0)
declaration = ("// Defined in launch_impl.h, compiled once (fast_host_setup.sh).\n"
               "cudaError_t run_launch(const LaunchRequest& request, KernelInvoker kernel);\n\n")
open(path, "w").write(text[:begin] + declaration + text[end:])
body = text[begin:end].replace("inline cudaError_t run_launch(", "cudaError_t run_launch(")
open(path.replace("launch.h", "launch_impl.h"), "w").write(
    "#pragma once\n#include \"launch.h\"\nnamespace stitch::host {\n" + body + "}\n")
print("yes")
EOF
)
if [[ $split == yes ]]; then
  printf '#include "stitch_cuda.h"\n#include "host/launch_impl.h"\n' >"$dir/host_launch.cpp"
  "$cxx" "${flags[@]}" -I"$dir/pch" -c "$dir/host_launch.cpp" -o "$dir/host_launch.o"
  echo "fast host compiles: launch machinery compiled once, and a precompiled header"
else
  cp -r src/runtime/host/launch.h "$dir/pch/host/launch.h"
  echo "fast host compiles: launch.h changed shape, using the precompiled header only"
fi
"$cxx" "${flags[@]}" -I"$dir/pch" -x c++-header "$dir/pch/stitch_generated.h" \
  -o "$dir/pch/stitch_generated.h.gch" 2>/dev/null
