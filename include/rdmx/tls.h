/* rdmx TLS: mutual TLS 1.3 against a cluster CA, framed messages.
 *
 * Policy (fixed, not configurable): TLS 1.3 only; both sides present a
 * certificate signed by the configured CA; the peer's certificate must carry
 * the right extended key usage (a server checks clientAuth, a client checks
 * serverAuth) and a subjectAltName DNS name allowed by the allow-list (the
 * subject commonName is never looked at); no session tickets, no resumption,
 * no 0-RTT; the CRL is checked when one is configured.
 *
 * Every refusal returns a negative RDMX_E_* code and logs one line naming
 * the reason and the peer address ("tls: certificate expired (peer ...)").
 * Nothing here ever logs key material.
 *
 * Frames: a 4-byte big-endian length, then that many payload bytes. A frame
 * longer than the configured maximum is a protocol violation: the receiver
 * logs it, answers RDMX_E_TOO_BIG and the connection is dead from then on.
 *
 * Threads: a config may be shared by connections on several threads once it
 * has been used (it is frozen then: setters answer RDMX_E_BAD_STATE). A
 * connection belongs to one thread at a time.
 *
 * SIGPIPE: the connection writes with MSG_NOSIGNAL, a closed peer never
 * raises SIGPIPE. */
#ifndef RDMX_TLS_H
#define RDMX_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_tls_config;
struct rdmx_tls_conn;
struct rdmx_tls_listener;
struct ev_loop;

/* Non-negative results of the step functions. */
enum rdmx_tls_result {
	RDMX_TLS_DONE = 0,
	RDMX_TLS_WANT_READ = 1,  /* call again when the fd is readable */
	RDMX_TLS_WANT_WRITE = 2, /* call again when the fd is writable */
};

#define RDMX_TLS_DEFAULT_HANDSHAKE_TIMEOUT_MS 10000u
#define RDMX_TLS_DEFAULT_MAX_FRAME (1u << 20)
#define RDMX_TLS_MAX_FRAME_LIMIT (1u << 30)
#define RDMX_TLS_DEFAULT_MAX_HANDSHAKES 64u
#define RDMX_TLS_DEFAULT_MAX_HANDSHAKES_PER_SOURCE 8u
#define RDMX_TLS_MAX_ALLOWED_NAMES 256u
#define RDMX_TLS_NAME_MAX 253u

/* ---- configuration ---- */

/* Errors: RDMX_E_INVAL, RDMX_E_NOMEM. */
int rdmx_tls_config_create(struct rdmx_tls_config **cfg);
/* NULL / *cfg == NULL is a no-op. Connections made from the config keep what
 * they need: it may be destroyed while they live. */
int rdmx_tls_config_destroy(struct rdmx_tls_config **cfg);

/* Trust anchors: a PEM file of CA certificates, or a hashed directory
 * (c_rehash layout). One of the two is required. Files are read when the
 * config is first used; a missing or bad file fails that first use with
 * RDMX_E_INVAL and a log line naming the file. */
int rdmx_tls_config_set_ca_file(struct rdmx_tls_config *cfg, const char *path);
int rdmx_tls_config_set_ca_dir(struct rdmx_tls_config *cfg, const char *path);
/* Own certificate chain (PEM, leaf first) and private key (PEM). Required. */
int rdmx_tls_config_set_cert_key(struct rdmx_tls_config *cfg, const char *cert_path,
                                 const char *key_path);
/* A private key file that group or others may read (mode & 077, checked
 * with fstat on the opened file) is refused when the config is loaded:
 * RDMX_E_INSECURE_KEY and a log line naming the file and its mode, as ssh
 * does. `allow` true accepts such a file (default false); it is still logged. */
int rdmx_tls_config_set_allow_insecure_key(struct rdmx_tls_config *cfg, bool allow);
/* Data plane of the connections bootstrapped with this config: by default
 * (false) every engine connection is sealed with keys derived from the TLS
 * session (tcp: AES-256-GCM; see rdmx_conn_set_data_keys). true turns that
 * off, for trusted networks only: tokens, ring descriptors, remote keys and
 * payloads then cross the network in the clear. Logged when first used;
 * both ends must agree (a mismatch is refused at the bootstrap hello), and
 * rdmx_ctx_get_stats counts such connections in conns_plaintext. */
int rdmx_tls_config_set_data_plaintext(struct rdmx_tls_config *cfg, bool plaintext);
int rdmx_tls_config_get_data_plaintext(const struct rdmx_tls_config *cfg, bool *plaintext);
/* Optional CRL file (PEM, one or more CRLs); turns on revocation checking of
 * the peer's certificate. */
int rdmx_tls_config_set_crl_file(struct rdmx_tls_config *cfg, const char *path);

/* Adds a name the peer's certificate may carry as a subjectAltName DNS entry.
 * Patterns: an exact name ("db1.svc.local", case-insensitive), "*.suffix"
 * where '*' stands for exactly one non-empty label ("*.svc.local" matches
 * "a.svc.local", not "a.b.svc.local" nor "svc.local"), or "*" alone: any DNS
 * name (the certificate still needs one). With no name added every peer is
 * refused. Errors: RDMX_E_INVAL (empty, too long, '*' elsewhere),
 * RDMX_E_FULL past RDMX_TLS_MAX_ALLOWED_NAMES. */
int rdmx_tls_config_add_allowed_peer(struct rdmx_tls_config *cfg, const char *pattern);
/* Whether `pattern` is one rdmx_tls_config_add_allowed_peer accepts (the
 * rule above; the rest DNS characters, no empty label): RDMX_OK or
 * RDMX_E_INVAL. For programs that read patterns from their own files. */
int rdmx_tls_check_peer_pattern(const char *pattern);

/* Handshake timeout, enforced by the listener and by rdmx_tls_connect.
 * 1 ms .. 10 min; default RDMX_TLS_DEFAULT_HANDSHAKE_TIMEOUT_MS. */
int rdmx_tls_config_set_handshake_timeout(struct rdmx_tls_config *cfg, uint32_t ms);
int rdmx_tls_config_get_handshake_timeout(const struct rdmx_tls_config *cfg, uint32_t *ms);
/* Largest frame payload sent or accepted: 1 .. RDMX_TLS_MAX_FRAME_LIMIT;
 * default RDMX_TLS_DEFAULT_MAX_FRAME. */
int rdmx_tls_config_set_max_frame(struct rdmx_tls_config *cfg, uint32_t bytes);
int rdmx_tls_config_get_max_frame(const struct rdmx_tls_config *cfg, uint32_t *bytes);
/* Listener limits: handshakes in progress at once per listener, and per
 * source address. A new connection over either evicts the handshake idle
 * longest (of that source, else of the listener), so the listener always
 * accepts and a client whose handshake moves gets through while others hold
 * half-open handshakes. */
int rdmx_tls_config_set_handshake_limits(struct rdmx_tls_config *cfg, uint32_t max_total,
                                         uint32_t max_per_source);
int rdmx_tls_config_get_handshake_limits(const struct rdmx_tls_config *cfg, uint32_t *max_total,
                                         uint32_t *max_per_source);

/* Loads the files and builds the TLS state now instead of at first use, so
 * that a program can fail at start-up. Freezes the config. */
int rdmx_tls_config_load(struct rdmx_tls_config *cfg);

/* Whether `name` matches `pattern` under the allow-list rules above
 * (1 / 0). Exposed for policies built on certificate names. */
int rdmx_tls_name_match(const char *pattern, const char *name);

/* ---- connections over a connected, non-blocking socket ---- */

enum rdmx_tls_role {
	RDMX_TLS_CLIENT = 0,
	RDMX_TLS_SERVER = 1,
};

/* Wraps `fd` (made non-blocking here). The connection owns the fd from then
 * on, also on failure (it is closed). `server_name` (client only, may be
 * NULL) is sent as SNI; the server's certificate is still checked against the
 * allow-list, not against server_name. Errors: RDMX_E_INVAL, RDMX_E_NOMEM,
 * RDMX_E_PROVIDER (TLS library), what rdmx_tls_config_load returns. */
int rdmx_tls_conn_create(struct rdmx_tls_config *cfg, int fd, enum rdmx_tls_role role,
                         const char *server_name, struct rdmx_tls_conn **conn);
/* Sends close_notify if the session is healthy (best effort, never blocks),
 * closes the fd, frees. NULL / *conn == NULL is a no-op. */
int rdmx_tls_conn_destroy(struct rdmx_tls_conn **conn);

/* One handshake step: RDMX_TLS_DONE, RDMX_TLS_WANT_READ/WRITE, or an error:
 * RDMX_E_AUTH (certificate refused, by us or by the peer), RDMX_E_PROTOCOL
 * (not TLS, not TLS 1.3, malformed), RDMX_E_DISCONNECTED (peer closed),
 * RDMX_E_PROVIDER (socket error). A failed connection stays failed. */
int rdmx_tls_conn_handshake(struct rdmx_tls_conn *conn);

/* Queues one frame and writes what the socket takes. 0: queued (check
 * rdmx_tls_conn_want_write and call rdmx_tls_conn_flush when writable);
 * RDMX_E_AGAIN: the send queue is full (about two frames), nothing queued;
 * RDMX_E_TOO_BIG: len over the max frame, nothing queued, connection intact;
 * RDMX_E_BAD_STATE before the handshake is done; other errors kill it. */
int rdmx_tls_conn_send(struct rdmx_tls_conn *conn, const void *buf, size_t len);
/* Writes queued bytes: RDMX_TLS_DONE (queue empty), RDMX_TLS_WANT_WRITE /
 * RDMX_TLS_WANT_READ (bytes remain), or an error. */
int rdmx_tls_conn_flush(struct rdmx_tls_conn *conn);
/* 1 when bytes are queued. */
int rdmx_tls_conn_want_write(const struct rdmx_tls_conn *conn);

/* Receives the next whole frame: RDMX_TLS_DONE with *frame and *len set (the
 * bytes stay valid until the next recv or destroy), RDMX_TLS_WANT_READ /
 * WANT_WRITE (no whole frame yet), RDMX_E_DISCONNECTED (peer closed),
 * RDMX_E_TOO_BIG (oversized frame: logged, connection dead),
 * RDMX_E_PROTOCOL, RDMX_E_AUTH (peer alert), RDMX_E_PROVIDER. TLS buffers
 * records internally: call it until it answers WANT_READ before waiting on
 * the fd again. */
int rdmx_tls_conn_recv(struct rdmx_tls_conn *conn, const void **frame, size_t *len);
/* 1 when part of a frame (or of the TLS record carrying it) has arrived and
 * the rest has not, after recv answered WANT_READ: a server times such a
 * peer out ("stalled mid-frame"); 0 otherwise. */
int rdmx_tls_conn_rx_partial(const struct rdmx_tls_conn *conn);

int rdmx_tls_conn_get_fd(const struct rdmx_tls_conn *conn, int *fd);
/* The allow-listed subjectAltName DNS name of the peer (valid while the
 * connection lives); RDMX_E_BAD_STATE before the handshake is done. */
int rdmx_tls_conn_get_peer_name(const struct rdmx_tls_conn *conn, const char **name);
/* Peer address as "ip:port" / "[ip6]:port" (for logs). */
int rdmx_tls_conn_get_peer_addr(const struct rdmx_tls_conn *conn, const char **addr);
/* Text of the last refusal or failure reason (static string), NULL if none. */
const char *rdmx_tls_conn_get_failure(const struct rdmx_tls_conn *conn);

/* ---- blocking client helpers (poll-based, timeouts in ms) ---- */

/* Resolves host, connects TCP, runs the handshake as client; the whole
 * within the config's handshake timeout. Errors: as rdmx_tls_conn_handshake,
 * RDMX_E_NOT_FOUND (name does not resolve), RDMX_E_CONN_REFUSED,
 * RDMX_E_TIMEDOUT. */
int rdmx_tls_connect(struct rdmx_tls_config *cfg, const char *host, uint16_t port,
                     struct rdmx_tls_conn **conn);
/* The same within timeout_ms (when shorter than the config's handshake
 * timeout; 0: the config's): resolution aside, TCP connect and handshake
 * together end by then, RDMX_E_TIMEDOUT against a server that accepts and
 * says nothing. */
int rdmx_tls_connect_timeout(struct rdmx_tls_config *cfg, const char *host, uint16_t port,
                             int timeout_ms, struct rdmx_tls_conn **conn);
/* Queue + flush, waiting up to timeout_ms (RDMX_E_TIMEDOUT). */
int rdmx_tls_conn_send_wait(struct rdmx_tls_conn *conn, const void *buf, size_t len,
                            int timeout_ms);
/* Waits up to timeout_ms for one frame (RDMX_E_TIMEDOUT); 0 = poll once. */
int rdmx_tls_conn_recv_wait(struct rdmx_tls_conn *conn, const void **frame, size_t *len,
                            int timeout_ms);

/* ---- libev listener (target rdmx_secure_ev; the core never links libev) ----
 * Accepts TCP connections, runs each handshake without blocking, drops a
 * handshake that has not finished within the timeout (slowloris), keeps the
 * handshake limits, and hands each established connection to `established`,
 * which owns it from then on. All calls and callbacks on the loop's thread. */

typedef void (*rdmx_tls_established_cb)(struct rdmx_tls_listener *l, struct rdmx_tls_conn *conn,
                                        void *arg);
/* Told about each connection dropped before establishment: `err` is the
 * code, `reason` a static text, `peer` the address. */
typedef void (*rdmx_tls_refused_cb)(struct rdmx_tls_listener *l, int err, const char *reason,
                                    const char *peer, void *arg);

struct rdmx_tls_listener_stats {
	uint64_t accepted;    /* TCP connections accepted */
	uint64_t established; /* handed to the established callback */
	uint64_t refused;     /* handshake failed */
	uint64_t timed_out;   /* handshake timeout */
	uint64_t over_limit;  /* new connections over the per-source limit */
	uint64_t evicted;     /* idle handshakes dropped to make room */
	uint32_t handshaking; /* in progress now */
};

/* Binds host:port (host NULL = all addresses; port 0 = any, see get_port),
 * listens and starts accepting. `cfg` must outlive the listener; callbacks
 * must not destroy the listener. Errors: RDMX_E_INVAL, RDMX_E_NOMEM,
 * RDMX_E_PROVIDER (socket calls, errno logged), config load errors. */
int rdmx_tls_listener_create(struct ev_loop *loop, struct rdmx_tls_config *cfg, const char *host,
                             uint16_t port, rdmx_tls_established_cb established, void *arg,
                             struct rdmx_tls_listener **l);
int rdmx_tls_listener_set_refused_cb(struct rdmx_tls_listener *l, rdmx_tls_refused_cb cb);
int rdmx_tls_listener_get_port(const struct rdmx_tls_listener *l, uint16_t *port);
int rdmx_tls_listener_get_stats(const struct rdmx_tls_listener *l,
                                struct rdmx_tls_listener_stats *stats);
/* Stops accepting and drops handshakes in progress (no callbacks). */
int rdmx_tls_listener_destroy(struct rdmx_tls_listener **l);

#ifdef __cplusplus
}
#endif
#endif
