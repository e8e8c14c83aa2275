/* rdmx contexts and connections.
 *
 * Life cycle (librpma/DOCA style):
 *   rdmx_ctx_create(dev, pe) -> IDLE: setters allowed, task confs set
 *   rdmx_ctx_start()         -> RUNNING: setters answer RDMX_E_BAD_STATE;
 *                               task pools exist; connections may be made
 *   rdmx_ctx_stop()          -> IDLE again: every connection is disconnected,
 *                               every outstanding task completes through its
 *                               error callback (RDMX_E_CANCELED) before stop
 *                               returns, then all tasks are freed.
 *   rdmx_ctx_destroy()       (only when IDLE)
 * rdmx_ctx_stop from a callback of the same context answers
 * RDMX_E_BAD_STATE (stop it after rdmx_pe_progress returned). At stop, a
 * connection that was established gets its disconnected callback; one that
 * never was (exported, requested, connecting) is released silently. Tasks
 * the engine had already aborted (submitted on a connection in error)
 * complete with RDMX_E_CONN_ABORTED rather than RDMX_E_CANCELED.
 *
 * Connections: either out of band (rdmx_ctx_export on both sides, exchange
 * the opaque details over a secure channel, rdmx_ctx_connect on both sides)
 * or rdma_cm style (rdmx_ctx_listen + request callback + rdmx_conn_accept /
 * rdmx_conn_reject on one side, rdmx_ctx_connect_to_addr on the other).
 * Tasks may be submitted on a connection as soon as rdmx_ctx_connect (or the
 * established callback of the cm flow) returned; they travel once the wire is
 * up. A connection object is owned by its context: it stays valid until its
 * disconnected or failure callback has returned (or the context stops), after
 * which the engine frees it. Every task on it has completed before then. */
#ifndef RDMX_CTX_H
#define RDMX_CTX_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include <rdmx/task.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_dev;
struct rdmx_pe;
struct rdmx_ctx;
struct rdmx_conn;
struct rdmx_addr;

enum rdmx_ctx_state {
	RDMX_CTX_IDLE = 0,
	RDMX_CTX_RUNNING = 1,
	RDMX_CTX_STOPPING = 2, /* only seen from callbacks run by rdmx_ctx_stop */
};

enum rdmx_transport_type {
	RDMX_TRANSPORT_TYPE_RC = 0,
	RDMX_TRANSPORT_TYPE_DC = 1, /* answers RDMX_E_NOT_SUPPORTED */
};

enum rdmx_conn_state {
	RDMX_CONN_REQUESTED = 0, /* cm request, not yet accepted */
	RDMX_CONN_CONNECTING = 1,
	RDMX_CONN_ESTABLISHED = 2,
	RDMX_CONN_ERROR = 3, /* RC error state: new tasks complete CONN_ABORTED */
	RDMX_CONN_DISCONNECTED = 4,
};

#define RDMX_PRIVATE_DATA_MAX 56u

/* Connection callbacks; conn_user_data is the value set with
 * rdmx_conn_set_user_data (or given to rdmx_ctx_connect_to_addr). */
typedef void (*rdmx_conn_request_cb)(struct rdmx_conn *conn, void *ctx_user_data);
typedef void (*rdmx_conn_established_cb)(struct rdmx_conn *conn, void *conn_user_data,
                                         void *ctx_user_data);
typedef void (*rdmx_conn_failure_cb)(struct rdmx_conn *conn, void *conn_user_data,
                                     void *ctx_user_data);
typedef void (*rdmx_conn_disconnected_cb)(struct rdmx_conn *conn, void *conn_user_data,
                                          void *ctx_user_data);

/* ---- context ---- */

/* Errors: RDMX_E_INVAL, RDMX_E_NOMEM. */
int rdmx_ctx_create(struct rdmx_dev *dev, struct rdmx_pe *pe, struct rdmx_ctx **ctx);
/* RDMX_E_BAD_STATE unless IDLE; NULL / *ctx == NULL is a no-op. */
int rdmx_ctx_destroy(struct rdmx_ctx **ctx);
int rdmx_ctx_start(struct rdmx_ctx *ctx);
int rdmx_ctx_stop(struct rdmx_ctx *ctx);
int rdmx_ctx_get_state(const struct rdmx_ctx *ctx, enum rdmx_ctx_state *state);
/* Inside a completion callback of a poll: how many more completions that
 * poll has in hand after this one, a lower bound (the provider's current
 * batch: 0 at its last; more may follow or arrive). Outside a callback: 0.
 * A batching hint: answers gathered while it is nonzero can leave together
 * after the last one, a lone one at once. */
int rdmx_ctx_get_completions_pending(const struct rdmx_ctx *ctx, uint32_t *n);
int rdmx_ctx_get_dev(const struct rdmx_ctx *ctx, struct rdmx_dev **dev);

/* Properties: setters only in IDLE (else RDMX_E_BAD_STATE), values checked
 * against the device caps (else RDMX_E_INVAL). Queue sizes are rounded up to
 * a power of two (the getter returns the rounded value). */
int rdmx_ctx_set_send_queue_size(struct rdmx_ctx *ctx, uint32_t size);
int rdmx_ctx_get_send_queue_size(const struct rdmx_ctx *ctx, uint32_t *size);
int rdmx_ctx_set_recv_queue_size(struct rdmx_ctx *ctx, uint32_t size);
int rdmx_ctx_get_recv_queue_size(const struct rdmx_ctx *ctx, uint32_t *size);
int rdmx_ctx_set_max_send_buf_list_len(struct rdmx_ctx *ctx, uint32_t len);
int rdmx_ctx_get_max_send_buf_list_len(const struct rdmx_ctx *ctx, uint32_t *len);
int rdmx_ctx_set_max_recv_buf_list_len(struct rdmx_ctx *ctx, uint32_t len);
int rdmx_ctx_get_max_recv_buf_list_len(const struct rdmx_ctx *ctx, uint32_t *len);
/* RDMX_ACCESS_REMOTE_* the context's connections allow peers (default all). */
int rdmx_ctx_set_permissions(struct rdmx_ctx *ctx, unsigned access);
int rdmx_ctx_get_permissions(const struct rdmx_ctx *ctx, unsigned *access);
/* Path MTU in bytes: 256, 512, 1024, 2048 or 4096 (default 4096 / port max). */
int rdmx_ctx_set_mtu(struct rdmx_ctx *ctx, uint32_t mtu);
int rdmx_ctx_get_mtu(const struct rdmx_ctx *ctx, uint32_t *mtu);
int rdmx_ctx_set_gid_index(struct rdmx_ctx *ctx, uint32_t index);
int rdmx_ctx_get_gid_index(const struct rdmx_ctx *ctx, uint32_t *index);
int rdmx_ctx_set_sl(struct rdmx_ctx *ctx, uint8_t sl); /* 0..15 */
int rdmx_ctx_get_sl(const struct rdmx_ctx *ctx, uint8_t *sl);
int rdmx_ctx_set_grh(struct rdmx_ctx *ctx, bool grh);
int rdmx_ctx_get_grh(const struct rdmx_ctx *ctx, bool *grh);
int rdmx_ctx_set_conn_request_timeout(struct rdmx_ctx *ctx, uint32_t timeout_ms);
int rdmx_ctx_get_conn_request_timeout(const struct rdmx_ctx *ctx, uint32_t *timeout_ms);
/* 0..7; 7 means retry forever (RC semantics). Default 7. */
int rdmx_ctx_set_rnr_retry_count(struct rdmx_ctx *ctx, uint8_t count);
int rdmx_ctx_get_rnr_retry_count(const struct rdmx_ctx *ctx, uint8_t *count);
/* Transport timeout and retry count (RC's ack timeout and retry count): a
 * connection whose peer stops answering -- frozen (SIGSTOP), its host gone,
 * or it stopped reading -- is declared lost after timeout_ms x (count + 1)
 * with send-side tasks outstanding and no byte acknowledged or received
 * meanwhile. Then every outstanding task completes once with
 * RDMX_E_CONN_ABORTED (as RC's retry-exceeded on verbs), the connection goes
 * to error and ends (DISCONNECTED). An idle connection is not probed.
 * Defaults: 1000 ms and 7 (8 s, near verbs). timeout_ms 0 turns the timeout off (TCP
 * keepalive only); at most RDMX_CTX_TRANSPORT_TIMEOUT_MAX_MS. count 0..7 (7
 * is 7 retries, not "forever"). Before start (else RDMX_E_BAD_STATE).
 * Honoured by the tcp provider; verbs keeps its QP's own ack timeout and
 * retry count (about 7.5 s, engine/providers/verbs/verbs.h). */
#define RDMX_CTX_TRANSPORT_TIMEOUT_MAX_MS 600000u
int rdmx_ctx_set_transport_timeout(struct rdmx_ctx *ctx, uint32_t timeout_ms);
int rdmx_ctx_get_transport_timeout(const struct rdmx_ctx *ctx, uint32_t *timeout_ms);
int rdmx_ctx_set_retry_count(struct rdmx_ctx *ctx, uint8_t count);
int rdmx_ctx_get_retry_count(const struct rdmx_ctx *ctx, uint8_t *count);
int rdmx_ctx_set_max_connections(struct rdmx_ctx *ctx, uint32_t max);
int rdmx_ctx_get_max_connections(const struct rdmx_ctx *ctx, uint32_t *max);
int rdmx_ctx_set_transport_type(struct rdmx_ctx *ctx, enum rdmx_transport_type type);
int rdmx_ctx_get_transport_type(const struct rdmx_ctx *ctx, enum rdmx_transport_type *type);
/* User data may be set in any state. */
int rdmx_ctx_set_user_data(struct rdmx_ctx *ctx, void *user_data);
int rdmx_ctx_get_user_data(const struct rdmx_ctx *ctx, void **user_data);

/* Inline data (IBV_SEND_INLINE): a send or write whose payload is at most
 * `bytes` goes out copied into the work request, so its source needs no
 * registered region lookup by the NIC and the buffer may be reused as soon
 * as the task was submitted. Default 0 (off). At most the device's
 * caps.max_inline (else RDMX_E_INVAL); before start (else RDMX_E_BAD_STATE).
 * verbs: requested as each QP's max_inline_data and clamped to what the
 * device gives back for that QP (a payload above the granted size goes the
 * normal way); the getter returns the value set. tcp: accepted and
 * reported only -- the provider copies every payload into its frames
 * anyway, so inline changes nothing there. The engine checks a task's
 * buffers the same way with or without inline. */
int rdmx_ctx_set_max_inline(struct rdmx_ctx *ctx, uint32_t bytes);
int rdmx_ctx_get_max_inline(const struct rdmx_ctx *ctx, uint32_t *bytes);

/* Counters of a context since rdmx_ctx_create (stop and start do not reset
 * them), indexed by enum rdmx_task_type. Plain words kept by the thread that
 * runs the context (its single-thread contract): read them on that thread.
 *   submitted: rdmx_task_submit calls that returned 0;
 *   completed: tasks completed successfully (ok callback);
 *   failed:    tasks completed with an error (err callback: canceled,
 *              aborted, remote access error, ...);
 *   bytes:     payload of the successful ones -- sent (send), received
 *              (receive: the length that arrived), written (write), read
 *              (read), 8 per atomic and sync event, 0 for flush.
 * Connections: established (the established callback ran or the out-of-band
 * connection came up), failed (connect refused / failed) and disconnected. */
struct rdmx_ctx_stats {
	uint64_t submitted[RDMX_TASK_TYPE_COUNT];
	uint64_t completed[RDMX_TASK_TYPE_COUNT];
	uint64_t failed[RDMX_TASK_TYPE_COUNT];
	uint64_t bytes[RDMX_TASK_TYPE_COUNT];
	uint64_t conns_established;
	uint64_t conns_failed;
	uint64_t conns_disconnected;
	/* of conns_established: sealed data plane (rdmx_conn_set_data_keys) or
	 * plaintext (cm flow, export flow without keys, plaintext mode) */
	uint64_t conns_sealed;
	uint64_t conns_plaintext;
};

/* Copies the counters to *stats. Any state. Errors: RDMX_E_INVAL (NULL). */
int rdmx_ctx_get_stats(const struct rdmx_ctx *ctx, struct rdmx_ctx_stats *stats);

/* "receive", "send", "send_imm", "read", "write", "write_imm", "atomic_cas",
 * "atomic_fadd", "atomic_write", "flush", "sync_event_get",
 * "sync_event_notify_set", "sync_event_notify_add"; "unknown" out of range. */
const char *rdmx_task_type_name(enum rdmx_task_type type);

/* How many tasks of `type` may exist and which callbacks complete them. IDLE
 * only. A type never configured cannot be allocated (RDMX_E_BAD_STATE).
 * ok_cb runs on success, err_cb on failure (both required).
 * Errors: RDMX_E_INVAL (NULL cb, num_tasks 0, above queue limits). */
int rdmx_ctx_set_task_conf(struct rdmx_ctx *ctx, enum rdmx_task_type type, rdmx_task_cb ok_cb,
                           rdmx_task_cb err_cb, uint32_t num_tasks);

/* IDLE only. request_cb is required to use rdmx_ctx_listen. Any may be NULL. */
int rdmx_ctx_set_conn_callbacks(struct rdmx_ctx *ctx, rdmx_conn_request_cb request,
                                rdmx_conn_established_cb established, rdmx_conn_failure_cb failure,
                                rdmx_conn_disconnected_cb disconnected);

/* ---- connections ---- */

/* RUNNING only. Creates a connection and returns the local details to send
 * to the peer (owned by the connection, valid while it lives). The details
 * carry a secret (tcp: the data-connection token): send them only over a
 * secure channel. Errors: RDMX_E_BAD_STATE, RDMX_E_FULL (max connections). */
int rdmx_ctx_export(struct rdmx_ctx *ctx, const void **details, size_t *details_len,
                    struct rdmx_conn **conn);

/* Connects `conn` (from rdmx_ctx_export) to the peer described by its
 * exported details. Errors: RDMX_E_INVAL (malformed details, wrong provider),
 * RDMX_E_BAD_STATE (conn already connected). */
int rdmx_ctx_connect(struct rdmx_ctx *ctx, const void *remote_details, size_t details_len,
                     struct rdmx_conn *conn);

/* Data-plane keys of one connection, from a secure out-of-band channel (the
 * mutual-TLS bootstrap derives them from its TLS session with the TLS 1.3
 * exporter). tx seals what this side sends, rx opens what the peer sends:
 * one side's tx is the other's rx. Secret: wipe your copy after the call. */
#define RDMX_CONN_KEY_SIZE 32
#define RDMX_CONN_IV_SIZE 12
struct rdmx_conn_keys {
	uint8_t tx_key[RDMX_CONN_KEY_SIZE];
	uint8_t tx_iv[RDMX_CONN_IV_SIZE];
	uint8_t rx_key[RDMX_CONN_KEY_SIZE];
	uint8_t rx_iv[RDMX_CONN_IV_SIZE];
};

/* Seals the data connection of `conn` (from rdmx_ctx_export): call after
 * the export and before rdmx_ctx_connect, on both sides, with mirrored keys.
 * tcp provider: every frame of the connection, from the first handshake
 * frame on (it carries the connection tokens), travels in AES-256-GCM
 * records of at most 64 KiB, nonces from a per-direction record counter; a
 * forged, altered, replayed, reordered or truncated record moves the
 * connection to error (RC semantics: the oldest outstanding task fails with
 * RDMX_E_AUTH, the others with RDMX_E_CONN_ABORTED) with a log line. The
 * keys are copied. verbs provider: RDMX_E_NOT_SUPPORTED (RoCE / InfiniBand
 * carry RDMA traffic unencrypted; protect the fabric, see docs/SECURITY.md).
 * Errors: RDMX_E_INVAL (NULL), RDMX_E_BAD_STATE (not exported, already
 * connected or keyed), RDMX_E_NOT_SUPPORTED, RDMX_E_NOMEM. */
int rdmx_conn_set_data_keys(struct rdmx_conn *conn, const struct rdmx_conn_keys *keys);
/* *sealed = true once rdmx_conn_set_data_keys succeeded on conn. */
int rdmx_conn_is_sealed(const struct rdmx_conn *conn, bool *sealed);

/* rdma_cm style. Listen on `port` (all addresses of the device). */
int rdmx_ctx_listen(struct rdmx_ctx *ctx, uint16_t port);
int rdmx_ctx_stop_listen(struct rdmx_ctx *ctx);
/* Shares the cm listener of `listener` (RUNNING, listening, on the same
 * device) with `ctx` (RUNNING, with a request callback, not listening): from
 * then on the connections that reach the listener's port are dealt in turn,
 * at accept time, to the listener and each context that joined it, in the
 * order they joined; a connection dealt to ctx is ctx's own (its request,
 * established and later events come from ctx's progress engine, on ctx's
 * thread). This is how one port is served by many contexts, each driven by
 * its own thread. Call it before the two engines are driven from different
 * threads, or from the thread that drives ctx. ctx leaves the group when it
 * stops; when the listener stops listening no more connections are dealt.
 * Errors: RDMX_E_INVAL (NULL, ctx == listener, different devices),
 * RDMX_E_BAD_STATE, RDMX_E_FULL (RDMX_CTX_MAX_LISTEN_GROUP contexts already),
 * RDMX_E_NOT_SUPPORTED (a provider that cannot share; tcp and verbs both
 * share), RDMX_E_NOMEM. */
#define RDMX_CTX_MAX_LISTEN_GROUP 64u
int rdmx_ctx_listen_join(struct rdmx_ctx *ctx, struct rdmx_ctx *listener);
/* Private data: at most RDMX_PRIVATE_DATA_MAX bytes (else RDMX_E_INVAL). The
 * result arrives as the established or failure callback (RDMX_E_CONN_REFUSED
 * when rejected). *conn written on success. */
int rdmx_ctx_connect_to_addr(struct rdmx_ctx *ctx, const struct rdmx_addr *addr,
                             const void *private_data, size_t private_data_len, void *user_data,
                             struct rdmx_conn **conn);

/* From the request callback (or later): accept or reject a request. */
int rdmx_conn_accept(struct rdmx_conn *conn, const void *private_data, size_t private_data_len);
int rdmx_conn_reject(struct rdmx_conn *conn);
/* Starts a disconnect: outstanding tasks complete with an error, then the
 * disconnected callback runs (on both sides). */
int rdmx_conn_disconnect(struct rdmx_conn *conn);

int rdmx_conn_get_id(const struct rdmx_conn *conn, uint32_t *id);
int rdmx_conn_get_state(const struct rdmx_conn *conn, enum rdmx_conn_state *state);
/* The peer's address (owned by the connection). RDMX_E_NOT_FOUND when unknown. */
int rdmx_conn_get_addr(const struct rdmx_conn *conn, const struct rdmx_addr **addr);
/* Private data the peer sent with its request or accept (owned by the conn). */
int rdmx_conn_get_private_data(const struct rdmx_conn *conn, const void **data, size_t *len);
int rdmx_conn_set_user_data(struct rdmx_conn *conn, void *user_data);
int rdmx_conn_get_user_data(const struct rdmx_conn *conn, void **user_data);
int rdmx_conn_get_ctx(const struct rdmx_conn *conn, struct rdmx_ctx **ctx);

/* ---- addresses ---- */

enum rdmx_addr_type {
	RDMX_ADDR_IPV4 = 0,
	RDMX_ADDR_IPV6 = 1,
	RDMX_ADDR_GID = 2,
};

/* `text` is a numeric address ("198.18.0.1", "::1") or a host name that
 * resolves to one. Errors: RDMX_E_INVAL. */
int rdmx_addr_create(enum rdmx_addr_type type, const char *text, uint16_t port,
                     struct rdmx_addr **addr);
int rdmx_addr_destroy(struct rdmx_addr **addr);
/* *text is owned by the address. */
int rdmx_addr_get_params(const struct rdmx_addr *addr, enum rdmx_addr_type *type, const char **text,
                         uint16_t *port);

#ifdef __cplusplus
}
#endif
#endif
