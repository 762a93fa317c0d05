/* console.c — `airlock console`: the approver's console for a local approver, forwarded from loopback TCP to serve's Unix socket under the approver's own uid. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cli/cli.h"

/*
 * Theory of operation
 *
 * A browser cannot open a Unix socket, and serve names a socket peer by the kernel's SO_PEERCRED:
 * this process, run by the approver, is that peer. It listens on loopback TCP and relays each
 * request to the socket, so the console acts as `uid:N` of whoever ran `airlock console` (an
 * approver when N is in server.approver_uids), with no token of serve's to hand out.
 *
 * Who may use the relay: anything on this machine can connect to a loopback port, and any web
 * page can make the browser send requests there. So the relay forwards only requests carrying a
 * random token made at start (printed once, in the URL's fragment, which browsers never send to
 * servers; the page moves it into a header), compares it in constant time, and drops it before
 * forwarding. The console's own files (GET /console...) are public, as serve's are, and hold no
 * data. The Host header must name the loopback address and port it listens on, and an Origin, if
 * sent, must be this very origin: a page of another site reaching the port by DNS rebinding, or
 * posting a form to it, is refused before anything is forwarded.
 *
 * One thread per connection, one request per connection: the relay reads the request's head,
 * checks it, sends it on with "Connection: close" (so serve answers once and closes) and then
 * copies bytes both ways until serve closes. Streams (exec output, the live approvals) pass
 * through as they come.
 */

#define HEAD_MAX    16384 /* a request head, as serve's own limit on headers is near this */
#define CONN_MAX    64	  /* connections relayed at once */
#define TOKEN_BYTES 24
#define IO_TIMEOUT  30 /* seconds a client may take to send its request head */

struct relay {
	char socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char token[TOKEN_BYTES * 2 + 1];
	char hosts[3][64]; /* the Host values this listener answers to */
	atomic_int conns;
};

struct conn {
	struct relay *r;
	int fd;
};

static const char usage[] = "Usage: airlock console [--socket PATH] [--listen 127.0.0.1:PORT] [--port-file FILE]\n"
			    "\n"
			    "Serves the approver's console of a local `airlock serve` on loopback, acting on its\n"
			    "Unix socket as your own uid (an approver when it is in server.approver_uids).\n"
			    "Prints the URL to open, with a one-time token: only requests carrying it are\n"
			    "forwarded.\n"
			    "\n"
			    "  --socket PATH     serve's socket (default: /run/airlock/serve.sock as root,\n"
			    "                    $XDG_RUNTIME_DIR/airlock/serve.sock otherwise)\n"
			    "  --listen ADDR     127.0.0.1:PORT, localhost:PORT or [::1]:PORT (default 127.0.0.1:0:\n"
			    "                    any free port); loopback only\n"
			    "  --port-file FILE  write the port there once listening\n";

/* ---- the request head ------------------------------------------------------------------------- */

static void reply(int fd, int status, const char *why)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf),
			 "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\n"
			 "Content-Length: %zu\r\n\r\n{\"error\":\"%s\"}\n",
			 status,
			 status == 401	 ? "Unauthorized"
			 : status == 403 ? "Forbidden"
			 : status == 400 ? "Bad Request"
					 : "Bad Gateway",
			 strlen(why) + 13, why);
	if (n > 0 && send(fd, buf, (size_t)n, MSG_NOSIGNAL) < 0) {
		/* the client went away: nothing to tell */
	}
}

/* The value of line when it is header name (case-insensitive), its leading blanks skipped; else NULL. */
static const char *header(char *line, const char *name)
{
	size_t n = strlen(name);
	if (strncasecmp(line, name, n) != 0 || line[n] != ':')
		return NULL;
	char *v = line + n + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	return v;
}

static bool public_path(const char *method, const char *target)
{
	return strcmp(method, "GET") == 0 && (strcmp(target, "/console") == 0 || strncmp(target, "/console/", 9) == 0);
}

static bool host_ok(const struct relay *r, const char *host)
{
	for (size_t i = 0; i < 3; i++)
		if (r->hosts[i][0] && strcmp(host, r->hosts[i]) == 0)
			return true;
	return false;
}

/* Checks the head (NUL-terminated, ending in the blank line) and writes the head to forward into
 * out: 0, or the HTTP status to refuse with (why says why). */
static int check_head(const struct relay *r, char *head, char *out, size_t cap, const char **why)
{
	char *save = NULL, *line = strtok_r(head, "\r\n", &save);
	char method[16], target[2048];
	if (!line || sscanf(line, "%15s %2047s HTTP/1.%*1[01]", method, target) != 2) {
		*why = "not an HTTP/1.x request";
		return 400;
	}
	int used = snprintf(out, cap, "%s\r\n", line);
	const char *host = NULL, *origin = NULL, *auth = NULL;
	int hosts = 0;
	while ((line = strtok_r(NULL, "\r\n", &save))) {
		const char *v;
		if ((v = header(line, "Host"))) {
			host = v;
			hosts++;
		} else if ((v = header(line, "Origin")))
			origin = v;
		else if ((v = header(line, "Authorization")))
			auth = v;
		/* The relay's own credential and hop-by-hop headers stay here. */
		if (header(line, "Authorization") || header(line, "Connection") || header(line, "Keep-Alive") ||
		    header(line, "Proxy-Connection") || header(line, "Upgrade"))
			continue;
		used += snprintf(out + used, cap > (size_t)used ? cap - (size_t)used : 0, "%s\r\n", line);
	}
	used += snprintf(out + used, cap > (size_t)used ? cap - (size_t)used : 0, "Connection: close\r\n\r\n");
	if ((size_t)used >= cap) {
		*why = "request head too large";
		return 400;
	}
	/* DNS rebinding: a name that resolves to 127.0.0.1 still says its own name in Host (once:
	 * of two, serve might read the other). */
	if (!host || hosts > 1 || !host_ok(r, host)) {
		*why = "the Host header must name this loopback listener";
		return 403;
	}
	if (origin && (strncmp(origin, "http://", 7) != 0 || !host_ok(r, origin + 7))) {
		*why = "a request from another origin";
		return 403;
	}
	if (public_path(method, target))
		return 0;
	char want[sizeof(r->token) + 8];
	snprintf(want, sizeof(want), "Bearer %s", r->token);
	if (!auth || strlen(auth) != strlen(want) || CRYPTO_memcmp(auth, want, strlen(want)) != 0) {
		*why = "open the URL airlock console printed: requests need its token";
		return 401;
	}
	return 0;
}

/* ---- relaying --------------------------------------------------------------------------------- */

static int connect_socket(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static bool send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		buf += w;
		len -= (size_t)w;
	}
	return true;
}

/* Copies both ways until serve closes (it does after its one answer) or the client goes away. */
static void pump(int client, int server)
{
	struct pollfd p[2] = {{.fd = client, .events = POLLIN}, {.fd = server, .events = POLLIN}};
	char buf[16384];
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (int i = 0; i < 2; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t n = recv(p[i].fd, buf, sizeof(buf), 0);
			if (n <= 0 && i == 1)
				return; /* serve answered and closed: so does the relay */
			if (n <= 0) {
				shutdown(server, SHUT_WR); /* the request is complete; wait for the answer */
				p[0].fd = -1;
				continue;
			}
			/* serve may answer (a refusal) and close before reading the body: what the client
			 * still sends is dropped, and the answer is still relayed. */
			if (!send_all(i ? client : server, buf, (size_t)n) && i)
				return;
		}
	}
}

/* Reads the request head (and whatever body bytes came with it): its length, or -1. */
static ssize_t read_head(int fd, char *buf, size_t cap, size_t *got)
{
	*got = 0;
	while (*got + 1 < cap) {
		ssize_t n = recv(fd, buf + *got, cap - 1 - *got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		*got += (size_t)n;
		buf[*got] = 0;
		char *end = strstr(buf, "\r\n\r\n");
		if (end)
			return end + 4 - buf;
	}
	return -1;
}

static void *serve_conn(void *arg)
{
	struct conn *c = arg;
	struct relay *r = c->r;
	static __thread char head[HEAD_MAX + 1], out[HEAD_MAX + 64];
	size_t got;
	const char *why = "";
	ssize_t hl = read_head(c->fd, head, sizeof(head), &got);
	if (hl < 0) {
		reply(c->fd, 400, "no complete request head");
		goto out;
	}
	char rest[HEAD_MAX];
	size_t body = got - (size_t)hl;
	memcpy(rest, head + hl, body);
	head[hl] = 0;
	int status = check_head(r, head, out, sizeof(out), &why);
	if (status) {
		reply(c->fd, status, why);
		goto out;
	}
	int s = connect_socket(r->socket);
	if (s < 0) {
		reply(c->fd, 502, "cannot reach airlock serve's socket");
		goto out;
	}
	struct timeval none = {0};
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none)); /* streams may be quiet */
	if (send_all(s, out, strlen(out))) {
		if (body && !send_all(s, rest, body))
			shutdown(c->fd, SHUT_RD); /* refused early: relay the answer only */
		pump(c->fd, s);
	}
	close(s);
out:
	close(c->fd);
	atomic_fetch_sub(&r->conns, 1);
	free(c);
	return NULL;
}

/* ---- the command ------------------------------------------------------------------------------ */

/* "127.0.0.1:PORT", "localhost:PORT", "[::1]:PORT": loopback only (the relay is the approver's). */
static int parse_listen(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
	if (!spec)
		return -1;
	const char *colon = strrchr(spec, ':');
	char *end;
	unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 70000;
	if (!colon || *end || port > 65535)
		return -1;
	size_t hl = (size_t)(colon - spec);
	memset(ss, 0, sizeof(*ss));
	if ((hl == 9 && strncmp(spec, "127.0.0.1", 9) == 0) || (hl == 9 && strncmp(spec, "localhost", 9) == 0)) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*len = sizeof(*a);
		return 0;
	}
	if (hl == 5 && strncmp(spec, "[::1]", 5) == 0) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		a->sin6_addr = in6addr_loopback;
		*len = sizeof(*a);
		return 0;
	}
	return -1;
}

static int default_socket(char *out, size_t cap)
{
	const char *run = getenv("XDG_RUNTIME_DIR");
	if (geteuid() == 0)
		return snprintf(out, cap, "/run/airlock/serve.sock") < (int)cap ? 0 : -1;
	if (run && run[0] == '/')
		return snprintf(out, cap, "%s/airlock/serve.sock", run) < (int)cap ? 0 : -1;
	return -1;
}

static int listen_on(const char *spec, struct relay *r, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	if (parse_listen(spec, &ss, &len) < 0) {
		cli_fail("console: --listen %s: give 127.0.0.1:PORT, localhost:PORT or [::1]:PORT (loopback only)",
			 spec);
		return -1;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		cli_fail("console: cannot listen on %s: %s", spec, strerror(e));
		return -1;
	}
	*port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					      : ((struct sockaddr_in6 *)&ss)->sin6_port);
	if (ss.ss_family == AF_INET) {
		snprintf(r->hosts[0], sizeof(r->hosts[0]), "127.0.0.1:%u", *port);
		snprintf(r->hosts[1], sizeof(r->hosts[1]), "localhost:%u", *port);
	} else {
		snprintf(r->hosts[2], sizeof(r->hosts[2]), "[::1]:%u", *port);
	}
	return fd;
}

static int make_token(struct relay *r)
{
	unsigned char raw[TOKEN_BYTES];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -1;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(r->token + 2 * i, 3, "%02x", raw[i]);
	explicit_bzero(raw, sizeof(raw));
	return 0;
}

static void accept_loop(int lfd, struct relay *r)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE)
				continue;
			return;
		}
		struct timeval t = {.tv_sec = IO_TIMEOUT};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof(t)); /* a head trickled forever */
		struct conn *c = malloc(sizeof(*c));
		pthread_t th;
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		if (!c || atomic_fetch_add(&r->conns, 1) >= CONN_MAX) {
			reply(fd, 502, "too many connections");
			close(fd);
			free(c);
			if (c)
				atomic_fetch_sub(&r->conns, 1);
		} else {
			*c = (struct conn){.r = r, .fd = fd};
			if (pthread_create(&th, &at, serve_conn, c) != 0) {
				close(fd);
				free(c);
				atomic_fetch_sub(&r->conns, 1);
			}
		}
		pthread_attr_destroy(&at);
	}
}

int cli_console(int argc, char **argv)
{
	static const struct option opts[] = {{"socket", required_argument, NULL, 's'},
					     {"listen", required_argument, NULL, 'l'},
					     {"port-file", required_argument, NULL, 'p'},
					     {"help", no_argument, NULL, 'h'},
					     {0}};
	static struct relay r; /* the threads' for the process's life */
	const char *listen_spec = "127.0.0.1:0", *port_file = NULL, *sock = NULL;
	int o;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (o == 's')
			sock = optarg;
		else if (o == 'l')
			listen_spec = optarg;
		else if (o == 'p')
			port_file = optarg;
		else
			return fputs(usage, o == 'h' ? stdout : stderr), o == 'h' ? 0 : AL_EXIT_FAILURE;
	}
	if (optind < argc)
		return fputs(usage, stderr), AL_EXIT_FAILURE;
	if (sock && strlen(sock) >= sizeof(r.socket))
		return cli_fail("console: --socket %s: the path is too long", sock);
	if (sock)
		snprintf(r.socket, sizeof(r.socket), "%s", sock);
	else if (default_socket(r.socket, sizeof(r.socket)) < 0)
		return cli_fail("console: no default socket (XDG_RUNTIME_DIR is unset): give --socket PATH");
	if (make_token(&r) < 0)
		return cli_fail("console: cannot read random bytes: %s", strerror(errno));
	signal(SIGPIPE, SIG_IGN);
	uint16_t port = 0;
	int lfd = listen_on(listen_spec, &r, &port);
	if (lfd < 0)
		return AL_EXIT_FAILURE;
	const char *host = r.hosts[0][0] ? r.hosts[0] : r.hosts[2];
	/* The token in the fragment: the browser keeps it (the page moves it into a header) and never
	 * sends it in a request line or a Referer. */
	printf("airlock console: open http://%s/console#token=%s\n"
	       "(forwarding to %s as uid %u; only requests carrying this URL's token; ^C ends it)\n",
	       host, r.token, r.socket, (unsigned)getuid());
	fflush(stdout);
	if (port_file) {
		FILE *f = fopen(port_file, "we");
		if (!f || fprintf(f, "%u\n", port) < 0 || fclose(f) != 0)
			return cli_fail("console: cannot write %s: %s", port_file, strerror(errno));
	}
	accept_loop(lfd, &r);
	return cli_fail("console: accept: %s", strerror(errno));
}
