/* main.c — airlock-serve, what `airlock serve` runs: the sandbox manager over HTTP (the MCP
 * streamable HTTP transport at /mcp, a JSON API, approvals, metrics).
 *
 * A separate executable because libmicrohttpd cannot be linked statically here (its Debian build
 * needs GnuTLS and p11-kit, which ship no complete static libraries) while the airlock binary is
 * static for start-up speed; `airlock serve` execs this program from its own directory. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "http/http.h"
#include "service/service.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fsutil.h"

static const char usage[] =
	"Usage: airlock serve [--socket PATH|none] [--http ADDR] [--token-file FILE]\n"
	"                     [--approver-token-file FILE] [--profile NAME] [--audit FILE]\n"
	"                     [--port-file FILE] [--approve MODE] [--config FILE]\n"
	"                     [--state-dir DIR|none]\n"
	"\n"
	"Keeps sandboxes for agents and serves them over HTTP: MCP (streamable HTTP) at /mcp,\n"
	"a JSON API under /v1 (docs/openapi.yaml), approvals at /v1/approvals, Prometheus\n"
	"metrics at /metrics.\n"
	"\n"
	"Every request has a principal, who owns the sandboxes and MCP sessions it creates (others\n"
	"get 404) and never approves its own calls. By default the server listens on a Unix socket\n"
	"only (mode 0600), whose peers are known by uid; TCP always needs a bearer token.\n"
	"\n"
	"  --socket PATH      the Unix socket (default: server.socket, else /run/airlock/serve.sock\n"
	"                     as root, $XDG_RUNTIME_DIR/airlock/serve.sock otherwise); none: no socket\n"
	"  --http ADDR        also listen on TCP (default: server.http.listen, else no TCP)\n"
	"  --token-file FILE  client tokens for TCP, one per line, \"TOKEN\" or \"NAME TOKEN\"\n"
	"                     (default: server.http.token_file, else /var/lib/airlock/serve.token as\n"
	"                     root, ~/.config/airlock/serve.token); created with one new token if\n"
	"                     missing; refused if its group or others may read it\n"
	"  --approver-token-file FILE  approver tokens for TCP (decide approvals, run nothing)\n"
	"  --profile NAME     profile of sandboxes created without one (default untrusted-code-read)\n"
	"  --audit FILE       the audit log (default: audit.path, else /var/log/airlock/audit.jsonl\n"
	"                     as root, ~/.local/state/airlock/audit.jsonl)\n"
	"  --port-file FILE   write the bound TCP port there once listening (for port 0)\n"
	"  --state-dir DIR    keep clients' sandboxes there (workspace files, owner, metadata,\n"
	"                     lifetime left): a stop keeps them, and a server started again with\n"
	"                     the same DIR brings them back under the same ids; a call's file\n"
	"                     changes are on disk before its result is sent; none: sandboxes end\n"
	"                     with the server (default: server.state_dir, else $AIRLOCK_STATE_DIR,\n"
	"                     else /var/lib/airlock/sandboxes as root, ~/.local/state/airlock/\n"
	"                     sandboxes otherwise)\n"
	"\n"
	"Started by systemd with a socket (airlock.socket: LISTEN_PID, LISTEN_FDS), it serves on that\n"
	"socket, one listening Unix stream socket, instead of making its own.\n";

static const char usage_tail[] =
	"                     (elicitation for MCP clients that can, then the approvals queue).\n"
	"                     Headless agents on root's socket: root is the only default\n"
	"                     approver and never approves its own calls; choose auto=HIGH, or\n"
	"                     name reviewers (server.approver_uids, --approver-token-file).\n"
	"\n"
	"SIGTERM or SIGINT ends every sandbox's processes, keeps the sandboxes in the state\n"
	"directory (or destroys them with --state-dir none) and exits 0.\n";

/* The usage text; the --approve lines come from the table airlock mcp shares (service/mgate.c). */
static void print_usage(FILE *f)
{
	char approve[2048];
	mgate_approve_help(CFG_CHAN_HTTP, 21, approve, sizeof(approve));
	fputs(usage, f);
	fputs(approve, f);
	fputs(usage_tail, f);
}

_Static_assert(sizeof(uid_t) == sizeof(unsigned), "server.approver_uids holds uids as unsigned");

struct serve {
	const char *config, *listen, *token_file, *approver_token_file, *socket, *profile, *audit, *port_file;
	const char *state_dir; /* --state-dir ("none": nothing kept), or NULL */
	int passed_fd;	       /* the socket systemd passed (0: none), and its path for the log */
	char passed_path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	char *socket_default, *token_default, *state_default;
	struct service_opts so; /* its state_dir is settled in listeners(), once the configuration is read */
	struct http_token *tokens;
	size_t ntokens;
	struct sbm *m;
	struct mgate_approve approve;	/* --approve */
	struct mgate_channels channels; /* where calls are asked, settled in listeners() */
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
	*out = (struct http_stats){.sandboxes_live = st.live,
				   .sandboxes_pooled = st.pooled,
				   .sandboxes_paused = st.paused,
				   .execs_running = st.execs_running};
}

/* The approver's console's sandbox view: every principal's. */
static json_t *sandboxes(void *ctx)
{
	return sbm_list_all(((struct serve *)ctx)->m);
}

static char *sandbox_owner(void *ctx, const char *id)
{
	return sbm_owner_of(((struct serve *)ctx)->m, id);
}

static json_t *snapshots(void *ctx)
{
	return sbm_snapshots_all(((struct serve *)ctx)->m);
}

/* The listening lines are the HTTP front end's log (one per listener, with its rules): here only
 * the port file. */
static void ready(void *ctx, uint16_t port)
{
	struct serve *s = ctx;
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
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive: ap was just started */
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 125;
}

/* The defaults of a server run by this user: the socket beside other per-user runtime files, the
 * token beside other per-user configuration (root: system-wide places). */
static int default_paths(struct serve *s)
{
	bool root = geteuid() == 0;
	const char *run = getenv("XDG_RUNTIME_DIR"), *conf = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	int n = 0;
	if (root)
		n = asprintf(&s->socket_default, "/run/airlock/serve.sock");
	else if (run && run[0] == '/')
		n = asprintf(&s->socket_default, "%s/airlock/serve.sock", run);
	const char *state = getenv("XDG_STATE_HOME"), *env = getenv("AIRLOCK_STATE_DIR");
	if (n >= 0 && env && env[0] == '/')
		n = asprintf(&s->state_default, "%s", env);
	else if (n >= 0 && root)
		n = asprintf(&s->state_default, "/var/lib/airlock/sandboxes");
	else if (n >= 0 && state && state[0] == '/')
		n = asprintf(&s->state_default, "%s/airlock/sandboxes", state);
	else if (n >= 0 && home && home[0] == '/')
		n = asprintf(&s->state_default, "%s/.local/state/airlock/sandboxes", home);
	if (n >= 0 && root)
		n = asprintf(&s->token_default, "/var/lib/airlock/serve.token");
	else if (n >= 0 && conf && conf[0] == '/')
		n = asprintf(&s->token_default, "%s/airlock/serve.token", conf);
	else if (n >= 0 && home && home[0] == '/')
		n = asprintf(&s->token_default, "%s/.config/airlock/serve.token", home);
	return n < 0 ? -ENOMEM : 0;
}

/* Client tokens (generated if the file is missing) and approver tokens, for a TCP listener. */
static int load_tokens(struct serve *s, const struct cfg *cfg, struct al_error *e)
{
	const char *tf = s->token_file		       ? s->token_file
			 : cfg->server.http_token_file ? cfg->server.http_token_file
						       : s->token_default;
	const char *af = s->approver_token_file ? s->approver_token_file : cfg->server.http_approver_token_file;
	if (!tf)
		return al_err(e, EINVAL, "TCP needs a token file: --token-file FILE (no HOME to default to)");
	struct stat st;
	if (lstat(tf, &st) < 0 && errno == ENOENT) {
		int r = http_token_generate(tf, e);
		if (r < 0)
			return r;
		fprintf(stderr,
			"airlock serve: generated a client token in %s (mode 0600): clients send it as "
			"\"Authorization: Bearer <token>\"\n",
			tf);
	}
	int r = http_tokens_load(tf, false, &s->tokens, &s->ntokens, e);
	if (r == 0 && af)
		r = http_tokens_load(af, true, &s->tokens, &s->ntokens, e);
	return r;
}

/* The socket's directory: /run/airlock for root (others may look up the socket, whose own mode
 * decides), a private one under XDG_RUNTIME_DIR for a user. */
static int socket_dir(const char *path, struct al_error *e)
{
	int r = al_make_parents(path, geteuid() == 0 ? 0755 : 0700);
	return r < 0 ? al_err_sys(e, -r, "cannot create the directories above %s", path) : 0;
}

/* Socket activation with sd_listen_fds(3)'s rules, without libsystemd (a few lines): LISTEN_PID
 * names this process (else the variables were meant for another, and are ignored) and LISTEN_FDS
 * counts the descriptors passed from 3 on. The variables are unset whatever they say, so nothing
 * this server starts inherits them. Exactly one listening Unix stream socket is taken (the unit's
 * ListenStream=PATH): its peers are known by uid as on serve's own socket. Anything else is
 * refused rather than served with rules it was not made for (a TCP socket has no bearer tokens
 * here: --http makes one that has). -1 to go on (s->passed_fd set, or 0), else the exit status. */
static int activated_socket(struct serve *s)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	char *end = NULL;
	unsigned long for_pid = pid ? strtoul(pid, &end, 10) : 0, n = 0;
	bool ours = pid && end && end != pid && !*end && for_pid == (unsigned long)getpid();
	if (ours && fds) {
		errno = 0;
		n = strtoul(fds, &end, 10);
		if (errno || end == fds || *end || n > 64)
			return fail("LISTEN_FDS=%s is not a count of descriptors", fds);
	}
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (!ours || n == 0)
		return -1;
	int fd = 3; /* SD_LISTEN_FDS_START */
	for (unsigned long i = 0; i < n; i++)
		(void)fcntl(fd + (int)i, F_SETFD, FD_CLOEXEC);
	if (n != 1)
		return fail("systemd passed %lu sockets (LISTEN_FDS); airlock serve takes one, a Unix stream "
			    "socket (ListenStream=PATH)",
			    n);
	int domain = 0, type = 0, listening = 0;
	socklen_t len = sizeof(int);
	struct sockaddr_un a = {0};
	socklen_t alen = sizeof(a);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 || domain != AF_UNIX ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || !listening ||
	    getsockname(fd, (struct sockaddr *)&a, &alen) < 0)
		return fail("the descriptor systemd passed (fd 3) is not a listening Unix stream socket "
			    "(ListenStream=PATH; for TCP use --http, which needs bearer tokens)");
	size_t plen = alen > offsetof(struct sockaddr_un, sun_path) ? alen - offsetof(struct sockaddr_un, sun_path) : 0;
	if (plen == 0)
		snprintf(s->passed_path, sizeof(s->passed_path), "an unnamed socket (fd 3)");
	else if (a.sun_path[0] == 0) /* abstract: shown as ss(8) does */
		snprintf(s->passed_path, sizeof(s->passed_path), "@%.*s", (int)(plen - 1), a.sun_path + 1);
	else
		snprintf(s->passed_path, sizeof(s->passed_path), "%.*s", (int)plen, a.sun_path);
	s->passed_fd = fd;
	return -1;
}

static int parse(struct serve *s, int argc, char **argv)
{
	static const struct option opts[] = {
		{"http", required_argument, NULL, 'H'},
		{"token-file", required_argument, NULL, 't'},
		{"profile", required_argument, NULL, 'p'},
		{"audit", required_argument, NULL, 'a'},
		{"port-file", required_argument, NULL, 'P'},
		{"config", required_argument, NULL, 'c'},
		{"socket", required_argument, NULL, 'S'},
		{"approver-token-file", required_argument, NULL, 'A'},
		{"approve", required_argument, NULL, 'Y'},
		{"state-dir", required_argument, NULL, 'D'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "+H:t:p:a:P:c:S:A:D:h", opts, NULL)) != -1) {
		switch (c) {
		case 'H':
			s->listen = optarg;
			break;
		case 't':
			s->token_file = optarg;
			break;
		case 'S':
			s->socket = optarg;
			break;
		case 'A':
			s->approver_token_file = optarg;
			break;
		case 'p':
			s->profile = optarg;
			break;
		case 'a':
			s->audit = optarg;
			break;
		case 'P':
			s->port_file = optarg;
			break;
		case 'c':
			s->config = optarg;
			break;
		case 'D':
			s->state_dir = optarg;
			break;
		case 'Y': {
			char msg[MGATE_MSG_MAX];
			if (mgate_approve_parse(optarg, CFG_CHAN_HTTP, &s->approve, msg) < 0)
				return fail("%s", msg);
			break;
		}
		case 'h':
			print_usage(stdout);
			return 0;
		default:
			print_usage(stderr);
			return 125;
		}
	}
	if (optind < argc)
		return fail("unexpected argument '%s'", argv[optind]);
	return -1;
}

/* The HTTP front end on the service. approval.channels (or --approve): elicitation for MCP clients
 * that can, the queue behind /v1/approvals for everyone else (the JSON API, MCP clients without
 * elicitation), in the listed order. A channel left out is never used: without "http", a call that
 * needs approval over the JSON API is denied rather than parked where no reviewer is expected to
 * look. */
static int serve_http(struct serve *s, struct service *svc, int sfd)
{
	struct al_error e = {0};
	const struct cfg *cfg = svc->cfg;
	const struct mgate_channels ch = s->channels;
	struct http_opts ho = {
		.size = sizeof(ho),
		.listen = s->listen,
		.unix_path = s->socket,
		.tokens = s->tokens,
		.ntokens = s->ntokens,
		.approver_uids = (const uid_t *)cfg->server.approver_uids,
		.n_approver_uids = cfg->server.napprover_uids,
		.mgr = &svc->api,
		.gate = &svc->gate,
		.max_sessions_per_principal =
			cfg->server.quota_sessions ? cfg->server.quota_sessions : CFG_QUOTA_SESSIONS,
		.max_connections_per_principal =
			cfg->server.quota_connections ? cfg->server.quota_connections : CFG_QUOTA_CONNECTIONS,
		.approvals = ch.other ? svc->approvals : NULL,
		.request_timeout_ms = (uint32_t)cfg->server.request_timeout_ms,
		.e2b_domain = cfg->server.http_e2b_domain,
		.max_connections = cfg->server.http_max_connections,
		.unix_fd = s->passed_fd,
		.server_version = AIRLOCK_VERSION,
		.stats = stats,
		.stats_ctx = s,
		.ready = ready,
		.ready_ctx = s,
		.log = log_stderr,
		.mcp_no_elicitation = !ch.elicitation,
		.mcp_queue_first = ch.other_first,
		.audit_path = svc->audit_path,
		.cfg = cfg,
		.sandboxes = sandboxes,
		.sandbox_owner = sandbox_owner,
		.sandboxes_ctx = s,
		.snapshots = snapshots,
	};
	if (http_serve(&ho, sfd, &e) < 0)
		return fail("%s", e.msg);
	return 0;
}

/* service_opts.adjust: where to listen, with which tokens and who approves (--approve), settled before anything is opened
 * (a bad token file, or nowhere to listen, changes nothing). */
static int listeners(void *ctx, struct cfg *cfg)
{
	struct serve *s = ctx;
	struct al_error e = {0};
	if (default_paths(s) < 0)
		return fail("out of memory");
	mgate_approve_apply(&s->approve, CFG_CHAN_HTTP, &cfg->approval, &s->channels);
	if (!s->listen)
		s->listen = cfg->server.http_listen;
	if (s->passed_fd > 0 && s->socket)
		return fail("--socket %s and a socket passed by systemd (%s): give one", s->socket, s->passed_path);
	/* systemd's socket replaces the configured or default one: the unit names the path. */
	if (s->passed_fd > 0)
		s->socket = s->passed_path;
	if (!s->socket)
		s->socket = cfg->server.socket ? cfg->server.socket : s->socket_default;
	if (s->socket && strcmp(s->socket, "none") == 0)
		s->socket = NULL;
	if (!s->state_dir)
		s->state_dir = cfg->server.state_dir ? cfg->server.state_dir : s->state_default;
	s->so.state_dir = s->state_dir && strcmp(s->state_dir, "none") != 0 ? s->state_dir : NULL;
	if (!s->socket && !s->listen)
		return fail("nowhere to listen: no XDG_RUNTIME_DIR for the default socket; give --socket PATH or "
			    "--http ADDR");
	if ((s->listen && load_tokens(s, cfg, &e) < 0) || (s->socket && !s->passed_fd && socket_dir(s->socket, &e) < 0))
		return fail("%s", e.msg);
	return 0;
}

int main(int argc, char **argv)
{
	struct serve s = {0};
	int rc = parse(&s, argc, argv);
	if (rc >= 0 || (rc = activated_socket(&s)) >= 0)
		return rc;
	rc = 125;
	struct al_error e = {0};
	struct service *svc = NULL;
	int sfd = service_stop_signals(false);
	if (sfd < 0) {
		fail("signalfd: %s", strerror(-sfd));
		goto out;
	}
	s.so = (struct service_opts){.size = sizeof(s.so),
				     .config = s.config,
				     .profile = s.profile,
				     .audit = s.audit,
				     .transport = "http",
				     .adjust = listeners,
				     .adjust_ctx = &s};
	int r = service_open(&s.so, &svc, &e);
	if (r < 0) {
		if (r != -ECANCELED)
			fail("%s", e.msg);
		goto out;
	}
	s.m = svc->mgr;
	rc = serve_http(&s, svc, sfd);
out:
	service_close(svc); /* no process or cgroup is left; sandboxes are kept in the state directory or destroyed */
	http_tokens_free(s.tokens, s.ntokens);
	free(s.socket_default);
	free(s.token_default);
	free(s.state_default);
	if (sfd >= 0)
		close(sfd);
	return rc;
}
