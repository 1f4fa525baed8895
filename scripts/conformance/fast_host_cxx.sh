#!/usr/bin/env bash
# The C++ compiler stitchc runs (its CXX) during `survey.sh --fast`: the same g++ command,
# plus what fast_host_setup.sh prepared in $STITCH_FAST_HOST_DIR. The host target's one
# compile gets the precompiled runtime header (found first on the include path, so every
# generated file includes that same copy); its link gets the launch machinery compiled once.
# Every other command runs unchanged.
set -euo pipefail
cxx=${STITCH_REAL_CXX:-g++}
dir=${STITCH_FAST_HOST_DIR:?set by survey.sh --fast}
args=" $* "
if [[ $args == *" -DSTITCH_HOST_TARGET "* && $args == *" unity_host.cpp "* ]]; then
  exec "$cxx" -I"$dir/pch" -include stitch_generated.h "$@"
fi
if [[ $args == *" -shared "* && $args == *" unity_host.o "* && -f $dir/host_launch.o ]]; then
  linked=()
  for arg in "$@"; do
    linked+=("$arg")
    [[ $arg == unity_host.o ]] && linked+=("$dir/host_launch.o") # before the libraries
  done
  exec "$cxx" "${linked[@]}"
fi
exec "$cxx" "$@"
