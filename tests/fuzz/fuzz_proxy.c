/* fuzz_proxy.c — fuzz target for the egress proxy's request parser, allowlist, allow_private and
 * address classification: whatever a client or a config sends, no crash and no broken invariant. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "network/addrclass.h"
#include "network/allowlist.h"
#include "network/proxyreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

/* A result the parser calls valid must be one the rest of the proxy can trust. */
static void check_request(const struct pr_request *r)
{
	char again[AL_HOST_MAX];
	enum al_host_kind k;
	CHECK(strnlen(r->method, PR_METHOD_MAX) < PR_METHOD_MAX);
	if (r->kind == PR_ORIGIN) {
		/* For the broker: no host of the client's choosing, a path, a head of headers only. */
		CHECK(r->host[0] == 0 && r->port == 0 && r->path && r->path[0] == '/' && r->head);
		CHECK(r->head_len >= 21 && memcmp(r->head + r->head_len - 21, "Connection: close\r\n\r\n", 21) == 0);
		CHECK(!memchr(r->head, 0, r->head_len));
		return;
	}
	size_t hl = strnlen(r->host, AL_HOST_MAX);
	CHECK(hl > 0 && hl < AL_HOST_MAX);
	/* The host is already in normal form: normalizing it again is the identity. */
	CHECK(al_host_normalize(r->host, hl, again, &k) == 0 && k == r->host_kind && strcmp(again, r->host) == 0);
	CHECK(r->port != 0);
	if (r->kind == PR_CONNECT) {
		CHECK(strcmp(r->method, "CONNECT") == 0 && !r->path && !r->head);
		return;
	}
	CHECK(r->kind == PR_ABSOLUTE && r->path && r->path[0] == '/' && r->head);
	CHECK(r->head_len >= 4 && memcmp(r->head + r->head_len - 4, "\r\n\r\n", 4) == 0);
	/* No NUL, no bare CR/LF and no Proxy-* header goes upstream. */
	CHECK(!memchr(r->head, 0, r->head_len));
	for (size_t i = 0; i < r->head_len; i++) {
		if (r->head[i] == '\r')
			CHECK(i + 1 < r->head_len && r->head[i + 1] == '\n');
		if (r->head[i] == '\n') {
			CHECK(i > 0 && r->head[i - 1] == '\r');
			CHECK(i + 7 > r->head_len || strncasecmp(r->head + i + 1, "proxy-", 6) != 0);
		}
	}
}

/* Feeds the input in chunk sizes drawn from a generator seeded by the input itself. */
static void fuzz_request(const uint8_t *data, size_t size, size_t max_head)
{
	struct pr_state *st = NULL;
	if (pr_new(max_head, &st) < 0)
		abort();
	uint32_t x = 2463534242u ^ (uint32_t)size ^ (size ? data[0] : 0);
	enum pr_status r = PR_NEED_MORE;
	for (size_t off = 0; off <= size;) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		size_t n = x % 67; /* 0: empty feeds happen too */
		if (n > size - off)
			n = size - off;
		size_t used = SIZE_MAX;
		r = pr_feed(st, (const char *)data + off, n, &used);
		CHECK(used <= n);
		CHECK(r == PR_NEED_MORE ? used == n : 1);
		off += used;
		if (r != PR_NEED_MORE || off == size)
			break;
	}
	if (r == PR_DONE) {
		check_request(pr_request(st));
	} else if (r == PR_ERROR) {
		int s = pr_error_status(st);
		CHECK(s == 400 || s == 405 || s == 431 || s == 501 || s == 505);
		CHECK(pr_error_reason(st) != NULL && pr_request(st) == NULL);
	}
	/* Once decided, the parser stays decided and takes nothing more. */
	size_t used = 1;
	if (r != PR_NEED_MORE)
		CHECK(pr_feed(st, "x", 1, &used) == r && used == 0);
	pr_free(st);
}

static void check_err(int r, const struct al_error *err)
{
	CHECK(r == 0 || (r < 0 && err->code == r && memchr(err->msg, 0, sizeof(err->msg))));
}

/* The input as a policy: an allowlist and an allow_private list; then classify its bytes. */
static void fuzz_policy(const char *s, const uint8_t *data, size_t size)
{
	struct al_allowlist *al = NULL;
	struct al_cidr_list *cl = NULL;
	struct al_error err = {0};
	if (al_allowlist_new(&al) < 0 || al_cidr_list_new(&cl) < 0)
		abort();
	int r = al_allowlist_add(al, s, &err);
	check_err(r, &err);
	CHECK(r == 0 ? al_allowlist_count(al) > 0 : al_allowlist_count(al) == 0);
	/* An entry that parsed as a plain name matches itself on port 443 (default deny holds
	 * otherwise: port 0 never matches); not one with a path rule (HOST/PREFIX), whose host is
	 * the part before the slash. */
	if (r == 0 && !strpbrk(s, ",: \t/") && s[0] != '*')
		CHECK(al_allow_match(al, s, AL_ALLOW_DEFAULT_PORT));
	CHECK(!al_allow_match(al, s, 0));
	err = (struct al_error){0};
	r = al_cidr_list_add(cl, s, &err);
	check_err(r, &err);
	for (size_t off = 0; off + 16 <= size; off += 16) {
		struct in6_addr a6;
		struct in_addr a4;
		memcpy(&a6, data + off, 16);
		memcpy(&a4, data + off, 4);
		struct ac_class c6 = ac_classify6(&a6);
		/* Exemptions only ever open non-hard classes. */
		if (c6.hard)
			CHECK(ac_check6(&a6, cl) != NULL);
		if (!c6.reason)
			CHECK(ac_check6(&a6, cl) == NULL);
		struct ac_class c4 = ac_classify4(&a4);
		if (c4.hard)
			CHECK(ac_check4(&a4, cl) != NULL);
	}
	al_allowlist_free(al);
	al_cidr_list_free(cl);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_request(data, size, 0);
	fuzz_request(data, size, PR_MIN_MAX_HEAD); /* exercises the size limit on short inputs */
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0; /* the policy parsers take C strings: anything after a NUL is ignored */
	fuzz_policy(s, data, size);
	free(s);
	return 0;
}
