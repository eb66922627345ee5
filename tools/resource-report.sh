#!/usr/bin/env bash
# resource-report.sh: the compiler's resource report (registers, stack frame, spills) of every GPU kernel, as a table; needs nvcc, no GPU.
# Usage: tools/resource-report.sh [ARCH]   (default 90). Compiles each workload's .cu file and the
# ceiling kernel with the library's own flags plus -Xptxas -v, into a scratch folder, and prints one
# row per kernel entry. Stack frame bytes are thread-local memory (the fixed-capacity read, write and
# lock sets live there when they hold more than PRSTM_POLICY_SHARED_SET_MAX entries; smaller ones are in
# shared memory); spill bytes are what ptxas moved out of registers.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
arch=${1:-90}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || { echo "resource-report: nvcc not found (set NVCC)" >&2; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
incs=(-I"$root/include/prstm" -I"$root/engine" -I"$root/engine/stm" -I"$root/cmp" -I"$root/txtable" -I"$root/loaders")
for dir in "$root"/workloads/*/; do incs+=(-I"$dir"); done
printf '%-44s %5s %7s %12s %11s\n' kernel regs "stack B" "spill st. B" "spill ld. B"
for src in "$root"/workloads/*/*_gpu.cu "$root/bench/ceiling.cu"; do
  log="$scratch/$(basename "$src").log"
  if ! "$nvcc" -DPRSTM_HAVE_CUDA=1 -O3 -DNDEBUG -arch=sm_"$arch" -Xptxas -v "${incs[@]}" -x cu -c "$src" \
      -o "$scratch/$(basename "$src").o" >"$log" 2>&1; then
    echo "resource-report: $src did not compile:" >&2
    cat "$log" >&2
    exit 1
  fi
  # ptxas prints, per entry: "Compiling entry function 'NAME'", then the stack frame and spill line,
  # then "Used N registers". Only __global__ entries are kept.
  awk -v src="$(basename "$src")" '
    /Compiling entry function/ { match($0, /\x27[^\x27]+\x27/); name = substr($0, RSTART + 1, RLENGTH - 2); next }
    /Function properties for/ { fn = $NF; next }
    /bytes stack frame/ && name != "" && fn == name { stack = $1; sst = $5; sld = $9; next }
    /Used [0-9]+ registers/ && name != "" {
      match($0, /Used [0-9]+ registers/); regs = substr($0, RSTART + 5, RLENGTH - 15)
      printf "%-44s %5s %7s %12s %11s\n", substr(name, 1, 44), regs, stack, sst, sld
      name = ""; stack = sst = sld = "?"
    }' "$log"
done
