#!/usr/bin/env bash
# fuzz/run.sh: builds the libFuzzer harnesses if needed and runs each for a while on a copy of its seed corpus.
#
#   fuzz/run.sh BUILD_DIR SECONDS
#
# The fuzzers run at the same time, each SECONDS seconds on a temporary copy of fuzz/corpus/NAME
# (the corpus in the repository is never modified), with -max_len=4096,
# -timeout=10 and the dictionary fuzz/NAME.dict. Prints per fuzzer the
# executions and whether it crashed. Any crash, leak, UBSan report, failed
# harness check, timeout or out-of-memory is saved under
# BUILD_DIR/fuzz-artifacts/FUZZER/ (reproducer and log) and makes the script
# exit 1; exit 2 is bad usage or a failed build. If BUILD_DIR holds no
# fuzzers, they are configured and built there first:
#   CC=clang CXX=clang++ cmake -S . -B BUILD_DIR -DPRSTM_BUILD_FUZZERS=ON -DPRSTM_WITH_CUDA=OFF -DPRSTM_BUILD_TESTS=OFF
# (or, where the top level does not add fuzz/ yet, fuzz/ on its own in
# BUILD_DIR/fuzz-standalone). PRSTM_FUZZ_NO_LINE_CHECK=1 turns off
# fuzz_jsonl's check of the reported line number.
# Needs clang and the libFuzzer runtime (Debian 12: clang libclang-rt-14-dev),
# cmake and libcjson-dev; with libsimdjson-dev the JSON Lines fast path is
# fuzzed too.
set -uo pipefail

usage() { echo "usage: fuzz/run.sh BUILD_DIR SECONDS" >&2; exit 2; }
[ $# -eq 2 ] || usage
case "$2" in '' | *[!0-9]*) usage ;; esac
[ "$2" -ge 1 ] || usage
SECONDS_EACH=$2
mkdir -p "$1" || exit 2
BUILD_DIR=$(cd "$1" && pwd) || exit 2
ROOT=$(cd "$(dirname "$0")/.." && pwd) || exit 2
cd "$ROOT" || exit 2

FUZZERS=(fuzz_config fuzz_jsonl fuzz_npy)
declare -A CORPUS=([fuzz_config]=config [fuzz_jsonl]=jsonl [fuzz_npy]=npy)
JOBS=$(nproc 2>/dev/null || echo 2)

# Where a build put the fuzzers: BUILD_DIR/fuzz (top-level build),
# BUILD_DIR itself (fuzz/ configured on its own) or BUILD_DIR/fuzz-standalone.
find_bin_dir() {
  local d
  for d in "$BUILD_DIR/fuzz" "$BUILD_DIR" "$BUILD_DIR/fuzz-standalone"; do
    [ -x "$d/${FUZZERS[0]}" ] && { echo "$d"; return 0; }
  done
  return 1
}

build() {
  local dir=$1
  cmake --build "$dir" -j "$JOBS" --target "${FUZZERS[@]}"
}

if BIN_DIR=$(find_bin_dir); then
  # Already built: an incremental build keeps the binaries current.
  tree=$BIN_DIR
  [ "$BIN_DIR" = "$BUILD_DIR/fuzz" ] && tree=$BUILD_DIR
  build "$tree" >/dev/null || { echo "fuzz/run.sh: build failed in $tree" >&2; exit 2; }
else
  echo "fuzz/run.sh: configuring the fuzzers in $BUILD_DIR"
  if CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -DPRSTM_BUILD_FUZZERS=ON -DPRSTM_WITH_CUDA=OFF \
      -DPRSTM_BUILD_TESTS=OFF && build "$BUILD_DIR" && [ -x "$BUILD_DIR/fuzz/${FUZZERS[0]}" ]; then
    :
  else
    # A top level that does not add fuzz/ yet: configure fuzz/ on its own.
    echo "fuzz/run.sh: the top-level build has no fuzzers; configuring fuzz/ on its own" >&2
    if ! { CC=clang CXX=clang++ cmake -S fuzz -B "$BUILD_DIR/fuzz-standalone" &&
      build "$BUILD_DIR/fuzz-standalone"; }; then
      echo "fuzz/run.sh: could not build the fuzzers (needs clang libclang-rt-14-dev libcjson-dev)" >&2
      exit 2
    fi
  fi
  BIN_DIR=$(find_bin_dir) || { echo "fuzz/run.sh: no fuzzers in $BUILD_DIR after the build" >&2; exit 2; }
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/prstm-fuzz.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# One fuzzer's run and its verdict, written to WORK/NAME.result; exit 1 when
# it found something.
fuzz_one() {
  local f=$1
  local corpus="$WORK/corpus-$f" artifacts="$BUILD_DIR/fuzz-artifacts/$f" log="$WORK/$f.log"
  local out="$WORK/$f.result"
  mkdir -p "$corpus" "$artifacts"
  cp -R "fuzz/corpus/${CORPUS[$f]}/." "$corpus/"
  # Artifacts of an earlier run would be taken for this run's findings.
  rm -f "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* "$artifacts"/oom-* \
    "$artifacts"/slow-unit-* "$artifacts"/*.log
  local dict=()
  [ -f "fuzz/${CORPUS[$f]}.dict" ] && dict=(-dict="fuzz/${CORPUS[$f]}.dict")
  "$BIN_DIR/$f" -max_len=4096 -timeout=10 -max_total_time="$SECONDS_EACH" -print_final_stats=1 \
    "${dict[@]}" -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1
  local rc=$?
  local execs found kind a
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
  [ -n "$execs" ] || execs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
  [ -n "$execs" ] || execs=0
  found=$(find "$artifacts" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' \
    -o -name 'timeout-*' -o -name 'oom-*' \) -printf '%f\n' | sort)
  if [ $rc -eq 0 ] && [ -z "$found" ] && [ "$execs" -gt 0 ]; then
    printf '%s: %s executions, no crash\n' "$f" "$execs" >"$out"
    return 0
  fi
  {
    kind=$(grep -m1 -oE 'ERROR: [A-Za-z]+: .*|runtime error:.*|fuzz check failed.*' "$log")
    # A failed harness check explains itself on the next line.
    case "$kind" in "fuzz check failed"*) kind="$kind;$(grep -m1 -A1 'fuzz check failed' "$log" | tail -n 1)" ;; esac
    printf '%s: %s executions, CRASH (exit %d): %s\n' "$f" "$execs" "$rc" "${kind:-see log}"
    for a in $found; do printf '  reproducer: %s/%s\n' "$artifacts" "$a"; done
    cp "$log" "$artifacts/$f.log"
    printf '  log: %s/%s.log\n' "$artifacts" "$f"
    grep -m1 -B1 -A14 -E 'ERROR: |runtime error:|fuzz check failed' "$log" | sed 's/^/  | /'
  } >"$out"
  return 1
}

# The fuzzers run side by side: each is one process, and SECONDS is wall
# time, so a run takes SECONDS whatever the number of fuzzers.
pids=()
for f in "${FUZZERS[@]}"; do
  fuzz_one "$f" &
  pids+=($!)
done
failed=0
for i in "${!FUZZERS[@]}"; do
  wait "${pids[$i]}" || failed=1
  cat "$WORK/${FUZZERS[$i]}.result"
done
exit $failed
