#!/usr/bin/env bash
# bundle.sh: copies prstm's programs, test programs and plugins from a build, with the shared libraries they load, into one folder that runs on another machine of the same architecture (a GPU machine without the build tools).
# usage: tools/bundle.sh OUTDIR [BUILD_DIR]
# OUTDIR/bin holds the programs and plugins, OUTDIR/lib their libraries
# (all but the C library and the GPU driver, which the other machine has),
# and `OUTDIR/run PROGRAM [ARGS...]` runs one with OUTDIR/lib on its
# library path. tools/gpu-check.sh and tools/gpu-ab.sh take such a folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: tools/bundle.sh OUTDIR [BUILD_DIR]}
build=${2:-$root/build}
[ -x "$build/prstm-run" ] || { echo "bundle: no prstm-run in $build: build first (tools/setup.sh)" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
programs=("$build/prstm-run" "$build/prstm-verify-sweep" "$build/prstm-stream-bench")
for p in "$build/bench/prstm-bench" "$build/bench/setup-probe" "$build/examples/seats/seats" "$build"/tests/test_*; do
  [ -x "$p" ] && [ -f "$p" ] && programs+=("$p")
done
plugins=("$build"/tests/*.so "$build"/examples/seats/*.so)
# The loader, the C library and the GPU driver belong to the machine that
# runs the bundle; everything else comes along.
keep_out='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|libresolv\.so|libcuda\.so)'
for p in "${programs[@]}" "${plugins[@]}"; do
  [ -e "$p" ] || continue
  cp -f "$p" "$out/bin/"
  ldd "$p" | awk '/=>/ && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $keep_out ]] && continue
    cp -fL "$path" "$out/lib/$name"
  done
done
cat >"$out/run" <<'RUN'
#!/usr/bin/env bash
# run: runs a bundled program with the bundle's libraries: run PROGRAM [ARGS...]
here=$(cd "$(dirname "$0")" && pwd)
prog=$1
shift
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$here/bin/$(basename "$prog")" "$@"
RUN
chmod +x "$out/run"
echo "bundle: $(ls "$out/bin" | wc -l) programs and plugins, $(du -sh "$out" | cut -f1) in $out"
