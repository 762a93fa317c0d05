/* esc-setid.c — hostile program: leave a set-user-id or set-group-id file in a directory the host granted read-write. */
/*
 * Usage: esc-setid DIR      DIR is the inside path of a host directory bound read-write (--rw)
 *
 * Mounts inside are nosuid, so a set-id bit means nothing in the sandbox; on the host the
 * same file is a set-id program owned by the payload's host uid, and whoever runs it there
 * becomes that uid (issue 8). Every way of putting S_ISUID or S_ISGID on a file is tried,
 * each on a name of its own in DIR:
 *   chmod, chmod with junk above the mode's 16 bits (raw syscall), fchmod, fchmodat,
 *   fchmodat2 (raw, 452), open/openat/creat with O_CREAT and a set-id mode, O_TMPFILE with
 *   a set-id mode then linked in through /proc/self/fd, mknod/mknodat of a regular file,
 *   mkdir/mkdirat with a set-id mode, chmod g+s on a directory, openat2 with O_CREAT and a
 *   set-id mode in its struct open_how.
 * Controls (they must work, or the job could not write the host dir at all): "control"
 * created 0644 and chmod 0755; and "control" opened read-only with a set-id mode argument,
 * which the kernel ignores without O_CREAT (the filter must not refuse it).
 * Output (esc.h): NAME=OK or NAME=ENAME per attempt; mode[NAME]=octal for what exists after.
 * The driver (setid-rw.sh) judges from outside: no file under the host dir has a set-id bit.
 * The files are plain data ("not-a-program"), so even a set-id one executes nothing.
 */
#include "esc.h"

#include <sys/syscall.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#define SYS_fchmodat2_ 452
#define HI	       (1UL << 32) /* above mode_t's bits: the kernel ignores it */

/* struct open_how (linux/openat2.h), spelt out so the program needs no kernel headers */
struct esc_open_how {
	unsigned long long flags, mode, resolve;
};

static int dirfd_;
static const char *dir_;

static const char *at(const char *name)
{
	static char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir_, name);
	return path;
}

/* A plain 0644 data file NAME, for the calls that change an existing file's mode. */
static int plain(const char *name)
{
	int fd = openat(dirfd_, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd >= 0 && write(fd, "not-a-program\n", 14) != 14) {
		close(fd);
		return -1;
	}
	if (fd < 0)
		printf("setup[%s]=%s\n", name, esc_errname(errno));
	return fd;
}

static void mode_of(const char *name)
{
	struct stat st;
	if (fstatat(dirfd_, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		printf("mode[%s]=%o\n", name, (unsigned)st.st_mode & 07777);
}

static void closefd(long fd)
{
	if (fd >= 0)
		close((int)fd);
}

int main(int argc, char **argv)
{
	esc_init();
	if (argc != 2) {
		fprintf(stderr, "usage: esc-setid DIR\n");
		return 2;
	}
	dir_ = argv[1];
	dirfd_ = open(dir_, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd_ < 0) {
		printf("open-dir=%s\n", esc_errname(errno));
		return 1;
	}
	umask(022);

	/* controls */
	int fd = plain("control");
	esc_report("control-create", fd);
	closefd(fd);
	esc_report("control-chmod-0755", chmod(at("control"), 0755));
	/* an open that makes no file, with a set-id "mode" the kernel ignores: must still work */
	long r = syscall(SYS_openat, dirfd_, "control", O_RDONLY | O_CLOEXEC, 04755);
	esc_report("control-open-nocreate", r);
	closefd(r);
	mode_of("control");

	/* changing the mode of a file the job made */
	closefd(plain("chmod-u"));
	esc_report("chmod-4755", chmod(at("chmod-u"), 04755));
	closefd(plain("chmod-g"));
	esc_report("chmod-2755", chmod(at("chmod-g"), 02755));
	closefd(plain("chmod-hi"));
	esc_report("chmod-hi-4755", syscall(SYS_chmod, at("chmod-hi"), HI | 04755));
	fd = plain("fchmod");
	esc_report("fchmod-4755", fd < 0 ? -1 : fchmod(fd, 04755));
	closefd(fd);
	closefd(plain("fchmodat"));
	esc_report("fchmodat-2755", fchmodat(dirfd_, "fchmodat", 02755, 0));
	closefd(plain("fchmodat2"));
	esc_report("fchmodat2-4755", syscall(SYS_fchmodat2_, dirfd_, "fchmodat2", 04755, 0));

	/* making a file with a set-id mode */
	r = open(at("open"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 04755);
	esc_report("open-creat-4755", r);
	closefd(r);
	r = openat(dirfd_, "openat", O_RDWR | O_CREAT | O_CLOEXEC, 06755);
	esc_report("openat-creat-6755", r);
	closefd(r);
	r = syscall(SYS_openat, dirfd_, "openat-hi", HI | O_WRONLY | O_CREAT, HI | 04755);
	esc_report("openat-hi-4755", r);
	closefd(r);
	r = creat(at("creat"), 04755);
	esc_report("creat-4755", r);
	closefd(r);
	r = open(dir_, O_WRONLY | O_TMPFILE | O_CLOEXEC, 04755);
	if (esc_report("tmpfile-4755", r) >= 0) {
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%ld", r);
		esc_report("tmpfile-link", linkat(AT_FDCWD, proc, dirfd_, "tmpfile", AT_SYMLINK_FOLLOW));
	}
	closefd(r);
	esc_report("mknod-4755", mknod(at("mknod"), S_IFREG | 04755, 0));
	esc_report("mknodat-2755", mknodat(dirfd_, "mknodat", S_IFREG | 02755, 0));
	struct esc_open_how how = {.flags = O_WRONLY | O_CREAT | O_CLOEXEC, .mode = 04755};
	r = syscall(SYS_openat2, dirfd_, "openat2", &how, sizeof(how));
	esc_report("openat2-creat-4755", r);
	closefd(r);

	/* directories: mkdir's set-id bits (Linux drops them, but they are asked for), g+s by chmod */
	esc_report("mkdir-2755", mkdir(at("mkdir"), 02755));
	esc_report("mkdirat-4755", mkdirat(dirfd_, "mkdirat", 04755));
	esc_report("dir-create", mkdir(at("dir"), 0755));
	esc_report("chmod-dir-2755", chmod(at("dir"), 02755));

	static const char *const names[] = {"chmod-u", "chmod-g", "chmod-hi",  "fchmod",  "fchmodat", "fchmodat2",
					    "open",    "openat",  "openat-hi", "creat",	  "tmpfile",  "mknod",
					    "mknodat", "openat2", "mkdir",     "mkdirat", "dir"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		mode_of(names[i]);
	close(dirfd_);
	return 0;
}
