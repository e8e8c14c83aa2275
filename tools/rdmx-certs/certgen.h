/* Certificate generation shared by rdmx-certs and the TLS tests (internal,
 * not installed). Keys are ECDSA P-256; certificates X.509 v3 signed with
 * SHA-256. Nothing here logs key material. Functions return 0 or -1 and print
 * one line to stderr naming what failed. */
#ifndef RDMX_CERTGEN_H
#define RDMX_CERTGEN_H

#include <stddef.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

/* extendedKeyUsage bits; 0 = no extendedKeyUsage extension at all */
#define RDMX_CERTGEN_EKU_SERVER 0x1u
#define RDMX_CERTGEN_EKU_CLIENT 0x2u
#define RDMX_CERTGEN_EKU_CODESIGN 0x4u

struct rdmx_certgen_opts {
	const char *cn;          /* subject commonName, may be NULL */
	const char *const *sans; /* "DNS:name" or "IP:addr" entries */
	size_t n_sans;
	long not_before_s; /* validity start, seconds from now (may be < 0) */
	long not_after_s;  /* validity end, seconds from now */
	int is_ca;         /* basicConstraints CA:TRUE, keyCertSign + cRLSign */
	unsigned eku;      /* RDMX_CERTGEN_EKU_* bits */
};

/* A fresh ECDSA P-256 key, NULL on failure. */
EVP_PKEY *rdmx__certgen_key(void);

/* A certificate for `key` issued by (issuer, issuer_key); issuer == NULL makes
 * it self-signed with `key`. NULL on failure. */
X509 *rdmx__certgen_cert(const struct rdmx_certgen_opts *opts, EVP_PKEY *key, X509 *issuer,
                         EVP_PKEY *issuer_key);

/* A CRL signed by the CA listing the serials of `prev` (may be NULL) plus
 * `revoke` (may be NULL). Valid from now for `days` days. */
X509_CRL *rdmx__certgen_crl(X509 *ca, EVP_PKEY *ca_key, X509_CRL *prev, X509 *revoke, int days);

/* PEM writers. The key file is created with mode 0600 (existing files are
 * replaced atomically through a temporary name). */
int rdmx__certgen_write_key(const char *path, EVP_PKEY *key);
int rdmx__certgen_write_cert(const char *path, X509 *cert);
int rdmx__certgen_write_crl(const char *path, X509_CRL *crl);

/* PEM readers; NULL on failure (a missing file prints nothing when quiet).
 * A key file that group or others can read (fstat of the opened file) is
 * refused with a line naming it and its mode, unless allow_insecure. */
EVP_PKEY *rdmx__certgen_read_key(const char *path, int allow_insecure);
X509 *rdmx__certgen_read_cert(const char *path);
X509_CRL *rdmx__certgen_read_crl(const char *path, int quiet);

#endif
