/* test_mnt.c — unit tests for src/kit/mnt.c's replay of a plan: entries made one after another in
 * the same directory share its open descriptor, and a mount over that directory (or above it) is
 * seen by the entries made after it, which land in the mount, not in the directory it covers.
 * Each replay runs in a forked child, in a mount namespace of its own (a user namespace too when
 * the test is not root), on a tmpfs root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit/mnt.h"

/* Enters a mount namespace where this process may mount: as root directly, otherwise in a user
 * namespace mapping its own ids. */
static int own_mount_ns(void)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (uid == 0)
		return unshare(CLONE_NEWNS);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return -1;
	char map[64];
	int fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "deny", 4);
		close(fd);
	}
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	fd = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, map, strlen(map)) < 0)
		return -1;
	close(fd);
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	fd = open("/proc/self/gid_map", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, map, strlen(map)) < 0)
		return -1;
	close(fd);
	return 0;
}

static bool has_text(int rootfd, const char *rel, const char *text)
{
	char buf[64] = {0};
	int fd = openat(rootfd, rel, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n == (ssize_t)strlen(text) && memcmp(buf, text, (size_t)n) == 0;
}

/* Replays ops on a fresh root in a child; its exit status is the number of the first failed check
 * below (0: all held), or 100 + the plan's failing stage. */
static int replay_and_check(struct fs_op *ops, size_t n, int (*check)(int rootfd))
{
	char staging[] = "/tmp/al-test-mnt-XXXXXX";
	if (!mkdtemp(staging))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		if (own_mount_ns() < 0)
			_exit(99);
		struct mnt_fail f = {0};
		int rootfd = mnt_enter_root(staging, -1, &f);
		if (rootfd < 0)
			_exit(98);
		struct fs_plan plan = {.ops = ops, .n = n, .sendfd_sock = -1};
		if (mnt_apply(&plan, rootfd, &f) < 0) {
			fprintf(stderr, "test_mnt: stage %d: %s: %s\n", (int)f.stage, f.what ? f.what : "",
				strerror(f.err));
			_exit(100 + (int)f.stage);
		}
		_exit(check(rootfd));
	}
	int st = -1;
	waitpid(pid, &st, 0);
	rmdir(staging);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 200;
}

/* d/a is made, a tmpfs is mounted over d, then more entries go into d: they must be in the tmpfs
 * (where the job looks), and a, made before the mount, hidden by it. */
static int check_mount_over_parent(int rootfd)
{
	struct stat st;
	if (fstatat(rootfd, "d/a", &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
		return 1; /* the tmpfs does not cover d */
	if (!has_text(rootfd, "d/b", "b"))
		return 2; /* made in the covered directory: the old descriptor of d was used */
	char link[16] = {0};
	if (readlinkat(rootfd, "d/c", link, sizeof(link) - 1) != 1 || link[0] != 'b')
		return 3;
	if (fstatat(rootfd, "d/e/f", &st, 0) < 0 || !S_ISDIR(st.st_mode))
		return 4;
	if (!has_text(rootfd, "d/e/g", "g") || !has_text(rootfd, "x/y", "y"))
		return 5;
	/* The tmpfs's own statfs: d is a mount of its own, and b is on it. */
	struct stat sd, sb;
	if (fstatat(rootfd, "d", &sd, 0) < 0 || fstatat(rootfd, "d/b", &sb, 0) < 0 || sd.st_dev != sb.st_dev)
		return 6;
	struct stat sr;
	if (fstat(rootfd, &sr) < 0 || sr.st_dev == sd.st_dev)
		return 7;
	return 0;
}

static void test_mount_over_kept_parent(void **state)
{
	(void)state;
	struct fs_op ops[] = {
		{.kind = FS_FILE, .dest = "d/a", .text = "a", .mode = 0644},
		{.kind = FS_TMPFS, .dest = "d", .text = "mode=0755,size=64k", .mflags = MS_NOSUID | MS_NODEV},
		{.kind = FS_FILE, .dest = "d/b", .text = "b", .mode = 0644},
		{.kind = FS_SYMLINK, .dest = "d/c", .text = "b"},
		{.kind = FS_MKDIR, .dest = "d/e/f", .mode = 0755},
		{.kind = FS_FILE, .dest = "d/e/g", .text = "g", .mode = 0644},
		{.kind = FS_FILE, .dest = "x/y", .text = "y", .mode = 0644},
	};
	assert_int_equal(replay_and_check(ops, sizeof(ops) / sizeof(ops[0]), check_mount_over_parent), 0);
}

/* A mount above the kept directory (here over the directory holding it) hides it just the same. */
static int check_mount_over_ancestor(int rootfd)
{
	struct stat st;
	if (fstatat(rootfd, "p/q/old", &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
		return 1;
	if (!has_text(rootfd, "p/q/new", "n"))
		return 2;
	return 0;
}

static void test_mount_over_kept_ancestor(void **state)
{
	(void)state;
	struct fs_op ops[] = {
		{.kind = FS_FILE, .dest = "p/q/old", .text = "o", .mode = 0644},
		{.kind = FS_TMPFS, .dest = "p", .text = "mode=0755,size=64k", .mflags = MS_NOSUID | MS_NODEV},
		{.kind = FS_FILE, .dest = "p/q/new", .text = "n", .mode = 0644},
	};
	assert_int_equal(replay_and_check(ops, sizeof(ops) / sizeof(ops[0]), check_mount_over_ancestor), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mount_over_kept_parent),
		cmocka_unit_test(test_mount_over_kept_ancestor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
