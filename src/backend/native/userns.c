/* userns.c — id mapping for the sandbox's user namespace, and the credential switches on both sides. */
#include "userns.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy.h"

void uns_choose(struct uns_map *m, uint32_t id_base)
{
	memset(m, 0, sizeof(*m));
	if (geteuid() == 0) {
		/* Root maps a whole range of otherwise unused host ids, never host root itself,
		 * so programs that chown or switch ids keep working inside. */
		m->range = true;
		m->host_base = id_base;
		m->count = AL_IDS_PER_SANDBOX;
	} else {
		m->host_base = (uint32_t)geteuid();
		m->host_gid = (uint32_t)getegid();
		m->count = 1;
	}
}

uint32_t uns_host_uid(const struct uns_map *m, uint32_t inside)
{
	return m->range ? m->host_base + inside : m->host_base;
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

int uns_write_maps(pid_t pid, const struct uns_map *m, char *why, size_t whylen)
{
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
		snprintf(uid_map, sizeof(uid_map), "%u %u 1\n", AL_SANDBOX_UID, m->host_base);
		snprintf(gid_map, sizeof(gid_map), "%u %u 1\n", AL_SANDBOX_UID, m->host_gid);
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

int uns_enter(const struct uns_map *m)
{
	if (!m->range)
		return 0; /* already the mapped caller, with full capabilities in the namespace */
	/* Until now the child still carried host uid 0 (unmapped, but the owner of root's
	 * files); from here on it is sandbox root, i.e. host id_base, for every access. */
	if (setresgid(0, 0, 0) < 0 || setgroups(0, NULL) < 0 || setresuid(0, 0, 0) < 0)
		return -errno;
	return 0;
}

int uns_become_user(const struct uns_map *m, uid_t uid, gid_t gid)
{
	if (m->range && setgroups(0, NULL) < 0)
		return -errno;
	if (setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return -errno;
	return 0;
}
