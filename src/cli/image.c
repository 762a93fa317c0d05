/* image.c — `airlock image import|build|ls|inspect|rm|gc`: the image store's front end. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "config/units.h"
#include "config/yaml.h"
#include "image/image.h"
#include "util/cleanup.h"

static const char usage[] =
	"Usage: airlock image COMMAND [OPTIONS]\n"
	"\n"
	"  import FILE|DIR [NAME]   an OCI image layout, oci-archive or docker save tarball\n"
	"  build NAME --packages P1,P2,... [--suite S] [--mirror URL] [--variant V] [--recommends]\n"
	"  build --recipe FILE      a Debian environment made by mmdebstrap (a YAML recipe:\n"
	"                           name, packages, suite, mirror, variant, epoch, recommends);\n"
	"                           the packages' Recommends only with --recommends\n"
	"  ls [--json]              names, digests, sizes, whether in use\n"
	"  inspect NAME             what was recorded: digest, size, the config's Env, WorkingDir...\n"
	"  rm NAME                  remove a name (and its content when no other name keeps it);\n"
	"                           refused while a sandbox uses the image\n"
	"  gc                       remove unnamed, unused content and interrupted imports\n"
	"\n"
	"Options: --store DIR (default $AIRLOCK_IMAGES, /var/lib/airlock/images as root,\n"
	"else ~/.local/share/airlock/images), --max-size SIZE (what an image may unpack to,\n"
	"default 4G).\n"
	"Run one with 'airlock run --image NAME -- CMD' (every backend).\n";

struct image_args {
	const char *store, *packages, *suite, *mirror, *variant, *recipe;
	struct img_limits lim;
	bool json, recommends;
	int first; /* index of the first operand */
};

/* The string options, by getopt value: where each one goes. */
static const char **string_slot(struct image_args *a, int c)
{
	switch (c) {
	case 's':
		return &a->store;
	case 'p':
		return &a->packages;
	case 'S':
		return &a->suite;
	case 'M':
		return &a->mirror;
	case 'V':
		return &a->variant;
	case 'r':
		return &a->recipe;
	default:
		return NULL;
	}
}

static int parse(int argc, char **argv, struct image_args *a)
{
	static const struct option opts[] = {
		{"store", required_argument, NULL, 's'},
		{"max-size", required_argument, NULL, 'm'},
		{"packages", required_argument, NULL, 'p'},
		{"suite", required_argument, NULL, 'S'},
		{"mirror", required_argument, NULL, 'M'},
		{"variant", required_argument, NULL, 'V'},
		{"recipe", required_argument, NULL, 'r'},
		{"json", no_argument, NULL, 'j'},
		{"recommends", no_argument, NULL, 'R'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	*a = (struct image_args){.lim = {IMG_DEFAULT_MAX_BYTES, IMG_DEFAULT_MAX_ENTRIES}};
	struct al_error e = {0};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		const char **slot = string_slot(a, c);
		if (slot)
			*slot = optarg;
		else if (c == 'm' && al_parse_size(optarg, &a->lim.max_bytes, &e) < 0)
			return -cli_fail("--max-size: %s", e.msg);
		else if (c == 'j')
			a->json = true;
		else if (c == 'R')
			a->recommends = true;
		else if (c == 'h')
			return fputs(usage, stdout), -1000;
		else if (c == '?')
			return -AL_EXIT_FAILURE;
	}
	a->first = optind;
	return 0;
}

/* NAME from FILE: its base name without the archive's suffixes. */
static void default_name(const char *src, char *name, size_t size)
{
	const char *base;
	size_t n = strlen(src);
	while (n > 1 && src[n - 1] == '/')
		n--;
	base = memrchr(src, '/', n);
	base = base ? base + 1 : src;
	snprintf(name, size, "%.*s", (int)(src + n - base), base);
	char *dot = strchr(name, '.');
	if (dot && dot != name)
		*dot = 0;
}

static int do_import(struct img_store *s, struct image_args *a, int argc, char **argv)
{
	if (argc - a->first < 1 || argc - a->first > 2)
		return cli_fail("usage: airlock image import FILE|DIR [NAME]");
	char name[IMG_NAME_MAX], digest[IMG_DIGEST_LEN];
	if (argc - a->first == 2)
		snprintf(name, sizeof(name), "%s", argv[a->first + 1]);
	else
		default_name(argv[a->first], name, sizeof(name));
	struct al_error e = {0};
	if (img_import(s, argv[a->first], name, &a->lim, digest, &e) < 0)
		return cli_fail("image import: %s", e.msg);
	printf("%s %s\n", name, digest);
	return 0;
}

static int print_entry(void *ctx, const struct img_entry *e)
{
	const bool *json = ctx;
	if (*json)
		printf("{\"name\":\"%s\",\"digest\":\"%s\",\"bytes\":%llu,\"in_use\":%s}\n", e->name, e->digest,
		       (unsigned long long)e->bytes, e->in_use ? "true" : "false");
	else
		printf("%-24s %-19.19s %10.1fM%s\n", e->name, e->digest, (double)e->bytes / (1 << 20),
		       e->in_use ? "  in use" : "");
	return 0;
}

static int do_ls(struct img_store *s, struct image_args *a)
{
	struct al_error e = {0};
	if (!a->json)
		printf("%-24s %-19s %11s\n", "NAME", "DIGEST", "SIZE");
	return s && img_list(s, print_entry, &a->json, &e) < 0 ? cli_fail("image ls: %s", e.msg) : 0;
}

static int do_one(struct img_store *s, const char *verb, int argc, char **argv, int first)
{
	struct al_error e = {0};
	if (argc - first != 1)
		return cli_fail("usage: airlock image %s NAME", verb);
	if (strcmp(verb, "rm") == 0)
		return img_remove(s, argv[first], &e) < 0 ? cli_fail("image rm: %s", e.msg) : 0;
	cleanup_free char *json = NULL;
	if (img_inspect(s, argv[first], &json, &e) < 0)
		return cli_fail("image inspect: %s", e.msg);
	puts(json);
	return 0;
}

/* The progress indicator: elapsed time, the phase and apt's counts (img_progress), one terminal
 * line kept up to date; without a terminal, a line at each change of phase and at each tenth of
 * the packages set up, so a log shows the same without thousands of lines. */
struct progress {
	time_t start;
	bool tty;
	struct img_progress st;
	char shown_phase[80];
	unsigned shown_tenth;
};

static void show_progress(void *ctx, const char *line)
{
	struct progress *p = ctx;
	long t = (long)(time(NULL) - p->start);
	if (strcmp(line, "unpacking") == 0) /* img_build's own last step */
		snprintf(p->st.phase, sizeof(p->st.phase), "storing the image"), p->st.total = 0;
	else
		img_progress_feed(&p->st, line);
	char text[256];
	img_progress_text(&p->st, text, sizeof(text));
	unsigned tenth = p->st.total ? p->st.set_up * 10 / p->st.total : 0;
	if (p->tty) {
		fprintf(stderr, "\r\033[K[%02ld:%02ld] %.110s", t / 60, t % 60, text);
	} else if (strcmp(p->st.phase, p->shown_phase) != 0 || tenth != p->shown_tenth) {
		fprintf(stderr, "[%02ld:%02ld] %s\n", t / 60, t % 60, text);
		snprintf(p->shown_phase, sizeof(p->shown_phase), "%s", p->st.phase);
		p->shown_tenth = tenth;
	}
	/* mmdebstrap's warnings and errors are shown as they are, whatever the phase. */
	if (!strncmp(line, "W: ", 3) || !strncmp(line, "E: ", 3))
		fprintf(stderr, "%s%s\n", p->tty ? "\r\033[K" : "", line);
}

static char **split_packages(const char *list)
{
	size_t n = 1;
	for (const char *p = list; *p; p++)
		n += *p == ',';
	char **v = calloc(n + 1, sizeof(char *));
	char *copy = strdup(list), *save = NULL;
	size_t i = 0;
	for (char *t = copy && v ? strtok_r(copy, ", ", &save) : NULL; t; t = strtok_r(NULL, ", ", &save))
		v[i++] = strdup(t);
	free(copy);
	return v;
}

static void spec_free(struct img_build_spec *sp)
{
	free(sp->name);
	free(sp->suite);
	free(sp->mirror);
	free(sp->variant);
	for (size_t i = 0; sp->packages && sp->packages[i]; i++)
		free(sp->packages[i]);
	free(sp->packages);
}

static char *scalar(const struct cfg_node *map, const char *key)
{
	const struct cfg_node *v = cfg_node_get(map, key);
	return v && v->kind == CFG_SCALAR && !cfg_node_is_null(v) ? strdup(v->text) : NULL;
}

/* A recipe: name, packages (a list), suite, mirror, variant, epoch, recommends (true|false). */
static int load_recipe(const char *file, struct img_build_spec *sp)
{
	FILE *f = fopen(file, "re");
	if (!f)
		return cli_fail("image build: %s: %m", file);
	cleanup_free char *buf = malloc(CFG_MAX_BYTES + 1);
	size_t n = buf ? fread(buf, 1, CFG_MAX_BYTES + 1, f) : 0;
	fclose(f);
	struct cfg_node *root = NULL;
	struct al_error e = {0};
	if (!buf || n > CFG_MAX_BYTES || cfg_yaml_parse(buf, n, file, &root, &e) < 0 || !root ||
	    root->kind != CFG_MAP) {
		cfg_node_free(root);
		return cli_fail("image build: %s: %s", file, e.msg[0] ? e.msg : "not a recipe (a YAML mapping)");
	}
	const struct cfg_node *pk = cfg_node_get(root, "packages");
	sp->name = scalar(root, "name");
	sp->suite = scalar(root, "suite");
	sp->mirror = scalar(root, "mirror");
	sp->variant = scalar(root, "variant");
	cleanup_free char *epoch = scalar(root, "epoch");
	cleanup_free char *recommends = scalar(root, "recommends");
	sp->recommends = recommends && strcmp(recommends, "true") == 0;
	sp->epoch = epoch ? strtoull(epoch, NULL, 10) : 0;
	sp->packages = calloc((pk && pk->kind == CFG_SEQ ? pk->n : 0) + 1, sizeof(char *));
	for (size_t i = 0; sp->packages && pk && pk->kind == CFG_SEQ && i < pk->n; i++)
		sp->packages[i] = strdup(pk->ents[i].value->kind == CFG_SCALAR ? pk->ents[i].value->text : "");
	cfg_node_free(root);
	return 0;
}

static int do_build(struct img_store *s, struct image_args *a, int argc, char **argv)
{
	struct img_build_spec spec = {0};
	struct al_error e = {0};
	if (a->recipe && load_recipe(a->recipe, &spec) != 0)
		return AL_EXIT_FAILURE;
	if (!a->recipe) {
		if (argc - a->first != 1 || !a->packages)
			return cli_fail("usage: airlock image build NAME --packages P1,P2,... (or --recipe FILE)");
		spec.name = strdup(argv[a->first]);
		spec.packages = split_packages(a->packages);
	}
	spec.suite = a->suite ? strdup(a->suite) : spec.suite;
	spec.mirror = a->mirror ? strdup(a->mirror) : spec.mirror;
	spec.variant = a->variant ? strdup(a->variant) : spec.variant;
	spec.recommends = spec.recommends || a->recommends;
	struct progress p = {.start = time(NULL), .tty = isatty(2)};
	char digest[IMG_DIGEST_LEN];
	int r = img_build(s, &spec, &a->lim, show_progress, &p, digest, &e);
	if (p.tty)
		fputs("\r\033[K", stderr);
	if (r == 0)
		printf("%s %s\n", spec.name, digest);
	else
		r = cli_fail("image build: %s", e.msg);
	spec_free(&spec);
	return r;
}

int cli_image(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help"))
		return fputs(usage, argc < 2 ? stderr : stdout), argc < 2 ? AL_EXIT_FAILURE : 0;
	const char *verb = argv[1];
	struct image_args a;
	int r = parse(argc - 1, argv + 1, &a);
	if (r < 0)
		return r == -1000 ? 0 : -r;
	struct img_store s;
	struct al_error e = {0};
	bool writes = strcmp(verb, "ls") != 0 && strcmp(verb, "inspect") != 0;
	r = img_store_open(&s, a.store, writes, &e);
	if (r == -ENOENT && strcmp(verb, "ls") == 0)
		return do_ls(NULL, &a); /* no store yet: no images */
	if (r < 0)
		return cli_fail("image %s: %s", verb, e.msg);
	if (!strcmp(verb, "import"))
		r = do_import(&s, &a, argc - 1, argv + 1);
	else if (!strcmp(verb, "build"))
		r = do_build(&s, &a, argc - 1, argv + 1);
	else if (!strcmp(verb, "ls"))
		r = do_ls(&s, &a);
	else if (!strcmp(verb, "inspect") || !strcmp(verb, "rm"))
		r = do_one(&s, verb, argc - 1, argv + 1, a.first);
	else if (!strcmp(verb, "gc")) {
		unsigned freed = 0;
		r = img_gc(&s, &freed, &e) < 0 ? cli_fail("image gc: %s", e.msg) : (printf("removed %u\n", freed), 0);
	} else
		r = cli_fail("unknown image command '%s' (try 'airlock image help')", verb);
	img_store_close(&s);
	return r;
}
