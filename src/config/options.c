/* options.c — the option table and its single parser per knob, shared by every front end. */
#include "options.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy/policy.h"
#include "units.h"
#include "util/cleanup.h"
#include "util/error.h"

/* A limit's help says "default @": the default is filled in from the policy's table when printed
 * (opt_help), never written here. */
const struct al_option al_options[] = {
	{OPT_TIME, "time", 0, OK_DURATION, "DURATION", "wall-clock limit; kills the whole sandbox (default @; 'none')",
	 true},
	{OPT_CPU_TIME, "cpu-time", 0, OK_DURATION, "DURATION", "CPU-time limit per process, RLIMIT_CPU (default @)",
	 true},
	{OPT_OUTPUT_LIMIT, "output-limit", 0, OK_SIZE, "SIZE", "bytes kept per stream; the rest is counted (default @)",
	 true},
	{OPT_DISK, "disk", 0, OK_SIZE, "SIZE", "size of the /workspace and /tmp tmpfs (default @)", true},
	{OPT_OPEN_FILES, "open-files", 0, OK_COUNT, "N", "open file descriptors, RLIMIT_NOFILE (default @)", true},
	{OPT_FILE_SIZE, "file-size", 0, OK_SIZE, "SIZE", "largest file the job may write, RLIMIT_FSIZE (default @)",
	 true},
	{OPT_ADDRESS_SPACE, "address-space", 0, OK_SIZE, "SIZE",
	 "virtual memory per process, RLIMIT_AS, at least 16M (default @)", true},
	{OPT_MEMORY, "memory", 'm', OK_SIZE, "SIZE", "memory of the whole job, swap off (cgroup; default @)", true},
	{OPT_PIDS, "pids", 0, OK_COUNT, "N", "processes and threads of the whole job (cgroup; default @)", true},
	{OPT_CPUS, "cpus", 0, OK_CPUS, "N", "CPU bandwidth in CPUs, e.g. 0.5 (cgroup; default @; 'none': no cap)",
	 true},
	{OPT_NET, "net", 0, OK_STRING, "none|allow=HOST,...|host",
	 "network: none (default: a private lo, up, and nothing else; 'loopback' is a synonym), allowed host names "
	 "through the egress proxy, or the host's (explicit, highest risk)",
	 true},
	{OPT_ALLOW_PRIVATE, "allow-private", 0, OK_STRING, "CIDR,...",
	 "let the proxy reach these loopback/private/link-local addresses (on-premise registries, tests)", true},
	{OPT_PROXY_HOSTS, "proxy-hosts", 0, OK_STRING, "FILE", "hosts(5) file the proxy's resolver reads before DNS",
	 true},
	{OPT_PROXY_HTTP, "proxy-http", 0, OK_FLAG, NULL,
	 "the proxy also forwards plain-HTTP requests to allowed hosts (default: CONNECT only)", true},
	{OPT_PROXY_CONNS, "proxy-conns", 0, OK_COUNT, "N", "concurrent proxy connections (default 64)", true},
	{OPT_PROXY_IDLE, "proxy-idle", 0, OK_DURATION, "DURATION",
	 "a proxy connection with no traffic this long is closed (default 60s)", true},
	{OPT_BROKER, "broker", 0, OK_STRING, "NAME=URL,header=H,env=VAR|file=F[,header=...]",
	 "credential broker: the proxy adds secret headers towards an https upstream (see airlock(1))", true},
	{OPT_SECRET, "secret", 0, OK_STRING, "NAME,env=VAR|file=F,hosts=HOST|...[,body]",
	 "the job's NAME holds a placeholder; the proxy puts the secret in its place toward HOST only (TLS "
	 "terminated there)",
	 true},
	{OPT_UPSTREAM_CA, "upstream-ca", 0, OK_STRING, "FILE",
	 "verify the upstreams of terminated TLS against these PEM certificates only (default: the host's store)",
	 true},
	{OPT_BACKEND, "backend", 0, OK_STRING, "native|bwrap|gvisor|oci",
	 "the boundary: airlock's own (default), bubblewrap, gVisor's runsc, or an OCI runtime (crun); refused, never "
	 "replaced, when it cannot enforce the policy",
	 true},
	{OPT_SECCOMP, "seccomp", 0, OK_STRING, "default|strict|off", "system call filter profile (default: default)",
	 true},
	{OPT_LANDLOCK, "landlock", 0, OK_STRING, "on|off",
	 "Landlock filesystem/network/scope rules (default on, where the kernel has it)", true},
	{OPT_REQUIRE, "require", 0, OK_STRING, "LAYER,...",
	 "refuse to run unless these are enforced, e.g. userns,seccomp,landlock>=4,cgroup-memory", true},
	{OPT_FALLBACK, "fallback", 0, OK_FLAG, NULL,
	 "without user namespaces, run on Landlock + seccomp + rlimits + no_new_privs alone (reported)", true},
	{OPT_BEST_EFFORT, "best-effort-limits", 0, OK_FLAG, NULL,
	 "run even where the default memory, pids and cpu limits cannot be enforced (no delegated cgroup), naming each "
	 "one not applied",
	 true},
	{OPT_CGROUP_SYSTEMD, "cgroup-systemd", 0, OK_STRING, "auto|never",
	 "as a user whose cgroup cannot hold the limits: auto (default) asks your systemd for a delegated scope "
	 "(Delegate=yes) and runs in it; never: refuse instead",
	 true},
	{OPT_SUBIDS, "subids", 0, OK_FLAG, NULL,
	 "as a user: also map your subordinate ids (newuidmap) around the sandbox user", true},
	{OPT_WORKDIR, "workdir", 0, OK_STRING, "DIR",
	 "bind host DIR read-write at /workspace (default: a throwaway tmpfs)", true},
	{OPT_CHECKOUT, "checkout", 0, OK_STRING, "DIR[:DEST]",
	 "a checkout at DEST (default /workspace/src), read-only or a throwaway copy (--checkout-mode)", true},
	{OPT_CHECKOUT_MODE, "checkout-mode", 0, OK_STRING, "ro|copy",
	 "ro: bound read-only (default); copy: a read-write copy discarded afterwards, the source never written", true},
	{OPT_KEEP_CHANGES, "keep-changes", 0, OK_STRING, "DIR",
	 "with --checkout-mode copy: export the changed files as a tree into DIR (new or empty)", true},
	{OPT_RO, "ro", 0, OK_STRING, "SRC[:DEST]", "bind host SRC read-only at DEST (default: the same path)", true},
	{OPT_RW, "rw", 0, OK_STRING, "SRC[:DEST]", "bind host SRC read-write at DEST", true},
	{OPT_ENV, "env", 'e', OK_STRING, "NAME[=VALUE]", "pass NAME through from this environment, or set it", true},
	{OPT_HOSTNAME, "hostname", 0, OK_STRING, "NAME", "hostname inside (default airlock)", true},
	{OPT_ROOTFS, "rootfs", 0, OK_STRING, "DIR",
	 "system directories (/usr, /bin, /lib, ...) from DIR, e.g. an unpacked distribution, instead of the host's",
	 true},
	{OPT_IMAGE, "image", 0, OK_STRING, "NAME",
	 "system directories from the image NAME of the image store ('airlock image ls'), its Env as defaults; the "
	 "verdict names its digest",
	 true},
	{OPT_CWD, "cwd", 0, OK_STRING, "DIR", "working directory inside (default /workspace)", true},
	{OPT_ID_BASE, "id-base", 0, OK_COUNT, "ID",
	 "as root: host uid/gid of sandbox id 0; 65536 ids are mapped (default 1879048192)", true},
	{OPT_CONFIG, "config", 0, OK_STRING, "FILE",
	 "read FILE instead of /etc/airlock/config.yaml (or ~/.config/airlock/config.yaml): its limits are the "
	 "defaults these flags override",
	 false},
	{OPT_PROFILE, "profile", 'p', OK_STRING, "NAME",
	 "a profile from the configuration (none, untrusted-code-read, untrusted-code-write, ...): it fixes the "
	 "posture; flags may then change only resource knobs and the rootfs",
	 false},
	{OPT_LANG, "lang", 'l', OK_STRING, "LANG",
	 "exec: the language (python, javascript, shell, ruby, php, perl, c, ...)", false},
	{OPT_CODE, "code", 'c', OK_STRING, "CODE", "exec: the code itself (else FILE, or - for standard input)", false},
	{OPT_LIST, "list", 0, OK_FLAG, NULL, "exec: list the languages and whether this host has them", false},
	{OPT_STREAM, "stream", 0, OK_STRING, "live|capture",
	 "copy output as it comes, or keep it for the verdict (default: capture with --json)", false},
	{OPT_JSON, "json", 0, OK_FLAG, NULL, "print the verdict as one JSON object on stdout", false},
	{OPT_RESULT_FD, "result-fd", 0, OK_COUNT, "N", "write the verdict JSON to descriptor N", false},
	{OPT_RESULT_FILE, "result-file", 0, OK_STRING, "FILE", "write the verdict JSON to FILE", false},
	{OPT_TTY, "tty", 't', OK_FLAG, NULL,
	 "a terminal of the sandbox's own for CMD (stdin must be a terminal: raw mode, window size forwarded, "
	 "modes restored at the end)",
	 false},
	{OPT_HELP, "help", 'h', OK_FLAG, NULL, "show this help", false},
};
const size_t al_noptions = AL_ARRAY_SIZE(al_options);

const struct al_option *opt_find(enum opt_id id)
{
	for (size_t i = 0; i < al_noptions; i++)
		if (al_options[i].id == id)
			return &al_options[i];
	return NULL;
}

/* Which policy limit each numeric option sets (stored +1 so that 0 means "none"). */
static const int limit_plus1[OPT__COUNT] = {
	[OPT_TIME] = AL_LIMIT_WALL_MS + 1,	  [OPT_CPU_TIME] = AL_LIMIT_CPU_MS + 1,
	[OPT_OUTPUT_LIMIT] = AL_LIMIT_OUTPUT + 1, [OPT_DISK] = AL_LIMIT_DISK + 1,
	[OPT_OPEN_FILES] = AL_LIMIT_NOFILE + 1,	  [OPT_FILE_SIZE] = AL_LIMIT_FSIZE + 1,
	[OPT_ADDRESS_SPACE] = AL_LIMIT_AS + 1,	  [OPT_MEMORY] = AL_LIMIT_MEMORY + 1,
	[OPT_PIDS] = AL_LIMIT_PIDS + 1,		  [OPT_CPUS] = AL_LIMIT_CPUS + 1,
};

void opt_help(const struct al_option *o, char *buf, size_t n)
{
	const char *at = strchr(o->help, '@');
	char def[32];
	if (!at || opt_format_default(o, def, sizeof(def)) < 0) {
		snprintf(buf, n, "%s", o->help);
		return;
	}
	snprintf(buf, n, "%.*s%s%s", (int)(at - o->help), o->help, def, at + 1);
}

int opt_format_default(const struct al_option *o, char *buf, size_t n)
{
	int l = o && (unsigned)o->id < OPT__COUNT ? limit_plus1[o->id] - 1 : -1;
	if (l < 0)
		return -EINVAL;
	uint64_t v = pol_default_limit((enum al_limit)l);
	if (o->kind == OK_SIZE)
		al_format_size(v, buf, n);
	else if (o->kind == OK_DURATION)
		al_format_duration_ms(v, buf, n);
	else if (o->kind == OK_CPUS)
		al_format_cpus(v, buf, n);
	else
		al_format_count(v, buf, n);
	return 0;
}

static int apply_bind(struct al_policy *p, const char *value, bool writable, struct al_error *err)
{
	cleanup_free char *src = strdup(value);
	if (!src)
		return al_err(err, ENOMEM, "out of memory");
	char *colon = strchr(src, ':');
	const char *dest = NULL;
	if (colon) {
		*colon = 0;
		dest = colon + 1;
	}
	return al_policy_add_bind(p, src, dest, writable, err);
}

/* The mode may come before or after the directory: set_checkout keeps the current one. */
static int apply_checkout(struct al_policy *p, const char *value, struct al_error *err)
{
	cleanup_free char *dir = strdup(value);
	if (!dir)
		return al_err(err, ENOMEM, "out of memory");
	char *colon = strchr(dir, ':');
	if (colon)
		*colon = 0;
	return al_policy_set_checkout(p, dir, colon ? colon + 1 : NULL, p->checkout_mode, err);
}

static int apply_string(struct al_policy *p, const struct al_option *o, const char *value, struct al_error *err)
{
	enum opt_id id = o->id;
	if (id == OPT_WORKDIR)
		return al_policy_set_workdir(p, value, err);
	if (id == OPT_RO || id == OPT_RW)
		return apply_bind(p, value, id == OPT_RW, err);
	if (id == OPT_ENV)
		return al_policy_add_env(p, value, err);
	if (id == OPT_HOSTNAME)
		return al_policy_set_hostname(p, value, err);
	if (id == OPT_CWD)
		return al_policy_set_cwd(p, value, err);
	if (id == OPT_ROOTFS)
		return al_policy_set_rootfs(p, value, err);
	if (id == OPT_IMAGE)
		return al_policy_set_image(p, value, err);
	if (id == OPT_REQUIRE)
		return al_policy_require(p, value, err);
	if (id == OPT_CHECKOUT)
		return apply_checkout(p, value, err);
	if (id == OPT_CHECKOUT_MODE) {
		if (strcmp(value, "ro") != 0 && strcmp(value, "copy") != 0)
			return al_err(err, EINVAL, "--checkout-mode: expected ro or copy, not '%s'", value);
		return al_policy_set_checkout_mode(p, strcmp(value, "ro") == 0 ? AL_CHECKOUT_RO : AL_CHECKOUT_COPY,
						   err);
	}
	if (id == OPT_CGROUP_SYSTEMD) {
		if (strcmp(value, "auto") != 0 && strcmp(value, "never") != 0)
			return al_err(err, EINVAL, "--cgroup-systemd: expected auto or never, not '%s'", value);
		return al_policy_use_systemd_scope(p, strcmp(value, "auto") == 0, err);
	}
	if (id == OPT_KEEP_CHANGES)
		return al_policy_set_keep_changes(p, value, err);
	if (id == OPT_ALLOW_PRIVATE)
		return al_policy_allow_private(p, value, err);
	if (id == OPT_PROXY_HOSTS)
		return al_policy_set_proxy_hosts(p, value, err);
	if (id == OPT_BROKER)
		return al_policy_add_broker(p, value, err);
	if (id == OPT_SECRET)
		return al_policy_add_secret(p, value, err);
	if (id == OPT_UPSTREAM_CA)
		return al_policy_set_upstream_ca(p, value, err);
	if (id == OPT_NET) {
		enum al_net_posture net;
		if (pol_net_parse(value, &net) == 0) /* none, its synonym loopback, host */
			return al_policy_set_network(p, net, err);
		if (strncmp(value, "allow=", 6) == 0)
			return al_policy_allow_hosts(p, value + 6, err);
		return al_err(err, EINVAL,
			      "--net: unknown posture '%s' (expected none, loopback, allow=HOST,... or host)", value);
	}
	if (id == OPT_BACKEND) {
		/* Every backend that confines, by the name its capability table gives (none is a
		 * profile's choice, never a flag's). */
		char names[64] = "";
		for (enum al_backend b = 0; b < AL_BACKEND_NONE; b++) {
			if (strcmp(value, al_backend_name(b)) == 0)
				return al_policy_set_backend(p, b, err);
			size_t len = strlen(names);
			snprintf(names + len, sizeof(names) - len, "%s%s", len ? ", " : "", al_backend_name(b));
		}
		return al_err(err, EINVAL, "--backend: unknown backend '%s' (expected %s)", value, names);
	}
	if (id == OPT_SECCOMP) {
		for (size_t i = 0; i < POL_SECCOMP_PROFILES; i++)
			if (strcmp(value, pol_seccomp_names[i]) == 0)
				return al_policy_set_seccomp(p, (enum al_seccomp_profile)i, err);
		return al_err(err, EINVAL, "--seccomp: expected default, strict or off, not '%s'", value);
	}
	if (id == OPT_LANDLOCK) {
		if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
			return al_err(err, EINVAL, "--landlock: expected on or off, not '%s'", value);
		return al_policy_set_landlock(p, strcmp(value, "on") == 0, err);
	}
	return al_err(err, EINVAL, "--%s is not a policy option", o->name);
}

int opt_apply(struct al_policy *p, const struct al_option *o, const char *value, struct al_error *err)
{
	uint64_t v = 0;
	int r, lim = (unsigned)o->id < OPT__COUNT ? limit_plus1[o->id] - 1 : -1;
	switch (o->kind) {
	case OK_SIZE:
		r = al_parse_size(value, &v, err);
		break;
	case OK_DURATION:
		r = al_parse_duration_ms(value, &v, err);
		break;
	case OK_COUNT:
		r = al_parse_count(value, UINT32_MAX, &v, err);
		break;
	case OK_CPUS:
		r = al_parse_cpus(value, &v, err);
		break;
	case OK_STRING:
		return apply_string(p, o, value, err);
	case OK_FLAG:
	default:
		if (o->id == OPT_SUBIDS)
			return al_policy_use_subids(p, true, err);
		if (o->id == OPT_PROXY_HTTP)
			return al_policy_set_proxy_http(p, true, err);
		if (o->id == OPT_BEST_EFFORT) { /* also the configuration's limits.best-effort-limits: true|false */
			if (value && strcmp(value, "true") != 0 && strcmp(value, "false") != 0)
				return al_err(err, EINVAL, "--best-effort-limits: expected true or false, not '%s'",
					      value);
			return al_policy_allow_best_effort_limits(p, !value || strcmp(value, "true") == 0, err);
		}
		return o->id == OPT_FALLBACK ? al_policy_allow_fallback(p, true, err) : 0;
	}
	if (r == 0 && o->id == OPT_PROXY_CONNS)
		r = al_policy_set_proxy_limits(p, v > UINT32_MAX ? 0 : (uint32_t)v, p->proxy_idle_ms, err);
	else if (r == 0 && o->id == OPT_PROXY_IDLE)
		r = al_policy_set_proxy_limits(p, p->proxy_max_conns, v, err);
	else if (r == 0 && o->id == OPT_ID_BASE)
		r = v == AL_UNLIMITED ? al_err(err, EINVAL, "--id-base needs a number")
				      : al_policy_set_id_base(p, (uint32_t)v, err);
	else if (r == 0 && lim >= 0)
		r = al_policy_set_limit(p, (enum al_limit)lim, v, err);
	if (r < 0 && err && strncmp(err->msg, "--", 2) != 0)
		al_err_prefix(err, "--%s", o->name);
	return r;
}
