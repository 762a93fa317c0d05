/* channel.c — sending setup records from the sandbox, and naming their stages for the supervisor. */
#include "channel.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void send_rec(int fd, const struct nat_record *rec)
{
	ssize_t n;
	do
		n = write(fd, rec, sizeof(*rec));
	while (n < 0 && errno == EINTR);
}

void nat_send_exit(int fd, int wstatus, const struct rusage *ru)
{
	struct nat_record rec;
	memset(&rec, 0, sizeof(rec));
	rec.kind = NK_EXITED;
	rec.wstatus = wstatus;
	rec.utime_us = (int64_t)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec;
	rec.stime_us = (int64_t)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec;
	rec.maxrss_kib = ru->ru_maxrss;
	send_rec(fd, &rec);
}

void nat_send(int fd, enum nat_kind kind, enum nat_stage stage, int err, int wstatus, const char *what)
{
	struct nat_record rec;
	memset(&rec, 0, sizeof(rec));
	rec.kind = kind;
	rec.stage = stage;
	rec.err = err;
	rec.wstatus = wstatus;
	if (what)
		strncpy(rec.what, what, sizeof(rec.what) - 1);
	send_rec(fd, &rec);
}

static const struct {
	const char *name, *feature;
} stages[NS__COUNT] = {
	[NS_NONE] = {"none", ""},
	[NS_PARENT] = {"waiting for the supervisor", "parent process"},
	[NS_OPEN_SOURCE] = {"opening a bind source", "filesystem access"},
	[NS_CREDS] = {"switching to sandbox root", "user namespaces (uid/gid maps)"},
	[NS_PROPAGATION] = {"making mounts private", "mount namespaces"},
	[NS_ROOT_TMPFS] = {"mounting the root tmpfs", "tmpfs in a user namespace"},
	[NS_MKDIR] = {"creating a directory", "tmpfs"},
	[NS_SYMLINK] = {"creating a symlink", "tmpfs"},
	[NS_FILE] = {"writing a file", "tmpfs"},
	[NS_BIND] = {"bind mount", "bind mounts in a user namespace"},
	[NS_TMPFS] = {"mounting a tmpfs", "tmpfs in a user namespace"},
	[NS_PROC] = {"mounting /proc", "procfs in a pid namespace (a fully visible host /proc)"},
	[NS_DEVPTS] = {"mounting /dev/pts", "devpts newinstance"},
	[NS_SETATTR] = {"setting mount attributes", "mount_setattr (Linux 5.12+)"},
	[NS_OVERLAY] = {"setting up the --workdir overlay", "overlayfs in a user namespace (Linux 5.11+)"},
	[NS_CHECKOUT] = {"copying the checkout (is it readable, and within --disk?)", "tmpfs"},
	[NS_PIVOT] = {"pivot_root", "pivot_root (a real root filesystem, not initramfs)"},
	[NS_ROOT_RO] = {"making the root read-only", "mount_setattr (Linux 5.12+)"},
	[NS_HOSTNAME] = {"setting the hostname", "uts namespaces"},
	[NS_NET] = {"bringing the loopback interface up", "network namespaces (SIOCSIFFLAGS)"},
	[NS_FORK] = {"starting the payload", "process limits"},
	[NS_SETSID] = {"setsid", "sessions"},
	[NS_STDIO] = {"setting up stdio", "file descriptors"},
	[NS_RLIMIT] = {"setting resource limits", "setrlimit"},
	[NS_CAPS] = {"dropping capabilities", "capabilities"},
	[NS_SETUID] = {"switching to the sandbox user", "user namespaces (uid/gid maps)"},
	[NS_NNP] = {"setting no_new_privs", "PR_SET_NO_NEW_PRIVS"},
	[NS_CHDIR] = {"changing directory", "working directory inside the sandbox"},
	[NS_CGROUP] = {"joining the job's cgroups", "cgroup v1 hierarchies"},
	[NS_CGROUPNS] = {"entering a new cgroup namespace", "cgroup namespaces"},
	[NS_LANDLOCK] = {"applying Landlock rules", "Landlock"},
	[NS_SECCOMP] = {"loading the seccomp filter", "seccomp filters"},
	[NS_EXEC] = {"executing the command", "execve"},
	[NS_TTY] = {"opening the terminal", "a pty of the sandbox's devpts (TIOCGPTPEER, Linux 4.13+)"},
};

const char *nat_stage_name(enum nat_stage s)
{
	return (unsigned)s < NS__COUNT && stages[s].name ? stages[s].name : "unknown stage";
}

const char *nat_stage_feature(enum nat_stage s)
{
	return (unsigned)s < NS__COUNT && stages[s].feature ? stages[s].feature : "";
}
