/* test_tlsca.c — unit tests of src/network/tlsca.c, the per-sandbox certificate authority: a CA
 * certificate that is a CA (P-256, CA:TRUE with pathlen 0, self-signed, valid now and for days, not
 * years), its own per CA; leaves for a name or an IP literal that verify under their CA alone, as
 * server certificates for exactly that name, cached; the cap on names; the upstream side's
 * verification settings and the operator's CA file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "network/tlsca.h"

static struct tls_ca *new_ca(void)
{
	struct tls_ca *ca = NULL;
	assert_int_equal(tca_new(NULL, &ca), 0);
	assert_non_null(ca);
	return ca;
}

static X509 *pem_cert(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	assert_non_null(b);
	X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	assert_non_null(x);
	return x;
}

/* Whether leaf verifies as a TLS server certificate under ca alone, at the current time. */
static bool verifies(X509 *leaf, X509 *ca)
{
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	assert_true(st && ctx && X509_STORE_add_cert(st, ca) == 1);
	assert_int_equal(X509_STORE_CTX_init(ctx, st, leaf, NULL), 1);
	X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
	bool ok = X509_verify_cert(ctx) == 1;
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	return ok;
}

/* The leaf a server context of ca presents for name (the caller frees it). */
static X509 *leaf_for(struct tls_ca *ca, const char *name)
{
	SSL_CTX *ctx = tca_server_ctx(ca, name);
	assert_non_null(ctx);
	X509 *x = SSL_CTX_get0_certificate(ctx);
	assert_non_null(x);
	X509_up_ref(x);
	SSL_CTX_free(ctx);
	return x;
}

static void the_ca(void **state)
{
	(void)state;
	struct tls_ca *ca = new_ca();
	const char *pem = tca_pem(ca);
	assert_non_null(strstr(pem, "-----BEGIN CERTIFICATE-----"));
	assert_null(strstr(pem, "PRIVATE KEY")); /* public: what the sandbox's trust store holds */
	X509 *x = pem_cert(pem);
	assert_int_equal(X509_check_ca(x), 1);
	assert_true(X509_get_extension_flags(x) & EXFLAG_CA);
	assert_int_equal(X509_get_pathlen(x), 0);
	assert_int_equal(X509_check_issued(x, x), X509_V_OK); /* self-signed */
	char cn[128];
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn)) > 0);
	assert_memory_equal(cn, "airlock sandbox CA ", 19);
	EVP_PKEY *k = X509_get0_pubkey(x);
	assert_int_equal(EVP_PKEY_get_base_id(k), EVP_PKEY_EC);
	assert_int_equal(EVP_PKEY_get_bits(k), 256);
	/* Valid now, and for days, not years. */
	time_t now = time(NULL), week = now + 8 * 86400;
	assert_true(X509_cmp_time(X509_get0_notBefore(x), &now) < 0);
	assert_true(X509_cmp_time(X509_get0_notAfter(x), &now) > 0);
	assert_true(X509_cmp_time(X509_get0_notAfter(x), &week) < 0);
	/* A second sandbox's CA is another CA: nothing one signs is trusted by the other's store. */
	struct tls_ca *other = new_ca();
	assert_string_not_equal(pem, tca_pem(other));
	X509 *y = pem_cert(tca_pem(other));
	X509 *leaf = leaf_for(ca, "api.example.com");
	assert_true(verifies(leaf, x));
	assert_false(verifies(leaf, y));
	X509_free(leaf);
	X509_free(y);
	tca_unref(other);
	/* References: one more, dropped twice; the last frees (ASan would tell a use after free). */
	assert_ptr_equal(tca_ref(ca), ca);
	tca_unref(ca);
	assert_non_null(tca_pem(ca));
	tca_unref(ca);
	tca_unref(NULL);
	X509_free(x);
}

static void leaves(void **state)
{
	(void)state;
	struct tls_ca *ca = new_ca();
	X509 *root = pem_cert(tca_pem(ca));
	X509 *a = leaf_for(ca, "api.example.com");
	assert_true(verifies(a, root));
	assert_int_equal(X509_check_host(a, "api.example.com", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(a, "other.example.com", 0, 0, NULL), 0);
	assert_int_equal(X509_check_host(a, "example.com", 0, 0, NULL), 0);
	assert_int_equal(X509_check_ca(a), 0); /* a leaf signs nothing */
	assert_int_equal(X509_check_purpose(a, X509_PURPOSE_SSL_SERVER, 0), 1);
	/* Cached: the same name, the same certificate. */
	X509 *again = leaf_for(ca, "api.example.com");
	assert_int_equal(X509_cmp(a, again), 0);
	/* An IP literal is named as an address (SAN IP), not as a DNS name. */
	X509 *ip = leaf_for(ca, "192.0.2.7");
	assert_true(verifies(ip, root));
	assert_int_equal(X509_check_ip_asc(ip, "192.0.2.7", 0), 1);
	assert_int_equal(X509_check_ip_asc(ip, "192.0.2.8", 0), 0);
	X509 *v6 = leaf_for(ca, "2001:db8::1");
	assert_int_equal(X509_check_ip_asc(v6, "2001:db8::1", 0), 1);
	X509_free(a);
	X509_free(again);
	X509_free(ip);
	X509_free(v6);
	X509_free(root);
	tca_unref(ca);
}

/* At most TCA_MAX_LEAVES names: one job naming ever more hosts cannot grow the supervisor without
 * bound; names already minted keep working past the cap. */
static void leaf_cap(void **state)
{
	(void)state;
	struct tls_ca *ca = new_ca();
	char name[64];
	for (int i = 0; i < TCA_MAX_LEAVES; i++) {
		snprintf(name, sizeof(name), "h%d.example.com", i);
		SSL_CTX *ctx = tca_server_ctx(ca, name);
		assert_non_null(ctx);
		SSL_CTX_free(ctx);
	}
	assert_null(tca_server_ctx(ca, "one-too-many.example.com"));
	SSL_CTX *ctx = tca_server_ctx(ca, "h7.example.com");
	assert_non_null(ctx);
	SSL_CTX_free(ctx);
	tca_unref(ca);
}

static void upstream_side(void **state)
{
	(void)state;
	struct tls_ca *ca = new_ca();
	SSL_CTX *c = tca_client_ctx(ca);
	assert_non_null(c);
	assert_true(SSL_CTX_get_verify_mode(c) & SSL_VERIFY_PEER);
	assert_int_equal(SSL_CTX_get_min_proto_version(c), TLS1_2_VERSION);
	assert_null(tca_client_ctx(NULL));
	tca_unref(ca);
	/* The operator's CA file: read now; missing or without a certificate, refused. */
	struct tls_ca *u = NULL;
	assert_int_equal(tca_new("/nonexistent/ca.pem", &u), -ENOENT);
	char path[] = "/tmp/test_tlsca.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not a certificate\n", 18), 18);
	assert_int_equal(tca_new(path, &u), -EINVAL);
	/* Another CA's PEM (any certificate) is accepted as the upstreams' only anchor. */
	struct tls_ca *src = new_ca();
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, tca_pem(src), strlen(tca_pem(src)), 0), (ssize_t)strlen(tca_pem(src)));
	close(fd);
	assert_int_equal(tca_new(path, &u), 0);
	assert_non_null(tca_client_ctx(u));
	X509_STORE *st = SSL_CTX_get_cert_store(tca_client_ctx(u));
	assert_non_null(st);
	STACK_OF(X509_OBJECT) *objs = X509_STORE_get0_objects(st);
	assert_int_equal(sk_X509_OBJECT_num(objs), 1);
	tca_unref(u);
	tca_unref(src);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_ca),
		cmocka_unit_test(leaves),
		cmocka_unit_test(leaf_cap),
		cmocka_unit_test(upstream_side),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
