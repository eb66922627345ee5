#!/usr/bin/env bash
# npy_interop.sh: docs/BATCHES.md's numpy snippet, run as written, makes a batch prstm-run runs verified; a batch prstm-run saves reads back in numpy with the same values.
# usage: tests/npy_interop.sh PRSTM_RUN SOURCE_DIR
set -euo pipefail
run=$1
src=$2
python=${PRSTM_PYTHON:-/usr/bin/python3}
if ! "$python" -c "import numpy" 2>/dev/null; then
  echo "npy_interop: $python has no numpy (Debian: apt-get install python3-numpy; tools/setup.sh installs it)" >&2
  exit 1
fi
work=$(mktemp -d /tmp/prstm_npy_interop_XXXXXX)
trap 'rm -rf "$work"' EXIT
# The first python block after the snippet marker, exactly as the docs show it.
awk '/<!-- snippet: npy-write -->/ {found = 1; next}
     found && /^```python/ {inside = 1; next}
     inside && /^```/ {exit}
     inside {print}' "$src/docs/BATCHES.md" > "$work/snippet.py"
[ -s "$work/snippet.py" ] || { echo "npy_interop: no snippet in docs/BATCHES.md" >&2; exit 1; }
cd "$work"
"$python" snippet.py
out=$("$run" "$src/configs/bank.json" --batch transfers --backend cpu --verify)
echo "$out" | grep -E "^  (transactions|committed|verify) "
echo "$out" | grep -qE "^  transactions +1000$" || { echo "npy_interop: not 1000 transactions" >&2; exit 1; }
echo "$out" | grep -qE "^  verify +ok" || { echo "npy_interop: not verified" >&2; exit 1; }
# prstm's own folder, read by numpy: the same values, and the types by the
# workload's names.
"$run" "$src/configs/bank.json" --batch transfers --save-batch saved --quiet
"$python" - <<'PY'
import json
import numpy as np
m = json.load(open("saved/batch.json"))
assert m["rows"] == 1000 and m["columns"] == 3, m
t = np.load("saved/type.npy")
assert t.dtype == np.uint8 and (t == m["types"].index("transfer")).all(), t
for c in range(3):
    a, b = np.load(f"transfers/arg{c}.npy"), np.load(f"saved/arg{c}.npy")
    assert a.shape == b.shape and (a == b).all(), c
    assert b.dtype.kind == "u" and b.dtype.itemsize == 1, b.dtype  # values below 256: one byte
print("npy_interop: numpy reads prstm's folder back: types and 3 columns equal")
PY
