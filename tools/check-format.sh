#!/usr/bin/env bash
# check-format.sh: fails when a tracked C, C++, CUDA or header file differs from what clang-format makes of it with the project's .clang-format.
# usage: tools/check-format.sh   (fix with: git ls-files '*.c' '*.h' '*.cu' '*.cpp' | xargs clang-format -i)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is not installed (apt-get install clang-format)" >&2; exit 2; }
if git ls-files -z '*.c' '*.h' '*.cu' '*.cpp' | xargs -0 clang-format --dry-run --Werror; then
  echo "check-format: $(git ls-files '*.c' '*.h' '*.cu' '*.cpp' | wc -l) files formatted as .clang-format says"
else
  echo "check-format: files above differ from .clang-format; run: git ls-files '*.c' '*.h' '*.cu' '*.cpp' | xargs clang-format -i" >&2
  exit 1
fi
