#!/bin/bash
# kernel.sh — attack: the kernel's privileged surfaces: keyctl/add_key/request_key, bpf (map and a trivial socket
# filter), perf_event_open (own process and CPU-wide), init_module/finit_module/delete_module, kexec, reboot,
# iopl/ioperm, swapon, syslog, userfaultfd, io_uring, acct, quotactl; /dev/mem, /dev/kmem, /dev/port, /dev/kmsg,
# /proc/kcore, /sys/firmware, block devices, host ptys, a mknod twin of /dev/mem, kernel addresses in /proc/kallsyms; and the same namespace call
# through the i386 (int $0x80) and x32 ABIs. Every argument is harmless even if a call got through.
# Defence: seccomp (EPERM; the 32-bit ABIs are killed with SIGSYS), no capabilities, the minimal /dev, no /sys,
# nodev mounts, devpts newinstance, DAC on /proc/kcore.
# Judged: every attempt fails; from outside, the host's module list is unchanged.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-kernel

# (A kernel without module support has no /proc/modules: then the list is empty both times.)
host_modules() { { cut -d' ' -f1 /proc/modules 2>/dev/null || true; } | sort | sha256sum; }
modules_before=$(host_modules)

esc_run -- "$ESC/esc-kernel" calls
esc_ran
calls="add_key keyctl-join keyctl-read-user request_key bpf-map-create bpf-prog-load perf-self perf-cpu-wide
init_module finit_module delete_module kexec_file_load kexec_load reboot-bad-magic iopl ioperm swapon
syslog-read-all syslog-size userfaultfd io_uring_setup acct quotactl"
# shellcheck disable=SC2086
esc_denied $calls
# Where the kernel alone would not say EPERM to an unprivileged caller (bpf, perf, keyctl,
# userfaultfd, io_uring), only the filter can: name it.
for c in add_key keyctl-join bpf-map-create perf-self userfaultfd io_uring_setup; do
	esc_expect "$c" EPERM
done

esc_run -- "$ESC/esc-kernel" files
esc_ran
esc_denied_matching 'open\[[^]]*\]|open-twin\[[^]]*\]|mknod\[[^]]*\]'
al_assert_eq "$(esc_kv host-ptys-opened)" 0 "host ptys the job could open"
esc_denied kallsyms-real-addresses

esc_run -- "$ESC/esc-kernel" abi
esc_ran
for c in int80-unshare-newuser x32-unshare-newuser; do
	v=$(esc_kv "$c")
	[ -n "$v" ] || { esc_dump; al_fail "no report for $c"; }
	[ "$v" != OK ] || esc_escaped "$c: a namespace was created through another system call ABI"
	al_pass "$c=$v"
done
al_assert_eq "$(esc_kv int80-unshare-newuser)" SIGSYS "the i386 ABI is killed"

al_assert_eq "$(host_modules)" "$modules_before" "the host's module list"
