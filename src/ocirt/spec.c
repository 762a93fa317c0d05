/* spec.c — parses an OCI runtime config.json into struct ort_spec (pure; security input: strict on types). */
#include "spec.h"

#include <errno.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include "util/cleanup.h"
#include "util/error.h"

static const char *const cap_names[] = {
	"CAP_CHOWN",
	"CAP_DAC_OVERRIDE",
	"CAP_DAC_READ_SEARCH",
	"CAP_FOWNER",
	"CAP_FSETID",
	"CAP_KILL",
	"CAP_SETGID",
	"CAP_SETUID",
	"CAP_SETPCAP",
	"CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST",
	"CAP_NET_ADMIN",
	"CAP_NET_RAW",
	"CAP_IPC_LOCK",
	"CAP_IPC_OWNER",
	"CAP_SYS_MODULE",
	"CAP_SYS_RAWIO",
	"CAP_SYS_CHROOT",
	"CAP_SYS_PTRACE",
	"CAP_SYS_PACCT",
	"CAP_SYS_ADMIN",
	"CAP_SYS_BOOT",
	"CAP_SYS_NICE",
	"CAP_SYS_RESOURCE",
	"CAP_SYS_TIME",
	"CAP_SYS_TTY_CONFIG",
	"CAP_MKNOD",
	"CAP_LEASE",
	"CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL",
	"CAP_SETFCAP",
	"CAP_MAC_OVERRIDE",
	"CAP_MAC_ADMIN",
	"CAP_SYSLOG",
	"CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND",
	"CAP_AUDIT_READ",
	"CAP_PERFMON",
	"CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
};

const char *ort_cap_name(int n)
{
	return n >= 0 && (size_t)n < AL_ARRAY_SIZE(cap_names) ? cap_names[n] : NULL;
}

int ort_cap_number(const char *name)
{
	for (size_t i = 0; i < AL_ARRAY_SIZE(cap_names); i++)
		if (strcmp(cap_names[i], name) == 0)
			return (int)i;
	return -1;
}

static const struct {
	const char *name;
	int flag;
} ns_names[ORT_NS__COUNT] = {
	[ORT_NS_PID] = {"pid", CLONE_NEWPID},	       [ORT_NS_NET] = {"network", CLONE_NEWNET},
	[ORT_NS_IPC] = {"ipc", CLONE_NEWIPC},	       [ORT_NS_UTS] = {"uts", CLONE_NEWUTS},
	[ORT_NS_MNT] = {"mount", CLONE_NEWNS},	       [ORT_NS_USER] = {"user", CLONE_NEWUSER},
	[ORT_NS_CGROUP] = {"cgroup", CLONE_NEWCGROUP},
};

int ort_ns_flag(enum ort_ns ns)
{
	return ns_names[ns].flag;
}

static const struct {
	const char *name;
	int resource;
} rlimit_names[] = {
	{"RLIMIT_CPU", RLIMIT_CPU},	      {"RLIMIT_FSIZE", RLIMIT_FSIZE},
	{"RLIMIT_DATA", RLIMIT_DATA},	      {"RLIMIT_STACK", RLIMIT_STACK},
	{"RLIMIT_CORE", RLIMIT_CORE},	      {"RLIMIT_RSS", RLIMIT_RSS},
	{"RLIMIT_NPROC", RLIMIT_NPROC},	      {"RLIMIT_NOFILE", RLIMIT_NOFILE},
	{"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},   {"RLIMIT_AS", RLIMIT_AS},
	{"RLIMIT_LOCKS", RLIMIT_LOCKS},	      {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
	{"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE}, {"RLIMIT_NICE", RLIMIT_NICE},
	{"RLIMIT_RTPRIO", RLIMIT_RTPRIO},     {"RLIMIT_RTTIME", RLIMIT_RTTIME},
};

/* Mount options that are flags; the rest go to the filesystem as data. clear: the option
 * removes the flag instead of setting it. */
static const struct {
	const char *name;
	unsigned long flag;
	bool clear;
} mount_flags[] = {
	{"ro", MS_RDONLY, false},
	{"rw", MS_RDONLY, true},
	{"nosuid", MS_NOSUID, false},
	{"suid", MS_NOSUID, true},
	{"nodev", MS_NODEV, false},
	{"dev", MS_NODEV, true},
	{"noexec", MS_NOEXEC, false},
	{"exec", MS_NOEXEC, true},
	{"sync", MS_SYNCHRONOUS, false},
	{"async", MS_SYNCHRONOUS, true},
	{"dirsync", MS_DIRSYNC, false},
	{"mand", MS_MANDLOCK, false},
	{"nomand", MS_MANDLOCK, true},
	{"noatime", MS_NOATIME, false},
	{"atime", MS_NOATIME, true},
	{"nodiratime", MS_NODIRATIME, false},
	{"diratime", MS_NODIRATIME, true},
	{"relatime", MS_RELATIME, false},
	{"norelatime", MS_RELATIME, true},
	{"strictatime", MS_STRICTATIME, false},
	{"nostrictatime", MS_STRICTATIME, true},
};

static const struct {
	const char *name;
	unsigned long flag;
} propag_names[] = {
	{"private", MS_PRIVATE},       {"rprivate", MS_PRIVATE | MS_REC},
	{"shared", MS_SHARED},	       {"rshared", MS_SHARED | MS_REC},
	{"slave", MS_SLAVE},	       {"rslave", MS_SLAVE | MS_REC},
	{"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC},
};

/* ---- small strict accessors -------------------------------------------------------- */

static int want_string(json_t *j, const char *what, const char **out, struct al_error *err)
{
	*out = ""; /* never unset, even on failure */
	if (!json_is_string(j))
		return al_err(err, EINVAL, "config.json: %s must be a string", what);
	*out = json_string_value(j);
	if (strlen(*out) != json_string_length(j))
		return al_err(err, EINVAL, "config.json: %s holds a NUL byte", what);
	return 0;
}

static int dup_string(json_t *j, const char *what, char **out, struct al_error *err)
{
	const char *s;
	int r = want_string(j, what, &s, err);
	if (r < 0)
		return r;
	*out = strdup(s);
	return *out ? 0 : al_err(err, ENOMEM, "out of memory");
}

static int want_u32(json_t *j, const char *what, uint32_t *out, struct al_error *err)
{
	if (!json_is_integer(j) || json_integer_value(j) < 0 || json_integer_value(j) > UINT32_MAX)
		return al_err(err, EINVAL, "config.json: %s must be an integer from 0 to 4294967295", what);
	*out = (uint32_t)json_integer_value(j);
	return 0;
}

/* A user or group id: 4294967295 is (uid_t)-1, which setresuid and setresgid read as "leave this
 * one unchanged", so the process would go on as the container's root. Refused, never a no-op. */
static int want_id(json_t *j, const char *what, uint32_t *out, struct al_error *err)
{
	int r = want_u32(j, what, out, err);
	if (r == 0 && *out == UINT32_MAX)
		return al_err(
			err, EINVAL,
			"config.json: %s 4294967295 is (uid_t)-1, which setresuid/setresgid take as \"unchanged\" "
			"(the process would stay root): refused",
			what);
	return r;
}

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* A JSON array of strings (or absent: an empty vector) as a NULL-terminated vector. */
static int string_vector(json_t *j, const char *what, char ***out, struct al_error *err)
{
	if (j && !json_is_array(j))
		return al_err(err, EINVAL, "config.json: %s must be an array of strings", what);
	size_t n = j ? json_array_size(j) : 0;
	char **v = calloc(n + 1, sizeof(*v));
	if (!v)
		return al_err(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		int r = dup_string(json_array_get(j, i), what, &v[i], err);
		if (r < 0) {
			free_strv(v);
			return r;
		}
	}
	*out = v;
	return 0;
}

static int cap_set(json_t *j, const char *what, uint64_t *out, struct al_error *err)
{
	*out = 0;
	if (!j)
		return 0;
	if (!json_is_array(j))
		return al_err(err, EINVAL, "config.json: process.capabilities.%s must be an array", what);
	size_t i;
	json_t *v;
	json_array_foreach(j, i, v) {
		const char *name;
		int r = want_string(v, "a capability", &name, err);
		if (r < 0)
			return r;
		int n = ort_cap_number(name);
		if (n < 0)
			return al_err(err, EINVAL, "config.json: unknown capability %s", name);
		*out |= 1ull << n;
	}
	return 0;
}

static int parse_caps(json_t *j, struct ort_caps *c, struct al_error *err)
{
	if (!j)
		return 0;
	if (!json_is_object(j))
		return al_err(err, EINVAL, "config.json: process.capabilities must be an object");
	int r;
	if ((r = cap_set(json_object_get(j, "bounding"), "bounding", &c->bounding, err)) < 0 ||
	    (r = cap_set(json_object_get(j, "effective"), "effective", &c->effective, err)) < 0 ||
	    (r = cap_set(json_object_get(j, "permitted"), "permitted", &c->permitted, err)) < 0 ||
	    (r = cap_set(json_object_get(j, "inheritable"), "inheritable", &c->inheritable, err)) < 0)
		return r;
	return cap_set(json_object_get(j, "ambient"), "ambient", &c->ambient, err);
}

static int parse_rlimits(json_t *j, struct ort_process *p, struct al_error *err)
{
	if (!j)
		return 0;
	if (!json_is_array(j))
		return al_err(err, EINVAL, "config.json: process.rlimits must be an array");
	p->rlimits = calloc(json_array_size(j) + 1, sizeof(*p->rlimits));
	if (!p->rlimits)
		return al_err(err, ENOMEM, "out of memory");
	size_t i;
	json_t *v;
	json_array_foreach(j, i, v) {
		const char *type;
		json_t *soft = json_object_get(v, "soft"), *hard = json_object_get(v, "hard");
		int r = want_string(json_object_get(v, "type"), "process.rlimits[].type", &type, err);
		if (r < 0)
			return r;
		if (!json_is_integer(soft) || !json_is_integer(hard))
			return al_err(err, EINVAL, "config.json: rlimit %s needs integer soft and hard", type);
		struct ort_rlimit *rl = &p->rlimits[p->nrlimits];
		rl->resource = -1;
		for (size_t k = 0; k < AL_ARRAY_SIZE(rlimit_names); k++)
			if (strcmp(rlimit_names[k].name, type) == 0)
				rl->resource = rlimit_names[k].resource;
		if (rl->resource < 0)
			return al_err(err, EINVAL, "config.json: unknown rlimit %s", type);
		/* jansson keeps integers signed: RLIM_INFINITY arrives as -1. */
		rl->soft = (uint64_t)json_integer_value(soft);
		rl->hard = (uint64_t)json_integer_value(hard);
		if (rl->soft > rl->hard)
			return al_err(err, EINVAL, "config.json: rlimit %s: soft above hard", type);
		p->nrlimits++;
	}
	return 0;
}

static int parse_user(json_t *u, struct ort_process *p, struct al_error *err)
{
	if (!u)
		return 0;
	if (!json_is_object(u))
		return al_err(err, EINVAL, "config.json: process.user must be an object");
	int r;
	if ((r = want_id(json_object_get(u, "uid"), "process.user.uid", &p->uid, err)) < 0 ||
	    (r = want_id(json_object_get(u, "gid"), "process.user.gid", &p->gid, err)) < 0)
		return r;
	json_t *g = json_object_get(u, "additionalGids");
	if (g && (!json_is_array(g) || json_array_size(g) > ORT_MAX_GIDS))
		return al_err(err, EINVAL, "config.json: process.user.additionalGids: an array of at most %d",
			      ORT_MAX_GIDS);
	for (size_t i = 0; g && i < json_array_size(g); i++)
		if ((r = want_id(json_array_get(g, i), "process.user.additionalGids[]", &p->gids[p->ngids++], err)) < 0)
			return r;
	if (json_object_get(u, "username"))
		return al_err(err, ENOTSUP, "config.json: process.user.username is not supported (give uid and gid)");
	return 0;
}

static int process_parse(json_t *j, struct ort_process *p, struct al_error *err);

int ort_process_parse(json_t *j, struct ort_process *p, struct al_error *err)
{
	memset(p, 0, sizeof(*p));
	int r = process_parse(j, p, err);
	if (r < 0)
		ort_process_free(p);
	return r;
}

static int process_parse(json_t *j, struct ort_process *p, struct al_error *err)
{
	if (!json_is_object(j))
		return al_err(err, EINVAL, "config.json: process must be an object");
	int r;
	if ((r = string_vector(json_object_get(j, "args"), "process.args", &p->argv, err)) < 0 ||
	    (r = string_vector(json_object_get(j, "env"), "process.env", &p->envp, err)) < 0)
		return r;
	if (!p->argv[0])
		return al_err(err, EINVAL, "config.json: process.args must name a program");
	json_t *cwd = json_object_get(j, "cwd");
	if ((r = cwd ? dup_string(cwd, "process.cwd", &p->cwd, err) : 0) < 0)
		return r;
	if (!p->cwd && !(p->cwd = strdup("/")))
		return al_err(err, ENOMEM, "out of memory");
	if (p->cwd[0] != '/')
		return al_err(err, EINVAL, "config.json: process.cwd must be absolute");
	json_t *t = json_object_get(j, "terminal"), *nnp = json_object_get(j, "noNewPrivileges");
	if ((t && !json_is_boolean(t)) || (nnp && !json_is_boolean(nnp)))
		return al_err(err, EINVAL, "config.json: process.terminal and noNewPrivileges are booleans");
	p->terminal = json_is_true(t);
	p->nnp = json_is_true(nnp);
	if ((r = parse_user(json_object_get(j, "user"), p, err)) < 0 ||
	    (r = parse_caps(json_object_get(j, "capabilities"), &p->caps, err)) < 0)
		return r;
	if (json_string_length(json_object_get(j, "apparmorProfile")) ||
	    json_string_length(json_object_get(j, "selinuxLabel")))
		return al_err(err, ENOTSUP,
			      "config.json: AppArmor and SELinux labels are not supported by airlock-runc "
			      "(refused rather than ignored)");
	return parse_rlimits(json_object_get(j, "rlimits"), p, err);
}

void ort_process_free(struct ort_process *p)
{
	free_strv(p->argv);
	free_strv(p->envp);
	free(p->cwd);
	free(p->rlimits);
	memset(p, 0, sizeof(*p));
}

/* ---- mounts ---------------------------------------------------------------------------- */

static int add_data(char **data, const char *opt)
{
	size_t old = *data ? strlen(*data) : 0;
	char *n = realloc(*data, old + strlen(opt) + 2);
	if (!n)
		return -ENOMEM;
	if (old)
		n[old++] = ',';
	memcpy(n + old, opt, strlen(opt) + 1);
	*data = n;
	return 0;
}

static int mount_option(struct ort_mount *m, const char *opt)
{
	for (size_t i = 0; i < AL_ARRAY_SIZE(mount_flags); i++)
		if (strcmp(mount_flags[i].name, opt) == 0) {
			if (mount_flags[i].clear)
				m->flags &= ~mount_flags[i].flag;
			else
				m->flags |= mount_flags[i].flag;
			return 0;
		}
	for (size_t i = 0; i < AL_ARRAY_SIZE(propag_names); i++)
		if (strcmp(propag_names[i].name, opt) == 0) {
			m->propag = propag_names[i].flag;
			return 0;
		}
	if (strcmp(opt, "bind") == 0 || strcmp(opt, "rbind") == 0) {
		m->bind = true;
		m->rec = opt[0] == 'r';
		return 0;
	}
	if (strcmp(opt, "remount") == 0)
		return -ENOTSUP;
	return add_data(&m->data, opt);
}

/* A ".." component: a destination must not climb (the container's own symlinks are resolved
 * beneath its root when mounting; "..", written by the config, is refused outright). */
static bool has_dotdot(const char *path)
{
	for (const char *p = path; (p = strstr(p, "..")); p += 2)
		if ((p == path || p[-1] == '/') && (p[2] == 0 || p[2] == '/'))
			return true;
	return false;
}

static int parse_mount(json_t *j, struct ort_mount *m, struct al_error *err)
{
	if (!json_is_object(j))
		return al_err(err, EINVAL, "config.json: mounts[] must be objects");
	int r;
	if ((r = dup_string(json_object_get(j, "destination"), "mounts[].destination", &m->dest, err)) < 0)
		return r;
	if (m->dest[0] != '/' || has_dotdot(m->dest))
		return al_err(err, EINVAL, "config.json: mount destination %s must be absolute, without ..", m->dest);
	json_t *type = json_object_get(j, "type"), *src = json_object_get(j, "source");
	if ((r = type ? dup_string(type, "mounts[].type", &m->type, err) : 0) < 0 ||
	    (r = src ? dup_string(src, "mounts[].source", &m->source, err) : 0) < 0)
		return r;
	json_t *opts = json_object_get(j, "options");
	if (opts && !json_is_array(opts))
		return al_err(err, EINVAL, "config.json: mounts[].options must be an array");
	size_t i;
	json_t *o;
	json_array_foreach(opts, i, o) {
		const char *s;
		if ((r = want_string(o, "a mount option", &s, err)) < 0)
			return r;
		if ((r = mount_option(m, s)) < 0)
			return al_err(err, -r, "config.json: mount %s: option %s is not supported", m->dest, s);
	}
	if (m->type && strcmp(m->type, "bind") == 0)
		m->bind = true;
	if (m->bind && (!m->source || m->source[0] != '/'))
		return al_err(err, EINVAL, "config.json: bind mount %s needs an absolute source", m->dest);
	if (!m->bind && !m->type)
		return al_err(err, EINVAL, "config.json: mount %s needs a type", m->dest);
	return 0;
}

static int parse_mounts(json_t *j, struct ort_spec *s, struct al_error *err)
{
	if (!j)
		return 0;
	if (!json_is_array(j))
		return al_err(err, EINVAL, "config.json: mounts must be an array");
	s->mounts = calloc(json_array_size(j) + 1, sizeof(*s->mounts));
	if (!s->mounts)
		return al_err(err, ENOMEM, "out of memory");
	size_t i;
	json_t *m;
	json_array_foreach(j, i, m) {
		int r = parse_mount(m, &s->mounts[s->nmounts++], err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- linux ---------------------------------------------------------------------------- */

static int parse_namespaces(json_t *j, struct ort_spec *s, struct al_error *err)
{
	if (j && !json_is_array(j))
		return al_err(err, EINVAL, "config.json: linux.namespaces must be an array");
	size_t i;
	json_t *n;
	json_array_foreach(j, i, n) {
		const char *type;
		int r = want_string(json_object_get(n, "type"), "linux.namespaces[].type", &type, err);
		if (r < 0)
			return r;
		size_t k = 0;
		while (k < ORT_NS__COUNT && strcmp(ns_names[k].name, type) != 0)
			k++;
		if (k == ORT_NS__COUNT)
			return al_err(err, EINVAL, "config.json: unknown namespace type %s", type);
		if (s->ns[k])
			return al_err(err, EINVAL, "config.json: namespace %s given twice", type);
		s->ns[k] = true;
		json_t *path = json_object_get(n, "path");
		if (path && (r = dup_string(path, "linux.namespaces[].path", &s->ns_path[k], err)) < 0)
			return r;
	}
	return 0;
}

static int parse_idmaps(json_t *j, const char *what, struct ort_idmap *m, size_t *n, struct al_error *err)
{
	if (!j)
		return 0;
	if (!json_is_array(j) || json_array_size(j) > ORT_MAX_IDMAPS)
		return al_err(err, EINVAL, "config.json: linux.%s: an array of at most %d", what, ORT_MAX_IDMAPS);
	size_t i;
	json_t *v;
	json_array_foreach(j, i, v) {
		int r;
		if ((r = want_u32(json_object_get(v, "containerID"), what, &m[i].inside, err)) < 0 ||
		    (r = want_u32(json_object_get(v, "hostID"), what, &m[i].host, err)) < 0 ||
		    (r = want_u32(json_object_get(v, "size"), what, &m[i].size, err)) < 0)
			return r;
		if (m[i].size == 0 || m[i].host > UINT32_MAX - m[i].size || m[i].inside > UINT32_MAX - m[i].size)
			return al_err(err, EINVAL, "config.json: linux.%s: a range is empty or wraps", what);
		(*n)++;
	}
	return 0;
}

static int64_t int_or(json_t *j, int64_t dflt)
{
	return json_is_integer(j) ? (int64_t)json_integer_value(j) : dflt;
}

static int parse_resources(json_t *j, struct ort_resources *res, struct al_error *err)
{
	*res = (struct ort_resources){.memory = -1, .pids = -1, .cpu_quota = -1};
	if (!j)
		return 0;
	if (!json_is_object(j))
		return al_err(err, EINVAL, "config.json: linux.resources must be an object");
	json_t *mem = json_object_get(j, "memory"), *pids = json_object_get(j, "pids"),
	       *cpu = json_object_get(j, "cpu");
	res->memory = int_or(json_object_get(mem, "limit"), -1);
	res->pids = int_or(json_object_get(pids, "limit"), -1);
	res->cpu_quota = int_or(json_object_get(cpu, "quota"), -1);
	int64_t period = int_or(json_object_get(cpu, "period"), 0), shares = int_or(json_object_get(cpu, "shares"), 0);
	if (period < 0 || shares < 0)
		return al_err(err, EINVAL, "config.json: linux.resources.cpu: negative period or shares");
	res->cpu_period = (uint64_t)period;
	res->cpu_shares = (uint64_t)shares;
	if (res->pids == 0)
		res->pids = -1; /* 0 means "no limit" in the spec's pids object */
	return 0;
}

/* linux.sysctl: keys of lowercase words, digits, '_' and '-' joined by dots (no '/', so a key
 * names one file beneath /proc/sys and nothing else); which keys a profile allows is plan.c's. */
static int parse_sysctls(json_t *j, struct ort_spec *s, struct al_error *err)
{
	if (!j)
		return 0;
	if (!json_is_object(j))
		return al_err(err, EINVAL, "config.json: linux.sysctl must be an object");
	s->sysctls = calloc(json_object_size(j) + 1, sizeof(*s->sysctls));
	if (!s->sysctls)
		return al_err(err, ENOMEM, "out of memory");
	const char *k;
	json_t *v;
	json_object_foreach(j, k, v) {
		struct ort_sysctl *sc = &s->sysctls[s->nsysctls++];
		int r = dup_string(v, "a linux.sysctl value", &sc->value, err);
		if (r < 0)
			return r;
		bool ok = k[0] && k[0] != '.' && k[strlen(k) - 1] != '.' && !strstr(k, "..");
		for (const char *c = k; ok && *c; c++)
			ok = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' ||
			     *c == '.';
		if (!ok)
			return al_err(err, EINVAL, "config.json: linux.sysctl key '%s' is malformed", k);
		if (!(sc->key = strdup(k)) || asprintf(&sc->path, "/proc/sys/%s", k) < 0)
			return al_err(err, ENOMEM, "out of memory");
		for (char *c = sc->path + 10; *c; c++)
			if (*c == '.')
				*c = '/';
	}
	return 0;
}

static int parse_linux(json_t *l, struct ort_spec *s, struct al_error *err)
{
	if (!l)
		return 0;
	if (!json_is_object(l))
		return al_err(err, EINVAL, "config.json: linux must be an object");
	int r;
	if ((r = parse_namespaces(json_object_get(l, "namespaces"), s, err)) < 0 ||
	    (r = parse_idmaps(json_object_get(l, "uidMappings"), "uidMappings", s->uidmap, &s->nuidmap, err)) < 0 ||
	    (r = parse_idmaps(json_object_get(l, "gidMappings"), "gidMappings", s->gidmap, &s->ngidmap, err)) < 0 ||
	    (r = string_vector(json_object_get(l, "maskedPaths"), "linux.maskedPaths", &s->masked, err)) < 0 ||
	    (r = string_vector(json_object_get(l, "readonlyPaths"), "linux.readonlyPaths", &s->readonly, err)) < 0 ||
	    (r = parse_resources(json_object_get(l, "resources"), &s->res, err)) < 0)
		return r;
	json_t *cg = json_object_get(l, "cgroupsPath");
	if (cg && (r = dup_string(cg, "linux.cgroupsPath", &s->cgroups_path, err)) < 0)
		return r;
	if (s->cgroups_path && (strstr(s->cgroups_path, "..") || strchr(s->cgroups_path, ':')))
		return al_err(
			err, EINVAL,
			"config.json: linux.cgroupsPath %s: '..' is refused, and systemd's slice:prefix:name form "
			"is not supported (--systemd-cgroup)",
			s->cgroups_path);
	json_t *sc = json_object_get(l, "seccomp");
	if (sc && !json_is_null(sc))
		s->seccomp = json_incref(sc);
	json_t *devs = json_object_get(l, "devices");
	s->ndevices = json_is_array(devs) ? json_array_size(devs) : 0;
	if ((r = parse_sysctls(json_object_get(l, "sysctl"), s, err)) < 0)
		return r;
	s->has_selinux = json_string_length(json_object_get(l, "mountLabel")) > 0;
	s->has_intel_rdt = json_object_get(l, "intelRdt") != NULL;
	json_t *rp = json_object_get(l, "rootfsPropagation");
	if (rp) {
		const char *v;
		if ((r = want_string(rp, "linux.rootfsPropagation", &v, err)) < 0)
			return r;
		for (size_t i = 0; i < AL_ARRAY_SIZE(propag_names); i++)
			if (strcmp(propag_names[i].name, v) == 0)
				s->root_propag = propag_names[i].flag;
		if (!s->root_propag)
			return al_err(err, EINVAL, "config.json: unknown linux.rootfsPropagation %s", v);
	}
	return 0;
}

static int parse_root(json_t *root, const char *bundle, struct ort_spec *s, struct al_error *err)
{
	const char *path;
	int r = want_string(json_object_get(root, "path"), "root.path", &path, err);
	if (r < 0)
		return r;
	json_t *ro = json_object_get(root, "readonly");
	if (ro && !json_is_boolean(ro))
		return al_err(err, EINVAL, "config.json: root.readonly must be a boolean");
	s->root_ro = json_is_true(ro);
	if (path[0] == '/')
		s->root = strdup(path);
	else if (asprintf(&s->root, "%s/%s", bundle, path) < 0)
		s->root = NULL;
	return s->root ? 0 : al_err(err, ENOMEM, "out of memory");
}

int ort_spec_parse(const char *text, size_t len, const char *bundle, struct ort_spec *s, struct al_error *err)
{
	memset(s, 0, sizeof(*s));
	json_error_t je;
	json_t *c = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!c)
		return al_err(err, EINVAL, "config.json: line %d: %s", je.line, je.text);
	int r;
	if (!json_is_object(c)) {
		r = al_err(err, EINVAL, "config.json: not a JSON object");
		goto out;
	}
	if (!json_is_string(json_object_get(c, "ociVersion"))) {
		r = al_err(err, EINVAL, "config.json: ociVersion must be a string");
		goto out;
	}
	if ((r = parse_root(json_object_get(c, "root"), bundle, s, err)) < 0 ||
	    (r = ort_process_parse(json_object_get(c, "process"), &s->proc, err)) < 0 ||
	    (r = parse_mounts(json_object_get(c, "mounts"), s, err)) < 0 ||
	    (r = parse_linux(json_object_get(c, "linux"), s, err)) < 0)
		goto out;
	json_t *h = json_object_get(c, "hostname");
	if (h && (r = dup_string(h, "hostname", &s->hostname, err)) < 0)
		goto out;
	json_t *ann = json_object_get(c, "annotations");
	if (ann && !json_is_object(ann)) {
		r = al_err(err, EINVAL, "config.json: annotations must be an object");
		goto out;
	}
	s->annotations = json_incref(ann);
	json_t *hooks = json_object_get(c, "hooks");
	if ((r = ort_hooks_parse(hooks, &s->hooks, err)) < 0)
		goto out;
	if (hooks && !json_is_null(hooks))
		s->hooks_json = json_incref(hooks);
	r = 0;
out:
	json_decref(c);
	if (r < 0)
		ort_spec_free(s); /* nothing half-read is left for the caller */
	return r;
}

void ort_spec_free(struct ort_spec *s)
{
	free(s->root);
	ort_process_free(&s->proc);
	free(s->hostname);
	for (size_t i = 0; i < s->nmounts; i++) {
		free(s->mounts[i].dest);
		free(s->mounts[i].type);
		free(s->mounts[i].source);
		free(s->mounts[i].data);
	}
	free(s->mounts);
	for (int i = 0; i < ORT_NS__COUNT; i++)
		free(s->ns_path[i]);
	free_strv(s->masked);
	free_strv(s->readonly);
	for (size_t i = 0; i < s->nsysctls; i++) {
		free(s->sysctls[i].key);
		free(s->sysctls[i].path);
		free(s->sysctls[i].value);
	}
	free(s->sysctls);
	free(s->cgroups_path);
	json_decref(s->seccomp);
	json_decref(s->annotations);
	ort_hooks_free(&s->hooks);
	json_decref(s->hooks_json);
	memset(s, 0, sizeof(*s));
}

const char *ort_annotation(const struct ort_spec *s, const char *key)
{
	return json_string_value(json_object_get(s->annotations, key));
}
