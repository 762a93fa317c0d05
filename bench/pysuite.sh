#!/usr/bin/env bash
# pysuite.sh — CPython's own regression tests, module by module, bare and inside `airlock run` (issue 14).
#
# Not a test and not part of CI: a measurement of "the default posture runs what runs bare".
# Each module runs once bare (python3 -m test MODULE) and once inside airlock with the default
# posture (no flags but a longer --time and the airlock options in AIRLOCK_OPTS), and the script
# prints one line per module: the result bare, the result inside, and the tests that failed inside
# only (or were skipped there only, or were running when the module died inside). Needs Debian's
# libpython3.11-testsuite (apt-get install libpython3.11-testsuite).
#
# Usage: bench/pysuite.sh [--all | MODULE...]     (default: the subset below)
# --all (or ALL=1): every module of the suite, as `python3 -m test --list-tests` lists them (a test
# package such as test_asyncio counts as one module).
# Environment: AIRLOCK (default build/airlock), AIRLOCK_OPTS (extra `airlock run` options, e.g.
# "--backend bwrap"), ONLY=bare|inside (run one side; the other column says "-"; ONLY=report runs
# nothing and prints the table from the outputs already in BENCH_RESULTS), TIMEOUT (per module and
# side, seconds, default 900), BENCH_RESULTS=DIR (keep each run's output there), JOBS=N (run N
# modules at once, default 1; each side of a module is still one process tree of its own, and the
# rows then come in the order modules finish), REGRTEST_OPTS (more regrtest options for both sides,
# e.g. "-u cpu,decimal": the resources regrtest leaves off by default). A summary of the module
# counts ends the table.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
find_airlock
py=${PYTHON:-/usr/bin/python3}
[[ -f /usr/lib/python3.11/test/regrtest.py || -f /usr/lib/python3.11/test/libregrtest/main.py ]] ||
	die "CPython's test suite is not installed (Debian: apt-get install libpython3.11-testsuite)"
modules=("$@")
if [[ ${1:-} == --all ]]; then
	[[ $# == 1 ]] || die "--all takes no module names"
	ALL=1
fi
if [[ ${ALL:-} == 1 ]]; then
	mapfile -t modules < <("$py" -m test --list-tests | sed -E 's/^test\.//; s/\..*//' | awk '!seen[$0]++')
	[[ ${#modules[@]} -gt 0 ]] || die "python3 -m test --list-tests listed no module"
fi
jobs=${JOBS:-1}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "JOBS must be a positive whole number, not '$jobs'"
[[ ${#modules[@]} -gt 0 ]] || modules=(test_asyncio test_socket test_selectors test_os test_subprocess test_signal
	test_mmap test_tempfile test_shutil test_multiprocessing_forkserver test_posix test_threading test_io
	test_fcntl test_resource test_time test_select test_socketserver test_pty test_getpass)
timeout=${TIMEOUT:-900}
out=${BENCH_RESULTS:-$(mktemp -d /tmp/pysuite.XXXXXX)}
mkdir -p "$out"
read -r -a opts <<<"${AIRLOCK_OPTS:-}"
read -r -a regrtest_opts <<<"${REGRTEST_OPTS:-}"
# A bad option would fail every module on both sides: refuse it once, with regrtest's own message.
"$py" -m test "${regrtest_opts[@]}" --list-tests >/dev/null 2>"$out/regrtest-opts.err" ||
	die "regrtest refuses REGRTEST_OPTS='${REGRTEST_OPTS:-}': $(grep -a 'error:' "$out/regrtest-opts.err" | head -n 1)"
# Bare runs as the sandbox's payload does (bench/lib.sh bare_user), with a home directory of its own.
bare_home=$(mktemp -d /tmp/pysuite-home.XXXXXX)
# shellcheck disable=SC2064 # bare_home is fixed now
trap "rm -rf '$bare_home'" EXIT
chmod 0777 "$bare_home"
bare_user "$bare_home"

# result FILE: SUCCESS, FAILURE, ENV_CHANGED, NO TESTS RAN... from regrtest's last "Result:" line
# ("Tests result:" before 3.11.7), or SKIPPED when the whole module skipped itself (a missing module,
# a resource not enabled: regrtest counts those as a success).
result() {
	local r
	r=$(grep -aE '^(Tests )?[Rr]esult: ' "$1" | tail -n 1 | sed -E 's/^(Tests )?[Rr]esult: //') || true
	[[ $r != SUCCESS ]] || ! grep -aqE '^1 test skipped' "$1" || r=SKIPPED
	printf '%s\n' "${r:-CRASHED(rc $(cat "$1.rc"))}"
}

# ids FILE ERE: the test ids whose verdict matches ERE (regrtest -v lines "test_x (mod.Class.test_x)
# ... FAIL"), as Class.test_x.
ids() {
	{ grep -aE "^[A-Za-z_0-9]+ \([^)]*\) \.\.\. ($2)" "$1" || true; } | sed -E 's/^[A-Za-z_0-9]+ \(([^)]*)\).*/\1/' |
		sed -E 's/^.*\.([A-Za-z0-9_]+\.[A-Za-z0-9_]+)$/\1/' | LC_ALL=C sort -u
}
# failed FILE: the tests unittest's report names (FAIL: or ERROR: lines, sub-tests included), or whose
# -v line ends in FAIL or ERROR (a module that dies before its report).
failed() {
	{
		ids "$1" 'FAIL$|ERROR$'
		{ grep -aE '^(FAIL|ERROR): [A-Za-z_0-9]+ \([^)]*\)' "$1" || true; } |
			sed -E 's/^[A-Z]+: [A-Za-z_0-9]+ \(([^)]*)\).*/\1/; s/^.*\.([A-Za-z0-9_]+\.[A-Za-z0-9_]+)$/\1/'
	} | LC_ALL=C sort -u
}
skipped() { ids "$1" 'skipped'; }
# died FILE: the test that was running when the module's process died (its -v line has no verdict).
died() {
	{ grep -aE "^[A-Za-z_0-9]+ \([^)]*\) \.\.\. " "$1" || true; } | tail -n 1 |
		grep -avE '\.\.\. (ok|FAIL|ERROR|skipped|expected failure|unexpected success)' |
		sed -E 's/^[A-Za-z_0-9]+ \(([^)]*)\).*/\1/; s/^.*\.([A-Za-z0-9_]+\.[A-Za-z0-9_]+)$/\1/' || true
}

run_one() { # SIDE MODULE
	local f="$out/$2.$1"
	local t0 t1
	t0=$(date +%s.%N)
	if [[ $1 == bare ]]; then
		(cd "$bare_home" && timeout -k 5 "$timeout" "${bare_as[@]}" env -i "${bare_env[@]}" "$py" -m test -v "${regrtest_opts[@]}" "$2") \
			>"$f" 2>&1 && echo 0 >"$f.rc" || echo $? >"$f.rc"
	else
		timeout -k 5 "$((timeout + 30))" "$airlock" run --time "${timeout}s" "${opts[@]}" -- \
			"$py" -m test -v "${regrtest_opts[@]}" "$2" >"$f" 2>&1 && echo 0 >"$f.rc" || echo $? >"$f.rc"
	fi
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f\n", b - a }' >"$f.secs"
}

# row MODULE: the table's line for MODULE, from the outputs in $out; the summary's class of the
# module goes to $out/MODULE.class.
row() {
	local m=$1 b=- i=- rb=- ri=- only="" class
	if [[ -f "$out/$m.bare.rc" ]]; then
		rb=$(result "$out/$m.bare")
		b="$rb $(cat "$out/$m.bare.secs")s ($(skipped "$out/$m.bare" | wc -l))"
	fi
	if [[ -f "$out/$m.inside.rc" ]]; then
		ri=$(result "$out/$m.inside")
		i="$ri $(cat "$out/$m.inside.secs")s ($(skipped "$out/$m.inside" | wc -l))"
	fi
	if [[ $rb != - && $ri != - ]]; then
		only=$({ LC_ALL=C comm -13 <(failed "$out/$m.bare") <(failed "$out/$m.inside") | sed 's/^/F:/'
			LC_ALL=C comm -13 <(skipped "$out/$m.bare") <(skipped "$out/$m.inside") | sed 's/^/S:/'; } | tr '\n' ' ')
		[[ $ri != CRASHED* || $rb == CRASHED* ]] || only+=$(died "$out/$m.inside" | sed 's/^/K:/')
	fi
	case "$rb/$ri" in
	SKIPPED/SKIPPED) class="skipped both" ;;
	SUCCESS/SUCCESS) class="passed both" ;;
	SUCCESS/SKIPPED) class="skipped inside only" ;;
	SKIPPED/SUCCESS) class="skipped bare only" ;;
	SUCCESS/* | SKIPPED/*) class="failed inside only" ;;
	*/SUCCESS | */SKIPPED) class="failed bare only" ;;
	*) class="failed both" ;;
	esac
	[[ $rb != - && $ri != - ]] || class="one side only"
	[[ $class != "passed both" || $only != *S:* ]] || class="passed both, tests skipped inside only"
	echo "$class" >"$out/$m.class"
	printf '%-32s %-22s %-22s %s\n' "$m" "$b" "$i" "$only"
}

module() { # MODULE: both sides (or the one of ONLY), then its row
	local side
	for side in bare inside; do
		[[ -n ${ONLY:-} && $ONLY != "$side" ]] || run_one "$side" "$1"
	done
	row "$1"
}

printf '# %s, airlock %s %s, %s, python %s %s, %d modules, %d at once\n' "$(date -u '+%F %H:%M UTC')" "$airlock" \
	"${opts[*]}" "$(id -un)" "$("$py" -c 'import sys; print(sys.version.split()[0])')" "${regrtest_opts[*]}" \
	"${#modules[@]}" "$jobs"
printf '%-32s %-22s %-22s %s\n' module "bare (skipped)" "inside (skipped)" \
	"failed (F), skipped (S) or running when the module died (K) inside only"
running=0
for m in "${modules[@]}"; do
	if ((running >= jobs)); then
		wait -n || true # a module that went wrong says so in its own row
		running=$((running - 1))
	fi
	module "$m" &
	running=$((running + 1))
done
wait
printf '# summary of %d modules:' "${#modules[@]}"
for m in "${modules[@]}"; do cat "$out/$m.class"; done | LC_ALL=C sort | uniq -c | sort -rn |
	awk '{ n = $1; $1 = ""; printf "%s %d%s", (NR > 1 ? ";" : ""), n, $0 } END { print "" }'
echo "# outputs in $out"
