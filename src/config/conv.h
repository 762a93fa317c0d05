/* conv.h — internal to src/config: the helpers that turn the merged YAML tree into a struct cfg, shared by config.c and server.c. */
#ifndef AL_CONFIG_CONV_H
#define AL_CONFIG_CONV_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "config/yaml.h"

#define PATH_BUF 192 /* "profiles.NAME.limits.KEY": names are capped in messages */

/* One conversion: the configuration being filled and where its first error goes. */
struct conv {
	struct cfg *cfg;
	struct al_policy *scratch; /* limits and env go through the very calls the flags use */
	struct al_error *err;
};

/* A schema key: the handler converts one value into the object being filled. */
struct field {
	const char *key;
	int (*fn)(struct conv *c, const struct cfg_node *v, const char *path, void *obj);
};

/* "file:line:column: key.path: message" in err, control characters of the untrusted text
 * replaced; returns -code. */
__attribute__((format(printf, 5, 6))) int conv_bad(struct al_error *err, int code, struct cfg_mark m, const char *path,
						   const char *fmt, ...);
/* out = path + "." + key (key capped), out has PATH_BUF bytes. */
void conv_join(char *out, const char *path, const char *key);
/* out = path + "[" + i + "]", out has PATH_BUF + 16 bytes. */
void conv_index(char *out, const char *path, size_t i);
/* 0 when n is a non-null node of that kind, else an error naming what was found. */
int conv_want(struct conv *c, const struct cfg_node *n, enum cfg_node_kind kind, const char *path);
/* A scalar, copied into *out (replacing what was there). */
int conv_copy_str(struct conv *c, const struct cfg_node *n, const char *path, char **out);
/* One of names[] (NULL entries skipped): its index, or an error listing them. */
int conv_pick(struct conv *c, const struct cfg_node *n, const char *path, const char *const *names, size_t count);
/* An unquoted true or false. */
int conv_bool(struct conv *c, const struct cfg_node *n, const char *path, bool *out);
/* Refuses unknown keys of map, then calls the table's handlers in table order. */
int conv_fields(struct conv *c, const struct cfg_node *map, const char *path, const struct field *f, size_t nf,
		void *obj);
/* A mapping of user-chosen names (checked, at most CFG_MAX_ENTRIES): fn for each entry i. */
int conv_named(struct conv *c, const struct cfg_node *map, const char *path,
	       int (*fn)(struct conv *c, const struct cfg_entry *e, const char *sub, size_t i));
/* The name rules of conv_named for one key (registry, profile, language and rule names). */
int conv_check_name(struct conv *c, const char *name, struct cfg_mark m, const char *path);
/* A list of strings, each checked by check (may be NULL) before it is kept. */
int conv_strv(struct conv *c, const struct cfg_node *seq, const char *path, struct cfg_strv *out,
	      int (*check)(struct conv *c, const struct cfg_node *item, const char *ipath, void *obj), void *obj);
void conv_strv_free(struct cfg_strv *s);
/* An absolute host path without "." or ".." parts (a conv_strv check; obj unused). */
int conv_host_path(struct conv *c, const struct cfg_node *it, const char *ipath, void *obj);

/* The server's sections (server.c): top-level handlers and their release. */
int conv_rules(struct conv *c, const struct cfg_node *v, const char *path, void *obj);
int conv_approval(struct conv *c, const struct cfg_node *v, const char *path, void *obj);
int conv_audit(struct conv *c, const struct cfg_node *v, const char *path, void *obj);
int conv_server(struct conv *c, const struct cfg_node *v, const char *path, void *obj);
void cfg_manager_free(struct cfg *c);
/* The secrets section and a profile's secrets key (secrets.c); the latter after its network. */
int conv_secrets(struct conv *c, const struct cfg_node *v, const char *path, void *obj);
int conv_profile_secrets(struct conv *c, const struct cfg_node *v, const char *path, void *obj);
void cfg_secrets_free(struct cfg *c);
/* Refuses a file (its mode) that writes a secret's value and that group or others may read. */
int cfg_secrets_file_check(const struct cfg *c, const char *path, mode_t mode, struct al_error *err);

#endif
