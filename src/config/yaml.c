/* yaml.c — libyaml's event stream folded into a bounded tree, every node and key marked with file:line:column. */
#include "yaml.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "util/cleanup.h"
#include "util/error.h"

/* One open sequence or mapping while the events arrive; the explicit stack bounds the depth. */
struct frame {
	struct cfg_node *node;
	char *key; /* a mapping's key still waiting for its value */
	struct cfg_mark key_mark;
	const char *name; /* the key this collection hangs under (owned by the parent), or NULL */
	size_t index;	  /* its position in a parent sequence */
};

struct builder {
	const char *file;
	struct frame stack[CFG_MAX_DEPTH];
	size_t depth;
	struct cfg_node *root;
	size_t nodes;
	unsigned docs;
};

static struct cfg_mark to_mark(const struct builder *b, yaml_mark_t m)
{
	/* libyaml counts from 0; editors and compilers count from 1. */
	return (struct cfg_mark){b->file, (unsigned)m.line + 1, (unsigned)m.column + 1};
}

/* "a.b[2].c": where the value now being read sits, for messages (key: the pending key, or NULL). */
static void where(const struct builder *b, const char *key, char *out, size_t size)
{
	size_t len = 0;
	out[0] = 0;
	for (size_t i = 1; i <= b->depth && len < size; i++) {
		const struct frame *f = i < b->depth ? &b->stack[i] : NULL, *parent = &b->stack[i - 1];
		if (f && f->name)
			len += (size_t)snprintf(out + len, size - len, "%s%.64s", len ? "." : "", f->name);
		else if (f)
			len += (size_t)snprintf(out + len, size - len, "[%zu]", f->index);
		else if (parent->node->kind == CFG_MAP && (key || parent->key))
			len += (size_t)snprintf(out + len, size - len, "%s%.64s", len ? "." : "",
						key ? key : parent->key);
		else if (parent->node->kind == CFG_SEQ)
			len += (size_t)snprintf(out + len, size - len, "[%zu]", parent->node->n);
	}
}

/* "file:line:column: where: message", control characters replaced: a message must not be able
 * to drive the terminal it is printed on. */
__attribute__((format(printf, 5, 6))) static int fail(struct al_error *err, int code, struct cfg_mark m,
						      const struct builder *b, const char *fmt, ...)
{
	char msg[AL_ERROR_MAX], path[160] = "";
	va_list ap;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive: ap was just started */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (b)
		where(b, NULL, path, sizeof(path));
	int r = al_err(err, code, "%s:%u:%u: %s%s%s", m.file, m.line, m.column, path, *path ? ": " : "", msg);
	for (char *s = err ? err->msg : NULL; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
	return r;
}

static int count_node(struct builder *b, struct cfg_mark m, struct al_error *err)
{
	if (++b->nodes > CFG_MAX_NODES)
		return fail(err, E2BIG, m, b, "more than %u values in one file", CFG_MAX_NODES);
	return 0;
}

static int add_entry(struct cfg_node *parent, char *key, struct cfg_mark key_mark, struct cfg_node *value)
{
	if (parent->n == parent->cap) {
		size_t cap = parent->cap ? parent->cap * 2 : 4;
		struct cfg_entry *e = realloc(parent->ents, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		parent->ents = e;
		parent->cap = cap;
	}
	parent->ents[parent->n++] = (struct cfg_entry){key, key_mark, value};
	return 0;
}

/* Hangs a new node under the open collection (or makes it the root); takes node. */
static int attach(struct builder *b, struct cfg_node *node, struct al_error *err)
{
	if (b->depth == 0) {
		b->root = node;
		return 0;
	}
	struct frame *top = &b->stack[b->depth - 1];
	if (add_entry(top->node, top->key, top->key_mark, node) < 0) {
		cfg_node_free(node);
		return al_err(err, ENOMEM, "out of memory");
	}
	top->key = NULL;
	return 0;
}

/* The open mapping whose next scalar is a key, or NULL. */
static struct frame *wants_key(struct builder *b)
{
	struct frame *top = b->depth ? &b->stack[b->depth - 1] : NULL;
	return top && top->node->kind == CFG_MAP && !top->key ? top : NULL;
}

static int no_anchor_or_tag(const struct builder *b, const yaml_char_t *anchor, const yaml_char_t *tag,
			    struct cfg_mark m, struct al_error *err)
{
	if (anchor)
		return fail(err, EINVAL, m, b, "anchors (&%s) are not supported", (const char *)anchor);
	if (tag)
		return fail(err, EINVAL, m, b, "tags (%s) are not supported", (const char *)tag);
	return 0;
}

static int on_scalar(struct builder *b, const yaml_event_t *ev, struct cfg_mark m, struct al_error *err)
{
	const char *text = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	int r = no_anchor_or_tag(b, ev->data.scalar.anchor, ev->data.scalar.tag, m, err);
	if (r < 0 || (r = count_node(b, m, err)) < 0)
		return r;
	/* A "\0" escape would cut every later use of the string short: refuse it outright. */
	if (memchr(text, 0, len))
		return fail(err, EINVAL, m, b, "a string may not contain a NUL character");
	char *copy = strndup(text, len);
	if (!copy)
		return al_err(err, ENOMEM, "out of memory");
	struct frame *keyed = wants_key(b);
	if (keyed) {
		keyed->key = copy;
		keyed->key_mark = m;
		return 0;
	}
	struct cfg_node *n = calloc(1, sizeof(*n));
	if (!n) {
		free(copy);
		return al_err(err, ENOMEM, "out of memory");
	}
	*n = (struct cfg_node){
		.kind = CFG_SCALAR, .mark = m, .text = copy, .plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE};
	return attach(b, n, err);
}

static int on_start(struct builder *b, const yaml_event_t *ev, struct cfg_mark m, struct al_error *err)
{
	bool map = ev->type == YAML_MAPPING_START_EVENT;
	int r = map ? no_anchor_or_tag(b, ev->data.mapping_start.anchor, ev->data.mapping_start.tag, m, err)
		    : no_anchor_or_tag(b, ev->data.sequence_start.anchor, ev->data.sequence_start.tag, m, err);
	if (r < 0 || (r = count_node(b, m, err)) < 0)
		return r;
	if (wants_key(b))
		return fail(err, EINVAL, m, b, "a mapping key must be a string, not a %s",
			    map ? "mapping" : "sequence");
	if (b->depth == CFG_MAX_DEPTH)
		return fail(err, EINVAL, m, b, "nested deeper than %d levels", CFG_MAX_DEPTH);
	struct cfg_node *n = calloc(1, sizeof(*n));
	if (!n)
		return al_err(err, ENOMEM, "out of memory");
	*n = (struct cfg_node){.kind = map ? CFG_MAP : CFG_SEQ, .mark = m};
	if ((r = attach(b, n, err)) < 0)
		return r;
	struct frame f = {.node = n};
	if (b->depth) {
		const struct cfg_node *parent = b->stack[b->depth - 1].node;
		f.name = parent->ents[parent->n - 1].key;
		f.index = parent->n - 1;
	}
	b->stack[b->depth++] = f;
	return 0;
}

static int by_key_then_order(const void *a, const void *b)
{
	const struct cfg_entry *x = *(const struct cfg_entry *const *)a, *y = *(const struct cfg_entry *const *)b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x < y ? -1 : x > y);
}

/* Sorting finds duplicates in n log n: a mapping may have thousands of keys. */
static int check_duplicates(const struct builder *b, const struct cfg_node *map, struct al_error *err)
{
	if (map->n < 2)
		return 0;
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers to the entries is sorted */
	cleanup_free const struct cfg_entry **v = malloc(map->n * sizeof(*v));
	if (!v)
		return al_err(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < map->n; i++)
		v[i] = &map->ents[i];
	qsort(v, map->n, sizeof(*v), by_key_then_order); // NOLINT(bugprone-sizeof-expression): as above
	const struct cfg_entry *first_dup = NULL;
	for (size_t i = 1; i < map->n; i++)
		if (strcmp(v[i - 1]->key, v[i]->key) == 0 && (!first_dup || v[i] < first_dup))
			first_dup = v[i];
	if (!first_dup)
		return 0;
	char path[160];
	where(b, first_dup->key, path, sizeof(path));
	return fail(err, EINVAL, first_dup->key_mark, NULL, "%s: duplicate key", path);
}

static int on_end(struct builder *b, struct al_error *err)
{
	struct frame *top = &b->stack[b->depth - 1];
	free(top->key); /* libyaml always pairs keys with values; this is only defensive */
	top->key = NULL;
	int r = top->node->kind == CFG_MAP ? check_duplicates(b, top->node, err) : 0;
	b->depth--;
	return r;
}

static int on_event(struct builder *b, const yaml_event_t *ev, struct al_error *err)
{
	struct cfg_mark m = to_mark(b, ev->start_mark);
	switch (ev->type) {
	case YAML_NO_EVENT:
	case YAML_STREAM_START_EVENT:
	case YAML_STREAM_END_EVENT:
	case YAML_DOCUMENT_END_EVENT:
		return 0;
	case YAML_DOCUMENT_START_EVENT:
		return b->docs++ ? fail(err, EINVAL, m, NULL, "only one YAML document is allowed") : 0;
	case YAML_ALIAS_EVENT:
		return fail(err, EINVAL, m, b, "aliases (*%s) are not supported", (const char *)ev->data.alias.anchor);
	case YAML_SCALAR_EVENT:
		return on_scalar(b, ev, m, err);
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		return on_start(b, ev, m, err);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		return b->depth ? on_end(b, err) : fail(err, EINVAL, m, NULL, "unbalanced end of a collection");
	}
	return fail(err, EINVAL, m, NULL, "unexpected YAML event %d", (int)ev->type);
}

static int syntax_error(const yaml_parser_t *p, const char *file, struct al_error *err)
{
	if (p->error == YAML_MEMORY_ERROR)
		return al_err(err, ENOMEM, "%s: out of memory", file);
	const char *problem = p->problem ? p->problem : "invalid YAML";
	if (p->error == YAML_READER_ERROR)
		return al_err(err, EINVAL, "%s: byte %zu: %s", file, p->problem_offset, problem);
	struct cfg_mark m = {file, (unsigned)p->problem_mark.line + 1, (unsigned)p->problem_mark.column + 1};
	if (p->context)
		return fail(err, EINVAL, m, NULL, "YAML syntax: %s (%s at line %zu)", problem, p->context,
			    p->context_mark.line + 1);
	return fail(err, EINVAL, m, NULL, "YAML syntax: %s", problem);
}

static int run_parser(yaml_parser_t *p, struct builder *b, struct al_error *err)
{
	for (;;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(p, &ev))
			return syntax_error(p, b->file, err);
		int r = on_event(b, &ev, err);
		bool end = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
		if (r < 0 || end)
			return r;
	}
}

int cfg_yaml_parse(const char *buf, size_t len, const char *file, struct cfg_node **out, struct al_error *err)
{
	*out = NULL;
	if (len > CFG_MAX_BYTES)
		return al_err(err, EFBIG, "%s: larger than %u bytes", file, CFG_MAX_BYTES);
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser))
		return al_err(err, ENOMEM, "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)(buf ? buf : ""), len);
	/* UTF-8 only: a UTF-16 file is a mistake, not a config. */
	yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
	struct builder b = {.file = file};
	int r = run_parser(&parser, &b, err);
	yaml_parser_delete(&parser);
	for (size_t i = 0; i < b.depth; i++)
		free(b.stack[i].key);
	if (r < 0) {
		cfg_node_free(b.root); /* every open collection hangs below the root */
		return r;
	}
	*out = b.root;
	return 0;
}

/* Recursion is bounded: the parser refuses trees deeper than CFG_MAX_DEPTH and merging never
 * makes one deeper than the deeper of its inputs. */
/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by CFG_MAX_DEPTH */
void cfg_node_free(struct cfg_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++) {
		free(n->ents[i].key);
		cfg_node_free(n->ents[i].value);
	}
	free(n->ents);
	free(n->text);
	free(n);
}

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by CFG_MAX_DEPTH (see cfg_node_free) */
struct cfg_node *cfg_node_clone(const struct cfg_node *n)
{
	struct cfg_node *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	*c = (struct cfg_node){.kind = n->kind, .mark = n->mark, .plain = n->plain};
	if ((n->text && !(c->text = strdup(n->text))) || (n->n && !(c->ents = calloc(n->n, sizeof(*c->ents)))))
		goto fail;
	c->cap = n->n;
	for (size_t i = 0; i < n->n; i++) {
		struct cfg_entry *e = &c->ents[i];
		e->key_mark = n->ents[i].key_mark;
		if (n->ents[i].key && !(e->key = strdup(n->ents[i].key)))
			goto fail;
		c->n = i + 1; /* from here cfg_node_free releases the entry, value or not */
		if (!(e->value = cfg_node_clone(n->ents[i].value)))
			goto fail;
	}
	return c;
fail:
	cfg_node_free(c);
	return NULL;
}

bool cfg_node_is_null(const struct cfg_node *n)
{
	if (!n || n->kind != CFG_SCALAR || !n->plain)
		return false;
	return !n->text[0] || strcmp(n->text, "~") == 0 || strcasecmp(n->text, "null") == 0;
}

/* Looks among the first n entries only: see cfg_node_merge. */
static struct cfg_entry *find_in(const struct cfg_node *map, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(map->ents[i].key, key) == 0)
			return &map->ents[i];
	return NULL;
}

struct cfg_node *cfg_node_get(const struct cfg_node *map, const char *key)
{
	if (!map || map->kind != CFG_MAP)
		return NULL;
	struct cfg_entry *e = find_in(map, map->n, key);
	return e ? e->value : NULL;
}

/* Moves over's contents into base (whose old contents are freed) and frees over's shell. */
static void replace(struct cfg_node *base, struct cfg_node *over)
{
	for (size_t i = 0; i < base->n; i++) {
		free(base->ents[i].key);
		cfg_node_free(base->ents[i].value);
	}
	free(base->ents);
	free(base->text);
	*base = *over;
	free(over);
}

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by CFG_MAX_DEPTH (see cfg_node_free) */
int cfg_node_merge(struct cfg_node *base, struct cfg_node *over)
{
	if (base->kind != CFG_MAP || over->kind != CFG_MAP) {
		replace(base, over);
		return 0;
	}
	/* over's keys are unique (the parser checked), so only base's own keys need searching:
	 * keys appended here cannot match a later key of over. That keeps a huge mapping linear. */
	size_t n0 = base->n;
	base->mark = over->mark; /* a problem with the merged whole is best shown where it changed */
	int r = 0;
	for (size_t i = 0; i < over->n; i++) {
		struct cfg_entry *e = &over->ents[i], *b = r < 0 ? NULL : find_in(base, n0, e->key);
		if (r < 0) {
			cfg_node_free(e->value);
		} else if (!b) {
			r = add_entry(base, e->key, e->key_mark, e->value);
			if (r == 0)
				continue; /* the entry now belongs to base */
			cfg_node_free(e->value);
		} else if (b->value->kind == CFG_MAP && e->value->kind == CFG_MAP) {
			r = cfg_node_merge(b->value, e->value);
		} else {
			cfg_node_free(b->value);
			b->value = e->value;
			b->key_mark = e->key_mark;
		}
		free(e->key);
	}
	free(over->ents);
	free(over->text);
	free(over);
	return r;
}
