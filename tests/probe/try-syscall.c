/* try-syscall.c — a static test payload that calls system calls with harmless bad arguments and reports the errno. */
/*
 * Usage:  al-try-syscall NAME...         each case below, by name
 *         al-try-syscall all             every case, in table order
 *         al-try-syscall --list          each case with what the kernel answers when no filter stops it
 *         al-try-syscall tiocsti [FD]    ioctl(FD (0), TIOCSTI, "x"): pushes one byte if nothing stops it
 *         al-try-syscall tiocsti-hi [FD] the same with garbage in cmd's upper 32 bits (the kernel ignores them)
 *         al-try-syscall socket FAMILY TYPE [PROTOCOL]   FAMILY: unix inet inet6 netlink packet vsock
 *                                        bluetooth alg or a number; TYPE: stream dgram raw seqpacket or a number
 *         al-try-syscall int80           getpid through the i386 ABI (int $0x80)
 *         al-try-syscall x32             getpid through the x32 ABI (__X32_SYSCALL_BIT)
 *
 * Output: one line per call, "NAME errno=ENAME" or "NAME ret=N", flushed at once, so a
 * filter that kills the process (SIGSYS) leaves every earlier line intact. Exit 0 after
 * the calls, 2 on a usage error.
 *
 * How to read a result (the idea of bubblewrap's tests/try-syscall.c): every case passes
 * arguments the kernel rejects with EBADF, EFAULT, EINVAL, ESRCH… before it does anything,
 * so EPERM or ENOSYS means a filter answered instead. Many privileged calls check the
 * capability first and only then look at their arguments; for those the --list column
 * "nocap" is EPERM, and the case tells filtered from allowed only in a process that holds
 * the capability (e.g. root on the host, or the unit tests). Inside a sandbox — no
 * capabilities — use the cases whose "nocap" is not EPERM.
 *
 * Safety: each case was chosen so that, even run as root with no filter, it changes
 * nothing: mount with a NULL target, reboot with bad magic, kexec and module calls with
 * invalid flags or empty images, acct with an unmapped path (never NULL, which would switch
 * accounting off), clone with flags the kernel refuses before copying anything, vhangup
 * in a child that has no controlling terminal. Only "tiocsti" and "personality-*" have an
 * effect when allowed: tiocsti is the point of that test (run it on a pty you own);
 * personality changes are undone at once. Static, so it runs in any sandbox root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXIT_USAGE 2

/* Numbers newer than some build hosts' headers (x86_64). */
#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef SYS_statmount
#define SYS_statmount 457
#endif
#ifndef SYS_listmount
#define SYS_listmount 458
#endif
#ifndef SYS_mseal
#define SYS_mseal 462
#endif
#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif
#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_lookup_dcookie
#define SYS_lookup_dcookie 212
#endif
#ifndef X32_SYSCALL_BIT
#define X32_SYSCALL_BIT 0x40000000UL
#endif

#define CLONE_NEWUSER_	 0x10000000UL
#define CLONE_NEWNS_	 0x00020000UL
#define CLONE_NEWPID_	 0x20000000UL
#define CLONE_NEWNET_	 0x40000000UL
#define CLONE_NEWIPC_	 0x08000000UL
#define CLONE_NEWUTS_	 0x04000000UL
#define CLONE_NEWCGROUP_ 0x02000000UL
#define CLONE_THREAD_	 0x00010000UL
#define CLONE_VFORK_	 0x00004000UL
#define BAD		 (~0UL) /* every flag bit set: invalid for every call that checks its flags */
#define UNMAPPED	 1UL	/* an address in the never-mapped first page: EFAULT */
#define TIOCSTI_HI	 (0x100000000UL | TIOCSTI)

/*
 * Each case: the raw call and what Linux 6.x answers when no filter intervenes, without
 * capabilities (nocap) and with them (cap). "=" means the same as nocap. A kernel built
 * without the feature answers ENOSYS instead (e.g. no CONFIG_KEXEC, CONFIG_MODULES or
 * CONFIG_X86_IOPL_IOPERM: kexec_*, *_module, iopl, ioperm); so a test must expect exactly
 * EPERM from a denying filter, never "EPERM or ENOSYS", for these.
 */
struct tcase {
	const char *name;
	long nr;
	unsigned long a[6];
	const char *nocap, *cap;
};

static const struct tcase cases[] = {
	/* controls: allowed in every profile */
	{"close", SYS_close, {BAD}, "EBADF", "="},
	{"read", SYS_read, {BAD, 0, 0}, "EBADF", "="},
	{"openat", SYS_openat, {(unsigned long)-100, 0, 0}, "EFAULT", "="},
	{"fstat", SYS_fstat, {BAD, 0}, "EBADF", "="},
	{"ioctl", SYS_ioctl, {BAD, TCGETS, 0}, "EBADF", "="},
	{"clone", SYS_clone, {CLONE_THREAD_}, "EINVAL", "="},	      /* a thread without CLONE_SIGHAND */
	{"socket-unix", SYS_socket, {AF_UNIX, 99, 0}, "EINVAL", "="}, /* type 99: refused before the family */
	{"socketpair-unix", SYS_socketpair, {AF_UNIX, 99, 0, 0}, "EINVAL", "="},
	{"fchmodat2", SYS_fchmodat2, {BAD, 0, 0, BAD}, "EINVAL", "="},
	/* argument filters */
	{"clone-newuser", SYS_clone, {CLONE_NEWUSER_ | CLONE_THREAD_}, "EINVAL", "="},
	{"clone-newns", SYS_clone, {CLONE_NEWNS_ | CLONE_THREAD_}, "EINVAL", "="},
	{"clone-newpid", SYS_clone, {CLONE_NEWPID_ | CLONE_THREAD_}, "EINVAL", "="},
	{"clone-newnet", SYS_clone, {CLONE_NEWNET_ | CLONE_THREAD_}, "EINVAL", "="},
	{"clone-newipc", SYS_clone, {CLONE_NEWIPC_ | CLONE_THREAD_}, "EINVAL", "="},
	{"clone-newuts", SYS_clone, {CLONE_NEWUTS_ | CLONE_THREAD_}, "EINVAL", "="},
	{"clone-newcgroup", SYS_clone, {CLONE_NEWCGROUP_ | CLONE_THREAD_}, "EINVAL", "="},
	{"clone3", SYS_clone3, {0, 0}, "EINVAL", "="},
	{"ioctl-tiocsti", SYS_ioctl, {BAD, TIOCSTI, 0}, "EBADF", "="},
	{"ioctl-tiocsti-hi", SYS_ioctl, {BAD, TIOCSTI_HI, 0}, "EBADF", "="},
	{"ioctl-tioclinux", SYS_ioctl, {BAD, TIOCLINUX, 0}, "EBADF", "="},
	{"socket-inet", SYS_socket, {AF_INET, 99, 0}, "EINVAL", "="},
	{"socket-inet6", SYS_socket, {AF_INET6, 99, 0}, "EINVAL", "="},
	{"socket-netlink-route", SYS_socket, {AF_NETLINK, 99, 0}, "EINVAL", "="},
	{"socket-netlink-audit", SYS_socket, {AF_NETLINK, 99, 9}, "EINVAL", "="},
	{"socket-packet", SYS_socket, {AF_PACKET, 99, 0}, "EINVAL", "="},
	{"socket-vsock", SYS_socket, {40, 99, 0}, "EINVAL", "="},
	{"socket-bluetooth", SYS_socket, {31, 99, 0}, "EINVAL", "="},
	{"socket-alg", SYS_socket, {38, 99, 0}, "EINVAL", "="},
	{"socketpair-inet", SYS_socketpair, {AF_INET, 99, 0, 0}, "EINVAL", "="},
	/* personality-*: special-cased below (the change is undone) */
	{"personality-query", SYS_personality, {0xffffffffUL}, "ret", "="},
	{"personality-linux32", SYS_personality, {0x8}, "ret", "="},
	{"personality-addr-no-randomize", SYS_personality, {0x0040000}, "ret", "="},
	/* denied in every profile (EPERM in default, SIGSYS in strict) */
	{"mount", SYS_mount, {0, 0, 0, 0, 0}, "EFAULT", "="}, /* NULL target: fails before may_mount() */
	{"umount2", SYS_umount2, {0, BAD}, "EINVAL", "="},
	{"pivot_root", SYS_pivot_root, {0, 0}, "EPERM", "EFAULT"},
	{"move_mount", SYS_move_mount, {BAD, 0, BAD, 0, BAD}, "EPERM", "EINVAL"},
	{"open_tree", SYS_open_tree, {BAD, 0, BAD}, "EINVAL", "="},
	{"fsopen", SYS_fsopen, {0, BAD}, "EPERM", "EINVAL"},
	{"fsmount", SYS_fsmount, {BAD, BAD, 0}, "EPERM", "EINVAL"},
	{"fsconfig", SYS_fsconfig, {BAD, 0, 0, 0, 0}, "EINVAL", "="},
	{"fspick", SYS_fspick, {BAD, 0, BAD}, "EPERM", "EINVAL"},
	{"mount_setattr", SYS_mount_setattr, {BAD, 0, BAD, 0, 0}, "EINVAL", "="},
	{"ptrace", SYS_ptrace, {2 /* PEEKDATA */, 0, 0, 0}, "ESRCH", "="}, /* pid 0 never exists */
	{"process_vm_readv", SYS_process_vm_readv, {0, 0, 0, 0, 0, 1}, "EINVAL", "="},
	{"process_vm_writev", SYS_process_vm_writev, {0, 0, 0, 0, 0, 1}, "EINVAL", "="},
	{"pidfd_getfd", SYS_pidfd_getfd, {BAD, 0, 1}, "EINVAL", "="},
	{"kcmp", SYS_kcmp, {0, 0, 0, 0, 0}, "ESRCH", "="},
	{"keyctl", SYS_keyctl, {0xffff, 0, 0, 0, 0}, "EOPNOTSUPP", "="},
	{"add_key", SYS_add_key, {0, 0, 0, 0, 0}, "EFAULT", "="},
	{"request_key", SYS_request_key, {0, 0, 0, 0}, "EFAULT", "="},
	{"bpf", SYS_bpf, {BAD, 0, 0}, "EINVAL", "="},
	{"perf_event_open", SYS_perf_event_open, {0, 0, BAD, BAD, 0}, "EFAULT", "="},
	{"kexec_load", SYS_kexec_load, {0, BAD, 0, BAD}, "EPERM", "EINVAL"},
	{"kexec_file_load", SYS_kexec_file_load, {BAD, BAD, 0, 0, BAD}, "EPERM", "EINVAL"},
	{"init_module", SYS_init_module, {0, 0, 0}, "EPERM", "ENOEXEC"}, /* an empty image */
	{"finit_module", SYS_finit_module, {BAD, 0, BAD}, "EPERM", "EINVAL"},
	{"delete_module", SYS_delete_module, {0, 0}, "EPERM", "EFAULT"},
	{"create_module", SYS_create_module, {0, 0}, "ENOSYS", "="},
	{"get_kernel_syms", SYS_get_kernel_syms, {0}, "ENOSYS", "="},
	{"query_module", SYS_query_module, {0, 0, 0, 0, 0}, "ENOSYS", "="},
	{"nfsservctl", SYS_nfsservctl, {0, 0, 0}, "ENOSYS", "="},
	{"uselib", SYS_uselib, {0}, "ENOSYS", "="},		/* EFAULT where CONFIG_USELIB is on */
	{"userfaultfd", SYS_userfaultfd, {BAD}, "EINVAL", "="}, /* UFFD_USER_MODE_ONLY is among the bits */
	{"io_uring_setup", SYS_io_uring_setup, {0, 0}, "EFAULT", "="},
	{"io_uring_enter", SYS_io_uring_enter, {BAD, 0, 0, BAD, 0, 0}, "EINVAL", "="},
	{"io_uring_register", SYS_io_uring_register, {(unsigned long)-2, 0, 0, 0}, "EBADF", "="},
	{"acct", SYS_acct, {UNMAPPED}, "EPERM", "EFAULT"}, /* never NULL: that switches accounting off */
	{"swapon", SYS_swapon, {0, BAD}, "EINVAL", "="},
	{"swapoff", SYS_swapoff, {0}, "EPERM", "EFAULT"},
	{"reboot", SYS_reboot, {0, 0, 0, 0}, "EPERM", "EINVAL"}, /* bad magic */
	{"settimeofday", SYS_settimeofday, {UNMAPPED, 0}, "EFAULT", "="},
	{"clock_settime", SYS_clock_settime, {0x7fff, 0}, "EINVAL", "="},
	{"clock_adjtime", SYS_clock_adjtime, {0x7fff, 0}, "EFAULT", "="},
	{"adjtimex", SYS_adjtimex, {0}, "EFAULT", "="},
	{"syslog", SYS_syslog, {3 /* READ_ALL */, 0, 0}, "EPERM", "EINVAL"}, /* nocap: EINVAL if dmesg_restrict=0 */
	{"open_by_handle_at", SYS_open_by_handle_at, {BAD, 0, 0}, "EFAULT", "="}, /* before 6.9 nocap: EPERM */
	{"name_to_handle_at", SYS_name_to_handle_at, {BAD, 0, 0, 0, BAD}, "EINVAL", "="},
	{"quotactl", SYS_quotactl, {0, 0, 0, 0}, "ENODEV", "="},
	{"quotactl_fd", SYS_quotactl_fd, {BAD, 0, 0, 0}, "EBADF", "="},
	{"setns", SYS_setns, {BAD, 0}, "EBADF", "="},
	{"unshare", SYS_unshare, {CLONE_NEWUSER_ | CLONE_VFORK_}, "EINVAL", "="},
	{"fanotify_init", SYS_fanotify_init, {0x200 /* REPORT_FID */ | 0x80000000UL, 0}, "EINVAL", "="},
	{"lookup_dcookie", SYS_lookup_dcookie, {0, 0, 0}, "ENOSYS", "="}, /* removed in 6.10 */
	{"iopl", SYS_iopl, {4}, "EINVAL", "="},
	{"ioperm", SYS_ioperm, {BAD, 1, 0}, "EINVAL", "="},
	{"vhangup", SYS_vhangup, {0}, "EPERM", "ret"}, /* special-cased: in a child without a tty */
	/* denied by the default allowlist (EPERM in both profiles) */
	{"modify_ldt", SYS_modify_ldt, {1, 0, 0}, "EINVAL", "="},
	{"chroot", SYS_chroot, {0}, "EFAULT", "="},
	{"get_mempolicy", SYS_get_mempolicy, {0, 0, 0, 0, BAD}, "EINVAL", "="},
	{"process_madvise", SYS_process_madvise, {BAD, 0, 0, 0, 1}, "EINVAL", "="},
	{"memfd_secret", SYS_memfd_secret, {BAD}, "EINVAL", "="}, /* ENOSYS unless secretmem is on */
	/* allowed in both profiles (the IPC namespace is the sandbox's own) */
	{"shmget", SYS_shmget, {0 /* IPC_PRIVATE */, 0, 0}, "EINVAL", "="}, /* size 0: nothing made */
	/* allowed in default, not in strict */
	{"inotify_init1", SYS_inotify_init1, {BAD}, "EINVAL", "="},
	{"io_setup", SYS_io_setup, {0, 0}, "EFAULT", "="},
	{"setuid", SYS_setuid, {0xffffffffUL}, "EINVAL", "="},
	{"seccomp", SYS_seccomp, {0xffff, 0, 0}, "EINVAL", "="},
	{"futex_waitv", SYS_futex_waitv, {0, 0, BAD, 0, 0}, "EINVAL", "="},
	/* newer than libseccomp 2.5.4 knows: ENOSYS from the filter, or EPERM where it knows them */
	{"cachestat", SYS_cachestat, {BAD, 0, 0, BAD}, "EBADF", "="},
	{"statmount", SYS_statmount, {0, 0, 0, 0}, "EFAULT", "="},
	{"listmount", SYS_listmount, {0, 0, 0, 0}, "EFAULT", "="},
	{"mseal", SYS_mseal, {0, 0, BAD}, "EINVAL", "="},
};

static const char *errname(int e)
{
	static char buf[32];
	const char *n = strerrorname_np(e);
	if (n)
		return n;
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

static void report(const char *name, long r, int e)
{
	if (r < 0)
		printf("%s errno=%s\n", name, errname(e));
	else
		printf("%s ret=%ld\n", name, r);
	fflush(stdout);
}

static int usage(const char *msg)
{
	fprintf(stderr, "al-try-syscall: %s\n", msg);
	return EXIT_USAGE;
}

/* Dies of the same signal as a child that died of one (SIGSYS from a killing filter). */
static void mirror_death(int status)
{
	if (!WIFSIGNALED(status))
		return;
	fflush(stdout);
	signal(WTERMSIG(status), SIG_DFL);
	raise(WTERMSIG(status));
}

/* vhangup hangs up the caller's controlling terminal when allowed and privileged: call it
 * in a child that has just left the session, so it has no terminal to hang up. */
static void try_vhangup(void)
{
	int p[2];
	if (pipe(p) < 0) {
		report("vhangup-pipe", -1, errno);
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		int out[2] = {0, 0};
		if (setsid() < 0)
			out[0] = -2, out[1] = errno;
		else if ((out[0] = (int)syscall(SYS_vhangup)) < 0)
			out[1] = errno;
		if (write(p[1], out, sizeof(out)) != sizeof(out))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	int out[2] = {-3, 0}, st = 0;
	ssize_t n = pid < 0 ? -1 : read(p[0], out, sizeof(out));
	close(p[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	mirror_death(st);
	if (n != sizeof(out))
		report("vhangup-child", -1, pid < 0 ? errno : EIO);
	else if (out[0] == -2)
		report("vhangup-setsid", -1, out[1]);
	else
		report("vhangup", out[0], out[1]);
}

static void try_personality(const struct tcase *c)
{
	long r = syscall(SYS_personality, c->a[0]);
	int e = errno;
	if (r >= 0 && c->a[0] != 0xffffffffUL)
		syscall(SYS_personality, (unsigned long)r); /* undo */
	report(c->name, r, e);
}

static void run_case(const struct tcase *c)
{
	if (c->nr == SYS_vhangup) {
		try_vhangup();
		return;
	}
	if (c->nr == SYS_personality) {
		try_personality(c);
		return;
	}
	errno = 0;
	long r = syscall(c->nr, c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5]);
	int e = errno;
	if (c->nr == SYS_modify_ldt && r > 0 && (int)r < 0) {
		/* modify_ldt returns an int squeezed through "unsigned int": -EINVAL arrives as 4294967274 */
		e = -(int)r;
		r = -1;
	}
	report(c->name, r, e);
}

static const struct tcase *find_case(const char *name)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(cases[i].name, name) == 0)
			return &cases[i];
	return NULL;
}

static int parse_word(const char *s, const char *const *names, const int *values, size_t n, long *out)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0) {
			*out = values[i];
			return 0;
		}
	char *end;
	errno = 0;
	*out = strtol(s, &end, 0);
	return errno || end == s || *end ? -1 : 0;
}

/* socket FAMILY TYPE [PROTOCOL]: a real socket() call; the descriptor is closed at once. */
static int cmd_socket(int argc, char **argv)
{
	static const char *const fam_names[] = {"unix",	  "inet",  "inet6",	"netlink",
						"packet", "vsock", "bluetooth", "alg"};
	static const int fam_values[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, 40, 31, 38};
	static const char *const type_names[] = {"stream", "dgram", "raw", "seqpacket"};
	static const int type_values[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET};
	long fam, type, proto = 0;
	if (argc < 2 || argc > 3)
		return usage("socket FAMILY TYPE [PROTOCOL]");
	if (parse_word(argv[0], fam_names, fam_values, 8, &fam) < 0 ||
	    parse_word(argv[1], type_names, type_values, 4, &type) < 0 ||
	    (argc == 3 && parse_word(argv[2], NULL, NULL, 0, &proto) < 0))
		return usage("socket: unknown family, type or protocol");
	long r = syscall(SYS_socket, fam, type | SOCK_CLOEXEC, proto);
	report("socket", r, errno);
	if (r >= 0)
		close((int)r);
	return 0;
}

static int cmd_tiocsti(const char *name, unsigned long cmd, int argc, char **argv)
{
	long fd = 0;
	if (argc > 1 || (argc == 1 && parse_word(argv[0], NULL, NULL, 0, &fd) < 0))
		return usage("tiocsti [FD]");
	char c = 'x';
	long r = syscall(SYS_ioctl, fd, cmd, &c);
	report(name, r, errno);
	return 0;
}

/* getpid through the i386 entry (number 20 there). A filter for x86_64 only kills us. */
static void cmd_int80(void)
{
	long r = 20;
	__asm__ volatile("int $0x80" : "+a"(r) : : "memory", "r8", "r9", "r10", "r11");
	report("int80", r < 0 && r > -4096 ? -1 : r, r < 0 ? (int)-r : 0);
}

static int list_cases(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct tcase *c = &cases[i];
		printf("%s nocap=%s cap=%s\n", c->name, c->nocap, strcmp(c->cap, "=") ? c->cap : c->nocap);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage("usage: al-try-syscall NAME...|all|--list|tiocsti [FD]|tiocsti-hi [FD]|socket FAMILY TYPE "
			     "[PROTO]|int80|x32");
	const char *cmd = argv[1];
	if (strcmp(cmd, "--list") == 0)
		return list_cases();
	if (strcmp(cmd, "socket") == 0)
		return cmd_socket(argc - 2, argv + 2);
	if (strcmp(cmd, "tiocsti") == 0)
		return cmd_tiocsti(cmd, TIOCSTI, argc - 2, argv + 2);
	if (strcmp(cmd, "tiocsti-hi") == 0)
		return cmd_tiocsti(cmd, TIOCSTI_HI, argc - 2, argv + 2);
	if (strcmp(cmd, "int80") == 0) {
		cmd_int80();
		return 0;
	}
	if (strcmp(cmd, "x32") == 0) {
		long r = syscall((long)(X32_SYSCALL_BIT | 39 /* getpid */));
		report("x32", r, errno);
		return 0;
	}
	if (strcmp(cmd, "all") == 0) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			run_case(&cases[i]);
		return 0;
	}
	for (int i = 1; i < argc; i++)
		if (!find_case(argv[i]))
			return usage("unknown case (see --list)");
	for (int i = 1; i < argc; i++)
		run_case(find_case(argv[i]));
	return 0;
}
