/* channel.h — the binary record the sandbox side sends the supervisor: never allocated, never formatted. */
#ifndef AL_KIT_CHANNEL_H
#define AL_KIT_CHANNEL_H

#include <stdint.h>

enum nat_stage {
	NS_NONE,
	NS_PARENT, /* the supervisor died or never released the child */
	NS_OPEN_SOURCE,
	NS_CREDS,
	NS_PROPAGATION,
	NS_ROOT_TMPFS,
	NS_MKDIR,
	NS_SYMLINK,
	NS_FILE,
	NS_BIND,
	NS_TMPFS,
	NS_PROC,
	NS_DEVPTS,
	NS_SETATTR,
	NS_OVERLAY,
	NS_CHECKOUT,
	NS_PIVOT,
	NS_ROOT_RO,
	NS_HOSTNAME,
	NS_NET,
	NS_FORK,
	NS_SETSID,
	NS_STDIO,
	NS_RLIMIT,
	NS_CAPS,
	NS_SETUID,
	NS_NNP,
	NS_CHDIR,
	NS_CGROUP,
	NS_CGROUPNS,
	NS_LANDLOCK,
	NS_SECCOMP,
	NS_EXEC,
	NS_TTY, /* the job's terminal (--tty): a pty of the sandbox's devpts */
	NS__COUNT,
};

enum nat_kind {
	NK_ERROR = 1,  /* a setup step failed: the payload never ran */
	NK_EXITED = 2, /* the payload ended; wstatus holds its wait status */
};

struct nat_record {
	uint32_t kind;
	uint32_t stage;
	int32_t err; /* errno */
	int32_t wstatus;
	char what[112]; /* the path or object of the failed step */
	/* NK_EXITED: the payload's usage (wait4), for supervisors that cannot waitid the sandbox. */
	int64_t utime_us, stime_us, maxrss_kib;
};
_Static_assert(sizeof(struct nat_record) <= 512, "records must be written atomically (PIPE_BUF)");

/* Sends one record; for use between clone and exec (no allocation, no formatting). */
void nat_send(int fd, enum nat_kind kind, enum nat_stage stage, int err, int wstatus, const char *what);
struct rusage;
/* Sends NK_EXITED with the payload's wait status and usage. */
void nat_send_exit(int fd, int wstatus, const struct rusage *ru);
/* Human names for the supervisor's messages. */
const char *nat_stage_name(enum nat_stage s);
const char *nat_stage_feature(enum nat_stage s);

#endif
