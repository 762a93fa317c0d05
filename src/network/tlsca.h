/* tlsca.h — the per-sandbox certificate authority that lets airlock terminate the job's TLS for
 * hosts whose rules must see requests: a CA key made in memory for one sandbox (never written
 * anywhere), a leaf certificate per allowed name minted on first use and cached, and the CA's
 * public certificate in PEM for the sandbox's trust store only. Also the client side: the
 * upstream's TLS, verified against the host's store or the operator's CA file. */
#ifndef AL_NETWORK_TLSCA_H
#define AL_NETWORK_TLSCA_H

#include <stddef.h>

#include <openssl/ssl.h>

#define TCA_MAX_LEAVES 512 /* names one sandbox's CA signs; more are refused */

struct tls_ca; /* opaque, reference-counted, thread-safe */

/* A new CA (P-256, valid for 7 days from an hour ago; named "airlock sandbox CA <random>"), with
 * one reference. upstream_ca: a PEM file whose certificates alone verify upstreams (read now), or
 * NULL for the host's default store. -ENOMEM, -EIO (OpenSSL failed), -errno reading the file,
 * -EINVAL when it holds no certificate. */
int tca_new(const char *upstream_ca, struct tls_ca **out);
struct tls_ca *tca_ref(struct tls_ca *ca);
/* Drops one reference; the last one wipes and frees the keys. NULL is ignored. */
void tca_unref(struct tls_ca *ca);
/* The CA certificate, PEM, NUL-terminated: public, for the sandbox's trust store. */
const char *tca_pem(const struct tls_ca *ca);
/* A server context presenting a leaf for name (a DNS name or an IP literal), minted and cached
 * on first use; one reference for the caller (SSL_CTX_free). NULL beyond TCA_MAX_LEAVES or on
 * failure. */
SSL_CTX *tca_server_ctx(struct tls_ca *ca, const char *name);
/* The client context for upstreams (verify peer, TLS 1.2+), shared; the caller must not free it. */
SSL_CTX *tca_client_ctx(struct tls_ca *ca);
/* A new client context for upstreams, as tca_client_ctx's: peer verified, TLS 1.2+, against the
 * host's default store or only upstream_ca's certificates (a regular PEM file, read now). The
 * caller owns *out (SSL_CTX_free). -EIO (OpenSSL failed), -errno opening the file, -EINVAL when it
 * is not a regular file or holds no certificate. */
int tca_client_new(const char *upstream_ca, SSL_CTX **out);

#endif
