/* Test PKI made at test time (never committed): a cluster CA, a foreign CA,
 * good and deliberately broken node certificates, and a CRL. Shared by the
 * TLS unit tests and the secure integration tests. */
#ifndef RDMX_TLS_TEST_PKI_H
#define RDMX_TLS_TEST_PKI_H

#include <stddef.h>

#include <rdmx/log.h>
#include <rdmx/tls.h>

/* Files made in the directory, each as NAME.crt + NAME.key:
 *   ca          the cluster CA (ca.crt, ca.key) + crl.pem revoking "revoked"
 *   otherca     a second, untrusted CA
 *   server      DNS:server.test  serverAuth+clientAuth
 *   client      DNS:client.test  serverAuth+clientAuth
 *   client2     DNS:client2.test (another member)
 *   expired     DNS:client.test  validity ended yesterday
 *   notyet      DNS:client.test  validity starts tomorrow
 *   wrongsan    DNS:evil.example
 *   ctlsan      DNS:evil.example with control characters (ESC, newline) in it
 *   cnonly      CN=client.test, no subjectAltName
 *   selfsigned  DNS:client.test, self-signed
 *   revoked     DNS:client.test, listed in crl.pem
 *   codesign    DNS:client.test, extendedKeyUsage codeSigning only
 *   foreign     DNS:client.test, signed by otherca
 *   srvexpired  DNS:server.test, expired
 *   srvwrongsan DNS:evil.example (as a server)
 */
struct tls_test_pki {
	char dir[256];
};

/* 0 on success. */
int tls_test_pki_create(struct tls_test_pki *pki);
void tls_test_pki_destroy(struct tls_test_pki *pki);
/* "<dir>/<name><suffix>" in a static rotating buffer (8 slots). */
const char *tls_test_pki_path(const struct tls_test_pki *pki, const char *name, const char *suffix);

/* A config with the cluster CA, the identity `name`, allowing `allow` (may
 * be NULL: nothing added). CRL added when with_crl. NULL on failure. */
struct rdmx_tls_config *tls_test_config(const struct tls_test_pki *pki, const char *name,
                                        const char *allow, int with_crl);

/* Log capture: every rdmx log line is kept (last 64), and echoed to stderr. */
void tls_test_log_capture(void);
/* 1 when a captured line contains `needle`. */
int tls_test_log_contains(const char *needle);
void tls_test_log_clear(void);

#endif
