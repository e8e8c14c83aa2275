/* rdmx RPC: unary calls over a message channel (include/rdmx/channel.h),
 * on either provider.
 *
 * Method ids are the 32-bit FNV-1a hash of "package.Service/Method"
 * (rdmx_rpc_method_id); rdmx-gen emits them as constants.
 * Payloads are produced by an encoder that writes straight into the channel's
 * buffer (no intermediate copy) or given as plain bytes.
 * Threading: run to completion on the thread that drives the progress engine;
 * no locks on the hot path. One endpoint (struct rdmx_rpc_ep) can both call
 * and serve: calls go both ways on one connection.
 * Every call completes exactly once: with the reply, DEADLINE_EXCEEDED,
 * CANCELLED, or UNAVAILABLE when the peer or connection dies.
 *
 * Set-up (see channel.h): a channel worker on the context, a channel per
 * connection, an endpoint per channel:
 *   rdmx_chan_worker_create(ctx, pe, NULL, &worker); rdmx_ctx_start(ctx);
 *   ... connect (export/connect, or the cm flow's established callback) ...
 *   rdmx_chan_create(worker, conn, &chan);
 *   rdmx_rpc_ep_create(chan, server_or_NULL, &ep);  (starts the channel)
 * Tear-down: rdmx_rpc_ep_destroy, then rdmx_chan_destroy, then the
 * context, then the worker.
 *
 * Driving: deadlines and liveness probes are timers of the progress engine
 * (rdmx/pe.h): rdmx_pe_progress runs the due ones and rdmx_pe_wait sleeps
 * no longer than the next one, with or without traffic; so do
 * rdmx_rpc_call, rdmx_rpc_ep_progress, the libev adapter (rdmx/ev.h) and
 * any loop that embeds the engine through rdmx_pe_get_fd and
 * rdmx_pe_next_timeout_ms. No thread is started. */
#ifndef RDMX_RPC_H
#define RDMX_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_ctx;
struct rdmx_conn;
struct rdmx_pe;
struct rdmx_chan;
struct rdmx_rpc_server;      /* handler table, shared by many connections */
struct rdmx_rpc_ep;          /* one peer: client and server endpoint over one channel */
struct rdmx_rpc_server_call; /* server side: one incoming call */
struct rdmx_rpc_md;          /* call metadata (rdmx/rpc_stream.h) */

/* gRPC status numbering; never mixed with RDMX_E_* codes. One list
 * (RDMX_RPC_CODE_LIST) makes the enum, RDMX_RPC_CODE_COUNT and
 * rdmx_rpc_code_name(), as RDMX_STATUS_LIST does for status.h.
 * X(NAME, VALUE) */
#define RDMX_RPC_CODE_LIST(X)                                                                      \
	X(OK, 0)                                                                                   \
	X(CANCELLED, 1)                                                                            \
	X(UNKNOWN, 2)                                                                              \
	X(INVALID_ARGUMENT, 3)                                                                     \
	X(DEADLINE_EXCEEDED, 4)                                                                    \
	X(NOT_FOUND, 5)                                                                            \
	X(ALREADY_EXISTS, 6)                                                                       \
	X(PERMISSION_DENIED, 7)                                                                    \
	X(RESOURCE_EXHAUSTED, 8)                                                                   \
	X(FAILED_PRECONDITION, 9)                                                                  \
	X(ABORTED, 10)                                                                             \
	X(OUT_OF_RANGE, 11)                                                                        \
	X(UNIMPLEMENTED, 12)                                                                       \
	X(INTERNAL, 13)                                                                            \
	X(UNAVAILABLE, 14)                                                                         \
	X(DATA_LOSS, 15)                                                                           \
	X(UNAUTHENTICATED, 16)

enum rdmx_rpc_code {
#define RDMX__RPC_CODE_ENUM(name, value) RDMX_RPC_##name = (value),
	RDMX_RPC_CODE_LIST(RDMX__RPC_CODE_ENUM)
#undef RDMX__RPC_CODE_ENUM
};

/* "OK", "CANCELLED", ... ("UNKNOWN" for values outside the list). */
const char *rdmx_rpc_code_name(enum rdmx_rpc_code code);

/* 32-bit FNV-1a of the full method name "package.Service/Method". */
uint32_t rdmx_rpc_method_id(const char *full_name);

/* Writes exactly `len` bytes of the encoded object into dst (len comes from
 * the payload's size); returns 0 or a negative RDMX_E_* code. */
typedef int (*rdmx_rpc_encode_fn)(const void *obj, void *dst, size_t len);

/* A request or response body: either bytes (encode == NULL, obj points at
 * `len` bytes) or an object plus its encoder and exact encoded size. */
struct rdmx_rpc_payload {
	const void *obj;
	size_t len;
	rdmx_rpc_encode_fn encode;
};

static inline struct rdmx_rpc_payload rdmx_rpc_bytes(const void *data, size_t len)
{
	struct rdmx_rpc_payload p = {data, len, NULL};
	return p;
}

struct rdmx_rpc_call_opts {
	uint64_t timeout_us; /* 0: no deadline */
	/* no reply; the callback (if any) runs once sent, or with UNAVAILABLE
	 * when the channel closes or the endpoint is destroyed first */
	bool oneway;
};

/* The outcome of a call. `data`/`len` point into the receive ring (zero copy)
 * and are valid only during the callback; `message` likewise (may be NULL).
 * `reached` is false only when the request certainly never reached the
 * server: it failed while still waiting in the channel's send queue (for
 * credits, or for the connection to be ready), so it was never handed to
 * the transport; then a retry elsewhere is safe for any method (gRPC's
 * transparent retry). True whenever the server may have seen it: a reply,
 * a deadline, a cancel, a connection lost after the request was posted, a
 * rendezvous request (the peer may have read it), the endpoint destroyed. */
struct rdmx_rpc_result {
	enum rdmx_rpc_code code;
	const char *message;
	const void *data;
	size_t len;
	/* Metadata and rich status (rdmx/rpc_stream.h), valid likewise: the
	 * response headers and trailers (never NULL, may be empty) and the
	 * status details (NULL when none). */
	const struct rdmx_rpc_md *headers;
	const struct rdmx_rpc_md *trailers;
	const void *details;
	size_t details_len;
	bool reached;
};

typedef void (*rdmx_rpc_done_cb)(const struct rdmx_rpc_result *result, void *arg);

/* Inside a call's completion callback, `result` its argument: keeps the
 * response body instead of copying it (the client's mirror of
 * rdmx_rpc_server_call_take_request). A response larger than a channel
 * slot came by rendezvous into a registered buffer of the worker's
 * registration cache; this takes that buffer out of the cache
 * (deregistered, counted in the cache's `handovers`) and gives it to the
 * caller: *owned is the start of the allocation, released with free()
 * once the callback has returned, and result->data / len (and what a
 * decode without copies points at) stay valid in it until then. *size
 * (may be NULL): the allocation's size. RDMX_E_BAD_STATE when the body
 * lives in a channel slot (copy it), the result has no body, or outside
 * the callback; RDMX_E_INVAL. ep is the call's endpoint. */
int rdmx_rpc_result_take(struct rdmx_rpc_ep *ep, const struct rdmx_rpc_result *result, void **owned,
                         size_t *size);

/* ---- server side ---- */

/* `req`/`len` are valid only during the handler: copy what a later
 * rdmx_rpc_respond needs. */
typedef void (*rdmx_rpc_handler)(struct rdmx_rpc_server_call *call, const void *req, size_t len,
                                 void *arg);

int rdmx_rpc_server_create(struct rdmx_rpc_server **server);
/* RDMX_E_BAD_STATE while an endpoint uses the server: one not destroyed
 * yet, or one destroyed inside an rdmx_rpc_respond of its (a callback the
 * answer's send ran), until that answer returns. */
int rdmx_rpc_server_destroy(struct rdmx_rpc_server **server);
/* Errors: RDMX_E_EXISTS (id taken), RDMX_E_INVAL. `name` is copied. */
int rdmx_rpc_server_register(struct rdmx_rpc_server *server, uint32_t method_id, const char *name,
                             rdmx_rpc_handler handler, void *arg);

/* Answers a call exactly once, now or later from any callback on the same
 * thread; then `call` is invalid. A call the client cancelled or whose
 * deadline passed is answered silently (nothing is sent).
 * resp may be NULL (empty body); message may be NULL. */
int rdmx_rpc_respond(struct rdmx_rpc_server_call *call, enum rdmx_rpc_code code,
                     const char *message, const struct rdmx_rpc_payload *resp);
/* Inside the handler (before it answers): keeps the request's memory
 * instead of copying it. A request that came by rendezvous (larger than a
 * channel slot) was read into a registered buffer of the worker's
 * registration cache; this takes that buffer out of the cache
 * (deregistered, counted in the cache's `handovers`) and gives it to the
 * caller: *owned is the start of the allocation, released with free(), and
 * `req`/`len` of the handler (and what a decode without copies points at)
 * stay valid in it until then. *size (may be NULL): the allocation's size.
 * RDMX_E_BAD_STATE when the request lives in a channel slot (copy it) or
 * outside the handler; RDMX_E_INVAL. */
int rdmx_rpc_server_call_take_request(struct rdmx_rpc_server_call *call, void **owned,
                                      size_t *size);
/* Absolute deadline in CLOCK_MONOTONIC nanoseconds, 0 when none. */
uint64_t rdmx_rpc_call_get_deadline(const struct rdmx_rpc_server_call *call);
bool rdmx_rpc_call_is_cancelled(const struct rdmx_rpc_server_call *call);
/* The caller wants no answer (it called with rdmx_rpc_call_opts.oneway):
 * rdmx_rpc_respond still ends the call, and sends nothing. A method whose
 * answer is its only effect (a read) may refuse such a call instead of
 * doing the work. false for NULL. */
bool rdmx_rpc_call_is_oneway(const struct rdmx_rpc_server_call *call);
uint32_t rdmx_rpc_call_get_method(const struct rdmx_rpc_server_call *call);
struct rdmx_rpc_ep *rdmx_rpc_call_get_conn(const struct rdmx_rpc_server_call *call);
/* Runs once if the caller cancels, times out or goes away before the answer. */
int rdmx_rpc_call_set_cancel_cb(struct rdmx_rpc_server_call *call,
                                void (*cb)(struct rdmx_rpc_server_call *call, void *arg),
                                void *arg);

/* ---- connection endpoint (client and server) ---- */

/* Builds an RPC endpoint over an established channel; `server` may be NULL
 * (call-only endpoint) and may be shared by many endpoints. */
int rdmx_rpc_ep_create(struct rdmx_chan *chan, struct rdmx_rpc_server *server,
                       struct rdmx_rpc_ep **ep);
/* Fails outstanding calls with UNAVAILABLE (callbacks run), cancels the
 * incoming calls not yet answered (their cancel callbacks run; answering
 * one afterwards only frees it), lets go of the channel (rdmx_chan_destroy
 * may follow at once), then frees. Once it is over no callback of the
 * endpoint runs, its closed callback included. *ep is NULL on return.
 * Called from a cancel callback that the endpoint's own close runs (its
 * channel closed: the close runs the cancel callback of every incoming call
 * not yet answered, one after the other), it lets go of the channel and
 * returns, and the rest waits for the end of that walk: the other calls'
 * cancel callbacks still run, once each, every call answerable in its own. */
int rdmx_rpc_ep_destroy(struct rdmx_rpc_ep **ep);
/* Graceful shutdown: refuse new calls, let in-flight ones finish (what
 * "drained" means: rdmx_rpc_ep_set_drained_cb). A second call does
 * nothing. Errors: RDMX_E_NOMEM (the GOAWAY could not be handed to the
 * channel: not draining, nothing changed), RDMX_E_INVAL. */
int rdmx_rpc_ep_drain(struct rdmx_rpc_ep *ep);
struct rdmx_chan *rdmx_rpc_ep_get_chan(const struct rdmx_rpc_ep *ep);

/* Starts a call. cb runs exactly once from progress (never from inside this
 * function). *call_id (may be NULL) names it for rdmx_rpc_cancel.
 * Errors: RDMX_E_BAD_STATE (draining/closed), RDMX_E_INVAL, RDMX_E_TOO_BIG. */
int rdmx_rpc_call_async(struct rdmx_rpc_ep *ep, uint32_t method_id,
                        const struct rdmx_rpc_payload *req, const struct rdmx_rpc_call_opts *opts,
                        rdmx_rpc_done_cb cb, void *arg, uint64_t *call_id);

/* Cancels a pending call: its callback runs once with CANCELLED (unless the
 * reply or another outcome already completed it: then RDMX_E_NOT_FOUND). */
int rdmx_rpc_cancel(struct rdmx_rpc_ep *ep, uint64_t call_id);

/* A blocking call that drives the progress engine until the call completes.
 * On return *reply owns a copy of the response (free with rdmx_rpc_reply_fini).
 * Returns 0 when a status was obtained (see reply->code) or a negative
 * RDMX_E_* code when the call could not be started. */
struct rdmx_rpc_reply {
	enum rdmx_rpc_code code;
	char *message; /* NULL or heap copy */
	void *data;    /* heap copy, NULL when len == 0 */
	size_t len;
	bool reached; /* as rdmx_rpc_result.reached */
	/* The response metadata and rich status (rdmx/rpc_stream.h), owned
	 * copies freed by rdmx_rpc_reply_fini: headers and trailers (NULL when
	 * the reply had none; rdmx_rpc_md_get and _count take NULL), details
	 * (NULL when none). Request headers: rdmx_rpc_call_md. */
	struct rdmx_rpc_md *headers;
	struct rdmx_rpc_md *trailers;
	void *details;
	size_t details_len;
};
int rdmx_rpc_call(struct rdmx_rpc_ep *ep, uint32_t method_id, const struct rdmx_rpc_payload *req,
                  const struct rdmx_rpc_call_opts *opts, struct rdmx_rpc_reply *reply);
void rdmx_rpc_reply_fini(struct rdmx_rpc_reply *reply);

/* ==== additions by the channel/RPC runtime (rpc/) ==== */

/* Wire (inside one channel message, little-endian): a 24-byte header
 *   0 u8 type (1 request, 2 response, 3 cancel, 4 goaway)
 *   1 u8 flags (request: bit 0 one-way)   2 u8 code (response)   3 u8 0
 *   4 u32 method id (request) / status message length (response)
 *   8 u64 call id (the caller's)   16 u64 timeout in us (request; 0 none)
 * then the status message (response) and the body. Deadlines travel as a
 * relative timeout; the server computes its own absolute deadline on its
 * clock. Anything malformed closes the connection (RDMX_E_PROTOCOL). */
#define RDMX_RPC_HDR_SIZE 24u
#define RDMX_RPC_MAX_STATUS_MESSAGE 1024u /* longer messages are truncated */
#define RDMX_RPC_DEFAULT_MAX_INFLIGHT 4096u

/* Limits of one endpoint. max_inflight: calls this side may have waiting
 * for replies (rdmx_rpc_call_async answers RDMX_E_AGAIN beyond it);
 * max_active: calls from the peer being served (received, not yet
 * answered and sent). Beyond max_active the endpoint stops taking requests
 * off the channel, so the peer's sender stalls (backpressure) instead of
 * memory growing. Both default to RDMX_RPC_DEFAULT_MAX_INFLIGHT. */
int rdmx_rpc_ep_set_limits(struct rdmx_rpc_ep *ep, uint32_t max_inflight, uint32_t max_active);

/* Backpressure of rdmx_rpc_call_async: when the channel's send queue is
 * full, or max_inflight calls wait, it returns RDMX_E_AGAIN and starts
 * nothing (drive progress and retry). Responses are never refused: they
 * are queued beyond the channel's bound, which max_active limits. */

/* Graceful shutdown (rdmx_rpc_ep_drain) tells the peer (GOAWAY): from
 * then on neither side starts new calls on this connection (call_async
 * answers RDMX_E_BAD_STATE; requests that crossed the GOAWAY are answered
 * UNAVAILABLE), calls in flight in both directions complete normally.
 *
 * Drained: nothing of the endpoint's is outstanding and the peer knows it
 * goes away. No call waits for its reply, no one-way call with a callback
 * for its send, no stream is open, no incoming call is active (as
 * rdmx_rpc_ep_get_active counts them) and, while the channel is open, the
 * peer acknowledged every message, the GOAWAY among them: with nothing in
 * flight an endpoint is drained a round trip after rdmx_rpc_ep_drain, never
 * by it. Once the channel closed nothing is awaited of it (the close ended
 * every call of ours, and the answers handed to it no longer count): the
 * endpoint is drained once its held calls are answered.
 *
 * rdmx_rpc_ep_is_drained and the callback agree: is_drained answers true
 * from the moment the endpoint is drained, for good, and the callback runs
 * once, then: from progress, or from the application's call that drained
 * it (rdmx_rpc_respond to the last held call, rdmx_rpc_ep_drain on a
 * closed endpoint with nothing left, ...). When that moment falls inside a
 * callback of the endpoint (a completion, a cancel callback, the closed
 * callback), is_drained may answer true there already: the drained
 * callback follows once that event's callbacks are done, before control
 * returns to the application's loop.
 *
 * A close runs, in order: the calls' callbacks (UNAVAILABLE; one-way calls
 * whose send had not come back included), the streams' ends, the held
 * calls' cancel callbacks, the closed callback, then the drained callback
 * if the endpoint is drained by then. The drained callback never runs
 * before the closed callback, even when a callback of the close answered
 * the last held call; held calls answered later run it with the last
 * answer. Neither runs once rdmx_rpc_ep_destroy was called. A callback set
 * once the endpoint is drained does not run. */
typedef void (*rdmx_rpc_drained_cb)(struct rdmx_rpc_ep *ep, void *arg);
int rdmx_rpc_ep_set_drained_cb(struct rdmx_rpc_ep *ep, rdmx_rpc_drained_cb cb, void *arg);
bool rdmx_rpc_ep_is_drained(const struct rdmx_rpc_ep *ep);
/* Calls waiting for replies. */
uint32_t rdmx_rpc_ep_get_inflight(const struct rdmx_rpc_ep *ep);
/* Incoming calls not yet answered, plus, while the channel is open,
 * answers handed to it and not yet sent (max_active counts them too).
 * Once the channel closed, only the calls not yet answered: an answer
 * still on its way can no longer arrive. */
uint32_t rdmx_rpc_ep_get_active(const struct rdmx_rpc_ep *ep);
/* The user argument given to rdmx_rpc_ep_set_user_data. */
int rdmx_rpc_ep_set_user_data(struct rdmx_rpc_ep *ep, void *user_data);
void *rdmx_rpc_ep_get_user_data(const struct rdmx_rpc_ep *ep);
/* A peer that goes away (disconnect, process death, protocol violation)
 * closes the channel: every outstanding call completes with UNAVAILABLE
 * (message names the cause; one-way calls whose send had not come back
 * included) and every incoming call is cancelled. The callback (optional)
 * then runs once, unless one of those callbacks destroyed the endpoint;
 * the drained callback, if due, after it (rdmx_rpc_ep_set_drained_cb). */
typedef void (*rdmx_rpc_closed_cb)(struct rdmx_rpc_ep *ep, int status, void *arg);
int rdmx_rpc_ep_set_closed_cb(struct rdmx_rpc_ep *ep, rdmx_rpc_closed_cb cb, void *arg);

/* Drives the endpoint's progress engine once (rdmx_pe_progress: engine
 * completions and due timers, deadlines among them). */
int rdmx_rpc_ep_progress(struct rdmx_rpc_ep *ep);

/* ---- statistics ---- */

/* Latency histogram: log-linear buckets (4 per power of two) of
 * nanoseconds; bucket i covers [rdmx_rpc_hist_bucket_low(i),
 * rdmx_rpc_hist_bucket_low(i + 1)). */
#define RDMX_RPC_HIST_BUCKETS 176u
struct rdmx_rpc_hist {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t min_ns, max_ns;
	uint64_t buckets[RDMX_RPC_HIST_BUCKETS];
};
uint64_t rdmx_rpc_hist_bucket_low(unsigned i);
/* The value below which `pct` percent (0..100) of the samples fall (the
 * upper edge of the bucket that holds it, clamped to max_ns); 0 when empty. */
uint64_t rdmx_rpc_hist_percentile(const struct rdmx_rpc_hist *h, double pct);

enum rdmx_rpc_role {
	RDMX_RPC_ROLE_CLIENT = 0, /* calls this side made */
	RDMX_RPC_ROLE_SERVER = 1, /* calls this side served */
};

/* Number of codes: one past the largest (the list is dense from 0). */
#define RDMX__RPC_CODE_ONE(name, value) +1
#define RDMX_RPC_CODE_COUNT (0u RDMX_RPC_CODE_LIST(RDMX__RPC_CODE_ONE))
/* A client call's completion (completed, by_code, errors, latency) is
 * counted once its callback returned. */
struct rdmx_rpc_stats {
	uint64_t calls;                        /* started (client) / received (server) */
	uint64_t completed;                    /* client: completed; server: answered */
	uint64_t by_code[RDMX_RPC_CODE_COUNT]; /* completions by status code */
	uint64_t errors;                       /* completions with a code other than OK */
	uint64_t oneway;                       /* one-way calls (included in calls) */
	uint64_t bytes_sent;                   /* request (client) / response (server) bodies */
	uint64_t bytes_received;
	uint64_t credit_stalls; /* messages that waited for channel credits */
	uint64_t rendezvous;    /* messages that went by rendezvous */
	uint64_t cancels;       /* client: cancels sent; server: cancels seen */
	uint64_t late_replies;  /* client: replies after cancel/deadline (dropped) */
	/* client: call round trip; server: request arrival to the response
	 * handed to the channel (sent, or queued for credit) */
	struct rdmx_rpc_hist latency;
	/* Streams (rdmx/rpc_stream.h), role client: the ones this side opened;
	 * server: the ones it accepted (refused ones included). Not in the
	 * unary counters above. streams_by_code: the final status as on_done saw it. */
	uint64_t streams_opened;
	uint64_t streams_ended;
	uint64_t streams_by_code[RDMX_RPC_CODE_COUNT];
	uint64_t stream_msgs_sent, stream_msgs_received;
	uint64_t stream_bytes_sent, stream_bytes_received; /* message bodies */
	/* Frames that came for a stream already ended here (late messages, a
	 * cancel crossing the final status): dropped, counted, logged once per
	 * stream. Endpoint totals only (the stream, and so its method, is gone). */
	uint64_t stream_late_frames;
};

/* Totals of the endpoint for a role. Errors: RDMX_E_INVAL. */
int rdmx_rpc_ep_get_stats(const struct rdmx_rpc_ep *ep, enum rdmx_rpc_role role,
                          struct rdmx_rpc_stats *stats);
/* Server side, every method id a peer names that the server has not
 * registered is counted in one bucket, reported under this id (a peer
 * naming ids cannot grow the endpoint's memory). */
#define RDMX_RPC_METHOD_UNKNOWN 0u

/* One method's counters on the endpoint (RDMX_RPC_METHOD_UNKNOWN: the
 * unregistered methods'). RDMX_E_NOT_FOUND if never used. */
int rdmx_rpc_ep_get_method_stats(const struct rdmx_rpc_ep *ep, enum rdmx_rpc_role role,
                                 uint32_t method_id, struct rdmx_rpc_stats *stats);
/* Method ids with stats on the endpoint: at most `max` written, the total
 * to *count. */
int rdmx_rpc_ep_list_methods(const struct rdmx_rpc_ep *ep, enum rdmx_rpc_role role, uint32_t *ids,
                             size_t max, size_t *count);
/* A method's server-side counters summed over every endpoint that used the
 * server (kept when endpoints go). RDMX_E_NOT_FOUND if not registered.
 * They are kept per serving thread (no lock on the call path when many
 * threads serve one server, as the multi-worker servers do) and summed
 * here; any thread may call it, and while other threads serve, the sum may
 * lag the calls in progress. */
int rdmx_rpc_server_get_method_stats(const struct rdmx_rpc_server *server, uint32_t method_id,
                                     struct rdmx_rpc_stats *stats);

/* ---- multi-worker server over the cm flow (rpc/workers.c) ---- */

/* One rdmx_rpc_server served by N worker threads on the engine's
 * rdma_cm-style listener (rdmx_ctx_listen; no authentication: the secure
 * equivalent is rdmx_rpc_secure_workers_listen in rdmx/rpc_secure.h). Each
 * worker is a thread with its own progress engine, context and channel
 * worker on `dev`: run to completion, no locks on the call path. Worker 0's
 * context listens on `port`, the others join its listener
 * (rdmx_ctx_listen_join), so connections are dealt to the workers in turn
 * at accept time (N consecutive clients land on N different workers); a
 * client's connection, channel, endpoint and calls stay on its worker.
 *
 * Threading rule: handlers, stream handlers, server interceptors and the
 * ops callbacks run on the owning worker's thread, concurrently with the
 * other workers (shared state needs its own lock); a call is answered from
 * its worker's thread only (its handler, a cancel callback, a timer of its
 * engine); register every method and interceptor before listening (the
 * table is read by every worker); rdmx_rpc_server_get_method_stats may be
 * called from any thread (per-thread counters, summed).
 *
 * `connected` runs once a client's endpoint exists (its channel may still be
 * starting), `gone` before it is destroyed (peer gone, protocol error, or
 * the workers stopping: RDMX_E_CANCELED); neither may destroy the endpoint.
 * Before `gone` runs the endpoint's channel is closed: every call held on
 * it has been cancelled (its cancel callback has run, once), its own calls
 * have completed with UNAVAILABLE, its streams have ended. */
struct rdmx_dev;
struct rdmx_rpc_workers;
struct rdmx_rpc_workers_ops {
	void (*connected)(struct rdmx_rpc_workers *w, unsigned worker, struct rdmx_rpc_ep *ep,
	                  void *arg);
	void (*gone)(struct rdmx_rpc_workers *w, unsigned worker, struct rdmx_rpc_ep *ep,
	             int status, void *arg);
};

#define RDMX_RPC_MAX_WORKERS 64u

/* Starts `workers` threads (1 .. RDMX_RPC_MAX_WORKERS) listening on `port`
 * (not 0) of `dev` (borrowed: it must outlive the object and allow contexts
 * on several threads). Signals are blocked on the worker threads. ops may
 * be NULL. Errors: RDMX_E_INVAL, RDMX_E_NOMEM, RDMX_E_NOT_SUPPORTED (a
 * provider that cannot share a listener, with workers > 1; tcp and verbs
 * share), the errors of rdmx_ctx_listen (RDMX_E_PROVIDER: the port is
 * taken, logged). */
int rdmx_rpc_workers_listen(unsigned workers, struct rdmx_rpc_server *server, struct rdmx_dev *dev,
                            uint16_t port, const struct rdmx_rpc_workers_ops *ops, void *arg,
                            struct rdmx_rpc_workers **w);
unsigned rdmx_rpc_workers_get_count(const struct rdmx_rpc_workers *w);
/* From any thread: connections dealt to worker `index` so far (counted at
 * their request) and its clients with a live endpoint now. 0 for a bad
 * index. */
uint64_t rdmx_rpc_workers_get_assigned(const struct rdmx_rpc_workers *w, unsigned index);
uint32_t rdmx_rpc_workers_get_clients(const struct rdmx_rpc_workers *w, unsigned index);
/* Stops each worker on its own thread (worker 0, the listener, first): its
 * clients are closed (their calls fail UNAVAILABLE on the client side; the
 * server's own calls are cancelled, cancel callbacks run there; gone runs
 * for each), its engine objects released; joins the threads. From any
 * thread but a worker's (RDMX_E_BAD_STATE). NULL / *w == NULL is a no-op. */
int rdmx_rpc_workers_destroy(struct rdmx_rpc_workers **w);

#ifdef __cplusplus
}
#endif
#endif
