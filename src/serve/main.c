/* main.c — airlock-serve, what `airlock serve` runs: the sandbox manager over HTTP (the MCP
 * streamable HTTP transport at /mcp, a JSON API, approvals, metrics).
 *
 * A separate executable because libmicrohttpd cannot be linked statically here (its Debian build
 * needs GnuTLS and p11-kit, which ship no complete static libraries) while the airlock binary is
 * static for start-up speed; `airlock serve` execs this program from its own directory. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "config/config.h"
#include "http/http.h"
#include "manager/approval.h"
#include "manager/audit.h"
#include "manager/mgate.h"
#include "manager/sbmgr.h"
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

int main(int argc, char **argv)
{
	struct serve s = {0};
	int rc = parse(&s, argc, argv);
	if (rc >= 0)
		return rc;
	rc = 125;
	struct al_error e = {0};
	struct cfg *cfg = NULL;
	struct audit_log *log = NULL;
	struct apq *q = NULL;
	int sfd = -1;
	char token[SERVE_TOKEN_MAX] = "";
	cleanup_free char *fallback = NULL;
	if (cfg_load(s.config, &cfg, &e) < 0) {
		fail("%s", e.msg);
		goto out;
	}
	const char *tf = s.token_file ? s.token_file : cfg->server.http_token_file;
	int r = tf ? read_token(tf, token, sizeof(token)) : 0;
	if (r < 0) {
		fail("cannot read the token file %s (it must hold the token on its first line)", tf);
		goto out;
	}
	if (!s.audit && !cfg->audit.path && audit_default_path(geteuid() == 0, &fallback) < 0) {
		fail("%s", "no audit log path (set audit.path or --audit)");
		goto out;
	}
	struct audit_options ao;
	audit_options_from_cfg(&cfg->audit, fallback, &ao);
	if (s.audit)
		ao.path = s.audit;
	if (audit_open(&ao, &log, &e) < 0 || apq_new(&q) < 0) {
		fail("%s", log ? "out of memory" : e.msg);
		goto out;
	}
	/* Before any thread exists, so every thread inherits the mask (see cli/mcp.c). */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((sfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0) {
		fail("signalfd: %s", strerror(errno));
		goto out;
	}
	al_cleanup_stale();
	struct sbm_opts so = {.size = sizeof(so), .cfg = cfg, .default_profile = s.profile};
	if (sbm_new(&so, &s.m, &e) < 0) {
		fail("%s", e.msg);
		goto out;
	}
	struct srv_mgr_api api;
	sbm_api(s.m, &api);
	struct mgate mg = {.cfg = cfg, .log = log, .transport = "http"};
	struct srv_gate gate;
	mgate_init(&mg, &gate);
	/* approval.channels: elicitation for MCP clients that can, the queue behind /v1/approvals
	 * for everyone else (the JSON API, MCP clients without elicitation), in the listed order. A
	 * channel left out is never used: without "http", a call that needs approval over the JSON
	 * API is denied rather than parked where no reviewer is expected to look. */
	struct mgate_channels ch;
	mgate_channels(&cfg->approval, CFG_CHAN_HTTP, &ch);
	struct http_opts ho = {
		.size = sizeof(ho), .listen = s.listen ? s.listen : cfg->server.http_listen ? cfg->server.http_listen : SERVE_DEFAULT_LISTEN,
		.token = token[0] ? token : NULL, .mgr = &api, .gate = &gate, .approvals = ch.other ? q : NULL,
		.server_version = AIRLOCK_VERSION, .stats = stats, .stats_ctx = &s, .ready = ready, .ready_ctx = &s,
		.log = log_stderr, .mcp_no_elicitation = !ch.elicitation, .mcp_queue_first = ch.other_first,
	};
	if (http_serve(&ho, sfd, &e) < 0)
		fail("%s", e.msg);
	else
		rc = 0;
out:
	sbm_free(s.m); /* every sandbox is destroyed: no process, cgroup or workspace is left */
	apq_free(q);
	audit_close(log);
	cfg_free(cfg);
	explicit_bzero(token, sizeof(token));
	if (sfd >= 0)
		close(sfd);
	return rc;
}
