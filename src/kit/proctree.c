/* proctree.c — the processes and threads beneath a process, read from /proc (see proctree.h). */
#include "kit/proctree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/cleanup.h"

#define PT_MAX_DEPTH 64 /* deeper trees are counted as far as this; a census only needs "more than" */

static int read_text(const char *path, char *buf, size_t cap)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, cap - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return (int)n;
}

/* pid's state letter and thread count (fields 3 and 20 of /proc/PID/stat): 0, or -errno. */
static int stat_of(pid_t pid, char *state, unsigned *threads)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int r = read_text(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	const char *p = strrchr(buf, ')'); /* the command may hold blanks and parentheses */
	if (!p || p[1] != ' ' || !p[2])
		return -EPROTO;
	*state = p[2];
	p += 3;
	for (int field = 4; field < 20 && p; field++)
		p = strchr(p + 1, ' ');
	*threads = p ? (unsigned)strtoul(p + 1, NULL, 10) : 1;
	return 0;
}

static void walk(pid_t pid, int depth, struct pt_census *c);

/* Every child of every thread of pid (a thread's forks are listed under that thread). */
/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by PT_MAX_DEPTH */
static void children_of(pid_t pid, int depth, struct pt_census *c)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char cpath[320], buf[4096] = "";
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/children", (int)pid, e->d_name);
		if (read_text(cpath, buf, sizeof(buf)) <= 0)
			continue;
		for (char *s = buf, *end; *s; s = end) {
			long child = strtol(s, &end, 10);
			if (end == s)
				break;
			if (child > 0)
				walk((pid_t)child, depth + 1, c);
		}
	}
	closedir(d);
}

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by PT_MAX_DEPTH */
static void walk(pid_t pid, int depth, struct pt_census *c)
{
	char state = 0;
	unsigned threads = 0;
	if (stat_of(pid, &state, &threads) < 0 || state == 'Z' || state == 'X')
		return; /* gone meanwhile, or dead and waiting for its parent: nothing runs there */
	c->processes++;
	c->threads += threads;
	if (depth < PT_MAX_DEPTH)
		children_of(pid, depth, c);
}

int pt_census(pid_t root, struct pt_census *out)
{
	char state = 0;
	unsigned threads = 0;
	int r = stat_of(root, &state, &threads);
	if (r < 0)
		return r;
	*out = (struct pt_census){0};
	children_of(root, 0, out);
	return 0;
}

int pt_first_child(pid_t root, pid_t *child)
{
	char path[64], buf[4096] = "";
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)root, (int)root);
	if (read_text(path, buf, sizeof(buf)) < 0)
		return -ESRCH;
	long best = 0;
	for (char *s = buf, *end; *s; s = end) {
		long c = strtol(s, &end, 10);
		if (end == s)
			break;
		char state = 0;
		unsigned threads = 0;
		if (c > 0 && (best == 0 || c < best) && stat_of((pid_t)c, &state, &threads) == 0 && state != 'Z' &&
		    state != 'X')
			best = c;
	}
	if (best <= 0)
		return -ESRCH;
	*child = (pid_t)best;
	return 0;
}

int pt_nspid(pid_t pid, unsigned up, pid_t *out)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	int r = read_text(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	char *line = strstr(buf, "\nNSpid:");
	if (!line)
		return -EPROTO;
	long v[32];
	unsigned n = 0;
	for (char *s = line + 7, *end; n < 32; s = end) {
		long x = strtol(s, &end, 10);
		if (end == s)
			break;
		v[n++] = x;
	}
	if (up >= n)
		return -ERANGE;
	*out = (pid_t)v[n - 1 - up];
	return 0;
}
