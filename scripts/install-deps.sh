#!/usr/bin/env bash
# Installs everything stitchc needs to build and test: Debian packages (compiler, CMake, the
# libraries stitchc links) and, in a project-local virtual environment (.venv), the Python
# packages the tests use (requirements.txt). Idempotent, non-interactive, fine as root.
# CUDA 13 (nvcc, cudart, cuBLASLt, cuDNN) is expected under /usr/local/cuda.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config python3 python3-venv
          libonnx-dev libprotobuf-dev protobuf-compiler libglpk-dev libcli11-dev libfmt-dev
          nlohmann-json3-dev catch2 libboost-context-dev libgraphviz-dev graphviz chromium
          clang-14 libclang-rt-14-dev # clang and libFuzzer: scripts/fuzz.sh
          clang-format)                # scripts/format.sh and its ctest

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install-deps: installing ${missing[*]}"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python for tests and scripts only, pinned in requirements.txt.
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "install-deps: creating .venv from requirements.txt"
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
  echo "$want" > "$stamp"
fi

if [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: warning: /usr/local/cuda/bin/nvcc not found; the CUDA target cannot be built" >&2
fi
