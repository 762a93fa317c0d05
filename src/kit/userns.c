/* userns.c — id mapping for the sandbox's user namespace, and the credential switches on both sides. */
#include "userns.h"

#include "pidfd.h"
#include "rawsys.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "policy/policy.h"
#include "util/error.h"

#define NEWUIDMAP "/usr/bin/newuidmap"
#define NEWGIDMAP "/usr/bin/newgidmap"

int uns_parse_subid(const char *text, const char *name, uint32_t uid, uint32_t *start, uint32_t *count)
{
	char uidstr[16];
	snprintf(uidstr, sizeof(uidstr), "%u", uid);
	for (const char *line = text; *line;) {
		const char *end = strchrnul(line, '\n');
		char owner[64];
		unsigned long long st, n;
		int used = 0;
		/* "owner:start:count", owner a name or a uid; the first entry for us wins. The range
		 * must fit the 32-bit id space; checked without st + n, which could wrap. */
		/* A root-owned file; an out-of-range number fails the 32-bit check below, and
		 * newuidmap re-checks the range against the file itself. */
		/* NOLINTNEXTLINE(cert-err34-c): see above */
		if (sscanf(line, "%63[^:\n]:%llu:%llu%n", owner, &st, &n, &used) == 3 && line + used <= end &&
		    (strcmp(owner, name) == 0 || strcmp(owner, uidstr) == 0) && st <= 0xFFFFFFFFull &&
		    n <= 0xFFFFFFFFull - st) {
			*start = (uint32_t)st;
			*count = (uint32_t)n;
			return 0;
		}
		line = *end ? end + 1 : end;
	}
	return -ENOENT;
}

/* The caller's name from /etc/passwd (no NSS: the binary is static). */
static int user_name(uid_t uid, char *buf, size_t len)
{
	FILE *f = fopen("/etc/passwd", "re");
	if (!f)
		return -errno;
	char line[512];
	int r = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2 && (uid_t)strtoul(c2 + 1, NULL, 10) == uid && (size_t)(c1 - line) < len) {
			memcpy(buf, line, (size_t)(c1 - line));
			buf[c1 - line] = 0;
			r = 0;
			break;
		}
	}
	fclose(f);
	return r;
}

static int read_subid(const char *file, const char *name, uint32_t uid, uint32_t *start, uint32_t *count)
{
	char text[16384];
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	text[n] = 0;
	return uns_parse_subid(text, name, uid, start, count);
}

static int choose_subids(struct uns_map *m, struct al_error *err)
{
	char name[64] = "";
	uint32_t su = 0, nu = 0, sg = 0, ng = 0;
	if (access(NEWUIDMAP, X_OK) < 0 || access(NEWGIDMAP, X_OK) < 0)
		return al_err(err, ENOENT,
			      "--subids: " NEWUIDMAP " and " NEWGIDMAP " are needed (Debian package uidmap)");
	user_name(m->host_base, name, sizeof(name));
	if (read_subid("/etc/subuid", name, m->host_base, &su, &nu) < 0 ||
	    read_subid("/etc/subgid", name, m->host_base, &sg, &ng) < 0)
		return al_err(err, ENOENT,
			      "--subids: no subordinate ids for user %s (uid %u) in /etc/subuid and /etc/subgid",
			      *name ? name : "?", m->host_base);
	uint32_t n = nu < ng ? nu : ng, top = m->uid > m->gid ? m->uid : m->gid;
	/* The caller's ids sit at uid:gid, subordinate ids on both sides of them: ids up to uid:gid
	 * and at least one after (newuidmap takes no empty range). */
	if (n <= top || top >= AL_IDS_PER_SANDBOX - 1)
		return al_err(err, ERANGE,
			      "--subids: user %s has only %u subordinate ids; the payload's uid %u and gid %u need "
			      "more than %u",
			      name, n, m->uid, m->gid, top);
	m->subids = true;
	m->sub_uid = su;
	m->sub_gid = sg;
	m->count = (n > AL_IDS_PER_SANDBOX - 1 ? AL_IDS_PER_SANDBOX - 1 : n) + 1;
	return 0;
}

int uns_choose(struct uns_map *m, uint32_t id_base, bool want_subids, uint32_t uid, uint32_t gid, struct al_error *err)
{
	memset(m, 0, sizeof(*m));
	m->uid = uid;
	m->gid = gid;
	if (geteuid() == 0) {
		/* Root maps a whole range of otherwise unused host ids, never host root itself,
		 * so programs that chown or switch ids keep working inside. */
		m->range = true;
		m->host_base = id_base;
		m->count = AL_IDS_PER_SANDBOX;
		return 0;
	}
	m->host_base = (uint32_t)geteuid();
	m->host_gid = (uint32_t)getegid();
	m->count = 1;
	return want_subids ? choose_subids(m, err) : 0;
}

uint32_t uns_host_uid(const struct uns_map *m, uint32_t inside)
{
	return m->range ? m->host_base + inside : m->host_base;
}

uint32_t uns_host_gid(const struct uns_map *m, uint32_t inside)
{
	return m->range ? m->host_base + inside : m->host_gid;
}

static int write_file(pid_t pid, const char *name, const char *data, char *why, size_t whylen)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "open %s", path);
		return -errno;
	}
	size_t len = strlen(data);
	ssize_t n = write(fd, data, len);
	int e = errno;
	close(fd);
	if (n != (ssize_t)len) {
		snprintf(why, whylen, "write %s", path);
		return n < 0 ? -e : -EIO;
	}
	return 0;
}

/* newuidmap/newgidmap PID  0 SUB U  U OWN 1  U+1 SUB+U COUNT-U-1 (U the payload's id, 1000
 * unless an image's User names another): the caller's own id is the payload's, its subordinate
 * ids fill the rest. The setuid helpers check /etc/subuid themselves; we only run them, by
 * absolute path, with a scrubbed environment. uns_choose made sure 0 < U < COUNT-1. */
static int run_idmap(const char *helper, pid_t pid, uint32_t sub, uint32_t own, uint32_t at, uint32_t count, char *why,
		     size_t whylen)
{
	char a[8][16];
	snprintf(a[0], 16, "%d", (int)pid);
	snprintf(a[1], 16, "0");
	snprintf(a[2], 16, "%u", sub);
	snprintf(a[3], 16, "%u", at);
	snprintf(a[4], 16, "%u", own);
	snprintf(a[5], 16, "%u", at + 1);
	snprintf(a[6], 16, "%u", sub + at);
	snprintf(a[7], 16, "%u", count - at - 1);
	char prog[32], one[] = "1";
	snprintf(prog, sizeof(prog), "%s", helper);
	char *const argv[] = {prog, a[0], a[1], a[2], a[3], a[3], a[4], one, a[5], a[6], a[7], NULL};
	char path_env[] = "PATH=/usr/bin:/bin";
	char *const envp[] = {path_env, NULL};
	pid_t h = fork();
	if (h == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0)
			dup2(null, 1);
		execve(prog, argv, envp);
		_exit(127);
	}
	int st = 0;
	if (h < 0 || waitpid(h, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(why, whylen, "%s failed (status %d)", helper, st);
		return -EPERM;
	}
	return 0;
}

int uns_write_maps(pid_t pid, const struct uns_map *m, char *why, size_t whylen)
{
	if (m->subids) {
		int r = run_idmap(NEWUIDMAP, pid, m->sub_uid, m->host_base, m->uid, m->count, why, whylen);
		return r < 0 ? r : run_idmap(NEWGIDMAP, pid, m->sub_gid, m->host_gid, m->gid, m->count, why, whylen);
	}
	char uid_map[64], gid_map[64];
	int r;
	if (m->range) {
		snprintf(uid_map, sizeof(uid_map), "0 %u %u\n", m->host_base, m->count);
		snprintf(gid_map, sizeof(gid_map), "0 %u %u\n", m->host_base, m->count);
		/* "allow" here is safe: only airlock's own init holds CAP_SETGID in the namespace,
		 * and it uses setgroups() once, to drop the host's supplementary groups (which
		 * would otherwise still grant group access to host files). The payload has no
		 * capabilities, so it can never call setgroups(). */
		r = write_file(pid, "setgroups", "allow", why, whylen);
	} else {
		/* One id each: the caller is the payload's uid:gid, whatever they are inside. */
		snprintf(uid_map, sizeof(uid_map), "%u %u 1\n", m->uid, m->host_base);
		snprintf(gid_map, sizeof(gid_map), "%u %u 1\n", m->gid, m->host_gid);
		/* The kernel requires "deny" before an unprivileged gid_map write. */
		r = write_file(pid, "setgroups", "deny", why, whylen);
	}
	if (r < 0)
		return r;
	r = write_file(pid, "uid_map", uid_map, why, whylen);
	if (r < 0)
		return r;
	return write_file(pid, "gid_map", gid_map, why, whylen);
}

int uns_open_ns(const struct uns_map *m, char *why, size_t whylen)
{
	int p[2], pidfd = -1;
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(why, whylen, "pipe");
		return -errno;
	}
	pid_t pid = pfd_clone3(CLONE_NEWUSER, &pidfd, -1);
	if (pid == 0) {
		/* Waits for the parent to be done with it: the read ends at EOF (or the parent's death). */
		char c;
		close(p[1]);
		ssize_t n = read(p[0], &c, 1);
		_exit(n == 0 ? 0 : 1);
	}
	close(p[0]);
	int r = pid < 0 ? (int)pid : uns_write_maps(pid, m, why, whylen);
	if (pid < 0) {
		snprintf(why, whylen, "clone3 into a new user namespace");
	} else if (r == 0) {
		char path[48];
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		r = open(path, O_RDONLY | O_CLOEXEC);
		if (r < 0) {
			r = -errno;
			snprintf(why, whylen, "open %s", path);
		}
	}
	close(p[1]);
	if (pidfd >= 0) {
		siginfo_t si;
		pfd_wait(pidfd, &si, NULL, WEXITED);
		close(pidfd);
	}
	return r;
}

int uns_enter(const struct uns_map *m)
{
	if (!m->range)
		return 0; /* already the mapped caller, with full capabilities in the namespace */
	/* Until now the child still carried host uid 0 (unmapped, but the owner of root's
	 * files); from here on it is sandbox root, i.e. host id_base, for every access. */
	if (raw_setresgid(0, 0, 0) < 0 || raw_setgroups_none() < 0 || raw_setresuid(0, 0, 0) < 0)
		return -errno;
	return 0;
}

int uns_become_user(const struct uns_map *m, uid_t uid, gid_t gid)
{
	if (m->range && raw_setgroups_none() < 0)
		return -errno;
	if (raw_setresgid(gid, gid, gid) < 0 || raw_setresuid(uid, uid, uid) < 0)
		return -errno;
	return 0;
}
