/* bwparse.c — reading what bwrap reports (its JSON status, its messages): pure, allocation-free (the monitor uses it). */
#include <errno.h>
#include <string.h>

#include "bwrap.h"

bool bw_json_exit_code(const char *buf, size_t n, int *code)
{
	static const char key[] = "\"exit-code\"";
	const char *found = NULL;
	/* The last report wins; bwrap writes one, after the payload's end. */
	for (const char *p = buf; (size_t)(p - buf) + sizeof(key) - 1 <= n;) {
		const char *q = memmem(p, n - (size_t)(p - buf), key, sizeof(key) - 1);
		if (!q)
			break;
		found = q;
		p = q + 1;
	}
	if (!found)
		return false;
	const char *p = found + sizeof(key) - 1, *end = buf + n;
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n'))
		p++;
	if (p >= end || *p++ != ':')
		return false;
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n'))
		p++;
	long v = 0;
	const char *digits = p;
	while (p < end && *p >= '0' && *p <= '9' && v < 1000)
		v = v * 10 + (*p++ - '0');
	if (p == digits || v > 255)
		return false;
	*code = (int)v;
	return true;
}

int bw_wstatus(int exit_code)
{
	/* A payload that exits 128+N cannot be told from one killed by signal N: bwrap has
	 * already folded the two. Reported as the signal, as a shell would read it. */
	if (exit_code > 128 && exit_code <= 128 + 64)
		return exit_code - 128;
	return (exit_code & 0xff) << 8;
}

static void scan_line_end(struct bw_errscan *s)
{
	static const char prefix[] = "bwrap: ";
	size_t plen = sizeof(prefix) - 1;
	if (s->len >= plen && memcmp(s->cur, prefix, plen) == 0) {
		size_t n = s->len - plen;
		memcpy(s->last, s->cur + plen, n);
		s->last[n] = 0;
	}
	s->len = 0;
	s->overflow = false;
}

void bw_errscan_feed(struct bw_errscan *s, const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			scan_line_end(s);
			continue;
		}
		if (s->len + 1 < sizeof(s->cur))
			s->cur[s->len++] = buf[i];
		else
			s->overflow = true;
	}
}

void bw_errscan_end(struct bw_errscan *s)
{
	if (s->len)
		scan_line_end(s);
}

/* bwrap runs with an empty environment, so its messages end in the C locale's strerror text. */
static int msg_errno(const char *msg)
{
	static const struct {
		const char *text;
		int err;
	} table[] = {
		{"No such file or directory", ENOENT},
		{"Permission denied", EACCES},
		{"Operation not permitted", EPERM},
		{"Not a directory", ENOTDIR},
		{"Is a directory", EISDIR},
		{"Invalid argument", EINVAL},
		{"No space left on device", ENOSPC},
		{"File exists", EEXIST},
		{"Too many levels of symbolic links", ELOOP},
		{"Exec format error", ENOEXEC},
		{"Cannot allocate memory", ENOMEM},
		{"Read-only file system", EROFS},
		{"Resource temporarily unavailable", EAGAIN},
		{"Device or resource busy", EBUSY},
	};
	size_t len = strlen(msg);
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		size_t tl = strlen(table[i].text);
		if (len >= tl && strcmp(msg + len - tl, table[i].text) == 0)
			return table[i].err;
	}
	return EINVAL; /* e.g. "Unknown option ...": bwrap refused its command line */
}

void bw_classify(const char *msg, enum nat_stage *stage, int *err)
{
	static const struct {
		const char *word;
		enum nat_stage stage;
	} words[] = {
		/* most specific first: "Can't mount proc on /newroot/proc" is about /proc */
		{"execvp ", NS_EXEC},	   {"Can't find source path", NS_OPEN_SOURCE},
		{"mount proc", NS_PROC},   {"tmpfs", NS_TMPFS},
		{"devpts", NS_DEVPTS},	   {"chdir", NS_CHDIR},
		{"namespace", NS_CREDS},   {"uid map", NS_CREDS},
		{"gid map", NS_CREDS},	   {"setgroups", NS_CREDS},
		{"seccomp", NS_SECCOMP},   {"setsid", NS_SETSID},
		{"hostname", NS_HOSTNAME}, {"loopback", NS_NET},
		{"mount", NS_BIND},
	};
	*err = msg_errno(msg);
	*stage = NS_FORK; /* "starting the payload": bwrap refused before the command ran */
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(msg, words[i].word)) {
			*stage = words[i].stage;
			return;
		}
}
