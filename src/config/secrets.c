/* secrets.c — the configuration's secrets by reference: the top-level `secrets` section, a profile's
 * list of them, the check that its network allows where each may go, and applying them to a policy.
 *
 * Why this is safe. A secret's value never enters a message: errors name the secret and its source
 * (a variable or a path), and a value written in the file is kept only in a buffer wiped on free
 * and dumped as CFG_SECRET_REDACTED, which a load refuses (a dump can never carry it, nor pass its
 * mark off as a key). A secret restricted to principals reaches only their sandboxes: it is added
 * when the sandbox is made for one of them (cfg_apply_profile), never to a spare, which nobody owns.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/config.h"
#include "config/conv.h"
#include "config/profile.h"
#include "network/allowlist.h"
#include "network/secrets.h"
#include "policy/policy.h"
#include "util/cleanup.h"
#include "util/error.h"

#define VALUE_MAX 8192 /* as network/secrets.c */

static const char *const kind_keys[] = {
	[CFG_SECRET_ENV] = "env", [CFG_SECRET_FILE] = "file", [CFG_SECRET_VALUE] = "value"};

const char *cfg_secret_kind_key(enum cfg_secret_kind k)
{
	return (unsigned)k < AL_ARRAY_SIZE(kind_keys) ? kind_keys[k] : "?";
}

void cfg_secrets_free(struct cfg *c)
{
	for (size_t i = 0; i < c->nsecrets; i++) {
		struct cfg_secret *s = &c->secrets[i];
		if (s->ref)
			al_secrets_wipe(s->ref, s->ref_len);
		free(s->ref);
		free(s->name);
		free(s->variable);
		conv_strv_free(&s->hosts);
		conv_strv_free(&s->principals);
	}
	free(c->secrets);
	c->secrets = NULL;
	c->nsecrets = 0;
}

const struct cfg_secret *cfg_secret(const struct cfg *c, const char *name)
{
	for (size_t i = 0; c && name && i < c->nsecrets; i++)
		if (strcmp(c->secrets[i].name, name) == 0)
			return &c->secrets[i];
	return NULL;
}

/* ---- the secrets section ------------------------------------------------------------- */

static int set_source(struct conv *c, const struct cfg_node *v, const char *path, struct cfg_secret *s,
		      enum cfg_secret_kind kind)
{
	int r = conv_want(c, v, CFG_SCALAR, path);
	if (r < 0)
		return r;
	if (s->ref)
		return conv_bad(c->err, EINVAL, v->mark, path, "give exactly one of env, file and value");
	size_t n = strlen(v->text);
	if (kind == CFG_SECRET_ENV && !al_secret_name_ok(v->text, n))
		return conv_bad(c->err, EINVAL, v->mark, path, "'%.64s' is not an environment variable name", v->text);
	if (kind == CFG_SECRET_FILE && (r = conv_host_path(c, v, path, NULL)) < 0)
		return r;
	if (kind == CFG_SECRET_VALUE) {
		/* Checked here, so the value's faults are told at load; never quoted in the message. */
		if (strcmp(v->text, CFG_SECRET_REDACTED) == 0)
			return conv_bad(
				c->err, EINVAL, v->mark, path,
				"the mark `airlock config dump` writes instead of a value: write the value itself");
		if (n == 0 || n > VALUE_MAX)
			return conv_bad(c->err, EINVAL, v->mark, path, "the value must have 1 to %d bytes", VALUE_MAX);
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)v->text[i] < 0x20 || v->text[i] == 0x7f)
				return conv_bad(c->err, EINVAL, v->mark, path,
						"the value contains a control character");
	}
	if (!(s->ref = strdup(v->text)))
		return al_err(c->err, ENOMEM, "out of memory");
	s->ref_len = n;
	s->kind = kind;
	return 0;
}

static int s_env(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return set_source(c, v, path, obj, CFG_SECRET_ENV);
}

static int s_file(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return set_source(c, v, path, obj, CFG_SECRET_FILE);
}

static int s_value(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return set_source(c, v, path, obj, CFG_SECRET_VALUE);
}

/* An allowlist entry without request rules: a name (or *.suffix), optionally :PORT, or a literal. */
static int check_secret_host(struct conv *c, const struct cfg_node *it, const char *ipath, void *obj)
{
	(void)obj;
	if (strpbrk(it->text, " /,|"))
		return conv_bad(c->err, EINVAL, it->mark, ipath,
				"'%.64s': a host name (or *.suffix) and port only, one per list item", it->text);
	struct al_allowlist *al = NULL;
	struct al_error e = {0};
	if (al_allowlist_new(&al) < 0)
		return al_err(c->err, ENOMEM, "out of memory");
	int r = al_allowlist_add(al, it->text, &e) < 0 ? conv_bad(c->err, -e.code, it->mark, ipath, "%s", e.msg) : 0;
	al_allowlist_free(al);
	return r;
}

static int s_hosts(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_secret *s = obj;
	int r = conv_strv(c, v, path, &s->hosts, check_secret_host, NULL);
	if (r == 0 && s->hosts.n == 0)
		r = conv_bad(c->err, EINVAL, v->mark, path, "a secret needs at least one host it may go to");
	if (r == 0 && s->hosts.n > AL_SECRET_HOSTS_MAX)
		r = conv_bad(c->err, E2BIG, v->mark, path, "at most %d hosts", AL_SECRET_HOSTS_MAX);
	return r;
}

static int s_body(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return conv_bool(c, v, path, &((struct cfg_secret *)obj)->body);
}

static int s_variable(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_want(c, v, CFG_SCALAR, path);
	if (r == 0 && !al_secret_name_ok(v->text, strlen(v->text)))
		r = conv_bad(c->err, EINVAL, v->mark, path, "'%.64s' is not an environment variable name", v->text);
	return r ?: conv_copy_str(c, v, path, &((struct cfg_secret *)obj)->variable);
}

/* A principal as the server names it: "token:NAME" (a bearer token's name) or "uid:N" (a peer of
 * the Unix socket). A typo would silently give the secret to nobody, so the shape is checked. */
static int check_principal(struct conv *c, const struct cfg_node *it, const char *ipath, void *obj)
{
	(void)obj;
	const char *t = it->text, *rest = NULL;
	bool ok = false;
	if (strncmp(t, "token:", 6) == 0) {
		rest = t + 6;
		ok = *rest && strlen(rest) <= 72;
		for (const char *p = rest; ok && *p; p++)
			ok = (unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f;
	} else if (strncmp(t, "uid:", 4) == 0) {
		rest = t + 4;
		ok = *rest && strlen(rest) <= 10 && (rest[0] != '0' || !rest[1]);
		for (const char *p = rest; ok && *p; p++)
			ok = *p >= '0' && *p <= '9';
	}
	return ok ? 0
		  : conv_bad(c->err, EINVAL, it->mark, ipath,
			     "'%.64s' is not a principal (token:NAME for a bearer token, uid:N for a socket peer)", t);
}

static int s_principals(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_secret *s = obj;
	int r = conv_strv(c, v, path, &s->principals, check_principal, NULL);
	if (r == 0 && s->principals.n == 0)
		r = conv_bad(c->err, EINVAL, v->mark, path,
			     "an empty list would give the secret to nobody: leave principals out for everyone");
	return r;
}

static int conv_secret(struct conv *c, const struct cfg_entry *e, const char *sub, size_t i)
{
	static const struct field fields[] = {
		{"env", s_env},	  {"file", s_file},	    {"value", s_value},		  {"hosts", s_hosts},
		{"body", s_body}, {"variable", s_variable}, {"principals", s_principals},
	};
	struct cfg_secret *s = &c->cfg->secrets[i];
	if (!(s->name = strdup(e->key)))
		return al_err(c->err, ENOMEM, "out of memory");
	c->cfg->nsecrets = i + 1;
	int r = conv_fields(c, e->value, sub, fields, AL_ARRAY_SIZE(fields), s);
	if (r == 0 && !s->ref)
		r = conv_bad(c->err, EINVAL, e->value->mark, sub, "needs one of env, file and value (its source)");
	if (r == 0 && !s->hosts.n)
		r = conv_bad(c->err, EINVAL, e->value->mark, sub, "needs hosts (where it may go)");
	if (r == 0 && !s->variable && !al_secret_name_ok(s->name, strlen(s->name)))
		r = conv_bad(c->err, EINVAL, e->key_mark, sub,
			     "the name is the job's variable unless `variable` names one: it must be an environment "
			     "variable name (letters, digits, _)");
	if (r == 0 && !s->variable && !(s->variable = strdup(s->name)))
		r = al_err(c->err, ENOMEM, "out of memory");
	return r;
}

int conv_secrets(struct conv *c, const struct cfg_node *map, const char *path, void *obj)
{
	(void)obj;
	int r = conv_want(c, map, CFG_MAP, path);
	if (r == 0 && map->n > (size_t)AL_SECRETS_MAX * 8)
		return conv_bad(c->err, E2BIG, map->mark, path, "more than %d secrets", AL_SECRETS_MAX * 8);
	cfg_secrets_free(c->cfg);
	if (r == 0 && map->n && !(c->cfg->secrets = calloc(map->n, sizeof(struct cfg_secret))))
		return al_err(c->err, ENOMEM, "out of memory");
	return r ?: conv_named(c, map, path, conv_secret);
}

/* A value written in the file is as secret as the file: every local user who may read it could
 * read the secret, which the sandboxes never can. The token files' rule, applied here too. */
int cfg_secrets_file_check(const struct cfg *c, const char *path, mode_t mode, struct al_error *err)
{
	for (size_t i = 0; i < c->nsecrets; i++)
		if (c->secrets[i].kind == CFG_SECRET_VALUE && (mode & (S_IRGRP | S_IROTH)))
			return al_err(err, EPERM,
				      "%s: secrets.%s writes its value in this file, which group or others may read "
				      "(mode %04o): chmod 0600, or give the secret by file: or env:",
				      path, c->secrets[i].name, (unsigned)(mode & 07777));
	return 0;
}

/* ---- a profile's secrets ----------------------------------------------------------------- */

static bool principals_meet(const struct cfg_secret *a, const struct cfg_secret *b)
{
	if (!a->principals.n || !b->principals.n)
		return true;
	for (size_t i = 0; i < a->principals.n; i++)
		for (size_t k = 0; k < b->principals.n; k++)
			if (strcmp(a->principals.v[i], b->principals.v[k]) == 0)
				return true;
	return false;
}

/* Whether the allowlist lets host entry h (a secret's) through on every name it stands for: a
 * name or literal as it is; "*.suffix" by a name beneath it no exact entry would list, so only an
 * entry covering the whole suffix passes. */
static bool covered(const struct al_allowlist *al, const char *h)
{
	bool wild = strncmp(h, "*.", 2) == 0;
	char host[AL_HOST_MAX], probe[AL_HOST_MAX + 32];
	enum al_host_kind kind;
	uint16_t port = 0;
	const char *why = NULL, *rest = wild ? h + 2 : h;
	if (al_hostport_parse(rest, strlen(rest), true, host, &kind, &port, &why) < 0)
		return false;
	snprintf(probe, sizeof(probe), "%s%s", wild ? "airlock-any-name-beneath." : "", host);
	return al_allow_match(al, probe, port ? port : AL_ALLOW_DEFAULT_PORT);
}

/* The profile's allowlist as a job would get it: its registries' hosts. */
static int profile_allowlist(const struct cfg *cfg, const struct cfg_profile *p, struct al_allowlist **out)
{
	int r = al_allowlist_new(out);
	for (size_t i = 0; r == 0 && i < p->registries.n; i++) {
		const struct cfg_registry *reg = cfg_registry(cfg, p->registries.v[i]);
		for (size_t h = 0; r == 0 && reg && h < reg->hosts.n; h++)
			r = al_allowlist_add(*out, reg->hosts.v[h], NULL);
	}
	return r;
}

/* The profile's i-th secret: known, going only where the profile's network allows, filling a variable
 * no earlier one fills for the same principal. */
static int check_one(struct conv *c, const struct cfg_profile *p, size_t i, struct cfg_mark m, const char *ipath,
		     const struct al_allowlist *al)
{
	const struct cfg_secret *s = cfg_secret(c->cfg, p->secrets.v[i]);
	if (!s)
		return conv_bad(c->err, ENOENT, m, ipath, "no secret '%.64s' in secrets", p->secrets.v[i]);
	if (p->net != AL_NET_ALLOW)
		return conv_bad(c->err, EINVAL, m, ipath,
				"a secret goes only through the egress proxy, toward allowed hosts: the profile's "
				"network must be a list of registries that allows %.64s",
				s->hosts.v[0]);
	for (size_t h = 0; h < s->hosts.n; h++)
		if (!covered(al, s->hosts.v[h]))
			return conv_bad(
				c->err, EINVAL, m, ipath,
				"secret %.64s may go to %.64s, which the profile's network (its registries) does "
				"not allow: add the host to one of its registries",
				s->name, s->hosts.v[h]);
	for (size_t k = 0; k < i; k++) {
		const struct cfg_secret *o = cfg_secret(c->cfg, p->secrets.v[k]);
		if (o == s)
			return conv_bad(c->err, EINVAL, m, ipath, "secret %.64s is listed twice", s->name);
		if (o && strcmp(o->variable, s->variable) == 0 && principals_meet(o, s))
			return conv_bad(c->err, EINVAL, m, ipath,
					"secrets %.64s and %.64s both fill %.64s for one principal", o->name, s->name,
					s->variable);
	}
	return 0;
}

int conv_profile_secrets(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_profile *p = obj;
	int r = conv_strv(c, v, path, &p->secrets, NULL, NULL);
	if (r < 0 || p->secrets.n == 0)
		return r;
	if (p->secrets.n > AL_SECRETS_MAX)
		return conv_bad(c->err, E2BIG, v->mark, path, "at most %d secrets", AL_SECRETS_MAX);
	struct al_allowlist *al = NULL;
	if (profile_allowlist(c->cfg, p, &al) < 0) {
		al_allowlist_free(al);
		return al_err(c->err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; r == 0 && i < v->n; i++) {
		char ipath[PATH_BUF + 16];
		conv_index(ipath, path, i);
		r = check_one(c, p, i, v->ents[i].value->mark, ipath, al);
	}
	al_allowlist_free(al);
	return r;
}

/* ---- use ------------------------------------------------------------------------------ */

static bool for_principal(const struct cfg_secret *s, const char *principal)
{
	if (!s->principals.n)
		return true;
	for (size_t i = 0; principal && i < s->principals.n; i++)
		if (strcmp(s->principals.v[i], principal) == 0)
			return true;
	return false;
}

bool cfg_profile_has_personal_secrets(const struct cfg *c, const struct cfg_profile *pr, const char *principal)
{
	for (size_t i = 0; pr && i < pr->secrets.n; i++) {
		const struct cfg_secret *s = cfg_secret(c, pr->secrets.v[i]);
		if (s && s->principals.n && for_principal(s, principal))
			return true;
	}
	return false;
}

static int add_one(const struct cfg_secret *s, struct al_policy *p, struct al_error *err)
{
	static const enum al_secret_kind kinds[] = {[CFG_SECRET_ENV] = AL_SECRET_ENV,
						    [CFG_SECRET_FILE] = AL_SECRET_FILE,
						    [CFG_SECRET_VALUE] = AL_SECRET_VALUE};
	char what[CFG_NAME_MAX + 16];
	snprintf(what, sizeof(what), "secrets.%s", s->name);
	struct al_secret_src src = {
		.what = what,
		.name = s->variable,
		.kind = kinds[s->kind],
		.ref = s->ref,
		.ref_len = s->ref_len,
		.hosts = (const char *const *)s->hosts.v,
		.nhosts = s->hosts.n,
		.body = s->body,
	};
	return al_policy_add_secret_src(p, &src, err);
}

int cfg_apply_secrets(const struct cfg *c, const struct cfg_profile *pr, const char *principal, struct al_policy *p,
		      struct al_error *err)
{
	for (size_t i = 0; i < pr->secrets.n; i++) {
		const struct cfg_secret *s = cfg_secret(c, pr->secrets.v[i]);
		if (!s)
			return al_err(err, ENOENT, "no secret '%s'", pr->secrets.v[i]);
		int r = for_principal(s, principal) ? add_one(s, p, err) : 0;
		if (r < 0)
			return r;
	}
	return 0;
}

int cfg_secrets_check(const struct cfg *c, struct al_error *err)
{
	int r = 0;
	/* Each secret a profile names, read once the way a sandbox's creation reads it. */
	for (size_t i = 0; r == 0 && i < c->nsecrets; i++) {
		bool used = false;
		for (size_t k = 0; !used && k < c->nprofiles; k++)
			for (size_t j = 0; !used && j < c->profiles[k].secrets.n; j++)
				used = strcmp(c->profiles[k].secrets.v[j], c->secrets[i].name) == 0;
		if (!used)
			continue;
		struct al_policy *one = NULL;
		r = al_policy_new(&one) < 0 ? al_err(err, ENOMEM, "out of memory") : add_one(&c->secrets[i], one, err);
		al_policy_free(one);
	}
	return r;
}
