/* tar.h — reading tar archives that someone else made (image layers, an image's outer archive, a
 * files API upload): one way to open them and one rule for their members' names, so that what an
 * image refuses and what an upload refuses never drift apart. The callers keep their own limits,
 * member checks and error codes. */
#ifndef AL_IMAGE_TAR_H
#define AL_IMAGE_TAR_H

#include <archive.h>
#include <stddef.h>

#include "airlock/airlock.h"

/* fd rewound and opened as a tar, plain or compressed as image specs and clients compress them
 * (gzip, zstd, xz, bzip2). NULL with err set, errno code: "rewinding WHAT" or "not a tar archive". */
struct archive *tar_open(int fd, int code, const char *what, struct al_error *err);

void tar_freep(struct archive **a);
#define cleanup_archive __attribute__((cleanup(tar_freep)))

/* A member's name as a plain relative name in out[0..size): "./" prefixes and a trailing "/"
 * dropped, "" for the archive's root itself. NULL, or why it is refused (an absolute name, a name
 * too long, an empty or "." part, a ".." part). Pure: out is "" whenever a reason is returned. */
const char *tar_norm_name(const char *in, char *out, size_t size);

#endif
