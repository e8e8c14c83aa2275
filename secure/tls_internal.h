/* Internal interfaces between the TLS files of secure/ (not installed). */
#ifndef RDMX_SECURE_TLS_INTERNAL_H
#define RDMX_SECURE_TLS_INTERNAL_H

#include <stdarg.h>

#include <openssl/ssl.h>

#include <rdmx/log.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "common/log.h"

/* secure/'s names for the one log family (common/log.h) */
#define RDMX_SEC_ERR(...) RDMX_ERR(__VA_ARGS__)
#define RDMX_SEC_WARN(...) RDMX_WARN(__VA_ARGS__)
#define RDMX_SEC_INFO(...) RDMX_INFO(__VA_ARGS__)
#define RDMX_SEC_DBG(...) RDMX_DBG(__VA_ARGS__)

/* ---- tls_config.c ---- */

/* Builds (once) and returns the SSL_CTX for `role`; freezes the config. The
 * SSL_CTX stays owned by the config. */
int rdmx__tls_config_ssl_ctx(struct rdmx_tls_config *cfg, enum rdmx_tls_role role, SSL_CTX **ctx);
/* Reference counting: connections hold the config they were made from. */
void rdmx__tls_config_ref(struct rdmx_tls_config *cfg);
void rdmx__tls_config_unref(struct rdmx_tls_config *cfg);
/* The allow-list: 1 with the matching SAN DNS name in match[], 0 when the
 * certificate has DNS names but none is allowed (the first one in first[]),
 * -1 when it has no usable DNS subjectAltName at all. */
int rdmx__tls_config_match_peer(const struct rdmx_tls_config *cfg, X509 *cert, char *match,
                                size_t match_len, char *first, size_t first_len);
uint32_t rdmx__tls_config_max_frame(const struct rdmx_tls_config *cfg);
/* True the first time it is called with `bit` on cfg (log-once lines). */
bool rdmx__tls_config_once(struct rdmx_tls_config *cfg, unsigned bit);
uint32_t rdmx__tls_config_handshake_timeout(const struct rdmx_tls_config *cfg);

/* ---- tls_verify.c ---- */

/* The SSL_CTX verify callback: records the refusal reason on the connection
 * (SSL app data) and checks the allow-list at depth 0. */
int rdmx__tls_verify_cb(int ok, X509_STORE_CTX *store);
/* Maps the failure of an SSL call (SSL_get_error value `ssl_err`, the
 * OpenSSL error queue, errno) to an RDMX_E_* code and a reason text written
 * into reason[len]. Clears the error queue. */
int rdmx__tls_map_error(SSL *ssl, int ssl_err, int in_handshake, char *reason, size_t len);

/* ---- tls_conn.c ---- */

/* Called by the verify callback: `reason` is static, `detail` (may be NULL)
 * is copied (e.g. the refused certificate name). The first failure stays. */
void rdmx__tls_conn_set_verify_failure(struct rdmx_tls_conn *conn, const char *reason,
                                       const char *detail);
int rdmx__tls_conn_set_peer_name(struct rdmx_tls_conn *conn, const char *name);
struct rdmx_tls_config *rdmx__tls_conn_config(const struct rdmx_tls_conn *conn);
enum rdmx_tls_role rdmx__tls_conn_role(const struct rdmx_tls_conn *conn);
/* TLS 1.3 exporter (RFC 8446 7.5) of the established session: len bytes
 * for `label`, no context. 0 or RDMX_E_BAD_STATE / RDMX_E_PROVIDER. */
int rdmx__tls_conn_export_keying(struct rdmx_tls_conn *conn, const char *label, uint8_t *out,
                                 size_t len);
/* The verify failure recorded for this handshake, NULL if none; *detail is
 * "" when none was given. */
const char *rdmx__tls_conn_verify_failure(const struct rdmx_tls_conn *conn, const char **detail);
/* 1 once the handshake has moved past the peer's first message (a whole
 * ClientHello on a server): the listener's "half-open" test. */
int rdmx__tls_conn_hello_done(const struct rdmx_tls_conn *conn);
/* On: a failure is not logged by the connection (its reason is kept,
 * rdmx_tls_conn_get_failure): the owner logs it, as the listener does for
 * refused handshakes, at most a line a second whatever a scanner sends. */
void rdmx__tls_conn_set_quiet_fail(struct rdmx_tls_conn *conn, int on);
/* The one line of a failed connection: its reason and peer, then `suffix`
 * ("" or e.g. the listener's "; N more ... not logged"); INFO when the peer
 * closed (RDMX_E_DISCONNECTED), WARN otherwise. */
void rdmx__tls_conn_log_failure(const struct rdmx_tls_conn *conn, const char *suffix);

/* One step of an established connection's I/O, the one a loop that waits
 * on the fd repeats: writes what is queued (as much as the socket takes),
 * then receives. Answers
 * - RDMX_TLS_DONE: the next whole frame is in *frame / *len (valid until the
 *   next step, recv or destroy); step again for more;
 * - RDMX_TLS_WANT_READ and/or RDMX_TLS_WANT_WRITE: no whole frame yet; wait
 *   for exactly these on the fd before the next step: what the receive waits
 *   for (WANT_WRITE alone: it must first send, e.g. its answer to a
 *   KeyUpdate that the full socket did not take, and a readable socket gets
 *   it no further: watching readability then spins), plus what the write of
 *   our queued frames waits for (WANT_WRITE while bytes remain);
 * - an error of the write or of the receive (rdmx_tls_conn_flush /
 *   rdmx_tls_conn_recv): the connection is dead.
 * Used by the bootstrap's liveness check (bootstrap.c), the bootstrap
 * server's exchange (bootstrap_server.c) and rdmx-bootstrapd's sessions. */
int rdmx__tls_conn_step(struct rdmx_tls_conn *conn, const void **frame, size_t *len);
/* 1 while the connection waits for its peer to read: frames of ours are
 * queued, or its last receive stopped because the TLS layer must first
 * send (its answer to a KeyUpdate, the socket full). A server bounds how
 * long a session may stay so (a peer that never reads would hold it
 * forever). 0 once dead. */
int rdmx__tls_conn_waits_to_write(const struct rdmx_tls_conn *conn);

/* ---- tls_listener.c ---- */

struct sockaddr_storage;
struct rdmx_tls_listener;
/* A listener without a socket of its own: it handshakes the connections
 * handed to it by rdmx__tls_listener_adopt (rdmx_tls_listener_get_port
 * answers 0). */
int rdmx__tls_listener_create_unbound(struct ev_loop *loop, struct rdmx_tls_config *cfg,
                                      rdmx_tls_established_cb established, void *arg,
                                      struct rdmx_tls_listener **out);
/* Takes an accepted, non-blocking socket as if it had accepted it itself
 * (limits, timeout, handshake); the listener owns fd from now on. On the
 * listener's loop thread. */
void rdmx__tls_listener_adopt(struct rdmx_tls_listener *l, int fd,
                              const struct sockaddr_storage *src);

/* Hands every socket the listener accepts to fn instead of handshaking it
 * (fn owns fd; it may give it back with rdmx__tls_listener_adopt). */
typedef void (*rdmx__tls_dispatch_fn)(struct rdmx_tls_listener *l, int fd,
                                      const struct sockaddr_storage *src, void *arg);
void rdmx__tls_listener_set_dispatch(struct rdmx_tls_listener *l, rdmx__tls_dispatch_fn fn,
                                     void *arg);

/* ---- tls_bio.c ---- */

/* A socket BIO that sends with MSG_NOSIGNAL. Does not own the fd. */
BIO *rdmx__tls_bio_new(int fd);

#endif
