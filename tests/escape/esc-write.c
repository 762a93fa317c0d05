/* esc-write.c — hostile program: change files outside the workspace (bound read-only dirs, the root, /etc, host paths). */
/*
 * Usage: esc-write RO-DIR HOST-DIR
 *   RO-DIR    inside path of a host temp dir bound read-only; it holds "canary" (mode 0666,
 *             in a 0777 dir, so only the read-only mount can refuse)
 *   HOST-DIR  host path of a world-writable temp dir that is not bound at all
 * Real writes go only to RO-DIR and HOST-DIR (the driver's temp dirs, judged by a canary
 * from outside). System paths (/, /etc, /usr, ...) are probed without writing anything:
 * O_TMPFILE makes an unnamed file that vanishes on close, and an existing file is opened
 * for append and closed without a write. Controls: /workspace and /tmp must be writable.
 * Expected defence: read-only bind mounts (EROFS), a read-only root tmpfs, the mount
 * namespace (HOST-DIR does not exist inside), Landlock (writes only below /workspace, /tmp
 * and --rw binds), DAC (host files belong to ids outside the sandbox's map).
 */
#include "esc.h"

#include <limits.h>
#include <sys/time.h>
#include <sys/xattr.h>

/* Write-free probes of a path the host cares about. */
static void probe_dir(const char *name, const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	esc_reportf(fd, "tmpfile[%s]", name);
	if (fd >= 0)
		close(fd);
}

static void probe_file(const char *name, const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	esc_reportf(fd, "append[%s]", name);
	if (fd >= 0)
		close(fd);
}

int main(int argc, char **argv)
{
	char a[PATH_MAX], b[PATH_MAX];

	esc_init();
	if (argc != 3) {
		fprintf(stderr, "usage: esc-write RO-DIR HOST-DIR\n");
		return 2;
	}
	const char *ro = argv[1], *host = argv[2];

	/* Controls: the program can write where it is allowed to. */
	int fd = open("/workspace/ok", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	esc_report("control-workspace", fd < 0 ? -1 : write(fd, "ok\n", 3));
	if (fd >= 0)
		close(fd);
	fd = open("/tmp/ok", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	esc_report("control-tmp", fd < 0 ? -1 : write(fd, "ok\n", 3));
	if (fd >= 0)
		close(fd);

	/* The read-only bind: every way of changing the canary or the directory. */
	snprintf(a, sizeof(a), "%s/canary", ro);
	fd = open(a, O_WRONLY | O_TRUNC | O_CLOEXEC);
	esc_report("ro-overwrite", fd < 0 ? -1 : write(fd, "clobbered\n", 10));
	if (fd >= 0)
		close(fd);
	fd = open(a, O_WRONLY | O_APPEND | O_CLOEXEC);
	esc_report("ro-append", fd < 0 ? -1 : write(fd, "clobbered\n", 10));
	if (fd >= 0)
		close(fd);
	/* Reopen a read-only descriptor for writing through /proc/self/fd. */
	int rfd = open(a, O_RDONLY | O_CLOEXEC);
	snprintf(b, sizeof(b), "/proc/self/fd/%d", rfd);
	fd = open(b, O_WRONLY | O_CLOEXEC);
	esc_report("ro-reopen-rw", fd < 0 ? -1 : write(fd, "clobbered\n", 10));
	if (fd >= 0)
		close(fd);
	if (rfd >= 0)
		close(rfd);
	esc_report("ro-truncate", truncate(a, 0));
	esc_report("ro-chmod", chmod(a, 0777));
	esc_report("ro-chown", chown(a, getuid(), getgid()));
	esc_report("ro-utimes", utimes(a, NULL));
	esc_report("ro-setxattr", setxattr(a, "user.esc", "x", 1, 0));
	snprintf(b, sizeof(b), "%s/renamed", ro);
	esc_report("ro-rename", rename(a, b));
	esc_report("ro-unlink", unlink(a));
	snprintf(b, sizeof(b), "%s/hardlink", ro);
	esc_report("ro-link", link(a, b));
	snprintf(b, sizeof(b), "%s/new", ro);
	fd = open(b, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	esc_report("ro-create", fd);
	if (fd >= 0)
		close(fd);
	snprintf(b, sizeof(b), "%s/newdir", ro);
	esc_report("ro-mkdir", mkdir(b, 0755));
	snprintf(b, sizeof(b), "%s/newlink", ro);
	esc_report("ro-symlink", symlink("/workspace", b));
	snprintf(b, sizeof(b), "%s/newfifo", ro);
	esc_report("ro-mkfifo", mknod(b, S_IFIFO | 0644, 0));
	probe_dir("ro-dir", ro);

	/* A host directory that was never bound: its host path must lead nowhere. */
	snprintf(b, sizeof(b), "%s/escaped", host);
	fd = open(b, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	esc_report("host-create", fd < 0 ? -1 : write(fd, "escaped\n", 8));
	if (fd >= 0)
		close(fd);
	snprintf(b, sizeof(b), "/proc/1/root%s/escaped-proc", host);
	fd = open(b, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	esc_report("host-create-proc-root", fd < 0 ? -1 : write(fd, "escaped\n", 8));
	if (fd >= 0)
		close(fd);
	snprintf(b, sizeof(b), "/workspace/../../..%s/escaped-dotdot", host);
	fd = open(b, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	esc_report("host-create-dotdot", fd < 0 ? -1 : write(fd, "escaped\n", 8));
	if (fd >= 0)
		close(fd);
	snprintf(b, sizeof(b), "%s/escaped-dir", host);
	esc_report("host-mkdir", mkdir(b, 0755));

	/* System paths, write-free. */
	static const char *const dirs[] = {
		"/",	 "/etc",	  "/usr",    "/usr/bin",	 "/usr/lib",	  "/dev",
		"/proc", "/workspace/..", "/tmp/..", "/proc/1/root/etc", "/etc/ssl/certs"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		probe_dir(dirs[i], dirs[i]);
	static const char *const files[] = {"/etc/passwd", "/etc/ld.so.cache", "/usr/bin/env", "/etc/services",
					    "/proc/1/root/etc/passwd"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		probe_file(files[i], files[i]);
	return 0;
}
