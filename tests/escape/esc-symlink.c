/* esc-symlink.c — hostile program: plant links in the workspace so that whoever later handles its files on the host follows them out. */
/*
 * Usage: esc-symlink plant HOSTSECRET VICTIM-DIR SPARSE-MIB   first job
 *        esc-symlink swap                                     second job, same --workdir
 *        esc-symlink amplify SPARSE-MIB LINKS                 data that is small inside and
 *                                                             large once copied out
 * plant: in /workspace, symlinks to the host secret ("leak-file"), to a host directory
 * ("d", "leak-dir"), to "../../..", to /proc/1/root; "seed" (a file the host gave us)
 * replaced by a link to the secret; a hard link to a file outside (/etc/passwd); a file
 * with set-id bits (plain data, mode 06755); a FIFO (a reader would block); a sparse file
 * of SPARSE-MIB (apparent size far beyond the disk cap, almost no blocks inside).
 * swap: the links the first job left are now on the host; replace "d" by a real directory
 * holding "d/pwned", and "leak-file" by a regular file, so that a write-back that follows
 * the host's existing links would write into VICTIM-DIR or over the secret.
 * amplify: a sparse file of SPARSE-MIB (one real byte), and one 1 MiB file of data with
 * LINKS hard links to it; inside they cost about 1 MiB of the disk cap.
 * Expected defence: today the --workdir write-back (src/supervisor/writeback.c) walks both
 * trees with *at() calls that never follow a link, copies links as links, strips set-id
 * bits, skips special files, and stays within --disk; tomorrow `airlock serve`'s file API
 * resolves every client path with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS).
 */
#include "esc.h"

#include <limits.h>

static void write_text(const char *name, const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	esc_report(name, fd < 0 ? -1 : write(fd, text, strlen(text)));
	if (fd >= 0)
		close(fd);
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];

	esc_init();
	if (argc == 5 && strcmp(argv[1], "plant") == 0) {
		const char *secret = argv[2], *victim = argv[3];
		long sparse = (long)esc_num(argv[4]);
		esc_report("link-leak-file", symlink(secret, "/workspace/leak-file"));
		esc_report("link-leak-dir", symlink(victim, "/workspace/leak-dir"));
		esc_report("link-d", symlink(victim, "/workspace/d"));
		esc_report("link-dotdot", symlink("../../../../..", "/workspace/dotdot"));
		esc_report("link-proc-root", symlink("/proc/1/root", "/workspace/proc-root"));
		unlink("/workspace/seed");
		esc_report("link-seed", symlink(secret, "/workspace/seed"));
		/* Writes through the links: inside the sandbox they dangle. */
		snprintf(path, sizeof(path), "/workspace/leak-dir/through-link");
		write_text("write-through-leak-dir", path, "escaped\n");
		esc_report("hardlink-outside", link("/etc/passwd", "/workspace/hard-passwd"));
		write_text("setid-create", "/workspace/setid", "just-data\n");
		esc_report("setid-chmod", chmod("/workspace/setid", 06755));
		esc_report("mkfifo", mknod("/workspace/fifo", S_IFIFO | 0644, 0));
		int fd = open("/workspace/sparse", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		esc_report("sparse", fd < 0 ? -1 : ftruncate(fd, (off_t)sparse << 20));
		if (fd >= 0) {
			/* One real byte at the end, as a sparse-file copier would find it. */
			if (pwrite(fd, "s", 1, ((off_t)sparse << 20) - 1) != 1)
				esc_report("sparse-tail", -1);
			close(fd);
		}
		struct stat st;
		if (stat("/workspace/sparse", &st) == 0)
			printf("sparse-size=%lld\nsparse-blocks-kib=%lld\n", (long long)st.st_size,
			       (long long)st.st_blocks / 2);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "amplify") == 0) {
		long sparse = (long)esc_num(argv[2]), links = (long)esc_num(argv[3]);
		int fd = open("/workspace/sparse", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		esc_report("sparse", fd < 0 ? -1 : pwrite(fd, "s", 1, ((off_t)sparse << 20) - 1));
		if (fd >= 0)
			close(fd);
		static char mib[1 << 20];
		memset(mib, 'h', sizeof(mib));
		fd = open("/workspace/data", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		esc_report("data", fd < 0 ? -1 : write(fd, mib, sizeof(mib)));
		if (fd >= 0)
			close(fd);
		long made = 0;
		for (long i = 0; i < links; i++) {
			snprintf(path, sizeof(path), "/workspace/link%ld", i);
			if (link("/workspace/data", path) == 0)
				made++;
		}
		printf("hardlinks=%ld\n", made);
		struct stat st;
		if (stat("/workspace/sparse", &st) == 0)
			printf("sparse-size=%lld\nsparse-blocks-kib=%lld\n", (long long)st.st_size,
			       (long long)st.st_blocks / 2);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "swap") == 0) {
		esc_report("unlink-d", unlink("/workspace/d"));
		esc_report("mkdir-d", mkdir("/workspace/d", 0755));
		write_text("write-d-pwned", "/workspace/d/pwned", "escaped\n");
		esc_report("unlink-leak-file", unlink("/workspace/leak-file"));
		write_text("write-leak-file", "/workspace/leak-file", "overwritten\n");
		return 0;
	}
	fprintf(stderr,
		"usage: esc-symlink plant HOSTSECRET VICTIM-DIR SPARSE-MIB | swap | amplify SPARSE-MIB LINKS\n");
	return 2;
}
