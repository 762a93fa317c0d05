/* yaml.h — one YAML document as a small tree of scalars, sequences and mappings, each node marked with its file:line:column. */
#ifndef AL_CONFIG_YAML_H
#define AL_CONFIG_YAML_H

#include <stdbool.h>
#include <stddef.h>

#include "airlock/airlock.h"

/* Bounds on untrusted input: a config is small, so anything bigger is refused, not parsed. */
#define CFG_MAX_BYTES (1u << 20) /* 1 MiB */
#define CFG_MAX_DEPTH 16	 /* nesting of sequences and mappings */
#define CFG_MAX_NODES 65536	 /* scalars, sequences and mappings in one document */

enum cfg_node_kind {
	CFG_SCALAR,
	CFG_SEQ,
	CFG_MAP
};

/* Where a node starts: 1-based line and column; file is the name given to the parser (not owned). */
struct cfg_mark {
	const char *file;
	unsigned line, column;
};

struct cfg_node;

/* One item of a sequence (key NULL) or one key: value pair of a mapping. */
struct cfg_entry {
	char *key;
	struct cfg_mark key_mark;
	struct cfg_node *value;
};

struct cfg_node {
	enum cfg_node_kind kind;
	struct cfg_mark mark;
	bool plain;		/* scalar written without quotes: only these can mean null, true or false */
	char *text;		/* scalar: the value, NUL-terminated (embedded NULs are refused) */
	struct cfg_entry *ents; /* sequence items or mapping pairs, in document order */
	size_t n, cap;
};

/*
 * Parses buf[0..len) (at most CFG_MAX_BYTES) into a tree. Refused with an error naming
 * file:line:column: YAML syntax errors, more than one document, anchors, aliases and tags
 * (none is needed, and aliases are the classic way to blow up a parser's output), a mapping
 * key that is not a scalar, a duplicate key, nesting deeper than CFG_MAX_DEPTH, more than
 * CFG_MAX_NODES nodes. An input without a document gives *out = NULL.
 */
int cfg_yaml_parse(const char *buf, size_t len, const char *file, struct cfg_node **out, struct al_error *err);
void cfg_node_free(struct cfg_node *n);
/* A deep copy of n (its marks' file names are shared, as they are not owned), or NULL: out of memory. */
struct cfg_node *cfg_node_clone(const struct cfg_node *n);

/* A plain "", "~" or "null" (any case of the word): YAML's null. */
bool cfg_node_is_null(const struct cfg_node *n);
/* The value of key in a mapping, or NULL. */
struct cfg_node *cfg_node_get(const struct cfg_node *map, const char *key);
/* Merges over into base and frees over (also on error): mappings merge key by key
 * (recursively); anything else in over replaces what base had. Keys only in over are appended
 * in over's order. 0 or -ENOMEM (base is then half merged: free it). */
int cfg_node_merge(struct cfg_node *base, struct cfg_node *over);

#endif
