#!/bin/bash
# killsafe.sh — nothing of a job outlives airlock, whatever ends airlock: SIGTERM, SIGINT, SIGHUP,
# SIGQUIT (in order: the job killed, a "killed" verdict, cleanup, exit 128+N), SIGKILL (the sandbox
# notices its supervisor is gone), a closed output pipe (SIGPIPE). Each at each phase: during
# set-up, while the payload runs (with a setsid daemon that ignores every signal), while it floods
# its output (to a reader and to a reader that stalled). Judged from outside: the job's processes
# are gone within a second, its cgroups and directories with it (after SIGKILL: once the next
# airlock has started, the only process that can remove them), and the verdict says killed.
# Runs under every backend of the conformance matrix, as root and as an unprivileged user.
. "$(dirname "$0")/../lib.sh"

RD=$(al_tmpdir 0777)
fifo="$RD/out.fifo"
# Where a payload says it runs (wait_running): jobs started with READY set have it at /ready.
RDY=$(al_tmpdir 0777)
READY=()

# The supervisor's leftovers on the host: job cgroups named after its pid in any hierarchy, and
# the OCI backends' bundle directories.
leftovers() {
	local pid=$1
	find /sys/fs/cgroup -maxdepth 8 -type d -name "airlock-$pid-*" 2>/dev/null || true
	ls -d "${TMPDIR:-/tmp}"/airlock-*."$pid".* /tmp/airlock-*."$pid".* 2>/dev/null || true
}

# wait_running MARKER [OUT]: until the payload's daemon runs: it names itself MARKER (the supervisor
# and monitors carry MARKER in their command lines too, long before the payload starts) and prints
# "daemon=PID" to OUT; or until the payload wrote /ready/MARKER. Under gvisor the payload's processes
# are the Sentry's, not the host's: only OUT or that file can tell. Fails after 30 s (runsc's start
# on a loaded host can take 10).
wait_running() {
	local i
	for i in $(seq 600); do
		[ -n "$(al_marker_pids "$1" | awk -v m="$1" '$2 == m')" ] && return 0
		[ -n "${2:-}" ] && grep -q '^daemon=' "$2" 2>/dev/null && return 0
		[ -e "$RDY/$1" ] && return 0
		sleep 0.05
	done
	al_fail "the payload never started (no process named $1, nothing in ${2:-its output} or $RDY/$1)"
}

# airlock_dfl ARGS...: `airlock run` with default dispositions of the stop signals (a background
# job of a script starts with SIGINT and SIGQUIT ignored, and airlock keeps what its caller ignores).
# It execs: call it only where a subshell runs it (in the background, in a pipeline), so that the
# pid the test signals is airlock's own.
airlock_dfl() {
	local be=()
	[ "$AL_BACKEND" = native ] || be=(--backend "$AL_BACKEND")
	exec env --default-signal=INT,QUIT,HUP,TERM,PIPE "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" run "${be[@]}" "$@"
}

# start_job OUT MARKER PAYLOAD...: airlock in the background (verdict in $RD/v.json), pid in JOB.
start_job() {
	local out=$1
	shift 2
	rm -f "$RD/v.json"
	airlock_dfl --ro "$AL_PROBE_DIR:/probe" "${READY[@]}" --time 60 --result-file "$RD/v.json" -- "$@" >"$out" 2>"$RD/err" &
	JOB=$!
}

# finish CASE SIG MARKER PHASE: the supervisor got SIG; judge what is left.
finish() {
	local what=$1 sig=$2 m=$3 phase=$4 rc=0 num
	num=$(kill -l "$sig")
	wait "$JOB" || rc=$?
	al_assert_eq "$rc" $((128 + num)) "$what: airlock's exit status"
	al_wait_marker_gone "$m" 1 || al_fail "$what: the job outlived airlock by over a second"
	if [ "$sig" = KILL ]; then
		# Only the next airlock can remove what a SIGKILLed one made; it does so at its start.
		al_run run -- /bin/true
		al_assert_rc 0
	elif [ "$phase" != setup ]; then
		al_assert_eq "$(al_json_get "$(cat "$RD/v.json")" status)" killed "$what: verdict status"
		al_assert_eq "$(al_json_get "$(cat "$RD/v.json")" signal)" "$num" "$what: verdict signal"
	elif [ -s "$RD/v.json" ]; then
		al_assert_eq "$(al_json_get "$(cat "$RD/v.json")" status)" killed "$what: verdict status"
	fi
	local left
	left=$(leftovers "$JOB")
	[ -z "$left" ] || al_fail "$what: left behind: $left"
	al_pass "$what: exit $rc, no process, cgroup or directory left"
}

daemon_payload() { echo "$P" daemon "$1" 120 120; }

# ---- while the payload runs: a daemon (setsid, double fork, every signal ignored) and its parent
for sig in TERM INT HUP QUIT KILL; do
	m=$(al_marker)
	# shellcheck disable=SC2046
	start_job "$RD/out" "$m" $(daemon_payload "$m")
	wait_running "$m" "$RD/out"
	kill -s "$sig" "$JOB"
	finish "SIG$sig while running" "$sig" "$m" running
done

# ---- during set-up: the signal arrives a few milliseconds after airlock started (started: the
# background shell has exec'd it; a signal before then reaches the shell, whose handler takes it)
delays=(0.002 0.005 0.01 0.03)
bin=$(readlink -f "$AL_AIRLOCK_BIN")
i=0
for sig in TERM INT HUP KILL TERM KILL; do
	m=$(al_marker)
	# shellcheck disable=SC2046
	start_job "$RD/out" "$m" $(daemon_payload "$m")
	for _ in $(seq 1000); do
		[ "$(readlink "/proc/$JOB/exe" 2>/dev/null)" != "$bin" ] || break
		sleep 0.001
	done
	sleep "${delays[$((i % 4))]}"
	i=$((i + 1))
	kill -s "$sig" "$JOB"
	finish "SIG$sig during set-up" "$sig" "$m" setup
done

# traced_airlock TRACER: sets sup to the airlock that strace (TRACER) runs, once airlock has a
# child, and child to that child. strace's own first children only test the kernel's ptrace.
traced_airlock() {
	local p
	sup='' child=''
	for _ in $(seq 2000); do
		if [ -z "$sup" ]; then
			for p in $(pgrep -P "$1" || true); do
				[ "$(readlink "/proc/$p/exe" 2>/dev/null)" != "$bin" ] || sup=$p
			done
		fi
		[ -z "$sup" ] || child=$(pgrep -P "$sup" | head -1 || true)
		[ -z "$child" ] || return 0
		sleep 0.01
	done
}

# ---- SIGKILL right after the supervisor released its first child (the monitor, or the native
# init) and before that child armed its parent-death signal: the kernel sends that signal only
# for a death after it was armed, and the release left in the pipe must not start a job nobody
# watches. strace makes the moment last: every prctl waits 0.3 s, the child's first among them.
command -v strace >/dev/null || al_skip "strace is not installed (scripts/deps.sh)"
m=$(al_marker)
be=()
[ "$AL_BACKEND" = native ] || be=(--backend "$AL_BACKEND")
# LeakSanitizer cannot work under a tracer (it aborts at exit); the other runs check for leaks.
no_lsan=("ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
# shellcheck disable=SC2046
"${AL_SETPRIV[@]}" strace -f -o /dev/null -e trace=prctl -e inject=prctl:delay_enter=300000 env "${no_lsan[@]}" \
	"$AL_AIRLOCK_BIN" run "${be[@]}" --ro "$AL_PROBE_DIR:/probe" --time 60 -- $(daemon_payload "$m") >/dev/null 2>&1 &
tracer=$! # setpriv execs strace
traced_airlock "$tracer"
[ -n "$child" ] || al_fail "SIGKILL after the release: airlock (${sup:-not started}) started no child"
sleep 0.15 # the release is written at once; the child's prctl ends 0.3 s after it began
kill -KILL "$sup"
al_wait_marker_gone "$m" 15 || al_fail "SIGKILL after the release: the job outlived airlock"
kill "$tracer" 2>/dev/null || true
wait "$tracer" 2>/dev/null || true
al_run run -- /bin/true # removes what the killed airlock made
left=$(leftovers "$sup")
[ -z "$left" ] || al_fail "SIGKILL after the release: left behind: $left"
al_pass "SIGKILL after the release, before the child's parent-death signal: nothing runs, nothing left"

# ---- SIGTERM while a backend's monitor starts its runtime (bwrap, crun, runsc): the stop reaches
# the monitor before the runtime exists (and before the monitor is in the job's cgroup, where the
# supervisor's cgroup kill would reach it), and must end the job all the same, not at its --time.
# strace makes the moment last: every prctl waits 0.3 s, the monitor's first comes before it
# joins the job's cgroup, and another before it starts the runtime. The job must be gone within
# 10 s of the stop (its --time is 60).
m=$(al_marker)
# shellcheck disable=SC2046
"${AL_SETPRIV[@]}" strace -f -o /dev/null -e trace=prctl -e inject=prctl:delay_enter=300000 \
	env --default-signal=TERM "${no_lsan[@]}" "$AL_AIRLOCK_BIN" run "${be[@]}" --ro "$AL_PROBE_DIR:/probe" --time 60 -- \
	$(daemon_payload "$m") >/dev/null 2>&1 &
tracer=$!
traced_airlock "$tracer"
[ -n "$child" ] || al_fail "SIGTERM while the runtime starts: airlock (${sup:-not started}) started no child"
sleep 0.15 # within the child's first prctl
kill -TERM "$sup"
al_wait_marker_gone "$m" 10 || al_fail "SIGTERM while the runtime starts: the job still runs 10 s after the stop"
rc=0
wait "$tracer" || rc=$?
al_assert_eq "$rc" 143 "SIGTERM while the runtime starts: airlock's exit status"
left=$(leftovers "$sup")
[ -z "$left" ] || al_fail "SIGTERM while the runtime starts: left behind: $left"
al_pass "SIGTERM while the runtime starts: the job ended at the stop, nothing left"

# ---- while the payload floods its output, read at full speed and not read at all
READY=(--rw "$RDY:/ready")
for sig in TERM KILL; do
	for reader in reading stalled; do
		m=$(al_marker)
		rm -f "$fifo"
		mkfifo -m 0666 "$fifo"
		if [ "$reader" = reading ]; then
			cat "$fifo" >/dev/null &
			rpid=$!
		else
			exec 7<>"$fifo" # holds the pipe open and never reads: the supervisor's writes would block
		fi
		start_job "$fifo" "$m" /bin/sh -c "$P daemon $m 120 0 >/dev/null; : >/ready/$m; exec $P flood 100000000000"
		wait_running "$m"
		sleep 0.3
		kill -s "$sig" "$JOB"
		finish "SIG$sig while flooding ($reader)" "$sig" "$m" flood
		if [ "$reader" = reading ]; then
			wait "$rpid" 2>/dev/null || true
		else
			exec 7>&-
		fi
	done
done

# ---- a closed output pipe: `airlock run -- flood | head -c 10` ends at once, like bare
m=$(al_marker)
rm -f "$RD/v.json"
rc=$( (airlock_dfl --ro "$AL_PROBE_DIR:/probe" --time 60 --result-file "$RD/v.json" -- \
	/bin/sh -c "$P daemon $m 120 0 >/dev/null; exec $P flood 100000000000" 2>"$RD/err" | head -c 10 >/dev/null
	echo "${PIPESTATUS[0]}") )
al_assert_eq "$rc" 141 "closed output pipe: airlock's exit status (128+SIGPIPE)"
al_assert_eq "$(al_json_get "$(cat "$RD/v.json")" status)" killed "closed output pipe: verdict status"
al_assert_eq "$(al_json_get "$(cat "$RD/v.json")" signal)" 13 "closed output pipe: verdict signal"
al_wait_marker_gone "$m" 1 || al_fail "closed output pipe: the job outlived airlock"
al_assert_not_contains "$(cat "$RD/err")" "airlock:" "closed output pipe: nothing said on stderr (as in a shell)"
al_pass "closed output pipe: exit 141, the job gone, the verdict written"

# ---- a signal the caller ignores stays ignored (nohup): the job runs on
rm -f "$RD/v.json"
(trap '' HUP; exec "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" run "${AL_BACKEND_ARGS[@]}" --result-file "$RD/v.json" -- /bin/sh -c 'sleep 1; echo survived') >"$RD/out" 2>"$RD/err" &
JOB=$!
sleep 0.5
kill -s HUP "$JOB"
rc=0
wait "$JOB" || rc=$?
al_assert_eq "$rc" 0 "SIGHUP ignored by the caller: airlock's exit status"
al_assert_eq "$(cat "$RD/out")" survived "SIGHUP ignored by the caller: the job ran to its end"

# ---- human mode says what airlock did, on stderr only (of a job that runs: the signal is sent once
# the payload says so, since one that lands during set-up stops no job)
m=$(al_marker)
start_job "$RD/out" "$m" /bin/sh -c ": >/ready/$m; exec /bin/sleep 60"
wait_running "$m"
kill -s TERM "$JOB"
wait "$JOB" || true
al_assert_contains "$(cat "$RD/err")" "airlock: stopped by SIGTERM" "stderr names the stop"
al_assert_eq "$(cat "$RD/out")" "" "stdout stays the job's"
