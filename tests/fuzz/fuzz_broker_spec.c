/* fuzz_broker_spec.c — fuzz target for the credential broker: --broker spec parsing (all or
 * nothing, messages that never show the secret) and broker_serve's answer to any origin-form
 * path (404, 400 or 502 from an upstream that refuses; never the secret, never a crash). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "network/broker.h"
#include "network/proxy.h"
#include "network/proxyreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

#define SECRET "FUZZSECRET-0b8d3e"

static bool name_ok(const char *n)
{
	size_t l = strlen(n);
	if (l == 0 || l >= AL_BROKER_NAME_MAX)
		return false;
	return strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789_-") == l;
}

/* The input as a --broker value (seeds use env=AL_FUZZ_SECRET and AL_FUZZ_CRLF). */
static void fuzz_spec(const char *s)
{
	struct al_broker_list *bl = NULL;
	struct al_error err = {0};
	CHECK(al_broker_list_new(&bl) == 0);
	int r = al_broker_list_add(bl, s, &err);
	if (r == 0) {
		CHECK(al_broker_count(bl) == 1 && name_ok(al_broker_name(bl, 0)));
		/* The same name again is refused, and the list is unchanged. */
		err = (struct al_error){0};
		CHECK(al_broker_list_add(bl, s, &err) == -EINVAL && al_broker_count(bl) == 1);
	} else {
		CHECK(r < 0 && err.code == r && al_broker_count(bl) == 0);
	}
	if (r < 0 || err.code) {
		CHECK(memchr(err.msg, 0, sizeof(err.msg)) != NULL);
		CHECK(strncmp(err.msg, "--broker ", 9) == 0 || strncmp(err.msg, "--broker: ", 10) == 0);
		/* (Unless the spec itself spells it: messages may quote the spec.) */
		CHECK(!strstr(err.msg, "FUZZSECRET") || strstr(s, "FUZZSECRET"));
	}
	al_broker_list_free(bl);
}

/* The input's first line as an origin-form path, served by a broker whose upstream (port 1 on
 * loopback, which the configuration lets through the address check) refuses every connection: no
 * path may get further than a 502. */
static void fuzz_path(const char *s)
{
	static struct al_broker_list *bl;
	static struct al_cidr_list *loopback;
	static struct px_config cfg;
	static struct px *px;
	char head[600];
	if (!bl) {
		struct al_error err = {0};
		CHECK(al_broker_list_new(&bl) == 0);
		CHECK(al_broker_list_add(bl, "svc=https://127.0.0.1:1/base,header=X-Key,env=AL_FUZZ_SECRET", &err) ==
		      0);
		CHECK(al_cidr_list_new(&loopback) == 0 && al_cidr_list_add(loopback, "127.0.0.0/8", &err) == 0);
		cfg = (struct px_config){.allow_private = loopback, .max_conns = 1, .idle_ms = 1000};
		CHECK(px_new(&cfg, &px) == 0);
	}
	int n = snprintf(head, sizeof(head), "GET %.*s HTTP/1.1\r\n\r\n", (int)strcspn(s, "\r\n"), s);
	if (n <= 0 || (size_t)n >= sizeof(head))
		return;
	struct pr_state *st = NULL;
	size_t used = 0;
	CHECK(pr_new(0, &st) == 0);
	if (pr_feed(st, head, (size_t)n, &used) != PR_DONE || pr_request(st)->kind != PR_ORIGIN) {
		pr_free(st);
		return;
	}
	int sp[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0);
	CHECK(fcntl(sp[0], F_SETFL, O_NONBLOCK) == 0);
	struct px_conn c = {.px = px, .client = sp[0], .upstream = -1};
	memset(&c.rec, 0xa5, sizeof(c.rec)); /* whatever the caller left there */
	broker_serve(bl, &c, &cfg, pr_request(st), "", 0);
	const struct px_record rec = c.rec;
	close(sp[0]);
	char got[1024];
	ssize_t k = read(sp[1], got, sizeof(got) - 1);
	close(sp[1]);
	CHECK(k > 13);
	got[k] = 0;
	CHECK(rec.kind == PXK_BROKER && rec.decision == PXD_ERROR && rec.reason);
	CHECK(rec.status == 400 || rec.status == 404 || rec.status == 502);
	CHECK(atoi(got + 9) == rec.status && (!strstr(got, "FUZZSECRET") || strstr(s, "FUZZSECRET")));
	CHECK(memchr(rec.broker, 0, sizeof(rec.broker)) && memchr(rec.addr, 0, sizeof(rec.addr)));
	/* Only the known broker gets as far as an upstream. */
	CHECK(rec.status == 404 || strcmp(rec.broker, "svc") == 0);
	CHECK(rec.status != 502 || strcmp(rec.addr, "127.0.0.1") == 0);
	pr_free(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setenv("AL_FUZZ_SECRET", SECRET, 1);
	setenv("AL_FUZZ_CRLF", SECRET "\r\nX-Injected: 1", 1);
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0; /* the parsers take C strings: anything after a NUL is ignored */
	if (s[0] == '/')
		fuzz_path(s);
	else
		fuzz_spec(s);
	free(s);
	return 0;
}
