/* proxy.c — the egress proxy's server: accept thread, connection threads, records.
 *
 * Threads, not the supervisor's epoll loop: a connection's life has blocking steps (name
 * resolution, connect, upstream TLS) that must never stall output pumping or the
 * deadline. The proxy object is reference counted (the owner plus each running thread), so a
 * thread still stuck in the resolver when the job ends finishes against valid memory; its
 * record is then counted as unfinished instead of being reported half-written.
 */
#include "network/proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "network/broker.h"
#include "network/capture.h"
#include "network/dns.h"
#include "network/secrets.h"
#include "network/tlsca.h"
#include "util/clock.h"

#define PX_THREAD_STACK ((size_t)256 * 1024) /* getaddrinfo and OpenSSL need more than a tiny stack */
#define PX_STOP_WAIT_MS 2000

struct px {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned refs;
	bool stopping, frozen;
	int listen_fd, stop_efd;
	struct {
		int fd;
		enum px_listen kind;
	} ls[PX_MAX_LISTEN]; /* the capture's sockets, beside listen_fd */
	size_t nls;
	bool dns_served;			 /* the resolver's sockets arrived */
	uint16_t cap_ports[AL_CAPTURE_MAX_PORT]; /* the capture listeners' ports */
	size_t ncap_ports;
	struct cap_names *names;	/* with cfg.capture */
	char last_refused[AL_HOST_MAX]; /* the resolver's last refusal recorded, if have_refused */
	bool have_refused;
	pthread_t acceptor;
	bool acceptor_running;
	struct px_config cfg;
	struct al_allowlist *allow;
	struct al_cidr_list *allow_private;
	char *hosts_file;
	struct px_conn **conns; /* max_conns slots, NULL = free */
	size_t active;
	struct px_record *recs;
	size_t nrecs;
	struct px_stats st;
	struct px_stats taken; /* st at the last px_take */
	unsigned gen;	       /* px_take calls so far */
};

static void px_destroy(struct px *px)
{
	if (px->listen_fd >= 0)
		close(px->listen_fd);
	if (px->stop_efd >= 0)
		close(px->stop_efd);
	for (size_t i = 0; i < px->nls; i++)
		close(px->ls[i].fd);
	cap_names_free(px->names);
	if (px->cfg.brokers_release)
		px->cfg.brokers_release(px->cfg.brokers_ctx);
	al_allowlist_free(px->allow);
	al_cidr_list_free(px->allow_private);
	tca_unref(px->cfg.ca);
	al_secrets_unref(px->cfg.secrets);
	free(px->hosts_file);
	free(px->conns);
	free(px->recs);
	pthread_mutex_destroy(&px->mu);
	pthread_cond_destroy(&px->cv);
	free(px);
}

static void px_unref(struct px *px)
{
	pthread_mutex_lock(&px->mu);
	bool last = --px->refs == 0;
	pthread_mutex_unlock(&px->mu);
	if (last)
		px_destroy(px);
}

static double since_t0(const struct px *px)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - px->cfg.t0.tv_sec) + (double)(now.tv_nsec - px->cfg.t0.tv_nsec) / 1e9;
}

static void count_decision(struct px_stats *st, enum px_decision d)
{
	switch (d) {
	case PXD_ALLOWED:
		st->allowed++;
		break;
	case PXD_DENIED:
		st->denied++;
		break;
	case PXD_ERROR:
		st->errors++;
		break;
	}
}

/* Called with mu held. */
static void add_record(struct px *px, const struct px_record *r)
{
	if (px->frozen)
		return;
	/* A refused lookup is no connection: recorded, but not among the connections' outcomes. */
	if (r->kind != PXK_DNS)
		count_decision(&px->st, r->decision);
	/* The parser's refusals (400 405 431 501 505); not timeouts (408) or our own 503s. */
	if (r->kind == PXK_INVALID && r->decision == PXD_ERROR && r->status >= 400 && r->status != 408 &&
	    r->status != 503)
		px->st.malformed++;
	if (px->nrecs == PX_MAX_RECORDS) {
		px->st.records_dropped++;
		return;
	}
	px->recs[px->nrecs++] = *r;
}

/* Records are added as connections end, which threads do in any order; a report lists them as
 * they began. Insertion sort: stable, and the array is nearly sorted already. */
static void sort_by_start(struct px_record *recs, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct px_record r = recs[i];
		size_t j = i;
		for (; j > 0 && recs[j - 1].start_s > r.start_s; j--)
			recs[j] = recs[j - 1];
		recs[j] = r;
	}
}

bool px_conn_set_upstream(struct px_conn *c, int fd)
{
	pthread_mutex_lock(&c->px->mu);
	bool ok = !c->px->stopping;
	if (ok)
		c->upstream = fd;
	pthread_mutex_unlock(&c->px->mu);
	return ok;
}

void px_conn_next(struct px_conn *c)
{
	struct px *px = c->px;
	c->rec.duration_s = since_t0(px) - c->rec.start_s;
	pthread_mutex_lock(&px->mu);
	if (c->gen == px->gen)
		add_record(px, &c->rec);
	pthread_mutex_unlock(&px->mu);
	c->rec.decision = PXD_ERROR;
	c->rec.reason = NULL;
	c->rec.status = 0;
	c->rec.bytes_up = c->rec.bytes_down = 0;
	c->rec.method[0] = c->rec.path[0] = c->rec.rule[0] = c->rec.sha256[0] = 0;
	c->rec.start_s = since_t0(px);
}

static void *conn_thread(void *arg)
{
	struct px_conn *c = arg;
	struct px *px = c->px;
	c->rec.start_s = since_t0(px);
	if (c->via == PXL_CAPTURE)
		cap_conn_serve(c, &px->cfg);
	else if (c->via == PXL_DNS_TCP)
		cap_dns_tcp(c, &px->cfg);
	else
		px_conn_serve(c, &px->cfg);
	c->rec.duration_s = since_t0(px) - c->rec.start_s;
	pthread_mutex_lock(&px->mu);
	for (size_t i = 0; i < px->cfg.max_conns; i++)
		if (px->conns[i] == c)
			px->conns[i] = NULL;
	/* A resolver's connection is no egress: its queries are counted (and refusals recorded). */
	if (c->gen == px->gen && c->via != PXL_DNS_TCP)
		add_record(px, &c->rec);
	close(c->client);
	if (c->upstream >= 0)
		close(c->upstream);
	px->active--;
	pthread_cond_broadcast(&px->cv);
	pthread_mutex_unlock(&px->mu);
	free(c);
	px_unref(px);
	return NULL;
}

/* A connection beyond max_conns: answered at once, recorded, never given a thread. */
static void refuse_over_limit(struct px *px, int fd, enum px_listen via)
{
	struct px_record r = {.kind = via == PXL_PROXY ? PXK_INVALID : PXK_CAPTURE,
			      .decision = PXD_DENIED,
			      .reason = "too many connections",
			      .status = via == PXL_PROXY ? 503 : 0,
			      .start_s = since_t0(px)};
	if (via == PXL_PROXY) {
		px_reply(fd, 503, r.reason, 100);
	} else {
		struct linger lg = {.l_onoff = 1, .l_linger = 0}; /* a reset: see cap_conn_serve */
		(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(fd);
	pthread_mutex_lock(&px->mu);
	px->st.over_limit++;
	add_record(px, &r);
	pthread_mutex_unlock(&px->mu);
}

static int spawn_conn(struct px *px, int fd, enum px_listen via)
{
	struct px_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = (struct px_conn){.px = px, .via = via, .client = fd, .upstream = -1};
	pthread_mutex_lock(&px->mu);
	size_t slot = 0;
	while (slot < px->cfg.max_conns && px->conns[slot])
		slot++;
	if (slot == px->cfg.max_conns || px->stopping) {
		pthread_mutex_unlock(&px->mu);
		free(c);
		return -EBUSY;
	}
	px->conns[slot] = c;
	c->gen = px->gen;
	px->active++;
	px->refs++;
	px->st.connections += via != PXL_DNS_TCP;
	pthread_mutex_unlock(&px->mu);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, PX_THREAD_STACK);
	pthread_t t;
	int r = pthread_create(&t, &attr, conn_thread, c);
	pthread_attr_destroy(&attr);
	if (r == 0)
		return 0;
	pthread_mutex_lock(&px->mu);
	px->conns[slot] = NULL;
	px->active--;
	px->refs--;
	px->st.connections -= via != PXL_DNS_TCP;
	pthread_mutex_unlock(&px->mu);
	free(c);
	return -r;
}

/* One listener's turn: an accepted connection gets its thread, a datagram its answer. */
static void accept_one(struct px *px, int lfd, enum px_listen kind)
{
	if (kind == PXL_DNS_UDP) {
		cap_dns_udp(px, lfd);
		return;
	}
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS)
			poll(NULL, 0, 20); /* the supervisor's own limit: back off, never spin */
		return;
	}
	if (spawn_conn(px, fd, kind) < 0) {
		if (kind == PXL_DNS_TCP)
			close(fd); /* the resolver's client retries or falls back; nothing to record */
		else
			refuse_over_limit(px, fd, kind);
	}
}

static void *accept_thread(void *arg)
{
	struct px *px = arg;
	struct pollfd pf[2 + PX_MAX_LISTEN] = {{.fd = px->stop_efd, .events = POLLIN},
					       {.fd = px->listen_fd, .events = POLLIN}};
	for (size_t i = 0; i < px->nls; i++)
		pf[2 + i] = (struct pollfd){.fd = px->ls[i].fd, .events = POLLIN};
	nfds_t n = (nfds_t)(2 + px->nls);
	for (;;) {
		if (poll(pf, n, -1) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			break;
		if (pf[1].revents & POLLIN)
			accept_one(px, px->listen_fd, PXL_PROXY);
		for (size_t i = 0; i < px->nls; i++)
			if (pf[2 + i].revents & POLLIN)
				accept_one(px, px->ls[i].fd, px->ls[i].kind);
	}
	return NULL;
}

static int copy_config(struct px *px, const struct px_config *cfg)
{
	px->cfg = *cfg;
	if (cfg->allow && (al_allowlist_clone(cfg->allow, &px->allow) < 0))
		return -ENOMEM;
	if (cfg->allow_private && al_cidr_list_clone(cfg->allow_private, &px->allow_private) < 0)
		return -ENOMEM;
	if (cfg->hosts_file && !(px->hosts_file = strdup(cfg->hosts_file)))
		return -ENOMEM;
	tca_ref(px->cfg.ca);
	al_secrets_ref(px->cfg.secrets);
	px->cfg.allow = px->allow;
	px->cfg.allow_private = px->allow_private;
	px->cfg.hosts_file = px->hosts_file;
	if (px->cfg.max_conns == 0)
		px->cfg.max_conns = 1;
	px->conns = calloc(px->cfg.max_conns,
			   sizeof(struct px_conn *)); /* NOLINT(bugprone-sizeof-expression): an array of pointers */
	px->recs = calloc(PX_MAX_RECORDS, sizeof(*px->recs));
	if (cfg->capture && cap_names_new(&px->names) < 0)
		return -ENOMEM;
	return px->conns && px->recs ? 0 : -ENOMEM;
}

int px_new(const struct px_config *cfg, struct px **out)
{
	struct px *px = calloc(1, sizeof(*px));
	if (!px) {
		if (cfg->brokers_release)
			cfg->brokers_release(cfg->brokers_ctx);
		return -ENOMEM;
	}
	pthread_mutex_init(&px->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&px->cv, &ca);
	pthread_condattr_destroy(&ca);
	px->refs = 1;
	px->cfg = *cfg; /* from here on px_destroy releases the brokers */
	px->listen_fd = -1;
	px->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int r = px->stop_efd < 0 ? -errno : copy_config(px, cfg);
	if (r < 0) {
		px_destroy(px);
		return r;
	}
	*out = px;
	return 0;
}

int px_add_listener(struct px *px, int fd, enum px_listen kind)
{
	int r = !px->cfg.capture || kind == PXL_PROXY  ? -EINVAL
		: px->nls == PX_MAX_LISTEN	       ? -ENOSPC
		: px->acceptor_running || px->stopping ? -EBUSY
						       : 0;
	if (r == 0 && fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
		r = -errno;
	if (r < 0) {
		close(fd);
		return r;
	}
	px->ls[px->nls].fd = fd;
	px->ls[px->nls++].kind = kind;
	struct sockaddr_in a = {0};
	socklen_t al = sizeof(a);
	if (kind == PXL_CAPTURE && px->ncap_ports < AL_CAPTURE_MAX_PORT &&
	    getsockname(fd, (struct sockaddr *)&a, &al) == 0 && a.sin_family == AF_INET)
		px->cap_ports[px->ncap_ports++] = ntohs(a.sin_port);
	px->dns_served |= kind == PXL_DNS_UDP;
	return 0;
}

size_t px_capture(const struct px *px, const uint16_t **ports)
{
	*ports = px->cap_ports;
	return px->dns_served ? px->ncap_ports + 1 : 0;
}

struct cap_names *px_names(struct px *px)
{
	return px->names;
}

const struct al_allowlist *px_allowlist(const struct px *px)
{
	return px->cfg.allow;
}

static const char *dns_refusal(enum dns_rcode rc)
{
	switch (rc) {
	case DNS_NXDOMAIN:
		return "not in the allowlist";
	case DNS_SERVFAIL:
		return "no synthetic address left";
	case DNS_FORMERR:
		return "malformed query";
	case DNS_NOTIMP:
		return "not a standard query";
	case DNS_REFUSED:
		return "query type or class refused";
	case DNS_NOERROR:
		break;
	}
	return NULL;
}

void px_dns_note(struct px *px, const struct dns_query *q, bool answered)
{
	pthread_mutex_lock(&px->mu);
	px->st.dns_queries += answered;
	px->st.dns_nxdomain += q->rcode == DNS_NXDOMAIN;
	px->st.dns_malformed += q->rcode == DNS_FORMERR || !answered;
	/* One record per run of refusals of one name: a resolver asks A and AAAA, and retries. */
	const char *why = dns_refusal(q->rcode);
	if (why && (!px->have_refused || strcmp(px->last_refused, q->name) != 0)) {
		struct px_record r = {.kind = PXK_DNS,
				      .decision = q->rcode == DNS_NXDOMAIN ? PXD_DENIED : PXD_ERROR,
				      .port = 53,
				      .reason = why,
				      .start_s = since_t0(px)};
		snprintf(r.host, sizeof(r.host), "%s", q->name);
		snprintf(px->last_refused, sizeof(px->last_refused), "%s", q->name);
		px->have_refused = true;
		add_record(px, &r);
	}
	pthread_mutex_unlock(&px->mu);
}

int px_serve(struct px *px, int listen_fd)
{
	if (px->listen_fd >= 0 || px->stopping) {
		close(listen_fd);
		return -EBUSY;
	}
	px->listen_fd = listen_fd;
	if (fcntl(listen_fd, F_SETFL, O_NONBLOCK) < 0)
		return -errno;
	px->refs++;
	int r = pthread_create(&px->acceptor, NULL, accept_thread, px);
	if (r != 0) {
		px->refs--;
		return -r;
	}
	px->acceptor_running = true;
	return 0;
}

static void wait_threads(struct px *px, int ms)
{
	struct timespec dl = al_deadline_ts(CLOCK_MONOTONIC, ms < 0 ? 0 : (uint64_t)ms);
	while (px->active > 0)
		if (pthread_cond_timedwait(&px->cv, &px->mu, &dl) == ETIMEDOUT)
			break;
}

void px_stop(struct px *px)
{
	if (!px || px->frozen)
		return;
	if (px->acceptor_running) {
		uint64_t one = 1;
		(void)!write(px->stop_efd, &one, sizeof(one));
		pthread_join(px->acceptor, NULL);
		px->acceptor_running = false;
		px_unref(px);
	}
	pthread_mutex_lock(&px->mu);
	px->stopping = true;
	/* Wakes every connection thread out of poll(); the threads close their own fds. */
	for (size_t i = 0; i < px->cfg.max_conns; i++) {
		struct px_conn *c = px->conns[i];
		if (!c)
			continue;
		shutdown(c->client, SHUT_RDWR);
		if (c->upstream >= 0)
			shutdown(c->upstream, SHUT_RDWR);
	}
	wait_threads(px, PX_STOP_WAIT_MS);
	px->st.unfinished = px->active;
	px->st.dns_names = px->names ? cap_names_count(px->names) : 0;
	sort_by_start(px->recs, px->nrecs);
	px->frozen = true;
	pthread_mutex_unlock(&px->mu);
}

const struct px_record *px_records(const struct px *px, size_t *n)
{
	*n = px->frozen ? px->nrecs : 0;
	return px->recs;
}

struct px_stats px_get_stats(const struct px *px)
{
	return px->st;
}

void px_free(struct px *px)
{
	if (!px)
		return;
	px_stop(px);
	px_unref(px);
}

/* What b counted since a. */
static struct px_stats stats_since(const struct px_stats *b, const struct px_stats *a)
{
	return (struct px_stats){
		.connections = b->connections - a->connections,
		.allowed = b->allowed - a->allowed,
		.denied = b->denied - a->denied,
		.errors = b->errors - a->errors,
		.malformed = b->malformed - a->malformed,
		.over_limit = b->over_limit - a->over_limit,
		.records_dropped = b->records_dropped - a->records_dropped,
		.dns_queries = b->dns_queries - a->dns_queries,
		.dns_nxdomain = b->dns_nxdomain - a->dns_nxdomain,
		.dns_malformed = b->dns_malformed - a->dns_malformed,
	};
}

int px_take(struct px *px, const struct timespec *t0, int wait_ms, struct px **out)
{
	*out = NULL;
	struct px *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	pthread_mutex_init(&o->mu, NULL);
	pthread_cond_init(&o->cv, NULL);
	o->refs = 1;
	o->stopping = o->frozen = true;
	o->listen_fd = o->stop_efd = -1;
	pthread_mutex_lock(&px->mu);
	if (wait_ms > 0)
		wait_threads(px, wait_ms);
	o->recs = calloc(px->nrecs ? px->nrecs : 1, sizeof(*o->recs));
	if (!o->recs) {
		pthread_mutex_unlock(&px->mu);
		px_destroy(o);
		return -ENOMEM;
	}
	double shift = (double)(t0->tv_sec - px->cfg.t0.tv_sec) + (double)(t0->tv_nsec - px->cfg.t0.tv_nsec) / 1e9;
	for (size_t i = 0; i < px->nrecs; i++) {
		o->recs[i] = px->recs[i];
		o->recs[i].start_s -= shift;
	}
	o->nrecs = px->nrecs;
	sort_by_start(o->recs, o->nrecs);
	o->st = stats_since(&px->st, &px->taken);
	o->st.unfinished = px->active;
	o->st.dns_names = px->names ? cap_names_count(px->names) : 0;
	o->cfg.capture = px->cfg.capture;
	o->dns_served = px->dns_served;
	o->ncap_ports = px->ncap_ports;
	memcpy(o->cap_ports, px->cap_ports, sizeof(o->cap_ports));
	px->nrecs = 0;
	px->have_refused = false; /* each exec records its own refusals */
	px->taken = px->st;
	px->gen++;
	pthread_mutex_unlock(&px->mu);
	*out = o;
	return 0;
}
