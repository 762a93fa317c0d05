#!/bin/bash
# backends-doc.sh — docs/backends.md's generated table agrees with `airlock check --json` in this
# mode, for every cell this machine can tell (scripts/gen-backends-doc.sh --check: availability
# is never compared; a backend not available here, or a layer no backend has here, is not
# judged), and the check really fails on a wrong cell.
. "$(dirname "$0")/../lib.sh"

: "${AL_SRC:?AL_SRC must name the source tree}"
gen=$AL_SRC/scripts/gen-backends-doc.sh
doc=$AL_SRC/docs/backends.md
[ -x "$gen" ] || al_fail "$gen is missing or not executable"

js="$AL_TEST_ROOT/check.$AL_TEST_MODE.json"
al_run check --json
al_assert_rc 0
printf '%s\n' "$AL_OUT" >"$js"

# The document as it is.
AL_RC=0
AL_ERR=$(bash "$gen" --check --json "$js" --doc "$doc" 2>&1) || AL_RC=$?
al_log "$AL_ERR"
[ "$AL_RC" = 0 ] || al_fail "docs/backends.md is out of date in mode $AL_TEST_MODE (run scripts/gen-backends-doc.sh): $AL_ERR"
decided=$(printf '%s\n' "$AL_ERR" | sed -n 's/.* \([0-9][0-9]*\) cells decided by this host.*/\1/p')
[ -n "$decided" ] || al_fail "gen-backends-doc.sh did not say how many cells it decided: $AL_ERR"
[ "$decided" -gt 0 ] || al_skip "no backend is available in mode $AL_TEST_MODE: this host can decide no cell of the table"
al_pass "docs/backends.md agrees with airlock check in mode $AL_TEST_MODE ($decided cells decided here)"

# Control: the same check fails on a copy with one decided cell flipped (the first backend
# available here, on the first layer it enforces here).
flip=$(AL_J=$js "$AL_PY" -c '
import json, os
bl = json.load(open(os.environ["AL_J"]))["backend_layers"]
for i, b in enumerate(["native", "bwrap", "gvisor", "oci"]):
    v = bl.get(b)
    if isinstance(v, dict) and v.get("available") is True:
        for k, x in v.items():
            if x is True and k != "available":
                print(i, k); raise SystemExit
')
[ -n "$flip" ] || al_fail "control: no cell to flip although $decided were decided"
read -r col layer <<<"$flip"
bad=$(al_tmpdir)
AL_COL=$col AL_LAYER=$layer "$AL_PY" - "$doc" "$bad/backends.md" <<'PY'
import os, sys
col, layer = int(os.environ["AL_COL"]), os.environ["AL_LAYER"]
lines = open(sys.argv[1]).read().split("\n")
for n, l in enumerate(lines):
    if l.startswith("|") and ("(`%s`) |" % layer) in l:
        cells = l.split("|")
        cells[2 + col] = " **no** " if cells[2 + col].strip() == "yes" else " yes "
        lines[n] = "|".join(cells)
        break
else:
    sys.exit("control: no row for %s" % layer)
open(sys.argv[2], "w").write("\n".join(lines))
PY
AL_RC=0
AL_ERR=$(bash "$gen" --check --json "$js" --doc "$bad/backends.md" 2>&1) || AL_RC=$?
al_assert_eq "$AL_RC" 1 "gen-backends-doc.sh --check on a copy with $layer flipped in column $col"
al_assert_contains "$AL_ERR" "out of date" "the control's message"
al_assert_contains "$AL_ERR" "(\`$layer\`)" "the control's diff"
