/* test_seccomp.c — unit tests for the system call filter (src/kit/seccomp.c): tables, compilation, and the real filter loaded in forked children. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit/seccomp.h"
#include "policy/policy.h"

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef SYS_statmount
#define SYS_statmount 457
#endif
#define X32_BIT	    0x40000000L
#define NS_USER	    0x10000000UL
#define NS_NET	    0x40000000UL
#define THREAD	    0x00010000UL /* CLONE_THREAD without CLONE_SIGHAND: the kernel says EINVAL */
#define VFORK	    0x00004000UL /* not allowed in unshare: EINVAL */
#define KILLED(sig) (-(sig))

static const struct sc_options DEFAULT = {.profile = AL_SECCOMP_DEFAULT};
static const struct sc_options DEFAULT_INET = {.profile = AL_SECCOMP_DEFAULT, .allow_inet = true};
static const struct sc_options DEFAULT_URING = {.profile = AL_SECCOMP_DEFAULT, .allow_io_uring = true};
static const struct sc_options STRICT = {.profile = AL_SECCOMP_STRICT};
static const struct sc_options OFF = {.profile = AL_SECCOMP_OFF};

/* ---- running one call under a filter ----------------------------------------------- */

struct call {
	long nr;
	unsigned long a[6];
};

static long do_call(const struct call *c)
{
	return syscall(c->nr, c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5]);
}

/* getpid through the i386 entry point (int $0x80, number 20 there). */
static long int80_getpid(void)
{
	long r = 20;
	__asm__ volatile("int $0x80" : "+a"(r) : : "memory", "r8", "r9", "r10", "r11");
	return r;
}

/*
 * Builds the filter in the parent (as the supervisor does), loads it in a forked child
 * after no_new_privs (as the payload does), makes the call there and reports: the errno
 * (positive), 0 when the call succeeded, or KILLED(sig) when the child died of a signal.
 * nr == -1 means int80_getpid().
 */
static int errno_under(const struct sc_options *o, struct call c)
{
	struct sc_filter f;
	struct al_error err = {0};
	int r = sc_build(o, &f, &err);
	if (r < 0)
		fail_msg("sc_build: %s", err.msg);
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* cmocka's handlers are the test runner's: a fault here must kill this child, which the
		 * parent reads as KILLED(sig), not resume the runner in it. */
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGILL, SIG_DFL);
		close(p[0]);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || sc_load(&f) < 0)
			_exit(100);
		long ret = c.nr == -1 ? int80_getpid() : do_call(&c);
		int e = ret < 0 ? errno : 0;
		_exit(write(p[1], &e, sizeof(e)) == sizeof(e) ? 0 : 101);
	}
	close(p[1]);
	sc_free(&f);
	int e = -1000, st = 0;
	ssize_t n = read(p[0], &e, sizeof(e));
	close(p[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		return KILLED(WTERMSIG(st));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || n != sizeof(e))
		fail_msg("child failed: status 0x%x", st);
	return e;
}

#define CALL(nr_, ...) ((struct call){.nr = (nr_), .a = {__VA_ARGS__}})

/* ---- building ---------------------------------------------------------------------- */

static void build_each_profile(void **state)
{
	const struct sc_options *all[] = {&DEFAULT, &DEFAULT_INET, &DEFAULT_URING, &STRICT};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		struct sc_filter f;
		struct al_error err = {0};
		assert_int_equal(sc_build(all[i], &f, &err), 0);
		assert_non_null(f.prog.filter);
		assert_true(f.prog.len > 20 && f.prog.len <= 4096);
		assert_int_equal(f.profile, all[i]->profile);
		sc_free(&f);
		assert_null(f.prog.filter);
		assert_int_equal(f.prog.len, 0);
	}
}

/* The second build of a variant comes from the memo: the same program, in its own buffer. */
static void build_memo_copies(void **state)
{
	struct sc_filter a, b;
	assert_int_equal(sc_build(&STRICT, &a, NULL), 0);
	assert_int_equal(sc_build(&STRICT, &b, NULL), 0);
	assert_int_equal(a.prog.len, b.prog.len);
	assert_ptr_not_equal(a.prog.filter, b.prog.filter);
	assert_memory_equal(a.prog.filter, b.prog.filter, a.prog.len * sizeof(struct sock_filter));
	sc_free(&a);
	assert_int_equal(errno_under(&STRICT, CALL(SYS_close, (unsigned long)-1)), EBADF);
	sc_free(&b);
	/* Options select different programs. */
	assert_int_equal(sc_build(&DEFAULT, &a, NULL), 0);
	assert_int_equal(sc_build(&DEFAULT_INET, &b, NULL), 0);
	assert_true(a.prog.len != b.prog.len ||
		    memcmp(a.prog.filter, b.prog.filter, a.prog.len * sizeof(struct sock_filter)) != 0);
	sc_free(&a);
	sc_free(&b);
}

static void build_off_is_empty(void **state)
{
	struct sc_filter f;
	assert_int_equal(sc_build(&OFF, &f, NULL), 0);
	assert_int_equal(f.prog.len, 0);
	assert_null(f.prog.filter);
	assert_int_equal(f.profile, AL_SECCOMP_OFF);
	assert_int_equal(sc_load(&f), 0); /* loads nothing */
	sc_free(&f);
}

static void build_unknown_profile(void **state)
{
	struct sc_options o = {.profile = (enum al_seccomp_profile)42};
	struct sc_filter f;
	struct al_error err = {0};
	assert_int_equal(sc_build(&o, &f, &err), -EINVAL);
	assert_int_equal(err.code, -EINVAL);
	assert_non_null(strstr(err.msg, "seccomp"));
}

/* An empty program for a filtering profile (a failed build) must never load as "no filter". */
static void load_refuses_missing_filter(void **state)
{
	struct sc_filter f = {.profile = AL_SECCOMP_DEFAULT};
	assert_int_equal(sc_load(&f), -EINVAL);
	f.profile = AL_SECCOMP_STRICT;
	assert_int_equal(sc_load(&f), -EINVAL);
}

static void names(void **state)
{
	assert_string_equal(pol_seccomp_name(AL_SECCOMP_DEFAULT), "default");
	assert_string_equal(pol_seccomp_name(AL_SECCOMP_STRICT), "strict");
	assert_string_equal(pol_seccomp_name(AL_SECCOMP_OFF), "off");
	assert_string_equal(sc_action_name(SC_ACT_KILL), "kill");
	assert_string_equal(sc_action_name(SC_ACT_ENOSYS), "ENOSYS");
}

/* ---- the tables (pure) ------------------------------------------------------------- */

static void classify_spot_checks(void **state)
{
	assert_int_equal(sc_classify(&DEFAULT, "read"), SC_ACT_ALLOW);
	assert_int_equal(sc_classify(&STRICT, "read"), SC_ACT_ALLOW);
	assert_int_equal(sc_classify(&DEFAULT, "mount"), SC_ACT_EPERM);
	assert_int_equal(sc_classify(&STRICT, "mount"), SC_ACT_KILL);
	assert_int_equal(sc_classify(&DEFAULT, "clone3"), SC_ACT_ENOSYS);
	assert_int_equal(sc_classify(&STRICT, "clone3"), SC_ACT_ENOSYS);
	assert_int_equal(sc_classify(&DEFAULT, "clone"), SC_ACT_ARGS);
	assert_int_equal(sc_classify(&DEFAULT, "ioctl"), SC_ACT_ARGS);
	/* The IPC namespace's objects are the sandbox's own: allowed in both profiles. */
	assert_int_equal(sc_classify(&DEFAULT, "shmget"), SC_ACT_ALLOW);
	assert_int_equal(sc_classify(&STRICT, "shmget"), SC_ACT_ALLOW);
	assert_int_equal(sc_classify(&STRICT, "mq_open"), SC_ACT_ALLOW);
	assert_int_equal(sc_classify(&DEFAULT, "inotify_init1"), SC_ACT_ALLOW);
	assert_int_equal(sc_classify(&STRICT, "inotify_init1"), SC_ACT_EPERM);
	assert_int_equal(sc_classify(&DEFAULT, "modify_ldt"), SC_ACT_EPERM);
	assert_int_equal(sc_classify(&DEFAULT, "io_uring_setup"), SC_ACT_EPERM);
	assert_int_equal(sc_classify(&DEFAULT_URING, "io_uring_setup"), SC_ACT_ALLOW);
	assert_int_equal(sc_classify(&DEFAULT, "no_such_call"), SC_ACT_ENOSYS);
	assert_int_equal(sc_classify(&OFF, "mount"), SC_ACT_ALLOW);
	assert_true(sc_horizon() >= 435); /* at least clone3 */
}

/* Every call that sets a mode is argument-filtered in both profiles (issue 8), openat2 is
 * ENOSYS, and sc_mode_args names the arguments a translator needs. */
static void classify_setid_calls(void **state)
{
	static const char *const mode_calls[] = {"open",  "openat",  "creat", "mkdir",	"mkdirat",
						 "mknod", "mknodat", "chmod", "fchmod", "fchmodat"};
	const struct sc_options *profiles[] = {&DEFAULT, &DEFAULT_INET, &STRICT};
	for (size_t p = 0; p < 3; p++) {
		for (size_t i = 0; i < sizeof(mode_calls) / sizeof(mode_calls[0]); i++)
			assert_int_equal(sc_classify(profiles[p], mode_calls[i]), SC_ACT_ARGS);
		assert_int_equal(sc_classify(profiles[p], "openat2"), SC_ACT_ENOSYS);
		/* fchmodat2 (452): filtered where this libseccomp's horizon reaches it, else ENOSYS */
		enum sc_action a = sc_classify(profiles[p], "fchmodat2");
		assert_int_equal(a, sc_horizon() >= 452 ? SC_ACT_ARGS : SC_ACT_ENOSYS);
	}
	int mode, flags;
	assert_true(sc_mode_args("openat", &mode, &flags));
	assert_int_equal(mode, 3);
	assert_int_equal(flags, 2);
	assert_true(sc_mode_args("fchmodat2", &mode, &flags));
	assert_int_equal(mode, 2);
	assert_int_equal(flags, -1);
	assert_false(sc_mode_args("read", &mode, &flags));
	assert_false(sc_mode_args("openat2", &mode, &flags));
}

/* Over every x86_64 call this libseccomp knows: the always-denied calls are never allowed,
 * strict allows nothing that default does not, and strict kills only what default denies. */
static void classify_invariants(void **state)
{
	static const char *const must_deny[] = {"mount",
						"umount2",
						"pivot_root",
						"ptrace",
						"process_vm_readv",
						"process_vm_writev",
						"keyctl",
						"add_key",
						"request_key",
						"bpf",
						"perf_event_open",
						"kexec_load",
						"kexec_file_load",
						"init_module",
						"finit_module",
						"delete_module",
						"userfaultfd",
						"io_uring_setup",
						"io_uring_enter",
						"io_uring_register",
						"acct",
						"swapon",
						"swapoff",
						"reboot",
						"settimeofday",
						"clock_settime",
						"clock_adjtime",
						"adjtimex",
						"syslog",
						"open_by_handle_at",
						"name_to_handle_at",
						"quotactl",
						"setns",
						"unshare",
						"fanotify_init",
						"lookup_dcookie",
						"iopl",
						"ioperm",
						"vhangup",
						"create_module",
						"get_kernel_syms",
						"nfsservctl",
						"uselib",
						"move_mount",
						"open_tree",
						"fsopen",
						"fsmount",
						"fsconfig",
						"fspick",
						"mount_setattr",
						"pidfd_getfd",
						"kcmp"};
	for (size_t i = 0; i < sizeof(must_deny) / sizeof(must_deny[0]); i++) {
		assert_int_equal(sc_classify(&DEFAULT, must_deny[i]), SC_ACT_EPERM);
		assert_int_equal(sc_classify(&DEFAULT_INET, must_deny[i]), SC_ACT_EPERM);
		assert_int_equal(sc_classify(&STRICT, must_deny[i]), SC_ACT_KILL);
	}
	int h = sc_horizon(), known = 0;
	for (int nr = 0; nr <= h; nr++) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr);
		if (!name)
			continue;
		known++;
		enum sc_action d = sc_classify(&DEFAULT, name), s = sc_classify(&STRICT, name);
		if (s == SC_ACT_ALLOW && d != SC_ACT_ALLOW)
			fail_msg("%s: allowed in strict but %s in default", name, sc_action_name(d));
		if (s == SC_ACT_ARGS && d != SC_ACT_ARGS)
			fail_msg("%s: argument-filtered in strict but %s in default", name, sc_action_name(d));
		if (s == SC_ACT_KILL && d != SC_ACT_EPERM)
			fail_msg("%s: killed in strict but %s in default", name, sc_action_name(d));
		free(name);
	}
	assert_true(known > 300);
}

/* ---- the loaded filter: default profile --------------------------------------------- */

static void default_controls_pass(void **state)
{
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_close, (unsigned long)-1)), EBADF);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_ioctl, (unsigned long)-1, TCGETS, 0)), EBADF);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_clone, THREAD)), EINVAL);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_socket, AF_UNIX, SOCK_STREAM, 0)), 0);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_socketpair, AF_UNIX, 99, 0, 0)), EINVAL);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_personality, 0xffffffffUL)), 0);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_personality, 0x8 /* PER_LINUX32 */)), 0);
}

/* The same calls without the filter: proves each denial below is the filter's doing. */
static void off_gives_kernel_answers(void **state)
{
	assert_int_equal(errno_under(&OFF, CALL(SYS_mount, 0, 0, 0, 0, 0)), EFAULT);
	assert_int_equal(errno_under(&OFF, CALL(SYS_socket, AF_PACKET, 99, 0)), EINVAL);
	assert_int_equal(errno_under(&OFF, CALL(SYS_socket, AF_INET, 99, 0)), EINVAL);
	assert_int_equal(errno_under(&OFF, CALL(SYS_clone, NS_USER | THREAD)), EINVAL);
	assert_int_equal(errno_under(&OFF, CALL(SYS_clone3, 0, 0)), EINVAL);
	assert_int_equal(errno_under(&OFF, CALL(SYS_ioctl, (unsigned long)-1, TIOCSTI, 0)), EBADF);
	assert_int_equal(errno_under(&OFF, CALL(SYS_unshare, NS_USER | VFORK)), EINVAL);
	assert_int_equal(errno_under(&OFF, CALL(SYS_ptrace, 2, 0, 0, 0)), ESRCH);
	assert_int_equal(errno_under(&OFF, CALL(SYS_io_uring_setup, 0, 0)), EFAULT);
	assert_true(errno_under(&OFF, CALL(-1)) != KILLED(SIGSYS)); /* int $0x80 getpid */
}

static void default_denies_with_eperm(void **state)
{
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_mount, 0, 0, 0, 0, 0)), EPERM);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_ptrace, 2, 0, 0, 0)), EPERM);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_unshare, NS_USER | VFORK)), EPERM);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_setns, (unsigned long)-1, 0)), EPERM);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_io_uring_setup, 0, 0)), EPERM);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_bpf, (unsigned long)-1, 0, 0)), EPERM);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_socket, AF_PACKET, 99, 0)), EPERM);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_socket, 40 /* AF_VSOCK */, 99, 0)), EPERM);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_socketpair, AF_INET, 99, 0, 0)), EPERM);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_personality, 0x0040000 /* ADDR_NO_RANDOMIZE */)), EPERM);
}

static void default_clone_namespaces(void **state)
{
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_clone, NS_USER | THREAD)), EPERM);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_clone, NS_NET | THREAD)), EPERM);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_clone, 0x00020000UL /* NEWNS */ | THREAD)), EPERM);
	/* clone3 cannot be argument-filtered: ENOSYS sends glibc back to clone. */
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_clone3, 0, 0)), ENOSYS);
}

static void default_tty_ioctls(void **state)
{
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_ioctl, (unsigned long)-1, TIOCSTI, 0)), EPERM);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_ioctl, (unsigned long)-1, TIOCLINUX, 0)), EPERM);
	/* The kernel reads cmd as 32 bits: garbage above them must not smuggle TIOCSTI through. */
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_ioctl, (unsigned long)-1, (1UL << 32) | TIOCSTI, 0)), EPERM);
	assert_int_equal(errno_under(&STRICT, CALL(SYS_ioctl, (unsigned long)-1, TIOCSTI, 0)), EPERM);
}

static void default_network_families(void **state)
{
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_socket, AF_INET, SOCK_STREAM, 0)), EPERM);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_socket, AF_INET6, SOCK_DGRAM, 0)), EPERM);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_socket, AF_NETLINK, SOCK_RAW, 0)), EPERM);
	int inet = errno_under(&DEFAULT_INET, CALL(SYS_socket, AF_INET, SOCK_STREAM, 0));
	assert_true(inet != EPERM && inet >= 0);
	assert_int_equal(errno_under(&DEFAULT_INET, CALL(SYS_socket, AF_INET6, 99, 0)), EINVAL);
	assert_int_equal(errno_under(&DEFAULT_INET, CALL(SYS_socket, AF_NETLINK, 99, 0 /* ROUTE */)), EINVAL);
	assert_int_equal(errno_under(&DEFAULT_INET, CALL(SYS_socket, AF_NETLINK, 99, 9 /* AUDIT */)), EPERM);
	assert_int_equal(errno_under(&DEFAULT_INET, CALL(SYS_socket, AF_PACKET, 99, 0)), EPERM);
	/* The family is an int to the kernel: upper bits must not turn AF_UNIX's rule into a hole. */
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_socket, (1UL << 32) | AF_PACKET, 99, 0)), EPERM);
}

static void io_uring_opt_in(void **state)
{
	assert_int_equal(errno_under(&DEFAULT_URING, CALL(SYS_io_uring_setup, 0, 0)), EFAULT);
}

static void unknown_calls_get_enosys(void **state)
{
	/* statmount (457): above this libseccomp's horizon → ENOSYS; a newer one knows it → EPERM. */
	int want = sc_classify(&DEFAULT, "statmount") == SC_ACT_ENOSYS ? ENOSYS : EPERM;
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_statmount, 0, 0, 0, 0)), want);
	assert_int_equal(errno_under(&DEFAULT, CALL(sc_horizon() + 1, 0, 0, 0, 0)), ENOSYS);
	assert_int_equal(errno_under(&DEFAULT, CALL(1000)), ENOSYS);
}

static void foreign_abis_are_killed(void **state)
{
	assert_int_equal(errno_under(&DEFAULT, CALL(X32_BIT | 39 /* getpid */)), KILLED(SIGSYS));
	assert_int_equal(errno_under(&STRICT, CALL(X32_BIT | 39)), KILLED(SIGSYS));
	/* int $0x80: the filter kills it where the kernel has the i386 entry; a kernel without it
	 * (IA32 emulation off: a general protection fault, SIGSEGV, with no filter at all) has nothing
	 * to filter, and the call must fail the same way under the filter, never return. */
	int bare = errno_under(&OFF, CALL(-1));
	int want = bare == KILLED(SIGSEGV) ? KILLED(SIGSEGV) : KILLED(SIGSYS);
	if (bare == KILLED(SIGSEGV))
		print_message("note: this kernel has no i386 entry (int $0x80 faults without a filter)\n");
	assert_int_equal(errno_under(&DEFAULT, CALL(-1)), want);
	assert_int_equal(errno_under(&STRICT, CALL(-1)), want);
}

/* ---- the loaded filter: no set-id files (issue 8) ---------------------------------- */

struct setid_dir {
	char dir[64];
	char file[96];	/* exists, mode 0644 */
	char fresh[96]; /* never exists before a call that may create it */
	int dirfd, filefd;
};

static void setid_dir_open(struct setid_dir *d)
{
	strcpy(d->dir, "/tmp/al-test-seccomp-XXXXXX");
	assert_non_null(mkdtemp(d->dir));
	snprintf(d->file, sizeof(d->file), "%s/file", d->dir);
	snprintf(d->fresh, sizeof(d->fresh), "%s/fresh", d->dir);
	d->filefd = open(d->file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(d->filefd >= 0);
	d->dirfd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(d->dirfd >= 0);
}

/* What a call left behind at fresh: its mode bits, or -1 when nothing is there; removed after. */
static int setid_fresh_mode(struct setid_dir *d)
{
	struct stat st;
	if (lstat(d->fresh, &st) < 0)
		return -1;
	if (S_ISDIR(st.st_mode))
		assert_int_equal(rmdir(d->fresh), 0);
	else
		assert_int_equal(unlink(d->fresh), 0);
	return (int)(st.st_mode & 07777);
}

static int setid_file_mode(const struct setid_dir *d)
{
	struct stat st;
	assert_int_equal(stat(d->file, &st), 0);
	return (int)(st.st_mode & 07777);
}

static void setid_dir_close(struct setid_dir *d)
{
	close(d->filefd);
	close(d->dirfd);
	assert_int_equal(unlink(d->file), 0);
	assert_int_equal(rmdir(d->dir), 0);
}

#define UL(x) ((unsigned long)(x))
#define HI    ((unsigned long)1 << 32) /* garbage the kernel ignores above a 32-bit flags or 16-bit mode */

/* The control: with no filter every one of these makes a set-id file, so the denials below
 * are the filter's doing (and the judge, a stat, can see a set-id bit). */
static void off_makes_setid_files(void **state)
{
	struct setid_dir d;
	setid_dir_open(&d);
	umask(022);
	assert_int_equal(errno_under(&OFF, CALL(SYS_chmod, UL(d.file), 04755)), 0);
	assert_int_equal(setid_file_mode(&d), 04755);
	assert_int_equal(errno_under(&OFF, CALL(SYS_fchmod, UL(d.filefd), 02755)), 0);
	assert_int_equal(setid_file_mode(&d), 02755);
	assert_int_equal(errno_under(&OFF, CALL(SYS_open, UL(d.fresh), O_WRONLY | O_CREAT, 04755)), 0);
	assert_int_equal(setid_fresh_mode(&d), 04755);
	assert_int_equal(errno_under(&OFF, CALL(SYS_mknod, UL(d.fresh), S_IFREG | 04755, 0)), 0);
	assert_int_equal(setid_fresh_mode(&d), 04755);
	setid_dir_close(&d);
}

static void setid_modes_denied(const struct sc_options *o)
{
	struct setid_dir d;
	setid_dir_open(&d);
	umask(022);
	/* changing the mode of an existing file */
	assert_int_equal(errno_under(o, CALL(SYS_chmod, UL(d.file), 04755)), EPERM);
	assert_int_equal(errno_under(o, CALL(SYS_chmod, UL(d.file), 02755)), EPERM);
	assert_int_equal(errno_under(o, CALL(SYS_chmod, UL(d.file), HI | 04755)), EPERM);
	assert_int_equal(errno_under(o, CALL(SYS_fchmod, UL(d.filefd), 04700)), EPERM);
	assert_int_equal(errno_under(o, CALL(SYS_fchmodat, UL(AT_FDCWD), UL(d.file), 02700)), EPERM);
	int want = sc_classify(o, "fchmodat2") == SC_ACT_ENOSYS ? ENOSYS : EPERM;
	assert_int_equal(errno_under(o, CALL(SYS_fchmodat2, UL(d.dirfd), UL("file"), 04755, 0)), want);
	assert_int_equal(setid_file_mode(&d), 0644);
	/* the same calls without a set-id bit: allowed (controls) */
	assert_int_equal(errno_under(o, CALL(SYS_chmod, UL(d.file), 01755)), 0);
	assert_int_equal(errno_under(o, CALL(SYS_chmod, UL(d.file), HI | 0755)), 0);
	assert_int_equal(errno_under(o, CALL(SYS_fchmod, UL(d.filefd), 0700)), 0);
	assert_int_equal(errno_under(o, CALL(SYS_fchmodat, UL(AT_FDCWD), UL(d.file), 0640)), 0);
	assert_int_equal(setid_file_mode(&d), 0640);
	/* making a file, a node or a directory with a set-id mode: refused, nothing made */
	const struct call make[] = {
		CALL(SYS_open, UL(d.fresh), O_WRONLY | O_CREAT, 04755),
		CALL(SYS_open, UL(d.fresh), O_WRONLY | O_CREAT | O_EXCL, HI | 02755),
		CALL(SYS_open, UL(d.dir), O_WRONLY | O_TMPFILE, 04755),
		CALL(SYS_openat, UL(d.dirfd), UL("fresh"), O_RDWR | O_CREAT, 06755),
		CALL(SYS_openat, UL(AT_FDCWD), UL(d.dir), O_RDWR | O_TMPFILE, 02700),
		CALL(SYS_creat, UL(d.fresh), 04755),
		CALL(SYS_mknod, UL(d.fresh), S_IFREG | 04755, 0),
		CALL(SYS_mknodat, UL(d.dirfd), UL("fresh"), S_IFREG | 02755, 0),
		CALL(SYS_mkdir, UL(d.fresh), 02755),
		CALL(SYS_mkdirat, UL(d.dirfd), UL("fresh"), 04755),
	};
	for (size_t i = 0; i < sizeof(make) / sizeof(make[0]); i++) {
		int e = errno_under(o, make[i]);
		if (e != EPERM || setid_fresh_mode(&d) != -1)
			fail_msg("set-id creation #%zu: errno %d, want EPERM and nothing made", i, e);
	}
	/* openat2's mode is out of the filter's sight: ENOSYS, libc falls back to openat */
	assert_int_equal(errno_under(o, CALL(SYS_openat2, UL(AT_FDCWD), UL(d.fresh), 0, 0)), ENOSYS);
	/* controls: plain modes, and a set-id "mode" where no file is made (the kernel ignores it) */
	assert_int_equal(errno_under(o, CALL(SYS_open, UL(d.fresh), O_WRONLY | O_CREAT, 0755)), 0);
	assert_int_equal(setid_fresh_mode(&d), 0755);
	assert_int_equal(errno_under(o, CALL(SYS_openat, UL(d.dirfd), UL("file"), O_RDONLY, 04755)), 0);
	assert_int_equal(errno_under(o, CALL(SYS_openat, UL(d.dirfd), UL("file"), O_RDONLY | HI, 04755)), 0);
	assert_int_equal(errno_under(o, CALL(SYS_creat, UL(d.fresh), 0600)), 0);
	assert_int_equal(setid_fresh_mode(&d), 0600);
	assert_int_equal(errno_under(o, CALL(SYS_mknod, UL(d.fresh), S_IFREG | 0644, 0)), 0);
	assert_int_equal(setid_fresh_mode(&d), 0644);
	assert_int_equal(errno_under(o, CALL(SYS_mkdirat, UL(d.dirfd), UL("fresh"), 01777)), 0);
	assert_int_equal(setid_fresh_mode(&d), 01755);
	setid_dir_close(&d);
}

static void default_denies_setid_modes(void **state)
{
	setid_modes_denied(&DEFAULT);
	setid_modes_denied(&DEFAULT_INET);
}

static void strict_denies_setid_modes(void **state)
{
	setid_modes_denied(&STRICT);
}

/* ---- the loaded filter: strict ----------------------------------------------------- */

static void strict_kills_the_denied_list(void **state)
{
	assert_int_equal(errno_under(&STRICT, CALL(SYS_close, (unsigned long)-1)), EBADF);
	assert_int_equal(errno_under(&STRICT, CALL(SYS_mount, 0, 0, 0, 0, 0)), KILLED(SIGSYS));
	assert_int_equal(errno_under(&STRICT, CALL(SYS_ptrace, 2, 0, 0, 0)), KILLED(SIGSYS));
	assert_int_equal(errno_under(&STRICT, CALL(SYS_unshare, NS_USER | VFORK)), KILLED(SIGSYS));
	/* Not on the list: the allowlist's EPERM, the argument filters' EPERM, clone3's ENOSYS. */
	assert_int_equal(errno_under(&STRICT, CALL(SYS_inotify_init1, (unsigned long)-1)), EPERM);
	assert_int_equal(errno_under(&DEFAULT, CALL(SYS_inotify_init1, (unsigned long)-1)), EINVAL);
	assert_int_equal(errno_under(&STRICT, CALL(SYS_shmget, 0, 0, 0)), EINVAL);
	assert_int_equal(errno_under(&STRICT, CALL(SYS_clone, NS_USER | THREAD)), EPERM);
	assert_int_equal(errno_under(&STRICT, CALL(SYS_clone3, 0, 0)), ENOSYS);
	assert_int_equal(errno_under(&STRICT, CALL(SYS_personality, 0x8)), EPERM);
}

/* A real program runs under each profile: exec, the dynamic loader, libc start-up, a pipe. */
static void programs_run(void **state)
{
	const struct sc_options *all[] = {&DEFAULT, &STRICT};
	for (size_t i = 0; i < 2; i++) {
		struct sc_filter f;
		assert_int_equal(sc_build(all[i], &f, NULL), 0);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			int devnull = open("/dev/null", O_WRONLY);
			if (devnull >= 0)
				dup2(devnull, 1);
			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || sc_load(&f) < 0)
				_exit(100);
			execl("/bin/sh", "sh", "-c", "echo hi | cat && ls / >/dev/null && exit 7", (char *)NULL);
			_exit(101);
		}
		sc_free(&f);
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 7);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(build_each_profile),
		cmocka_unit_test(build_memo_copies),
		cmocka_unit_test(build_off_is_empty),
		cmocka_unit_test(build_unknown_profile),
		cmocka_unit_test(load_refuses_missing_filter),
		cmocka_unit_test(names),
		cmocka_unit_test(classify_spot_checks),
		cmocka_unit_test(classify_invariants),
		cmocka_unit_test(classify_setid_calls),
		cmocka_unit_test(default_controls_pass),
		cmocka_unit_test(off_gives_kernel_answers),
		cmocka_unit_test(default_denies_with_eperm),
		cmocka_unit_test(default_clone_namespaces),
		cmocka_unit_test(default_tty_ioctls),
		cmocka_unit_test(default_network_families),
		cmocka_unit_test(io_uring_opt_in),
		cmocka_unit_test(unknown_calls_get_enosys),
		cmocka_unit_test(foreign_abis_are_killed),
		cmocka_unit_test(off_makes_setid_files),
		cmocka_unit_test(default_denies_setid_modes),
		cmocka_unit_test(strict_denies_setid_modes),
		cmocka_unit_test(strict_kills_the_denied_list),
		cmocka_unit_test(programs_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
