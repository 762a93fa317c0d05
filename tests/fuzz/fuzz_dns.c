/* fuzz_dns.c — fuzz target for the sandbox's resolver (src/network/dns.c): whatever a program in
 * the sandbox sends to 127.53.0.1:53, no crash, no read or write out of bounds, and no answer but
 * for a name on the allowlist. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "network/allowlist.h"
#include "network/capture.h"
#include "network/dns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

struct ctx {
	struct al_allowlist *allow;
	struct cap_names *names;
	unsigned lookups;
};

static int lookup(void *c, const char *name, struct in_addr *addr)
{
	struct ctx *x = c;
	x->lookups++;
	/* What the resolver asks about is a normalized host name, never anything else. */
	char again[AL_HOST_MAX];
	enum al_host_kind k;
	size_t n = strnlen(name, AL_HOST_MAX);
	CHECK(n > 0 && n < AL_HOST_MAX);
	CHECK(al_host_normalize(name, n, again, &k) == 0 && k == AL_HOST_NAME && strcmp(again, name) == 0);
	if (!al_allow_name(x->allow, name))
		return 0;
	return cap_names_addr(x->names, name, addr) == 0 ? 1 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ctx x;
	if (!x.allow) {
		struct al_error err = {0};
		if (al_allowlist_new(&x.allow) < 0 || cap_names_new(&x.names) < 0 ||
		    al_allowlist_add(x.allow, "pypi.org,*.pythonhosted.org,a.test:22", &err) < 0)
			abort();
	}
	/* The input in a buffer of exactly its size, so a read past it is caught. */
	uint8_t *in = malloc(size ? size : 1);
	if (!in)
		return 0;
	memcpy(in, data, size);
	uint8_t *out = malloc(DNS_MAX_REPLY);
	if (!out) {
		free(in);
		return 0;
	}
	struct dns_query q;
	x.lookups = 0;
	size_t n = dns_answer(in, size, lookup, &x, out, DNS_MAX_REPLY, &q);
	CHECK(n <= DNS_MAX_REPLY);
	CHECK(x.lookups <= 1);
	if (n > 0) {
		CHECK(n >= DNS_HEADER);
		CHECK(memcmp(out, in, 2) == 0); /* the id */
		CHECK(out[2] & 0x80);		/* a response */
		CHECK((out[3] & 0x0f) == q.rcode);
		unsigned qd = (unsigned)(out[4] << 8 | out[5]), an = (unsigned)(out[6] << 8 | out[7]);
		CHECK(qd <= 1 && an <= 1 && an == q.answers);
		/* An answer only for an allowed name, and then with the name's own address. */
		if (an) {
			CHECK(q.rcode == DNS_NOERROR && al_allow_name(x.allow, q.name));
			struct in_addr a;
			char back[AL_HOST_MAX];
			memcpy(&a, out + n - 4, 4);
			CHECK(cap_names_name(x.names, &a, back) && strcmp(back, q.name) == 0);
		}
		if (qd) /* the question echoed as sent */
			CHECK(n >= DNS_HEADER + 5 &&
			      memcmp(out + DNS_HEADER, in + DNS_HEADER, n - DNS_HEADER - 16 * an) == 0);
	} else {
		CHECK(size < DNS_HEADER || (in[2] & 0x80));
	}
	free(out);
	free(in);
	return 0;
}
