/* fuzz_image.c — fuzz target for the image importer's parsers: member names, the outer archive and the manifests. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/imgint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An error is -errno with a terminated message; nothing else. */
static void check(int r, const struct al_error *err)
{
	if (r > 0 || (r < 0 && (err->code >= 0 || memchr(err->msg, 0, sizeof(err->msg)) == NULL)))
		abort();
}

/* A name the checker accepts is relative and has no ".." part. */
static void names(const uint8_t *data, size_t size)
{
	char *s = strndup((const char *)data, size);
	struct al_error err = {0};
	if (!s)
		return;
	int r = unpack_check_name(s, &err);
	check(r, &err);
	if (r == 0 && (s[0] == '/' || strcmp(s, "..") == 0 || strncmp(s, "../", 3) == 0 || strstr(s, "/../") ||
		       (strlen(s) >= 3 && strcmp(s + strlen(s) - 3, "/..") == 0)))
		abort();
	free(s);
}

/* The input as an image's /etc/passwd and /etc/group (split at the first NUL), looked up with a
 * few User specs: an answer or a refusal, never a crash or an id of (uid_t)-1. */
static void users(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 2);
	if (!s)
		return;
	memcpy(s, data, size);
	s[size] = s[size + 1] = 0;
	const char *group = s + strlen(s) + 1;
	static const char *const specs[] = {"app", "root", "1000", "app:staff", "0:0", "x:1"};
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		uint32_t u = 0, g = 0;
		int r = img_user_parse(specs[i], s, group, &u, &g);
		if ((r != 0 && r != -ENOENT && r != -EINVAL) || (r == 0 && (u == UINT32_MAX || g == UINT32_MAX)))
			abort();
	}
	free(s);
}

static char dir[64];

static void remove_scratch(void)
{
	(void)unpack_rm_tree(dir);
}

/* A scratch directory per process (cleaned at every input, removed at exit). */
static int scratch(void)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz-image.XXXXXX");
		if (!mkdtemp(dir))
			abort();
		atexit(remove_scratch);
	}
	(void)unpack_rm_tree(dir);
	if (mkdir(dir, 0700) < 0)
		abort();
	return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void put(int dfd, const char *name, const uint8_t *data, size_t size)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	names(data, size);
	users(data, size);
	int dfd = scratch();
	struct img_limits lim = {1 << 20, 1000};
	struct al_error err = {0};
	/* The input as an outer archive (oci-archive, docker save). */
	int mfd = memfd_create("fuzz", MFD_CLOEXEC);
	if (mfd < 0 || write(mfd, data, size) != (ssize_t)size)
		abort();
	check(unpack_outer(mfd, dfd, &lim, &err), &err);
	close(mfd);
	/* The input as index.json, then as docker save's manifest.json. */
	struct oci_plan plan;
	for (int i = 0; i < 2; i++) {
		close(dfd);
		dfd = scratch();
		put(dfd, i ? "manifest.json" : "index.json", data, size);
		err = (struct al_error){0};
		check(oci_plan_load(dfd, &plan, &err), &err);
		oci_plan_free(&plan);
	}
	close(dfd);
	return 0;
}
