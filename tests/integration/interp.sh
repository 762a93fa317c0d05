#!/bin/bash
# interp.sh — the usual interpreters (Python with numpy, Node, bash, Perl) work inside as outside.
. "$(dirname "$0")/../lib.sh"

# same_output NAME HOST-CMD -- SANDBOX-CMD: both exit 0 with identical, non-empty stdout.
same_output() {
	local what=$1 expected rc=0 host=()
	shift
	while [ "$1" != -- ]; do
		host+=("$1")
		shift
	done
	shift
	expected=$(cd "$AL_TEST_ROOT" && "${host[@]}" 2>/dev/null) || rc=$?
	[ "$rc" = 0 ] && [ -n "$expected" ] || al_fail "control: '$what' does not work on the host (rc $rc)"
	al_run run "$@"
	al_assert_rc 0
	al_assert_eq "$AL_OUT" "$expected" "$what output inside"
}

py='import sys, json, hashlib; print(sys.version_info[:2], json.dumps({"a": [1, 2.5, None]}), hashlib.sha256(b"x").hexdigest()[:16], sum(range(10**5)))'
same_output "python3 -c" /usr/bin/python3 -c "$py" -- /usr/bin/python3 -c "$py"

np='import numpy; print(numpy.arange(6).reshape(2,3) @ numpy.ones(3))'
same_output "numpy" /usr/bin/python3 -c "$np" -- /usr/bin/python3 -c "$np"

js='console.log(process.version, JSON.stringify([1, 2, 3].map(x => x * 2)), require("crypto").createHash("sha256").update("x").digest("hex").slice(0, 16))'
same_output "node -e" /usr/bin/node -e "$js" -- node -e "$js"

sh='echo $((6 * 7)); printf "%s\n" "${BASH_VERSINFO[0]}" a b | sort; for i in 1 2 3; do echo "n$i"; done | tr "\n" " "'
same_output "bash -c" /bin/bash -c "$sh" -- bash -c "$sh"

pl='use strict; use List::Util qw(sum); print join(",", map { $_ * 2 } 1 .. 5), " ", sum(1 .. 100), "\n"'
same_output "perl -e" /usr/bin/perl -e "$pl" -- perl -e "$pl"

# A script file handed in through a --ro bind.
src=$(al_tmpdir 0755)
cat >"$src/job.py" <<'PY'
import os, sys
print("argv", sys.argv[1:])
print("cwd", os.getcwd() == os.environ.get("HOME"))
print(sorted(x * x for x in range(7)))
PY
chmod 0644 "$src/job.py"
expected='argv ['"'"'one'"'"', '"'"'two'"'"']
cwd True
[0, 1, 4, 9, 16, 25, 36]'
al_run run --ro "$src:/src" -- /usr/bin/python3 /src/job.py one two
al_assert_rc 0
al_assert_eq "$AL_OUT" "$expected" "python3 script from a --ro bind"
host_out=$(cd "$src" && HOME="$src" /usr/bin/python3 "$src/job.py" one two)
al_assert_eq "$AL_OUT" "$host_out" "the same script on the host"
