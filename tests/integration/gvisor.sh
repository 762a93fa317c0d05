#!/bin/bash
# gvisor.sh — `--backend gvisor`: the same policy and supervisor with runsc (ptrace platform) running an OCI
# bundle under gVisor's kernel. Judged from outside; what it cannot enforce is refused with 125. As an
# ordinary user this runsc cannot start (its gofer fails to fork): the refusal is asserted instead.
. "$(dirname "$0")/../lib.sh"

[ -x /usr/bin/runsc ] || al_skip "/usr/bin/runsc is not installed (Debian package runsc)"
B=(--backend gvisor)
j() { al_json_get "$AL_OUT" "$1"; }
cgroups() {
	# Another test's cgroup may vanish while find walks: its error is no failure of ours.
	{ find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d 2>/dev/null || true; } | grep -v airlock-test | sort | while read -r d; do
		case "${d##*/}" in
		airlock-*-*-*) [ -s "$d/cgroup.procs" ] || continue ;; # a supervisor's job cgroup: see oci.sh
		esac
		printf '%s\n' "$d"
	done
}
snapshot() { ls -d /tmp/airlock-gvisor.* 2>/dev/null || true; }
cg0=$(cgroups)
# Directories that existed before this test (another run's, e.g. a killed monitor's) are not ours.
tmp0=$(snapshot)
no_leftovers() { # WHAT
	local left
	# New since the test started, and orphaned: airlock-NAME.<supervisor pid>.XXXXXX whose
	# supervisor is gone (other airlock runs on the machine may hold theirs right now).
	left=$(al_orphan_dirs "$tmp0" "$(snapshot)")
	[ -z "$left" ] || al_fail "$1: bundle directories left behind: $left"
	# Only runsc processes whose supervisor is gone: other tests may run gvisor jobs right now.
	left=$(pgrep -f "runsc.*--root=?/tmp/airlock-gvisor" | while read -r p; do
		sup=$(tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | sed -n 's|.*/tmp/airlock-gvisor\.\([0-9]*\)\..*|\1|p' | head -n 1)
		[ -n "$sup" ] && [ ! -d "/proc/$sup" ] && [ -d "/proc/$p" ] && printf '%s\n' "$p"
	done || true)
	[ -z "$left" ] || al_fail "$1: runsc processes left behind: $(ps -o pid,args -p "${left//$'\n'/,}")"
	left=$(comm -13 <(printf '%s\n' "$cg0") <(cgroups))
	[ -z "$left" ] || al_fail "$1: new cgroups left behind (runsc makes them without --ignore-cgroups): $left"
	al_pass "$1: no bundle directory, runsc process or cgroup left behind"
}

if [ "$AL_CALLER_UID" != 0 ]; then
	al_run run "${B[@]}" -- /bin/true
	al_assert_rc 125
	al_assert_contains "$AL_ERR" "needs root" "refusal as an ordinary user"
	al_run check --json
	al_assert_eq "$(j backend_layers.gvisor.available)" false "check: gvisor unavailable as an ordinary user"
	no_leftovers "the refusal"
	exit 0
fi

# ---- hello world, exit codes, the verdict names the backend (gVisor starts in a few hundred ms)
al_box "${B[@]}" -- /bin/sh -c 'echo hello; echo oops >&2'
al_assert_rc 0
al_assert_eq "$AL_OUT" hello "stdout"
al_assert_eq "$AL_ERR" oops "stderr"
for n in 0 3 42; do
	al_probe "${B[@]}" -- exit "$n"
	al_assert_rc "$n"
done
al_box "${B[@]}" --json -- /bin/sh -c "$P raise 15; exit \$?"
al_assert_eq "$(j status)" signaled "status (signal 15)"
no_leftovers "normal exits"
al_probe "${B[@]}" --json -- status
al_assert_eq "$(j backend)" gvisor "verdict backend"
al_assert_eq "$(j enforced.kernel)" gvisor "enforced.kernel"
al_assert_eq "$(j enforced.seccomp)" default "enforced.seccomp (the profile as linux.seccomp, runsc --oci-seccomp)"
al_assert_eq "$(al_kv Seccomp "$(j stdout.data)")" 2 "Seccomp inside gVisor (its kernel's filter mode)"
al_assert_eq "$(j enforced.landlock)" false "enforced.landlock"
al_assert_eq "$(j enforced.payload_host_uid)" "$AL_PAYLOAD_HOST_UID" "enforced.payload_host_uid"
al_assert_eq "$(al_kv uid "$(j stdout.data)")" 1000 "uid inside"
al_assert_eq "$(al_kv CapEff "$(j stdout.data)")" 0000000000000000 "CapEff inside"
al_run run "${B[@]}" --json -- /nonexistent/prog
al_assert_rc 125
al_assert_eq "$(j status)" setup-error "status for a missing program"
al_assert_contains "$(j error.message)" /nonexistent/prog "error.message"
no_leftovers "a setup failure"

# ---- gVisor's host processes (sentry, gofer) are never host root
m=$(al_marker)
al_airlock run "${B[@]}" --ro "$AL_PROBE_DIR:/probe" -- "$P" sleep 3 "$m" >/dev/null 2>&1 &
bg=$!
sandbox=""
for _ in $(seq 100); do
	sandbox=$(pgrep -f "runsc-sandbox.*--root=/tmp/airlock-gvisor" || true)
	[ -n "$sandbox" ] && break
	sleep 0.05
done
[ -n "$sandbox" ] || al_fail "no runsc sandbox process appeared: the check below proves nothing"
for p in $sandbox $(pgrep -f "runsc-gofer.*--root=/tmp/airlock-gvisor" || true); do
	[ "$(al_host_uid "$p")" != 0 ] || al_fail "runsc process $p runs as host root"
done
al_pass "gVisor's sentry and gofer run as unprivileged host uids"
wait "$bg" || al_fail "background run failed"

# ---- the filesystem: read-only root and --ro judged from outside, --disk caps the tmpfs
ro=$(al_tmpdir 0777)
printf 'canary-%s\n' "$m" >"$ro/canary"
chmod 0666 "$ro/canary"
al_box "${B[@]}" --ro "$ro:/data" -- /bin/sh -c 'echo clobbered > /data/canary; echo x > /usr/x; echo x > /etc/passwd; echo done'
al_assert_eq "$AL_OUT" done "the writes ran"
al_assert_eq "$(cat "$ro/canary")" "canary-$m" "host canary behind --ro"
[ ! -e /usr/x ] || al_fail "a write reached the host's /usr"
al_assert_not_contains "$(cat /etc/passwd)" x$'\n'x "host /etc/passwd"
al_box "${B[@]}" --disk 8M -- /bin/sh -c 'head -c 12582912 /dev/zero > /workspace/fill; echo rc=$?'
al_assert_contains "$AL_ERR" "No space left on device" "filling /workspace under --disk 8M"
# --workdir is refused: no overlay, so the host directory could only be bound read-write and the
# job's set-id files, FIFOs and modes would land on the host as it left them.
wd=$(al_tmpdir 0777)
printf 'seed-%s\n' "$m" >"$wd/seed"
AL_BACKEND=gvisor al_expect_workdir_refused "$wd" # (this test runs as a native one: the helper then passes --backend)
al_assert_eq "$(cat "$wd/seed")" "seed-$m" "the --workdir seed after the refusal"
al_expect_refusal 'cannot cap --workdir with --disk' "${B[@]}" --workdir "$wd" --disk 8M
no_leftovers "the --workdir refusals"

# ---- the network: a host listener hears nothing
log="$AL_TEST_ROOT/listen.log"
al_listen "$log"
al_probe "${B[@]}" -- connect 127.0.0.1 "$AL_LISTEN_TCP"
al_assert_rc 1
al_probe "${B[@]}" -- udp-send 127.0.0.1 "$AL_LISTEN_UDP"
sleep 0.5
[ ! -s "$log" ] || al_fail "the host listener saw traffic from the sandbox: $(cat "$log")"
al_pass "the host listener saw nothing from the sandbox"
al_listen_stop

# ---- the wall clock kills the whole tree; memory through the job's cgroup
m=$(al_marker)
al_probe "${B[@]}" --time 2 --json -- daemon "$m" 30 30
al_assert_rc 124
al_assert_eq "$(j status)" timeout "status at the deadline"
al_wait_marker_gone "$m" 3 || al_fail "the daemon ($m) survived the timeout"
no_leftovers "a timeout"
al_probe "${B[@]}" --json -- exit 0
if [ "$(al_json_type "$AL_OUT" enforced.cgroup)" = object ]; then
	# The default pids limit holds on the job cgroup, which counts gVisor's host tasks (the
	# Sentry's and gofer's threads, its ptrace stubs), not the payload's processes: the verdict
	# says that, and never that the payload's processes are bounded.
	al_assert_eq "$(j enforced.cgroup.pids)" false "enforced.cgroup.pids (the payload's processes are gVisor's)"
	al_assert_eq "$(j enforced.cgroup.pids_host_tasks)" true "enforced.cgroup.pids_host_tasks"
	al_assert_eq "$(j pids_limit_hit)" false "pids_limit_hit of a trivial run"
	al_run run "${B[@]}" --memory 128M --time 30 --json -- /usr/bin/python3 -c '
a = []
while True:
    a.append(bytearray(1 << 20))'
	al_assert_eq "$(j status)" oom "memory bomb status (the cgroup is airlock's)"
fi
no_leftovers "the memory bomb"

# ---- refusals: 125, naming what gVisor cannot enforce here
refused() { # TOKEN AIRLOCK-RUN-ARGS...
	local token=$1
	shift
	al_run run "${B[@]}" "$@" -- /bin/true
	al_assert_rc 125
	printf '%s\n' "$AL_ERR" | grep -qiE -e "$token" || al_fail "the refusal does not name '$token': $AL_ERR"
	al_pass "refused ($token): $AL_ERR"
}
refused 'seccomp' --require seccomp --seccomp off
refused 'landlock' --require landlock
refused 'pids' --pids 32
# A floor that requires the pids limit is refused the same way, from the command line or from a
# profile's require list; the payload never runs.
refused 'pids limit .*cgroup-pids.* on the payload' --require cgroup-pids
refused 'pids limit' --require cgroup
pdir=$(al_tmpdir)
printf 'version: 1\nprofiles:\n  counted: {require: [userns, cgroup-pids]}\n' >"$pdir/airlock.yaml"
chmod 0644 "$pdir/airlock.yaml"
refused "pids limit .* gVisor's own host tasks" --config "$pdir/airlock.yaml" --profile counted
refused 'net host' --net host
refused 'cgroupns' --require cgroupns
refused 'egress proxy' --net allow=example.com:443
refused 'keep-changes' --checkout "$ro" --keep-changes "$AL_TEST_ROOT/kept"
# gVisor's kernel accepts RLIMIT_CPU but never stops a payload at it: refused, the payload never runs.
al_expect_refusal 'the gvisor backend cannot enforce --cpu-time' "${B[@]}" --cpu-time 1
no_leftovers "refusals"

# ---- seccomp: gVisor's kernel enforces the profile (filtered calls fail, strict kills); with
# the filter off the same calls get gVisor's own answers, so the EPERMs were the filter's.
if [ -x "$AL_PROBE_DIR/al-try-syscall" ]; then
	T=/probe/al-try-syscall
	al_box "${B[@]}" -- "$T" keyctl unshare socket-packet close
	al_assert_eq "$AL_OUT" "$(printf 'keyctl errno=EPERM\nunshare errno=EPERM\nsocket-packet errno=EPERM\nclose errno=EBADF')" "filtered calls under gvisor"
	al_box "${B[@]}" --seccomp off -- "$T" keyctl unshare socket-packet close
	al_assert_eq "$AL_OUT" "$(printf 'keyctl errno=EACCES\nunshare ret=0\nsocket-packet errno=EINVAL\nclose errno=EBADF')" "the same calls with --seccomp off"
	al_box "${B[@]}" --seccomp strict --json -- "$T" mount
	al_assert_eq "$(j signal)" 31 "strict: SIGSYS under gvisor"
	al_assert_eq "$(j seccomp_killed)" true "strict: seccomp_killed under gvisor"
fi

# ---- airlock exec: gVisor cannot bind a file inside the /workspace tmpfs (it would make the mount
# point a directory), so airlock-init, bound read-only, copies the code there as the sandbox user
# and becomes the payload (still gVisor's pid 1), with the rlimits it was given.
al_run exec --lang python "${B[@]}" --json -c 'import os
st = os.stat("main.py")
print(os.getuid(), sorted(os.listdir(".")), oct(st.st_mode & 0o7777), st.st_uid, os.getpid())
print(open("main.py").read().splitlines()[0])'
al_assert_rc 0
al_assert_eq "$(j backend)" gvisor "exec: backend"
al_assert_eq "$(j enforced.files)" copied "exec: enforced.files"
al_assert_eq "$(j stdout.data)" "1000 ['main.py'] 0o644 1000 1"$'\n'"import os" "exec: the code file in /workspace"
al_run exec --lang python "${B[@]}" --open-files 64 --address-space 1G --file-size 1M -c 'import resource as r
print(*(r.getrlimit(x)[0] for x in (r.RLIMIT_NOFILE, r.RLIMIT_AS, r.RLIMIT_FSIZE, r.RLIMIT_CORE)))
try:
    b = bytearray(2 << 30); print("alloc=ok")
except MemoryError:
    print("alloc=MemoryError")'
al_assert_rc 0
al_assert_eq "$(printf '%s\n' "$AL_OUT" | head -n 1)" "64 1073741824 1048576 0" "exec: the payload's rlimits (set by the init)"
al_assert_eq "$(al_kv alloc)" MemoryError "exec: 2G allocation under --address-space 1G"
al_run exec --lang shell "${B[@]}" -c 'echo "shell $(id -u) $(ls)"; exit 3'
al_assert_rc 3
al_assert_eq "$AL_OUT" "shell 1000 main.sh" "exec --lang shell"
# The code counts against --disk like any file of the workspace: too large, and the init says so.
big=$(printf 'x%.0s' $(seq 20000))
al_run exec --lang python "${B[@]}" --disk 8K -c "print(1) # $big"
al_assert_rc 125
al_assert_contains "$AL_ERR" "airlock-init: writing /workspace/main.py" "exec: code larger than --disk"
no_leftovers "airlock exec"

al_run check --json
al_assert_eq "$(j backend_layers.gvisor.available)" true "check: gvisor available as root"
al_assert_eq "$(j backend_layers.gvisor.seccomp)" true "check: gVisor's kernel enforces the profile"
