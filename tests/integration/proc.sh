#!/bin/bash
# proc.sh — the payload sees only its own pid namespace and cannot signal host processes.
. "$(dirname "$0")/../lib.sh"

# Control: on the host the probe lists many processes, among them this shell.
host_pids=$("$AL_HOST_PROBE" pids)
[ "$(printf '%s\n' "$host_pids" | wc -l)" -gt 10 ] || al_fail "control: host /proc lists too few pids"
printf '%s\n' "$host_pids" | grep -qx "$$" || al_fail "control: host probe does not list this shell ($$)"

al_probe -- pids
al_assert_rc 0
n=$(printf '%s\n' "$AL_OUT" | grep -c .)
max=$(printf '%s\n' "$AL_OUT" | tail -n 1)
al_log "pids inside: $(printf '%s\n' "$AL_OUT" | tr '\n' ' ')"
[ "$n" -ge 1 ] && [ "$n" -le 3 ] || al_fail "expected 1..3 pids in the sandbox's /proc, got $n"
[ "$max" -le 10 ] || al_fail "expected only low pids in the sandbox's /proc, highest is $max"
al_assert_not_contains " $(printf '%s\n' "$AL_OUT" | tr '\n' ' ') " " $$ " "pids inside"
al_pass "/proc inside shows only the sandbox's $n process(es)"

# The payload is not pid 1 of its namespace's view only by accident: its own pid is listed.
al_probe -- status
al_assert_rc 0
pid_inside=$(al_kv pid)
[ "$pid_inside" -le 10 ] || al_fail "payload pid inside is $pid_inside, not a fresh namespace's"

# Signals to host processes: this shell (SIGTERM would end the test) and a sleeper.
al_bg sleep 60
victim=$AL_BG_PID
al_probe -- kill "$$" 15
al_assert_rc 1
al_assert_eq "$(al_kv kill)" ESRCH "kill of the test shell from inside"
al_probe -- kill "$victim" 9
al_assert_eq "$(al_kv kill)" ESRCH "kill of a host sleeper from inside"
sleep 0.2
kill -0 "$victim" 2>/dev/null || al_fail "the host sleeper $victim died"
al_pass "host processes survived and were invisible (ESRCH)"

# ---- init's command line (a copy of airlock's) tells the job nothing of the host
hidden=$(al_tmpdir)
al_run run --ro "$hidden:/h" --env AL_HIDDEN_VALUE=zq9 -- /bin/cat /proc/1/cmdline
al_assert_rc 0
al_assert_not_contains "$AL_OUT" "$hidden" "a host path in /proc/1/cmdline"
al_assert_not_contains "$AL_OUT" "zq9" "an --env value in /proc/1/cmdline"
if al_backend_is bwrap; then
	# The sandbox's pid 1 is bwrap's own; its options reach it through --args FD, so its
	# command line is only "bwrap --args FD -- airlock-init's ... -- CMD ARG...": bwrap's
	# command is airlock-init (the airlock binary bound read-only), which sets the job's rlimits
	# and Landlock rules (paths inside the sandbox) and execs the payload in its place.
	cmdline=$(tr '\0' ' ' <"$AL_OUT_FILE")
	printf '%s\n' "$cmdline" | grep -qxE '/usr/bin/bwrap --args [0-9]+ -- /\.airlock-init( --rlimit [0-9]+:[0-9]+:[0-9]+)*( --landlock-set [tsw]*-( --landlock [rw]\??:/[^ ]*)*)? --exec --record [0-9]+ -- /bin/cat /proc/1/cmdline ' ||
		al_fail "/proc/1/cmdline under bwrap is not 'bwrap --args FD -- airlock-init ... -- CMD...': $cmdline"
	al_pass "/proc/1/cmdline shows only bwrap, airlock-init's options and the job's own command"
	# Neither bwrap's pid 1 nor the payload holds airlock-init's record pipe or the binary's
	# descriptor: only stdio (and bwrap's eventfd in its pid 1). bwrap's pid 1 closes what it
	# inherited itself, just after forking the payload's side, so under load the payload can list
	# them first: what is judged is the state pid 1 settles in (up to 2 s; a kept one stays).
	al_run run -- /bin/sh -c 'for _ in $(seq 100); do [ "$(ls /proc/1/fd | tr "\n" " ")" = "0 1 2 4 " ] && break
		sleep 0.02; done; ls /proc/1/fd /proc/self/fd | tr "\n" " "'
	al_assert_rc 0
	[ "$(printf '%s' "$AL_OUT" | tr -s ' ' | sed 's/ $//')" = "/proc/1/fd: 0 1 2 4 /proc/self/fd: 0 1 2 3" ] ||
		al_fail "descriptors of bwrap's pid 1 and the payload: $AL_OUT"
	al_pass "no descriptor of airlock-init's reaches bwrap's pid 1 or the payload"
elif al_backend_is oci; then
	# crun's container process is airlock-init (the airlock binary bound read-only), which
	# runs the payload as pid 2 under the job's rlimits and Landlock rules (paths inside the sandbox):
	# "/.airlock-init --rlimit R:S:H... --landlock-set FLAGS --landlock MODE:PATH... -- CMD ARG...".
	cmdline=$(tr '\0' ' ' <"$AL_OUT_FILE")
	printf '%s\n' "$cmdline" | grep -qxE '/\.airlock-init( --rlimit [0-9]+:[0-9]+:[0-9]+)*( --landlock-set [tsw]*-( --landlock [rw]\??:/[^ ]*)*)? -- /bin/cat /proc/1/cmdline ' ||
		al_fail "/proc/1/cmdline under oci is not 'airlock-init [--rlimit R:S:H]... -- CMD...': $cmdline"
	al_pass "/proc/1/cmdline under oci shows only airlock-init, the rlimits and the job's own command"
	# Its descriptors (the pipe of its report) are out of the payload's reach: not dumpable.
	al_probe -- ls /proc/1/fd
	al_assert_eq "$(al_kv ls)" EACCES "the payload listing airlock-init's descriptors"
elif al_backend_is gvisor; then
	# No init of airlock's under gVisor: pid 1 is the payload itself (gVisor's kernel still
	# delivers the signals a payload sends itself: see exitcodes.sh).
	al_assert_eq "$(tr '\0' ' ' <"$AL_OUT_FILE")" "/bin/cat /proc/1/cmdline " "/proc/1/cmdline under $AL_BACKEND (the payload)"
else
	al_assert_contains "$AL_OUT" "airlock-init" "init's name"
	al_pass "/proc/1/cmdline shows only airlock-init"
fi
