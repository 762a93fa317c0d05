/* phases.c — starts a command N times, one after the other with a pause between, and marks the
 * start (before its fork) and end (its reaping) of each in the kernel's trace (trace_marker), so
 * phases.py can split each start into phases from the scheduler's exec, fork and exit events.
 * Usage: phases MARKER_FILE N GAP_US COMMAND [ARG...]   (stdout of the command goes to /dev/null) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: phases MARKER_FILE N GAP_US COMMAND [ARG...]\n");
		return 2;
	}
	int marker = open(argv[1], O_WRONLY | O_CLOEXEC), n = atoi(argv[2]), gap = atoi(argv[3]);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (marker < 0 || null < 0) {
		perror("phases: open");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		usleep((useconds_t)gap);
		dprintf(marker, "phases start\n");
		pid_t pid = fork();
		if (pid == 0) {
			dup2(null, 1);
			execv(argv[4], argv + 4);
			_exit(127);
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "phases: %s did not run cleanly\n", argv[4]);
			return 1;
		}
		dprintf(marker, "phases end\n");
	}
	return 0;
}
