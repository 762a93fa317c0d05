/* esc-daemon.c — hostile program: leave a daemon behind that outlives the job. */
/*
 * Usage: esc-daemon exit|wait|hop MARKER
 *   exit  the payload returns at once after daemonizing
 *   wait  the payload sleeps until the wall-clock limit kills the job
 *   hop   like exit, and the daemon keeps forking a successor and exiting, so that no pid
 *         stays the same for long (a killer that walks a pid list keeps missing it)
 * The daemon: fork, setsid, fork again, ignore SIGHUP/SIGTERM/SIGINT, clear the parent-death
 * signal, ask to be a child subreaper, keep stdout open (so a supervisor waiting for EOF
 * would hang) or close it, name itself MARKER (comm) and keep MARKER in argv, then sleep
 * for up to 5 minutes. It prints "daemon=PID" once (as the sandbox sees it).
 * Expected defence: the payload is in a pid namespace whose init airlock kills at exit or
 * at the deadline (SIGKILL to init kills every process in the namespace); the cgroup is
 * killed and removed as well; the supervisor does not wait for stdout's EOF.
 */
#include "esc.h"

#include <signal.h>
#include <sys/prctl.h>
#include <time.h>

static void sleep_s(int s)
{
	struct timespec ts = {.tv_sec = s, .tv_nsec = 0};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	esc_init();
	if (argc != 3) {
		fprintf(stderr, "usage: esc-daemon exit|wait|hop MARKER\n");
		return 2;
	}
	const char *mode = argv[1], *marker = argv[2];
	int hop = strcmp(mode, "hop") == 0;

	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		setsid();
		if (fork() != 0)
			_exit(0);
		signal(SIGHUP, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		prctl(PR_SET_PDEATHSIG, 0);
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		prctl(PR_SET_NAME, marker);
		printf("daemon=%d\n", (int)getpid());
		if (hop) {
			/* Keep moving: fork a successor, exit, repeat. */
			close(0);
			for (time_t end = time(NULL) + 300; time(NULL) < end;) {
				pid_t next = fork();
				if (next > 0)
					_exit(0);
				if (next < 0)
					sleep_s(1);
				usleep(20000);
			}
			_exit(0);
		}
		for (int i = 0; i < 300; i++)
			sleep_s(1);
		_exit(0);
	}
	/* The payload itself. */
	usleep(200000); /* let the daemon announce itself */
	if (strcmp(mode, "wait") == 0)
		for (;;)
			sleep_s(60);
	return 0;
}
