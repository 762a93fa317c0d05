/* esc-procsys.c — hostile program: change kernel settings through /proc/sys, /proc and cgroup files. */
/*
 * Usage: esc-procsys
 * Attempts, each harmless even if it succeeded: open the sysctl files that matter for an
 * escape (hostname, domainname, core_pattern, modprobe, ...) for writing and write back
 * exactly the value just read, so nothing changes even on a host without a sandbox (the
 * driver compares the host's values before and after, and judges by the reported result);
 * open for writing, without ever writing, files where any write would act
 * (/proc/sysrq-trigger, binfmt_misc/register, drop_caches, cgroup release_agent and
 * cgroup.procs), and our own /proc/self/attr and /proc/1/oom_score_adj.
 * Expected defence: DAC (sysctl files belong to ids outside the sandbox's map), Landlock
 * (no write rights under /proc), no /sys inside, the UTS namespace for hostname.
 */
#include "esc.h"

#include <limits.h>

static void write_back(const char *path)
{
	char cur[4096], name[PATH_MAX + 16];
	snprintf(name, sizeof(name), "writeback[%s]", path);
	if (esc_slurp(path, cur, sizeof(cur)) < 0) {
		esc_report(name, -1);
		return;
	}
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		esc_report(name, -1);
		return;
	}
	size_t n = strlen(cur);
	cur[n] = '\n';
	esc_report(name, write(fd, cur, n + 1));
	close(fd);
}

static void open_only(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	esc_reportf(fd, "open-wr[%s]", path);
	if (fd >= 0)
		close(fd);
}

int main(void)
{
	esc_init();
	esc_report_init();
	static const char *const sysctls[] = {
		"/proc/sys/kernel/hostname",
		"/proc/sys/kernel/domainname",
		"/proc/sys/kernel/core_pattern",
		"/proc/sys/kernel/modprobe",
		"/proc/sys/kernel/randomize_va_space",
		"/proc/sys/kernel/kptr_restrict",
		"/proc/sys/kernel/dmesg_restrict",
		"/proc/sys/fs/suid_dumpable",
		"/proc/sys/vm/overcommit_memory",
		"/proc/sys/kernel/unprivileged_bpf_disabled",
		"/proc/sys/user/max_user_namespaces",
		"/proc/sys/net/ipv4/ip_forward",
		"/proc/1/root/proc/sys/kernel/hostname",
	};
	for (size_t i = 0; i < sizeof(sysctls) / sizeof(sysctls[0]); i++)
		write_back(sysctls[i]);
	static const char *const armed[] = {
		"/proc/sysrq-trigger",
		"/proc/sys/fs/binfmt_misc/register",
		"/proc/sys/vm/drop_caches",
		"/proc/sys/vm/compact_memory",
		"/sys/fs/cgroup/cgroup.procs",
		"/sys/fs/cgroup/memory/release_agent",
		"/sys/fs/cgroup/pids/cgroup.procs",
		"/sys/kernel/uevent_helper",
		"/proc/1/oom_score_adj",
		"/proc/1/attr/current",
		"/proc/self/attr/current",
	};
	for (size_t i = 0; i < sizeof(armed) / sizeof(armed[0]); i++)
		open_only(armed[i]);
	return 0;
}
