/* openat2.h — openat2(2), which glibc 2.36 does not wrap: a path opened beneath a directory under
 * the kernel's own resolution rules, the way every path that a sandbox, an image or a pod's
 * author could have planted links in is opened (the workspace, an image's tree, a rootfs, the
 * verdict directory). One wrapper, so that the flags, O_CLOEXEC and the retry are the same
 * everywhere. */
#ifndef AL_UTIL_OPENAT2_H
#define AL_UTIL_OPENAT2_H

#include <linux/openat2.h>
#include <stdint.h>
#include <sys/types.h>

/* Beneath the directory, no symlink in any component, no /proc magic link: a walk that never
 * leaves the tree and never goes where a link points. */
#define AL_RESOLVE_NOLINKS (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
/* As a process chrooted at the directory would resolve it: absolute links and ".." stay inside. */
#define AL_RESOLVE_IN_ROOT (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)

/* openat2(dirfd, path, {flags | O_CLOEXEC, mode, resolve}): the descriptor, or -errno. The kernel
 * answers EAGAIN when a rename or a mount raced the walk of a RESOLVE_BENEATH or RESOLVE_IN_ROOT
 * path; that is retried, a bounded number of times (a sandbox that renames without pause must not
 * hold a server thread forever), then -EAGAIN. No allocation: safe in a child before execve. */
int al_openat2(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve);

#endif
