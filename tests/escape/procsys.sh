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
# Backends: /proc/1 and /proc/self are judged by what pid 1 is (common.sh, esc_init_domain): only an airlock-init pid 1
# (airlock-init) is another domain, whose oom_score_adj and LSM attributes must stay closed. Under bwrap (bwrap's
# init: the payload's uid, no capability, same filter) and under oci/gvisor (the payload is pid 1) those three
# files are the payload's own (raising its own OOM score, an LSM attribute no LSM reads here), logged and not
# judged where no Landlock ruleset is applied (gvisor; --landlock off); native, and bwrap and oci through
# airlock-init, refuse them with Landlock. Everything else is judged everywhere.
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
dom=$(esc_init_domain) || exit 1
if [ "$AL_BACKEND" = native ] || [ "$(esc_v enforced.landlock.fs)" = true ]; then
	# Landlock (native; airlock-init's under bwrap and oci) grants no write under /proc: every open
	# for writing is refused, whatever pid 1 is.
	esc_denied_matching 'writeback\[[^]]*\]|open-wr\[[^]]*\]'
else
	esc_denied_matching 'writeback\[[^]]*\]|open-wr\[/(sys|proc/sys|proc/sysrq)[^]]*\]'
	# Another process's oom_score_adj only when pid 1 is another domain. attr/current: the kernel lets
	# a task write only its own attributes, and no LSM reads them here; native's Landlock refuses the open.
	[ "$dom" != airlock-init ] || esc_denied 'open-wr[/proc/1/oom_score_adj]'
	al_log "pid 1 is $dom: not judged: $(printf '%s\n' "$ESC_OUT" | grep -E '^open-wr\[/proc/(1|self)/' | tr '\n' ' ')"
fi
al_assert_eq "$(host_values)" "$before" "the host's kernel settings"
