/* gen-config.c — build tool: parses the embedded configuration once, with the loader's own parser, and writes its trees as C data. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/yaml.h"

/*
 * Every start used to run libyaml over the embedded defaults (0.33 M of the 1.27 M instructions
 * of `airlock run -- /bin/true`, callgrind). The trees written here are what cfg_yaml_parse
 * (and cfg_node_merge, for the whole) make of defaults.c's text, marks included, so a load
 * converts them as it converted the parsed ones; defaults.c stays the one source, and
 * test_config compares these trees with a parse of it at run time.
 */

#define MAX_NODES 4096 /* the defaults have a few hundred */

/* Both trees in one pair of arrays: the job's shares every subtree that is equal in the whole
 * (network, profiles, languages), so each is written, and relocated at every start, once. */
struct flat {
	const struct cfg_node *node[MAX_NODES];
	size_t first_ent[MAX_NODES]; /* index of the node's first entry in the entry array */
	size_t nnodes, nents;
};

static bool same_mark(struct cfg_mark a, struct cfg_mark b)
{
	return !a.file == !b.file && a.line == b.line && a.column == b.column;
}

static bool same_text(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Equal in every field the loader reads, marks included. */
/* NOLINTNEXTLINE(misc-no-recursion): the parser bounds the depth (CFG_MAX_DEPTH) */
static bool same_tree(const struct cfg_node *a, const struct cfg_node *b)
{
	if (a->kind != b->kind || !same_mark(a->mark, b->mark) || a->plain != b->plain ||
	    !same_text(a->text, b->text) || a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (!same_text(a->ents[i].key, b->ents[i].key) ||
		    !same_mark(a->ents[i].key_mark, b->ents[i].key_mark) ||
		    !same_tree(a->ents[i].value, b->ents[i].value))
			return false;
	return true;
}

/* The index of a node numbered before that is n or equal to it, or f->nnodes. */
static size_t find(const struct flat *f, const struct cfg_node *n)
{
	size_t i = 0;
	while (i < f->nnodes && f->node[i] != n && !same_tree(f->node[i], n))
		i++;
	return i;
}

/* Numbers the nodes in preorder and gives each node's entries consecutive slots; a subtree
 * equal to one already numbered is not numbered again. */
/* NOLINTNEXTLINE(misc-no-recursion): the parser bounds the depth (CFG_MAX_DEPTH) */
static int number(struct flat *f, const struct cfg_node *n)
{
	if (find(f, n) < f->nnodes)
		return 0;
	if (f->nnodes == MAX_NODES)
		return -1;
	size_t i = f->nnodes++;
	f->node[i] = n;
	f->first_ent[i] = f->nents;
	f->nents += n->n;
	for (size_t k = 0; k < n->n; k++)
		if (number(f, n->ents[k].value) < 0)
			return -1;
	return 0;
}

/* A C string literal: printable ASCII as is, everything else (and '?', against trigraphs) as
 * a three-digit octal escape, which never swallows a following digit. */
static void literal(FILE *out, const char *s)
{
	if (!s) {
		fputs("NULL", out);
		return;
	}
	fputs("(char *)\"", out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\' && *p != '?')
			fputc(*p, out);
		else
			fprintf(out, "\\%03o", *p);
	fputc('"', out);
}

static const char *kind_name(enum cfg_node_kind k)
{
	return k == CFG_MAP ? "CFG_MAP" : k == CFG_SEQ ? "CFG_SEQ" : "CFG_SCALAR";
}

static void emit(FILE *out, const struct flat *f)
{
	fprintf(out, "static const struct cfg_node nodes[%zu];\n", f->nnodes);
	fprintf(out, "static const struct cfg_entry entries[%zu] = {\n", f->nents);
	for (size_t i = 0; i < f->nnodes; i++)
		for (size_t k = 0; k < f->node[i]->n; k++) {
			const struct cfg_entry *e = &f->node[i]->ents[k];
			fputs("\t{", out);
			literal(out, e->key);
			/* A sequence item has no key, and no key mark. */
			fprintf(out, ", {%s, %u, %u}, (struct cfg_node *)&nodes[%zu]},\n",
				e->key_mark.file ? "cfg_defaults_name" : "NULL", e->key_mark.line, e->key_mark.column,
				find(f, e->value));
		}
	fprintf(out, "};\nstatic const struct cfg_node nodes[%zu] = {\n", f->nnodes);
	for (size_t i = 0; i < f->nnodes; i++) {
		const struct cfg_node *n = f->node[i];
		fprintf(out, "\t{%s, {cfg_defaults_name, %u, %u}, %s, ", kind_name(n->kind), n->mark.line,
			n->mark.column, n->plain ? "true" : "false");
		literal(out, n->text);
		if (n->n)
			fprintf(out, ", (struct cfg_entry *)&entries[%zu], %zu, %zu},\n", f->first_ent[i], n->n, n->n);
		else
			fputs(", NULL, 0, 0},\n", out);
	}
	fputs("};\n", out);
}

static struct cfg_node *parse(const char *text)
{
	struct cfg_node *n = NULL;
	struct al_error err = {0};
	if (cfg_yaml_parse(text, strlen(text), CFG_DEFAULTS_NAME, &n, &err) < 0 || !n || n->kind != CFG_MAP) {
		fprintf(stderr, "gen-config: the embedded defaults: %s\n", err.msg[0] ? err.msg : "not a mapping");
		cfg_node_free(n);
		return NULL;
	}
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTPUT.c\n", argv[0]);
		return 2;
	}
	struct cfg_node *job = parse(cfg_default_yaml), *all = parse(cfg_default_yaml);
	struct cfg_node *service = parse(cfg_default_service_yaml);
	if (!job || !all || !service || cfg_node_merge(all, service) < 0)
		return 1;
	FILE *f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	fprintf(f, "/* Generated by tools/gen-config.c at build time from src/config/defaults.c: do not edit. */\n"
		   "#include \"config/config.h\"\n"
		   "#include \"config/yaml.h\"\n\n"
		   "/* The trees are const, so they live in memory made read-only after relocation; the\n"
		   " * node's pointer members are not (a parsed tree is built and freed through them). */\n"
		   "#pragma GCC diagnostic ignored \"-Wcast-qual\"\n\n");
	static struct flat flat;
	int r = number(&flat, all);
	r = r ?: number(&flat, job);
	size_t job_root = find(&flat, job);
	if (r < 0)
		fprintf(stderr, "gen-config: more than %d nodes\n", MAX_NODES);
	else
		emit(f, &flat);
	fprintf(f,
		"\nconst struct cfg_node *const cfg_defaults_all = &nodes[0];\n"
		"const struct cfg_node *const cfg_defaults_job = &nodes[%zu];\n",
		job_root);
	cfg_node_free(job);
	cfg_node_free(all);
	return fclose(f) == 0 && r == 0 ? 0 : 1;
}
