#!/bin/bash
# procsys.sh — attack: change kernel settings through /proc/sys (hostname, domainname, core_pattern, modprobe,
# randomize_va_space, kptr_restrict, dmesg_restrict, suid_dumpable, overcommit, unprivileged_bpf_disabled,
# max_user_namespaces, ip_forward; each written back with the value just read, so nothing can change even if it
# got through), and open for writing (never writing) the files where any write acts: sysrq-trigger,
# binfmt_misc/register, drop_caches, compact_memory, cgroup.procs, release_agent, uevent_helper, init's
# oom_score_adj and LSM attributes.
# Defence: DAC (sysctl files belong to ids outside the sandbox's map), Landlock (no write rights under /proc),
# no /sys, the UTS and network namespaces.
# Judged: every attempt fails; from outside, the host's values are the same before and after.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-procsys

host_values() {
	local f
	for f in kernel/hostname kernel/domainname kernel/core_pattern kernel/modprobe kernel/randomize_va_space \
		kernel/kptr_restrict kernel/dmesg_restrict fs/suid_dumpable vm/overcommit_memory; do
		printf '%s=%s\n' "$f" "$(cat "/proc/sys/$f" 2>/dev/null)"
	done
}
before=$(host_values)
esc_run -- "$ESC/esc-procsys"
esc_ran
esc_denied_matching 'writeback\[[^]]*\]|open-wr\[[^]]*\]'
al_assert_eq "$(host_values)" "$before" "the host's kernel settings"
