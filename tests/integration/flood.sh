#!/bin/bash
# flood.sh — output beyond the cap is drained and counted, and airlock's own memory stays small.
. "$(dirname "$0")/../lib.sh"

# How airlock's peak RSS is measured: the static probe runs airlock as its direct child
# and reaps it with wait4(), whose ru_maxrss (KiB) is the high-water RSS of that process
# over its whole life, maxed with that of every descendant it reaped (the sandbox init
# and, through it, the payload). So it bounds airlock's own peak from above: under the
# limit means airlock is under it. The payload is the static probe (about 1 MiB), and the
# parent's RSS before exec (which the mark keeps) is the probe's too, so neither loosens
# the bound; a python or shell parent would (a forked python child starts at ~10 MiB).
# setpriv, in user mode, execs airlock and is small as well. Sampling VmHWM from /proc
# would race with the exit; GNU time's %M is the same wait4 figure but needs 'time'.
# Usage: maxrss_run STDOUT-FILE STDERR-FILE AIRLOCK-ARGS...; prints "MAXRSS_KIB EXIT WALL_MS".
maxrss_run() {
	local out=$1 err=$2 rep="$AL_TEST_ROOT/maxrss.report" t0 t1
	shift 2
	rm -f "$rep"
	t0=$(date +%s%N)
	# (No process substitution: /dev/fd is missing in some minimal VMs.)
	"$AL_HOST_PROBE" maxrss "$rep" "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" "$1" "${AL_BACKEND_ARGS[@]}" "${@:2}" >"$out" 2>"$err" || return 0
	t1=$(date +%s%N)
	echo "$(al_kv maxrss_kib "$(cat "$rep")") $(al_kv exit "$(cat "$rep")") $(((t1 - t0) / 1000000))"
}

limit_kib=8192
# A sanitized build carries shadow memory and allocator quarantine: its RSS says nothing
# about airlock's own bound, so there the bound is only a sanity ceiling.
[ -n "${AL_SANITIZED:-}" ] && limit_kib=131072
if al_backend_is gvisor; then
	# ru_maxrss also covers every descendant airlock's monitor reaped: there runsc (a Go
	# program of about 25 MiB) itself. airlock's own bound is then what the flood adds over
	# the same job printing nothing.
	read -r base _ _ <<<"$(maxrss_run "$AL_TEST_ROOT/base.out" "$AL_TEST_ROOT/base.err" run --json -- /bin/true)"
	[ -n "$base" ] || al_fail "could not measure the runtime's RSS baseline"
	al_log "gvisor: peak RSS of a silent job (runsc included) ${base} KiB"
	limit_kib=$((base + limit_kib))
fi
total=104857600
cap=1048576
out="$AL_TEST_ROOT/flood.out"
err="$AL_TEST_ROOT/flood.err"

# ---- capture mode (--json): 100 MiB on stdout, 1 MiB kept
read -r rss rc ms <<<"$(maxrss_run "$out" "$err" run --ro "$AL_PROBE_DIR:/probe" --json -- "$P" flood "$total")"
[ -n "$rss" ] || al_fail "could not measure airlock's RSS"
AL_CMD="airlock run --json -- al-probe flood $total" AL_RC=$rc AL_OUT_FILE=$out AL_ERR_FILE=$err AL_RUN_N=1
al_log "flood: exit $rc, ${ms} ms, max RSS ${rss} KiB"
al_assert_eq "$rc" 0 "exit status"
[ "$(wc -l <"$out")" = 1 ] || al_fail "stdout is not exactly one verdict line"
v=$out # a file: the verdict is too large to travel in an argument
al_assert_eq "$(al_json_get "$v" status)" output-limit "verdict status"
al_assert_eq "$(al_json_get "$v" exit_code)" 0 "verdict exit_code"
al_assert_eq "$(al_json_get "$v" stdout.truncated)" true "stdout.truncated"
al_assert_eq "$(al_json_get "$v" stdout.bytes)" "$total" "stdout.bytes"
al_assert_eq "$(al_json_get "$v" stdout.kept)" "$cap" "stdout.kept"
data=$(al_json_get "$v" stdout.data)
al_assert_eq "${#data}" $((cap - 1)) "length of stdout.data (the shell drops its final newline)"
al_assert_eq "${data:0:26}" abcdefghijklmnopqrstuvwxyz "start of stdout.data"
al_assert_eq "$(al_json_get "$v" stderr.bytes)" 0 "stderr.bytes"
al_assert_eq "$(al_json_get "$v" stderr.truncated)" false "stderr.truncated"
[ "$ms" -lt 10000 ] || al_fail "draining 100 MiB took ${ms} ms"
[ "$rss" -lt "$limit_kib" ] || al_fail "airlock peak RSS ${rss} KiB >= ${limit_kib} KiB while capturing a 100 MiB flood"
al_pass "100 MiB drained in ${ms} ms, peak RSS ${rss} KiB"

# ---- stderr, with a smaller cap
read -r rss rc ms <<<"$(maxrss_run "$out" "$err" run --ro "$AL_PROBE_DIR:/probe" --json --output-limit 64K -- "$P" flood 10485760 2)"
[ -n "$rss" ] || al_fail "could not measure airlock's RSS"
AL_RC=$rc
al_assert_eq "$rc" 0 "exit status (stderr flood)"
v=$out # a file: the verdict is too large to travel in an argument
al_assert_eq "$(al_json_get "$v" stderr.bytes)" 10485760 "stderr.bytes"
al_assert_eq "$(al_json_get "$v" stderr.kept)" 65536 "stderr.kept with --output-limit 64K"
al_assert_eq "$(al_json_get "$v" stderr.truncated)" true "stderr.truncated"
al_assert_eq "$(al_json_get "$v" stdout.bytes)" 0 "stdout.bytes"
al_assert_eq "$(al_json_get "$v" status)" output-limit "verdict status"

# ---- live mode: streamed through, memory still bounded
read -r rss rc ms <<<"$(maxrss_run /dev/null "$err" run --ro "$AL_PROBE_DIR:/probe" -- "$P" flood "$total")"
[ -n "$rss" ] || al_fail "could not measure airlock's RSS"
AL_RC=$rc
al_assert_eq "$rc" 0 "exit status (live flood)"
[ "$ms" -lt 10000 ] || al_fail "streaming 100 MiB took ${ms} ms"
[ "$rss" -lt "$limit_kib" ] || al_fail "airlock peak RSS ${rss} KiB >= ${limit_kib} KiB while streaming a 100 MiB flood"
al_pass "live: 100 MiB in ${ms} ms, peak RSS ${rss} KiB"
