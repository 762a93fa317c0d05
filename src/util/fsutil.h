/* fsutil.h — small filesystem helpers shared by the layers. */
#ifndef AL_UTIL_FSUTIL_H
#define AL_UTIL_FSUTIL_H

/* Removes path and everything beneath it, never following a symlink nor crossing into another
 * mount. Call only when nothing else can write there any more. 0 or -errno (first failure). */
int al_remove_tree(const char *path);

/* Creates the missing directories above path (absolute), each with exactly mode (whatever the
 * umask); existing ones are left as they are (the operator's choice), and a component that is not
 * a directory fails whatever opens path next. 0 or -errno. */
int al_make_parents(const char *path, unsigned mode);

#endif
