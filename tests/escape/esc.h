/* esc.h — shared helpers of the hostile programs: errno names, one-line reports, small file I/O. */
/*
 * Output contract of every tests/escape program (read by tests/escape/common.sh):
 *   - one line per attempt, "NAME=OK" when the attack step succeeded or "NAME=ENAME" (the
 *     errno) when something stopped it; extra facts as "NAME=value" lines;
 *   - whatever an attack manages to read is printed verbatim on a "leak[NAME]=" line, so the
 *     driver judges by looking for the host secret's random marker in the output; the
 *     programs are never told that marker, so they cannot print it by accident;
 *   - stdout is unbuffered: a process killed half-way leaves every earlier line intact.
 * Static and header-only, so each program is one file and runs in any sandbox root.
 */
#ifndef ESC_H
#define ESC_H

#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define ESC_UNUSED __attribute__((unused))

static ESC_UNUSED const char *esc_errname(int e)
{
	static char buf[32];
	const char *n = strerrorname_np(e);
	if (n)
		return n;
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

/* Unbuffered stdout, so lines survive a kill; call first in main(). */
static ESC_UNUSED void esc_init(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
}

/* Report a system call's outcome: "NAME=OK" for ret >= 0, else "NAME=ENAME" (errno). */
static ESC_UNUSED long esc_report(const char *name, long ret)
{
	int e = errno;
	if (ret >= 0)
		printf("%s=OK\n", name);
	else
		printf("%s=%s\n", name, esc_errname(e));
	errno = e;
	return ret;
}

/* The same with a printf-style name. */
static ESC_UNUSED __attribute__((format(printf, 2, 3))) long esc_reportf(long ret, const char *fmt, ...)
{
	char name[256];
	va_list ap;
	int e = errno;
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	errno = e;
	return esc_report(name, ret);
}

/* Print what an attack read: "leak[NAME]=" and the bytes (newlines kept, NULs as '\n'). */
static ESC_UNUSED void esc_leak(const char *name, const char *buf, size_t n)
{
	printf("leak[%s]=", name);
	for (size_t i = 0; i < n; i++)
		putchar(buf[i] ? buf[i] : '\n');
	putchar('\n');
}

/* Read up to size-1 bytes of an open descriptor into buf (NUL-terminated); -1 on error. */
static ESC_UNUSED ssize_t esc_read_fd(int fd, char *buf, size_t size)
{
	size_t got = 0;
	while (got + 1 < size) {
		ssize_t n = read(fd, buf + got, size - 1 - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return got ? (ssize_t)got : -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return (ssize_t)got;
}

/* Try to read PATH (relative to dirfd): report NAME=OK/ENAME and, on success, leak it. */
static ESC_UNUSED int esc_try_read_at(const char *name, int dirfd, const char *path)
{
	char buf[4096];
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		esc_report(name, -1);
		return -1;
	}
	ssize_t n = esc_read_fd(fd, buf, sizeof(buf));
	int e = errno;
	close(fd);
	errno = e;
	esc_report(name, n);
	if (n > 0)
		esc_leak(name, buf, (size_t)n);
	return n < 0 ? -1 : 0;
}

static ESC_UNUSED int esc_try_read(const char *name, const char *path)
{
	return esc_try_read_at(name, AT_FDCWD, path);
}

/* Read a small file into buf, stripping one trailing newline; -1 (errno) on error. */
static ESC_UNUSED int esc_slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = esc_read_fd(fd, buf, size);
	int e = errno;
	close(fd);
	if (n < 0) {
		errno = e;
		return -1;
	}
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

/* Report who pid 1 is, for the driver to judge attacks on "init" (common.sh, esc_init_domain):
 * "self-pid=N", then init-uid, init-CapEff, init-Seccomp, init-NoNewPrivs from /proc/1/status
 * (empty when a line is missing, as under gVisor). Under native pid 1 is airlock-init, under
 * bwrap bwrap's own init, under oci and gvisor the payload itself. */
static ESC_UNUSED void esc_report_init(void)
{
	static const char *const keys[] = {"Uid:", "CapEff:", "Seccomp:", "NoNewPrivs:"};
	static const char *const names[] = {"init-uid", "init-CapEff", "init-Seccomp", "init-NoNewPrivs"};
	char buf[8192], comm[64] = "";
	printf("self-pid=%d\n", (int)getpid());
	/* bwrap's pid 1 loads the seccomp filter itself, just after forking the payload's side: under
	 * load the payload can read its status first. What is judged is the state it runs in, so a
	 * bwrap pid 1 gets up to 2 s to get there (its window is not the payload's to use: Landlock
	 * keeps the payload off /proc/1, ptrace.sh). Any other pid 1 is read once. */
	bool bwrap = esc_slurp("/proc/1/comm", comm, sizeof(comm)) >= 0 && strncmp(comm, "bwrap", 5) == 0;
	for (int tries = 0;; tries++) {
		if (esc_slurp("/proc/1/status", buf, sizeof(buf)) < 0)
			buf[0] = '\0';
		if (!bwrap || tries >= 200 || !strstr(buf, "Seccomp:\t0\n"))
			break;
		usleep(10000);
	}
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *line = buf, *v = "";
		char val[64] = "";
		for (; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
			if (strncmp(line, keys[k], strlen(keys[k])) == 0) {
				v = line + strlen(keys[k]);
				break;
			}
		}
		while (*v == ' ' || *v == '\t')
			v++;
		size_t n = strcspn(v, " \t\n"); /* the first field: the real uid for Uid: */
		if (n >= sizeof(val))
			n = sizeof(val) - 1;
		memcpy(val, v, n);
		val[n] = '\0';
		printf("%s=%s\n", names[k], val);
	}
}

/* Parse a decimal number; exits 2 (usage) on junk. */
static ESC_UNUSED long long esc_num(const char *s)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end) {
		fprintf(stderr, "not a number: %s\n", s);
		exit(2);
	}
	return v;
}

#endif
