/* policy.c — the policy object: defaults, setters, and validation that fails before anything runs. */
#include "policy.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "util/cleanup.h"
#include "util/error.h"

/* Every limit's default, the one place: the policy starts with these, the embedded configuration
 * states them (config.c), and `airlock config dump` shows them. Half a CPU: a job that spins
 * leaves the host the rest. */
static const uint64_t default_limits[AL_LIMIT__COUNT] = {
	[AL_LIMIT_WALL_MS] = 30ull * 1000,
	[AL_LIMIT_CPU_MS] = AL_UNLIMITED,
	[AL_LIMIT_OUTPUT] = 1 << 20,
	[AL_LIMIT_DISK] = 1ULL << 30,
	[AL_LIMIT_NOFILE] = 1024,
	[AL_LIMIT_FSIZE] = 1ULL << 30,
	[AL_LIMIT_AS] = AL_UNLIMITED,
	[AL_LIMIT_NPROC] = AL_UNLIMITED,
	[AL_LIMIT_MEMORY] = 512ULL << 20,
	[AL_LIMIT_PIDS] = 1024,
	[AL_LIMIT_CPUS] = 500,
};

uint64_t pol_default_limit(enum al_limit which)
{
	return (unsigned)which < AL_LIMIT__COUNT ? default_limits[which] : AL_UNLIMITED;
}

static const char *const limit_names[AL_LIMIT__COUNT] = {
	[AL_LIMIT_WALL_MS] = "time",	 [AL_LIMIT_CPU_MS] = "cpu-time",   [AL_LIMIT_OUTPUT] = "output-limit",
	[AL_LIMIT_DISK] = "disk",	 [AL_LIMIT_NOFILE] = "open-files", [AL_LIMIT_FSIZE] = "file-size",
	[AL_LIMIT_AS] = "address-space", [AL_LIMIT_NPROC] = "processes",   [AL_LIMIT_MEMORY] = "memory",
	[AL_LIMIT_PIDS] = "pids",	 [AL_LIMIT_CPUS] = "cpus",
};

const char *al_limit_name(enum al_limit which)
{
	return (unsigned)which < AL_LIMIT__COUNT ? limit_names[which] : "unknown";
}

int al_policy_new(struct al_policy **out)
{
	struct al_policy *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	memcpy(p->limits, default_limits, sizeof(p->limits));
	p->id_base = AL_DEFAULT_ID_BASE;
	p->run_uid = p->run_gid = AL_SANDBOX_UID;
	p->seccomp = AL_SECCOMP_DEFAULT;
	p->landlock = true;
	p->proxy_max_conns = AL_PROXY_DEFAULT_CONNS;
	p->proxy_idle_ms = AL_PROXY_DEFAULT_IDLE_MS;
	*out = p;
	return 0;
}

void pol_free_strv(char **v)
{
	if (!v)
		return;
	for (char **s = v; *s; s++)
		free(*s);
	free(v);
}

void al_policy_free(struct al_policy *p)
{
	if (!p)
		return;
	pol_free_strv(p->argv);
	for (size_t i = 0; i < p->nenv; i++)
		free(p->env[i]);
	free(p->env);
	for (size_t i = 0; i < p->nbinds; i++) {
		free(p->binds[i].src);
		free(p->binds[i].dest);
	}
	free(p->binds);
	for (size_t i = 0; i < p->nfiles; i++) {
		free(p->files[i].dest);
		free(p->files[i].data);
	}
	free(p->files);
	free(p->workdir);
	for (size_t i = 0; i < p->nws_layers; i++)
		free(p->ws_layers[i]);
	free(p->ws_layers);
	free(p->checkout);
	free(p->checkout_dest);
	free(p->keep_changes);
	free(p->hostname);
	free(p->rootfs);
	pol_free_image(p);
	free(p->cwd);
	pol_free_net(p);
	for (size_t i = 0; i < p->netc; i++)
		free(p->etc[i]);
	free(p->etc);
	free(p);
}

int al_policy_set_argv(struct al_policy *p, int argc, const char *const *argv, struct al_error *err)
{
	if (argc < 1 || !argv || !argv[0] || !argv[0][0])
		return al_err(err, EINVAL, "no command given");
	char **v = calloc((size_t)argc + 1, sizeof(*v));
	if (!v)
		return al_err(err, ENOMEM, "out of memory");
	for (int i = 0; i < argc; i++) {
		v[i] = strdup(argv[i]);
		if (!v[i]) {
			pol_free_strv(v);
			return al_err(err, ENOMEM, "out of memory");
		}
	}
	pol_free_strv(p->argv);
	p->argv = v;
	p->argc = argc;
	return 0;
}

const char *pol_rootfs(const struct al_policy *p)
{
	return p->rootfs;
}

int pol_argv_replace(struct al_policy *p, const char *from, const char *to)
{
	for (int i = 0; i < p->argc; i++) {
		if (strcmp(p->argv[i], from) != 0)
			continue;
		char *a = strdup(to);
		if (!a)
			return -ENOMEM;
		free(p->argv[i]);
		p->argv[i] = a;
		return 1;
	}
	return 0;
}

int al_policy_set_limit(struct al_policy *p, enum al_limit which, uint64_t value, struct al_error *err)
{
	if ((unsigned)which >= AL_LIMIT__COUNT)
		return al_err(err, EINVAL, "unknown limit %d", (int)which);
	const char *name = limit_names[which];
	switch (which) {
	case AL_LIMIT_WALL_MS:
	case AL_LIMIT_CPU_MS:
		if (value == 0)
			return al_err(err, EINVAL, "--%s must be positive", name);
		break;
	case AL_LIMIT_OUTPUT:
		/* The supervisor keeps this much in memory per stream: bound it. */
		if (value == AL_UNLIMITED || value > (1ULL << 30))
			return al_err(err, ERANGE, "--%s must be at most 1G", name);
		break;
	case AL_LIMIT_DISK:
		if (value == AL_UNLIMITED || value < 4096)
			return al_err(err, ERANGE, "--%s must be a size of at least 4K", name);
		break;
	case AL_LIMIT_NOFILE:
		if (value == AL_UNLIMITED || value < 16 || value > (1 << 20))
			return al_err(err, ERANGE, "--%s must be between 16 and 1048576", name);
		break;
	case AL_LIMIT_AS:
		/* Below this even the dynamic loader cannot map libc: the job would die of SIGSEGV (or
		 * "failed to map segment") looking like its own fault. 16M runs sh and python3. */
		if (value < AL_MIN_ADDRESS_SPACE)
			return al_err(err, ERANGE, "--%s must be at least 16M (a smaller one cannot load a program)",
				      name);
		break;
	case AL_LIMIT_FSIZE:
	case AL_LIMIT_NPROC:
		if (value == 0)
			return al_err(err, EINVAL, "--%s must be positive", name);
		break;
	case AL_LIMIT_MEMORY:
		if (value != AL_UNLIMITED && value < (4ULL << 20))
			return al_err(err, ERANGE, "--%s must be at least 4M", name);
		break;
	case AL_LIMIT_PIDS:
		if (value != AL_UNLIMITED && (value < 4 || value > (1 << 22)))
			return al_err(err, ERANGE, "--%s must be between 4 and 4194304", name);
		break;
	case AL_LIMIT_CPUS:
		if (value != AL_UNLIMITED && (value < 10 || value > 1024ull * 1000))
			return al_err(err, ERANGE, "--%s must be between 0.01 and 1024", name);
		break;
	case AL_LIMIT__COUNT:
		break;
	}
	p->limits[which] = value;
	p->limits_set |= 1u << which;
	return 0;
}

uint64_t al_policy_get_limit(const struct al_policy *p, enum al_limit which)
{
	return (unsigned)which < AL_LIMIT__COUNT ? p->limits[which] : 0;
}

bool pol_env_name_ok(const char *s, size_t len)
{
	if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
			return false;
	}
	return true;
}

int al_policy_add_env(struct al_policy *p, const char *spec, struct al_error *err)
{
	const char *eq = strchr(spec, '=');
	size_t nlen = eq ? (size_t)(eq - spec) : strlen(spec);
	if (!pol_env_name_ok(spec, nlen))
		return al_err(err, EINVAL, "--env: invalid variable name in '%s'", spec);
	cleanup_free char *entry = NULL;
	if (eq) {
		entry = strdup(spec);
	} else {
		const char *v = getenv(spec);
		if (!v)
			return 0; /* pass-through of an unset variable: nothing to pass */
		if (asprintf(&entry, "%s=%s", spec, v) < 0)
			entry = NULL;
	}
	if (!entry)
		return al_err(err, ENOMEM, "out of memory");
	/* A later setting of the same name replaces the earlier one. */
	for (size_t i = 0; i < p->nenv; i++) {
		if (strncmp(p->env[i], entry, nlen + 1) == 0) {
			free(p->env[i]);
			p->env[i] = steal_ptr(entry);
			return 0;
		}
	}
	char **n = realloc(p->env, (p->nenv + 1) * sizeof(*n));
	if (!n)
		return al_err(err, ENOMEM, "out of memory");
	p->env = n;
	p->env[p->nenv++] = steal_ptr(entry);
	return 0;
}

int pol_check_inside_path(const char *path, struct al_error *err)
{
	if (!path || path[0] != '/')
		return al_err(err, EINVAL, "path '%s' inside the sandbox must be absolute", path ? path : "");
	if (strlen(path) >= PATH_MAX)
		return al_err(err, ENAMETOOLONG, "path inside the sandbox is too long");
	for (const char *s = path; *s;) {
		while (*s == '/')
			s++;
		const char *e = strchrnul(s, '/');
		size_t n = (size_t)(e - s);
		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return al_err(err, EINVAL, "path '%s' inside the sandbox may not contain '.' or '..'", path);
		s = e;
	}
	return 0;
}

/* Collapses repeated and trailing slashes: "//proc/" names the same place as "/proc". */
static char *normalize_inside(const char *path)
{
	char *n = malloc(strlen(path) + 1), *o = n;
	if (!n)
		return NULL;
	for (const char *s = path; *s; s++)
		if (!(*s == '/' && o > n && o[-1] == '/'))
			*o++ = *s;
	if (o - n > 1 && o[-1] == '/')
		o--;
	*o = 0;
	return n;
}

/* Paths the sandbox's own layout owns: a bind may not replace them. */
static bool reserved_dest(const char *d)
{
	static const char *const reserved[] = {"/", "/proc", "/dev", "/etc", "/usr", "/tmp", AL_WORKSPACE};
	size_t n = strlen(d);
	while (n > 1 && d[n - 1] == '/')
		n--;
	for (size_t i = 0; i < AL_ARRAY_SIZE(reserved); i++)
		if (strlen(reserved[i]) == n && strncmp(reserved[i], d, n) == 0)
			return true;
	return strncmp(d, "/proc/", 6) == 0 || strncmp(d, "/dev/", 5) == 0;
}

int al_policy_add_bind(struct al_policy *p, const char *src, const char *dest, bool writable, struct al_error *err)
{
	const char *flag = writable ? "--rw" : "--ro";
	if (!src || !*src)
		return al_err(err, EINVAL, "%s: empty source path", flag);
	cleanup_free char *real = realpath(src, NULL);
	if (!real)
		return al_err_sys(err, errno, "%s: bind source '%s'", flag, src);
	struct stat st;
	if (stat(real, &st) < 0)
		return al_err_sys(err, errno, "%s: bind source '%s'", flag, src);
	/* Without DEST the job sees SRC at the path the caller wrote (made absolute). */
	if (!dest)
		dest = src[0] == '/' ? src : real;
	int r = pol_check_inside_path(dest, err);
	if (r < 0) {
		al_err_prefix(err, "%s", flag);
		return r;
	}
	cleanup_free char *d = normalize_inside(dest);
	if (!d)
		return al_err(err, ENOMEM, "out of memory");
	if (reserved_dest(d))
		return al_err(err, EINVAL, "%s: destination '%s' is reserved by the sandbox layout", flag, dest);
	struct al_bind *n = realloc(p->binds, (p->nbinds + 1) * sizeof(*n));
	if (!n)
		return al_err(err, ENOMEM, "out of memory");
	p->binds = n;
	p->binds[p->nbinds++] = (struct al_bind){
		.src = steal_ptr(real), .dest = steal_ptr(d), .writable = writable, .is_dir = S_ISDIR(st.st_mode)};
	return 0;
}

int al_policy_set_workdir(struct al_policy *p, const char *dir, struct al_error *err)
{
	cleanup_free char *real = realpath(dir, NULL);
	if (!real)
		return al_err_sys(err, errno, "--workdir '%s'", dir);
	struct stat st;
	if (stat(real, &st) < 0)
		return al_err_sys(err, errno, "--workdir '%s'", dir);
	if (!S_ISDIR(st.st_mode))
		return al_err(err, ENOTDIR, "--workdir '%s' is not a directory", dir);
	free(p->workdir);
	p->workdir = steal_ptr(real);
	return 0;
}

int al_policy_add_ws_layer(struct al_policy *p, const char *dir, struct al_error *err)
{
	if (p->nws_layers >= AL_WS_LAYERS)
		return al_err(err, E2BIG, "a workspace has at most %d layers", AL_WS_LAYERS);
	if (!dir || dir[0] != '/')
		return al_err(err, EINVAL, "a workspace layer must be an absolute path, not \"%s\"", dir ? dir : "");
	/* Overlayfs splits lowerdir= at ':' and ','; the plan names each layer by a path of its own
	 * (fsplan.c), so these only matter here: refused rather than escaped. */
	if (strpbrk(dir, ":,\\"))
		return al_err(err, EINVAL, "a workspace layer's path may not hold ':', ',' or '\\': %s", dir);
	struct stat st;
	if (stat(dir, &st) < 0)
		return al_err_sys(err, errno, "workspace layer %s", dir);
	if (!S_ISDIR(st.st_mode))
		return al_err(err, ENOTDIR, "workspace layer %s is not a directory", dir);
	char **n = realloc(p->ws_layers, (p->nws_layers + 1) * sizeof(*n));
	if (!n)
		return al_err(err, ENOMEM, "out of memory");
	p->ws_layers = n;
	if (!(n[p->nws_layers] = strdup(dir)))
		return al_err(err, ENOMEM, "out of memory");
	p->nws_layers++;
	return 0;
}

int al_policy_set_hostname(struct al_policy *p, const char *name, struct al_error *err)
{
	size_t n = strlen(name);
	if (n == 0 || n > 63)
		return al_err(err, EINVAL, "--hostname must be 1 to 63 characters");
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		      c == '.'))
			return al_err(err, EINVAL, "--hostname '%s' may hold only letters, digits, '-' and '.'", name);
	}
	char *d = strdup(name);
	if (!d)
		return al_err(err, ENOMEM, "out of memory");
	free(p->hostname);
	p->hostname = d;
	return 0;
}

int al_policy_set_cwd(struct al_policy *p, const char *dir, struct al_error *err)
{
	int r = pol_check_inside_path(dir, err);
	if (r < 0) {
		al_err_prefix(err, "--cwd");
		return r;
	}
	char *d = strdup(dir);
	if (!d)
		return al_err(err, ENOMEM, "out of memory");
	free(p->cwd);
	p->cwd = d;
	return 0;
}

int al_policy_set_id_base(struct al_policy *p, uint32_t base, struct al_error *err)
{
	/* Never map host root, and keep the whole range inside uid_t without wrapping. */
	if (base == 0 || (uint64_t)base + AL_IDS_PER_SANDBOX > 0xFFFFFFFEull)
		return al_err(err, ERANGE, "--id-base must be between 1 and %u", 0xFFFFFFFEu - AL_IDS_PER_SANDBOX);
	p->id_base = base;
	return 0;
}

/* Whether one of v's first k entries sets the variable s names ("NAME=VALUE"). */
static bool env_has(char *const *v, size_t k, const char *s)
{
	size_t nlen = strcspn(s, "=");
	for (size_t j = 0; j < k; j++)
		if (strncmp(v[j], s, nlen) == 0 && v[j][nlen] == '=')
			return true;
	return false;
}

/* Adds a copy of s unless the policy sets a variable of the same name (policy entries win). */
static int env_put_base(char **v, size_t *k, const struct al_policy *p, const char *s)
{
	if (env_has(p->env, p->nenv, s))
		return 0;
	return (v[(*k)++] = strdup(s)) ? 0 : -ENOMEM;
}

/* Adds the image's entries that nothing in v set: the image fills in, never replaces, so an
 * image's PATH or HOME does not undo airlock's (its PATH names the image's own directories; the
 * README's contract is airlock's fixed base). The proxy's variables, in any case, are never an
 * image's: they belong to the network posture, which an image never changes. Of two entries of
 * one name the later wins, as with --env. */
static int env_put_image(char **v, size_t *k, char *const *img, size_t n)
{
	size_t had = *k;
	for (size_t i = 0; i < n; i++) {
		size_t nlen = strcspn(img[i], "=");
		bool proxy = nlen >= 6 && strncasecmp(img[i] + nlen - 6, "_PROXY", 6) == 0;
		if (proxy || env_has(v, had, img[i]) || env_has(img + i + 1, n - i - 1, img[i]))
			continue;
		if (!(v[(*k)++] = strdup(img[i])))
			return -ENOMEM;
	}
	return 0;
}

char **pol_build_envp(const struct al_policy *p)
{
	static const char *const base[] = {
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		("HOME=" AL_WORKSPACE), /* parenthesized: one string on purpose (clang -Wstring-concatenation) */
		"LANG=C.UTF-8",
		("USER=" AL_SANDBOX_ACCOUNT),
		("LOGNAME=" AL_SANDBOX_ACCOUNT),
		"TMPDIR=/tmp",
	};
	size_t nb = AL_ARRAY_SIZE(base), nnet = 0, nimg = 0, k = 0;
	char *const *img = pol_image_env(p, &nimg);
	char **net = pol_net_env(p, &nnet);
	char **v = net ? calloc(nb + nnet + p->nenv + nimg + 1, sizeof(*v)) : NULL;
	bool ok = v != NULL;
	for (size_t i = 0; ok && i < nb; i++)
		ok = env_put_base(v, &k, p, base[i]) == 0;
	for (size_t i = 0; ok && i < nnet; i++)
		ok = env_put_base(v, &k, p, net[i]) == 0;
	for (size_t j = 0; ok && j < p->nenv; j++)
		ok = (v[k++] = strdup(p->env[j])) != NULL;
	ok = ok && env_put_image(v, &k, img, nimg) == 0;
	for (size_t i = 0; net && i < nnet; i++)
		free(net[i]);
	free(net);
	if (!ok) {
		pol_free_strv(v);
		return NULL;
	}
	return v;
}

int al_policy_set_seccomp(struct al_policy *p, enum al_seccomp_profile profile, struct al_error *err)
{
	if (profile != AL_SECCOMP_DEFAULT && profile != AL_SECCOMP_STRICT && profile != AL_SECCOMP_OFF)
		return al_err(err, EINVAL, "--seccomp: unknown profile %d", (int)profile);
	p->seccomp = profile;
	return 0;
}

int al_policy_set_landlock(struct al_policy *p, bool on, struct al_error *err)
{
	(void)err;
	p->landlock = on;
	return 0;
}

static const struct {
	const char *name;
	uint32_t bits;
} req_names[] = {
	{"userns", REQ_USERNS},
	{"pidns", REQ_PIDNS},
	{"mntns", REQ_MNTNS},
	{"netns", REQ_NETNS},
	{"ipcns", REQ_IPCNS},
	{"utsns", REQ_UTSNS},
	{"cgroupns", REQ_CGROUPNS},
	{"namespaces", REQ_USERNS | REQ_PIDNS | REQ_MNTNS | REQ_NETNS | REQ_IPCNS | REQ_UTSNS | REQ_CGROUPNS},
	{"pivot_root", REQ_PIVOT_ROOT},
	{"seccomp", REQ_SECCOMP},
	{"landlock", REQ_LANDLOCK},
	{"cgroup-memory", REQ_CGROUP_MEMORY},
	{"cgroup-pids", REQ_CGROUP_PIDS},
	{"cgroup-cpu", REQ_CGROUP_CPU},
	{"cgroup", REQ_CGROUP_MEMORY | REQ_CGROUP_PIDS},
	{"no_new_privs", REQ_NO_NEW_PRIVS},
	{"caps", REQ_CAPS},
	{"all", 0x7fff},
};

int pol_parse_require(const char *spec, uint32_t *bits, int *landlock_abi, struct al_error *err)
{
	if (!spec || !*spec)
		return al_err(err, EINVAL, "--require: empty list");
	for (const char *s = spec; *s;) {
		const char *e = strchrnul(s, ',');
		size_t n = (size_t)(e - s);
		const char *ge = memmem(s, n, ">=", 2);
		size_t name_len = ge ? (size_t)(ge - s) : n;
		bool found = false;
		for (size_t i = 0; i < AL_ARRAY_SIZE(req_names); i++) {
			if (strlen(req_names[i].name) != name_len || strncmp(req_names[i].name, s, name_len) != 0)
				continue;
			found = true;
			*bits |= req_names[i].bits;
		}
		if (!found || name_len == 0)
			return al_err(err, EINVAL,
				      "--require: unknown layer '%.*s' (known: userns pidns mntns netns ipcns utsns "
				      "cgroupns namespaces pivot_root seccomp landlock[>=N] cgroup-memory cgroup-pids "
				      "cgroup-cpu cgroup no_new_privs caps all)",
				      (int)name_len, s);
		if (ge) {
			if (name_len != 8 || strncmp(s, "landlock", 8) != 0)
				return al_err(err, EINVAL, "--require: only landlock takes a version ('%.*s')", (int)n,
					      s);
			int abi = 0;
			const char *d = ge + 2;
			if (d == e)
				return al_err(err, EINVAL, "--require: landlock>= needs an ABI number");
			for (; d < e; d++) {
				if (*d < '0' || *d > '9' || abi > 100)
					return al_err(err, EINVAL, "--require: bad Landlock ABI in '%.*s'", (int)n, s);
				abi = abi * 10 + (*d - '0');
			}
			if (abi > *landlock_abi)
				*landlock_abi = abi;
		}
		s = *e ? e + 1 : e;
	}
	if ((*bits & REQ_LANDLOCK) && *landlock_abi < 1)
		*landlock_abi = 1;
	return 0;
}

int al_policy_require(struct al_policy *p, const char *spec, struct al_error *err)
{
	uint32_t bits = p->require;
	int abi = p->require_landlock_abi;
	int r = pol_parse_require(spec, &bits, &abi, err);
	if (r < 0)
		return r;
	p->require = bits;
	p->require_landlock_abi = abi;
	return 0;
}

int al_policy_allow_fallback(struct al_policy *p, bool allow, struct al_error *err)
{
	(void)err;
	p->fallback = allow;
	return 0;
}

int al_policy_allow_best_effort_limits(struct al_policy *p, bool allow, struct al_error *err)
{
	(void)err;
	p->limits_best_effort = allow;
	return 0;
}

int al_policy_use_systemd_scope(struct al_policy *p, bool on, struct al_error *err)
{
	(void)err;
	p->no_systemd_scope = !on;
	return 0;
}

int al_policy_use_subids(struct al_policy *p, bool on, struct al_error *err)
{
	(void)err;
	p->subids = on;
	return 0;
}

int al_policy_set_checkout(struct al_policy *p, const char *dir, const char *dest, enum al_checkout_mode mode,
			   struct al_error *err)
{
	if (mode != AL_CHECKOUT_RO && mode != AL_CHECKOUT_COPY)
		return al_err(err, EINVAL, "--checkout-mode: unknown mode %d", (int)mode);
	if (!dest)
		dest = AL_CHECKOUT_DEST;
	int r = pol_check_inside_path(dest, err);
	if (r < 0) {
		al_err_prefix(err, "--checkout");
		return r;
	}
	if (strcmp(dest, "/") == 0 || strcmp(dest, AL_WORKSPACE) == 0)
		return al_err(err, EINVAL, "--checkout: %s cannot hold a checkout (use a directory below it, e.g. %s)",
			      dest, AL_CHECKOUT_DEST);
	cleanup_free char *real = realpath(dir, NULL);
	if (!real)
		return al_err_sys(err, errno, "--checkout '%s'", dir);
	struct stat sb;
	if (stat(real, &sb) < 0)
		return al_err_sys(err, errno, "--checkout '%s'", dir);
	if (!S_ISDIR(sb.st_mode))
		return al_err(err, ENOTDIR, "--checkout '%s' is not a directory", dir);
	char *d = strdup(dest);
	if (!d)
		return al_err(err, ENOMEM, "out of memory");
	free(p->checkout);
	free(p->checkout_dest);
	p->checkout = steal_ptr(real);
	p->checkout_dest = d;
	p->checkout_mode = mode;
	return 0;
}

int al_policy_set_keep_changes(struct al_policy *p, const char *dir, struct al_error *err)
{
	if (!dir || dir[0] != '/')
		return al_err(err, EINVAL, "--keep-changes: '%s' is not an absolute path", dir ? dir : "");
	DIR *d = opendir(dir);
	if (d) {
		int n = 0;
		for (struct dirent *e; (e = readdir(d));)
			n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
		closedir(d);
		/* Nothing a user wrote is ever lost: the export never merges into existing files. */
		if (n)
			return al_err(err, EEXIST, "--keep-changes: %s is not empty", dir);
	} else if (errno != ENOENT) {
		return al_err_sys(err, errno, "--keep-changes %s", dir);
	}
	char *s = strdup(dir);
	if (!s)
		return al_err(err, ENOMEM, "out of memory");
	free(p->keep_changes);
	p->keep_changes = s;
	return 0;
}

int al_policy_set_checkout_mode(struct al_policy *p, enum al_checkout_mode mode, struct al_error *err)
{
	if (mode != AL_CHECKOUT_RO && mode != AL_CHECKOUT_COPY)
		return al_err(err, EINVAL, "--checkout-mode: unknown mode %d", (int)mode);
	p->checkout_mode = mode;
	return 0;
}

#define AL_FILES_MAX_BYTES ((size_t)64 << 20)

int al_policy_add_file(struct al_policy *p, const char *dest, const void *data, size_t len, unsigned mode,
		       struct al_error *err)
{
	int r = pol_check_inside_path(dest, err);
	if (r < 0)
		return r;
	if (strncmp(dest, AL_WORKSPACE "/", strlen(AL_WORKSPACE) + 1) != 0 ||
	    strchr(dest + strlen(AL_WORKSPACE) + 1, '/'))
		return al_err(err, EINVAL, "a file for the sandbox must be directly in %s, not '%s'", AL_WORKSPACE,
			      dest);
	size_t total = len;
	for (size_t i = 0; i < p->nfiles; i++)
		total += p->files[i].len;
	if (total > AL_FILES_MAX_BYTES)
		return al_err(err, EFBIG, "files for the sandbox: more than %zu MiB in all", AL_FILES_MAX_BYTES >> 20);
	struct al_file *v = reallocarray(p->files, p->nfiles + 1, sizeof(*v));
	if (!v)
		return al_err(err, ENOMEM, "out of memory");
	p->files = v;
	struct al_file f = {.dest = strdup(dest), .data = malloc(len ? len : 1), .len = len, .mode = mode & 0777};
	if (!f.dest || !f.data) {
		free(f.dest);
		free(f.data);
		return al_err(err, ENOMEM, "out of memory");
	}
	if (len)
		memcpy(f.data, data, len);
	p->files[p->nfiles++] = f;
	return 0;
}

/* A rootfs is a system tree (its /usr replaces the host's); an image's root is whatever the image
 * holds (busybox with /bin alone, a static binary, FROM scratch): its tree is shown whole. */
int pol_set_root(struct al_policy *p, const char *dir, bool image, struct al_error *err)
{
	const char *what = image ? "the image's root" : "--rootfs";
	cleanup_free char *real = realpath(dir, NULL);
	if (!real)
		return al_err_sys(err, errno, "%s '%s'", what, dir);
	char usr[PATH_MAX];
	struct stat sb;
	snprintf(usr, sizeof(usr), "%s/usr", real);
	if (!image && (stat(usr, &sb) < 0 || !S_ISDIR(sb.st_mode)))
		return al_err(err, ENOTDIR,
			      "--rootfs '%s' has no usr directory: not a system tree (an image of any shape runs "
			      "with --image)",
			      dir);
	if (strcmp(real, "/") == 0)
		return al_err(err, EINVAL, "%s '/': that is the host's own tree (leave --rootfs out)", what);
	free(p->rootfs);
	pol_free_image(p); /* a rootfs given later replaces the image's */
	p->rootfs = steal_ptr(real);
	return 0;
}

int al_policy_set_rootfs(struct al_policy *p, const char *dir, struct al_error *err)
{
	return pol_set_root(p, dir, false, err);
}
