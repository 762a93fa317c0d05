/* fsutil.h — small filesystem and descriptor helpers shared by the layers. */
#ifndef AL_UTIL_FSUTIL_H
#define AL_UTIL_FSUTIL_H

#include <locale.h>
#include <stdbool.h>
#include <stddef.h>

/* Removes path and everything beneath it, never following a symlink nor crossing into another
 * mount. Call only when nothing else can write there any more. 0 or -errno (first failure). */
int al_remove_tree(const char *path);

/* Creates the missing directories above path (absolute), each with exactly mode (whatever the
 * umask); existing ones are left as they are (the operator's choice), and a component that is not
 * a directory fails whatever opens path next. 0 or -errno. */
int al_make_parents(const char *path, unsigned mode);

/* Descriptors handed to a sandbox or a boundary program must not sit on 0-2 (a caller that closed
 * them gets them back from pipe2), which the child dup2s over: fd moved to 3 or above
 * (O_CLOEXEC; the old one closed), or -1 with errno. Negative or >= 3: fd itself. */
int al_fd_above_stdio(int fd);
/* pipe2(O_CLOEXEC) with both ends above stdio: 0 or -errno. */
int al_pipe_above_stdio(int p[2]);

/* All of len bytes to fd, again after EINTR and short writes; no allocation (safe in a child before
 * execve): 0, or -errno (-EIO for a write of nothing). */
int al_write_all(int fd, const void *buf, size_t len);

/* Where execvp would find prog in the tree at root ("" for the host's) along path (a PATH value,
 * directories separated by ':'): the first executable regular file, its name as the tree has it
 * in buf. Under a root, links resolve as a process chrooted there would resolve them
 * (AL_RESOLVE_IN_ROOT), never against the host. A prog with a slash is looked up as it is. */
bool al_find_program(const char *root, const char *path, const char *prog, char *buf, size_t cap);

/* File names as bytes of UTF-8 for this thread, until al_utf8_names_end(the value returned):
 * libarchive converts a tar's names (pax stores them as UTF-8) to the current locale's charset,
 * and the C locale's refuses every name beyond ASCII, which Debian's own trees have. Only
 * LC_CTYPE, only this thread (uselocale). (locale_t)0 when no C.UTF-8 was to be had: unchanged. */
locale_t al_utf8_names(void);
void al_utf8_names_end(locale_t saved);

#endif
