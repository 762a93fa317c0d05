#!/usr/bin/env bash
# pysuite.sh — CPython's own regression tests, module by module, bare and inside `airlock run` (issue 14).
#
# Not a test and not part of CI: a measurement of "the default posture runs what runs bare".
# Each module runs once bare (python3 -m test MODULE) and once inside airlock with the default
# posture (no flags but a longer --time and the airlock options in AIRLOCK_OPTS), and the script
# prints one line per module: the result bare, the result inside, and the tests that failed inside
# only. Needs Debian's libpython3.11-testsuite (apt-get install libpython3.11-testsuite).
#
# Usage: bench/pysuite.sh [MODULE...]     (default: the subset below)
# Environment: AIRLOCK (default build/airlock), AIRLOCK_OPTS (extra `airlock run` options, e.g.
# "--backend bwrap"), ONLY=bare|inside (run one side; the other column says "-"; ONLY=report runs
# nothing and prints the table from the outputs already in BENCH_RESULTS), TIMEOUT (per module and
# side, seconds, default 900), BENCH_RESULTS=DIR (keep each run's output there).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
find_airlock
py=${PYTHON:-/usr/bin/python3}
[[ -f /usr/lib/python3.11/test/regrtest.py || -f /usr/lib/python3.11/test/libregrtest/main.py ]] ||
	die "CPython's test suite is not installed (Debian: apt-get install libpython3.11-testsuite)"
modules=("$@")
[[ ${#modules[@]} -gt 0 ]] || modules=(test_asyncio test_socket test_selectors test_os test_subprocess test_signal
	test_mmap test_tempfile test_shutil test_multiprocessing_forkserver test_posix test_threading test_io
	test_fcntl test_resource test_time test_select test_socketserver test_pty test_getpass)
timeout=${TIMEOUT:-900}
out=${BENCH_RESULTS:-$(mktemp -d /tmp/pysuite.XXXXXX)}
mkdir -p "$out"
read -r -a opts <<<"${AIRLOCK_OPTS:-}"
# Bare runs as the sandbox's payload does (bench/lib.sh bare_user), with a home directory of its own.
bare_home=$(mktemp -d /tmp/pysuite-home.XXXXXX)
chmod 0777 "$bare_home"
bare_user "$bare_home"

# result FILE: SUCCESS, FAILURE, ENV_CHANGED, NO TESTS RAN... from regrtest's last "Tests result:" line.
result() {
	local r
	r=$(grep -a '^Tests result:' "$1" | tail -n 1 | sed 's/^Tests result: //') || true
	printf '%s\n' "${r:-CRASHED(rc $(cat "$1.rc"))}"
}

# ids FILE ERE: the test ids whose verdict matches ERE (regrtest -v lines "test_x (mod.Class.test_x)
# ... FAIL"), as Class.test_x.
ids() {
	{ grep -aE "^[A-Za-z_0-9]+ \([^)]*\) \.\.\. ($2)" "$1" || true; } | sed -E 's/^[A-Za-z_0-9]+ \(([^)]*)\).*/\1/' |
		sed -E 's/^.*\.([A-Za-z0-9_]+\.[A-Za-z0-9_]+)$/\1/' | LC_ALL=C sort -u
}
failed() { ids "$1" 'FAIL$|ERROR$'; }
skipped() { ids "$1" 'skipped'; }

run_one() { # SIDE MODULE
	local f="$out/$2.$1"
	local t0 t1
	t0=$(date +%s.%N)
	if [[ $1 == bare ]]; then
		(cd "$bare_home" && timeout -k 5 "$timeout" "${bare_as[@]}" env -i "${bare_env[@]}" "$py" -m test -v "$2") \
			>"$f" 2>&1 && echo 0 >"$f.rc" || echo $? >"$f.rc"
	else
		timeout -k 5 "$((timeout + 30))" "$airlock" run --time "${timeout}s" "${opts[@]}" -- \
			"$py" -m test -v "$2" >"$f" 2>&1 && echo 0 >"$f.rc" || echo $? >"$f.rc"
	fi
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f\n", b - a }' >"$f.secs"
}

printf '# %s, airlock %s %s, %s, python %s\n' "$(date -u '+%F %H:%M UTC')" "$airlock" "${opts[*]}" \
	"$(id -un)" "$("$py" -c 'import sys; print(sys.version.split()[0])')"
printf '%-32s %-22s %-22s %s\n' module "bare (skipped)" "inside (skipped)" "failed (F) or skipped (S) inside only"
for m in "${modules[@]}"; do
	for side in bare inside; do
		[[ -n ${ONLY:-} && $ONLY != "$side" ]] || run_one "$side" "$m"
	done
	b=-
	i=-
	[[ ! -f "$out/$m.bare.rc" ]] ||
		b="$(result "$out/$m.bare") $(cat "$out/$m.bare.secs")s ($(skipped "$out/$m.bare" | wc -l))"
	[[ ! -f "$out/$m.inside.rc" ]] ||
		i="$(result "$out/$m.inside") $(cat "$out/$m.inside.secs")s ($(skipped "$out/$m.inside" | wc -l))"
	only=""
	if [[ -f "$out/$m.bare.rc" && -f "$out/$m.inside.rc" ]]; then
		only=$({ LC_ALL=C comm -13 <(failed "$out/$m.bare") <(failed "$out/$m.inside") | sed 's/^/F:/'
			LC_ALL=C comm -13 <(skipped "$out/$m.bare") <(skipped "$out/$m.inside") | sed 's/^/S:/'; } | tr '\n' ' ')
	fi
	printf '%-32s %-22s %-22s %s\n' "$m" "$b" "$i" "$only"
done
echo "# outputs in $out"
