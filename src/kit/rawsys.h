/* rawsys.h — the few libc calls the sandbox side makes through raw system calls, and why.
 *
 * init is a clone3 child of a supervisor that may be multithreaded (airlock serve). The child has
 * one thread, but glibc's bookkeeping still lists the parent's threads: its setresuid() family
 * signals every listed thread and waits for them (setxid), forever; its fork() takes the malloc
 * locks, which another thread may have held at the moment of the clone. The raw calls change only
 * the calling thread, which is all the child has. */
#ifndef AL_KIT_RAWSYS_H
#define AL_KIT_RAWSYS_H

#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static inline int raw_setresuid(uid_t r, uid_t e, uid_t s)
{
	return (int)syscall(SYS_setresuid, r, e, s);
}

static inline int raw_setresgid(gid_t r, gid_t e, gid_t s)
{
	return (int)syscall(SYS_setresgid, r, e, s);
}

static inline int raw_setgroups_none(void)
{
	return (int)syscall(SYS_setgroups, 0, NULL);
}

/* fork() without glibc's atfork handlers and locks (the child must not allocate either). */
static inline pid_t raw_fork(void)
{
	return (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, 0);
}

#endif
