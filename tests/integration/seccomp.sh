#!/bin/bash
# seccomp.sh — the filter, judged with harmless bad arguments: denied calls fail with EPERM (ENOSYS
# for clone3), controls keep the kernel's own answer (EBADF/EFAULT/EINVAL), the same calls answer
# differently with the filter off, strict kills (SIGSYS, reported), and TIOCSTI under a real
# terminal injects nothing.
. "$(dirname "$0")/../lib.sh"

[ -x "$AL_PROBE_DIR/al-try-syscall" ] || al_fail "al-try-syscall was not built"
if ! al_backend_is native && ! al_backend_enforces seccomp; then
	# A backend that cannot load airlock's filter (airlock check: backend_layers.seccomp false)
	# says so in the verdict and refuses whoever asks for it: the floor and the strict profile.
	al_run run --json -- /bin/true
	al_assert_rc 0
	al_assert_eq "$(al_json_get "$AL_OUT" enforced.seccomp)" false "enforced.seccomp ($AL_BACKEND cannot load the filter)"
	al_expect_refusal seccomp --require seccomp
	al_expect_refusal seccomp --seccomp strict
	exit 0
fi
T=/probe/al-try-syscall
HOST_T="$AL_PROBE_DIR/al-try-syscall"

# inet sockets (and rtnetlink, what getaddrinfo and getifaddrs read) are controls in every
# posture: under the default, none, they reach only the job's own lo.
controls="close read openat fstat ioctl clone socket-unix socketpair-unix socket-inet socket-inet6 socket-netlink-route"
denied="clone-newuser clone-newns clone-newpid clone-newnet clone-newipc clone-newuts clone-newcgroup
ioctl-tiocsti ioctl-tiocsti-hi ioctl-tioclinux
socket-netlink-audit socket-packet socket-vsock socket-bluetooth socket-alg socketpair-inet
personality-addr-no-randomize mount umount2 open_tree fsconfig mount_setattr ptrace process_vm_readv
process_vm_writev pidfd_getfd kcmp keyctl add_key request_key bpf perf_event_open userfaultfd
io_uring_setup io_uring_enter io_uring_register settimeofday clock_settime clock_adjtime adjtimex
open_by_handle_at name_to_handle_at quotactl setns unshare fanotify_init ioperm modify_ldt chroot"
nosys="clone3"

# What the kernel answers each case without a filter, for a process without capabilities.
declare -A nocap
"$HOST_T" --list >"$AL_TEST_ROOT/list" # (no process substitution: the VM has no /dev/fd)
while read -r name n _; do nocap[$name]=${n#nocap=}; done <"$AL_TEST_ROOT/list"

# answers OPTS... -- CASES...: run try-syscall inside; fills the associative array "got".
declare -A got
answers() {
	local opts=()
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	al_box "${opts[@]}" -- "$T" "$@"
	got=()
	while read -r name e; do
		e=${e#errno=}
		got[$name]=${e%%=*} # "ret=N" (the call succeeded) compares as "ret", like --list
	done <<<"$AL_OUT"
}

# ---- default profile
# shellcheck disable=SC2086
answers -- $controls $denied $nosys
for c in $controls; do al_assert_eq "${got[$c]}" "${nocap[$c]}" "control $c under the filter"; done
for c in $denied; do al_assert_eq "${got[$c]}" EPERM "$c under the default profile"; done
for c in $nosys; do al_assert_eq "${got[$c]}" ENOSYS "$c under the default profile"; done
al_pass "default profile: $(echo $denied | wc -w) calls denied, controls untouched"

# ---- the same calls with the filter off answer as the kernel does, and not EPERM: the EPERMs
# above were the filter's, not a lack of privilege. (A few calls say EPERM to any process
# without capabilities; those cannot tell, so only the others count, and the key ones must.)
# shellcheck disable=SC2086
answers --seccomp off -- $denied $nosys
proved=0
for c in $denied $nosys; do
	[ "${got[$c]:-}" != EPERM ] && [ -n "${got[$c]:-}" ] && proved=$((proved + 1))
done
key="clone-newuser clone-newnet socket-packet socket-netlink-audit ioctl-tiocsti bpf keyctl
ptrace perf_event_open userfaultfd io_uring_setup setns unshare clone3"
if al_backend_is gvisor; then
	# gVisor's kernel itself answers bpf with EPERM to a caller without CAP_SYS_ADMIN: that
	# case cannot tell there (asserted, so a change is noticed); the other key ones must.
	al_assert_eq "${got[bpf]:-}" EPERM "bpf under gvisor with --seccomp off (gVisor's own answer)"
	key=${key/ bpf/}
fi
for c in $key; do
	[ "${got[$c]:-EPERM}" != EPERM ] || al_fail "$c answers EPERM even with --seccomp off: the check cannot tell"
done
[ "$proved" -ge 30 ] || al_fail "only $proved cases tell the filter apart"
al_pass "--seccomp off: $proved of the denied calls answer otherwise"

# ---- strict: an always-denied call kills the process, and the verdict says it was seccomp
al_box --seccomp strict --json -- "$T" mount
al_assert_rc 159
al_assert_eq "$(al_json_get "$AL_OUT" status)" signaled "strict: status"
al_assert_eq "$(al_json_get "$AL_OUT" signal)" 31 "strict: signal"
al_assert_eq "$(al_json_get "$AL_OUT" seccomp_killed)" true "strict: seccomp_killed"
al_assert_eq "$(al_json_get "$AL_OUT" enforced.seccomp)" strict "strict: enforced.seccomp"
al_box --seccomp strict -- "$T" close socket-packet
al_assert_rc 0
al_assert_contains "$AL_OUT" "socket-packet errno=EPERM" "strict: argument-filtered calls fail, not kill"
# The 32-bit x86 ABI is refused in every profile, by killing.
al_box --json -- "$T" x32
if al_backend_is gvisor; then
	# gVisor's kernel has no x32 ABI (ENOSYS without a filter; nothing reaches the host's
	# kernel), and its seccomp rules see the x32 number as an unlisted call: EPERM, no kill.
	al_assert_eq "$(al_json_get "$AL_OUT" status)" exited "x32 ABI under gvisor: status"
	al_assert_eq "$(al_json_get "$AL_OUT" stdout.data)" "x32 errno=EPERM" "x32 ABI under gvisor"
	al_box --seccomp off -- "$T" x32
	al_assert_eq "$AL_OUT" "x32 errno=ENOSYS" "x32 ABI under gvisor with --seccomp off (gVisor's own refusal)"
else
	al_assert_eq "$(al_json_get "$AL_OUT" seccomp_killed)" true "x32 ABI under the default profile"
fi

# ---- TIOCSTI under a real pseudo-terminal: the job's stdin is the terminal; after it ran,
# nothing waits in the terminal's input queue. As root, a control pushes a byte the same way
# from outside the sandbox and sees it arrive, so the check can fail.
tiocsti_run() { # MODE: "sandbox" or "control"; prints the bytes found in the input queue
	AL_T_MODE=$1 "$AL_PY" - "$@" <<'PY'
import fcntl, os, pty, select, subprocess, sys, termios, tty
mode = os.environ["AL_T_MODE"]
master, slave = pty.openpty()
tty.setraw(slave)
if mode == "control":
    # Our own terminal, made the controlling one of a new session, pushed by root.
    def ctty():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    cmd = [os.environ["HOST_T"], "tiocsti", "0"]
    subprocess.run(cmd, stdin=slave, stdout=subprocess.DEVNULL, preexec_fn=ctty)
else:
    cmd = os.environ["AL_T_CMD"].split("\x1f")
    subprocess.run(cmd, stdin=slave, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
os.set_blocking(slave, False)
got = b""
if select.select([slave], [], [], 0.5)[0]:
    got = os.read(slave, 64)
print(got.hex())
PY
}
export HOST_T
cmd=("${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" run "${AL_BACKEND_ARGS[@]}" --ro "$AL_PROBE_DIR:/probe" -- "$T" tiocsti 0 tiocsti-hi 0)
AL_T_CMD=$(printf '%s\x1f' "${cmd[@]}")
AL_T_CMD=${AL_T_CMD%$'\x1f'}
export AL_T_CMD
injected=$(tiocsti_run sandbox)
al_assert_eq "$injected" "" "bytes pushed into the terminal from inside the sandbox"
if [ "$(id -u)" = 0 ] && [ "$(cat /proc/sys/dev/tty/legacy_tiocsti 2>/dev/null || echo 1)" = 1 ]; then
	control=$(tiocsti_run control)
	[ -n "$control" ] || al_fail "control: TIOCSTI from outside injected nothing, so the check proves nothing"
	al_pass "TIOCSTI: the control injected '$control'; the sandbox injected nothing"
fi
