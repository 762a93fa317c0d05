/* main.c — airlock-serve, what `airlock serve` runs: the sandbox manager over HTTP (the MCP
 * streamable HTTP transport at /mcp, a JSON API, approvals, metrics).
 *
 * A separate executable because libmicrohttpd cannot be linked statically here (its Debian build
 * needs GnuTLS and p11-kit, which ship no complete static libraries) while the airlock binary is
 * static for start-up speed; `airlock serve` execs this program from its own directory. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/http.h"
#include "service/service.h"
#include "util/cleanup.h"

#define SERVE_DEFAULT_LISTEN "127.0.0.1:8080"
#define SERVE_TOKEN_MAX 4096

static const char usage[] =
	"Usage: airlock serve [--http ADDR] [--token-file FILE] [--profile NAME] [--audit FILE]\n"
	"                     [--port-file FILE] [--config FILE]\n"
	"\n"
	"Keeps sandboxes for agents and serves them over HTTP: MCP (streamable HTTP) at /mcp,\n"
	"a JSON API under /v1 (docs/openapi.yaml), approvals at /v1/approvals, Prometheus\n"
	"metrics at /metrics.\n"
	"\n"
	"  --http ADDR        where to listen (default: server.http.listen, else " SERVE_DEFAULT_LISTEN ");\n"
	"                     anything but loopback requires a token\n"
	"  --token-file FILE  the bearer token clients must send (default: server.http.token_file)\n"
	"  --profile NAME     profile of sandboxes created without one (default untrusted-code-read)\n"
	"  --audit FILE       the audit log (default: audit.path, else /var/log/airlock/audit.jsonl\n"
	"                     as root, ~/.local/state/airlock/audit.jsonl)\n"
	"  --port-file FILE   write the bound port there once listening (for port 0)\n"
	"\n"
	"SIGTERM or SIGINT destroys every sandbox and exits 0.\n";

struct serve {
	const char *config, *listen, *token_file, *profile, *audit, *port_file;
	struct sbm *m;
	char token[SERVE_TOKEN_MAX]; /* a secret: never printed, wiped at exit */
};

static void log_stderr(void *ctx, enum mcp_log_level level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "airlock serve: %s: %s\n", mcp_log_level_name(level), msg);
}

static void stats(void *ctx, struct http_stats *out)
{
	struct sbm_stats st;
	sbm_stats(((struct serve *)ctx)->m, &st);
	*out = (struct http_stats){.sandboxes_live = st.live, .sandboxes_pooled = st.pooled,
				   .execs_running = st.execs_running};
}

static void ready(void *ctx, uint16_t port)
{
	struct serve *s = ctx;
	fprintf(stderr, "airlock serve: listening on port %u\n", (unsigned)port);
	if (!s->port_file)
		return;
	cleanup_free char *tmp = NULL;
	if (asprintf(&tmp, "%s.tmp", s->port_file) < 0)
		return;
	FILE *f = fopen(tmp, "we");
	if (!f)
		return;
	fprintf(f, "%u\n", (unsigned)port);
	if (fclose(f) == 0)
		rename(tmp, s->port_file);
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;
	fputs("airlock serve: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 125;
}

/* The token file's first line (a secret: never printed). */
static int read_token(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	bool ok = fgets(buf, (int)cap, f) != NULL;
	fclose(f);
	if (!ok)
		return -ENODATA;
	buf[strcspn(buf, "\r\n")] = 0;
	return buf[0] ? 0 : -ENODATA;
}

static int parse(struct serve *s, int argc, char **argv)
{
	static const struct option opts[] = {
		{"http", required_argument, NULL, 'H'},	     {"token-file", required_argument, NULL, 't'},
		{"profile", required_argument, NULL, 'p'},   {"audit", required_argument, NULL, 'a'},
		{"port-file", required_argument, NULL, 'P'}, {"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},	     {NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "+H:t:p:a:P:c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'H': s->listen = optarg; break;
		case 't': s->token_file = optarg; break;
		case 'p': s->profile = optarg; break;
		case 'a': s->audit = optarg; break;
		case 'P': s->port_file = optarg; break;
		case 'c': s->config = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 125;
		}
	}
	if (optind < argc)
		return fail("unexpected argument '%s'", argv[optind]);
	return -1;
}

/* The HTTP front end on the service. approval.channels: elicitation for MCP clients that can, the
 * queue behind /v1/approvals for everyone else (the JSON API, MCP clients without elicitation),
 * in the listed order. A channel left out is never used: without "http", a call that needs
 * approval over the JSON API is denied rather than parked where no reviewer is expected to look. */
static int serve_http(struct serve *s, struct service *svc, const char *token, int sfd)
{
	struct al_error e = {0};
	const struct cfg *cfg = svc->cfg;
	struct mgate_channels ch;
	mgate_channels(&cfg->approval, CFG_CHAN_HTTP, &ch);
	struct http_opts ho = {
		.size = sizeof(ho), .listen = s->listen ? s->listen : cfg->server.http_listen ? cfg->server.http_listen : SERVE_DEFAULT_LISTEN,
		.token = token[0] ? token : NULL, .mgr = &svc->api, .gate = &svc->gate, .approvals = ch.other ? svc->approvals : NULL,
		.server_version = AIRLOCK_VERSION, .stats = stats, .stats_ctx = s, .ready = ready, .ready_ctx = s,
		.log = log_stderr, .mcp_no_elicitation = !ch.elicitation, .mcp_queue_first = ch.other_first,
	};
	if (http_serve(&ho, sfd, &e) < 0)
		return fail("%s", e.msg);
	return 0;
}

/* service_opts.adjust: the token file is read before anything is opened (a bad one changes nothing). */
static int take_token(void *ctx, struct cfg *cfg)
{
	struct serve *s = ctx;
	const char *tf = s->token_file ? s->token_file : cfg->server.http_token_file;
	if (tf && read_token(tf, s->token, sizeof(s->token)) < 0)
		return fail("cannot read the token file %s (it must hold the token on its first line)", tf);
	return 0;
}

int main(int argc, char **argv)
{
	struct serve s = {0};
	int rc = parse(&s, argc, argv);
	if (rc >= 0)
		return rc;
	rc = 125;
	struct al_error e = {0};
	struct service *svc = NULL;
	int sfd = service_stop_signals(false);
	if (sfd < 0) {
		fail("signalfd: %s", strerror(-sfd));
		goto out;
	}
	struct service_opts so = {.size = sizeof(so), .config = s.config, .profile = s.profile, .audit = s.audit,
				  .transport = "http", .adjust = take_token, .adjust_ctx = &s};
	int r = service_open(&so, &svc, &e);
	if (r < 0) {
		if (r != -ECANCELED)
			fail("%s", e.msg);
		goto out;
	}
	s.m = svc->mgr;
	rc = serve_http(&s, svc, s.token, sfd);
out:
	service_close(svc); /* every sandbox is destroyed: no process, cgroup or workspace is left */
	explicit_bzero(s.token, sizeof(s.token));
	if (sfd >= 0)
		close(sfd);
	return rc;
}
