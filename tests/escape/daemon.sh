#!/bin/bash
# daemon.sh — attack: outlive the job: setsid + double fork, ignore SIGHUP/SIGTERM/SIGINT, clear the parent-death
# signal, become a child subreaper, keep stdout open (a supervisor waiting for EOF would hang); and a "hopping"
# daemon that keeps forking a successor and exiting so no pid stays put. The payload exits at once, or waits to
# be killed at --time.
# Defence: pid namespace (SIGKILL to its init kills every process in it, at exit and at the deadline), the cgroup
# killed and removed, a supervisor that does not wait for EOF.
# Judged from outside: after airlock returns (promptly), no host process carries the daemon's unique marker
# (pgrep -f is used only to look, never to kill).
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

# Control: while a job runs, the host does find its daemon by the marker, so "gone" means gone.
m=$(al_marker)
al_airlock run "${ESC_BACKEND_ARGS[@]}" --ro "$ESC_DIR:$ESC" --time 1.5 -- "$ESC/esc-daemon" wait "$m" >/dev/null 2>&1 &
bg=$!
seen=""
for _ in $(seq 50); do
	seen=$(pgrep -a -f -- "$m" | grep -v airlock || true)
	[ -n "$seen" ] && break
	sleep 0.05
done
wait "$bg" || true
[ -n "$seen" ] || al_fail "control: the host never saw the running daemon (marker $m), so the check proves nothing"
al_pass "control: the host sees a running daemon by its marker ($(printf '%s' "$seen" | head -n 1))"
gone "$m" || esc_escaped "control run: the daemon (marker $m) outlived its job"

for mode in exit hop wait; do
	m=$(al_marker)
	t0=$(ms)
	esc_run --time 2 -- "$ESC/esc-daemon" "$mode" "$m"
	t1=$(ms)
	al_assert_contains "$ESC_OUT" "daemon=" "$mode: the daemon started before the job ended"
	if [ "$mode" = wait ]; then
		al_assert_eq "$ESC_STATUS" timeout "$mode: verdict status"
	else
		al_assert_eq "$ESC_STATUS" exited "$mode: verdict status"
		[ $((t1 - t0)) -lt 1900 ] || esc_escaped "$mode: airlock waited $((t1 - t0)) ms for a daemon after its payload exited"
	fi
	gone "$m" || esc_escaped "$mode: the daemon (marker $m) outlived its job"
	al_pass "$mode: airlock returned after $((t1 - t0)) ms and nothing carrying $m is left"
done
