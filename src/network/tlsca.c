/* tlsca.c — the per-sandbox CA: its key, the leaves it mints, the server and client contexts.
 *
 * Why this is safe. The CA key is generated here, in the supervisor's memory, for one sandbox
 * (one policy), and is never serialized: only the certificate leaves this file (tca_pem), and
 * only into that sandbox's trust store. A leaf is minted only for a name the proxy already
 * allowed, so the CA can vouch for nothing the allowlist does not name, and a stolen leaf (the
 * sandbox never sees a key either) would be trusted by nobody but this sandbox. The CA carries
 * basicConstraints CA:TRUE with pathlen 0 and keyUsage keyCertSign only; leaves are CA:FALSE,
 * serverAuth only, with the name as their one subjectAltName.
 */
#include "network/tlsca.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "network/allowlist.h"

#define CA_DAYS	  7
#define LEAF_DAYS 7

struct leaf {
	char name[AL_HOST_MAX];
	SSL_CTX *ctx;
};

struct tls_ca {
	atomic_uint refs;
	EVP_PKEY *key;	    /* the CA's */
	EVP_PKEY *leaf_key; /* one key for every leaf: minting is then a signature, not a keygen */
	X509 *cert;
	char *pem;
	SSL_CTX *client; /* upstreams */
	pthread_mutex_t mu;
	struct leaf *leaves; /* TCA_MAX_LEAVES */
	size_t nleaves;
};

static EVP_PKEY *ec_key(void)
{
	return EVP_EC_gen("P-256");
}

static bool add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX v3;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, issuer, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
	bool ok = e && X509_add_ext(x, e, -1) == 1;
	X509_EXTENSION_free(e);
	return ok;
}

/* Serial: 16 random bytes, positive (RFC 5280 allows up to 20 octets). */
static bool set_serial(X509 *x)
{
	unsigned char b[16];
	if (RAND_bytes(b, sizeof(b)) != 1)
		return false;
	b[0] &= 0x7f;
	BIGNUM *bn = BN_bin2bn(b, sizeof(b), NULL);
	bool ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
	BN_free(bn);
	return ok;
}

/* A certificate shell: version 3, serial, validity from an hour ago (clock skew between the
 * supervisor and nothing else: the sandbox shares the host's clock, but a cautious margin costs
 * nothing), subject CN. */
static X509 *shell(EVP_PKEY *pub, const char *cn, int days)
{
	X509 *x = X509_new();
	if (!x)
		return NULL;
	X509_NAME *n = X509_get_subject_name(x);
	bool ok = X509_set_version(x, 2) == 1 && set_serial(x) && X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
		  X509_gmtime_adj(X509_getm_notAfter(x), (long)days * 86400) &&
		  X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0) == 1 &&
		  X509_set_pubkey(x, pub) == 1;
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

static int make_ca(struct tls_ca *ca)
{
	unsigned char r[6];
	char cn[64];
	if (RAND_bytes(r, sizeof(r)) != 1 || !(ca->key = ec_key()) || !(ca->leaf_key = ec_key()))
		return -EIO;
	snprintf(cn, sizeof(cn), "airlock sandbox CA %02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5]);
	if (!(ca->cert = shell(ca->key, cn, CA_DAYS)))
		return -EIO;
	bool ok = X509_set_issuer_name(ca->cert, X509_get_subject_name(ca->cert)) == 1 &&
		  add_ext(ca->cert, ca->cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
		  add_ext(ca->cert, ca->cert, NID_key_usage, "critical,keyCertSign,cRLSign") &&
		  add_ext(ca->cert, ca->cert, NID_subject_key_identifier, "hash") &&
		  X509_sign(ca->cert, ca->key, EVP_sha256()) > 0;
	if (!ok)
		return -EIO;
	BIO *b = BIO_new(BIO_s_mem());
	char *p = NULL;
	long n = b && PEM_write_bio_X509(b, ca->cert) == 1 ? BIO_get_mem_data(b, &p) : 0;
	if (n > 0 && (ca->pem = malloc((size_t)n + 1))) {
		memcpy(ca->pem, p, (size_t)n);
		ca->pem[n] = 0;
	}
	BIO_free(b);
	return ca->pem ? 0 : -ENOMEM;
}

/* Adds every certificate of the PEM file to store: how many, or -errno. O_NONBLOCK and a regular
 * file only: a FIFO named by mistake is refused (-EINVAL) instead of hanging the caller. */
static int load_pem_file(const char *path, X509_STORE *store)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int e = S_ISREG(st.st_mode) ? errno : EINVAL;
		close(fd);
		return -e;
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		int e = errno;
		close(fd);
		return -e;
	}
	int n = 0;
	X509 *x;
	while ((x = PEM_read_X509(f, NULL, NULL, NULL))) {
		if (X509_STORE_add_cert(store, x) == 1)
			n++;
		X509_free(x);
	}
	fclose(f);
	ERR_clear_error();
	return n > 0 ? n : -EINVAL;
}

/* Upstreams: the chain verified (host store, or only the operator's CA file) and the name checked
 * by the caller (SSL_set1_host): without both, "the upstream" could be whoever answers. */
int tca_client_new(const char *upstream_ca, SSL_CTX **out)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	int r = ctx ? 0 : -EIO;
	if (ctx) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
		/* Many servers close without close_notify after "Connection: close": the same end. */
		SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
		r = SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 ? 0 : -EIO;
	}
	if (r == 0 && upstream_ca) {
		int n = load_pem_file(upstream_ca, SSL_CTX_get_cert_store(ctx));
		r = n < 0 ? n : 0; /* -errno opening it, -EINVAL without a certificate */
	} else if (r == 0) {
		r = SSL_CTX_set_default_verify_paths(ctx) == 1 ? 0 : -EIO;
	}
	ERR_clear_error();
	if (r < 0) {
		SSL_CTX_free(ctx);
		return r;
	}
	*out = ctx;
	return 0;
}

int tca_new(const char *upstream_ca, struct tls_ca **out)
{
	struct tls_ca *ca = calloc(1, sizeof(*ca));
	if (!ca)
		return -ENOMEM;
	atomic_init(&ca->refs, 1);
	pthread_mutex_init(&ca->mu, NULL);
	ca->leaves = calloc(TCA_MAX_LEAVES, sizeof(*ca->leaves));
	int r = ca->leaves ? make_ca(ca) : -ENOMEM;
	if (r == 0)
		r = tca_client_new(upstream_ca, &ca->client);
	ERR_clear_error();
	if (r < 0) {
		tca_unref(ca);
		return r;
	}
	*out = ca;
	return 0;
}

struct tls_ca *tca_ref(struct tls_ca *ca)
{
	if (ca)
		atomic_fetch_add(&ca->refs, 1);
	return ca;
}

void tca_unref(struct tls_ca *ca)
{
	if (!ca || atomic_fetch_sub(&ca->refs, 1) != 1)
		return;
	for (size_t i = 0; ca->leaves && i < ca->nleaves; i++)
		SSL_CTX_free(ca->leaves[i].ctx);
	free(ca->leaves);
	SSL_CTX_free(ca->client);
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key); /* OpenSSL clears private key material when it frees it */
	EVP_PKEY_free(ca->leaf_key);
	free(ca->pem);
	pthread_mutex_destroy(&ca->mu);
	free(ca);
}

const char *tca_pem(const struct tls_ca *ca)
{
	return ca ? ca->pem : NULL;
}

SSL_CTX *tca_client_ctx(struct tls_ca *ca)
{
	return ca ? ca->client : NULL;
}

static X509 *mint(struct tls_ca *ca, const char *name)
{
	unsigned char bin[16];
	bool ip = inet_pton(AF_INET, name, bin) == 1 || inet_pton(AF_INET6, name, bin) == 1;
	char san[AL_HOST_MAX + 8];
	snprintf(san, sizeof(san), "%s:%s", ip ? "IP" : "DNS", name);
	X509 *x = shell(ca->leaf_key, name, LEAF_DAYS);
	bool ok = x && X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) == 1 &&
		  add_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") &&
		  add_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature") &&
		  add_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") &&
		  add_ext(x, ca->cert, NID_authority_key_identifier, "keyid:always") &&
		  add_ext(x, ca->cert, NID_subject_alt_name, san) && X509_sign(x, ca->key, EVP_sha256()) > 0;
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

static SSL_CTX *server_ctx(struct tls_ca *ca, const char *name)
{
	X509 *leaf = mint(ca, name);
	SSL_CTX *ctx = leaf ? SSL_CTX_new(TLS_server_method()) : NULL;
	bool ok = ctx && SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 &&
		  SSL_CTX_use_certificate(ctx, leaf) == 1 && SSL_CTX_use_PrivateKey(ctx, ca->leaf_key) == 1 &&
		  SSL_CTX_add1_chain_cert(ctx, ca->cert) == 1;
	X509_free(leaf);
	if (!ok) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
	/* HTTP/1.1 only: the terminated stream is parsed as HTTP/1.x requests. ALPN is left unset,
	 * so a client offering h2 falls back to HTTP/1.1. */
	return ctx;
}

SSL_CTX *tca_server_ctx(struct tls_ca *ca, const char *name)
{
	SSL_CTX *ctx = NULL;
	pthread_mutex_lock(&ca->mu);
	for (size_t i = 0; i < ca->nleaves && !ctx; i++)
		if (strcmp(ca->leaves[i].name, name) == 0)
			ctx = ca->leaves[i].ctx;
	if (!ctx && ca->nleaves < TCA_MAX_LEAVES && (ctx = server_ctx(ca, name))) {
		snprintf(ca->leaves[ca->nleaves].name, AL_HOST_MAX, "%s", name);
		ca->leaves[ca->nleaves++].ctx = ctx;
	}
	if (ctx)
		SSL_CTX_up_ref(ctx);
	pthread_mutex_unlock(&ca->mu);
	ERR_clear_error();
	return ctx;
}
