/* ociinit.c — airlock-init for crun: pid 1 inside the container, so the payload is an ordinary process (pid 2).
 *
 * Why: the first process of a pid namespace is its init, and the kernel drops every signal
 * that init has no handler for when it comes from inside the namespace — SIGKILL and SIGABRT
 * from raise() or abort() included. Run as pid 1 itself, a payload that kills itself would
 * carry on, and orphans would never be reaped. Docker's --init (tini) exists for this; the
 * native backend and bwrap have an init of their own. crun has none, so the airlock binary
 * itself, bound read-only into the container at OCI_INIT_PATH, is the container's process:
 * it forks the payload, reaps everything, and writes the payload's exact wait status (or
 * why the command could not be executed) to fd OCI_INIT_FD, which crun passes through
 * (--preserve-fds=1) to the monitor (ocichild.c). No 128+N folding, so a payload that exits
 * 137 is not mistaken for one killed by SIGKILL.
 *
 * How it is entered: a constructor, as runc's nsenter enters its C code before the Go
 * runtime: when argv[0] is exactly OCI_INIT_PATH and the process is pid 1, it never returns
 * to main(). Nothing here is a privilege: it runs as the sandbox user, after crun has set
 * up everything (namespaces, no capabilities, no_new_privs, rlimits, airlock's seccomp
 * filter), and does only what the payload could do itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bundle.h"

static void put_record(int kind, int value)
{
	int32_t rec[2] = {kind, value};
	ssize_t w;
	do
		w = write(OCI_INIT_FD, rec, sizeof(rec));
	while (w < 0 && errno == EINTR);
}

/* What the container's init exits with (crun's exit code, used only if the record is lost). */
static int folded(int ws)
{
	return WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws);
}

static _Noreturn void init_main(char **argv)
{
	/* Not dumpable: /proc/1/fd (the record's pipe) stays out of the payload's reach, although
	 * both run as the same user. Close-on-exec: the payload never inherits it. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || fcntl(OCI_INIT_FD, F_SETFD, FD_CLOEXEC) < 0)
		_exit(OCI_INIT_FAIL);
	int ex[2];
	if (pipe2(ex, O_CLOEXEC) < 0)
		_exit(OCI_INIT_FAIL);
	pid_t pid = fork();
	if (pid < 0) {
		put_record(OCI_INIT_EXEC_FAILED, errno);
		_exit(OCI_INIT_FAIL);
	}
	if (pid == 0) {
		close(ex[0]);
		setsid(); /* no controlling terminal, as the native payload */
		execvp(argv[0], argv);
		int e = errno;
		ssize_t w = write(ex[1], &e, sizeof(e));
		(void)w;
		_exit(127);
	}
	close(ex[1]);
	int e = 0;
	ssize_t n;
	do
		n = read(ex[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(ex[0]);
	if (n == (ssize_t)sizeof(e)) {
		put_record(OCI_INIT_EXEC_FAILED, e);
		_exit(OCI_INIT_FAIL);
	}
	/* Reap every process of the container until the payload itself ends; the rest die with
	 * the pid namespace when this init exits, as under the native backend's init. */
	for (;;) {
		int ws;
		pid_t w = waitpid(-1, &ws, 0);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			_exit(OCI_INIT_FAIL);
		if (w == pid) {
			put_record(OCI_INIT_EXITED, ws);
			_exit(folded(ws));
		}
	}
}

/* glibc passes argc, argv and envp to the executable's constructors. Priority 101: before
 * any other constructor of the binary. */
__attribute__((constructor(101))) static void oci_init_enter(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc >= 3 && strcmp(argv[0], OCI_INIT_PATH) == 0 && strcmp(argv[1], "--") == 0 && getpid() == 1)
		init_main(argv + 2);
}

const char *oci_init_path(void)
{
	return OCI_INIT_PATH;
}
