#!/bin/bash
# signal.sh — attack: see host processes (kill(pid, 0) over the whole pid range, /proc, kill(-1, 0)) and kill them
# (SIGKILL by pid, rt_sigqueueinfo, pidfd_open + pidfd_send_signal) — aimed at host sleepers this test started, one
# of them running as the payload's own host uid, so that only the isolation saves it.
# Defence: pid namespace (host pids do not exist inside), the namespace's own procfs, Landlock ABI 6 signal scope.
# Judged from outside: the sleepers are alive afterwards; the job saw only its own few pids.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-signal

# Two host sleepers: one as the payload's host uid (same owner: DAC would allow the kill),
# one as airlock's caller.
esc_bg_as_uid "$AL_PAYLOAD_HOST_UID" sleep 120
same_uid=$AL_BG_PID
al_bg sleep 120
caller=$AL_BG_PID
esc_wait_comm "$same_uid" sleep
esc_wait_comm "$caller" sleep
kill -0 "$same_uid" "$caller" || al_fail "the host sleepers did not start"
# setpriv execs sleep in place, so the pid is the sleeper's own; check its owner.
al_assert_eq "$(al_host_uid "$same_uid")" "$AL_PAYLOAD_HOST_UID" "host uid of the first sleeper"

# Under gVisor every call is a round trip through the Sentry and it has no pid_max: the scan stops at
# 65536 (its pids are its own, numbered from 1); the victims are still tried by their host pids.
scan=()
esc_gvisor && scan=(scan-max=65536)
esc_run --time 20 -- "$ESC/esc-signal" "${scan[@]}" "$same_uid" "$caller" "$$"
esc_ran
for v in "$same_uid" "$caller" "$$"; do
	esc_denied "proc-stat-$v" "kill0-$v" "kill-$v" "sigqueue-$v" "pidfd-open-$v"
done
esc_denied kill-all-0
visible=$(esc_kv visible-count)
[ -n "$visible" ] || al_fail "the program did not report the pids it saw"
[ "$visible" -le 3 ] ||
	esc_escaped "the job sees $visible pids ($(esc_kv visible-pids)); a fresh namespace holds at most init, the job and a child"
[ "$(esc_kv proc-count)" -le 3 ] || esc_escaped "/proc inside lists $(esc_kv proc-count) processes"
al_pass "the job saw only pids $(esc_kv visible-pids) of $(esc_kv scanned) scanned"

sleep 0.2
kill -0 "$same_uid" 2>/dev/null || esc_escaped "the host sleeper running as the payload's uid ($same_uid) was killed"
kill -0 "$caller" 2>/dev/null || esc_escaped "the host sleeper running as the caller ($caller) was killed"
al_pass "the host sleepers survived"
