#!/bin/bash
# kernel.sh — attack: the kernel's privileged surfaces: keyctl/add_key/request_key, bpf (map and a trivial socket
# filter), perf_event_open (own process and CPU-wide), init_module/finit_module/delete_module, kexec, reboot,
# iopl/ioperm, swapon, syslog, userfaultfd, io_uring, acct, quotactl; /dev/mem, /dev/kmem, /dev/port, /dev/kmsg,
# /proc/kcore, /sys/firmware, block devices, host ptys, a mknod twin of /dev/mem, kernel addresses in /proc/kallsyms; and the same namespace call
# through the i386 (int $0x80) and x32 ABIs. Every argument is harmless even if a call got through.
# Defence: seccomp (EPERM; the 32-bit ABIs are killed with SIGSYS), no capabilities, the minimal /dev, no /sys
# but the job's own cgroups read-only at /sys/fs/cgroup (judged by cgview.sh), nodev mounts, devpts newinstance,
# DAC on /proc/kcore.
# Judged: every attempt fails; from outside, the host's module list is unchanged.
# gvisor: the payload's calls go to the Sentry (gVisor's kernel in user space), which implements some of them for
# itself: syslog reads the Sentry's own log (asserted: it is gVisor's, not the host's), io_uring_setup makes a
# Sentry io_uring, /dev/fuse and /dev/net/tun are its emulated devices, /sys is its own sysfs (no firmware, no
# host cgroups), mknod makes a node in its tmpfs that opens nothing of the host's (open-twin is still judged), and
# the i386/x32 ABIs answer ENOSYS (not implemented: the call never happens, so it is stopped; the Sentry kills
# nothing because no filter is loaded).
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
sentry_calls=""
if esc_gvisor; then
	sentry_calls="syslog-read-all syslog-size io_uring_setup"
	# shellcheck disable=SC2086
	esc_unfiltered_answers $sentry_calls
	if [ "$(esc_kv syslog-read-all)" = OK ]; then
		al_assert_contains "$ESC_OUT" "gVisor" "the log syslog read (the Sentry's own)"
	fi
	calls=$(printf '%s\n' $calls | grep -vxF -e syslog-read-all -e syslog-size -e io_uring_setup)
fi
# shellcheck disable=SC2086
esc_denied $calls
# Where the kernel alone would not say EPERM to an unprivileged caller (bpf, perf, keyctl,
# userfaultfd, io_uring), only the filter can: name it.
# (Under gVisor no filter is loaded and the Sentry refuses them with errnos of its own; esc_denied above.)
esc_unfiltered || for c in add_key keyctl-join bpf-map-create perf-self userfaultfd io_uring_setup; do
	esc_expect "$c" EPERM
done

esc_run -- "$ESC/esc-kernel" files
esc_ran
if esc_gvisor; then
	# The Sentry's own devices and sysfs; the twin made by mknod opens nothing.
	sentry_files='open\[/dev/fuse\]|open\[/dev/net/tun\]|open\[/sys/firmware\]|open\[/sys/fs/cgroup\]|mknod\[[^]]*\]'
	esc_sentry_answers $(printf '%s\n' "$ESC_OUT" | grep -E "^($sentry_files)=" | cut -d= -f1)
	esc_denied_matching 'open-twin\[[^]]*\]'
	rest=$(printf '%s\n' "$ESC_OUT" | grep -E '^open\[[^]]*\]=' | grep -vE "^($sentry_files)=" | cut -d= -f1)
	# shellcheck disable=SC2086
	esc_denied $rest
else
	# /sys/fs/cgroup is the job's own cgroup, read-only (docs/backends.md): opening it is no escape;
	# cgview.sh judges that nothing above the job's cgroup shows there and that no write gets through.
	esc_denied_matching 'open\[/(dev|proc|sys/firmware|sys/kernel)[^]]*\]|open-twin\[[^]]*\]|mknod\[[^]]*\]'
fi
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
# The host's own answer to int $0x80, bare (the call is harmless: a child's unshare): a kernel without
# the i386 entry (IA32 emulation off, as this machine's 6.18 has it) faults it with
# SIGSEGV before any filter could see it, so there is nothing to kill, and the call must fail the
# same way inside; where the entry exists the filter kills it (SIGSYS).
bare_int80=$("$AL_ESC_BIN/esc-kernel" abi 2>/dev/null | sed -n 's/^int80-unshare-newuser=//p')
al_log "int \$0x80 on this host, bare: ${bare_int80:-nothing}"
if [ "$bare_int80" = SIGSEGV ]; then
	al_assert_eq "$(esc_kv int80-unshare-newuser)" SIGSEGV "the i386 ABI, which this kernel lacks, inside too"
	c=x32
else
	c="int80 x32"
fi
if esc_gvisor; then
	# -38 (ENOSYS: this gVisor does not implement the ABI) or -1 (EPERM: the Sentry's seccomp).
	for c in $c; do
		case "$(esc_kv "$c-unshare-newuser-ret")" in
		-38 | -1) al_pass "$c ABI under gVisor: $(esc_kv "$c-unshare-newuser-ret")" ;;
		*) esc_escaped "$c ABI under gVisor returned $(esc_kv "$c-unshare-newuser-ret")" ;;
		esac
	done
elif [ "$bare_int80" != SIGSEGV ]; then
	al_assert_eq "$(esc_kv int80-unshare-newuser)" SIGSYS "the i386 ABI is killed"
fi

al_assert_eq "$(host_modules)" "$modules_before" "the host's module list"
