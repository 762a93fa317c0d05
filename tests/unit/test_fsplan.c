/* test_fsplan.c — unit tests for the filesystem plan of an image: its whole root shown, what the sandbox owns kept; its prepared /etc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kit/fsplan.h"
#include "image/image.h"
#include "image/imgint.h"
#include "policy/policy.h"
#include "util/cleanup.h"

static char root[64], prep[96];

static void put(const char *rel, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void dir(const char *rel)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void link_(const char *target, const char *rel)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(symlink(target, path), 0);
}

/* The op with dest (relative), or NULL. */
static const struct fs_op *op_at(const struct fs_plan *plan, const char *dest)
{
	for (size_t i = 0; i < plan->n; i++)
		if (strcmp(plan->ops[i].dest, dest) == 0)
			return &plan->ops[i];
	return NULL;
}

/* A tree shaped as an image: /usr, an /etc with files of its own, a directory, links (one out of
 * the tree) and names airlock writes, /opt, a top-level symlink, /proc and /tmp of its own, and a
 * name that pretends to be ours; then its prepared /etc, as the store makes it. */
static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/al-fsplan-XXXXXX");
	assert_non_null(mkdtemp(root));
	dir("usr");
	dir("etc");
	dir("opt");
	dir("proc");
	dir("tmp");
	dir(".airlock-etc");
	put("etc/app.conf", "x\n");
	put("etc/passwd", "root:x:0:0::/:/bin/sh\n");
	put("etc/resolv.conf", "nameserver 192.0.2.53\n");
	dir("etc/ssl");
	put("etc/ssl/cert.pem", "pem\n");
	link_("app.conf", "etc/link0");
	link_(root, "etc/out"); /* a link to a directory outside /etc: kept as a link, never entered */
	put("hello.txt", "a file at the top: shown, read-only\n");
	link_("opt", "srv");
	char path[160];
	snprintf(path, sizeof(path), "%s/etc/ssl", root);
	assert_int_equal(chmod(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/etc/resolv.conf", root);
	assert_int_equal(chmod(path, 0444), 0);
	snprintf(prep, sizeof(prep), "%s-prep", root);
	assert_int_equal(mkdir(prep, 0755), 0);
	int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), pfd = open(prep, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0 && pfd >= 0);
	assert_int_equal(store_etc_prepare(rfd, pfd, IMG_ETC_DIR, NULL), 0);
	close(rfd);
	close(pfd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s-prep' && rm -rf '%s' '%s-prep'", root, root, root);
	return system(cmd) == 0 ? 0 : -1;
}

static struct al_policy *image_policy(bool image)
{
	struct al_policy *p = NULL;
	assert_int_equal(al_policy_new(&p), 0);
	assert_int_equal(al_policy_set_rootfs(p, root, NULL), 0);
	if (image) { /* as al_policy_set_image leaves it, without a store */
		struct img_ref *ref = calloc(1, sizeof(*ref));
		assert_non_null(ref);
		ref->lock_fd = -1;
		ref->etc = malloc(strlen(prep) + sizeof("/" IMG_ETC_DIR));
		assert_non_null(ref->etc);
		sprintf(ref->etc, "%s/" IMG_ETC_DIR, prep);
		p->image = ref;
	}
	return p;
}

static int build_p(struct fs_plan *plan, struct al_policy *p)
{
	struct fs_host host;
	memset(plan, 0, sizeof(*plan));
	plan->sendfd_sock = -1;
	fs_host_probe(&host, plan, p);
	return fs_plan_build(plan, p, &host, NULL);
}

/* The plan borrows the policy's strings: free it after the plan. */
static struct al_policy *build(struct fs_plan *plan, bool image)
{
	struct al_policy *p = image_policy(image);
	assert_int_equal(build_p(plan, p), 0);
	return p;
}

/* stat of rel beneath a directory, not following a final link. */
static struct stat st_of(const char *base, const char *rel)
{
	char path[256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", base, rel);
	assert_int_equal(lstat(path, &st), 0);
	return st;
}

static void assert_link(const char *base, const char *rel, const char *target)
{
	char path[256], buf[256];
	snprintf(path, sizeof(path), "%s/%s", base, rel);
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = 0;
	assert_string_equal(buf, target);
}

/* The prepared /etc: the image's own inodes (hard links), its directories with their modes, its
 * links as they are (the one out of the tree too, not entered), and airlock's names, the image's
 * or not, linked into IMG_ETC_OWN. Nothing else. */
static void test_prepared_etc(void **state)
{
	(void)state;
	char etc[160], img[96];
	snprintf(etc, sizeof(etc), "%s/" IMG_ETC_DIR, prep);
	snprintf(img, sizeof(img), "%s/etc", root);
	assert_int_equal(st_of(etc, "app.conf").st_ino, st_of(img, "app.conf").st_ino);
	assert_int_equal(st_of(etc, "ssl/cert.pem").st_ino, st_of(img, "ssl/cert.pem").st_ino);
	struct stat d = st_of(etc, "ssl");
	assert_true(S_ISDIR(d.st_mode));
	assert_int_equal(d.st_mode & 07777, 0550); /* the image's 0750, no write bit in the store */
	assert_link(etc, "link0", "app.conf");
	assert_link(etc, "out", root);
	assert_true(S_ISLNK(st_of(etc, "out").st_mode));
	for (size_t i = 0; img_etc_own[i]; i++) {
		char want[64];
		snprintf(want, sizeof(want), IMG_ETC_OWN "/%s", img_etc_own[i]);
		assert_link(etc, img_etc_own[i], want);
	}
	assert_int_equal(st_of(etc, "").st_mode & 0222, 0);
	/* app.conf link0 out passwd resolv.conf ssl + the own names the image lacked */
	int n = 0;
	DIR *dd = opendir(etc);
	assert_non_null(dd);
	for (struct dirent *e; (e = readdir(dd));)
		n += e->d_name[0] != '.';
	closedir(dd);
	assert_int_equal(n, 5 + 6 - 2 + 1 /* ssl */);
}

/* A hostile or odd /etc: a link in the image's place of /etc is not followed (its sandboxes see
 * airlock's files alone), and a tree deeper than the bound is refused with what it is. */
static void test_prepared_etc_refusals(void **state)
{
	(void)state;
	char t[64], path[1024], cmd[160];
	snprintf(t, sizeof(t), "/tmp/al-etcprep-XXXXXX");
	assert_non_null(mkdtemp(t));
	snprintf(path, sizeof(path), "%s/a", t);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/a/etc", t);
	assert_int_equal(symlink(root, path), 0); /* /etc -> a directory outside: never entered */
	snprintf(path, sizeof(path), "%s/b", t);
	assert_int_equal(mkdir(path, 0755), 0);
	size_t n = (size_t)snprintf(path, sizeof(path), "%s/b/etc", t);
	for (int i = 0; i < 70; i++) {
		assert_int_equal(mkdir(path, 0755), 0);
		n += (size_t)snprintf(path + n, sizeof(path) - n, "/d");
	}
	int dfd = open(t, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int afd = openat(dfd, "a", O_RDONLY | O_DIRECTORY | O_CLOEXEC),
	    bfd = openat(dfd, "b", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0 && afd >= 0 && bfd >= 0);
	assert_int_equal(store_etc_prepare(afd, dfd, "pa", NULL), 0);
	snprintf(path, sizeof(path), "%s/pa", t);
	int k = 0;
	DIR *dd = opendir(path);
	assert_non_null(dd);
	for (struct dirent *e; (e = readdir(dd));)
		k += e->d_name[0] != '.';
	closedir(dd);
	assert_int_equal(k, 6); /* airlock's six names, nothing of the link's target */
	assert_link(path, "hosts", IMG_ETC_OWN "/hosts");
	struct al_error err = {0};
	assert_int_equal(store_etc_prepare(bfd, dfd, "pb", &err), -ELOOP);
	assert_non_null(strstr(err.msg, "64 levels deep"));
	close(afd);
	close(bfd);
	close(dfd);
	snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s' && rm -rf '%s'", t, t);
	assert_int_equal(system(cmd), 0);
}

static void test_image_root(void **state)
{
	(void)state;
	struct fs_plan plan;
	struct al_policy *p = build(&plan, true);
	const struct fs_op *o = op_at(&plan, "opt");
	assert_non_null(o);
	assert_int_equal(o->kind, FS_BIND);
	assert_true(o->attr_set & MOUNT_ATTR_RDONLY);
	o = op_at(&plan, "srv");
	assert_non_null(o);
	assert_int_equal(o->kind, FS_SYMLINK);
	assert_string_equal(o->text, "opt");
	/* /etc: the prepared one, bound read-only; nothing is made inside it at start. */
	o = NULL;
	for (size_t i = 0; i < plan.n; i++)
		if (plan.ops[i].kind == FS_BIND && strcmp(plan.ops[i].dest, "etc") == 0)
			o = &plan.ops[i];
	assert_non_null(o);
	assert_string_equal(o->src + strlen(o->src) - strlen(IMG_ETC_DIR), IMG_ETC_DIR);
	assert_true(o->attr_set & MOUNT_ATTR_RDONLY);
	for (size_t i = 0; i < plan.n; i++)
		assert_false(strncmp(plan.ops[i].dest, "etc/", 4) == 0);
	/* airlock's own files where the prepared /etc links them; the image's resolv.conf there too. */
	for (size_t i = 0; img_etc_own[i]; i++) {
		char dest[64];
		snprintf(dest, sizeof(dest), "%s/%s", &IMG_ETC_OWN[1], img_etc_own[i]);
		o = op_at(&plan, dest);
		assert_non_null(o);
		assert_int_equal(o->kind, FS_FILE);
	}
	/* ... and nothing else there: each name written is one the prepared /etc links. */
	for (size_t i = 0; i < plan.n; i++)
		if (strncmp(plan.ops[i].dest, ".airlock-etc/", 13) == 0)
			assert_true(img_etc_is_own(plan.ops[i].dest + 13));
	o = op_at(&plan, ".airlock-etc/resolv.conf");
	assert_int_equal(o->len, strlen("nameserver 192.0.2.53\n"));
	assert_memory_equal(o->text, "nameserver 192.0.2.53\n", o->len);
	assert_int_equal(o->mode, 0444);
	for (size_t i = 0; i < plan.n; i++) {
		const struct fs_op *x = &plan.ops[i];
		assert_false(x->kind == FS_BIND && x->src && strstr(x->src, "/proc"));
		assert_false(x->kind == FS_BIND && x->src && strstr(x->src, "/tmp/al-fsplan") &&
			     !strcmp(x->dest, "tmp"));
	}
	/* A top-level file is the image's (a static binary FROM scratch is one), bound read-only. */
	o = op_at(&plan, "hello.txt");
	assert_non_null(o);
	assert_int_equal(o->kind, FS_BIND);
	assert_true(o->attr_set & MOUNT_ATTR_RDONLY);
	assert_int_equal(op_at(&plan, "tmp")->kind, FS_MKDIR);
	fs_plan_free(&plan);
	al_policy_free(p);
}

/* --net host: the host's resolver configuration, in place of the image's. */
static void test_image_host_net(void **state)
{
	(void)state;
	struct fs_plan plan;
	struct al_policy *p = image_policy(true);
	assert_int_equal(al_policy_set_network(p, AL_NET_HOST, NULL), 0);
	assert_int_equal(build_p(&plan, p), 0);
	const struct fs_op *o = op_at(&plan, ".airlock-etc/resolv.conf");
	assert_non_null(o);
	assert_int_equal(o->kind, FS_BIND);
	assert_string_equal(o->src, "/etc/resolv.conf");
	fs_plan_free(&plan);
	al_policy_free(p);
}

/* A bind beneath the image's read-only /etc covers one of its entries, or is refused up front. */
static void test_image_etc_binds(void **state)
{
	(void)state;
	struct fs_plan plan;
	struct al_policy *p = image_policy(true);
	assert_int_equal(al_policy_add_bind(p, "/etc/hostname", "/etc/app.conf", false, NULL), 0);
	assert_int_equal(build_p(&plan, p), 0);
	assert_int_equal(op_at(&plan, "etc/app.conf")->kind, FS_BIND);
	fs_plan_free(&plan);
	al_policy_free(p);
	static const char *const refused[] = {"/etc/nosuch", "/etc/hosts", "/etc/out/x"};
	for (size_t i = 0; i < AL_ARRAY_SIZE(refused); i++) {
		p = image_policy(true);
		assert_int_equal(al_policy_add_bind(p, "/etc/hostname", refused[i], false, NULL), 0);
		assert_int_equal(build_p(&plan, p), -EROFS);
		fs_plan_free(&plan);
		al_policy_free(p);
	}
}

/* A --rootfs without an image keeps the old view: its system directories only. */
static void test_rootfs_only(void **state)
{
	(void)state;
	struct fs_plan plan;
	struct al_policy *p = build(&plan, false);
	assert_null(op_at(&plan, "opt"));
	assert_null(op_at(&plan, "etc/app.conf"));
	assert_null(op_at(&plan, ".airlock-etc"));
	assert_int_equal(op_at(&plan, "etc/passwd")->kind, FS_FILE);
	for (size_t i = 0; i < plan.n; i++)
		assert_false(plan.ops[i].kind == FS_BIND && strcmp(plan.ops[i].dest, "etc") == 0);
	fs_plan_free(&plan);
	al_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prepared_etc),	cmocka_unit_test(test_prepared_etc_refusals),
		cmocka_unit_test(test_image_root),	cmocka_unit_test(test_image_host_net),
		cmocka_unit_test(test_image_etc_binds), cmocka_unit_test(test_rootfs_only),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
