/* esc-setuid.c — hostile program: gain privileges through setuid/setgid binaries (planted in the workspace, planted by the host, or the host's own). */
/*
 * Usage: esc-setuid plant WHOAMI DIR   copy WHOAMI (the reporter) to DIR/esc-suid, try to hand
 *                                      it to root (chown 0), chmod 06755, exec it: the
 *                                      reporter prints the ids and capabilities it got
 *        esc-setuid exec PATH PREFIX   exec a binary the host planted (setuid to another id
 *                                      of the sandbox's map, or with file capabilities)
 *        esc-setuid scan               find every setuid/setgid file under /usr and report
 *                                      which of them sit on a mount without nosuid
 * Expected defence: nosuid on every mount the payload can reach, no_new_privs (execve never
 * grants ids or file capabilities), no CAP_CHOWN/CAP_FSETID (the planted file stays ours),
 * and the kernel ignoring set-id bits of owners outside the user namespace's map.
 */
#include "esc.h"

#include <ftw.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -1;
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0) {
		close(in);
		return -1;
	}
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	int e = errno;
	close(in);
	close(out);
	errno = e;
	return n < 0 ? -1 : 0;
}

static void run(const char *path, const char *prefix)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl(path, path, prefix, (char *)NULL);
		printf("%s-exec=%s\n", prefix, esc_errname(errno));
		_exit(127);
	}
	int st = 0;
	waitpid(pid, &st, 0);
}

static long found, unprotected;

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	if (type == FTW_D && ftw->level >= 4)
		return FTW_SKIP_SUBTREE;
	if (type != FTW_F || !(st->st_mode & (S_ISUID | S_ISGID)))
		return FTW_CONTINUE;
	struct statvfs vfs;
	found++;
	if (statvfs(path, &vfs) < 0 || !(vfs.f_flag & ST_NOSUID)) {
		unprotected++;
		printf("setid-without-nosuid=%s\n", path);
	}
	return FTW_CONTINUE;
}

int main(int argc, char **argv)
{
	char path[4096];
	struct stat st;

	esc_init();
	if (argc == 4 && strcmp(argv[1], "plant") == 0) {
		snprintf(path, sizeof(path), "%s/esc-suid", argv[3]);
		if (esc_report("plant-copy", copy_file(argv[2], path)) < 0)
			return 0;
		esc_report("plant-chown-root", chown(path, 0, 0));
		esc_report("plant-chmod-6755", chmod(path, 06755));
		if (stat(path, &st) == 0)
			printf("plant-mode=%o\nplant-owner=%u\n", (unsigned)st.st_mode & 07777, (unsigned)st.st_uid);
		struct statvfs vfs;
		if (statvfs(path, &vfs) == 0)
			printf("plant-mount-nosuid=%d\n", (vfs.f_flag & ST_NOSUID) ? 1 : 0);
		run(path, "planted");
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "exec") == 0) {
		if (stat(argv[2], &st) == 0)
			printf("%s-mode=%o\n%s-owner=%u\n", argv[3], (unsigned)st.st_mode & 07777, argv[3],
			       (unsigned)st.st_uid);
		run(argv[2], argv[3]);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "scan") == 0) {
		static const char *const roots[] = {"/usr", "/bin", "/sbin", "/etc", "/opt", "/workspace", "/tmp"};
		for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
			nftw(roots[i], visit, 32, FTW_PHYS | FTW_ACTIONRETVAL);
		printf("setid-files=%ld\nsetid-without-nosuid-count=%ld\n", found, unprotected);
		return 0;
	}
	fprintf(stderr, "usage: esc-setuid plant WHOAMI DIR | exec PATH PREFIX | scan\n");
	return 2;
}
