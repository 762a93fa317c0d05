/* parse.c — pure parsers of mountinfo, /proc/<pid>/cgroup and /proc/filesystems: text in, structs out. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "util/cleanup.h"
#include "util/error.h"

static const char *const ctrl_names[HOST_CG__COUNT] = {
	[HOST_CG_MEMORY] = "memory",   [HOST_CG_PIDS] = "pids",	      [HOST_CG_CPU] = "cpu",
	[HOST_CG_CPUACCT] = "cpuacct", [HOST_CG_FREEZER] = "freezer",
};

/* Every v1 controller the kernel has had; mount options that are not in this list
 * (rw, noprefix, name=systemd, release_agent=...) do not make a hierarchy a controller one. */
static const char *const v1_controllers[] = {
	"cpuset",  "cpu",	 "cpuacct",  "blkio",	"io",	"memory", "devices", "freezer",
	"net_cls", "perf_event", "net_prio", "hugetlb", "pids", "rdma",	  "misc",
};

const char *host_cg_ctrl_name(enum host_cg_ctrl c)
{
	return (unsigned)c < HOST_CG__COUNT ? ctrl_names[c] : "?";
}

const char *host_cg_layout_name(enum host_cg_layout l)
{
	switch (l) {
	case HOST_CG_LAYOUT_V1:
		return "v1";
	case HOST_CG_LAYOUT_V2:
		return "v2";
	case HOST_CG_LAYOUT_HYBRID:
		return "hybrid";
	case HOST_CG_LAYOUT_NONE:
		break;
	}
	return "none";
}

const char *host_cg_version_name(enum host_cg_version v)
{
	switch (v) {
	case HOST_CG_V1:
		return "v1";
	case HOST_CG_V2:
		return "v2";
	case HOST_CG_NONE:
		break;
	}
	return NULL;
}

/* Matches name as a whole token of a list separated by any of seps. */
static bool host_token_in(const char *list, const char *seps, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;
	while (*p) {
		size_t len = strcspn(p, seps);
		if (len == n && memcmp(p, name, n) == 0)
			return true;
		p += len;
		if (*p)
			p++;
	}
	return false;
}

bool host_cg_list_has(const char *list, const char *name)
{
	return host_token_in(list, " \t\n", name);
}

/* mountinfo escapes space, tab, newline and backslash in paths as \ooo octal. */
static void host_unescape_octal(char *s)
{
	char *w = s;
	for (const char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
		    r[3] <= '7') {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

struct host_mi_entry {
	char *root, *mount, *fstype, *superopts;
};

/* Splits one mountinfo line in place: "id parent maj:min root mount opts [optional...] - fstype source superopts". */
static int host_mi_split(char *line, struct host_mi_entry *e)
{
	char *fields[64];
	size_t n = 0;
	char *save = NULL;
	line[strcspn(line, "\n")] = '\0';
	for (char *t = strtok_r(line, " ", &save); t && n < AL_ARRAY_SIZE(fields); t = strtok_r(NULL, " ", &save))
		fields[n++] = t;
	size_t dash = 6;
	while (dash < n && strcmp(fields[dash], "-") != 0)
		dash++;
	if (dash + 3 >= n)
		return -EINVAL;
	e->root = fields[3];
	e->mount = fields[4];
	e->fstype = fields[dash + 1];
	e->superopts = fields[dash + 3];
	host_unescape_octal(e->root);
	host_unescape_octal(e->mount);
	return 0;
}

static int host_set_path(char *dst, size_t size, const char *src, struct al_error *err)
{
	size_t len = strlen(src);
	if (len >= size)
		return al_err(err, ENAMETOOLONG, "path too long: %.64s...", src);
	memcpy(dst, src, len + 1);
	return 0;
}

/* First mount of a hierarchy wins: later ones are usually bind mounts of it. */
static int host_note_mount(struct host_cg_hier *h, const struct host_mi_entry *e, struct al_error *err)
{
	if (h->mounted)
		return 0;
	int r = host_set_path(h->mount, sizeof(h->mount), e->mount, err);
	if (r == 0)
		r = host_set_path(h->root, sizeof(h->root), e->root, err);
	if (r == 0)
		h->mounted = true;
	return r;
}

static int host_note_v1(struct host_cgroups *cg, const struct host_mi_entry *e, struct al_error *err)
{
	for (size_t i = 0; i < AL_ARRAY_SIZE(v1_controllers); i++)
		if (host_token_in(e->superopts, ",", v1_controllers[i]))
			cg->v1_any = true;
	for (int c = 0; c < HOST_CG__COUNT; c++) {
		if (!host_token_in(e->superopts, ",", ctrl_names[c]))
			continue;
		int r = host_note_mount(&cg->v1[c], e, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int host_cg_parse_mountinfo(FILE *f, struct host_cgroups *cg, struct al_error *err)
{
	cleanup_free char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	int r = 0;
	errno = 0;
	while (r == 0 && getline(&line, &cap, f) >= 0) {
		struct host_mi_entry e;
		lineno++;
		if (host_mi_split(line, &e) < 0)
			return al_err(err, EINVAL, "mountinfo line %u: malformed", lineno);
		if (strcmp(e.fstype, "cgroup2") == 0)
			r = host_note_mount(&cg->v2, &e, err);
		else if (strcmp(e.fstype, "cgroup") == 0)
			r = host_note_v1(cg, &e, err);
	}
	if (r < 0)
		return r;
	if (ferror(f))
		return al_err_sys(err, errno ? errno : EIO, "reading mountinfo");
	return 0;
}

static int host_note_member(struct host_cg_hier *h, const char *path, struct al_error *err)
{
	int r = host_set_path(h->own, sizeof(h->own), path, err);
	if (r == 0)
		h->member = true;
	return r;
}

/* One line "hierarchy-id:controllers:path". The path is the rest of the line: it may hold ':'. */
static int host_cg_line(struct host_cgroups *cg, char *line, struct al_error *err)
{
	line[strcspn(line, "\n")] = '\0';
	char *c1 = strchr(line, ':');
	char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c2 || c2[1] != '/')
		return -EINVAL;
	*c1 = *c2 = '\0';
	const char *id = line, *ctrls = c1 + 1, *path = c2 + 1;
	if (strcmp(id, "0") == 0 && *ctrls == '\0')
		return host_note_member(&cg->v2, path, err);
	for (int c = 0; c < HOST_CG__COUNT; c++) {
		if (!host_token_in(ctrls, ",", ctrl_names[c]))
			continue;
		int r = host_note_member(&cg->v1[c], path, err);
		if (r < 0)
			return r;
		size_t n = strlen(ctrls);
		if (n < sizeof(cg->v1[c].ctrls))
			memcpy(cg->v1[c].ctrls, ctrls, n + 1);
	}
	return 0;
}

int host_cg_parse_proc_cgroup(FILE *f, struct host_cgroups *cg, struct al_error *err)
{
	cleanup_free char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	errno = 0;
	while (getline(&line, &cap, f) >= 0) {
		lineno++;
		if (line[0] == '\n' || line[0] == '\0')
			continue;
		int r = host_cg_line(cg, line, err);
		if (r == -EINVAL)
			return al_err(err, EINVAL, "/proc/self/cgroup line %u: malformed", lineno);
		if (r < 0)
			return r;
	}
	if (ferror(f))
		return al_err_sys(err, errno ? errno : EIO, "reading /proc/self/cgroup");
	return 0;
}

/* dir = mount + (own - root). When own lies outside what the mount shows (another
 * cgroup namespace, a bind of a subtree), our cgroup is not visible: dir stays "". */
static int host_hier_resolve(struct host_cg_hier *h, struct al_error *err)
{
	h->dir[0] = '\0';
	if (!h->mounted || !h->member)
		return 0;
	const char *rel = h->own;
	if (strcmp(h->root, "/") != 0) {
		size_t rl = strlen(h->root);
		if (strncmp(h->own, h->root, rl) != 0 || (h->own[rl] != '\0' && h->own[rl] != '/'))
			return 0;
		rel = h->own + rl;
	}
	if (strcmp(rel, "/") == 0)
		rel = "";
	int n = snprintf(h->dir, sizeof(h->dir), "%s%s", h->mount, rel);
	if (n < 0 || (size_t)n >= sizeof(h->dir)) {
		h->dir[0] = '\0';
		return al_err(err, ENAMETOOLONG, "cgroup path too long under %.64s", h->mount);
	}
	return 0;
}

int host_cg_resolve(struct host_cgroups *cg, struct al_error *err)
{
	int r = host_hier_resolve(&cg->v2, err);
	for (int c = 0; r == 0 && c < HOST_CG__COUNT; c++)
		r = host_hier_resolve(&cg->v1[c], err);
	if (cg->v2.mounted && cg->v1_any)
		cg->layout = HOST_CG_LAYOUT_HYBRID;
	else if (cg->v2.mounted)
		cg->layout = HOST_CG_LAYOUT_V2;
	else if (cg->v1_any)
		cg->layout = HOST_CG_LAYOUT_V1;
	else
		cg->layout = HOST_CG_LAYOUT_NONE;
	return r;
}

static bool host_hier_usable(const struct host_cg_hier *h)
{
	return h->found && h->writable && h->dir[0];
}

/* cgroup.freeze is core on v2 (5.2+): the freezer goes there where the job's processes are in
 * a v2 cgroup anyway (memory, pids or cpu use v2) or no v1 freezer can be had. On a hybrid host
 * whose controllers are all v1 a v2 cgroup for the freezer alone would make every job join both
 * versions, moved by pid (cg_joins_self): the v1 freezer hierarchy serves it instead. */
static bool host_cg_v2_freezes(const struct host_cgroups *cg)
{
	static const char *const limits[] = {"memory", "pids", "cpu"};
	for (size_t i = 0; i < AL_ARRAY_SIZE(limits); i++)
		if (host_cg_list_has(cg->v2_controllers, limits[i]))
			return true;
	return !host_hier_usable(&cg->v1[HOST_CG_FREEZER]);
}

/* v2 is preferred: one hierarchy, and its memory.peak/oom_kill are exact. cpuacct has
 * no v2 controller because cpu.stat's usage is core there; it goes to v2 when v2 also
 * has cpu or when v1 cannot account, so a hybrid host is not made to join both
 * hierarchies just for CPU time. */
void host_cg_choose(struct host_cgroups *cg)
{
	bool v2 = host_hier_usable(&cg->v2);
	for (int c = 0; c < HOST_CG__COUNT; c++) {
		bool in_v2;
		if (c == HOST_CG_CPUACCT)
			in_v2 = host_cg_list_has(cg->v2_controllers, "cpu") || !host_hier_usable(&cg->v1[c]);
		else if (c == HOST_CG_FREEZER)
			in_v2 = host_cg_v2_freezes(cg);
		else
			in_v2 = host_cg_list_has(cg->v2_controllers, ctrl_names[c]);
		if (v2 && in_v2)
			cg->use[c] = HOST_CG_V2;
		else if (host_hier_usable(&cg->v1[c]))
			cg->use[c] = HOST_CG_V1;
		else
			cg->use[c] = HOST_CG_NONE;
	}
}

int host_fs_listed(FILE *f, const char *name, bool *out)
{
	cleanup_free char *line = NULL;
	size_t cap = 0;
	*out = false;
	errno = 0;
	/* Lines are "nodev\ttmpfs" or "\text4": the name is the last tab-separated field. */
	while (getline(&line, &cap, f) >= 0) {
		line[strcspn(line, "\n")] = '\0';
		const char *tab = strrchr(line, '\t');
		const char *fs = tab ? tab + 1 : line;
		if (strcmp(fs, name) == 0) {
			*out = true;
			return 0;
		}
	}
	return ferror(f) ? -(errno ? errno : EIO) : 0;
}
