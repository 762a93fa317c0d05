/* test_landlock.c — Landlock enforced for real: a forked child confines itself with ll_build and
 * ll_restrict and tries things; the parent judges from outside (exit record, files, listeners).
 *
 * Every denial has a control: the same probe run unconfined (or with the layer off) succeeds,
 * so a test here fails if Landlock is not what refused. Checks the running kernel's ABI cannot
 * enforce are skipped with a message naming the ABI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "skip.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "kit/landlock.h"

/* The kernel's bit values, spelled out here independently of landlock.c. */
#define A_EXECUTE    (1ULL << 0)
#define A_WRITE_FILE (1ULL << 1)
#define A_READ_FILE  (1ULL << 2)
#define A_READ_DIR   (1ULL << 3)
#define A_MAKE_CHAR  (1ULL << 6)
#define A_MAKE_DIR   (1ULL << 7)
#define A_MAKE_REG   (1ULL << 8)
#define A_MAKE_BLOCK (1ULL << 11)
#define A_REFER	     (1ULL << 13)
#define A_TRUNCATE   (1ULL << 14)
#define A_IOCTL_DEV  (1ULL << 15)
#define A_FILE_ONLY  (A_EXECUTE | A_WRITE_FILE | A_READ_FILE | A_TRUNCATE | A_IOCTL_DEV)

#define MARKER ".airlock-test-marker"

static int g_kernel_abi; /* min(kernel, LL_ABI_MAX) */
static int g_abi;	 /* the ABI this round confines with (ll_spec.max_abi): g_kernel_abi, then less */

static struct {
	char base[256]; /* short, so every fixture path fits in PATH_MAX */
	char ro[PATH_MAX], rw[PATH_MAX], outside[PATH_MAX], single[PATH_MAX];
	struct ll_path paths[9];
	struct ll_spec spec; /* filesystem rules only */
} F;

/* ---- fixture -------------------------------------------------------------------------- */

static void fx_path(char *out, const char *rel)
{
	snprintf(out, PATH_MAX, "%s/%s", F.base, rel);
}

static void put_file(const char *rel, const char *text)
{
	char p[PATH_MAX];
	fx_path(p, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void put_dir(const char *rel)
{
	char p[PATH_MAX];
	fx_path(p, rel);
	assert_int_equal(mkdir(p, 0777), 0);
}

/* The file's content ("" if it is empty, NULL if it does not exist). */
static const char *slurp(const char *rel)
{
	static char buf[256];
	char p[PATH_MAX];
	fx_path(p, rel);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static bool exists(const char *rel)
{
	char p[PATH_MAX];
	struct stat st;
	fx_path(p, rel);
	return lstat(p, &st) == 0;
}

static int setup(void **state)
{
	print_message("Landlock: kernel ABI %d; this round confines with ABI %d\n", ll_abi(), g_abi);
	const char *tmp = getenv("TMPDIR");
	snprintf(F.base, sizeof(F.base), "%s/airlock-ll-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(F.base))
		return -1;
	put_file(MARKER, "");
	put_dir("ro");
	put_file("ro/file.txt", "ro-data");
	put_dir("rw");
	put_file("rw/file.txt", "rw-data");
	put_file("rw/trunc.txt", "to-be-truncated");
	put_dir("rw/a");
	put_dir("rw/b");
	put_file("rw/a/moveme", "moving");
	put_dir("outside");
	put_file("outside/canary.txt", "canary");
	put_file("single.txt", "single");
	/* DAC allows everything here, so only Landlock can refuse. */
	assert_int_equal(chmod(F.base, 0777), 0);
	fx_path(F.ro, "ro");
	fx_path(F.rw, "rw");
	fx_path(F.outside, "outside");
	fx_path(F.single, "single.txt");
	size_t n = 0;
	F.paths[n++] = (struct ll_path){F.ro, false, false};
	F.paths[n++] = (struct ll_path){F.rw, true, false};
	F.paths[n++] = (struct ll_path){F.single, false, false};		/* a regular file, read-only */
	F.paths[n++] = (struct ll_path){"/nonexistent/airlock-ll", true, true}; /* optional, absent */
	F.paths[n++] = (struct ll_path){"/dev/null", true, false};		/* a char device, read-write */
	F.paths[n++] = (struct ll_path){"/dev/zero", false, false};		/* a char device, read-only */
	F.paths[n++] = (struct ll_path){"/dev/ptmx", true, true};		/* char device or symlink */
	F.paths[n++] = (struct ll_path){"/dev/pts", true, true};
	F.spec = (struct ll_spec){.paths = F.paths, .npaths = n, .max_abi = g_abi};
	return 0;
}

static int rm_entry(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(p) : unlink(p);
}

/* Removes only our own marked directory, never crossing into another mount. */
static int teardown(void **state)
{
	char m[PATH_MAX];
	fx_path(m, MARKER);
	if (!F.base[0] || access(m, F_OK) != 0)
		return 0;
	return nftw(F.base, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* ---- running a probe confined ----------------------------------------------------------- */

struct probe_arg {
	const char *a, *b;
	int n;
};
typedef int (*probe_fn)(const struct probe_arg *arg); /* 0 or an errno */

enum stage {
	ST_BUILD = 1,
	ST_RESTRICT,
	ST_RAN
};
struct outcome {
	int stage;
	int value; /* ST_RAN: the probe's result; otherwise -errno of the failed step */
};

/* Runs fn in a forked child: confined by spec (ll_build, no_new_privs, ll_restrict), or bare
 * when spec is NULL. The child only makes system calls and _exits. */
static struct outcome run_probe(const struct ll_spec *spec, probe_fn fn, const struct probe_arg *arg)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct outcome o = {ST_RAN, 0};
		if (spec) {
			struct ll_result res;
			int fd = ll_build(spec, &res);
			if (fd < 0) {
				o = (struct outcome){ST_BUILD, fd};
			} else if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
				o = (struct outcome){ST_RESTRICT, -errno};
			} else {
				int r = ll_restrict(fd);
				if (r < 0)
					o = (struct outcome){ST_RESTRICT, r};
			}
		}
		if (o.stage == ST_RAN)
			o.value = fn(arg);
		_exit(write(p[1], &o, sizeof(o)) == sizeof(o) ? 0 : 1);
	}
	close(p[1]);
	struct outcome o = {0, 0};
	ssize_t n = read(p[0], &o, sizeof(o));
	close(p[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(n, (ssize_t)sizeof(o));
	return o;
}

/* The probe's errno when run confined (must have been set up), or when bare. */
static int confined(const struct ll_spec *spec, probe_fn fn, const struct probe_arg *arg)
{
	struct outcome o = run_probe(spec, fn, arg);
	if (o.stage != ST_RAN)
		fail_msg("confining failed at stage %d: %s", o.stage, strerror(-o.value));
	return o.value;
}

static int bare(probe_fn fn, const struct probe_arg *arg)
{
	return run_probe(NULL, fn, arg).value;
}

#define expect_errno(got, want)                                                                            \
	do {                                                                                               \
		int g_ = (got), w_ = (want);                                                               \
		if (g_ != w_)                                                                              \
			fail_msg("%s: got %s (%d), want %s (%d)", #got, g_ ? strerror(g_) : "success", g_, \
				 w_ ? strerror(w_) : "success", w_);                                       \
	} while (0)

static bool need_abi(int abi, const char *what)
{
	if (g_abi >= abi)
		return true;
	print_message("SKIP check (Landlock ABI %d < %d): %s\n", g_abi, abi, what);
	return false;
}

/* A macro, so that the skip names the case (tests/unit/skip.h). */
#define need_landlock()                                         \
	do {                                                    \
		if (g_abi < 1)                                  \
			AL_SKIP("this kernel has no Landlock"); \
	} while (0)

/* ---- probes (child side: system calls only) ------------------------------------------- */

static int p_read(const struct probe_arg *a)
{
	char buf[64];
	int fd = open(a->a, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	int r = read(fd, buf, sizeof(buf)) < 0 ? errno : 0;
	close(fd);
	return r;
}

static int p_list(const struct probe_arg *a)
{
	char buf[1024];
	int fd = open(a->a, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	int r = syscall(SYS_getdents64, fd, buf, sizeof(buf)) < 0 ? errno : 0;
	close(fd);
	return r;
}

static int write_fd(int fd)
{
	if (fd < 0)
		return errno;
	int r = write(fd, "x", 1) == 1 ? 0 : errno;
	close(fd);
	return r;
}

static int p_append(const struct probe_arg *a)
{
	return write_fd(open(a->a, O_WRONLY | O_APPEND | O_CLOEXEC));
}

static int p_create(const struct probe_arg *a)
{
	return write_fd(open(a->a, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
}

static int p_mkdir(const struct probe_arg *a)
{
	return mkdir(a->a, 0755) < 0 ? errno : 0;
}

static int p_unlink(const struct probe_arg *a)
{
	return unlink(a->a) < 0 ? errno : 0;
}

static int p_rename(const struct probe_arg *a)
{
	return rename(a->a, a->b) < 0 ? errno : 0;
}

static int p_link(const struct probe_arg *a)
{
	return link(a->a, a->b) < 0 ? errno : 0;
}

static int p_truncate(const struct probe_arg *a)
{
	return truncate(a->a, 0) < 0 ? errno : 0;
}

static int p_tcgets(const struct probe_arg *a)
{
	struct termios t;
	int fd = open(a->a, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	int r = ioctl(fd, TCGETS, &t) < 0 ? errno : 0;
	close(fd);
	return r;
}

/* What a terminal program does: a new pty pair, its ioctls, the slave's termios. */
static int p_pty(const struct probe_arg *a)
{
	char name[64];
	struct termios t;
	struct winsize ws = {.ws_row = 24, .ws_col = 80};
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return errno;
	int r = 0, s = -1;
	if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof(name)) != 0)
		r = errno ? errno : EIO;
	else if ((s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		r = errno;
	else if (tcgetattr(s, &t) < 0 || ioctl(m, TIOCSWINSZ, &ws) < 0 || ioctl(s, TIOCGWINSZ, &ws) < 0)
		r = errno;
	if (s >= 0)
		close(s);
	close(m);
	return r;
}

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sa;
}

static int p_tcp_connect(const struct probe_arg *a)
{
	struct sockaddr_in sa = loopback(a->n);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	int r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? errno : 0;
	close(fd);
	return r;
}

static int p_tcp_bind(const struct probe_arg *a)
{
	struct sockaddr_in sa = loopback(0);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? errno : 0;
	close(fd);
	return r;
}

static int p_udp_send(const struct probe_arg *a)
{
	struct sockaddr_in sa = loopback(a->n);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	int r = sendto(fd, "u", 1, 0, (struct sockaddr *)&sa, sizeof(sa)) == 1 ? 0 : errno;
	close(fd);
	return r;
}

static int p_kill_parent(const struct probe_arg *a)
{
	(void)a;
	return kill(getppid(), 0) < 0 ? errno : 0;
}

/* Signals stay allowed inside the domain: a child of the confined process can be signalled. */
static int p_kill_own_child(const struct probe_arg *a)
{
	(void)a;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return errno;
	pid_t c = fork();
	if (c < 0)
		return errno;
	if (c == 0) {
		char b;
		close(p[1]);
		_exit(read(p[0], &b, 1) == 0 ? 0 : 1); /* waits for EOF, in case the kill is refused */
	}
	close(p[0]);
	int r = kill(c, SIGKILL) < 0 ? errno : 0;
	close(p[1]);
	waitpid(c, NULL, 0);
	return r;
}

static socklen_t abstract_addr(struct sockaddr_un *su, const char *name)
{
	memset(su, 0, sizeof(*su));
	su->sun_family = AF_UNIX;
	size_t n = strlen(name);
	memcpy(su->sun_path + 1, name, n); /* sun_path[0] == 0: the abstract namespace */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static int p_abstract_connect(const struct probe_arg *a)
{
	struct sockaddr_un su;
	socklen_t len = abstract_addr(&su, a->a);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	int r = connect(fd, (struct sockaddr *)&su, len) < 0 ? errno : 0;
	close(fd);
	return r;
}

/* An abstract socket made inside the domain stays reachable from it. */
static int p_abstract_own(const struct probe_arg *a)
{
	struct sockaddr_un su;
	socklen_t len = abstract_addr(&su, a->a);
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return errno;
	int r = bind(l, (struct sockaddr *)&su, len) < 0 || listen(l, 1) < 0 ? errno : 0;
	if (r == 0)
		r = p_abstract_connect(a);
	close(l);
	return r;
}

/* ---- pure parts ----------------------------------------------------------------------- */

static void test_rights_per_abi(void **state)
{
	assert_int_equal(ll_fs_handled(0), 0);
	assert_int_equal(ll_fs_handled(1) & (A_REFER | A_TRUNCATE | A_IOCTL_DEV), 0);
	assert_int_equal(ll_fs_handled(2) & (A_REFER | A_TRUNCATE | A_IOCTL_DEV), A_REFER);
	assert_int_equal(ll_fs_handled(3) & (A_REFER | A_TRUNCATE | A_IOCTL_DEV), A_REFER | A_TRUNCATE);
	assert_int_equal(ll_fs_handled(4), ll_fs_handled(3));
	assert_int_equal(ll_fs_handled(5), ll_fs_handled(3) | A_IOCTL_DEV);
	assert_int_equal(ll_fs_handled(7), ll_fs_handled(5));
	assert_int_equal(ll_fs_handled(1), 0x1fff); /* every ABI 1 right */
	for (int abi = 1; abi <= LL_ABI_MAX; abi++) {
		uint64_t h = ll_fs_handled(abi);
		for (int w = 0; w < 2; w++)
			for (int d = 0; d < 2; d++) {
				uint64_t r = ll_fs_rule_rights(abi, w, d);
				assert_int_equal(r & ~h, 0);  /* never beyond what the ABI handles */
				assert_true(r & A_READ_FILE); /* never empty (ENOMSG) */
				assert_int_equal(r & (A_MAKE_CHAR | A_MAKE_BLOCK), 0);
				if (!d)
					assert_int_equal(r & ~A_FILE_ONLY, 0); /* else EINVAL on a file */
				if (!w)
					assert_int_equal(r, A_EXECUTE | A_READ_FILE | (d ? A_READ_DIR : 0));
			}
	}
	uint64_t rwdir = ll_fs_rule_rights(7, true, true);
	assert_true((rwdir & (A_WRITE_FILE | A_MAKE_REG | A_MAKE_DIR | A_REFER | A_TRUNCATE | A_IOCTL_DEV)) ==
		    (A_WRITE_FILE | A_MAKE_REG | A_MAKE_DIR | A_REFER | A_TRUNCATE | A_IOCTL_DEV));
	assert_int_equal(ll_fs_rule_rights(7, true, false),
			 A_EXECUTE | A_READ_FILE | A_WRITE_FILE | A_TRUNCATE | A_IOCTL_DEV);
	assert_int_equal(ll_fs_rule_rights(2, true, false), A_EXECUTE | A_READ_FILE | A_WRITE_FILE);
}

static const struct ll_path *find(const struct ll_path *v, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].path, path) == 0)
			return &v[i];
	return NULL;
}

static void test_default_paths(void **state)
{
	const char *ro[] = {"/opt/data"}, *rw[] = {"/workspace/out", "/srv/cache"};
	struct ll_path *v = NULL;
	size_t n = 0;
	assert_int_equal(ll_default_paths(&v, &n, ro, 1, rw, 2), 0);
	/* /usr is optional: an image may have none (busybox with /bin alone). */
	struct {
		const char *path;
		bool writable, optional;
	} want[] = {
		{"/", false, false},	     {"/usr", false, true},
		{"/etc", false, false},	     {"/proc", false, false},
		{"/dev", false, false},	     {"/lib", false, true},
		{"/bin", false, true},	     {"/workspace", true, false},
		{"/tmp", true, false},	     {"/dev/pts", true, false},
		{"/dev/null", true, true},   {"/dev/urandom", true, true},
		{"/dev/tty", true, true},    {"/dev/ptmx", true, true},
		{"/opt/data", false, false}, {"/workspace/out", true, false},
		{"/srv/cache", true, false},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct ll_path *p = find(v, n, want[i].path);
		if (!p)
			fail_msg("%s missing from the default rules", want[i].path);
		if (p->writable != want[i].writable || p->optional != want[i].optional)
			fail_msg("%s: writable %d optional %d, want %d %d", p->path, p->writable, p->optional,
				 want[i].writable, want[i].optional);
	}
	/* Nothing else is writable: the system, /etc, /proc and /dev itself stay read-only. */
	static const char *const writable[] = {"/workspace", "/tmp",	    "/dev/pts",	      "/dev/null", "/dev/zero",
					       "/dev/full",  "/dev/random", "/dev/urandom",   "/dev/tty",  "/dev/ptmx",
					       "/dev/shm",   "/dev/mqueue", "/workspace/out", "/srv/cache"};
	for (size_t i = 0; i < n; i++) {
		assert_true(v[i].path[0] == '/');
		bool ok = !v[i].writable;
		for (size_t j = 0; !ok && j < sizeof(writable) / sizeof(writable[0]); j++)
			ok = strcmp(v[i].path, writable[j]) == 0;
		if (!ok)
			fail_msg("%s is writable", v[i].path);
	}
	assert_int_equal(n, 23 + 3);		/* "/" and the 22 layout paths, then the binds */
	assert_ptr_equal(v[n - 1].path, rw[1]); /* borrowed, not copied */
	free(v);
	assert_int_equal(ll_default_paths(&v, &n, NULL, 0, NULL, 0), 0);
	assert_null(find(v, n, "/opt/data"));
	free(v);
}

/* ---- ll_build in the parent (creating a ruleset confines nothing) ---------------------- */

static int lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(fd);
	return fd;
}

static void test_build_result(void **state)
{
	struct ll_result res;
	if (g_abi < 1) {
		assert_int_equal(ll_build(&F.spec, &res), -EOPNOTSUPP);
		assert_int_equal(res.abi, 0);
		AL_SKIP("this kernel has no Landlock (ll_build refuses, as it must)");
	}
	struct ll_spec s = F.spec;
	s.deny_tcp = true;
	s.scope = true;
	int fd = ll_build(&s, &res);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	assert_int_equal(res.abi, g_abi);
	assert_true(res.fs);
	assert_int_equal(res.net, g_abi >= 4);
	assert_int_equal(res.scoped, g_abi >= 6);
	assert_null(res.failed_path);
	/* Neither asked for: neither reported. */
	fd = ll_build(&F.spec, &res);
	assert_true(fd >= 0);
	close(fd);
	assert_false(res.net);
	assert_false(res.scoped);
}

static void test_build_missing_path(void **state)
{
	need_landlock();
	struct ll_path paths[] = {{F.ro, false, false}, {"/nonexistent/airlock-ll/required", true, false}};
	struct ll_spec s = {.paths = paths, .npaths = 2, .max_abi = g_abi};
	struct ll_result res;
	int before = lowest_free_fd();
	assert_int_equal(ll_build(&s, &res), -ENOENT);
	assert_ptr_equal(res.failed_path, paths[1].path);
	assert_int_equal(lowest_free_fd(), before); /* the ruleset and path descriptors are closed */
	paths[1].optional = true;
	int fd = ll_build(&s, &res);
	assert_true(fd >= 0);
	close(fd);
}

/* ---- filesystem ---------------------------------------------------------------------- */

static void test_read_only_dir(void **state)
{
	need_landlock();
	char file[PATH_MAX], fresh[PATH_MAX], sub[PATH_MAX];
	fx_path(file, "ro/file.txt");
	fx_path(fresh, "ro/new.txt");
	fx_path(sub, "ro/newdir");
	expect_errno(confined(&F.spec, p_read, &(struct probe_arg){.a = file}), 0);
	expect_errno(confined(&F.spec, p_list, &(struct probe_arg){.a = F.ro}), 0);
	expect_errno(confined(&F.spec, p_append, &(struct probe_arg){.a = file}), EACCES);
	expect_errno(confined(&F.spec, p_create, &(struct probe_arg){.a = fresh}), EACCES);
	expect_errno(confined(&F.spec, p_mkdir, &(struct probe_arg){.a = sub}), EACCES);
	expect_errno(confined(&F.spec, p_unlink, &(struct probe_arg){.a = file}), EACCES);
	assert_string_equal(slurp("ro/file.txt"), "ro-data");
	assert_false(exists("ro/new.txt"));
	assert_false(exists("ro/newdir"));
}

static void test_read_write_dir(void **state)
{
	need_landlock();
	char file[PATH_MAX], fresh[PATH_MAX], sub[PATH_MAX], gone[PATH_MAX];
	fx_path(file, "rw/file.txt");
	fx_path(fresh, "rw/new.txt");
	fx_path(sub, "rw/newdir");
	fx_path(gone, "rw/gone.txt");
	put_file("rw/gone.txt", "x");
	expect_errno(confined(&F.spec, p_append, &(struct probe_arg){.a = file}), 0);
	expect_errno(confined(&F.spec, p_create, &(struct probe_arg){.a = fresh}), 0);
	expect_errno(confined(&F.spec, p_mkdir, &(struct probe_arg){.a = sub}), 0);
	expect_errno(confined(&F.spec, p_unlink, &(struct probe_arg){.a = gone}), 0);
	assert_string_equal(slurp("rw/file.txt"), "rw-datax");
	assert_string_equal(slurp("rw/new.txt"), "x");
	assert_true(exists("rw/newdir"));
	assert_false(exists("rw/gone.txt"));
}

/* The test: a write outside every rule is refused although the mount and DAC allow it. */
static void test_write_outside_refused(void **state)
{
	need_landlock();
	char canary[PATH_MAX], fresh[PATH_MAX], control[PATH_MAX], sub[PATH_MAX];
	fx_path(canary, "outside/canary.txt");
	fx_path(fresh, "outside/new.txt");
	fx_path(control, "outside/control.txt");
	fx_path(sub, "outside/newdir");
	struct statvfs vfs;
	assert_int_equal(statvfs(F.outside, &vfs), 0);
	assert_false(vfs.f_flag & ST_RDONLY);
	assert_int_equal(access(F.outside, W_OK), 0);
	/* Control: the same probe, unconfined, writes. */
	expect_errno(bare(p_create, &(struct probe_arg){.a = control}), 0);
	assert_string_equal(slurp("outside/control.txt"), "x");
	expect_errno(confined(&F.spec, p_append, &(struct probe_arg){.a = canary}), EACCES);
	expect_errno(confined(&F.spec, p_create, &(struct probe_arg){.a = fresh}), EACCES);
	expect_errno(confined(&F.spec, p_mkdir, &(struct probe_arg){.a = sub}), EACCES);
	expect_errno(confined(&F.spec, p_unlink, &(struct probe_arg){.a = canary}), EACCES);
	expect_errno(confined(&F.spec, p_read, &(struct probe_arg){.a = canary}), EACCES);
	expect_errno(confined(&F.spec, p_list, &(struct probe_arg){.a = F.outside}), EACCES);
	assert_string_equal(slurp("outside/canary.txt"), "canary");
	assert_false(exists("outside/new.txt"));
	assert_false(exists("outside/newdir"));
}

/* A rule on a single regular file (rights masked to file rights, or the kernel says EINVAL). */
static void test_file_rule(void **state)
{
	need_landlock();
	expect_errno(confined(&F.spec, p_read, &(struct probe_arg){.a = F.single}), 0);
	expect_errno(confined(&F.spec, p_append, &(struct probe_arg){.a = F.single}), EACCES);
	assert_string_equal(slurp("single.txt"), "single");
	/* Character devices too: /dev/null writable, /dev/zero read-only. */
	expect_errno(confined(&F.spec, p_append, &(struct probe_arg){.a = "/dev/null"}), 0);
	expect_errno(confined(&F.spec, p_read, &(struct probe_arg){.a = "/dev/zero"}), 0);
	expect_errno(confined(&F.spec, p_append, &(struct probe_arg){.a = "/dev/zero"}), EACCES);
}

/* REFER (ABI 2): renames across directories of the writable tree work; links that would
 * carry a read-only file into it do not. */
static void test_refer(void **state)
{
	need_landlock();
	char from[PATH_MAX], to[PATH_MAX], src[PATH_MAX], hard[PATH_MAX];
	fx_path(from, "rw/a/moveme");
	fx_path(to, "rw/b/moveme");
	fx_path(src, "ro/file.txt");
	fx_path(hard, "rw/b/hardlink");
	int r = confined(&F.spec, p_rename, &(struct probe_arg){.a = from, .b = to});
	if (need_abi(2, "cross-directory rename (ABI 1 refuses it with EXDEV)")) {
		expect_errno(r, 0);
		assert_false(exists("rw/a/moveme"));
		assert_string_equal(slurp("rw/b/moveme"), "moving");
	} else {
		expect_errno(r, EXDEV);
	}
	r = confined(&F.spec, p_link, &(struct probe_arg){.a = src, .b = hard});
	if (r != EXDEV && r != EACCES)
		fail_msg("link from the read-only tree: got %s, want EXDEV or EACCES", strerror(r));
	assert_false(exists("rw/b/hardlink"));
	expect_errno(bare(p_link, &(struct probe_arg){.a = src, .b = hard}), 0); /* control */
}

static void test_truncate(void **state)
{
	need_landlock();
	char ro[PATH_MAX], rw[PATH_MAX];
	fx_path(ro, "ro/file.txt");
	fx_path(rw, "rw/trunc.txt");
	if (!need_abi(3, "truncate(2) on a read-only path (before ABI 3 only the mount can refuse it)"))
		return;
	expect_errno(confined(&F.spec, p_truncate, &(struct probe_arg){.a = ro}), EACCES);
	assert_string_equal(slurp("ro/file.txt"), "ro-data");
	expect_errno(confined(&F.spec, p_truncate, &(struct probe_arg){.a = rw}), 0);
	assert_string_equal(slurp("rw/trunc.txt"), "");
}

/* IOCTL_DEV (ABI 5): device ioctls only through read-write rules. */
static void test_ioctl_dev(void **state)
{
	need_landlock();
	struct probe_arg zero = {.a = "/dev/zero"};
	expect_errno(bare(p_tcgets, &zero), ENOTTY); /* control: the driver's own answer */
	int r = confined(&F.spec, p_tcgets, &zero);
	if (need_abi(5, "ioctl on a device under a read-only rule"))
		expect_errno(r, EACCES);
	else
		expect_errno(r, ENOTTY);
	/* Under a read-write rule the driver answers, as without Landlock. */
	expect_errno(confined(&F.spec, p_tcgets, &(struct probe_arg){.a = "/dev/null"}), ENOTTY);
}

static void test_pty(void **state)
{
	need_landlock();
	int r = bare(p_pty, NULL);
	if (r != 0) {
		AL_SKIP("no working pty on this host (%s)", strerror(r));
	}
	expect_errno(confined(&F.spec, p_pty, NULL), 0);
}

/* ---- network and scopes -------------------------------------------------------------- */

static int listener(int type, int *port)
{
	struct sockaddr_in sa = loopback(0);
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (type == SOCK_STREAM)
		assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* Accepts what is queued: the number of connections that reached the listener. */
static int drain(int l)
{
	int n = 0, c;
	while ((c = accept4(l, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		close(c);
		n++;
	}
	assert_int_equal(errno, EAGAIN);
	return n;
}

static void test_tcp(void **state)
{
	need_landlock();
	int denied_port, allowed_port, udp_port;
	int denied = listener(SOCK_STREAM, &denied_port), allowed = listener(SOCK_STREAM, &allowed_port);
	int udp = listener(SOCK_DGRAM, &udp_port);
	uint16_t ports[] = {(uint16_t)allowed_port};
	struct ll_spec s = F.spec;
	s.deny_tcp = true;
	s.tcp_connect_ports = ports;
	s.ntcp_connect_ports = 1;
	/* Control: both listeners answer an unconfined connect, and one confined without deny_tcp. */
	expect_errno(bare(p_tcp_connect, &(struct probe_arg){.n = denied_port}), 0);
	expect_errno(confined(&F.spec, p_tcp_connect, &(struct probe_arg){.n = denied_port}), 0);
	assert_int_equal(drain(denied), 2);
	if (need_abi(4, "TCP connect/bind refused")) {
		expect_errno(confined(&s, p_tcp_connect, &(struct probe_arg){.n = denied_port}), EACCES);
		assert_int_equal(drain(denied), 0); /* the listener saw nothing */
		expect_errno(confined(&s, p_tcp_bind, NULL), EACCES);
		expect_errno(confined(&s, p_tcp_connect, &(struct probe_arg){.n = allowed_port}), 0);
		assert_int_equal(drain(allowed), 1);
	}
	/* UDP is not Landlock's: it still flows (the network namespace is what stops it). */
	expect_errno(confined(&s, p_udp_send, &(struct probe_arg){.n = udp_port}), 0);
	char b;
	assert_int_equal(recv(udp, &b, 1, 0), 1);
	close(denied);
	close(allowed);
	close(udp);
}

static void test_scope_signal(void **state)
{
	need_landlock();
	struct ll_spec s = F.spec;
	s.scope = true;
	expect_errno(confined(&F.spec, p_kill_parent, NULL), 0); /* control: not scoped */
	if (!need_abi(6, "signals scoped to the sandbox")) {
		expect_errno(confined(&s, p_kill_parent, NULL), 0);
		return;
	}
	expect_errno(confined(&s, p_kill_parent, NULL), EPERM);
	expect_errno(confined(&s, p_kill_own_child, NULL), 0);
}

static void test_scope_abstract_unix(void **state)
{
	need_landlock();
	char name[64];
	snprintf(name, sizeof(name), "airlock-ll-test-%d", (int)getpid());
	struct sockaddr_un su;
	socklen_t len = abstract_addr(&su, name);
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&su, len), 0);
	assert_int_equal(listen(l, 8), 0);
	struct ll_spec s = F.spec;
	s.scope = true;
	struct probe_arg outer = {.a = name};
	expect_errno(confined(&F.spec, p_abstract_connect, &outer), 0); /* control: not scoped */
	assert_int_equal(drain(l), 1);
	if (need_abi(6, "abstract UNIX sockets scoped to the sandbox")) {
		expect_errno(confined(&s, p_abstract_connect, &outer), EPERM);
		assert_int_equal(drain(l), 0);
		char own[80];
		snprintf(own, sizeof(own), "%s-inner", name);
		expect_errno(confined(&s, p_abstract_own, &(struct probe_arg){.a = own}), 0);
	}
	close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rights_per_abi),
		cmocka_unit_test(test_default_paths),
		cmocka_unit_test(test_build_result),
		cmocka_unit_test(test_build_missing_path),
		cmocka_unit_test(test_read_only_dir),
		cmocka_unit_test(test_read_write_dir),
		cmocka_unit_test(test_write_outside_refused),
		cmocka_unit_test(test_file_rule),
		cmocka_unit_test(test_refer),
		cmocka_unit_test(test_truncate),
		cmocka_unit_test(test_ioctl_dev),
		cmocka_unit_test(test_pty),
		cmocka_unit_test(test_tcp),
		cmocka_unit_test(test_scope_signal),
		cmocka_unit_test(test_scope_abstract_unix),
	};
	/* The kernel's own ABI first, then every older one: Landlock enforces an older ABI's
	 * ruleset on a newer kernel as that kernel would, so one host covers ABIs 1..N. */
	int k = ll_abi();
	g_kernel_abi = k > LL_ABI_MAX ? LL_ABI_MAX : k;
	int failed = 0;
	for (g_abi = g_kernel_abi;; g_abi--) {
		char name[48];
		snprintf(name, sizeof(name), "landlock ABI %d", g_abi);
		failed += cmocka_run_group_tests_name(name, tests, setup, teardown);
		if (g_abi <= 1)
			break;
	}
	return failed;
}
