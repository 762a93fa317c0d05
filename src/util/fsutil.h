/* fsutil.h — small filesystem and descriptor helpers shared by the layers. */
#ifndef AL_UTIL_FSUTIL_H
#define AL_UTIL_FSUTIL_H

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

#endif
