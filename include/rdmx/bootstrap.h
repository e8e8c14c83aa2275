/* rdmx bootstrap: make an engine connection whose secrets only ever travel
 * inside mutual TLS 1.3 (rdmx/tls.h).
 *
 *   client                                   server (libev)
 *   TLS handshake (both certificates, allow-lists)
 *                                   <----    hello {versions, name, provider}
 *   checks version and provider
 *   export
 *   hello {version, name, provider} +
 *     exported details + app data   ---->    request_cb decides, gives app data
 *                                            export, connect(client details)
 *                                   <----    {version} + details + app data
 *   connect(server details)                  established_cb
 *
 * The server speaks first. In TLS 1.3 the client finishes its handshake
 * before the server has judged the client's certificate; the server sends
 * its hello only once its TLS layer has accepted that certificate (CA,
 * validity, revocation, key usage, allow-list), so the hello is the client's
 * proof of acceptance. Until it has arrived, and names the client's
 * bootstrap version and provider, the client exports nothing and sends
 * nothing: a refused client learns of the refusal (RDMX_E_AUTH, the server's
 * alert) having sent no application byte. Neither hello carries a secret.
 * Only then does each side send its exported details (the tcp provider's
 * data-connection token, QP numbers, GIDs) and its app data, to a peer whose
 * certificate it has checked. A client that cannot use the server's hello
 * (RDMX_E_PROTOCOL) answers with an error frame, never with details.
 *
 * Data plane: between export and connect each side derives the engine
 * connection's keys from this TLS session (TLS 1.3 exporter, label
 * "EXPORTER-rdmx-data-plane-v1") and installs them with
 * rdmx_conn_set_data_keys: on the tcp provider the data connection is then
 * sealed (AES-256-GCM) from its first frame on. A config with
 * rdmx_tls_config_set_data_plaintext(cfg, true) skips that (logged once per
 * config; both ends must agree, the server refuses a mismatch with
 * RDMX_E_PROTOCOL). On verbs the provider cannot seal RDMA traffic: the
 * bootstrap logs that once per config and goes on (docs/SECURITY.md).
 *
 * "App data" is opaque bytes each side hands the other in the same exchange:
 * ring and memory descriptors, a protocol version, anything whose keys must
 * stay secret. The TLS session stays open as a control and liveness channel:
 * when it is lost (peer closed, reset, TCP keepalive gave up after about 25 s
 * of silence), the engine connection is disconnected (rdmx_conn_disconnect).
 *
 * The engine connection is owned by its context and dies with its
 * disconnected or failure callback. Tell the bootstrap from that callback
 * (rdmx_bootstrap_conn_gone) so that it never touches it afterwards. A handy
 * pattern: set the connection's user data to the bootstrap; the bootstrap
 * clears it when it lets go of the connection (destroy, lost channel), so
 * the callback finds either the live bootstrap or NULL.
 *
 * Threading: a bootstrap and its context belong to one thread (the server's:
 * the libev loop's, which must also drive the context's progress engine). */
#ifndef RDMX_BOOTSTRAP_H
#define RDMX_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include <rdmx/tls.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_ctx;
struct rdmx_conn;
struct rdmx_bootstrap;
struct rdmx_bootstrap_server;
struct ev_loop;

/* Wire version 3: server speaks first, frames on the project's codec
 * (secure/proto/bootstrap.proto). Versions 1 (client first) and 2 (msgpack
 * with string keys) are not spoken any more: such a peer is refused. */
#define RDMX_BOOTSTRAP_VERSION 3u
#define RDMX_BOOTSTRAP_MAX_APP_DATA 65536u
#define RDMX_BOOTSTRAP_MAX_NAME 128u /* hello name: [A-Za-z0-9._-] */
#define RDMX_BOOTSTRAP_MAX_DETAILS 4096u

/* ---- client (blocking, within timeout_ms) ---- */

/* TLS to host:port, the exchange, then rdmx_ctx_connect, all within
 * timeout_ms (the TLS handshake also within the config's handshake
 * timeout). `ctx` must be RUNNING. `name` (may be NULL) tells the server who
 * is calling beyond the certificate (e.g. the service). Nothing is exported
 * nor sent before the server's hello has arrived (see above). On success the
 * engine connection is connecting (its established callback follows through
 * the progress engine).
 * Errors: TLS errors (RDMX_E_AUTH: a certificate was refused, by us or by
 * the server, ...), RDMX_E_CONN_REFUSED (the server's request_cb said no; its
 * text is logged), RDMX_E_PROTOCOL (no common version, provider mismatch,
 * bad message), RDMX_E_TIMEDOUT, engine errors of export/connect. */
int rdmx_bootstrap_connect(struct rdmx_ctx *ctx, struct rdmx_tls_config *cfg, const char *host,
                           uint16_t port, const char *name, const void *app_data, size_t app_len,
                           int timeout_ms, struct rdmx_bootstrap **bootstrap);

/* Non-blocking liveness check of the TLS channel: 0 while alive; once lost,
 * disconnects the engine connection (unless gone) and returns the reason
 * (RDMX_E_DISCONNECTED, ...). Call it from time to time, or use
 * rdmx_bootstrap_check_wants to sleep on rdmx_bootstrap_get_fd. */
int rdmx_bootstrap_check(struct rdmx_bootstrap *bootstrap);
/* rdmx_bootstrap_check that also says, while the channel is alive, what to
 * wait for on rdmx_bootstrap_get_fd before the next call: *wants holds
 * RDMX_TLS_WANT_READ and/or RDMX_TLS_WANT_WRITE (rdmx/tls.h). Wait for
 * exactly those: a read that must first write (the answer to the peer's TLS
 * KeyUpdate while its socket is full) wants write alone, and a loop that
 * waits for readable then would spin. After many frames in one call it
 * wants both (come back at once: more may wait inside the TLS layer).
 * *wants is written only on success. RDMX_E_INVAL for NULL. */
int rdmx_bootstrap_check_wants(struct rdmx_bootstrap *bootstrap, int *wants);

/* Closes the TLS channel and disconnects the engine connection (unless gone).
 * NULL / *bootstrap == NULL is a no-op. */
int rdmx_bootstrap_destroy(struct rdmx_bootstrap **bootstrap);

/* From the engine's disconnected / failure callback of this connection. */
int rdmx_bootstrap_conn_gone(struct rdmx_bootstrap *bootstrap);

int rdmx_bootstrap_get_conn(const struct rdmx_bootstrap *bootstrap, struct rdmx_conn **conn);
/* The peer's app data (owned by the bootstrap). */
int rdmx_bootstrap_get_peer_data(const struct rdmx_bootstrap *bootstrap, const void **data,
                                 size_t *len);
/* Certificate name (allow-listed SAN) and hello name ("" if none). */
int rdmx_bootstrap_get_peer_names(const struct rdmx_bootstrap *bootstrap, const char **cert_name,
                                  const char **hello_name);
int rdmx_bootstrap_get_fd(const struct rdmx_bootstrap *bootstrap, int *fd);
int rdmx_bootstrap_set_user_data(struct rdmx_bootstrap *bootstrap, void *user_data);
int rdmx_bootstrap_get_user_data(const struct rdmx_bootstrap *bootstrap, void **user_data);

/* ---- server (libev; target rdmx_secure_ev) ---- */

/* Decides on a client before anything is exported: return 0 and set
 * *reply / *reply_len (copied; may stay NULL / 0) to accept, or a negative
 * RDMX_E_* to refuse (the client gets RDMX_E_CONN_REFUSED). The peer's names
 * and app data are readable through the getters; its engine connection does
 * not exist yet. */
typedef int (*rdmx_bootstrap_request_cb)(struct rdmx_bootstrap_server *server,
                                         struct rdmx_bootstrap *bootstrap, const void **reply,
                                         size_t *reply_len, void *arg);
/* The exchange is done and rdmx_ctx_connect was called: the callback owns
 * `bootstrap` (destroy it when done). */
typedef void (*rdmx_bootstrap_established_cb)(struct rdmx_bootstrap_server *server,
                                              struct rdmx_bootstrap *bootstrap, void *arg);
/* The TLS channel of an established bootstrap was lost; the engine
 * connection has been disconnected (unless gone). `reason` is the TLS
 * layer's status, or RDMX_E_TIMEDOUT when the peer did not read: a session
 * that waits 10 s to write (its peer leaves our frames, or the TLS layer's
 * own answers to KeyUpdate requests, unread) is ended and logged. The owner
 * still destroys `bootstrap`. */
typedef void (*rdmx_bootstrap_lost_cb)(struct rdmx_bootstrap_server *server,
                                       struct rdmx_bootstrap *bootstrap, int reason, void *arg);

struct rdmx_bootstrap_server_ops {
	rdmx_bootstrap_request_cb request;         /* may be NULL: accept all */
	rdmx_bootstrap_established_cb established; /* required */
	rdmx_bootstrap_lost_cb lost;               /* may be NULL */
};

/* Listens on host:port (TLS listener of rdmx/tls.h with its limits). Each
 * client whose certificate the TLS layer accepted is greeted with the
 * server's hello at once; its hello must then arrive within the config's
 * handshake timeout, and a session that waits 10 s for its peer to read is
 * dropped (before the exchange) or lost (after it, see the lost callback). `name` is sent in the
 * hello (may be NULL). `cfg` and `ctx` must outlive the server. */
int rdmx_bootstrap_server_create(struct ev_loop *loop, struct rdmx_ctx *ctx,
                                 struct rdmx_tls_config *cfg, const char *host, uint16_t port,
                                 const char *name, const struct rdmx_bootstrap_server_ops *ops,
                                 void *arg, struct rdmx_bootstrap_server **server);
int rdmx_bootstrap_server_get_port(const struct rdmx_bootstrap_server *server, uint16_t *port);
/* Drops exchanges in progress and stops listening. Established bootstraps
 * stay with their owners. */
int rdmx_bootstrap_server_destroy(struct rdmx_bootstrap_server **server);

#ifdef __cplusplus
}
#endif
#endif
