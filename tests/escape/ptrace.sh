#!/bin/bash
# ptrace.sh — attack: PTRACE_ATTACH/SEIZE of pid 1 (the sandbox's init), of a host process and of a sibling;
# PTRACE_TRACEME; process_vm_readv/writev; writing /proc/PID/mem of init and of a host process; pidfd_getfd on init.
# Defence: seccomp (ptrace, process_vm_*, pidfd_getfd: EPERM), init is another id and not dumpable (/proc/1/mem),
# pid namespace (host pids do not exist inside).
# Judged: every judged attempt fails; from outside, the host victim is alive and nobody traces it. The sibling's
# /proc/PID/mem write is the payload's own trust domain and only logged (it shows the technique works).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-ptrace

esc_bg_as_uid "$AL_PAYLOAD_HOST_UID" sleep 120
victim=$AL_BG_PID
sleep 0.1
esc_run --time 20 -- "$ESC/esc-ptrace" "$victim"
esc_ran
esc_denied ptrace-attach-init ptrace-seize-init process_vm_readv-init proc-mem-open-rw-init proc-environ-init \
	ptrace-attach-host ptrace-seize-host process_vm_readv-host proc-mem-open-rw-host proc-environ-host \
	info-ptrace-attach-sibling pidfd_getfd-init ptrace-traceme
esc_expect ptrace-attach-init EPERM
esc_expect ptrace-traceme EPERM
al_log "same-domain control: /proc/SIBLING/mem open=$(esc_kv info-proc-mem-open-rw-sibling) write=$(esc_kv info-proc-mem-write-sibling)"

kill -0 "$victim" 2>/dev/null || esc_escaped "the host victim $victim died"
tracer=$(awk '/^TracerPid:/ { print $2 }' "/proc/$victim/status")
al_assert_eq "$tracer" 0 "TracerPid of the host victim"
