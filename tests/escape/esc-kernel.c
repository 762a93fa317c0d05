/* esc-kernel.c — hostile program: reach the kernel's privileged surfaces (keys, BPF, perf, modules, raw memory, the kernel log, devices). */
/*
 * Usage: esc-kernel calls      the system calls below, each with arguments that do nothing
 *                              harmful even if allowed (trivial BPF, own-process perf counter,
 *                              a 16-byte non-module, bad reboot magic, nonexistent swap file)
 *        esc-kernel files      open /dev/mem, /dev/kmem, /dev/port, /dev/kmsg, /proc/kcore,
 *                              /sys/firmware, block devices, host ptys; read one kmsg record;
 *                              look for real kernel addresses in /proc/kallsyms;
 *                              mknod a /dev/mem twin and open it
 *        esc-kernel abi        the same namespace call (unshare(CLONE_NEWUSER)) through the
 *                              i386 (int $0x80) and x32 system call ABIs, in children, to
 *                              slip past a filter that only knows x86_64 numbers
 * Expected defence: seccomp (EPERM for keyctl, add_key, request_key, bpf, perf_event_open,
 * init_module, finit_module, delete_module, kexec_*, reboot, iopl, ioperm, swapon, syslog,
 * userfaultfd, io_uring_*; the 32-bit ABIs are killed with SIGSYS), no capabilities, the
 * minimal /dev (no mem, kmsg, disks), no /sys, nodev mounts (a mknod twin cannot be opened),
 * devpts newinstance (host ptys are not there), DAC on /proc/kcore, kptr_restrict (zeros in
 * /proc/kallsyms for a reader without CAP_SYSLOG).
 */
#include "esc.h"

#include <dirent.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#define KEY_SPEC_SESSION_KEYRING    (-3)
#define KEY_SPEC_USER_KEYRING	    (-4)
#define KEYCTL_JOIN_SESSION_KEYRING 1
#define KEYCTL_READ		    11

static long bpf_call(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

static int calls(void)
{
	char buf[256];

	esc_report("add_key", syscall(SYS_add_key, "user", "esc-key", "x", 1, KEY_SPEC_SESSION_KEYRING));
	esc_report("keyctl-join", syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "esc-ring"));
	esc_report("keyctl-read-user", syscall(SYS_keyctl, KEYCTL_READ, KEY_SPEC_USER_KEYRING, buf, sizeof(buf)));
	esc_report("request_key", syscall(SYS_request_key, "user", "esc-key", NULL, 0));

	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 4;
	a.max_entries = 1;
	long fd = esc_report("bpf-map-create", bpf_call(BPF_MAP_CREATE, &a));
	if (fd >= 0)
		close((int)fd);
	/* r0 = 0; exit: a socket filter that accepts nothing. */
	struct bpf_insn prog[2] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	a.insn_cnt = 2;
	a.insns = (unsigned long)prog;
	a.license = (unsigned long)"GPL";
	fd = esc_report("bpf-prog-load", bpf_call(BPF_PROG_LOAD, &a));
	if (fd >= 0)
		close((int)fd);

	struct perf_event_attr pe;
	memset(&pe, 0, sizeof(pe));
	pe.size = sizeof(pe);
	pe.type = PERF_TYPE_SOFTWARE;
	pe.config = PERF_COUNT_SW_CPU_CLOCK;
	pe.disabled = 1;
	fd = esc_report("perf-self", syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
	if (fd >= 0)
		close((int)fd);
	fd = esc_report("perf-cpu-wide", syscall(SYS_perf_event_open, &pe, -1, 0, -1, 0));
	if (fd >= 0)
		close((int)fd);

	/* A 16-byte image is not an ELF module: even a kernel that let us in would refuse it. */
	static const char notamodule[16] = "not-a-module";
	esc_report("init_module", syscall(SYS_init_module, notamodule, sizeof(notamodule), ""));
	int nfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	esc_report("finit_module", syscall(SYS_finit_module, nfd, "", 0));
	if (nfd >= 0)
		close(nfd);
	esc_report("delete_module", syscall(SYS_delete_module, "esc_no_such_module", O_NONBLOCK));
	esc_report("kexec_file_load", syscall(SYS_kexec_file_load, -1, -1, 0, "", 0UL));
	esc_report("kexec_load", syscall(SYS_kexec_load, 0UL, 0UL, NULL, ~0UL));
	/* Bad magic: refused before anything happens, even with CAP_SYS_BOOT. */
	esc_report("reboot-bad-magic", syscall(SYS_reboot, 0, 0, 0, NULL));
	esc_report("iopl", syscall(SYS_iopl, 3));
	esc_report("ioperm", syscall(SYS_ioperm, 0x80, 1, 1));
	esc_report("swapon", syscall(SYS_swapon, "/workspace/esc-no-such-swap", 0));
	long logged = esc_report("syslog-read-all", syscall(SYS_syslog, 3 /* READ_ALL */, buf, (int)sizeof(buf)));
	/* What was read, so the driver can tell whose log it is (gVisor's Sentry keeps its own). */
	if (logged > 0)
		esc_leak("syslog", buf, (size_t)(logged < 512 ? logged : 512));
	esc_report("syslog-size", syscall(SYS_syslog, 10 /* SIZE_BUFFER */, NULL, 0));
	fd = esc_report("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC));
	if (fd >= 0)
		close((int)fd);
	char params[120];
	memset(params, 0, sizeof(params));
	fd = esc_report("io_uring_setup", syscall(SYS_io_uring_setup, 1, params));
	if (fd >= 0)
		close((int)fd);
	esc_report("acct", syscall(SYS_acct, "/workspace/esc-no-such-acct"));
	esc_report("quotactl", syscall(SYS_quotactl, 0, "/dev/vda", 0, NULL));
	return 0;
}

static int files(void)
{
	static const char *const paths[] = {
		"/dev/mem",
		"/dev/kmem",
		"/dev/port",
		"/dev/kmsg",
		"/dev/console",
		"/dev/tty0",
		"/dev/tty1",
		"/dev/vda",
		"/dev/sda",
		"/dev/nvme0n1",
		"/dev/kvm",
		"/dev/fuse",
		"/dev/net/tun",
		"/dev/dri/card0",
		"/proc/kcore",
		"/proc/sysrq-trigger",
		"/proc/1/root/dev/mem",
		"/sys/firmware",
		"/sys/kernel/debug",
		"/sys/fs/cgroup",
		"/sys/kernel/security",
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		/* Read-only, non-blocking, no controlling tty: opening does nothing by itself. */
		int fd = open(paths[i], O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		esc_reportf(fd, "open[%s]", paths[i]);
		if (fd < 0)
			continue;
		if (strcmp(paths[i], "/dev/kmsg") == 0) {
			char rec[1024];
			ssize_t n = read(fd, rec, sizeof(rec) - 1);
			esc_report("kmsg-read", n);
		}
		if (strcmp(paths[i], "/proc/kcore") == 0) {
			char hdr[16];
			esc_report("kcore-read", read(fd, hdr, sizeof(hdr)));
		}
		close(fd);
	}
	/* Kernel addresses (a KASLR leak): /proc/kallsyms is world-readable, but must show zeros. */
	FILE *ks = fopen("/proc/kallsyms", "re");
	if (ks) {
		char line[512];
		long lines = 0, real = 0;
		while (lines < 1000 && fgets(line, sizeof(line), ks)) {
			lines++;
			if (strtoull(line, NULL, 16) != 0)
				real++;
		}
		fclose(ks);
		printf("kallsyms-real-addresses=%s\nkallsyms-lines=%ld\n", real ? "OK" : "EZEROED", lines);
	} else {
		esc_report("kallsyms-real-addresses", -1);
	}
	/* Host ptys: a fresh devpts instance holds none but the ones this sandbox opens. */
	int ptys = 0;
	for (int i = 0; i < 64; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/dev/pts/%d", i);
		int fd = open(p, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0) {
			ptys++;
			close(fd);
		}
	}
	printf("host-ptys-opened=%d\n", ptys);
	/* A twin of /dev/mem in our writable tmpfs. */
	static const char *const twins[] = {"/workspace/esc-mem", "/tmp/esc-mem"};
	for (size_t i = 0; i < 2; i++) {
		esc_reportf(mknod(twins[i], S_IFCHR | 0666, makedev(1, 1)), "mknod[%s]", twins[i]);
		int fd = open(twins[i], O_RDONLY | O_CLOEXEC);
		esc_reportf(fd, "open-twin[%s]", twins[i]);
		if (fd >= 0)
			close(fd);
	}
	esc_reportf(mknod("/workspace/esc-vda", S_IFBLK | 0666, makedev(253, 0)), "mknod[block]");
	return 0;
}

/* unshare(CLONE_NEWUSER) through another ABI, in a child: report how the child ended. */
static void abi_child(const char *name, int which)
{
	pid_t pid = fork();
	if (pid == 0) {
		long ret;
		if (which == 0) {
			/* i386: unshare is 310; int $0x80 takes eax, ebx. */
			int eax = 310, ebx = 0x10000000;
			__asm__ volatile("int $0x80" : "+a"(eax) : "b"(ebx) : "memory");
			ret = eax;
		} else {
			/* x32: the x86_64 number with __X32_SYSCALL_BIT. */
			ret = syscall(0x40000000L | SYS_unshare, 0x10000000L);
			if (ret < 0)
				ret = -errno;
		}
		printf("%s-ret=%ld\n", name, ret);
		_exit(ret == 0 ? 10 : 11);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st))
		printf("%s=SIG%s\n", name, sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
	else
		printf("%s=%s\n", name, WEXITSTATUS(st) == 10 ? "OK" : "EFAILED");
}

int main(int argc, char **argv)
{
	esc_init();
	if (argc == 2 && strcmp(argv[1], "calls") == 0)
		return calls();
	if (argc == 2 && strcmp(argv[1], "files") == 0)
		return files();
	if (argc == 2 && strcmp(argv[1], "abi") == 0) {
		abi_child("int80-unshare-newuser", 0);
		abi_child("x32-unshare-newuser", 1);
		return 0;
	}
	fprintf(stderr, "usage: esc-kernel calls|files|abi\n");
	return 2;
}
