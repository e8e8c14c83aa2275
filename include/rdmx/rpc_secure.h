/* rdmx secure RPC: the easy path from mutual TLS to an RPC endpoint.
 *
 *   client                                      server (libev)
 *   rdmx_rpc_secure_connect(host, port)         rdmx_rpc_secure_listen(loop, ...)
 *     TLS 1.3 handshake, both certificates checked against the CA and the
 *     allow-lists of both configs (rdmx/tls.h)
 *                                       <----    bootstrap hello (versions,
 *                                                name, provider; no secret)
 *     bootstrap hello + exported engine details (tcp: with the data token)
 *     + RPC hello in the app-data slot  ---->    checks the RPC hello, asks
 *                                                opts.accept, exports, connects
 *                                       <----    its details + RPC hello
 *     rdmx_ctx_connect                           channel + RPC endpoint on the
 *     channel + RPC endpoint                     shared rdmx_rpc_server
 *     (ring descriptors: the channel's own
 *      hello on the new connection)
 *
 * Engine details only travel inside the mutually authenticated session. The
 * server exports nothing and sends no frame to a client whose certificate it
 * refuses (not even its hello), nor details to one whose RPC hello it
 * refuses. The server speaks first (rdmx/bootstrap.h): in TLS 1.3 the client
 * finishes its handshake before the server has judged its certificate, so
 * the client exports and sends nothing until the server's hello has arrived,
 * which the server sends only once it has accepted the client's certificate;
 * then it sends its details to a server whose certificate it has checked.
 *
 * The RPC hello (app data of rdmx/bootstrap.h) carries the RPC and channel
 * wire versions each side speaks and the geometry of the receive ring it will
 * register (slot count, slot size, largest message it accepts); a side that
 * cannot talk to the other refuses before the RDMA connection is made. The
 * ring descriptors themselves (the remote keys of the rings) travel in the
 * channel's in-band hello on the new connection (rdmx/channel.h), which only
 * the authenticated peer can reach: that connection was made from the secret
 * details exchanged over TLS, and on the tcp provider it is sealed
 * (AES-256-GCM, keys from this TLS session: rdmx_conn_set_data_keys) unless
 * both configs ask for rdmx_tls_config_set_data_plaintext. On verbs the RDMA
 * traffic is not encrypted (docs/SECURITY.md).
 *
 * Liveness: the TLS session stays open as the control channel. Its loss
 * (peer closed or reset it, TCP keepalive gave up after about 25 s of
 * silence) disconnects the engine connection: every outstanding call
 * completes with RDMX_RPC_UNAVAILABLE. The other way round, when the engine
 * connection ends (peer death, protocol violation, local close) the TLS
 * session is closed. The client checks its TLS session from a timer of the
 * progress engine (every opts.liveness_ms), which runs whenever the engine is
 * driven: rdmx_pe_progress / rdmx_pe_wait, rdmx_rpc_call,
 * rdmx_rpc_ep_progress, or the libev adapter. The server watches each
 * session from its libev loop.
 *
 * Errors are negative RDMX_E_* codes; output parameters are written only on
 * success. Refusals are logged on both sides with the reason. */
#ifndef RDMX_RPC_SECURE_H
#define RDMX_RPC_SECURE_H

#include <stddef.h>
#include <stdint.h>

#include <rdmx/ctx.h>
#include <rdmx/rpc.h>
#include <rdmx/tls.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_dev;
struct rdmx_pe;
struct rdmx_chan_worker;
struct rdmx_rpc_ep;
struct rdmx_rpc_server;
struct rdmx_rpc_secure_server;
struct rdmx_rpc_secure_conn; /* owns its RPC endpoint and TLS session */
struct ev_loop;

#define RDMX_RPC_SECURE_DEFAULT_TIMEOUT_MS 10000
#define RDMX_RPC_SECURE_DEFAULT_LIVENESS_MS 200u
#define RDMX_RPC_SECURE_DEFAULT_MAX_CLIENTS 1024u
/* Version of the RPC hello carried in the bootstrap's app-data slot. */
#define RDMX_RPC_SECURE_VERSION 2u

/* Settings common to both sides. Fill with rdmx_rpc_secure_opts_init, then
 * change what you need. Zero fields mean "the default". */
struct rdmx_rpc_secure_opts {
	/* Device: `dev` (borrowed, must outlive every connection made with it)
	 * or else the device named `device`, or else rdmx_dev_open(NULL)
	 * (RDMX_DEVICE, the first verbs device, then tcp). */
	struct rdmx_dev *dev;
	const char *device;
	/* Name sent in the bootstrap hello ([A-Za-z0-9._-], at most
	 * RDMX_BOOTSTRAP_MAX_NAME): the service calling (client) or serving
	 * (server). NULL: none. The peer sees it next to the certificate name. */
	const char *name;
	/* Local receive ring and message limit (rdmx/channel.h ranges); 0:
	 * RDMX_CHAN_DEFAULT_SLOT_COUNT / _SLOT_SIZE / _MAX_MSG_SIZE. */
	uint32_t slot_count;
	uint32_t slot_size;
	uint64_t max_msg_size;
	/* Client: the whole connect (TLS, exchange, channel ready), in ms.
	 * Server: unused (the TLS config's handshake timeout bounds the
	 * exchange). 0: RDMX_RPC_SECURE_DEFAULT_TIMEOUT_MS. */
	int timeout_ms;
	/* Client: how often the TLS session is checked while the endpoint is
	 * driven, in ms (1 .. 60000). 0: RDMX_RPC_SECURE_DEFAULT_LIVENESS_MS. */
	uint32_t liveness_ms;
	/* Client: handlers the server may call back on this connection (calls
	 * go both ways on one endpoint); NULL: call-only. Must outlive the
	 * connection. Server: unused (see rdmx_rpc_secure_listen). */
	struct rdmx_rpc_server *server;
};

/* Zeroes *opts (every field at its default). */
void rdmx_rpc_secure_opts_init(struct rdmx_rpc_secure_opts *opts);

/* ---- client (core library; blocking, within opts->timeout_ms) ---- */

/* Connects to the secure RPC server at host:port: TLS (the config's
 * allow-list names the servers this client accepts), bootstrap exchange,
 * engine connection, channel, and an RPC endpoint ready for calls, all
 * owned by the new secure connection *conn (rdmx_rpc_secure_conn_get_ep
 * gives the endpoint to call on).
 *
 * `pe`: the progress engine that will drive the endpoint, or NULL for one
 * of its own (then rdmx_rpc_call / rdmx_rpc_ep_progress drive it). The
 * call drives `pe` while it waits: call it from the thread that drives `pe`,
 * outside its callbacks. Each connection gets its own context and channel
 * worker on `pe` (rdmx_chan_get_worker(rdmx_rpc_ep_get_chan(ep)) reaches
 * it). `tls` is frozen by the call and must outlive the connection. opts
 * may be NULL (defaults).
 *
 * On success the endpoint's channel is READY. The endpoint belongs to the
 * connection: close it with rdmx_rpc_secure_close, never with
 * rdmx_rpc_ep_destroy. Its user data and closed/drained callbacks are the
 * caller's.
 *
 * Errors: RDMX_E_INVAL (arguments, opts out of range); TLS errors of
 * rdmx_tls_connect (RDMX_E_AUTH: a certificate was refused, by us or by the
 * server; RDMX_E_NOT_FOUND, RDMX_E_CONN_REFUSED, RDMX_E_TIMEDOUT);
 * RDMX_E_CONN_REFUSED (the server refused the client: its accept callback,
 * too many clients, or an RPC hello it cannot serve: no common RPC version,
 * ring out of range); RDMX_E_PROTOCOL (no common bootstrap version, provider
 * mismatch, malformed answer from the server); RDMX_E_TIMEDOUT (no ready
 * channel in time);
 * RDMX_E_NO_DEVICE, RDMX_E_NOMEM and engine errors of the set-up; the
 * channel's close status when the engine connection failed. */
int rdmx_rpc_secure_connect(const char *host, uint16_t port, struct rdmx_tls_config *tls,
                            struct rdmx_pe *pe, const struct rdmx_rpc_secure_opts *opts,
                            struct rdmx_rpc_secure_conn **conn);

/* Closes a connection made by rdmx_rpc_secure_connect: outstanding calls
 * complete with UNAVAILABLE (their callbacks run from here), the engine
 * connection and the TLS session are closed, and the context, device and
 * progress engine it made are released. From the thread that drives its
 * engine, outside its callbacks (else RDMX_E_BAD_STATE). NULL / *conn ==
 * NULL is a no-op; RDMX_E_INVAL for a server's connection (the server
 * closes those). */
int rdmx_rpc_secure_close(struct rdmx_rpc_secure_conn **conn);

/* ---- either side's connections ---- */

/* The RPC endpoint the connection owns (NULL for NULL): valid while the
 * connection lives. */
struct rdmx_rpc_ep *rdmx_rpc_secure_conn_get_ep(const struct rdmx_rpc_secure_conn *conn);

/* Checks the TLS session now (without waiting): 0 while it is alive, else
 * the reason it was lost (RDMX_E_DISCONNECTED, ...), after which the engine
 * connection is being disconnected. The client's timer does this by itself;
 * a program that sleeps on the socket (rdmx_rpc_secure_get_fd) uses
 * rdmx_rpc_secure_check_wants. RDMX_E_INVAL for NULL. */
int rdmx_rpc_secure_check(struct rdmx_rpc_secure_conn *conn);
/* rdmx_rpc_secure_check that also says what to wait for on the socket
 * before the next call: *wants holds RDMX_TLS_WANT_READ and/or
 * RDMX_TLS_WANT_WRITE (rdmx/tls.h); wait for exactly those
 * (rdmx_bootstrap_check_wants: a readable socket does not help a session
 * that must write first). */
int rdmx_rpc_secure_check_wants(struct rdmx_rpc_secure_conn *conn, int *wants);

/* The peer's allow-listed certificate name and its hello name ("" if none),
 * valid while the connection lives. */
int rdmx_rpc_secure_get_peer_names(const struct rdmx_rpc_secure_conn *conn, const char **cert_name,
                                   const char **hello_name);

/* The TLS control channel's socket, for poll loops and diagnostics: never
 * read or write it. RDMX_E_BAD_STATE once the session is closed. */
int rdmx_rpc_secure_get_fd(const struct rdmx_rpc_secure_conn *conn, int *fd);

/* ---- server (libev; library rdmx_secure_ev) ---- */

/* Decides on a client after TLS and before anything is exported: return 0
 * to accept, a negative RDMX_E_* to refuse (the client gets
 * RDMX_E_CONN_REFUSED). `cert_name` is the client's allow-listed
 * certificate name, `hello_name` its hello name ("" if none). */
typedef int (*rdmx_rpc_secure_accept_cb)(struct rdmx_rpc_secure_server *srv, const char *cert_name,
                                         const char *hello_name, void *arg);
/* A client's connection exists (its channel may still be STARTING: calls
 * and responses wait for it). The server owns `conn` and its endpoint: the
 * callback may set the endpoint's user data, limits and drained callback,
 * and make calls on it, but must not destroy it nor set its closed
 * callback. */
typedef void (*rdmx_rpc_secure_conn_cb)(struct rdmx_rpc_secure_server *srv,
                                        struct rdmx_rpc_secure_conn *conn, void *arg);
/* A client's connection is going away (TLS lost, engine connection ended,
 * server destroyed); `status` is the reason. Runs from the loop, outside
 * engine callbacks. Before it runs, the endpoint's channel is closed:
 * every call the server still holds on it has been cancelled (each one's
 * cancel callback has run, once), the endpoint's own calls have completed
 * with UNAVAILABLE and its streams have ended, so none of their callbacks
 * runs after gone (which may free what they use). The endpoint (user data,
 * stats) stays valid through the callback. When it returns, the engine
 * connection and the TLS session are closed, the endpoint is destroyed and
 * `conn` is freed. */
typedef void (*rdmx_rpc_secure_gone_cb)(struct rdmx_rpc_secure_server *srv,
                                        struct rdmx_rpc_secure_conn *conn, int status, void *arg);

struct rdmx_rpc_secure_server_ops {
	rdmx_rpc_secure_accept_cb accept;  /* NULL: every allow-listed certificate */
	rdmx_rpc_secure_conn_cb connected; /* may be NULL */
	rdmx_rpc_secure_gone_cb gone;      /* may be NULL */
	/* Clients at once (0: RDMX_RPC_SECURE_DEFAULT_MAX_CLIENTS); the
	 * server's context takes up to twice as many engine connections (as
	 * far as the device goes). At the limit, the certificate name holding
	 * the most clients gives up its oldest to a newcomer whose name holds
	 * at least two fewer (its connection closes with RDMX_E_FULL); else
	 * the newcomer is refused (RDMX_E_CONN_REFUSED on its side). Both are
	 * logged. So one certificate that takes every place sheds its own,
	 * never another's clients. */
	uint32_t max_clients;
};

/* Listens for secure RPC clients on host:port (host NULL: all addresses;
 * port 0: any, see _get_port) and serves `server`'s handlers to each of
 * them, one connection (and endpoint) per client. The server opens its device (opts), makes
 * a progress engine, a context and a channel worker of its own and drives them
 * from `loop` (rdmx_ev): every handler and callback runs on the loop's
 * thread, from inside ev_run. `loop`, `server` and `tls` must outlive it;
 * ops and opts may be NULL (defaults) and are copied.
 * Errors: RDMX_E_INVAL, RDMX_E_NOMEM, RDMX_E_NO_DEVICE, TLS listener errors
 * (RDMX_E_PROVIDER: bind / listen failed, errno logged; config load
 * errors), engine errors. */
int rdmx_rpc_secure_listen(struct ev_loop *loop, struct rdmx_rpc_server *server,
                           struct rdmx_tls_config *tls, const char *host, uint16_t port,
                           const struct rdmx_rpc_secure_server_ops *ops,
                           const struct rdmx_rpc_secure_opts *opts, void *arg,
                           struct rdmx_rpc_secure_server **srv);

int rdmx_rpc_secure_server_get_port(const struct rdmx_rpc_secure_server *srv, uint16_t *port);
/* Clients with a live endpoint now. */
uint32_t rdmx_rpc_secure_server_get_clients(const struct rdmx_rpc_secure_server *srv);
/* The server's channel worker (stats, its progress engine). */
struct rdmx_chan_worker *
rdmx_rpc_secure_server_get_worker(const struct rdmx_rpc_secure_server *srv);
/* Its TLS listener's counters (rdmx/tls.h: connections accepted, handshakes
 * established, refused, timed out, over the per-source limit, in progress),
 * from any thread. Errors: RDMX_E_INVAL. */
int rdmx_rpc_secure_server_get_listener_stats(const struct rdmx_rpc_secure_server *srv,
                                              struct rdmx_tls_listener_stats *stats);

/* Stops listening and closes every client, then releases the engine
 * objects: the calls the server holds for a client are cancelled (their
 * cancel callbacks run) and its streams end, then gone runs for it; the
 * client's calls complete with UNAVAILABLE. On the loop's thread, outside
 * the server's callbacks. NULL / *srv == NULL is a no-op. */
int rdmx_rpc_secure_server_destroy(struct rdmx_rpc_secure_server **srv);

/* ---- multi-worker server (libev; library rdmx_secure_ev) ---- */

/* One rdmx_rpc_server served by N worker threads. Each worker is a thread
 * with its own libev loop, device, progress engine, context and channel
 * worker (a secure server of its own, as rdmx_rpc_secure_listen makes):
 * run to completion, nothing shared on the hot path. One listening socket
 * is watched by worker 0, which hands each accepted connection, before its
 * TLS handshake, to the next worker in turn (round robin, so any N
 * consecutive clients land on N different workers); from then on that
 * client's handshake, bootstrap exchange, engine connection, channel,
 * endpoint and every call on it live on that worker's thread.
 *
 * Threading rule: the handlers, stream handlers and server interceptors of
 * `server`, and ops->accept / connected / gone, run on the thread of the
 * worker that owns the client, concurrently with other workers: what they
 * share with each other (their `arg`s, the application's state) needs its
 * own lock. A call is answered (rdmx_rpc_respond, stream calls) from its
 * worker's thread only, from a callback of that worker (a handler, a
 * cancel callback, a timer of its engine). `server`'s handler table is
 * read by every worker: register every method and interceptor before
 * rdmx_rpc_secure_workers_listen. Its per-method counters are kept per
 * thread and summed by rdmx_rpc_server_get_method_stats, which any thread
 * may call (while workers run, the sum may lag the calls in progress).
 *
 * ops->max_clients (0: RDMX_RPC_SECURE_DEFAULT_MAX_CLIENTS) is split over
 * the workers: each takes at most ceil(max_clients / workers). The TLS
 * config's handshake limits apply per worker. opts->dev, when given, is
 * shared by every worker (it must allow contexts on several threads, as
 * the tcp and verbs providers do); else each worker opens its own device
 * (opts->device or the default). */
struct rdmx_rpc_secure_workers;

#define RDMX_RPC_SECURE_MAX_WORKERS 64u

/* Listens on host:port (as rdmx_rpc_secure_listen) and starts `workers`
 * threads (1 .. RDMX_RPC_SECURE_MAX_WORKERS) serving `server`. Returns
 * once every worker is ready: clients can connect. Signals are blocked on
 * the worker threads. `server` and `tls` must outlive the object; ops and
 * opts may be NULL and are copied; `arg` is passed to ops.
 * Errors: RDMX_E_INVAL (workers out of range, arguments), RDMX_E_NOMEM,
 * RDMX_E_PROVIDER (a thread could not start, errno logged) and the errors
 * of rdmx_rpc_secure_listen. */
int rdmx_rpc_secure_workers_listen(unsigned workers, struct rdmx_rpc_server *server,
                                   struct rdmx_tls_config *tls, const char *host, uint16_t port,
                                   const struct rdmx_rpc_secure_server_ops *ops,
                                   const struct rdmx_rpc_secure_opts *opts, void *arg,
                                   struct rdmx_rpc_secure_workers **workers_out);

int rdmx_rpc_secure_workers_get_port(const struct rdmx_rpc_secure_workers *w, uint16_t *port);
/* Number of workers (0 for NULL). */
unsigned rdmx_rpc_secure_workers_get_count(const struct rdmx_rpc_secure_workers *w);
/* Per worker, from any thread: connections handed to worker `index` since
 * listen (counted at accept time, before their handshake), and its clients
 * with a live endpoint now (from connected to gone). 0 for a bad index. */
uint64_t rdmx_rpc_secure_workers_get_assigned(const struct rdmx_rpc_secure_workers *w,
                                              unsigned index);
uint32_t rdmx_rpc_secure_workers_get_clients(const struct rdmx_rpc_secure_workers *w,
                                             unsigned index);
/* The TLS listener counters summed over the workers (worker 0 accepts, each
 * worker handshakes the connections handed to it), from any thread while
 * the workers run. Errors: RDMX_E_INVAL. */
int rdmx_rpc_secure_workers_get_listener_stats(const struct rdmx_rpc_secure_workers *w,
                                               struct rdmx_tls_listener_stats *stats);

/* How long rdmx_rpc_secure_workers_get_engine_stats waits for the
 * workers when its timeout_ms is 0. */
#define RDMX_RPC_SECURE_ENGINE_STATS_WAIT_MS 1000u

/* The engine counters (rdmx/ctx.h, rdmx_ctx_get_stats) of the workers'
 * contexts, summed, from any thread while the workers run. A context's
 * counters belong to its worker's thread, so each worker is asked (through
 * its event loop's wakeup, as a handed-off connection is) and copies them
 * itself, between two events of its loop; the call waits for every answer,
 * at most timeout_ms (0: RDMX_RPC_SECURE_ENGINE_STATS_WAIT_MS).
 * Freshness: each worker's share is read after the call began, so it
 * counts everything its worker did before then (e.g. a call whose answer a
 * client has received was counted as received and its answer as sent, on
 * the worker that served it). Called on a worker's thread (from a handler
 * or an ops callback), that worker's share is read there and the others
 * are waited for, holding that worker meanwhile; it answers those who ask
 * it while it waits, so workers asking at once do not wait for each other.
 * A worker busy past the timeout (a handler that blocks) is not waited for
 * longer: its share is its copy of the last request it answered (zeros if
 * none), so the sum lags by what that worker did since, never goes down,
 * and the call returns RDMX_E_TIMEDOUT (a warning is logged) with *stats
 * filled. The workers take no lock but to answer: their hot path does not
 * change. Errors: RDMX_E_INVAL (NULL), RDMX_E_TIMEDOUT (see above). */
int rdmx_rpc_secure_workers_get_engine_stats(const struct rdmx_rpc_secure_workers *w,
                                             uint32_t timeout_ms, struct rdmx_ctx_stats *stats);
/* The index of the worker whose server `srv` is (the `srv` of the ops
 * callbacks), or -1 when it is not one of w's. */
int rdmx_rpc_secure_workers_index_of(const struct rdmx_rpc_secure_workers *w,
                                     const struct rdmx_rpc_secure_server *srv);

/* Stops listening, then each worker, on its own thread, closes its clients
 * as rdmx_rpc_secure_server_destroy does (calls outstanding on them
 * complete once: UNAVAILABLE on the client side; the server's own calls
 * are cancelled, cancel callbacks run there; gone runs for each) and
 * ends; joins the threads and frees everything. From any thread but a
 * worker's (RDMX_E_BAD_STATE). NULL / *w == NULL is a no-op. */
int rdmx_rpc_secure_workers_destroy(struct rdmx_rpc_secure_workers **w);

#ifdef __cplusplus
}
#endif
#endif
