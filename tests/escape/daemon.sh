#!/bin/bash
# daemon.sh — attack: outlive the job: setsid + double fork, ignore SIGHUP/SIGTERM/SIGINT, clear the parent-death
# signal, become a child subreaper, keep stdout open (a supervisor waiting for EOF would hang); and a "hopping"
# daemon that keeps forking a successor and exiting so no pid stays put. The payload exits at once, or waits to
# be killed at --time.
# Defence: pid namespace (SIGKILL to its init kills every process in it, at exit and at the deadline), the cgroup
# killed and removed, a supervisor that does not wait for EOF.
# Judged from outside: after airlock returns (promptly), no host process carries the daemon's unique marker
# (pgrep -f is used only to look, never to kill).
# gvisor: the daemon is a task of the Sentry, not a host process, so no host process carries its marker. Judged
# there instead: every host process airlock started for the job (the Sentry, the gofer, the ptrace stubs, seen
# while the job runs) is gone once airlock returns, which takes every task of the Sentry along; the control
# shows that the job does have such processes while it runs.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-daemon

ms() { echo $(($(date +%s%N) / 1000000)); }
# gone MARKER: no process with MARKER in its command line within 3 s.
gone() {
	for _ in $(seq 30); do
		pgrep -f -- "$1" >/dev/null || return 0
		sleep 0.1
	done
	pgrep -a -f -- "$1" | sed 's/^/# still alive: /' >&2
	return 1
}

# limit MODE: the job's --time. "wait" is killed at it (5 s: the backend's start, seconds for gVisor
# or crun on a busy host, counts against it, and the daemon must have reported before it); where the
# payload exits at once the limit is long (20 s), so a supervisor that waited for the daemon would be
# seen past half of it, while a start and teardown slowed by load stay far below.
limit() { if [ "$1" = wait ]; then echo 5; else echo 20; fi; }
# waited MODE MS: the payload exited at once, so airlock must not have waited for its daemon.
waited() { [ "$2" -lt 10000 ] || esc_escaped "$1: airlock waited $2 ms for a daemon after its payload exited (--time 20)"; }

if esc_gvisor; then
	for mode in exit hop wait; do
		m=$(al_marker)
		out="$AL_TEST_ROOT/daemon-$mode.json"
		t=$(limit "$mode")
		t0=$(ms)
		al_airlock run --ro "$ESC_DIR:$ESC" --json --time "$t" -- "$ESC/esc-daemon" "$mode" "$m" >"$out" 2>"$out.err" &
		bg=$!
		tree=()
		while kill -0 "$bg" 2>/dev/null; do
			mapfile -t -O "${#tree[@]}" tree < <(esc_tree_pids "$bg")
			sleep 0.05
		done
		AL_RC=0
		wait "$bg" || AL_RC=$?
		t1=$(ms)
		AL_CMD="airlock run --time $t -- esc-daemon $mode" AL_OUT_FILE=$out AL_ERR_FILE=$out.err
		esc_parse_verdict "$out"
		al_assert_contains "$ESC_OUT" "daemon=" "$mode: the daemon started before the job ended"
		[ "${#tree[@]}" -gt 2 ] || al_fail "control: the host saw no processes of the gVisor job, so the check proves nothing"
		if [ "$mode" = wait ]; then
			al_assert_eq "$ESC_STATUS" timeout "$mode: verdict status"
		else
			al_assert_eq "$ESC_STATUS" exited "$mode: verdict status"
			waited "$mode" $((t1 - t0))
		fi
		sleep 0.2
		left=$(esc_alive "${tree[@]}")
		[ -z "$left" ] || esc_escaped "$mode: host processes of the gVisor job outlived it: $left"
		al_pass "$mode: airlock returned after $((t1 - t0)) ms; none of the $(printf '%s\n' "${tree[@]}" | sort -u | wc -l) host processes of the job is left"
	done
	exit 0
fi

# Control: while a job runs, the host does find its daemon by the marker, so "gone" means gone.
m=$(al_marker)
# (--time 5 and a look until the job ends: a loaded host's start may take seconds of it.)
al_airlock run --ro "$ESC_DIR:$ESC" --time 5 -- "$ESC/esc-daemon" wait "$m" >/dev/null 2>&1 &
bg=$!
seen=""
for _ in $(seq 300); do
	seen=$(pgrep -a -f -- "$m" | grep -v airlock || true)
	[ -n "$seen" ] && break
	kill -0 "$bg" 2>/dev/null || break
	sleep 0.05
done
wait "$bg" || true
[ -n "$seen" ] || al_fail "control: the host never saw the running daemon (marker $m), so the check proves nothing"
al_pass "control: the host sees a running daemon by its marker ($(printf '%s' "$seen" | head -n 1))"
gone "$m" || esc_escaped "control run: the daemon (marker $m) outlived its job"

for mode in exit hop wait; do
	m=$(al_marker)
	t0=$(ms)
	esc_run --time "$(limit "$mode")" -- "$ESC/esc-daemon" "$mode" "$m"
	t1=$(ms)
	al_assert_contains "$ESC_OUT" "daemon=" "$mode: the daemon started before the job ended"
	if [ "$mode" = wait ]; then
		al_assert_eq "$ESC_STATUS" timeout "$mode: verdict status"
	else
		al_assert_eq "$ESC_STATUS" exited "$mode: verdict status"
		waited "$mode" $((t1 - t0))
	fi
	gone "$m" || esc_escaped "$mode: the daemon (marker $m) outlived its job"
	al_pass "$mode: airlock returned after $((t1 - t0)) ms and nothing carrying $m is left"
done
