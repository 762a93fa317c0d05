#!/bin/bash
# ptrace.sh — attack: PTRACE_ATTACH/SEIZE of pid 1 (the sandbox's init), of a host process and of a sibling;
# PTRACE_TRACEME; process_vm_readv/writev; writing /proc/PID/mem of init and of a host process; pidfd_getfd on init.
# Defence: seccomp (ptrace, process_vm_*, pidfd_getfd: EPERM), init is another id and not dumpable (/proc/1/mem),
# pid namespace (host pids do not exist inside).
# Judged: every judged attempt fails; from outside, the host victim is alive and nobody traces it. The sibling's
# /proc/PID/mem write is the payload's own trust domain and only logged (it shows the technique works).
# Backends: what pid 1 is differs (common.sh, esc_init_domain). native: airlock-init, every attack on it judged.
# bwrap: bwrap's own init, asserted to be the payload's uid with no capability, the same seccomp filter and
# no_new_privs; ptrace, process_vm_* and pidfd_getfd of it are judged (the filter), and /proc/1/mem and
# /proc/1/environ too where airlock-init applied the Landlock ruleset (pid 1 is outside the payload's Landlock
# domain), with a control run without Landlock; with --landlock off they are the payload's own domain, logged. oci, gvisor: the payload
# is pid 1 itself, asserted; "init" is itself. gvisor: PTRACE_TRACEME and attaching the sibling are gVisor's own
# ptrace inside the Sentry (esc_sentry_answers): they reach only the job's processes, and every host-side attempt
# (ESRCH/ENOENT: the host's pids do not exist in the Sentry; process_vm_*: ENOSYS, not implemented by this
# gVisor, so the call never happens at all) is still judged.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-ptrace

esc_bg_as_uid "$AL_PAYLOAD_HOST_UID" sleep 120
victim=$AL_BG_PID
esc_wait_comm "$victim" sleep
esc_run --time 20 -- "$ESC/esc-ptrace" "$victim"
esc_ran
dom=$(esc_init_domain) || exit 1
al_pass "pid 1 is $dom under $AL_BACKEND"
esc_denied ptrace-attach-host ptrace-seize-host process_vm_readv-host proc-mem-open-rw-host proc-environ-host
case "$dom" in
airlock-init)
	esc_denied ptrace-attach-init ptrace-seize-init process_vm_readv-init proc-mem-open-rw-init proc-environ-init \
		pidfd_getfd-init
	;;
same-domain)
	esc_denied ptrace-attach-init ptrace-seize-init process_vm_readv-init pidfd_getfd-init
	if [ "$(esc_v enforced.landlock.fs)" = true ]; then
		# airlock-init's Landlock ruleset: bwrap's pid 1 is outside the payload's Landlock domain,
		# and a restricted process may not trace or read a less restricted one (Landlock's ptrace
		# rule): its environ and mem stay closed, which the control without Landlock shows open.
		esc_denied proc-mem-open-rw-init proc-environ-init
		esc_expect proc-environ-init EACCES
		local_out=$ESC_OUT
		esc_run --time 20 --landlock off -- "$ESC/esc-ptrace" "$victim"
		al_assert_eq "$(esc_kv proc-environ-init)" OK "control: bwrap's pid 1's environ without Landlock"
		ESC_OUT=$local_out # the rest judges the run with every layer on
		al_pass "Landlock keeps the payload from bwrap's pid 1, which shares its uid"
	else
		al_log "bwrap's pid 1 is the payload's own domain: /proc/1/mem open=$(esc_kv proc-mem-open-rw-init), /proc/1/environ=$(esc_kv proc-environ-init)"
	fi
	;;
self) al_log "the payload is pid 1: its attacks on 'init' were on itself (/proc/1/mem open=$(esc_kv proc-mem-open-rw-init))" ;;
esac
esc_expect ptrace-attach-init EPERM
if esc_unfiltered; then
	esc_sentry_answers info-ptrace-attach-sibling ptrace-traceme
	esc_expect process_vm_readv-host ENOSYS
else
	esc_denied info-ptrace-attach-sibling ptrace-traceme
	esc_expect ptrace-traceme EPERM
fi
al_log "same-domain control: /proc/SIBLING/mem open=$(esc_kv info-proc-mem-open-rw-sibling) write=$(esc_kv info-proc-mem-write-sibling)"

kill -0 "$victim" 2>/dev/null || esc_escaped "the host victim $victim died"
tracer=$(awk '/^TracerPid:/ { print $2 }' "/proc/$victim/status")
al_assert_eq "$tracer" 0 "TracerPid of the host victim"
