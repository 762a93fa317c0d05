/* imgconf.c — an image config's User and WorkingDir, read against the image's own tree: bounded, never outside it. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "image/image.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/openat2.h"

#define IDS_FILE_MAX (1u << 20) /* an image's /etc/passwd or /etc/group: read at most this much */
#define ID_MAX	     0xFFFFFFFEu

/* A decimal id of 1 to 10 digits below (uid_t)-1: 0 and *out, or -EINVAL. */
static int parse_id(const char *s, size_t n, uint32_t *out)
{
	if (n == 0 || n > 10 || strspn(s, "0123456789") < n)
		return -EINVAL;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (uint64_t)(s[i] - '0');
	if (v > ID_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* In a passwd- or group-style text, the line whose field 0 is name (by_name) or whose field 2 is
 * the id *id: its field 2 into *id and, for passwd, its field 3 into *gid. 0, or -ENOENT. Lines
 * are the image's word: any that does not parse is skipped. */
static int find_entry(const char *text, const char *name, size_t name_len, bool by_name, uint32_t *id, uint32_t *gid)
{
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		const char *f[5] = {line};
		size_t nf = 1;
		for (size_t i = 0; i < len && nf < 5; i++)
			if (line[i] == ':')
				f[nf++] = line + i + 1;
		const char *stop = line + len;
		uint32_t v = 0, g = 0;
		bool ok = nf >= 3 && parse_id(f[2], (size_t)((nf > 3 ? f[3] - 1 : stop) - f[2]), &v) == 0;
		if (ok && gid && (nf < 4 || parse_id(f[3], (size_t)((nf > 4 ? f[4] - 1 : stop) - f[3]), &g) < 0))
			ok = false;
		bool match = by_name ? name && nf >= 2 && (size_t)(f[1] - 1 - line) == name_len &&
					       strncmp(line, name, name_len) == 0
				     : v == *id;
		if (ok && match) {
			*id = v;
			if (gid)
				*gid = g;
			return 0;
		}
		line = end ? end + 1 : NULL;
	}
	return -ENOENT;
}

int img_user_parse(const char *spec, const char *passwd, const char *group, uint32_t *uid, uint32_t *gid)
{
	const char *colon = strchr(spec, ':');
	size_t un = colon ? (size_t)(colon - spec) : strlen(spec);
	const char *gs = colon ? colon + 1 : NULL;
	if (un == 0 || (gs && !*gs))
		return -EINVAL;
	uint32_t g = 0;
	bool have_g = false;
	if (parse_id(spec, un, uid) == 0) {
		/* A number needs no passwd entry; its primary group comes from one if there is. */
		uint32_t id = *uid;
		have_g = passwd && find_entry(passwd, NULL, 0, false, &id, &g) == 0;
	} else if (!passwd || find_entry(passwd, spec, un, true, uid, &g) < 0) {
		return -ENOENT;
	} else {
		have_g = true;
	}
	if (gs && parse_id(gs, strlen(gs), &g) < 0 && (!group || find_entry(group, gs, strlen(gs), true, &g, NULL) < 0))
		return -ENOENT;
	*gid = gs || have_g ? g : 0;
	return 0;
}

/* The regular file path of the image's tree, resolved inside it (symlinks included: an image's
 * symlink to /etc/shadow names the image's own), at most IDS_FILE_MAX bytes: malloc'd text, or
 * NULL when it is absent or unreadable. */
static char *read_in_root(const char *root, const char *path)
{
	cleanup_close int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int fd = rfd < 0 ? -1
				       : al_openat2(rfd, path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0,
						    AL_RESOLVE_IN_ROOT | RESOLVE_NO_XDEV);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > IDS_FILE_MAX)
		return NULL;
	char *buf = malloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (buf && got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (buf)
		buf[got] = 0;
	return buf;
}

int img_user_resolve(const struct img_ref *ref, uint32_t *uid, uint32_t *gid, struct al_error *err)
{
	if (!ref->user)
		return -ENOENT;
	cleanup_free char *passwd = read_in_root(ref->rootfs, "etc/passwd");
	cleanup_free char *group = read_in_root(ref->rootfs, "etc/group");
	int r = img_user_parse(ref->user, passwd, group, uid, gid);
	if (r == -EINVAL)
		return al_err(err, EINVAL, "the image's User '%.64s' is not NAME, UID, NAME:GROUP or UID:GID",
			      ref->user);
	if (r < 0)
		return al_err(err, ENOENT, "the image's User '%.64s' is not in its /etc/passwd or /etc/group",
			      ref->user);
	return 0;
}

bool img_dir_exists(const struct img_ref *ref, const char *path)
{
	cleanup_close int rfd = open(ref->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int fd =
		rfd < 0 ? -1 : al_openat2(rfd, path, O_PATH | O_DIRECTORY, 0, AL_RESOLVE_IN_ROOT | RESOLVE_NO_XDEV);
	return fd >= 0;
}
