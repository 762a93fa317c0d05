/* tar.c — opening someone else's tar and the one rule for its members' names (tar.h). */
#include "image/tar.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "util/error.h"

struct archive *tar_open(int fd, int code, const char *what, struct al_error *err)
{
	if (lseek(fd, 0, SEEK_SET) < 0) {
		al_err_sys(err, errno, "rewinding %s", what);
		return NULL;
	}
	struct archive *a = archive_read_new();
	if (!a) {
		al_err(err, ENOMEM, "out of memory");
		return NULL;
	}
	archive_read_support_format_tar(a);
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_filter_xz(a);
	archive_read_support_filter_bzip2(a);
	if (archive_read_open_fd(a, fd, 1 << 16) != ARCHIVE_OK) {
		al_err(err, code, "not a tar archive: %s", archive_error_string(a));
		archive_read_free(a);
		return NULL;
	}
	return a;
}

void tar_freep(struct archive **a)
{
	if (*a)
		archive_read_free(*a);
}

const char *tar_norm_name(const char *in, char *out, size_t size)
{
	out[0] = 0;
	if (*in == '/')
		return "an absolute name";
	while (in[0] == '.' && in[1] == '/')
		in += 2 + strspn(in + 2, "/");
	size_t n = strlen(in);
	while (n && in[n - 1] == '/')
		n--;
	if (n >= size)
		return "name too long";
	memcpy(out, in, n);
	out[n] = 0;
	if (strcmp(out, ".") == 0)
		out[0] = 0;
	for (const char *p = out; *p;) {
		size_t len = strcspn(p, "/");
		const char *why = len == 0 || (len == 1 && p[0] == '.')	   ? "an empty or '.' part"
				  : len == 2 && p[0] == '.' && p[1] == '.' ? "a '..' part leads outside"
									   : NULL;
		if (why) {
			out[0] = 0;
			return why;
		}
		p += len + (p[len] == '/');
	}
	return NULL;
}
