#!/usr/bin/env bash
# check-tutorial.sh: fails unless the code that docs/TUTORIAL.md shows is the code of the repository, byte for byte, so that the builds and tests of examples/seats test the tutorial.
#
# Usage: tools/check-tutorial.sh [MARKDOWN]   (default: docs/TUTORIAL.md)
#
# A code block names its source on the line just before its opening fence:
#   <!-- file: examples/seats/seats.c -->     the block is that whole file
#   <!-- excerpt: workloads/bank/bank.c -->   the block's lines appear in that
#                                             file, one after another
# It guarantees that
#   - every named file exists and equals its block (excerpt: contains it);
#   - every ```c block names its source, so no C shown goes untested;
#   - every file git tracks under examples/seats is shown whole, so the
#     tutorial alone holds everything a reader needs to build the workload.
# The files of examples/seats are built and run by prstm's build and its
# tests (tests/test_plugin.c, and ctest's seats_config_from_another_folder)
# and, as a project of its own against the installed package, by
# tools/check-install.sh. Exits 1 naming each difference, with a diff.
set -euo pipefail
cd "$(dirname "$0")/.."
doc=${1:-docs/TUTORIAL.md}
whole_folder=examples/seats

if [ ! -f "$doc" ]; then
  echo "check-tutorial: no file $doc" >&2
  exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/prstm-check-tutorial.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Splits the tutorial into its blocks: block N's text goes to $work/N, and
# one line "N KIND PATH LINE" to $work/index (KIND: file, excerpt, or none;
# PATH "-" when none; LINE the fence's line in the tutorial). A tag that no
# fence follows is reported as KIND "orphan".
awk -v dir="$work" '
  BEGIN { printf "" > (dir "/index") }
  function flush_tag() {
    if (tag_kind != "") printf "0 orphan %s %d\n", tag_path, tag_line > (dir "/index")
    tag_kind = ""
  }
  in_block {
    if ($0 == fence) { in_block = 0; close(out); next }
    print > out
    next
  }
  match($0, /^<!-- (file|excerpt): [^ ]+ -->$/) {
    flush_tag()
    split($0, f, " ")
    tag_kind = substr(f[2], 1, length(f[2]) - 1)
    tag_path = f[3]
    tag_line = NR
    next
  }
  match($0, /^```+/) {
    fence = substr($0, 1, RLENGTH)
    lang = substr($0, RLENGTH + 1)
    n++
    out = dir "/" n
    printf "" > out
    kind = tag_kind != "" ? tag_kind : "none"
    path = tag_kind != "" ? tag_path : "-"
    printf "%d %s %s %d %s\n", n, kind, path, NR, lang > (dir "/index")
    tag_kind = ""
    in_block = 1
    next
  }
  { flush_tag() }
  END {
    flush_tag()
    if (in_block) printf "0 unclosed - %d\n", NR > (dir "/index")
  }
' "$doc"

errors=0
report() {
  echo "check-tutorial: $doc:$*" >&2
  errors=$((errors + 1))
}

declare -A shown_whole=()
nblocks=0
while read -r n kind path line lang; do
  case $kind in
    orphan)
      report "$line: '<!-- ...: $path -->' is not followed by a code block"
      continue
      ;;
    unclosed)
      report "$line: a code block is never closed"
      continue
      ;;
  esac
  nblocks=$((nblocks + 1))
  if [ "$kind" = none ]; then
    if [ "${lang:-}" = c ]; then
      report "$line: a C block names no source (put '<!-- file: PATH -->' or '<!-- excerpt: PATH -->' before it)"
    fi
    continue
  fi
  if [ ! -f "$path" ]; then
    report "$line: $kind: $path: no such file in the repository"
    continue
  fi
  if [ "$kind" = file ]; then
    shown_whole[$path]=1
    if ! cmp -s "$path" "$work/$n"; then
      report "$line: the block differs from $path (- the file, + the tutorial):"
      diff -u --label "$path" --label "$doc:$line" "$path" "$work/$n" | sed 's/^/  | /' >&2 || true
    fi
  else
    # Whole lines of the file, one after another.
    block=$(cat "$work/$n")
    text=$(cat "$path")
    if [ -z "$block" ] || [[ $'\n'"$text"$'\n' != *$'\n'"$block"$'\n'* ]]; then
      report "$line: the block is not a run of whole lines of $path:"
      sed 's/^/  | /' "$work/$n" >&2
    fi
  fi
done <"$work/index"

while IFS= read -r f; do
  [ -n "${shown_whole[$f]:-}" ] || report " $f is not shown whole ('<!-- file: $f -->' and the file in a code block)"
done < <(git ls-files "$whole_folder")

if ((errors)); then
  echo "check-tutorial: $errors problem(s) in $doc; the tutorial must show the files as they are" >&2
  exit 1
fi
echo "check-tutorial: $doc: ${#shown_whole[@]} files shown whole and every excerpt found, in $nblocks code blocks"
