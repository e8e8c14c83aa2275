/* Private header of the RPC layer (rpc/): its structures, shared by rpc.c
 * (endpoint), call.c (client calls), rpc_server.c (handler table and incoming
 * calls), rpc_wire.c (header codec), stats.c and metrics.c (counters,
 * histograms), health.c and reflection.c (built-in services). Only rpc/
 * (and its tests) include it. The channel is reached through
 * chan/chan_rpc.h and rdmx/channel.h only. */
#ifndef RDMX_RPC_PRIV_H
#define RDMX_RPC_PRIV_H

#include <stdatomic.h>

#include <rdmx/channel.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_stream.h>

#include "chan/chan_rpc.h"
#include "common/byteorder.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/map.h"

/* ---- wire (rpc_wire.c) ---- */
enum rpc_type {
	RPC_T_REQUEST = 1,
	RPC_T_RESPONSE = 2,
	RPC_T_CANCEL = 3,
	RPC_T_GOAWAY = 4,
	/* streams (stream.c): call_id names the stream (the opener's id) */
	RPC_T_S_OPEN = 5,    /* flags kind, word method, timeout; body headers */
	RPC_T_S_HEADERS = 6, /* acceptor -> opener; body headers */
	RPC_T_S_MSG = 7,     /* flags RPC_SF_ACC; word 0: body the message; word
	                      * N >= 2: N messages, each u32 length + bytes */
	RPC_T_S_END = 8,     /* flags RPC_SF_ACC: half-close */
	RPC_T_S_STATUS = 9,  /* acceptor -> opener; code, word message length; body
	                      * message, u32 details length, details, trailers */
	RPC_T_S_RST = 10,    /* opener -> acceptor: cancel; code: why (CANCELLED,
	                      * DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED) */
	RPC_T_S_WINDOW = 11, /* flags RPC_SF_ACC, word: more messages granted,
	                      * timeout_us: more bytes granted (one is not 0) */
	RPC_T_BATCH = 12,    /* word = call_id = N >= 2 responses, each u32
	                      * length + the whole message (batch.c) */
};
#define RPC_F_ONEWAY 0x1u
#define RPC_F_MD 0x2u   /* request / response carries metadata (call_md.c) */
#define RPC_SF_ACC 0x1u /* stream frame sent by the stream's acceptor */

struct rpc_hdr {
	uint8_t type;
	uint8_t flags;
	uint8_t code;
	uint32_t word; /* method id (request) / status message length (response) */
	uint64_t call_id;
	uint64_t timeout_us;
};

void rdmx__rpc_hdr_encode(const struct rpc_hdr *h, void *dst);
/* Checks the header against the message length; on success *body points
 * after the header (and the status message for responses). */
int rdmx__rpc_hdr_decode(const void *msg, size_t len, struct rpc_hdr *h, const char **why);

/* ---- metadata wire (metadata.c) ---- */
/* Drops md's entries from the n-th on (n <= md->n). */
void rdmx__md_truncate(struct rdmx_rpc_md *md, size_t n);
size_t rdmx__md_wire_size(const struct rdmx_rpc_md *md);
/* Writes rdmx__md_wire_size(md) bytes; returns that size. */
size_t rdmx__md_encode(const struct rdmx_rpc_md *md, uint8_t *dst);
/* Appends the decoded entries to md; *used: bytes read. RDMX_E_PROTOCOL
 * (with *why) or RDMX_E_NOMEM. */
int rdmx__md_decode(const uint8_t *p, size_t len, struct rdmx_rpc_md *md, size_t *used,
                    const char **why);

/* ---- unary metadata and rich status (call_md.c) ---- */
struct rpc_resp_md { /* what a server call sends with its response */
	struct rdmx_rpc_md headers, trailers;
	void *details;
	size_t dlen;
};
struct rpc_resp_view { /* a response's, decoded; details point into it */
	struct rdmx_rpc_md headers, trailers;
	const void *details;
	size_t dlen;
};
size_t rdmx__resp_ext_size(const struct rpc_resp_md *x);
void rdmx__resp_ext_encode(const struct rpc_resp_md *x, uint8_t *dst);
int rdmx__resp_ext_decode(const uint8_t *p, size_t len, struct rpc_resp_view *v, size_t *used,
                          const char **why);
struct rdmx_rpc_server_call;
void rdmx__call_md_release(struct rdmx_rpc_server_call *call);
struct rpc_resp_md *rdmx__call_resp_md(struct rdmx_rpc_server_call *call); /* NULL: no memory */
/* The blocking call's reply: copies of the result's metadata and details
 * (RDMX_E_NOMEM), and their release. */
int rdmx__reply_take_md(struct rdmx_rpc_reply *r, const struct rdmx_rpc_result *res);
void rdmx__reply_md_fini(struct rdmx_rpc_reply *r);

/* ---- interceptors (interceptor.c) ---- */
struct rpc_chain_entry {
	struct rdmx_rpc_interceptor ic;
	void *arg;
};
struct rpc_chain {
	struct rpc_chain_entry v[RDMX_RPC_MAX_INTERCEPTORS];
	unsigned n;
};
struct rpc_icall { /* one call's walk through a chain */
	const struct rpc_chain *chain;
	struct rdmx_rpc_call_info info;
	void *state[RDMX_RPC_MAX_INTERCEPTORS];
	unsigned started;
	struct rdmx_rpc_md own; /* client: the request headers, annotated */
};
/* Runs the on_start chain; *out is NULL when there is no chain. Client:
 * annotate NULL, the record copies `copy` into own and annotates that;
 * server: annotate is the response headers. */
enum rdmx_rpc_code rdmx__ic_start(const struct rpc_chain *chain,
                                  const struct rdmx_rpc_call_info *info,
                                  const struct rdmx_rpc_md *copy, struct rdmx_rpc_md *annotate,
                                  const char **message, struct rpc_icall **out);
/* A client call's or stream's on_start chain (ep->chain, not NULL):
 * rdmx__ic_start with the call's info, then the annotated request headers
 * checked against the endpoint's metadata limit. */
enum rdmx_rpc_code rdmx__ic_client_start(struct rdmx_rpc_ep *ep, uint32_t method, uint64_t id,
                                         uint64_t timeout_us, bool stream,
                                         const struct rdmx_rpc_md *headers, const char **message,
                                         struct rpc_icall **out);
void rdmx__ic_message(struct rpc_icall *c, bool outgoing, const void *data, size_t len);
/* Runs on_done (reverse order) and frees *c; NULL: nothing. */
void rdmx__ic_done(struct rpc_icall **c, enum rdmx_rpc_code code, const char *message);
void rdmx__ic_chain_free(struct rpc_chain **chain);

/* ---- stats (stats.c) ---- */
struct rpc_mstats {
	struct rdmx_rpc_stats st[2]; /* by role */
};
void rdmx__hist_add(struct rdmx_rpc_hist *h, uint64_t ns);
void rdmx__stats_done(struct rdmx_rpc_stats *s, enum rdmx_rpc_code code, uint64_t ns);
/* method -> rpc_mstats, created on first use (NULL when out of memory);
 * !known: the one bucket of every unregistered method. */
struct rpc_mstats *rdmx__mstats_get(struct rdmx__map *m, uint32_t method, bool known);
void rdmx__mstats_free_all(struct rdmx__map *m);

/* A registered method's server-side counters, one slot per thread that
 * serves it (threads take a slot on first use, give it back when they
 * exit), summed on read: threads serving one server never write the same
 * memory, so the hot path takes no lock. Past RPC_STAT_SLOTS - 1 threads
 * at once the rest share the last slot, under a mutex. */
#define RPC_STAT_SLOTS 128u
struct rpc_method;
/* The calling thread's counters of m, created on first use (NULL when out
 * of memory); pair with rdmx__method_stats_put. */
struct rdmx_rpc_stats *rdmx__method_stats_get(struct rpc_method *m);
void rdmx__method_stats_put(struct rdmx_rpc_stats *s);
/* Sums the slots into *out. */
void rdmx__method_stats_sum(const struct rpc_method *m, struct rdmx_rpc_stats *out);
void rdmx__method_stats_free(struct rpc_method *m);

/* ---- server ---- */
struct rpc_method {
	uint32_t id;
	char *name;
	rdmx_rpc_handler handler;               /* NULL for a stream method */
	rdmx_rpc_stream_handler stream_handler; /* stream.c */
	enum rdmx_rpc_stream_kind kind;
	void *arg;
	/* server role, summed over endpoints: one slot per serving thread */
	_Atomic(struct rdmx_rpc_stats *) stats[RPC_STAT_SLOTS];
};

struct rdmx_rpc_server {
	struct rdmx__map methods; /* id -> rpc_method */
	atomic_uint refs;         /* endpoints using it (from any thread) */
	struct rpc_chain *chain;  /* server interceptors, NULL when none */
};

/* Adds a copy of *tmpl (id, handlers, kind, arg) named a copy of name (NULL: none) to the
 * server's method table: RDMX_E_EXISTS when the id is taken, RDMX_E_NOMEM.
 * What rdmx_rpc_server_register and _register_stream share (rpc_server.c). */
int rdmx__rpc_server_add_method(struct rdmx_rpc_server *server, const struct rpc_method *tmpl,
                                const char *name);

/* One incoming call (server side). */
struct rdmx_rpc_server_call {
	struct rdmx_rpc_ep *ep; /* NULL once its endpoint was destroyed */
	struct rpc_method *m;   /* NULL: unknown method, or detached */
	struct rpc_mstats *ms;
	uint64_t id;
	uint32_t method;
	uint64_t deadline_ns;
	uint64_t start_ns;
	uint64_t req_len;
	const void *req; /* the request body, while the handler runs (take_request) */
	struct rdmx__timer timer;
	bool cancelled, cancel_ran, oneway;
	bool walked;   /* on a cancel walk's list (take_incoming): not recycled */
	bool answered; /* answered while walked: recycled when the walk ends */
	void (*cancel_cb)(struct rdmx_rpc_server_call *call, void *arg);
	void *cancel_arg;
	struct rdmx_rpc_md *req_md;        /* request headers, NULL when none */
	struct rpc_resp_md *resp_md;       /* response headers, trailers, details */
	struct rpc_icall *ic;              /* interceptors' record, NULL when none */
	struct rdmx_rpc_server_call *next; /* free list / work list */
};

/* One outgoing call (client side). */
struct rpc_ccall {
	struct rdmx_rpc_ep *ep;
	uint64_t id;
	uint32_t method;
	rdmx_rpc_done_cb cb;
	void *arg;
	struct rdmx__timer timer;
	uint64_t start_ns;
	struct rpc_mstats *ms;
	bool oneway;
	struct rpc_icall *ic;        /* interceptors' record, NULL when none */
	enum rdmx_rpc_code rejected; /* an interceptor's refusal, due from progress */
	const char *reject_msg;
	bool rdv;                      /* the request went by rendezvous */
	bool unsent;                   /* failed in the send queue: never reached the server */
	struct rpc_ccall *next, *prev; /* free list / one-way list / work list */
};

/* Answers gathered during one progress call (batch.c). */
#define RPC_BATCH_ENTRY_MAX 1024u /* a larger answer goes alone */
struct rpc_batch {
	uint8_t *buf;             /* header room, then entries; NULL until first used */
	size_t len;               /* bytes used, header room included */
	uint32_t n;               /* entries */
	uint64_t alone_pass;      /* the engine pass whose first answer went alone, 0: none */
	struct rdmx__timer timer; /* due now, armed with the first entry: flushes at the
	                           * end of progress */
};

/* The endpoint's streams (stream.c). */
struct rpc_streams {
	struct rdmx__map out; /* streams we opened, by id */
	struct rdmx__map in;  /* streams the peer opened, by its id */
	uint64_t peer_max_id; /* largest stream id the peer opened */
	uint32_t max_md;      /* metadata limit, bytes */
	/* frames for streams ended here: the last ids logged (once per
	 * stream) and this second's lines (at most RPC_LATE_LOG_PER_S) */
	uint64_t late_ids[8];
	unsigned late_pos;
	uint64_t late_win_ns;
	uint32_t late_lines, late_quiet;
};

struct rdmx_rpc_ep {
	struct rdmx_chan *chan;
	struct rdmx_chan_worker *worker;
	struct rdmx_rpc_server *server;
	struct rdmx__map calls;                /* our call id -> rpc_ccall */
	struct rdmx__map incoming;             /* peer's call id -> rdmx_rpc_call */
	struct rpc_ccall *oneways;             /* one-way calls with a callback, not yet sent */
	struct rpc_ccall *issuing;             /* the call whose request call_async is handing
	                                        * to the channel: a close meanwhile leaves it to
	                                        * call_async, which returns the error */
	struct rdmx_rpc_server_call *cur_call; /* whose handler runs now, or NULL */
	uint64_t next_id;
	uint32_t max_inflight, max_active;
	uint32_t resp_pending; /* responses handed to the channel, not yet sent */
	bool draining, peer_goaway, closed, drained_fired, paused_by_us;
	int close_status;
	int busy;      /* our callbacks on the stack */
	int answering; /* rdmx_rpc_respond runs: its call still reads the server's
	                * method and interceptors, so a destroy meanwhile keeps the
	                * server in use until the endpoint is freed */
	bool destroy_pending;
	bool close_walk; /* the close's walk over the held calls runs: a destroy
	                  * leaves them to its end (rdmx_rpc_ep_destroy) */
	bool closing;    /* the close's callbacks run, the closed callback's
	                  * included: the drained callback waits for their end */
	rdmx_rpc_drained_cb drained_cb;
	void *drained_arg;
	rdmx_rpc_closed_cb closed_cb;
	void *closed_arg;
	void *user_data;
	struct rdmx_rpc_stats st[2];
	struct rdmx__map mstats; /* method -> rpc_mstats */
	struct rpc_ccall *free_calls;
	struct rdmx_rpc_server_call *free_scalls;
	uint32_t nfree_calls, nfree_scalls;
	struct rpc_streams streams;
	struct rpc_chain *chain; /* client interceptors, NULL when none */
	struct rpc_batch batch;  /* answers not yet handed to the channel */
};

/* rpc.c */
void rdmx__rpc_check_drained(struct rdmx_rpc_ep *ep);
void rdmx__rpc_release(struct rdmx_rpc_ep *ep); /* frees if destroyed and idle */

/* call.c */
/* Sends a header-only message (cancel, goaway), forced. */
int rdmx__rpc_send_ctl(struct rdmx_rpc_ep *ep, enum rpc_type type, uint64_t call_id);
/* A response message (header decoded) for one of our calls. */
void rdmx__rpc_on_response(struct rdmx_rpc_ep *ep, const struct rpc_hdr *h, const uint8_t *msg,
                           size_t len);
/* The four below were call.c's static functions, made visible to rpc.c only:
 * hidden, so that librdmx does not export them, and so that call.c's own
 * calls (the reply's path: rdmx__rpc_on_response -> rdmx__rpc_call_complete)
 * and its taking of their addresses stay direct, as they were while static
 * (no PLT, no GOT). */
#define RPC_HIDDEN __attribute__((visibility("hidden")))
/* Runs the call's callback with the outcome, counts it and recycles c; c is
 * already out of the calls table (or the one-way list). */
RPC_HIDDEN void rdmx__rpc_call_complete(struct rdmx_rpc_ep *ep, struct rpc_ccall *c,
                                        enum rdmx_rpc_code code, const char *message,
                                        const void *data, size_t len);
/* Takes a one-way call off ep->oneways. */
RPC_HIDDEN void rdmx__rpc_oneway_unlink(struct rdmx_rpc_ep *ep, struct rpc_ccall *c);
/* The channel's send callbacks of a one-way call with a callback (arg: the
 * call) and of a request (arg: the call id; matters only when it fails);
 * the endpoint forgets them when it leaves its channel. */
RPC_HIDDEN void rdmx__rpc_oneway_sent(struct rdmx_chan *chan, int status, void *arg);
RPC_HIDDEN void rdmx__rpc_request_sent(struct rdmx_chan *chan, int status, void *arg);

/* batch.c */
/* Adds a response of len bytes (produced by fill) to the endpoint's batch:
 * 0 (counted in resp_pending, sent at the end of this progress call), or
 * RDMX_E_AGAIN when it must go alone (the first answer of a progress pass,
 * too big, outside progress, no memory); another error from fill. */
int rdmx__rpc_batch_add(struct rdmx_rpc_ep *ep, size_t len, rdmx_chan_fill_fn fill, void *arg);
/* Hands the batch to the channel now (before an answer that goes alone). */
void rdmx__rpc_batch_flush(struct rdmx_rpc_ep *ep);
/* Forgets the batch's answers (the channel closed, the endpoint goes). */
void rdmx__rpc_batch_drop(struct rdmx_rpc_ep *ep);
void rdmx__rpc_batch_fini(struct rdmx_rpc_ep *ep);
/* Drops the channel's pending callbacks of sent batches. */
void rdmx__rpc_batch_forget(struct rdmx_rpc_ep *ep);
/* An RPC_T_BATCH message, header decoded. */
void rdmx__rpc_batch_on_frame(struct rdmx_rpc_ep *ep, const struct rpc_hdr *h, const uint8_t *msg,
                              size_t len);

/* stream.c */
void rdmx__rpc_streams_init(struct rdmx_rpc_ep *ep);
/* A stream frame (types RPC_T_S_*), header decoded. */
void rdmx__rpc_stream_on_frame(struct rdmx_rpc_ep *ep, const struct rpc_hdr *h, const uint8_t *msg,
                               size_t len);
/* Ends every stream with UNAVAILABLE (connection closed or endpoint going). */
void rdmx__rpc_streams_fail(struct rdmx_rpc_ep *ep, const char *why);
void rdmx__rpc_streams_fini(struct rdmx_rpc_ep *ep);

/* rpc_server.c */
void rdmx__rpc_on_request(struct rdmx_rpc_ep *ep, const struct rpc_hdr *h, const void *body,
                          size_t len);
void rdmx__rpc_on_cancel(struct rdmx_rpc_ep *ep, uint64_t call_id);
/* The channel closed: every incoming call is cancelled (kept until answered). */
void rdmx__rpc_cancel_incoming(struct rdmx_rpc_ep *ep);
/* The endpoint goes: the answers handed to the channel are forgotten (their
 * callbacks never run); the only part of the endpoint's going that touches
 * its channel. */
void rdmx__rpc_forget_answers(struct rdmx_rpc_ep *ep);
/* The endpoint goes: incoming calls are cancelled and detached (answering
 * one then frees it). Touches no channel. */
void rdmx__rpc_detach_incoming(struct rdmx_rpc_ep *ep);
void rdmx__rpc_free_scalls(struct rdmx_rpc_ep *ep);
/* Rechecks max_active after a call was answered / a response was sent. */
void rdmx__rpc_check_active(struct rdmx_rpc_ep *ep);

#endif
