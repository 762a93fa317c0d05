/* test_fsplan.c — unit tests for the filesystem plan of an image: its whole root shown, what the sandbox owns kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kit/fsplan.h"
#include "image/image.h"
#include "policy/policy.h"

static char root[64];

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

/* A tree shaped as an image: /usr, an /etc with a file of its own and one airlock writes, /opt,
 * a top-level symlink, /proc and /tmp of its own, and a name that pretends to be ours. */
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
	dir(".airlock-image-etc");
	put("etc/app.conf", "x\n");
	put("etc/passwd", "root:x:0:0::/:/bin/sh\n");
	dir("etc/ssl");
	put("hello.txt", "a file at the top: not shown\n");
	link_("opt", "srv");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void build(struct fs_plan *plan, bool image)
{
	struct al_policy *p = NULL;
	assert_int_equal(al_policy_new(&p), 0);
	assert_int_equal(al_policy_set_rootfs(p, root, NULL), 0);
	if (image) { /* as al_policy_set_image leaves it, without a store */
		struct img_ref *ref = calloc(1, sizeof(*ref));
		assert_non_null(ref);
		ref->lock_fd = -1;
		p->image = ref;
	}
	struct fs_host host;
	memset(plan, 0, sizeof(*plan));
	plan->sendfd_sock = -1;
	fs_host_probe(&host, plan, p->rootfs);
	assert_int_equal(fs_plan_build(plan, p, &host, NULL), 0);
	al_policy_free(p);
}

static void test_image_root(void **state)
{
	(void)state;
	struct fs_plan plan;
	build(&plan, true);
	const struct fs_op *o = op_at(&plan, "opt");
	assert_non_null(o);
	assert_int_equal(o->kind, FS_BIND);
	assert_true(o->attr_set & MOUNT_ATTR_RDONLY);
	o = op_at(&plan, "srv");
	assert_non_null(o);
	assert_int_equal(o->kind, FS_SYMLINK);
	assert_string_equal(o->text, "opt");
	o = op_at(&plan, ".airlock-image-etc"); /* the image's /etc, not its own entry of that name */
	assert_non_null(o);
	assert_int_equal(o->kind, FS_BIND);
	assert_string_equal(o->src + strlen(o->src) - 4, "/etc");
	assert_true(o->attr_set & MOUNT_ATTR_RDONLY);
	o = op_at(&plan, "etc/app.conf");
	assert_non_null(o);
	assert_int_equal(o->kind, FS_SYMLINK);
	assert_string_equal(o->text, FS_IMAGE_ETC "/app.conf");
	assert_non_null(op_at(&plan, "etc/ssl"));
	/* airlock's own /etc/passwd, never the image's; /proc and /tmp stay the sandbox's own. */
	o = op_at(&plan, "etc/passwd");
	assert_int_equal(o->kind, FS_FILE);
	for (size_t i = 0; i < plan.n; i++) {
		const struct fs_op *x = &plan.ops[i];
		assert_false(x->kind == FS_SYMLINK && strcmp(x->dest, "etc/passwd") == 0);
		assert_false(x->kind == FS_BIND && x->src && strstr(x->src, "/proc"));
		assert_false(x->kind == FS_BIND && x->src && strstr(x->src, "/tmp/al-fsplan") &&
			     !strcmp(x->dest, "tmp"));
		assert_false(strcmp(x->dest, "hello.txt") == 0);
	}
	assert_int_equal(op_at(&plan, "tmp")->kind, FS_MKDIR);
	fs_plan_free(&plan);
}

/* A --rootfs without an image keeps the old view: its system directories only. */
static void test_rootfs_only(void **state)
{
	(void)state;
	struct fs_plan plan;
	build(&plan, false);
	assert_null(op_at(&plan, "opt"));
	assert_null(op_at(&plan, "etc/app.conf"));
	assert_null(op_at(&plan, ".airlock-image-etc"));
	fs_plan_free(&plan);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_image_root),
		cmocka_unit_test(test_rootfs_only),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
