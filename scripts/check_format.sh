#!/usr/bin/env bash
# Checks that every C++/CUDA source of the repository is clang-format clean (.clang-format at the
# root): prints the files clang-format would change and exits 1 when there are any. `make format`
# (or `cmake --build build -t format`) rewrites them. Usage: scripts/check_format.sh [FILE...]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check_format: clang-format is not installed (apt-get install clang-format)"; exit 2; }
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | grep -v '^tests/data/')
fi
bad=0
for f in "${files[@]}"; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f"
    bad=$((bad + 1))
  fi
done
echo "check_format: $bad of ${#files[@]} files need clang-format"
[ "$bad" -eq 0 ]
