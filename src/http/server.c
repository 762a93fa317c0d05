/* server.c — http_serve: the server's state, the metrics observer, and libmicrohttpd's glue (sockets,
 * bodies, responses); every decision is made by the dispatcher in route.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "http/e2b.h"
#include "http/hx.h"
#include "http/proxy.h"
#include "util/clock.h"
#include "util/cleanup.h"
#include "util/error.h"

#define PUMP_MAX_WAIT_MS     1000  /* the pump's longest sleep: idle sessions are looked at this often */
#define CONNECTION_TIMEOUT_S 120   /* an idle keep-alive connection (not one waiting for us) */
#define DRAIN_MS	     3000  /* on stop, how long requests in flight get to send their answer */
#define REQUEST_MS	     60000 /* default: a request trickled in slower than this ends its connection */
#define UNAUTH_MS	     5000  /* a TCP connection that presented no credential by then is closed */
#define UNAUTH_MIN	     4	   /* the unauthenticated TCP connections' cap, at least (below) */
#define SPOOL_PROGRESS	     ((uint64_t)1 << 20) /* an upload's bytes that move its request deadline on */

/* ---- small shared helpers ------------------------------------------------------------------- */

uint64_t hx_now_ms(void)
{
	return hx_now_us() / 1000;
}

uint64_t hx_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

bool hx_stopping(const struct hx_server *s)
{
	return __atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE) != 0;
}

void hx_cond_wait_ms(void *cv, void *mu, int ms)
{
	/* The condition variables are created with CLOCK_MONOTONIC where it matters; the default
	 * realtime clock only makes a wait shorter or longer when the wall clock jumps, and every
	 * waiter loops on its own monotonic deadline. */
	struct timespec ts = al_deadline_ts(CLOCK_REALTIME, ms < 0 ? 0 : (uint64_t)ms);
	(void)pthread_cond_timedwait(cv, mu, &ts);
}

void hx_log(const struct hx_server *s, enum mcp_log_level level, const char *fmt, ...)
{
	if (!s->o.log)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive: ap was just started */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->o.log(s->o.log_ctx, level, msg);
}

/* ---- the metrics observer ------------------------------------------------------------------- */

/* Watches the call runner of the JSON API and of every MCP session, so /metrics counts every
 * approval outcome and every ended call once, whichever transport carried it. */
static void observe_decided(void *ctx, enum srv_gate_outcome outcome)
{
	hx_metrics_approval(&((struct hx_server *)ctx)->metrics, outcome);
}

static void observe_ended(void *ctx, const struct srv_call_end *end)
{
	hx_metrics_end(&((struct hx_server *)ctx)->metrics, end);
}

/* ---- the state ------------------------------------------------------------------------------ */

int hx_server_new(const struct http_opts *o, bool loopback, struct hx_server **out, struct al_error *err)
{
	if (!o || o->size < offsetof(struct http_opts, mgr) + sizeof(const struct srv_mgr_api *) || !o->mgr)
		return al_err(err, EINVAL, "http: no manager");
	struct hx_server *s = calloc(1, sizeof(*s));
	if (!s)
		return al_err(err, ENOMEM, "http: out of memory");
	memcpy(&s->o, o, o->size < sizeof(s->o) ? o->size : sizeof(s->o));
	s->o.size = sizeof(s->o);
	if (!s->o.max_body)
		s->o.max_body = HX_DEFAULT_MAX_BODY;
	/* max_file 0: no cap of its own for streamed uploads (hx_upload_limit). */
	if (!s->o.max_message)
		s->o.max_message = HX_DEFAULT_MAX_MESSAGE;
	if (!s->o.max_sessions)
		s->o.max_sessions = HX_DEFAULT_SESSIONS;
	if (!s->o.max_connections)
		s->o.max_connections = HX_DEFAULT_CONNECTIONS;
	if (!s->o.approval_timeout_ms)
		s->o.approval_timeout_ms = HX_DEFAULT_APPROVAL_MS;
	if (!s->o.session_idle_ms)
		s->o.session_idle_ms = HX_DEFAULT_IDLE_MS;
	if (!s->o.request_timeout_ms)
		s->o.request_timeout_ms = REQUEST_MS;
	if (!s->o.server_version)
		s->o.server_version = "0";
	s->loopback = loopback;
	/* Only digests are kept: the secrets stay with the caller, who wipes them. */
	s->tokens = o->ntokens ? calloc(o->ntokens, sizeof(*s->tokens)) : NULL;
	if (o->ntokens && !s->tokens) {
		free(s);
		return al_err(err, ENOMEM, "http: out of memory");
	}
	for (size_t i = 0; i < o->ntokens; i++) {
		const struct http_token *t = &o->tokens[i];
		SHA256((const unsigned char *)t->token, strlen(t->token), s->tokens[i].digest);
		snprintf(s->tokens[i].name, sizeof(s->tokens[i].name), "%s", t->name ? t->name : "");
		s->tokens[i].approver = t->approver;
	}
	s->ntokens = o->ntokens;
	s->o.tokens = NULL;
	pthread_mutex_init(&s->conns_mu, NULL);
	pthread_mutex_init(&s->watchers_mu, NULL);
	s->observer = (struct svc_observer){.ctx = s, .decided = observe_decided, .ended = observe_ended};
	s->rn = (struct svc_runner){
		.mgr = s->o.mgr, .gate = s->o.gate, .observer = &s->observer, .cat = &s->cat, .transport = "http"};
	char msg[SCH_MSG_MAX];
	int r = tl_catalog_load(&s->cat, msg);
	if (r < 0) {
		free(s->tokens);
		free(s);
		return al_err(err, -r, "http: tool schemas: %s", msg);
	}
	r = hx_sessions_new(s);
	if (r < 0) {
		tl_catalog_clear(&s->cat);
		free(s->tokens);
		free(s);
		return al_err_sys(err, -r, "http: sessions");
	}
	*out = s;
	return 0;
}

void hx_server_stop(struct hx_server *s)
{
	__atomic_store_n(&s->stopping, 1, __ATOMIC_RELEASE);
	hx_sessions_close_all(s);
}

void hx_server_free(struct hx_server *s)
{
	if (!s)
		return;
	e2b_watchers_free(s);
	hx_sessions_free(s);
	tl_catalog_clear(&s->cat);
	if (s->tokens)
		explicit_bzero(s->tokens, s->ntokens * sizeof(*s->tokens));
	free(s->tokens);
	mq_clear(&s->conns);
	pthread_mutex_destroy(&s->conns_mu);
	pthread_mutex_destroy(&s->watchers_mu);
	free(s);
}

/* ---- libmicrohttpd ------------------------------------------------------------------------- */

/* One request's state across the access handler's calls: its body, bounded by the route; or, for
 * an upload, the spool beneath the sandbox's workspace that its body goes to as it arrives. */
struct conn {
	char *body;
	size_t len, cap, limit;
	bool too_large;
	bool spooled;
	int spool; /* the upload's unnamed file (closed when the request ends: nothing is left of it) */
	int spool_error;
	uint64_t spool_bytes;
	uint64_t spool_seen; /* spool_bytes when the request deadline was last moved on */
	EVP_MD_CTX *sha;     /* the body's SHA-256, for the rules and the audit record */
	char peer[64];
	bool local; /* the Unix socket: uid is the peer's */
	uid_t uid;
	char *raw_uri;	     /* the request target as sent (on_uri): a proxied port's is passed on as it is */
	bool begun;	     /* the headers' call is done */
	struct hx_proxy *px; /* a request to a sandbox's port (proxy.c), or NULL */
};

#define RAW_URI_MAX 16384

/* Called once per request before its headers (MHD_OPTION_URI_LOG_CALLBACK): the request's state
 * starts here, with the URI before unescaping. NULL (no memory) is handled as before. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	(void)cls;
	(void)conn;
	struct conn *c = calloc(1, sizeof(*c));
	if (c)
		c->spool = -1; /* no upload's file (yet): never descriptor 0 */
	if (c && uri)
		c->raw_uri = strndup(uri, RAW_URI_MAX);
	return c;
}

/* One connection (its socket context): the principal that first used it, counted against that
 * principal's connections until it closes; and since when it has been receiving a request.
 *
 * The request deadline: libmicrohttpd's timeout is an idle one (every byte resets it), and its
 * access handler first runs once the headers are in, so a client trickling its headers a byte at
 * a time would hold a connection thread for ever. Each connection is listed here from its start;
 * receiving_ms is set at the start and when an answer is done (the next request's bytes are
 * awaited), cleared while one is being answered (a stream or a wait for approval is ours, not the
 * client's slowness). The pump shuts down the socket of a connection receiving for longer than
 * request_timeout_ms: libmicrohttpd then sees the end of the stream and closes the connection
 * itself. Shutting down (never closing) a descriptor we do not own is safe because
 * libmicrohttpd notifies MHD_CONNECTION_NOTIFY_CLOSED, which unlists it under conns_mu, before
 * it closes the descriptor: a listed descriptor is always still this connection's.
 *
 * Unauthenticated TCP connections. Until a request on it carries a valid token, a TCP connection
 * is anybody's: any local user can open hundreds, and on loopback they all come from the one
 * address the per-address limit knows. So they are counted apart and held short: at most
 * unauth_max of them at once (an eighth of the listener's slots) — a new one beyond that ends the
 * oldest, which leaves room for a token holder's connection, whose request comes at once — and
 * each gets UNAUTH_MS from its start to present a credential. A connection that did is the
 * principal's (its quota above) and keeps its slot. The Unix socket's peers are known by uid from
 * the start: they are never unauthenticated. */
struct conn_owner {
	struct conn_owner *next, **pprev;
	int fd;
	uint64_t started_ms;
	uint64_t receiving_ms; /* 0: answering */
	bool cut;
	bool authed; /* a request carried a valid credential (the Unix socket: always) */
	char name[HX_PRINCIPAL_MAX];
	bool counted;
};

static bool unix_socket(int fd)
{
	int domain = 0;
	socklen_t dl = sizeof(domain);
	return fd >= 0 && getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dl) == 0 && domain == AF_UNIX;
}

/* Whether the kernel holds bytes of a request on fd that nobody has read yet. */
static bool request_pending(int fd)
{
	int n = 0;
	return ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

/* Makes room for one more unauthenticated connection: ends the oldest beyond the cap that is
 * waiting for its request (one being answered is left alone; its answer ends it or it authenticates).
 * One whose request has arrived, not yet read (a token holder's, on a loaded server), goes last:
 * the oldest idle one goes first. Under conns_mu. Shutting it down is safe for the reason above. */
static void evict_unauthed(struct hx_server *s)
{
	unsigned cap = s->o.max_connections / 8 > UNAUTH_MIN ? s->o.max_connections / 8 : UNAUTH_MIN;
	unsigned n = 0;
	struct conn_owner *oldest = NULL, *oldest_idle = NULL;
	for (struct conn_owner *o = s->conn_list; o; o = o->next) /* newest first */
		if (!o->authed && !o->cut) {
			n++;
			if (o->receiving_ms && o->fd >= 0) {
				oldest = o;
				if (!request_pending(o->fd))
					oldest_idle = o;
			}
		}
	if (n < cap || !oldest)
		return;
	if (oldest_idle)
		oldest = oldest_idle;
	(void)shutdown(oldest->fd, SHUT_RDWR);
	oldest->cut = true;
	s->unauth_evicted++;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct hx_server *s = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		struct conn_owner *o = calloc(1, sizeof(*o)); /* NULL: this connection goes uncounted */
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (o) {
			o->fd = ci ? ci->connect_fd : -1;
			o->started_ms = o->receiving_ms = hx_now_ms();
			/* A server without any credential (in-process tests only: http_serve refuses TCP
			 * without tokens) has nobody to tell apart. */
			o->authed = s->ntokens == 0 || unix_socket(o->fd);
			pthread_mutex_lock(&s->conns_mu);
			if (!o->authed)
				evict_unauthed(s);
			o->next = s->conn_list;
			if (o->next)
				o->next->pprev = &o->next;
			o->pprev = &s->conn_list;
			s->conn_list = o;
			pthread_mutex_unlock(&s->conns_mu);
		}
		*socket_context = o;
		return;
	}
	struct conn_owner *o = *socket_context;
	if (o) {
		pthread_mutex_lock(&s->conns_mu);
		if (o->counted)
			mq_give(&s->conns, o->name);
		*o->pprev = o->next;
		if (o->next)
			o->next->pprev = o->pprev;
		pthread_mutex_unlock(&s->conns_mu);
	}
	free(o);
	*socket_context = NULL;
}

/* Marks conn as answering (receiving false) or as awaiting its next request. */
static void set_receiving(struct hx_server *s, struct MHD_Connection *conn, bool receiving)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn_owner *o = ci ? ci->socket_context : NULL;
	if (!o)
		return;
	pthread_mutex_lock(&s->conns_mu);
	o->receiving_ms = receiving ? hx_now_ms() : 0;
	pthread_mutex_unlock(&s->conns_mu);
}

/* proxy.c: a port token opened the request (authed: the connection is no anonymous one's any
 * more), or what follows is our answer (answering: a WebSocket's splice, never the client's
 * slowness, which the request deadline is for). */
void hx_conn_mark(struct hx_server *s, struct MHD_Connection *conn, bool authed, bool answering)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn_owner *o = ci ? ci->socket_context : NULL;
	if (!o)
		return;
	pthread_mutex_lock(&s->conns_mu);
	if (answering)
		o->receiving_ms = 0;
	o->authed |= authed;
	pthread_mutex_unlock(&s->conns_mu);
}

/* Ends every connection that has been receiving one request for longer than request_timeout_ms,
 * and every unauthenticated one older than UNAUTH_MS that is not being answered. */
static void cut_slow_requests(struct hx_server *s)
{
	uint64_t now = hx_now_ms();
	unsigned cut = 0, unauth = 0;
	pthread_mutex_lock(&s->conns_mu);
	for (struct conn_owner *o = s->conn_list; o; o = o->next) {
		if (o->cut || o->fd < 0 || !o->receiving_ms)
			continue;
		bool slow = now - o->receiving_ms > s->o.request_timeout_ms;
		bool anonymous = !o->authed && now - o->started_ms > UNAUTH_MS;
		if (slow || anonymous) {
			(void)shutdown(o->fd, SHUT_RDWR);
			o->cut = true;
			cut += slow;
			unauth += !slow;
		}
	}
	unsigned evicted = s->unauth_evicted;
	s->unauth_evicted = 0;
	pthread_mutex_unlock(&s->conns_mu);
	if (cut)
		hx_log(s, MCP_LOG_WARNING, "closed %u connection(s) whose request took longer than %u ms to arrive",
		       cut, (unsigned)s->o.request_timeout_ms);
	if (unauth + evicted)
		hx_log(s, MCP_LOG_WARNING,
		       "closed %u TCP connection(s) that presented no token within %u ms, and %u beyond the cap of "
		       "unauthenticated ones",
		       unauth, (unsigned)UNAUTH_MS, evicted);
}

/* The connection's first authenticated request names its principal: one more connection of it,
 * unless it holds its quota already (1: refused). Later requests on the connection count nothing:
 * a connection is charged once, to whoever used it first. */
static int charge_connection(struct hx_server *s, struct MHD_Connection *conn, const struct hx_principal *who)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn_owner *o = ci ? ci->socket_context : NULL;
	if (o && who->name[0] && !o->authed) {
		/* A credential (a public route's anonymous principal has no name): off the
		 * unauthenticated list's cap and deadline for good. */
		pthread_mutex_lock(&s->conns_mu);
		o->authed = true;
		pthread_mutex_unlock(&s->conns_mu);
	}
	if (!o || o->counted || !s->o.max_connections_per_principal)
		return 0;
	pthread_mutex_lock(&s->conns_mu);
	int r = mq_take(&s->conns, who->name, s->o.max_connections_per_principal);
	pthread_mutex_unlock(&s->conns_mu);
	if (r == -EAGAIN)
		return 1;
	if (r == 0) {
		snprintf(o->name, sizeof(o->name), "%s", who->name);
		o->counted = true;
	}
	return 0; /* -ENOMEM: uncounted rather than refused */
}

static const char *lookup(void *ctx, enum hx_kind kind, const char *name)
{
	return MHD_lookup_connection_value(ctx,
					   kind == HX_HEADER  ? MHD_HEADER_KIND
					   : kind == HX_QUERY ? MHD_GET_ARGUMENT_KIND
							      : MHD_COOKIE_KIND,
					   name);
}

struct each_arg {
	int (*fn)(void *arg, const char *key, const char *value);
	void *arg;
	int r;
};

static enum MHD_Result each_value(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	struct each_arg *a = cls;
	a->r = a->fn(a->arg, key, value ? value : "");
	return a->r ? MHD_NO : MHD_YES;
}

static int each_query(void *ctx, int (*fn)(void *arg, const char *key, const char *value), void *arg)
{
	struct each_arg a = {fn, arg, 0};
	MHD_get_connection_values(ctx, MHD_GET_ARGUMENT_KIND, each_value, &a);
	return a.r;
}

/* Whether the peer of the connected socket fd has gone: it closed the connection (or its sending
 * side, as a client that is done with us does), or the connection broke. libmicrohttpd would only
 * learn it from a failed write, and a program that prints nothing gives it nothing to write: an
 * exec would then run on to its own timeout for nobody. A client that pipelined its next request
 * is still there (data without the hang-up). */
bool hx_peer_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};
	return fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static int conn_fd(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

/* hx_request.gone: the handler's thread is the connection's, which is open while it runs. */
static bool conn_gone(void *ctx)
{
	return hx_peer_gone(conn_fd(ctx));
}

/* A streamed response and the socket it goes to. */
struct held {
	struct hx_response rs;
	int fd;
};

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct held *h = cls;
	/* Thread per connection: blocking here holds only this connection's thread. A read waits one
	 * slice at most, so a client that went away is seen within HX_WAIT_SLICE_MS whatever the
	 * stream has to say; freeing the stream (reader_free) then cancels what it carried. */
	for (;;) {
		ssize_t n = h->rs.ops->read(h->rs.stream, buf, max, true);
		if (n == HX_STREAM_END)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (n < 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (n > 0)
			return n;
		if (hx_peer_gone(h->fd))
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
}

static void reader_free(void *cls)
{
	struct held *h = cls;
	hx_response_clear(&h->rs);
	free(h);
}

/* The response's further headers ("Name: value\n" each, from a front end's handler). */
static void add_headers(struct MHD_Response *r, char *list)
{
	for (char *save = NULL, *line = list ? strtok_r(list, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = 0;
		MHD_add_response_header(r, line, colon + 1 + (colon[1] == ' '));
	}
}

enum MHD_Result hx_queue(struct MHD_Connection *conn, struct hx_response *rs)
{
	struct MHD_Response *r;
	struct held *held = NULL;
	if (rs->ops) {
		held = malloc(sizeof(*held));
		if (!held)
			return MHD_NO;
		held->rs = *rs;
		held->fd = conn_fd(conn);
		memset(rs, 0, sizeof(*rs));
		r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, reader, held, reader_free);
		if (!r) {
			reader_free(held);
			return MHD_NO;
		}
		rs = &held->rs;
	} else if (rs->has_fd) {
		/* From the file in bounded pieces (sendfile, or MHD's own buffer): a 16 MiB read costs the
		 * server no 16 MiB. A file that shrank meanwhile ends the connection early. */
		r = MHD_create_response_from_fd64(rs->len, rs->fd);
		if (!r)
			return MHD_NO;
		rs->has_fd = false; /* MHD closes it with the response */
	} else {
		r = MHD_create_response_from_buffer(rs->len, rs->body ? rs->body : (void *)"",
						    rs->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
		if (!r)
			return MHD_NO;
		rs->body = NULL; /* MHD frees it with the response */
	}
	if (rs->type)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, rs->type);
	if (rs->session[0])
		MHD_add_response_header(r, "Mcp-Session-Id", rs->session);
	if (rs->allow[0])
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, rs->allow);
	if (rs->location)
		MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, rs->location);
	if (rs->challenge)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"airlock\"");
	if (rs->close)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	add_headers(r, rs->headers);
	if (rs->resumed)
		MHD_add_response_header(r, "X-Airlock-Resumed", "true");
	if (held)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (rs->csp) {
		MHD_add_response_header(r, "Content-Security-Policy", rs->csp);
		MHD_add_response_header(r, "X-Frame-Options", "DENY");
		MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
		MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	}
	enum MHD_Result ret = MHD_queue_response(conn, (unsigned)rs->status, r);
	MHD_destroy_response(r);
	return ret;
}

/* The Unix socket peer's uid, as the kernel recorded it at connect(2). false on TCP. */
static bool local_peer(struct MHD_Connection *conn, uid_t *uid)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	int domain = 0;
	socklen_t dl = sizeof(domain);
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_DOMAIN, &domain, &dl) < 0 || domain != AF_UNIX ||
	    getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
		return false;
	*uid = cred.uid;
	return true;
}

static void peer_of(struct MHD_Connection *conn, char *out, size_t cap)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	out[0] = 0;
	uid_t uid;
	if (local_peer(conn, &uid)) {
		snprintf(out, cap, "uid %u (unix socket)", (unsigned)uid);
		return;
	}
	if (!ci || !ci->client_addr)
		return;
	char host[INET6_ADDRSTRLEN] = "";
	const struct sockaddr *sa = ci->client_addr;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *v4 = (const struct sockaddr_in *)(const void *)sa;
		inet_ntop(AF_INET, &v4->sin_addr, host, sizeof(host));
		snprintf(out, cap, "%s:%u", host, ntohs(v4->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)(const void *)sa;
		inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof(host));
		snprintf(out, cap, "[%s]:%u", host, ntohs(v6->sin6_port));
	}
}

static void fill_request(struct MHD_Connection *conn, const char *url, const char *method, const struct conn *c,
			 struct hx_principal *who, struct hx_request *rq)
{
	*rq = (struct hx_request){.method = method,
				  .path = url,
				  .lookup = lookup,
				  .lookup_ctx = conn,
				  .body = c ? c->body : NULL,
				  .len = c ? c->len : 0,
				  .too_large = c && c->too_large,
				  .peer = c && c->peer[0] ? c->peer : NULL,
				  .who = who,
				  .gone = conn_gone,
				  .each_query = each_query};
	rq->local = c ? c->local : local_peer(conn, &rq->uid);
	if (c)
		rq->uid = c->uid;
}

static size_t unescape(void *cls, struct MHD_Connection *conn, char *text)
{
	(void)cls;
	(void)conn;
	return hx_unescape(text);
}

/* One piece of an upload's body, written to its spool as it comes: the server holds at most
 * libmicrohttpd's buffer of it. After a failure (the workspace's disk limit, the route's limit)
 * the spool is closed at once, which frees what it held, and the rest is counted and discarded. */
static void spool_piece(struct conn *c, const char *p, size_t n)
{
	c->spool_bytes += n;
	if (c->spool_error)
		return;
	if (c->spool_bytes > c->limit)
		c->spool_error = -EFBIG;
	(void)EVP_DigestUpdate(c->sha, p, n);
	while (!c->spool_error && n > 0) {
		ssize_t w = write(c->spool, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			c->spool_error = w < 0 ? -errno : -EIO;
			break;
		}
		p += w;
		n -= (size_t)w;
	}
	if (c->spool_error) {
		close(c->spool);
		c->spool = -1;
	}
}

static void spool_request(struct conn *c, struct hx_request *rq)
{
	if (!c || !c->spooled)
		return;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	if (EVP_DigestFinal_ex(c->sha, md, &n) != 1)
		n = 0;
	for (size_t i = 0; i < n && i < 32; i++)
		snprintf(rq->spool_sha256 + 2 * i, 3, "%02x", md[i]);
	rq->spooled = true;
	rq->spool_fd = c->spool;
	rq->spool_error = c->spool_error;
	rq->spool_bytes = c->spool_bytes;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct hx_server *s = cls;
	struct conn *c = *con_cls;
	struct hx_request rq;
	struct hx_response rs = {0};
	struct hx_principal who;
	if (!c || !c->begun) {
		/* First call: headers only. Refuse what needs no body to refuse (no token, wrong
		 * Host, unknown route, a declared length over the limit) before reading any of it. */
		fill_request(conn, url, method, NULL, &who, &rq);
		if (hx_precheck(s, &rq, &rs) == 0 && charge_connection(s, conn, &who)) {
			hx_error(&rs, 429,
				 "quota reached: %s holds %u connections (server.quota.connections): close one",
				 who.name[0] ? who.name : "this client", s->o.max_connections_per_principal);
			rs.close = true;
		}
		if (!rs.status && hx_request_proxied(s, &rq)) {
			if (!c || hx_proxy_open(s, conn, &rq, c->raw_uri, &c->px, &rs) == 0)
				rs.status = c ? 0 : 500;
		}
		if (rs.status == 401)
			rs.close = true; /* no credential: nothing to keep the connection open for */
		if (rs.status) {
			hx_metrics_request(&s->metrics, rs.status);
			enum MHD_Result ret = hx_queue(conn, &rs);
			hx_response_clear(&rs);
			return ret;
		}
		int spool = -1;
		int up = c && c->px ? 0 : hx_upload_begin(s, &rq, &spool, &rs);
		if (up < 0) {
			hx_metrics_request(&s->metrics, rs.status);
			enum MHD_Result ret = hx_queue(conn, &rs);
			hx_response_clear(&rs);
			return ret;
		}
		if (!c && !(c = calloc(1, sizeof(*c)))) {
			if (spool >= 0)
				close(spool);
			return MHD_NO;
		}
		*con_cls = c; /* freed by on_completed, whatever happens next */
		c->begun = true;
		c->spooled = up == 1;
		c->spool = spool;
		if (c->spooled && (!(c->sha = EVP_MD_CTX_new()) || EVP_DigestInit_ex(c->sha, EVP_sha256(), NULL) != 1))
			return MHD_NO;
		c->limit = hx_request_limit(s, &rq);
		peer_of(conn, c->peer, sizeof(c->peer));
		c->local = rq.local;
		c->uid = rq.uid;
		*con_cls = c;
		return MHD_YES;
	}
	if (*upload_size && c->px) { /* a sandbox's port: passed on as it comes */
		hx_proxy_body(c->px, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (c->px) {
		set_receiving(s, conn, false);
		return hx_proxy_respond(c->px, conn);
	}
	if (*upload_size && c->spooled) {
		size_t n = *upload_size;
		*upload_size = 0;
		spool_piece(c, upload, n);
		/* An upload of any size may take longer than request_timeout_ms: each SPOOL_PROGRESS
		 * bytes that arrived start its deadline again, so only a body trickling slower than
		 * that per deadline is cut (the slow-request guard stays). */
		if (c->spool_bytes - c->spool_seen >= SPOOL_PROGRESS) {
			c->spool_seen = c->spool_bytes;
			set_receiving(s, conn, true);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		if (c->too_large || c->len + n > c->limit) {
			/* Chunked bodies have no declared length: count, discard, answer 413 at the end. */
			c->too_large = true;
			free(c->body);
			c->body = NULL;
			c->len = c->cap = 0;
			return MHD_YES;
		}
		if (c->len + n > c->cap) {
			size_t cap = c->cap ? c->cap : 4096;
			while (cap < c->len + n)
				cap *= 2;
			char *grown = realloc(c->body, cap);
			if (!grown)
				return MHD_NO;
			c->body = grown;
			c->cap = cap;
		}
		memcpy(c->body + c->len, upload, n);
		c->len += n;
		return MHD_YES;
	}
	fill_request(conn, url, method, c, &who, &rq);
	spool_request(c, &rq);
	set_receiving(s, conn, false); /* the whole request is in: what follows is our answer */
	hx_handle(s, &rq, &rs);
	enum MHD_Result ret = hx_queue(conn, &rs);
	hx_response_clear(&rs);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	set_receiving(cls, conn, true); /* a kept-alive connection now awaits its next request */
	struct conn *c = *con_cls;
	if (c) {
		if (c->spool >= 0)
			close(c->spool); /* done, or cut: the unnamed file goes with its last descriptor */
		EVP_MD_CTX_free(c->sha);
		hx_proxy_free(c->px);
		free(c->raw_uri);
		free(c->body);
		free(c);
	}
	*con_cls = NULL;
}

/* Stops accepting, then lets the requests in flight (which saw the stop flag) send their answers:
 * a client waiting for an approval gets its 403, not a reset connection. */
static void drain(struct MHD_Daemon *d)
{
	MHD_socket listen_fd = MHD_quiesce_daemon(d);
	if (listen_fd != MHD_INVALID_SOCKET)
		close(listen_fd); /* quiesce hands the listening socket over to us */
	for (uint64_t until = hx_now_ms() + DRAIN_MS; hx_now_ms() < until;) {
		const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		if (!di || di->num_connections == 0)
			break;
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
}

/* A listening Unix socket at path, mode 0600: bound, made private, and only then listening, so no
 * connect(2) can slip in while it still had the umask's mode. A stale socket left by a killed
 * server is replaced; a live one (something accepts on it) or any other file is refused. */
static int unix_listen(const char *path, int *out, struct al_error *err)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(a.sun_path))
		return al_err(err, ENAMETOOLONG, "http: socket path %s is too long", path);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return al_err_sys(err, errno, "http: socket");
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return al_err(err, EEXIST, "http: %s exists and is not a socket", path);
		cleanup_close int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 && connect(probe, (struct sockaddr *)&a, sizeof(a)) == 0)
			return al_err(err, EADDRINUSE, "http: another server listens on %s", path);
		if (unlink(path) < 0)
			return al_err_sys(err, errno, "http: cannot remove the stale socket %s", path);
	}
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return al_err_sys(err, errno, "http: cannot bind %s", path);
	if (fchmodat(AT_FDCWD, path, 0600, 0) < 0 || listen(fd, 128) < 0) {
		int e = errno;
		unlink(path);
		return al_err_sys(err, e, "http: cannot listen on %s", path);
	}
	*out = steal_fd(fd);
	return 0;
}

static struct MHD_Daemon *start_daemon(struct hx_server *s, const struct hx_listen *l, int listen_fd)
{
	/* Upgrades: a WebSocket to a sandbox's port (proxy.c) is spliced on its connection's thread. */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL | MHD_USE_ITC |
			 MHD_ALLOW_UPGRADE;
	if (l && l->v6)
		flags |= MHD_USE_IPv6;
	/* One connection limit for both listeners would let one door starve the other: each gets its
	 * own, so a flood of idle TCP connections never locks out the socket's peers (root, the
	 * default approver, among them). On TCP one address may hold three quarters of the slots at
	 * most: a remote flooder leaves room for everyone else (on loopback every local process is
	 * one address: the socket is then the door that stays open). */
	unsigned per_ip = s->o.max_connections - s->o.max_connections / 4;
	if (l)
		return MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
					(const struct sockaddr *)&l->addr, MHD_OPTION_CONNECTION_LIMIT,
					(unsigned)s->o.max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
					per_ip ? per_ip : 1u, MHD_OPTION_CONNECTION_TIMEOUT,
					(unsigned)CONNECTION_TIMEOUT_S, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
					MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_UNESCAPE_CALLBACK,
					unescape, s, MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_END);
	return MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->o.max_connections,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION,
				on_connection, s, MHD_OPTION_UNESCAPE_CALLBACK, unescape, s,
				MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_END);
}

static void stop_daemon(struct MHD_Daemon *d)
{
	if (!d)
		return;
	drain(d);
	MHD_stop_daemon(d);
}

int http_serve(const struct http_opts *o, int stop_fd, struct al_error *err)
{
	struct hx_listen l;
	if (!o || !o->mgr)
		return al_err(err, EINVAL, "http: no manager");
	if (stop_fd < 0)
		return al_err(err, EINVAL, "http: a stop descriptor is required");
	if (!o->listen && !o->unix_path && o->unix_fd <= 0)
		return al_err(err, EINVAL, "http: nowhere to listen (no socket path, no TCP address)");
	int r = o->listen ? hx_parse_listen(o->listen, &l, err) : 0;
	if (r < 0)
		return r;
	/* On TCP a token is the only identity a request can have: any local user (or anyone who can
	 * reach the port) could otherwise run code and approve it. Never without one. */
	if (o->listen && o->ntokens == 0)
		return al_err(err, EPERM, "http: listening on %s needs bearer tokens (--token-file)", o->listen);
	struct hx_server *s = NULL;
	r = hx_server_new(o, o->listen && l.loopback, &s, err);
	if (r < 0 || !s)
		return r < 0 ? r : -EINVAL;
	int ufd = -1;
	bool passed = o->unix_fd > 0;
	const char *where = o->unix_path ? o->unix_path : "the socket passed to us";
	struct MHD_Daemon *tcp = NULL, *local = NULL;
	if (passed)
		ufd = o->unix_fd;
	else if (o->unix_path && (r = unix_listen(o->unix_path, &ufd, err)) < 0)
		goto out;
	if (ufd >= 0 && !(local = start_daemon(s, NULL, ufd))) {
		if (!passed)
			close(ufd);
		r = al_err(err, EIO, "http: cannot serve on %s", where);
		goto out;
	}
	if (o->listen && !(tcp = start_daemon(s, &l, -1))) {
		r = al_err(err, EADDRINUSE, "http: cannot listen on %s (in use, or not an address of this host)",
			   o->listen);
		goto out;
	}
	const union MHD_DaemonInfo *di = tcp ? MHD_get_daemon_info(tcp, MHD_DAEMON_INFO_BIND_PORT) : NULL;
	uint16_t port = di ? di->port : 0;
	if (local && passed)
		hx_log(s, MCP_LOG_NOTICE, "listening on %s (passed by systemd; peers are known by uid)", where);
	else if (local)
		hx_log(s, MCP_LOG_NOTICE, "listening on %s (mode 0600; peers are known by uid)", where);
	if (tcp)
		hx_log(s, MCP_LOG_NOTICE, "listening on %s (port %u), bearer token required", o->listen, port);
	if (o->ready)
		o->ready(o->ready_ctx, port);
	while ((r = hx_pump(s, stop_fd, PUMP_MAX_WAIT_MS)) == 0)
		cut_slow_requests(s);
	if (r < 0)
		hx_log(s, MCP_LOG_ERROR, "the pump failed: %s", strerror(-r));
	r = 0;
out:
	/* Stop: blocked requests see the flag within HX_WAIT_SLICE_MS and end their streams, so
	 * MHD_stop_daemon's join of the connection threads does not wait on them. */
	hx_server_stop(s);
	stop_daemon(tcp);
	stop_daemon(local);
	if (local && !passed)
		unlink(o->unix_path);
	hx_server_free(s);
	return r;
}
