/* audit.c — `airlock audit tail [-n N] [--follow] [FILE]` and `airlock audit grep FIELD=VALUE... [FILE]`: the audit log, read safely. */
#include "cli/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "config/config.h"
#include "config/units.h"
#include "audit/audit.h"
#include "util/cleanup.h"

#define FOLLOW_POLL_MS 200
#define TAIL_MAX       1000000 /* records tail keeps in memory */

static const char audit_usage[] = "Usage: airlock audit tail [-n N] [-f|--follow] [FILE]\n"
				  "       airlock audit grep FIELD=VALUE... [FILE]\n"
				  "\n"
				  "tail   print the last N records (default 10); --follow then prints new records as\n"
				  "       they are written (across rotations) until interrupted\n"
				  "grep   print the records whose FIELD equals VALUE (every FIELD=VALUE given must\n"
				  "       hold). FIELD is a dotted path: event (start and end of a call that ran,\n"
				  "       call for one that did not, repair), call_id, tool, sandbox, risk.level,\n"
				  "       risk.rule, client.transport, client.peer, client.principal,\n"
				  "       approval.decision, approval.by (rule, auto, elicitation, http, terminal,\n"
				  "       timeout, unavailable, cancelled), result.status, params.language, ...\n"
				  "       Strings compare exactly; numbers, true, false and null by their JSON text\n"
				  "\n"
				  "FILE (- reads standard input) defaults to the configuration's audit.path, else\n"
				  "/var/log/airlock/audit.jsonl as root and $XDG_STATE_HOME/airlock/audit.jsonl\n"
				  "(~/.local/state/...) otherwise. Records print as compact JSON lines with every\n"
				  "non-ASCII and control character escaped, so nothing a request held can drive the\n"
				  "terminal. Torn or invalid lines (left by a crash mid-write) are skipped, and\n"
				  "counted on standard error.\n"
				  "Exit status: 0; grep: 1 when no record matched; 125 on error.\n";

/* ---- output ---------------------------------------------------------------------------------- */

/* Compact JSON, ASCII only; jansson leaves DEL as is, so it is escaped here as well. */
static char *render(const json_t *rec)
{
	cleanup_free char *text = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
	if (!text)
		return NULL;
	size_t dels = 0, n = strlen(text);
	for (size_t i = 0; i < n; i++)
		dels += text[i] == 0x7f;
	char *out = malloc(n + dels * 5 + 1);
	size_t o = 0;
	for (size_t i = 0; out && i < n; i++) {
		if (text[i] == 0x7f) {
			memcpy(out + o, "\\u007f", 6);
			o += 6;
		} else {
			out[o++] = text[i];
		}
	}
	if (out)
		out[o] = 0;
	return out;
}

static int print_record(json_t *rec, const char *line, size_t len, void *data)
{
	cleanup_free char *text = render(rec);
	if (!text)
		return -ENOMEM;
	return puts(text) < 0 ? -EIO : 0;
}

static void report_skipped(const char *name, size_t skipped)
{
	if (skipped)
		fprintf(stderr, "airlock: audit: %s: skipped %zu torn or invalid line%s\n", name, skipped,
			skipped == 1 ? "" : "s");
}

/* ---- the file ---------------------------------------------------------------------------------- */

/* FILE as given, else where the server writes (the configuration, else the default); NULL
 * when that cannot be known (reported). */
static char *log_path(const char *arg)
{
	if (arg) {
		char *copy = strdup(arg);
		if (!copy)
			cli_fail("out of memory");
		return copy;
	}
	char *path = NULL;
	struct cfg *c = NULL;
	struct al_error e = {0};
	if (cfg_load(cli_config_path(), &c, &e) < 0) {
		cli_fail("%s", e.msg);
		return NULL;
	}
	int r = c->audit.path ? ((path = strdup(c->audit.path)) ? 0 : -ENOMEM)
			      : audit_default_path(geteuid() == 0, &path);
	cfg_free(c);
	if (r < 0)
		cli_fail("audit: %s", r == -ENOMEM ? "out of memory" : "no audit.path configured and no $HOME");
	return r < 0 ? NULL : path;
}

/* path, if it is a regular file: -EINVAL for anything else. O_NONBLOCK: opening a FIFO (with no
 * writer) or a device must not hang the command; a regular file ignores the flag. */
static int open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static int open_log(const char *path, int *fd)
{
	if (strcmp(path, "-") == 0) {
		*fd = dup(0);
		return *fd < 0 ? cli_fail("audit: standard input: %s", strerror(errno)) : 0;
	}
	*fd = open_regular(path);
	if (*fd == -EINVAL)
		return cli_fail("audit: %s: not a regular file (an audit log is one; use - for standard input)", path);
	return *fd < 0 ? cli_fail("audit: %s: %s", path, strerror(-*fd)) : 0;
}

/* ---- tail -------------------------------------------------------------------------------------- */

/* The last cap records, rendered, in a ring. */
struct ring {
	char **v;
	size_t cap, n, head;
};

static int keep_last(json_t *rec, const char *line, size_t len, void *data)
{
	struct ring *ring = data;
	if (ring->cap == 0)
		return 0;
	char *text = render(rec);
	if (!text)
		return -ENOMEM;
	free(ring->v[ring->head]);
	ring->v[ring->head] = text;
	ring->head = (ring->head + 1) % ring->cap;
	ring->n += ring->n < ring->cap;
	return 0;
}

static int print_ring(struct ring *ring)
{
	int r = 0;
	for (size_t i = 0; i < ring->n; i++) {
		size_t at = (ring->head + ring->cap - ring->n + i) % ring->cap;
		if (puts(ring->v[at]) < 0)
			r = -EIO;
	}
	for (size_t i = 0; i < ring->cap; i++)
		free(ring->v[i]);
	free(ring->v);
	return fflush(stdout) == 0 ? r : -EIO;
}

static bool same_file(const char *path, int fd)
{
	struct stat a, b;
	return stat(path, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Prints what was appended since *offset. An unterminated last line may be a record still
 * being written, so it is left for the next round rather than counted. */
static int print_new(const char *path, int fd, uint64_t *offset)
{
	struct audit_read_stats st;
	struct al_error e = {0};
	if (lseek(fd, (off_t)*offset, SEEK_SET) < 0)
		return cli_fail("audit: %s: %s", path, strerror(errno));
	int r = audit_read(fd, print_record, NULL, &st, &e);
	*offset += st.consumed;
	report_skipped(path, st.skipped - st.torn_tail);
	if (r < 0)
		return cli_fail("%s", e.msg[0] ? e.msg : "audit: cannot write the output");
	return fflush(stdout) == 0 ? 0 : cli_fail("audit: cannot write the output");
}

/* Until interrupted: new records of path, reopening it when the writer rotates it away. */
static int follow(const char *path, int fd, uint64_t offset)
{
	const struct timespec poll = {0, FOLLOW_POLL_MS * 1000000L};
	for (;;) {
		struct stat st;
		if (print_new(path, fd, &offset) != 0)
			return AL_EXIT_FAILURE;
		/* Truncated in place (copytruncate): start again from its beginning. */
		if (fstat(fd, &st) == 0 && (uint64_t)st.st_size < offset)
			offset = 0;
		if (!same_file(path, fd) && access(path, F_OK) == 0) {
			/* Rotated: drain the old file (a racing record lands there), then switch. */
			if (print_new(path, fd, &offset) != 0)
				return AL_EXIT_FAILURE;
			int nfd = open_regular(path);
			if (nfd >= 0) {
				close(fd);
				fd = nfd;
				offset = 0;
				continue;
			}
		}
		nanosleep(&poll, NULL);
	}
}

static int tail(const char *path, size_t n, bool follow_it)
{
	cleanup_close int fd = -1;
	if (follow_it && strcmp(path, "-") == 0)
		return cli_fail("audit tail: --follow needs a file, not standard input");
	if (open_log(path, &fd) != 0)
		return AL_EXIT_FAILURE;
	struct ring ring = {.cap = n};
	if (n && !(ring.v = calloc(n, sizeof(char *))))
		return cli_fail("out of memory");
	struct audit_read_stats st;
	struct al_error e = {0};
	int r = audit_read(fd, keep_last, &ring, &st, &e);
	int pr = print_ring(&ring);
	if (r < 0)
		return cli_fail("%s", e.msg[0] ? e.msg : "audit: out of memory");
	if (pr < 0)
		return cli_fail("audit: cannot write the output");
	/* Following, a torn last line may still be completed: it is not counted yet. */
	report_skipped(path, st.skipped - (follow_it ? st.torn_tail : 0));
	return follow_it ? follow(path, steal_fd(fd), st.consumed) : 0;
}

static int cmd_tail(int argc, char **argv)
{
	static const struct option opts[] = {
		{"lines", required_argument, NULL, 'n'},
		{"follow", no_argument, NULL, 'f'},
		{"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	uint64_t n = 10;
	bool follow_it = false;
	struct al_error e = {0};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+n:fh", opts, NULL)) != -1) {
		/* al_parse_count reads "none" as unlimited: not a number of records to keep. */
		if (c == 'n' && (al_parse_count(optarg, TAIL_MAX, &n, &e) < 0 || n > TAIL_MAX))
			return cli_fail("audit tail: -n: %s", e.msg[0] ? e.msg : "expected a number of records");
		if (c == 'f')
			follow_it = true;
		if (c == 'c' && cli_set_config_path(optarg) != 0)
			return AL_EXIT_FAILURE;
		if (c == 'h')
			return fputs(audit_usage, stdout), 0;
		if (c == '?')
			return AL_EXIT_FAILURE;
	}
	if (argc - optind > 1)
		return cli_fail("audit tail: more than one FILE");
	cleanup_free char *path = log_path(optind < argc ? argv[optind] : NULL);
	return path ? tail(path, (size_t)n, follow_it) : AL_EXIT_FAILURE;
}

/* ---- grep -------------------------------------------------------------------------------------- */

struct filter {
	const char *arg; /* "FIELD=VALUE" */
	size_t field_len;
	const char *value;
};

struct grep {
	struct filter *f;
	size_t n;
	size_t matched;
};

/* FIELD=VALUE, FIELD a dotted path of letters, digits, '_' and '-' (so "./a=b" is a file). */
static bool parse_filter(const char *arg, struct filter *f)
{
	const char *eq = strchr(arg, '='), *dots = strstr(arg, "..");
	size_t n = eq ? (size_t)(eq - arg) : 0;
	if (n == 0 || strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != n ||
	    arg[0] == '.' || arg[n - 1] == '.' || (dots && dots < eq))
		return false;
	*f = (struct filter){.arg = arg, .field_len = n, .value = eq + 1};
	return true;
}

/* The value at the dotted path (list items by index), or NULL. */
static const json_t *lookup(const json_t *rec, const char *path, size_t len)
{
	const json_t *v = rec;
	while (v && len) {
		size_t part = strcspn(path, ".");
		part = part < len ? part : len;
		char key[256];
		snprintf(key, sizeof(key), "%.*s", (int)part, path);
		char *end;
		unsigned long i = strtoul(key, &end, 10);
		v = json_is_object(v)			? json_object_get(v, key)
		    : json_is_array(v) && !*end && *key ? json_array_get(v, i)
							: NULL;
		path += part + (part < len);
		len -= part + (part < len);
	}
	return v;
}

static bool holds(const json_t *rec, const struct filter *f)
{
	const json_t *v = lookup(rec, f->arg, f->field_len);
	if (!v)
		return false;
	if (json_is_string(v))
		return strlen(json_string_value(v)) == json_string_length(v) &&
		       strcmp(json_string_value(v), f->value) == 0;
	cleanup_free char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_PRESERVE_ORDER);
	return text && strcmp(text, f->value) == 0;
}

static int grep_one(json_t *rec, const char *line, size_t len, void *data)
{
	struct grep *g = data;
	for (size_t i = 0; i < g->n; i++)
		if (!holds(rec, &g->f[i]))
			return 0;
	g->matched++;
	return print_record(rec, line, len, NULL);
}

static int grep(const char *path, struct grep *g)
{
	cleanup_close int fd = -1;
	if (open_log(path, &fd) != 0)
		return AL_EXIT_FAILURE;
	struct audit_read_stats st;
	struct al_error e = {0};
	int r = audit_read(fd, grep_one, g, &st, &e);
	if (fflush(stdout) != 0 || r == -EIO)
		return cli_fail("audit: cannot write the output");
	if (r < 0)
		return cli_fail("%s", e.msg[0] ? e.msg : "audit: out of memory");
	report_skipped(path, st.skipped);
	return g->matched ? 0 : 1;
}

static int cmd_grep(int argc, char **argv)
{
	cleanup_free struct filter *f = calloc((size_t)argc, sizeof(*f));
	struct grep g = {.f = f};
	const char *file = NULL;
	if (!f)
		return cli_fail("out of memory");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return fputs(audit_usage, stdout), 0;
		if (!strcmp(a, "--config") && i + 1 < argc) {
			if (cli_set_config_path(argv[++i]) != 0)
				return AL_EXIT_FAILURE;
		} else if (a[0] == '-' && a[1]) {
			return cli_fail("audit grep: unknown option '%s'", a);
		} else if (parse_filter(a, &f[g.n])) {
			g.n++;
		} else if (file) {
			return cli_fail("audit grep: '%s' is neither FIELD=VALUE nor the only FILE", a);
		} else {
			file = a;
		}
	}
	if (g.n == 0)
		return cli_fail(
			"audit grep: give at least one FIELD=VALUE (usage: airlock audit grep FIELD=VALUE... [FILE])");
	cleanup_free char *path = log_path(file);
	return path ? grep(path, &g) : AL_EXIT_FAILURE;
}

int cli_audit(int argc, char **argv)
{
	if (cli_take_config(&argc, argv, false) != 0)
		return AL_EXIT_FAILURE;
	if (argc < 2)
		return fputs(audit_usage, stderr), AL_EXIT_FAILURE;
	const char *sub = argv[1];
	if (!strcmp(sub, "help") || !strcmp(sub, "-h") || !strcmp(sub, "--help"))
		return fputs(audit_usage, stdout), 0;
	if (strcmp(sub, "tail") == 0)
		return cmd_tail(argc - 1, argv + 1);
	if (strcmp(sub, "grep") == 0)
		return cmd_grep(argc - 1, argv + 1);
	return cli_fail("audit: unknown subcommand '%s' (expected tail or grep)", sub);
}
