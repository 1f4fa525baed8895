#!/usr/bin/env bash
# clang-format over every C, C++ and CUDA source git tracks, with the root .clang-format.
#
#   scripts/format.sh           formats the files in place
#   scripts/format.sh --check   changes nothing; lists each file clang-format would change and
#                               exits 1 if there is one (a ctest, format/clang_format, runs this)
#
# Untracked files are included once added (git add): the list is `git ls-files`.
set -euo pipefail
cd "$(dirname "$0")/.."

formatter=$(command -v clang-format || command -v clang-format-14 || true)
if [ -z "$formatter" ]; then
  echo "format.sh: clang-format is not installed (Debian: apt-get install clang-format)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files -- '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' '*.cu' '*.cuh')

if [ "${1:-}" != --check ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 32 -P "$(nproc)" "$formatter" -i
  exit 0
fi
unformatted=()
for file in "${files[@]}"; do
  "$formatter" --dry-run --Werror "$file" >/dev/null 2>&1 || unformatted+=("$file")
done
if ((${#unformatted[@]})); then
  echo "format.sh: ${#unformatted[@]} file(s) differ from clang-format (run scripts/format.sh):"
  printf '  %s\n' "${unformatted[@]}"
  exit 1
fi
echo "format.sh: ${#files[@]} files formatted"
