/* cleanup.h — the one cleanup convention: scope-bound release with __attribute__((cleanup)). */
#ifndef AL_UTIL_CLEANUP_H
#define AL_UTIL_CLEANUP_H

#include <stdlib.h>
#include <unistd.h>

static inline void al_freep(void *p)
{
	free(*(void **)p);
}

/* Never retry close() on EINTR: the descriptor is gone either way on Linux. */
static inline void al_closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

/* Closes both ends of a pipe or socket pair that are still open. */
static inline void al_close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
}

#define cleanup_free  __attribute__((cleanup(al_freep)))
#define cleanup_close __attribute__((cleanup(al_closep)))

/* Hand ownership out of a cleanup-scoped variable. */
static inline void *al_steal_ptr(void *pp)
{
	void **p = (void **)pp;
	void *v = *p;
	*p = NULL;
	return v;
}
static inline int al_steal_fd(int *fd)
{
	int v = *fd;
	*fd = -1;
	return v;
}
#define steal_ptr(p) al_steal_ptr(&(p))
#define steal_fd(fd) al_steal_fd(&(fd))

#define AL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
