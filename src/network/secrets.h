/* secrets.h — secrets by reference: a policy names secrets and the hosts each may go to; the job
 * holds only a placeholder ("airlock-secret:NAME:<random>", in the environment variable NAME),
 * and the egress proxy puts the secret in its place in requests to those hosts only, over TLS it
 * terminated (pxtls.c). Values live here, in the supervisor, and are wiped when freed. */
#ifndef AL_NETWORK_SECRETS_H
#define AL_NETWORK_SECRETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/airlock.h"

#define AL_SECRET_NAME_MAX 64
#define AL_SECRETS_MAX	   32

struct al_secrets; /* opaque, reference-counted; read-only (thread-safe) once jobs use it */

int al_secrets_new(struct al_secrets **out);
struct al_secrets *al_secrets_ref(struct al_secrets *s);
/* The last reference wipes every value. NULL is ignored. */
void al_secrets_unref(struct al_secrets *s);
/*
 * Adds "NAME,env=VAR|file=PATH,hosts=HOST[|HOST...][,body]". NAME is the job's variable (an
 * environment name); the value is read now from airlock's own environment or a file (one
 * trailing newline dropped); HOST is an allowlist entry without rules (pypi.org, *.example.com,
 * api.example.com:8443). body: the placeholder is replaced in request bodies too (else headers
 * only). All or nothing; err never holds the value.
 */
int al_secrets_add(struct al_secrets *s, const char *spec, struct al_error *err);

/* Where a secret's value comes from. */
enum al_secret_kind {
	AL_SECRET_ENV,	 /* ref names a variable of airlock's own environment */
	AL_SECRET_FILE,	 /* ref is an absolute path: a regular file of at most 8 KiB (trailing newlines dropped) */
	AL_SECRET_VALUE, /* ref[0..ref_len) is the value itself (the service's configuration) */
};
#define AL_SECRET_HOSTS_MAX 64

/* One secret as the configuration names it (what al_secrets_add parses a spec into). */
struct al_secret_src {
	const char *what; /* how errors name the source of the definition: "--secret", "secrets.NAME" */
	const char *name; /* the job's variable */
	enum al_secret_kind kind;
	const char *ref;
	size_t ref_len;		  /* AL_SECRET_VALUE only */
	const char *const *hosts; /* allowlist entries without rules, one each */
	size_t nhosts;
	bool body;
};
/* Adds src, its value read now. All or nothing; err never holds the value. */
int al_secrets_add_src(struct al_secrets *s, const struct al_secret_src *src, struct al_error *err);
/* Whether s[0..n) is an environment variable name a secret may have (letters, digits, _; not a digit
 * first; shorter than AL_SECRET_NAME_MAX). */
bool al_secret_name_ok(const char *s, size_t n);
size_t al_secrets_count(const struct al_secrets *s);
const char *al_secret_name(const struct al_secrets *s, size_t i);
/* "airlock-secret:NAME:<32 hex digits>", fixed for the list's life. */
const char *al_secret_placeholder(const struct al_secrets *s, size_t i);
/* Whether some secret may go to host:port (its requests must then be seen). */
bool al_secrets_for(const struct al_secrets *s, const char *host, uint16_t port);
/*
 * in[0..len) with each placeholder of a secret that may go to host:port replaced by the secret
 * (only where body is false, or the secret allows bodies). Returns 0 and *out NULL when nothing
 * changed, or a malloc'd copy in *out, its length in *out_len (which the caller wipes with al_secrets_wipe), with the
 * bits of the secrets used or'ed into *used. -ENOMEM.
 */
int al_secrets_apply(const struct al_secrets *s, const char *host, uint16_t port, bool body, const char *in, size_t len,
		     char **out, size_t *out_len, uint32_t *used);
/* Whether buf[0..len) holds the value of a secret among used. */
bool al_secrets_seen(const struct al_secrets *s, uint32_t used, const char *buf, size_t len);
/* The longest value among used (the window a stream scan must hold back, plus one). */
size_t al_secrets_longest(const struct al_secrets *s, uint32_t used);
void al_secrets_wipe(void *p, size_t len);

#endif
