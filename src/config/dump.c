/* dump.c — the effective configuration as YAML (libyaml's emitter does the quoting), loadable again as a config file. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "policy/policy.h"
#include "util/cleanup.h"
#include "util/error.h"

struct out {
	char *buf;
	size_t len, cap;
	bool nomem;
};

static int write_out(void *data, unsigned char *bytes, size_t size)
{
	struct out *o = data;
	if (o->len + size + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 4096;
		while (cap < o->len + size + 1)
			cap *= 2;
		char *b = realloc(o->buf, cap);
		if (!b) {
			o->nomem = true;
			return 0;
		}
		o->buf = b;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, bytes, size);
	o->len += size;
	o->buf[o->len] = 0;
	return 1;
}

/* The emitter and the first failure; every emit after a failure is a no-op. */
struct dumper {
	yaml_emitter_t em;
	bool failed;
};

static void emit(struct dumper *d, yaml_event_t *ev, int initialized)
{
	if (!initialized) {
		d->failed = true;
		return;
	}
	if (d->failed) {
		yaml_event_delete(ev);
		return;
	}
	/* The emitter owns the event from here on, also when it fails: never delete it again. */
	if (!yaml_emitter_emit(&d->em, ev))
		d->failed = true;
}

/* Strings that would read back as null are quoted: a plain null is not a string to the loader. */
static void scalar_styled(struct dumper *d, const char *s, yaml_scalar_style_t style)
{
	yaml_event_t ev;
	if (style == YAML_ANY_SCALAR_STYLE && (!*s || !strcmp(s, "~") || !strcasecmp(s, "null")))
		style = YAML_SINGLE_QUOTED_SCALAR_STYLE;
	int ok =
		yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)(uintptr_t)s, (int)strlen(s), 1, 1, style);
	emit(d, &ev, ok);
}

static void scalar(struct dumper *d, const char *s)
{
	scalar_styled(d, s, YAML_ANY_SCALAR_STYLE);
}

static void map_start(struct dumper *d)
{
	yaml_event_t ev;
	emit(d, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE));
}

static void map_end(struct dumper *d)
{
	yaml_event_t ev;
	emit(d, &ev, yaml_mapping_end_event_initialize(&ev));
}

/* A list of strings, on one line where it fits. */
static void strv(struct dumper *d, const struct cfg_strv *v)
{
	yaml_event_t ev;
	emit(d, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_FLOW_SEQUENCE_STYLE));
	for (size_t i = 0; i < v->n; i++)
		scalar(d, v->v[i]);
	emit(d, &ev, yaml_sequence_end_event_initialize(&ev));
}

static void key_strv(struct dumper *d, const char *key, const struct cfg_strv *v)
{
	scalar(d, key);
	strv(d, v);
}

static void key_str(struct dumper *d, const char *key, const char *value)
{
	scalar(d, key);
	scalar(d, value);
}

static void limits(struct dumper *d, const struct cfg_limits *l)
{
	map_start(d);
	for (size_t k = 0; k < CFG_LIM__COUNT; k++)
		if (l->text[k])
			key_str(d, cfg_limit_option(k)->name, l->text[k]);
	map_end(d);
}

static bool any_limit(const struct cfg_limits *l)
{
	for (size_t k = 0; k < CFG_LIM__COUNT; k++)
		if (l->text[k])
			return true;
	return false;
}

static void network(struct dumper *d, const struct cfg *c)
{
	scalar(d, "network");
	map_start(d);
	scalar(d, "registries");
	map_start(d);
	for (size_t i = 0; i < c->nregistries; i++)
		key_strv(d, c->registries[i].name, &c->registries[i].hosts);
	map_end(d);
	key_strv(d, "allow-private", &c->allow_private);
	if (c->upstream_ca)
		key_str(d, "upstream-ca", c->upstream_ca);
	map_end(d);
}

/* Sources by name only: a value written in the file is dumped as CFG_SECRET_REDACTED, which a
 * load refuses, so neither the dump nor a file made from it carries the secret. */
static void secrets(struct dumper *d, const struct cfg *c)
{
	if (!c->nsecrets)
		return;
	scalar(d, "secrets");
	map_start(d);
	for (size_t i = 0; i < c->nsecrets; i++) {
		const struct cfg_secret *s = &c->secrets[i];
		scalar(d, s->name);
		map_start(d);
		key_str(d, cfg_secret_kind_key(s->kind), s->kind == CFG_SECRET_VALUE ? CFG_SECRET_REDACTED : s->ref);
		key_strv(d, "hosts", &s->hosts);
		key_str(d, "body", s->body ? "true" : "false");
		if (strcmp(s->variable, s->name) != 0)
			key_str(d, "variable", s->variable);
		if (s->principals.n)
			key_strv(d, "principals", &s->principals);
		map_end(d);
	}
	map_end(d);
}

static void profile(struct dumper *d, const struct cfg_profile *p)
{
	scalar(d, p->name);
	map_start(d);
	key_str(d, "namespaces", p->namespaces ? "true" : "false");
	if (p->net == AL_NET_ALLOW)
		key_strv(d, "network", &p->registries);
	else
		key_str(d, "network", pol_net_name(p->net));
	key_str(d, "filesystem", cfg_fs_view_name(p->filesystem));
	key_str(d, "seccomp", (unsigned)p->seccomp < POL_SECCOMP_PROFILES ? pol_seccomp_name(p->seccomp) : "default");
	key_strv(d, "require", &p->require);
	if (p->rootfs)
		key_str(d, "rootfs", p->rootfs);
	if (p->image)
		key_str(d, "image", p->image);
	if (p->images.n)
		key_strv(d, "images", &p->images);
	if (any_limit(&p->limits)) {
		scalar(d, "limits");
		limits(d, &p->limits);
	}
	if (p->secrets.n)
		key_strv(d, "secrets", &p->secrets);
	map_end(d);
}

static void language(struct dumper *d, const struct cfg_language *l)
{
	scalar(d, l->name);
	map_start(d);
	/* Always written, even empty: "compile: []" is how a file turns a compiled language into an
	 * interpreted one, and leaving it out would let the default's compile step come back. */
	key_strv(d, "compile", &l->compile);
	key_strv(d, "command", &l->command);
	key_str(d, "file", l->file);
	key_strv(d, "paths", &l->paths);
	key_strv(d, "etc", &l->etc);
	scalar(d, "env");
	map_start(d);
	/* Quoted: environment values are strings, also to YAML readers that type "1" as a number. */
	for (size_t i = 0; i < l->nenv; i++) {
		scalar(d, l->env[i].name);
		scalar_styled(d, l->env[i].value, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
	}
	map_end(d);
	map_end(d);
}

static void seq_start(struct dumper *d)
{
	yaml_event_t ev;
	emit(d, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE));
}

static void seq_end(struct dumper *d)
{
	yaml_event_t ev;
	emit(d, &ev, yaml_sequence_end_event_initialize(&ev));
}

static void key_uint(struct dumper *d, const char *key, uint64_t v)
{
	char text[24];
	snprintf(text, sizeof(text), "%llu", (unsigned long long)v);
	key_str(d, key, text);
}

/* A JSON scalar as the loader reads it back: strings always quoted (so "true" or "5" stay
 * strings), numbers, true, false and null plain. */
static void json_scalar(struct dumper *d, const json_t *j)
{
	if (json_is_string(j)) {
		scalar_styled(d, json_string_value(j), YAML_DOUBLE_QUOTED_SCALAR_STYLE);
		return;
	}
	cleanup_free char *text = json_dumps(j, JSON_ENCODE_ANY);
	if (!text) {
		d->failed = true;
		return;
	}
	scalar_styled(d, text, YAML_PLAIN_SCALAR_STYLE);
}

static void rule(struct dumper *d, const struct cfg_rule *r)
{
	map_start(d);
	key_str(d, "name", r->name);
	key_strv(d, "tools", &r->tools);
	if (r->nwhen) {
		scalar(d, "when");
		seq_start(d);
		for (size_t i = 0; i < r->nwhen; i++) {
			map_start(d);
			key_str(d, "param", r->when[i].param);
			scalar(d, r->when[i].op == CFG_COND_EQUALS ? "equals" : "matches");
			if (r->when[i].op == CFG_COND_EQUALS)
				json_scalar(d, r->when[i].equals);
			else
				scalar(d, r->when[i].pattern);
			map_end(d);
		}
		seq_end(d);
	}
	key_str(d, "risk", cfg_risk_name(r->risk));
	if (r->timeout)
		key_str(d, "approval_timeout", r->timeout);
	/* Only when written: unsaid, it follows the risk (true for HIGH and CRITICAL). */
	if (r->require_approval_set)
		key_str(d, "require_approval", r->require_approval ? "true" : "false");
	map_end(d);
}

/* The map form while no entry names an image (as written by most), else the list form. */
static void dump_pool(struct dumper *d, const struct cfg_server *s)
{
	bool images = false;
	for (size_t i = 0; i < s->npool; i++)
		images = images || s->pool[i].image;
	scalar(d, "pool");
	if (images)
		seq_start(d);
	else
		map_start(d);
	for (size_t i = 0; i < s->npool; i++) {
		if (!images) {
			key_uint(d, s->pool[i].profile, s->pool[i].count);
			continue;
		}
		map_start(d);
		key_str(d, "profile", s->pool[i].profile);
		if (s->pool[i].image)
			key_str(d, "image", s->pool[i].image);
		key_uint(d, "count", s->pool[i].count);
		map_end(d);
	}
	if (images)
		seq_end(d);
	else
		map_end(d);
}

static void manager(struct dumper *d, const struct cfg *c)
{
	const struct cfg_approval *a = &c->approval;
	const struct cfg_server *s = &c->server;
	scalar(d, "rules");
	seq_start(d);
	for (size_t i = 0; i < c->nrules; i++)
		rule(d, &c->rules[i]);
	seq_end(d);
	scalar(d, "approval");
	map_start(d);
	key_str(d, "default_risk", cfg_risk_name(a->default_risk));
	key_str(d, "default_timeout", a->default_timeout);
	key_str(d, "auto_approve_up_to", cfg_risk_name(a->auto_approve_up_to));
	key_str(d, "deny_above", cfg_risk_name(a->deny_above));
	key_strv(d, "channels", &a->channels);
	map_end(d);
	scalar(d, "audit");
	map_start(d);
	if (c->audit.path)
		key_str(d, "path", c->audit.path);
	key_str(d, "fsync", c->audit.fsync ? "true" : "false");
	key_str(d, "rotate_size", c->audit.rotate_size);
	key_uint(d, "keep", c->audit.keep);
	map_end(d);
	scalar(d, "server");
	map_start(d);
	key_uint(d, "max_sandboxes", s->max_sandboxes);
	key_uint(d, "max_execs", s->max_execs);
	key_uint(d, "max_execs_per_sandbox", s->max_execs_per_sandbox ? s->max_execs_per_sandbox : 16);
	key_str(d, "idle_ttl", s->idle_ttl);
	key_str(d, "max_lifetime", s->max_lifetime);
	if (s->request_timeout)
		key_str(d, "request_timeout", s->request_timeout);
	key_str(d, "cell_image_limit", s->cell_image_limit ? s->cell_image_limit : "4M");
	dump_pool(d, s);
	scalar(d, "http");
	map_start(d);
	if (s->http_listen)
		key_str(d, "listen", s->http_listen);
	if (s->http_token_file)
		key_str(d, "token_file", s->http_token_file);
	if (s->http_approver_token_file)
		key_str(d, "approver_token_file", s->http_approver_token_file);
	if (s->http_e2b_domain)
		key_str(d, "e2b_domain", s->http_e2b_domain);
	if (s->http_max_connections)
		key_uint(d, "max_connections", s->http_max_connections);
	map_end(d);
	if (s->socket)
		key_str(d, "socket", s->socket);
	if (s->state_dir)
		key_str(d, "state_dir", s->state_dir);
	scalar(d, "quota");
	map_start(d);
	key_uint(d, "sessions", s->quota_sessions ? s->quota_sessions : CFG_QUOTA_SESSIONS);
	key_uint(d, "sandboxes", s->quota_sandboxes ? s->quota_sandboxes : CFG_QUOTA_SANDBOXES);
	key_uint(d, "execs", s->quota_execs ? s->quota_execs : CFG_QUOTA_EXECS);
	key_uint(d, "connections", s->quota_connections ? s->quota_connections : CFG_QUOTA_CONNECTIONS);
	key_uint(d, "snapshots", s->quota_snapshots ? s->quota_snapshots : CFG_QUOTA_SNAPSHOTS);
	if (s->quota_snapshot_bytes && s->quota_snapshot_bytes != AL_UNLIMITED)
		key_uint(d, "snapshot_bytes", s->quota_snapshot_bytes);
	if (s->quota_sandbox_bytes && s->quota_sandbox_bytes != AL_UNLIMITED)
		key_uint(d, "sandbox_bytes", s->quota_sandbox_bytes);
	map_end(d);
	if (s->approver_uids) {
		scalar(d, "approver_uids");
		seq_start(d);
		for (size_t i = 0; i < s->napprover_uids; i++) {
			char text[16];
			snprintf(text, sizeof(text), "%u", s->approver_uids[i]);
			scalar(d, text);
		}
		seq_end(d);
	}
	map_end(d);
}

static void document(struct dumper *d, const struct cfg *c)
{
	yaml_event_t ev;
	emit(d, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
	emit(d, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
	map_start(d);
	scalar(d, "version");
	scalar_styled(d, "1", YAML_PLAIN_SCALAR_STYLE);
	scalar(d, "limits");
	limits(d, &c->limits);
	network(d, c);
	secrets(d, c);
	scalar(d, "profiles");
	map_start(d);
	for (size_t i = 0; i < c->nprofiles; i++)
		profile(d, &c->profiles[i]);
	map_end(d);
	scalar(d, "languages");
	map_start(d);
	for (size_t i = 0; i < c->nlanguages; i++)
		language(d, &c->languages[i]);
	map_end(d);
	manager(d, c);
	map_end(d);
	emit(d, &ev, yaml_document_end_event_initialize(&ev, 1));
	emit(d, &ev, yaml_stream_end_event_initialize(&ev));
}

int cfg_dump(const struct cfg *c, char **out, size_t *len, struct al_error *err)
{
	struct out o = {0};
	struct dumper d = {0};
	if (!yaml_emitter_initialize(&d.em))
		return al_err(err, ENOMEM, "out of memory");
	yaml_emitter_set_output(&d.em, write_out, &o);
	yaml_emitter_set_unicode(&d.em, 1);
	yaml_emitter_set_width(&d.em, 100);
	document(&d, c);
	if (!d.failed && !yaml_emitter_flush(&d.em))
		d.failed = true;
	const char *problem = d.em.problem;
	yaml_emitter_delete(&d.em);
	if (d.failed || o.nomem) {
		free(o.buf);
		if (o.nomem || !problem)
			return al_err(err, ENOMEM, "config dump: out of memory");
		return al_err(err, EIO, "config dump: %s", problem);
	}
	*out = o.buf;
	*len = o.len;
	return 0;
}
