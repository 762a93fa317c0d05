#!/bin/bash
# oci.sh — `--backend oci`: the same policy and supervisor with crun running an OCI bundle. What crun
# claims is judged from outside like the native tests do; what it cannot enforce is refused with 125.
# The checks bwrap.sh shares are tests/nonnative.sh's; what is crun's alone is here.
. "$(dirname "$0")/../lib.sh"

[ -x /usr/bin/crun ] || al_skip "/usr/bin/crun is not installed (Debian package crun)"
NN=(--backend oci)
. "$(dirname "$0")/../nonnative.sh"
# What airlock leaves behind: its bundle directories, runtime processes, cgroups in any hierarchy.
# Other suites may run at the same time, so a supervisor's job cgroup ("airlock-OWNER-N-HEX") counts
# only when a process is left in it (an empty one of a dead owner is al_cleanup_stale's, checked
# after the killed supervisor below); any other new directory (a runtime's own) is a leftover.
cgroups() {
	# Another test's cgroup may vanish while find walks: its error is no failure of ours.
	{ find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d 2>/dev/null || true; } | grep -v airlock-test | sort | while read -r d; do
		case "${d##*/}" in
		airlock-*-*-*) [ -s "$d/cgroup.procs" ] || continue ;;
		esac
		printf '%s\n' "$d"
	done
}
snapshot() { ls -d /tmp/airlock-oci.* 2>/dev/null | while read -r d; do [ -O "$d" ] || [ "$AL_TEST_MODE" = user ] && printf '%s\n' "$d"; done || true; }
cg0=$(cgroups)
# Directories that existed before this test (another run's, e.g. a killed monitor's) are not ours.
tmp0=$(snapshot)
# New since the test started, and orphaned: airlock-NAME.<supervisor pid>.XXXXXX whose
# supervisor is gone (other airlock runs on the machine may hold theirs right now).
orphans() { al_orphan_dirs "$tmp0" "$(snapshot)"; }
no_leftovers() { # WHAT
	local left
	left=$(orphans)
	[ -z "$left" ] || al_fail "$1: bundle directories left behind: $left"
	# Only crun processes whose supervisor is gone: other tests may run oci jobs right now.
	left=$(pgrep -f "^/usr/bin/crun --root /tmp/airlock-oci" | while read -r p; do
		sup=$(tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | sed -n 's|^/tmp/airlock-oci\.\([0-9]*\)\..*|\1|p' | head -n 1)
		[ -n "$sup" ] && [ ! -d "/proc/$sup" ] && [ -d "/proc/$p" ] && printf '%s\n' "$p"
	done || true)
	[ -z "$left" ] || al_fail "$1: crun processes left behind: $left"
	left=$(comm -13 <(printf '%s\n' "$cg0") <(cgroups))
	[ -z "$left" ] || al_fail "$1: new cgroups left behind: $(printf '%s\n' "$left" | head -5)"
	al_pass "$1: no bundle directory, crun process or cgroup left behind"
}

# ---- hello world, exit codes, signals, the verdict names the backend
# airlock-init is the container's pid 1 (backend/ainit.c): the payload's own signals kill it, and
# its exact wait status comes back, so a shell exiting 128+N is not taken for a signal.
nn_hello 9 15 6
al_box "${NN[@]}" --json -- /bin/sh -c "$P raise 9; exit \$?"
al_assert_rc 137
al_assert_eq "$(j status)" exited "status of a shell exiting 137 (not folded into a signal)"
al_assert_eq "$(j exit_code)" 137 "exit_code of a shell exiting 137"
no_leftovers "normal exits"
nn_verdict enforced.runtime /usr/bin/crun user pid mount net ipc uts cgroup
# A program that is not there: a setup error naming it (crun's logged error, not exit 1).
nn_missing_program
no_leftovers "a setup failure"

# ---- identity: no capability, no_new_privs, uid 1000 inside, never host root outside
al_identity_inside "${NN[@]}"
m=$(al_marker)
al_payload_start "$m" "${NN[@]}"
al_payload_host_ids "$AL_PAYLOAD_PID"
al_payload_wait

# ---- the filesystem: the host's files are not there, the root is read-only, --ro holds, --rw writes
m=$(al_marker)
nn_hidden_files "$m"
nn_not_writable /usr/bin/env /usr /usr/bin / /etc /etc/passwd
nn_binds "$m"
# /dev (the runtime's tmpfs, owned by the payload's uid as an ordinary user) is read-only
# (readonlyPaths): nothing can be created, unlinked or replaced there, while its nodes still work.
al_box "${NN[@]}" -- /bin/sh -c "$P write /dev/new x; $P write /dev/shm/new x; echo x >/dev/null && echo null=OK"
al_assert_rc 0
al_assert_eq "$(al_kv write)" EROFS "creating a file in /dev"
al_assert_contains "$AL_OUT" "write=OK" "a write to /dev/shm (its own tmpfs) beside it"
al_assert_eq "$(al_kv null)" OK "writing /dev/null"
al_probe "${NN[@]}" -- read /proc/self/mountinfo
al_assert_eq "$(printf '%s\n' "$AL_OUT" | awk '$5 == "/dev" { o = $6 } END { sub(/,.*/, "", o); print o }')" ro "the last /dev mount's flags"
# Made read-only without losing its other flags (crun 1.8.1's readonlyPaths remount dropped
# nosuid and noexec): every mount at or below /dev is nosuid and noexec, /dev/shm nodev too (the
# device nodes and /dev itself need dev), and /dev is one mount, not a read-only bind over another.
bad=$(printf '%s\n' "$AL_OUT" | awk '$5 == "/dev" || index($5, "/dev/") == 1 {
	o = "," $6 ","
	if (o !~ /,nosuid,/ || o !~ /,noexec,/ || ($5 == "/dev/shm" && o !~ /,nodev,/)) print $5, $6 }')
[ -z "$bad" ] || al_fail "mounts under /dev without nosuid/noexec (or nodev on /dev/shm): $bad"
al_assert_eq "$(printf '%s\n' "$AL_OUT" | awk '$5 == "/dev" { print $6 }')" ro,nosuid,noexec,relatime "/dev's mount flags (one mount)"
al_pass "/dev and every mount below it keep nosuid,noexec (read from /proc/self/mountinfo)"
nn_workdir_refused "$m"

# ---- the network: a host listener hears nothing; only lo exists inside. The namespace alone
# (crun's, without airlock-init's layers): 127.0.0.1 is the sandbox's own, and refuses.
nn_network --seccomp off --landlock off

# ---- seccomp: airlock's own program, loaded by crun (run.oci.seccomp_bpf_data)
nn_seccomp

# ---- the wall clock kills the whole tree; a daemon outliving its payload is killed too
nn_timeout
no_leftovers "a timeout"
nn_daemon_outlived
# The supervisor itself killed: its monitor takes the runtime and the container along.
m=$(al_marker)
# exec: $! is airlock itself (setpriv execs it too), not a subshell.
(exec "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" run "${NN[@]}" --ro "$AL_PROBE_DIR:/probe" -- "$P" sleep 30 "$m" >/dev/null 2>&1) &
bg=$!
# The payload runs once a process named al-probe carries the marker: airlock's own command line
# carries it from the start, and a kill then would land during set-up (10 s at most).
probe_runs() { [ -n "$(al_marker_pids "$m" | awk '$2 == "al-probe"')" ]; }
for _ in $(seq 200); do probe_runs && break; sleep 0.05; done
probe_runs || al_fail "the payload with marker $m never started"
kill -KILL "$bg"
wait "$bg" 2>/dev/null || true
al_wait_marker_gone "$m" 3 || al_fail "the payload ($m) outlived its killed supervisor"
# The monitor removes the directory once the runtime is gone: give it time on a loaded machine.
for _ in $(seq 200); do [ -z "$(orphans)" ] && break; sleep 0.05; done
left=$(orphans)
# The monitor removes it; or, when another airlock's start-up sweep killed the dead supervisor's
# job cgroup first (the monitor lives there: any backend's start sweeps, and a parallel suite starts
# many), that sweep removes it (al_cleanup_stale). Either way nobody has to come later.
[ -z "$left" ] || al_fail "a killed supervisor: its bundle directory was left behind: $left"
# The same with the monitor stopped before its supervisor dies, so that it cannot clean up: the next
# start of another backend (native) kills the dead job's cgroup, the monitor in it, and removes the
# directory, not only an oci start.
m=$(al_marker)
(exec "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" run "${NN[@]}" --ro "$AL_PROBE_DIR:/probe" -- "$P" sleep 30 "$m" >/dev/null 2>&1) &
bg2=$!
for _ in $(seq 200); do probe_runs && break; sleep 0.05; done
probe_runs || al_fail "the payload with marker $m never started"
mons=$(pgrep -P "$bg2" || true)
[ -n "$mons" ] || al_fail "no monitor under the supervisor $bg2"
# shellcheck disable=SC2086 # one pid per word
kill -STOP $mons
kill -KILL "$bg2"
wait "$bg2" 2>/dev/null || true
sleep 0.2
stopped=$(orphans)
al_run run --backend native -- /bin/true
al_wait_marker_gone "$m" 3 || al_fail "the payload ($m) of a stopped monitor outlived the next airlock's sweep"
if [ -n "$stopped" ]; then
	left=$(orphans)
	[ -z "$left" ] || al_fail "a native start's sweep killed a dead oci job's monitor but left its directory: $left"
	al_pass "a native start's sweep removes the directory of the dead oci job whose monitor it killed"
else
	al_log "another airlock's sweep came first (the stopped monitor's directory was gone already)"
fi
al_run run "${NN[@]}" -- /bin/true # the next airlock removes the dead supervisor's empty cgroups (and directory)
no_leftovers "a killed supervisor, then the next airlock"
left=$(ls -d /sys/fs/cgroup/*/airlock-"$bg"-* 2>/dev/null || true)
[ -z "$left" ] || al_fail "the killed supervisor's cgroups outlived the next airlock: $left"
# A monitor killed before it removed its directory (another airlock's start-up cleanup kills a dead
# supervisor's job cgroup, monitor included): the next airlock removes the directory as well, and
# never one whose supervisor lives.
sleep 0 &
dead=$!
wait "$dead" || true
stale=$(mktemp -d "/tmp/airlock-oci.$dead.XXXXXX")
mkdir "$stale/bundle"
live=$(mktemp -d "/tmp/airlock-oci.$$.XXXXXX")
chown -R "$AL_CALLER_UID" "$stale" "$live"
al_run run "${NN[@]}" -- /bin/true
live_left=false
[ -d "$live" ] && live_left=true
rm -rf "$live"
[ ! -e "$stale" ] || { rm -rf "$stale"; al_fail "a dead supervisor's bundle directory outlived the next airlock"; }
$live_left || al_fail "a live supervisor's bundle directory was removed"
al_pass "the next airlock removes a dead supervisor's bundle directory, not a live one's"

# ---- rlimits: the payload's alone. airlock-init (pid 1, backend/ainit.c) sets them between its fork and
# the payload's execve and keeps the runtime's own, so a sanitized init still starts under
# --address-space; RLIMIT_CORE 0 holds for both.
al_box "${NN[@]}" --address-space 1G --open-files 64 --file-size 1M --cpu-time 5 -- /bin/sh -c \
	'cat /proc/self/limits; echo ==init==; cat /proc/1/limits'
al_assert_rc 0
limit() { # self|init NAME: "SOFT HARD" of /proc/PID/limits ("%-25s %-20s %-20s")
	printf '%s\n' "$AL_OUT" | awk -v part="$1" -v key="$2" 'BEGIN { p = "self" } /^==init==$/ { p = "init"; next }
		p == part && index($0, key) == 1 { n = split(substr($0, 27), f, / +/); print f[1], f[2]; exit }'
}
al_assert_eq "$(limit self "Max address space")" "1073741824 1073741824" "the payload's RLIMIT_AS"
al_assert_eq "$(limit self "Max open files")" "64 64" "the payload's RLIMIT_NOFILE"
al_assert_eq "$(limit self "Max file size")" "1048576 1048576" "the payload's RLIMIT_FSIZE"
al_assert_eq "$(limit self "Max cpu time")" "5 6" "the payload's RLIMIT_CPU"
al_assert_eq "$(limit self "Max core file size")" "0 0" "the payload's RLIMIT_CORE"
al_assert_eq "$(limit init "Max address space")" "unlimited unlimited" "airlock-init's RLIMIT_AS (the runtime's)"
al_assert_eq "$(limit init "Max cpu time")" "unlimited unlimited" "airlock-init's RLIMIT_CPU (the runtime's)"
[ "$(limit init "Max open files")" != "64 64" ] || al_fail "airlock-init holds the payload's RLIMIT_NOFILE"
al_assert_eq "$(limit init "Max core file size")" "0 0" "airlock-init's RLIMIT_CORE"
# And it holds: allocating beyond --address-space fails.
al_box "${NN[@]}" --address-space 256M -- /usr/bin/python3 -c '
try:
    b = bytearray(512 << 20); print("alloc=ok")
except MemoryError:
    print("alloc=MemoryError")'
al_assert_eq "$(al_kv alloc)" MemoryError "512M allocation under --address-space 256M (oci)"

# ---- limits: output cap, memory through the job's cgroup, scrubbed environment
nn_flood
nn_cgroup_limits
nn_env "$m"

# airlock exec: the code arrives as a read-only file in the workspace.
al_run exec --lang python "${NN[@]}" --json -c 'import os; print(os.getuid(), sorted(os.listdir(".")))'
al_assert_eq "$(j backend)" oci "exec: backend"
al_assert_eq "$(j stdout.data)" "1000 ['main.py']" "exec: the code file"

# ---- the allowlist posture: the egress proxy's namespace is airlock's, crun runs inside it.
nn_proxy

# ---- refusals: 125, naming what crun cannot enforce; the payload never runs
# Landlock is airlock-init's (layers.sh proves it holds under oci: the ABI-6 scope on a host socket).
nn_refusals
refused 'seccomp' --require seccomp --seccomp off
no_leftovers "refusals"
al_probe "${NN[@]}" --require userns,pidns,netns,cgroupns,seccomp,no_new_privs -- exit 0
al_assert_rc 0
nn_runtime_missing /usr/bin/crun "Debian package crun"

# ---- airlock check lists oci and what it can enforce
nn_check
al_assert_eq "$(j backend_layers.oci.seccomp)" true "check: crun loads airlock's filter"
no_leftovers "the whole test"
