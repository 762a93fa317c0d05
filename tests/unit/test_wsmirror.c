/* test_wsmirror.c — the workspace's mirror on disk: what a sync keeps, changes and removes, that
 * the sandbox's links are never followed, and that a restore gives the same tree back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "manager/wsmirror.h"

struct dirs {
	char root[64];
	int ws, files, stage, outside;
};

static int at(const char *root, const char *name)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/%s", root, name);
	assert_int_equal(mkdir(p, 0700), 0);
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static int setup(void **state)
{
	struct dirs *d = calloc(1, sizeof(*d));
	snprintf(d->root, sizeof(d->root), "/tmp/al-wsm.XXXXXX");
	assert_non_null(mkdtemp(d->root));
	d->ws = at(d->root, "ws");
	d->files = at(d->root, "files");
	d->stage = at(d->root, "stage");
	d->outside = at(d->root, "outside");
	*state = d;
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

static int teardown(void **state)
{
	struct dirs *d = *state;
	assert_int_equal(nftw(d->root, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
	close(d->ws);
	close(d->files);
	close(d->stage);
	close(d->outside);
	free(d);
	return 0;
}

static void put(int dir, const char *name, const char *text)
{
	int fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static char *get(int dir, const char *name)
{
	static char buf[256];
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = 0;
	return buf;
}

static void sync_ok(struct wsm *w, int ws, struct wsm_stats *st)
{
	struct al_error err = {0};
	assert_int_equal(wsm_sync(w, ws, st, &err), 0);
}

static void test_keeps_changes_and_removals(void **state)
{
	struct dirs *d = *state;
	struct wsm *w = NULL;
	struct al_error err = {0};
	assert_int_equal(wsm_open(d->files, d->stage, &w, &err), 0);
	put(d->ws, "a.txt", "one");
	assert_int_equal(mkdirat(d->ws, "sub", 0755), 0);
	put(d->ws, "sub/b.txt", "bee");
	assert_int_equal(symlinkat("/etc/passwd", d->ws, "link"), 0);
	assert_int_equal(mkfifoat(d->ws, "fifo", 0644), 0);
	struct wsm_stats st;
	sync_ok(w, d->ws, &st);
	assert_int_equal(st.copied, 3);	 /* two files and a link; the directory is made, not copied */
	assert_int_equal(st.skipped, 1); /* the FIFO */
	assert_string_equal(get(d->files, "a.txt"), "one");
	assert_string_equal(get(d->files, "sub/b.txt"), "bee");
	char target[64] = "";
	assert_true(readlinkat(d->files, "link", target, sizeof(target)) > 0);
	assert_string_equal(target, "/etc/passwd");

	/* Nothing changed: nothing copied. */
	sync_ok(w, d->ws, &st);
	assert_int_equal(st.copied, 0);
	assert_int_equal(st.removed, 0);

	/* Same size, same mtime, new bytes: the ctime tells. */
	struct stat before;
	assert_int_equal(fstatat(d->ws, "a.txt", &before, 0), 0);
	put(d->ws, "a.txt", "two");
	struct timespec t[2] = {before.st_atim, before.st_mtim};
	assert_int_equal(utimensat(d->ws, "a.txt", t, 0), 0);
	sync_ok(w, d->ws, &st);
	assert_int_equal(st.copied, 1);
	assert_string_equal(get(d->files, "a.txt"), "two");

	/* Removed, and a file turned into a directory. */
	assert_int_equal(unlinkat(d->ws, "sub/b.txt", 0), 0);
	assert_int_equal(unlinkat(d->ws, "a.txt", 0), 0);
	assert_int_equal(mkdirat(d->ws, "a.txt", 0755), 0);
	put(d->ws, "a.txt/c", "sea");
	sync_ok(w, d->ws, &st);
	assert_null(get(d->files, "sub/b.txt"));
	assert_string_equal(get(d->files, "a.txt/c"), "sea");
	assert_int_equal(st.removed, 1);
	wsm_free(w);
}

/* A directory the mirror holds, swapped for a link to a host directory: the mirror's entries
 * beneath it are removed as entries of the mirror, and the host directory is never touched. */
static void test_never_follows_links(void **state)
{
	struct dirs *d = *state;
	struct wsm *w = NULL;
	struct al_error err = {0};
	assert_int_equal(wsm_open(d->files, d->stage, &w, &err), 0);
	assert_int_equal(mkdirat(d->ws, "dir", 0755), 0);
	put(d->ws, "dir/victim", "mirror's");
	sync_ok(w, d->ws, NULL);
	put(d->outside, "victim", "host's");
	assert_int_equal(unlinkat(d->ws, "dir/victim", 0), 0);
	assert_int_equal(unlinkat(d->ws, "dir", AT_REMOVEDIR), 0);
	char out[128];
	snprintf(out, sizeof(out), "%s/outside", d->root);
	assert_int_equal(symlinkat(out, d->ws, "dir"), 0);
	sync_ok(w, d->ws, NULL);
	assert_string_equal(get(d->outside, "victim"), "host's");
	char target[128] = "";
	assert_true(readlinkat(d->files, "dir", target, sizeof(target)) > 0);
	assert_string_equal(target, out);
	wsm_free(w);
}

/* Holes stay holes; a restore gives back data, modes and times, and its index makes the next sync
 * copy nothing. */
static void test_restore_round_trip(void **state)
{
	struct dirs *d = *state;
	struct wsm *w = NULL;
	struct al_error err = {0};
	assert_int_equal(wsm_open(d->files, d->stage, &w, &err), 0);
	int fd = openat(d->ws, "sparse", O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "x", 1, (off_t)1 << 30), 1);
	close(fd);
	put(d->ws, "script.sh", "#!/bin/sh\n");
	assert_int_equal(fchmodat(d->ws, "script.sh", 0755, 0), 0);
	assert_int_equal(mkdirat(d->ws, "ro", 0555), 0);
	struct wsm_stats st;
	sync_ok(w, d->ws, &st);
	struct stat m;
	assert_int_equal(fstatat(d->files, "sparse", &m, 0), 0);
	assert_int_equal(m.st_size, ((off_t)1 << 30) + 1);
	assert_true(m.st_blocks * 512 < (1 << 20));
	wsm_free(w);

	int back = at(d->root, "back");
	assert_int_equal(wsm_open(d->files, d->stage, &w, &err), 0);
	assert_int_equal(wsm_restore(w, back, getuid(), getgid(), &st, &err), 0);
	assert_int_equal(st.copied, 3);
	struct stat a, b;
	assert_int_equal(fstatat(back, "sparse", &b, 0), 0);
	assert_int_equal(fstatat(d->ws, "sparse", &a, 0), 0);
	assert_int_equal(b.st_size, a.st_size);
	assert_true(b.st_blocks * 512 < (1 << 20));
	assert_int_equal(b.st_mtim.tv_sec, a.st_mtim.tv_sec);
	assert_int_equal(fstatat(back, "script.sh", &b, 0), 0);
	assert_int_equal(b.st_mode & 07777, 0755);
	assert_int_equal(fstatat(back, "ro", &b, 0), 0);
	assert_int_equal(b.st_mode & 07777, 0555);
	sync_ok(w, back, &st);
	assert_int_equal(st.copied, 0);
	assert_int_equal(st.removed, 0);
	wsm_free(w);
	close(back);
}

/* A freeze makes every file the mirror holds a layer's too (shared: a change of one takes new room);
 * a changed file is its own again, and a restore of a mirror whose files a layer links is shared. */
static void test_shared_with_a_layer(void **state)
{
	struct dirs *d = *state;
	struct wsm *w = NULL;
	struct al_error err = {0};
	assert_int_equal(wsm_open(d->files, d->stage, &w, &err), 0);
	char big[8192];
	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	put(d->ws, "a.txt", big);
	put(d->ws, "b.txt", big);
	struct wsm_stats st;
	sync_ok(w, d->ws, &st);
	assert_true(st.stored >= 2 * 8191);
	assert_int_equal(st.shared, 0);
	uint64_t stored = st.stored;
	int layer = at(d->root, "layer");
	struct wsm_stats fz;
	assert_int_equal(wsm_freeze(w, layer, getuid(), getgid(), &fz, &err), 0);
	sync_ok(w, d->ws, &st); /* nothing changed: all of it is the layer's too */
	assert_int_equal(st.shared, stored);
	put(d->ws, "a.txt", "changed");
	sync_ok(w, d->ws, &st);
	assert_true(st.shared > 0 && st.shared < st.stored); /* b.txt only */
	assert_int_equal(st.stored - st.shared, st.stored - stored / 2);
	wsm_free(w);

	/* Brought back (a restart): the files the layer still links are shared again. */
	int back = at(d->root, "back");
	assert_int_equal(wsm_open(d->files, d->stage, &w, &err), 0);
	assert_int_equal(wsm_restore(w, back, getuid(), getgid(), &st, &err), 0);
	assert_int_equal(st.shared, stored / 2);
	wsm_free(w);
	close(back);
	close(layer);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_keeps_changes_and_removals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_never_follows_links, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_with_a_layer, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
