/* test_image.c — unit tests for the image layer's pure checks: names, digests, archive member names, the profile's images. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>

#include "config/profile.h"
#include "image/imgint.h"

static void test_names(void **state)
{
	(void)state;
	static const char *const good[] = {"bb", "busybox:latest", "py3.11", "a_b-c@d+e", "0x"};
	static const char *const bad[] = {"", "-x", ".hidden", "a/b", "..", "a b", "x\n", ":tag"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!img_name_valid(good[i]))
			fail_msg("'%s' refused", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (img_name_valid(bad[i]))
			fail_msg("'%s' accepted", bad[i]);
	char longname[IMG_NAME_MAX + 1];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[IMG_NAME_MAX] = 0;
	assert_false(img_name_valid(longname));
	longname[IMG_NAME_MAX - 1] = 0;
	assert_true(img_name_valid(longname));
}

static void test_digests(void **state)
{
	(void)state;
	char d[80] = "sha256:";
	memset(d + 7, 'a', 64);
	d[71] = 0;
	assert_true(img_digest_valid(d));
	d[8] = 'A'; /* lowercase only: the digest is also a path */
	assert_false(img_digest_valid(d));
	d[8] = '/';
	assert_false(img_digest_valid(d));
	assert_false(img_digest_valid("sha256:abc"));
	assert_false(img_digest_valid("sha512:aaaa"));
	/* NAME@sha256:<hex>: a reference (the server's), never a name; its NAME part. */
	char ref[96];
	d[8] = 'a';
	snprintf(ref, sizeof(ref), "bb@%s", d);
	assert_false(img_name_valid(ref));
	assert_int_equal(img_ref_name_len(ref), 2);
	assert_int_equal(img_ref_name_len("bb"), 2);
	assert_int_equal(img_ref_name_len(d), strlen(d));
	assert_int_equal(img_ref_name_len("a@sha256:abc"), strlen("a@sha256:abc")); /* no digest: no reference */
	snprintf(ref, sizeof(ref), "-x@%s", d);
	assert_int_equal(img_ref_name_len(ref), strlen(ref)); /* no name before it: no reference */
}

static void expect_member(const char *name, int want)
{
	struct al_error err = {0};
	int r = unpack_check_name(name, &err);
	if (r != want)
		fail_msg("unpack_check_name(\"%s\") = %d, want %d (%s)", name, r, want, err.msg);
	if (r < 0 && (err.code != r || !err.msg[0]))
		fail_msg("unpack_check_name(\"%s\"): no message", name);
}

static void test_members(void **state)
{
	(void)state;
	expect_member("usr/bin/busybox", 0);
	expect_member("./usr/bin/", 0);
	expect_member("usr/share/.wh..wh..opq", 0);
	expect_member("a..b/..c", 0);
	expect_member("/etc/passwd", -EPERM);
	expect_member("../etc/passwd", -EPERM);
	expect_member("usr/../../x", -EPERM);
	expect_member("usr/..", -EPERM);
	expect_member("usr//bin", -EPERM);
	expect_member("usr/./bin", -EPERM);
	expect_member("./", -EINVAL); /* the root itself is no file */
	expect_member("", -EINVAL);
}

/* An image config's User against the image's own passwd and group: names, numbers, groups, and
 * hostile or broken lines that must neither match nor crash. */
static void test_user(void **state)
{
	(void)state;
	const char *pw = "root:x:0:0:root:/root:/bin/sh\n"
			 "broken line without colons\n"
			 "short:x\n"
			 "big:x:99999999999:1:\n"
			 "app:x:1000:1001:app:/opt/app:/bin/sh\n"
			 "nonroot:x:65532:65532\n"
			 "app2:x:1000:1000";
	const char *gr = "root:x:0:\nstaff:x:50:\nbad:x:notanumber:\n";
	uint32_t u = 7, g = 7;
	assert_int_equal(img_user_parse("app", pw, gr, &u, &g), 0);
	assert_int_equal(u, 1000);
	assert_int_equal(g, 1001);
	assert_int_equal(img_user_parse("nonroot", pw, gr, &u, &g), 0);
	assert_int_equal(u, 65532);
	assert_int_equal(img_user_parse("app:staff", pw, gr, &u, &g), 0);
	assert_int_equal(g, 50);
	assert_int_equal(img_user_parse("1000", pw, gr, &u, &g), 0); /* its primary group, from passwd */
	assert_int_equal(g, 1001);
	assert_int_equal(img_user_parse("4242:17", NULL, NULL, &u, &g), 0);
	assert_int_equal(u, 4242);
	assert_int_equal(g, 17);
	assert_int_equal(img_user_parse("4242", NULL, NULL, &u, &g), 0);
	assert_int_equal(g, 0);
	assert_int_equal(img_user_parse("ap", pw, gr, &u, &g), -ENOENT); /* a prefix is not a name */
	assert_int_equal(img_user_parse("short", pw, gr, &u, &g), -ENOENT);
	assert_int_equal(img_user_parse("big", pw, gr, &u, &g), -ENOENT);
	assert_int_equal(img_user_parse("broken line without colons", pw, gr, &u, &g), -ENOENT);
	assert_int_equal(img_user_parse("app:bad", pw, gr, &u, &g), -ENOENT);
	assert_int_equal(img_user_parse("app", NULL, NULL, &u, &g), -ENOENT);
	assert_int_equal(img_user_parse("", pw, gr, &u, &g), -EINVAL);
	assert_int_equal(img_user_parse("app:", pw, gr, &u, &g), -EINVAL);
	assert_int_equal(img_user_parse("99999999999", pw, gr, &u, &g), -ENOENT);
}

static void test_profile_images(void **state)
{
	(void)state;
	char *list[] = {"bb", "py"};
	struct cfg_profile pr = {.name = "p", .image = "base", .images = {list, 2}};
	struct al_error err = {0};
	assert_int_equal(cfg_profile_image_allowed(&pr, "base", &err), 0);
	assert_int_equal(cfg_profile_image_allowed(&pr, "py", &err), 0);
	assert_int_equal(cfg_profile_image_allowed(&pr, "other", &err), -EPERM);
	/* A reference by digest is allowed by its name alone (only the server makes one). */
	char ref[96] = "py@sha256:";
	memset(ref + 10, 'b', 64);
	ref[74] = 0;
	assert_int_equal(cfg_profile_image_allowed(&pr, ref, &err), 0);
	ref[0] = 'q';
	assert_int_equal(cfg_profile_image_allowed(&pr, ref, &err), -EPERM);
	assert_int_equal(cfg_profile_image_allowed(&pr, "py@", &err), -EPERM);
	assert_non_null(strstr(err.msg, "does not offer"));
	struct cfg_profile none = {.name = "n"};
	assert_int_equal(cfg_profile_image_allowed(&none, "bb", &err), -EPERM);
}

/* A build's progress from mmdebstrap's and apt's lines: phase, counts, the download's size. */
static void test_build_progress(void **state)
{
	(void)state;
	struct img_progress p = {0};
	char text[256];
	img_progress_text(&p, text, sizeof(text));
	assert_string_equal(text, "starting");
	static const char *const lines[] = {
		"I: installing remaining packages inside the chroot...",
		"0 upgraded, 3 newly installed, 0 to remove and 0 not upgraded.",
		"Need to get 1,234 kB of archives.",
		"Get:1 http://deb.debian.org/debian bookworm/main amd64 a amd64 1 [10 kB]",
		"Get:2 http://deb.debian.org/debian bookworm/main amd64 b amd64 1 [10 kB]",
		"Unpacking a (1) ...",
		"Setting up a (1) ...",
		"something else entirely",
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		img_progress_feed(&p, lines[i]);
	img_progress_text(&p, text, sizeof(text));
	assert_string_equal(
		text, "installing remaining packages inside the chroot: 2/3 fetched of 1,234 kB, 1 unpacked, 1 set up");
	/* A new apt run starts its own counts. */
	img_progress_feed(&p, "1 upgraded, 7 newly installed, 0 to remove and 0 not upgraded.");
	img_progress_text(&p, text, sizeof(text));
	assert_string_equal(text, "installing remaining packages inside the chroot: 0/7 fetched, 0 unpacked, 0 set up");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),	cmocka_unit_test(test_digests),
		cmocka_unit_test(test_members), cmocka_unit_test(test_profile_images),
		cmocka_unit_test(test_user),	cmocka_unit_test(test_build_progress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
