/* config.c — load the configuration: find the file, check who may change it, merge it over the defaults, validate it. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/conv.h"
#include "config/yaml.h"
#include "image/image.h"
#include "network/allowlist.h"
#include "policy/policy.h"
#include "util/cleanup.h"
#include "util/error.h"

static const enum opt_id limit_ids[CFG_LIM__COUNT] = {
	[CFG_LIM_TIME] = OPT_TIME,
	[CFG_LIM_CPU_TIME] = OPT_CPU_TIME,
	[CFG_LIM_MEMORY] = OPT_MEMORY,
	[CFG_LIM_CPUS] = OPT_CPUS,
	[CFG_LIM_PIDS] = OPT_PIDS,
	[CFG_LIM_DISK] = OPT_DISK,
	[CFG_LIM_OUTPUT] = OPT_OUTPUT_LIMIT,
	[CFG_LIM_OPEN_FILES] = OPT_OPEN_FILES,
	[CFG_LIM_FILE_SIZE] = OPT_FILE_SIZE,
	[CFG_LIM_ADDRESS_SPACE] = OPT_ADDRESS_SPACE,
	[CFG_LIM_BEST_EFFORT] = OPT_BEST_EFFORT,
	[CFG_LIM_CGROUP_SYSTEMD] = OPT_CGROUP_SYSTEMD,
};

const char cfg_defaults_name[] = CFG_DEFAULTS_NAME;

const struct al_option *cfg_limit_option(enum cfg_limit_key k)
{
	return (unsigned)k < CFG_LIM__COUNT ? opt_find(limit_ids[k]) : NULL;
}

static const char *const fs_names[] = {
	[CFG_FS_WORKSPACE] = "workspace",
	[CFG_FS_CHECKOUT_RO] = "checkout-ro",
	[CFG_FS_CHECKOUT_COPY] = "checkout-copy",
	[CFG_FS_HOST] = "host",
};

const char *cfg_fs_view_name(enum cfg_fs_view v)
{
	return (unsigned)v < AL_ARRAY_SIZE(fs_names) ? fs_names[v] : "?";
}

/* ---- freeing and lookup -------------------------------------------------------------- */

void conv_strv_free(struct cfg_strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (struct cfg_strv){0};
}

static void limits_free(struct cfg_limits *l)
{
	for (size_t i = 0; i < CFG_LIM__COUNT; i++)
		free(l->text[i]);
}

static void profile_free(struct cfg_profile *p)
{
	free(p->name);
	conv_strv_free(&p->registries);
	conv_strv_free(&p->require);
	free(p->rootfs);
	free(p->image);
	conv_strv_free(&p->images);
	limits_free(&p->limits);
	conv_strv_free(&p->secrets);
}

static void language_free(struct cfg_language *l)
{
	free(l->name);
	conv_strv_free(&l->command);
	conv_strv_free(&l->compile);
	free(l->file);
	conv_strv_free(&l->paths);
	conv_strv_free(&l->etc);
	for (size_t i = 0; i < l->nenv; i++) {
		free(l->env[i].name);
		free(l->env[i].value);
	}
	free(l->env);
}

void cfg_free(struct cfg *c)
{
	if (!c)
		return;
	free(c->source);
	limits_free(&c->limits);
	for (size_t i = 0; i < c->nregistries; i++) {
		free(c->registries[i].name);
		conv_strv_free(&c->registries[i].hosts);
	}
	free(c->registries);
	conv_strv_free(&c->allow_private);
	free(c->upstream_ca);
	cfg_secrets_free(c);
	for (size_t i = 0; i < c->nprofiles; i++)
		profile_free(&c->profiles[i]);
	free(c->profiles);
	for (size_t i = 0; i < c->nlanguages; i++)
		language_free(&c->languages[i]);
	free(c->languages);
	cfg_manager_free(c);
	free(c);
}

const struct cfg_profile *cfg_profile(const struct cfg *c, const char *name)
{
	for (size_t i = 0; c && name && i < c->nprofiles; i++)
		if (strcmp(c->profiles[i].name, name) == 0)
			return &c->profiles[i];
	return NULL;
}

const struct cfg_language *cfg_language(const struct cfg *c, const char *name)
{
	for (size_t i = 0; c && name && i < c->nlanguages; i++)
		if (strcmp(c->languages[i].name, name) == 0)
			return &c->languages[i];
	return NULL;
}

const struct cfg_registry *cfg_registry(const struct cfg *c, const char *name)
{
	for (size_t i = 0; c && name && i < c->nregistries; i++)
		if (strcmp(c->registries[i].name, name) == 0)
			return &c->registries[i];
	return NULL;
}

/* ---- conversion: the merged tree into a struct cfg, every value checked --------------- */

/* "file:line:column: key.path: message", with control characters of the untrusted text
 * replaced so an error message cannot drive the terminal it is printed on. */
int conv_bad(struct al_error *err, int code, struct cfg_mark m, const char *path, const char *fmt, ...)
{
	char msg[AL_ERROR_MAX];
	va_list ap;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive: ap was just started */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	int r = al_err(err, code, "%s:%u:%u: %s: %s", m.file, m.line, m.column, path, msg);
	for (char *s = err ? err->msg : NULL; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
	return r;
}

/* The message of a flag's parser without its "--name" (or "allow") prefix: the key path replaces it. */
static const char *detail(const struct al_error *e, const char *prefix)
{
	const char *s = e->msg;
	size_t n = strlen(prefix);
	if (strncmp(s, prefix, n) != 0)
		return s;
	s += n;
	if (*s == ':')
		s++;
	return *s == ' ' ? s + 1 : s;
}

/* Appends n bytes of s at *o, never past end. */
static void put(char **o, const char *end, const char *s, size_t n)
{
	size_t room = (size_t)(end - *o);
	n = n < room ? n : room;
	memcpy(*o, s, n);
	*o += n;
}

/* snprintf(out, PATH_BUF, "%s%s%.64s%s", ...) by hand: every key of every document passes here,
 * and the formatted join was 0.1 M of the 1.5 M instructions of `airlock run -- /bin/true`. */
void conv_join(char *out, const char *path, const char *key)
{
	char *o = out;
	const char *end = out + PATH_BUF - 1;
	size_t kl = strlen(key);
	put(&o, end, path, strlen(path));
	if (*path)
		put(&o, end, ".", 1);
	put(&o, end, key, kl > 64 ? 64 : kl);
	if (kl > 64)
		put(&o, end, "...", 3);
	*o = '\0';
}

/* snprintf(out, PATH_BUF + 16, "%s[%zu]", path, i) by hand, for the same reason: every item of
 * every list passes here (0.025 M of the 0.93 M instructions of `airlock run -- /bin/true`). */
void conv_index(char *out, const char *path, size_t i)
{
	char digits[24];
	size_t nd = 0;
	do
		digits[nd++] = (char)('0' + i % 10);
	while ((i /= 10) && nd < sizeof(digits));
	char *o = out;
	const char *end = out + PATH_BUF + 16 - 1;
	put(&o, end, path, strlen(path));
	put(&o, end, "[", 1);
	while (nd)
		put(&o, end, &digits[--nd], 1);
	put(&o, end, "]", 1);
	*o = '\0';
}

static const char *kind_name(const struct cfg_node *n)
{
	if (cfg_node_is_null(n))
		return "null";
	return n->kind == CFG_MAP ? "a mapping" : n->kind == CFG_SEQ ? "a list" : "a string";
}

int conv_want(struct conv *c, const struct cfg_node *n, enum cfg_node_kind kind, const char *path)
{
	if (n->kind == kind && !cfg_node_is_null(n))
		return 0;
	const char *w = kind == CFG_MAP ? "a mapping" : kind == CFG_SEQ ? "a list" : "a value";
	if (n->kind == CFG_SCALAR && !cfg_node_is_null(n))
		return conv_bad(c->err, EINVAL, n->mark, path, "expected %s, not '%.64s'", w, n->text);
	return conv_bad(c->err, EINVAL, n->mark, path, "expected %s, not %s", w, kind_name(n));
}

int conv_copy_str(struct conv *c, const struct cfg_node *n, const char *path, char **out)
{
	int r = conv_want(c, n, CFG_SCALAR, path);
	if (r < 0)
		return r;
	char *s = strdup(n->text);
	if (!s)
		return al_err(c->err, ENOMEM, "out of memory");
	free(*out);
	*out = s;
	return 0;
}

/* One of names[] (NULL entries skipped): its index, or an error listing them. */
int conv_pick(struct conv *c, const struct cfg_node *n, const char *path, const char *const *names, size_t count)
{
	int r = conv_want(c, n, CFG_SCALAR, path);
	if (r < 0)
		return r;
	for (size_t i = 0; i < count; i++)
		if (names[i] && strcmp(n->text, names[i]) == 0)
			return (int)i;
	char list[160] = ""; /* only for the message: building it on every pick cost more than the pick */
	for (size_t i = 0; i < count; i++)
		if (names[i])
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", *list ? ", " : "", names[i]);
	return conv_bad(c->err, EINVAL, n->mark, path, "'%.64s' is not one of: %s", n->text, list);
}

/* YAML's true and false, unquoted (a quoted "false" is a string, and would read as true to some). */
int conv_bool(struct conv *c, const struct cfg_node *n, const char *path, bool *out)
{
	static const char *const names[] = {"false", "true"};
	int r = n->kind == CFG_SCALAR && !n->plain
			? conv_bad(c->err, EINVAL, n->mark, path, "expected true or false, unquoted")
			: conv_pick(c, n, path, names, 2);
	if (r >= 0)
		*out = r == 1;
	return r < 0 ? r : 0;
}

/* Refuses unknown keys, then converts the known ones in the table's order (so a key may rely on
 * an earlier one, as profiles rely on network.registries, whatever the file's order). */
int conv_fields(struct conv *c, const struct cfg_node *map, const char *path, const struct field *f, size_t nf,
		void *obj)
{
	int r = conv_want(c, map, CFG_MAP, path);
	for (size_t i = 0; r == 0 && i < map->n; i++) {
		size_t k = 0;
		while (k < nf && strcmp(f[k].key, map->ents[i].key) != 0)
			k++;
		if (k < nf)
			continue;
		char sub[PATH_BUF], list[160] = "";
		conv_join(sub, path, map->ents[i].key);
		for (k = 0; k < nf; k++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", k ? ", " : "", f[k].key);
		r = conv_bad(c->err, EINVAL, map->ents[i].key_mark, sub, "unknown key (expected %s)", list);
	}
	for (size_t k = 0; r == 0 && k < nf; k++) {
		const struct cfg_node *v = cfg_node_get(map, f[k].key);
		char sub[PATH_BUF];
		conv_join(sub, path, f[k].key);
		if (v)
			r = f[k].fn(c, v, sub, obj);
	}
	return r;
}

/* Registry, profile and language names are command-line arguments and file names later. */
int conv_check_name(struct conv *c, const char *name, struct cfg_mark m, const char *path)
{
	size_t n = strlen(name);
	bool ok = n > 0 && n <= CFG_NAME_MAX &&
		  ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
		   (name[0] >= '0' && name[0] <= '9'));
	for (size_t i = 0; ok && i < n; i++)
		ok = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", name[i]) != NULL;
	if (ok)
		return 0;
	return conv_bad(c->err, EINVAL, m, path,
			"invalid name (1 to %d letters, digits, '.', '_' or '-', starting with a letter or digit)",
			CFG_NAME_MAX);
}

/* A mapping of user-chosen names: calls fn for each entry i of count with its checked name. */
int conv_named(struct conv *c, const struct cfg_node *map, const char *path,
	       int (*fn)(struct conv *c, const struct cfg_entry *e, const char *sub, size_t i))
{
	int r = conv_want(c, map, CFG_MAP, path);
	if (r == 0 && map->n > CFG_MAX_ENTRIES)
		r = conv_bad(c->err, E2BIG, map->mark, path, "more than %d entries", CFG_MAX_ENTRIES);
	for (size_t i = 0; r == 0 && i < map->n; i++) {
		char sub[PATH_BUF];
		conv_join(sub, path, map->ents[i].key);
		r = conv_check_name(c, map->ents[i].key, map->ents[i].key_mark, sub);
		r = r ?: fn(c, &map->ents[i], sub, i);
	}
	return r;
}

/* A list of strings, each checked by check (may be NULL) before it is kept. */
int conv_strv(struct conv *c, const struct cfg_node *seq, const char *path, struct cfg_strv *out,
	      int (*check)(struct conv *c, const struct cfg_node *item, const char *ipath, void *obj), void *obj)
{
	int r = conv_want(c, seq, CFG_SEQ, path);
	if (r < 0)
		return r;
	conv_strv_free(out);
	if (!(out->v = calloc(seq->n + 1, sizeof(char *))))
		return al_err(c->err, ENOMEM, "out of memory");
	for (size_t i = 0; i < seq->n; i++) {
		char ipath[PATH_BUF + 16];
		conv_index(ipath, path, i);
		const struct cfg_node *it = seq->ents[i].value;
		if ((r = conv_want(c, it, CFG_SCALAR, ipath)) < 0 || (check && (r = check(c, it, ipath, obj)) < 0))
			return r;
		if (!(out->v[out->n] = strdup(it->text)))
			return al_err(c->err, ENOMEM, "out of memory");
		out->n++;
	}
	return 0;
}

/* ---- limits ---- */

static int conv_limits(struct conv *c, const struct cfg_node *map, const char *path, void *obj)
{
	struct cfg_limits *l = obj;
	int r = conv_want(c, map, CFG_MAP, path);
	for (size_t i = 0; r == 0 && i < map->n; i++) {
		const struct cfg_entry *e = &map->ents[i];
		char sub[PATH_BUF];
		conv_join(sub, path, e->key);
		size_t k = 0;
		while (k < CFG_LIM__COUNT && strcmp(cfg_limit_option(k)->name, e->key) != 0)
			k++;
		if (k == CFG_LIM__COUNT) {
			r = conv_bad(c->err, EINVAL, e->key_mark, sub,
				     "unknown key (expected time, cpu-time, memory, cpus, pids, "
				     "disk, output-limit, open-files, file-size, address-space, best-effort-limits or "
				     "cgroup-systemd)");
			break;
		}
		const struct al_option *o = cfg_limit_option(k);
		struct al_error e2 = {0};
		char flag[40];
		snprintf(flag, sizeof(flag), "--%s", o->name);
		if ((r = conv_want(c, e->value, CFG_SCALAR, sub)) == 0 &&
		    opt_apply(c->scratch, o, e->value->text, &e2) < 0)
			r = conv_bad(c->err, -e2.code, e->value->mark, sub, "%s", detail(&e2, flag));
		if (r == 0)
			r = conv_copy_str(c, e->value, sub, &l->text[k]);
	}
	return r;
}

/* ---- network ---- */

static int one_entry(struct conv *c, const struct cfg_node *it, const char *ipath)
{
	if (!strchr(it->text, ','))
		return 0;
	return conv_bad(c->err, EINVAL, it->mark, ipath, "one entry per list item ('%.64s' has a comma)", it->text);
}

static int check_host(struct conv *c, const struct cfg_node *it, const char *ipath, void *obj)
{
	struct al_allowlist *al = NULL;
	struct al_error e = {0};
	int r = one_entry(c, it, ipath);
	if (r == 0 && (r = al_allowlist_new(&al)) < 0)
		return al_err(c->err, -r, "out of memory");
	if (r == 0 && al_allowlist_add(al, it->text, &e) < 0)
		r = conv_bad(c->err, -e.code, it->mark, ipath, "%s", detail(&e, "allow"));
	al_allowlist_free(al);
	return r;
}

static int check_cidr(struct conv *c, const struct cfg_node *it, const char *ipath, void *obj)
{
	struct al_cidr_list *l = NULL;
	struct al_error e = {0};
	int r = one_entry(c, it, ipath);
	if (r == 0 && (r = al_cidr_list_new(&l)) < 0)
		return al_err(c->err, -r, "out of memory");
	if (r == 0 && al_cidr_list_add(l, it->text, &e) < 0)
		r = conv_bad(c->err, -e.code, it->mark, ipath, "%s", detail(&e, "allow_private"));
	al_cidr_list_free(l);
	return r;
}

static int conv_registry(struct conv *c, const struct cfg_entry *e, const char *sub, size_t i)
{
	struct cfg_registry *reg = &c->cfg->registries[i];
	if (!(reg->name = strdup(e->key)))
		return al_err(c->err, ENOMEM, "out of memory");
	c->cfg->nregistries = i + 1;
	int r = conv_strv(c, e->value, sub, &reg->hosts, check_host, NULL);
	if (r == 0 && reg->hosts.n == 0)
		r = conv_bad(c->err, EINVAL, e->value->mark, sub, "a registry needs at least one host");
	return r;
}

static int conv_registries(struct conv *c, const struct cfg_node *map, const char *path, void *obj)
{
	int r = conv_want(c, map, CFG_MAP, path);
	if (r == 0 && map->n && !(c->cfg->registries = calloc(map->n, sizeof(struct cfg_registry))))
		return al_err(c->err, ENOMEM, "out of memory");
	return r ?: conv_named(c, map, path, conv_registry);
}

static int conv_allow_private(struct conv *c, const struct cfg_node *seq, const char *path, void *obj)
{
	return conv_strv(c, seq, path, &c->cfg->allow_private, check_cidr, NULL);
}

/* The CA that verifies upstreams where airlock terminates TLS (--upstream-ca), instead of the
 * host's store: an operator's internal CA. */
static int conv_upstream_ca(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_want(c, v, CFG_SCALAR, path);
	r = r ?: conv_host_path(c, v, path, NULL);
	return r ?: conv_copy_str(c, v, path, &c->cfg->upstream_ca);
}

static int conv_network(struct conv *c, const struct cfg_node *map, const char *path, void *obj)
{
	static const struct field fields[] = {
		{"registries", conv_registries},
		{"allow-private", conv_allow_private},
		{"upstream-ca", conv_upstream_ca},
	};
	return conv_fields(c, map, path, fields, AL_ARRAY_SIZE(fields), NULL);
}

/* ---- profiles ---- */

static int p_namespaces(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return conv_bool(c, v, path, &((struct cfg_profile *)obj)->namespaces);
}

static int check_registry_ref(struct conv *c, const struct cfg_node *it, const char *ipath, void *obj)
{
	if (cfg_registry(c->cfg, it->text))
		return 0;
	return conv_bad(c->err, ENOENT, it->mark, ipath, "no registry '%.64s' in network.registries", it->text);
}

static int p_network(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	const char *names[8]; /* none, its synonym loopback, host (policy/netpolicy.c) */
	size_t nnames = pol_net_choices(names, AL_ARRAY_SIZE(names));
	struct cfg_profile *p = obj;
	if (v->kind == CFG_SEQ) {
		int r = conv_strv(c, v, path, &p->registries, check_registry_ref, NULL);
		if (r == 0 && p->registries.n == 0)
			r = conv_bad(c->err, EINVAL, v->mark, path,
				     "an empty list of registries allows nothing: say none");
		p->net = AL_NET_ALLOW;
		return r;
	}
	if (v->kind != CFG_SCALAR || cfg_node_is_null(v))
		return conv_bad(c->err, EINVAL, v->mark, path,
				"expected none, loopback, host or a list of registry names");
	int r = conv_pick(c, v, path, names, nnames);
	if (r >= 0)
		pol_net_parse(names[r], &p->net);
	return r < 0 ? r : 0;
}

static int p_filesystem(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_pick(c, v, path, fs_names, AL_ARRAY_SIZE(fs_names));
	if (r >= 0)
		((struct cfg_profile *)obj)->filesystem = (enum cfg_fs_view)r;
	return r < 0 ? r : 0;
}

static int p_seccomp(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_pick(c, v, path, pol_seccomp_names, POL_SECCOMP_PROFILES);
	if (r >= 0)
		((struct cfg_profile *)obj)->seccomp = (enum al_seccomp_profile)r;
	return r < 0 ? r : 0;
}

static int check_require(struct conv *c, const struct cfg_node *it, const char *ipath, void *obj)
{
	struct cfg_profile *p = obj;
	struct al_error e = {0};
	int r = one_entry(c, it, ipath);
	if (r == 0 && pol_parse_require(it->text, &p->require_bits, &p->require_landlock_abi, &e) < 0)
		r = conv_bad(c->err, -e.code, it->mark, ipath, "%s", detail(&e, "--require"));
	return r;
}

static int p_require(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_profile *p = obj;
	p->require_bits = 0;
	p->require_landlock_abi = 0;
	return conv_strv(c, v, path, &p->require, check_require, p);
}

/* A host path: absolute, without "." or ".." parts (the binds are made from it literally). */
int conv_host_path(struct conv *c, const struct cfg_node *it, const char *ipath, void *obj)
{
	struct al_error e = {0};
	if (it->text[0] == '/' && pol_check_inside_path(it->text, &e) == 0)
		return 0;
	return conv_bad(c->err, EINVAL, it->mark, ipath, "'%.64s' must be an absolute path without '.' or '..' parts",
			it->text);
}

static int p_rootfs(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_want(c, v, CFG_SCALAR, path);
	r = r ?: conv_host_path(c, v, path, NULL);
	return r ?: conv_copy_str(c, v, path, &((struct cfg_profile *)obj)->rootfs);
}

/* An image name of the store (whether it is there is checked when a sandbox uses it). */
static int check_image(struct conv *c, const struct cfg_node *it, const char *ipath, void *obj)
{
	(void)obj;
	if (img_name_valid(it->text) || img_digest_valid(it->text))
		return 0;
	return conv_bad(c->err, EINVAL, it->mark, ipath, "'%.64s' is not an image name", it->text);
}

static int p_image(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_want(c, v, CFG_SCALAR, path);
	r = r ?: check_image(c, v, path, NULL);
	return r ?: conv_copy_str(c, v, path, &((struct cfg_profile *)obj)->image);
}

static int p_images(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return conv_strv(c, v, path, &((struct cfg_profile *)obj)->images, check_image, NULL);
}

static int p_limits(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return conv_limits(c, v, path, &((struct cfg_profile *)obj)->limits);
}

static int conv_profile(struct conv *c, const struct cfg_entry *e, const char *sub, size_t i)
{
	/* In this order: secrets after network, whose registries must allow their hosts. */
	static const struct field fields[] = {
		{"namespaces", p_namespaces}, {"network", p_network},
		{"filesystem", p_filesystem}, {"seccomp", p_seccomp},
		{"require", p_require},	      {"rootfs", p_rootfs},
		{"image", p_image},	      {"images", p_images},
		{"limits", p_limits},	      {"secrets", conv_profile_secrets},
	};
	struct cfg_profile *p = &c->cfg->profiles[i];
	/* The strict end of every knob a profile leaves out. */
	*p = (struct cfg_profile){
		.namespaces = true, .net = AL_NET_NONE, .filesystem = CFG_FS_WORKSPACE, .seccomp = AL_SECCOMP_DEFAULT};
	if (!(p->name = strdup(e->key)))
		return al_err(c->err, ENOMEM, "out of memory");
	c->cfg->nprofiles = i + 1;
	int r = conv_fields(c, e->value, sub, fields, AL_ARRAY_SIZE(fields), p);
	/* Without namespaces there is nothing to build a private network or filesystem view in. */
	if (r == 0 && !p->namespaces && (p->net != AL_NET_HOST || p->filesystem != CFG_FS_HOST))
		r = conv_bad(c->err, EINVAL, e->value->mark, sub,
			     "namespaces: false needs network: host and filesystem: host");
	return r;
}

static int conv_profiles(struct conv *c, const struct cfg_node *map, const char *path, void *obj)
{
	int r = conv_want(c, map, CFG_MAP, path);
	if (r == 0 && map->n && !(c->cfg->profiles = calloc(map->n, sizeof(struct cfg_profile))))
		return al_err(c->err, ENOMEM, "out of memory");
	return r ?: conv_named(c, map, path, conv_profile);
}

/* ---- languages ---- */

static int check_arg(struct conv *c, const struct cfg_node *it, const char *ipath, void *obj)
{
	return it->text[0] ? 0 : conv_bad(c->err, EINVAL, it->mark, ipath, "an empty argument");
}

static int l_command(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_language *l = obj;
	int r = conv_strv(c, v, path, &l->command, check_arg, NULL);
	return r == 0 && l->command.n == 0 ? conv_bad(c->err, EINVAL, v->mark, path, "an empty command") : r;
}

static int l_compile(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return conv_strv(c, v, path, &((struct cfg_language *)obj)->compile, check_arg, NULL);
}

/* The code is written under this name in the workspace: one plain component, nothing else. */
static int l_file(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_want(c, v, CFG_SCALAR, path);
	if (r == 0 && (!v->text[0] || strchr(v->text, '/') || strcmp(v->text, ".") == 0 || strcmp(v->text, "..") == 0 ||
		       strlen(v->text) > NAME_MAX))
		r = conv_bad(c->err, EINVAL, v->mark, path, "'%.64s' is not a plain file name", v->text);
	return r ?: conv_copy_str(c, v, path, &((struct cfg_language *)obj)->file);
}

static int l_paths(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return conv_strv(c, v, path, &((struct cfg_language *)obj)->paths, conv_host_path, NULL);
}

/* A configuration path beneath /etc the language reads: never a place of secrets (etcview.c). */
static int check_etc(struct conv *c, const struct cfg_node *it, const char *ipath, void *obj)
{
	struct al_error e = {0};
	return pol_etc_check(it->text, &e) == 0 ? 0 : conv_bad(c->err, -e.code, it->mark, ipath, "%s", e.msg);
}

static int l_etc(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return conv_strv(c, v, path, &((struct cfg_language *)obj)->etc, check_etc, NULL);
}

static int l_env_entry(struct conv *c, const struct cfg_entry *e, const char *sub, struct cfg_language *l)
{
	int r = conv_want(c, e->value, CFG_SCALAR, sub);
	cleanup_free char *spec = NULL;
	if (r == 0 && asprintf(&spec, "%s=%s", e->key, e->value->text) < 0)
		return al_err(c->err, ENOMEM, "out of memory");
	struct al_error e2 = {0};
	if (r == 0 && al_policy_add_env(c->scratch, spec, &e2) < 0)
		r = conv_bad(c->err, -e2.code, e->key_mark, sub, "%s", detail(&e2, "--env"));
	if (r < 0)
		return r;
	struct cfg_env *env = &l->env[l->nenv];
	env->name = strdup(e->key);
	env->value = strdup(e->value->text);
	l->nenv++;
	return env->name && env->value ? 0 : al_err(c->err, ENOMEM, "out of memory");
}

static int l_env(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_language *l = obj;
	int r = conv_want(c, v, CFG_MAP, path);
	if (r == 0 && v->n && !(l->env = calloc(v->n, sizeof(*l->env))))
		return al_err(c->err, ENOMEM, "out of memory");
	for (size_t i = 0; r == 0 && i < v->n; i++) {
		char sub[PATH_BUF];
		conv_join(sub, path, v->ents[i].key);
		r = l_env_entry(c, &v->ents[i], sub, l);
	}
	return r;
}

static int conv_language(struct conv *c, const struct cfg_entry *e, const char *sub, size_t i)
{
	static const struct field fields[] = {
		{"command", l_command}, {"compile", l_compile}, {"file", l_file},
		{"paths", l_paths},	{"etc", l_etc},		{"env", l_env},
	};
	struct cfg_language *l = &c->cfg->languages[i];
	if (!(l->name = strdup(e->key)))
		return al_err(c->err, ENOMEM, "out of memory");
	c->cfg->nlanguages = i + 1;
	int r = conv_fields(c, e->value, sub, fields, AL_ARRAY_SIZE(fields), l);
	if (r == 0 && (!l->command.n || !l->file))
		r = conv_bad(c->err, EINVAL, e->value->mark, sub, "needs %s", !l->command.n ? "a command" : "a file");
	return r;
}

static int conv_languages(struct conv *c, const struct cfg_node *map, const char *path, void *obj)
{
	int r = conv_want(c, map, CFG_MAP, path);
	if (r == 0 && map->n && !(c->cfg->languages = calloc(map->n, sizeof(struct cfg_language))))
		return al_err(c->err, ENOMEM, "out of memory");
	return r ?: conv_named(c, map, path, conv_language);
}

/* ---- the document ---- */

static int conv_version(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_want(c, v, CFG_SCALAR, path);
	if (r == 0 && (!v->plain || strcmp(v->text, "1") != 0))
		r = conv_bad(c->err, EINVAL, v->mark, path,
			     "unsupported version '%.16s' (this airlock reads version %d)", v->text, CFG_VERSION);
	return r;
}

static int conv_top_limits(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return conv_limits(c, v, path, &c->cfg->limits);
}

static int convert(const struct cfg_node *root, struct cfg *cfg, struct al_error *err)
{
	/* In this order: secrets before the profiles that name them. */
	static const struct field fields[] = {
		{"version", conv_version}, {"limits", conv_top_limits}, {"network", conv_network},
		{"secrets", conv_secrets}, {"profiles", conv_profiles}, {"languages", conv_languages},
		{"rules", conv_rules},	   {"approval", conv_approval}, {"audit", conv_audit},
		{"server", conv_server},
	};
	struct conv c = {.cfg = cfg, .err = err};
	if (al_policy_new(&c.scratch) < 0)
		return al_err(err, ENOMEM, "out of memory");
	int r = conv_fields(&c, root, "", fields, AL_ARRAY_SIZE(fields), NULL);
	al_policy_free(c.scratch);
	return r;
}

/* Every file (the defaults too) is a mapping that says which schema it follows. */
static int check_document(const struct cfg_node *root, const char *name, struct al_error *err)
{
	struct cfg_mark top = {name, 1, 1};
	if (!root)
		return conv_bad(err, EINVAL, top, "version", "missing: a config file starts with 'version: %d'",
				CFG_VERSION);
	if (root->kind != CFG_MAP)
		return conv_bad(err, EINVAL, root->mark, "(top level)", "expected a mapping of keys");
	const struct cfg_node *v = cfg_node_get(root, "version");
	if (!v)
		return conv_bad(err, EINVAL, root->mark, "version", "missing: a config file starts with 'version: %d'",
				CFG_VERSION);
	struct conv c = {.err = err};
	return conv_version(&c, v, "version", NULL);
}

/* ---- loading ---------------------------------------------------------------------------- */

static int parse_checked(const char *buf, size_t len, const char *name, struct cfg_node **out, struct al_error *err)
{
	int r = cfg_yaml_parse(buf, len, name, out, err);
	if (r == 0 && (r = check_document(*out, name, err)) < 0) {
		cfg_node_free(*out);
		*out = NULL;
	}
	return r;
}

/* The limits the embedded configuration states, with the policy's defaults (pol_default_limit) as
 * values: a file's keys replace them, `airlock config dump` shows them. The others are left to the
 * policy, whose defaults they are all the same. */
static int default_limits(struct cfg_limits *l)
{
	static const enum cfg_limit_key stated[] = {CFG_LIM_TIME, CFG_LIM_MEMORY, CFG_LIM_CPUS, CFG_LIM_DISK,
						    CFG_LIM_OUTPUT};
	for (size_t i = 0; i < AL_ARRAY_SIZE(stated); i++) {
		char buf[32];
		if (l->text[stated[i]] || opt_format_default(cfg_limit_option(stated[i]), buf, sizeof(buf)) < 0)
			continue;
		if (!(l->text[stated[i]] = strdup(buf)))
			return -ENOMEM;
	}
	return 0;
}

/* Parses one document and merges it over tree. */
static int merge_doc(struct cfg_node *tree, const char *buf, size_t len, const char *name, struct al_error *err)
{
	struct cfg_node *doc = NULL;
	int r = parse_checked(buf, len, name, &doc, err);
	if (r == 0 && (r = cfg_node_merge(tree, doc)) < 0)
		al_err(err, -r, "out of memory");
	return r;
}

/* The defaults (the service's part unless job_only and there is no file), then the file if any.
 * Without a file the build-time tree is converted as it is; a file is merged over a copy. */
static int load(const char *buf, size_t len, const char *name, bool job_only, struct cfg **out, struct al_error *err)
{
	struct cfg_node *tree = NULL;
	struct cfg *cfg = NULL;
	job_only = job_only && !name;
	int r = 0;
	if (name && !(tree = cfg_node_clone(cfg_defaults_all)))
		r = al_err(err, ENOMEM, "out of memory");
	if (r == 0 && name)
		r = merge_doc(tree, buf, len, name, err);
	if (r < 0)
		goto out;
	if (!(cfg = calloc(1, sizeof(*cfg))) || (name && !(cfg->source = strdup(name)))) {
		r = al_err(err, ENOMEM, "out of memory");
		goto out;
	}
	cfg->job_only = job_only;
	r = convert(tree ? tree : job_only ? cfg_defaults_job : cfg_defaults_all, cfg, err);
	if (r == 0 && default_limits(&cfg->limits) < 0)
		r = al_err(err, ENOMEM, "out of memory");
out:
	cfg_node_free(tree);
	if (r < 0) {
		cfg_free(cfg);
		return r;
	}
	*out = cfg;
	return 0;
}

int cfg_load_defaults(struct cfg **out, struct al_error *err)
{
	return load(NULL, 0, NULL, false, out, err);
}

int cfg_load_buffer(const char *buf, size_t len, const char *name, struct cfg **out, struct al_error *err)
{
	return load(buf, len, name ? name : "<config>", false, out, err);
}

static int check_entry(const struct stat *st, uid_t trusted, bool sticky_ok, const char *what, const char *path,
		       struct al_error *err)
{
	if (st->st_uid != 0 && st->st_uid != trusted)
		return al_err(err, EPERM,
			      "%s: %s belongs to uid %u; a config is trusted like a program, so only root may own it",
			      path, what, (unsigned)st->st_uid);
	/* A sticky directory (like /tmp) above the file's own lets others add entries but not
	 * rename or remove ours, which is all this walk needs. */
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(sticky_ok && (st->st_mode & S_ISVTX)))
		return al_err(err, EPERM,
			      "%s: %s is writable by group or others (mode %04o); only root may change a config", path,
			      what, (unsigned)(st->st_mode & 07777));
	return 0;
}

int cfg_check_trusted(int fd, const char *path, uid_t trusted_uid, struct al_error *err)
{
	struct stat st, at;
	if (fstat(fd, &st) < 0)
		return al_err_sys(err, errno, "%s", path);
	int r = check_entry(&st, trusted_uid, false, "the file", path, err);
	if (r < 0)
		return r;
	/* Check the directories of the file actually opened: resolve the name, then make sure it
	 * still is that file (swapping it in between needs write access this walk refuses). */
	cleanup_free char *real = realpath(path, NULL);
	if (!real)
		return al_err_sys(err, errno, "%s", path);
	if (stat(real, &at) < 0 || at.st_dev != st.st_dev || at.st_ino != st.st_ino)
		return al_err(err, EAGAIN, "%s: the file changed while it was being checked", path);
	bool own_dir = true;
	for (char *slash; r == 0 && strcmp(real, "/") != 0 && (slash = strrchr(real, '/')); own_dir = false) {
		slash[slash == real] = 0; /* "/a/b" -> "/a"; "/a" -> "/" */
		char what[PATH_MAX + 16];
		snprintf(what, sizeof(what), "directory %s", real);
		if (stat(real, &at) < 0)
			return al_err_sys(err, errno, "%s: %s", path, what);
		r = check_entry(&at, trusted_uid, !own_dir, what, path, err);
	}
	return r;
}

/* Reads a whole config file of at most CFG_MAX_BYTES; as root, only one that only root controls. */
static int read_file(const char *path, char **buf, size_t *len, mode_t *mode, struct al_error *err)
{
	/* O_NONBLOCK: a FIFO planted at the path must not hang us; regular files ignore it. */
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return al_err_sys(err, errno, "%s", path);
	if (!S_ISREG(st.st_mode))
		return al_err(err, EINVAL, "%s: not a regular file", path);
	*mode = st.st_mode;
	int r = geteuid() == 0 ? cfg_check_trusted(fd, path, 0, err) : 0;
	if (r < 0)
		return r;
	return cfg_read_fd(fd, path, buf, len, err);
}

int cfg_read_fd(int fd, const char *name, char **buf, size_t *len, struct al_error *err)
{
	size_t cap = 4096, n = 0;
	cleanup_free char *b = malloc(cap);
	for (;;) {
		if (!b)
			return al_err(err, ENOMEM, "out of memory");
		ssize_t got = read(fd, b + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return al_err_sys(err, errno, "%s", name);
		if (got == 0)
			break;
		n += (size_t)got;
		if (n > CFG_MAX_BYTES)
			return al_err(err, EFBIG, "%s: larger than %u bytes", name, CFG_MAX_BYTES);
		if (n == cap) {
			char *g = realloc(b, cap * 2);
			if (!g)
				return al_err(err, ENOMEM, "out of memory");
			b = g;
			cap *= 2;
		}
	}
	*buf = steal_ptr(b);
	*len = n;
	return 0;
}

int cfg_load_file(const char *path, struct cfg **out, struct al_error *err)
{
	cleanup_free char *buf = NULL;
	size_t len = 0;
	mode_t mode = 0;
	int r = read_file(path, &buf, &len, &mode, err);
	r = r ?: load(buf, len, path, false, out, err);
	if (r == 0 && (r = cfg_secrets_file_check(*out, path, mode, err)) < 0) {
		cfg_free(*out);
		*out = NULL;
	}
	return r;
}

/* Is there a file at path? A missing one, or one in a directory this caller may not search
 * (a daemon's unreadable home), is no file; anything else (e.g. I/O) is an error. */
static int present(const char *path, bool *yes, struct al_error *err)
{
	struct stat st;
	*yes = stat(path, &st) == 0;
	if (*yes || errno == ENOENT || errno == ENOTDIR || errno == EACCES)
		return 0;
	return al_err_sys(err, errno, "%s", path);
}

static int user_file(char **path)
{
	/* XDG: a relative $XDG_CONFIG_HOME is invalid and ignored. */
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	if (xdg && xdg[0] == '/')
		return asprintf(path, "%s/airlock/config.yaml", xdg) < 0 ? -ENOMEM : 0;
	if (home && home[0] == '/')
		return asprintf(path, "%s/.config/airlock/config.yaml", home) < 0 ? -ENOMEM : 0;
	*path = NULL;
	return 0;
}

int cfg_lookup(bool privileged, char **path, struct al_error *err)
{
	/* The override exists for tests, which must never touch the real /etc. */
	const char *etc = getenv(CFG_SYSCONFDIR_ENV);
	cleanup_free char *sys = NULL, *usr = NULL;
	bool yes = false;
	*path = NULL;
	if (asprintf(&sys, "%s/airlock/config.yaml", etc && etc[0] == '/' ? etc : "/etc") < 0)
		return al_err(err, ENOMEM, "out of memory");
	int r = present(sys, &yes, err);
	if (r < 0 || yes) {
		*path = r < 0 ? NULL : steal_ptr(sys);
		return r;
	}
	/* Root reads only the system file: a per-user file is the user's to change. */
	if (privileged)
		return 0;
	if (user_file(&usr) < 0)
		return al_err(err, ENOMEM, "out of memory");
	if (usr && (r = present(usr, &yes, err)) == 0 && yes)
		*path = steal_ptr(usr);
	return r;
}

static int load_effective(const char *path, bool job_only, struct cfg **out, struct al_error *err)
{
	if (path)
		return cfg_load_file(path, out, err);
	cleanup_free char *found = NULL;
	int r = cfg_lookup(geteuid() == 0, &found, err);
	if (r < 0)
		return r;
	return found ? cfg_load_file(found, out, err) : load(NULL, 0, NULL, job_only, out, err);
}

int cfg_load(const char *path, struct cfg **out, struct al_error *err)
{
	return load_effective(path, false, out, err);
}

int cfg_load_job(const char *path, struct cfg **out, struct al_error *err)
{
	return load_effective(path, true, out, err);
}

int cfg_apply_limits(const struct cfg_limits *l, struct al_policy *p, bool as_defaults, struct al_error *err)
{
	uint32_t explicit_before = p->limits_set;
	for (size_t k = 0; k < CFG_LIM__COUNT; k++) {
		int r = l->text[k] ? opt_apply(p, cfg_limit_option(k), l->text[k], err) : 0;
		if (r < 0) {
			al_err_prefix(err, "config: limits.%s", cfg_limit_option(k)->name);
			return r;
		}
	}
	/* opt_apply marks what it sets as explicitly requested. Limits from the configuration
	 * replace the built-in defaults and keep their standing: a default the host cannot enforce
	 * is refused all the same, unless limits.best-effort-limits allows running without it (and
	 * then the verdict names it); an explicit one is never run without. */
	if (as_defaults)
		p->limits_set = explicit_before;
	return 0;
}
