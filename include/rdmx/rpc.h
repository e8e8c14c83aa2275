/* rdmx RPC: unary calls over a message channel (include/rdmx/channel.h),
 * on either provider.
 *
 * Method ids are the 32-bit FNV-1a hash of "package.Service/Method"
 * (rdmx_rpc_method_id); rdmx-gen emits them as constants.
 * Payloads are produced by an encoder that writes straight into the channel's
 * buffer (no intermediate copy) or given as plain bytes.
 * Threading: run to completion on the thread that drives the progress engine;
 * no locks on the hot path. One endpoint (struct rdmx_rpc_conn) can both call
 * and serve: calls go both ways on one connection.
 * Every call completes exactly once: with the reply, DEADLINE_EXCEEDED,
 * CANCELLED, or UNAVAILABLE when the peer or connection dies. */
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
struct rdmx_rpc_server; /* handler table, shared by many connections */
struct rdmx_rpc_conn;   /* one peer: client and server endpoint over one channel */
struct rdmx_rpc_call;   /* server side: one incoming call */

/* gRPC status numbering; never mixed with RDMX_E_* codes. */
enum rdmx_rpc_code {
	RDMX_RPC_OK = 0,
	RDMX_RPC_CANCELLED = 1,
	RDMX_RPC_UNKNOWN = 2,
	RDMX_RPC_INVALID_ARGUMENT = 3,
	RDMX_RPC_DEADLINE_EXCEEDED = 4,
	RDMX_RPC_NOT_FOUND = 5,
	RDMX_RPC_ALREADY_EXISTS = 6,
	RDMX_RPC_PERMISSION_DENIED = 7,
	RDMX_RPC_RESOURCE_EXHAUSTED = 8,
	RDMX_RPC_FAILED_PRECONDITION = 9,
	RDMX_RPC_ABORTED = 10,
	RDMX_RPC_OUT_OF_RANGE = 11,
	RDMX_RPC_UNIMPLEMENTED = 12,
	RDMX_RPC_INTERNAL = 13,
	RDMX_RPC_UNAVAILABLE = 14,
	RDMX_RPC_DATA_LOSS = 15,
	RDMX_RPC_UNAUTHENTICATED = 16,
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
	bool oneway;         /* no reply; the callback (if any) runs once sent */
};

/* The outcome of a call. `data`/`len` point into the receive ring (zero copy)
 * and are valid only during the callback; `message` likewise (may be NULL). */
struct rdmx_rpc_result {
	enum rdmx_rpc_code code;
	const char *message;
	const void *data;
	size_t len;
};

typedef void (*rdmx_rpc_done_cb)(const struct rdmx_rpc_result *result, void *arg);

/* ---- server side ---- */

/* `req`/`len` are valid only during the handler: copy what a later
 * rdmx_rpc_respond needs. */
typedef void (*rdmx_rpc_handler)(struct rdmx_rpc_call *call, const void *req, size_t len,
				 void *arg);

int rdmx_rpc_server_create(struct rdmx_rpc_server **server);
int rdmx_rpc_server_destroy(struct rdmx_rpc_server **server);
/* Errors: RDMX_E_EXISTS (id taken), RDMX_E_INVAL. `name` is copied. */
int rdmx_rpc_server_register(struct rdmx_rpc_server *server, uint32_t method_id,
			     const char *name, rdmx_rpc_handler handler, void *arg);

/* Answers a call exactly once, now or later from any callback on the same
 * thread; then `call` is invalid. A call the client cancelled or whose
 * deadline passed is answered silently (nothing is sent).
 * resp may be NULL (empty body); message may be NULL. */
int rdmx_rpc_respond(struct rdmx_rpc_call *call, enum rdmx_rpc_code code, const char *message,
		     const struct rdmx_rpc_payload *resp);
/* Absolute deadline in CLOCK_MONOTONIC nanoseconds, 0 when none. */
uint64_t rdmx_rpc_call_get_deadline(const struct rdmx_rpc_call *call);
bool rdmx_rpc_call_is_cancelled(const struct rdmx_rpc_call *call);
uint32_t rdmx_rpc_call_get_method(const struct rdmx_rpc_call *call);
struct rdmx_rpc_conn *rdmx_rpc_call_get_conn(const struct rdmx_rpc_call *call);
/* Runs once if the caller cancels, times out or goes away before the answer. */
int rdmx_rpc_call_set_cancel_cb(struct rdmx_rpc_call *call,
				void (*cb)(struct rdmx_rpc_call *call, void *arg), void *arg);

/* ---- connection endpoint (client and server) ---- */

/* Builds an RPC endpoint over an established channel; `server` may be NULL
 * (call-only endpoint) and may be shared by many endpoints. */
int rdmx_rpc_conn_create(struct rdmx_chan *chan, struct rdmx_rpc_server *server,
			 struct rdmx_rpc_conn **rc);
/* Fails outstanding calls with UNAVAILABLE (callbacks run), then frees. */
int rdmx_rpc_conn_destroy(struct rdmx_rpc_conn **rc);
/* Graceful shutdown: refuse new calls, let in-flight ones finish. */
int rdmx_rpc_conn_drain(struct rdmx_rpc_conn *rc);
struct rdmx_chan *rdmx_rpc_conn_get_chan(const struct rdmx_rpc_conn *rc);

/* Starts a call. cb runs exactly once from progress (never from inside this
 * function). *call_id (may be NULL) names it for rdmx_rpc_cancel.
 * Errors: RDMX_E_BAD_STATE (draining/closed), RDMX_E_INVAL, RDMX_E_TOO_BIG. */
int rdmx_rpc_call_async(struct rdmx_rpc_conn *rc, uint32_t method_id,
			const struct rdmx_rpc_payload *req, const struct rdmx_rpc_call_opts *opts,
			rdmx_rpc_done_cb cb, void *arg, uint64_t *call_id);

/* Cancels a pending call: its callback runs once with CANCELLED (unless the
 * reply or another outcome already completed it: then RDMX_E_NOT_FOUND). */
int rdmx_rpc_cancel(struct rdmx_rpc_conn *rc, uint64_t call_id);

/* A blocking call that drives the progress engine until the call completes.
 * On return *reply owns a copy of the response (free with rdmx_rpc_reply_fini).
 * Returns 0 when a status was obtained (see reply->code) or a negative
 * RDMX_E_* code when the call could not be started. */
struct rdmx_rpc_reply {
	enum rdmx_rpc_code code;
	char *message; /* NULL or heap copy */
	void *data;    /* heap copy, NULL when len == 0 */
	size_t len;
};
int rdmx_rpc_call(struct rdmx_rpc_conn *rc, uint32_t method_id,
		  const struct rdmx_rpc_payload *req, const struct rdmx_rpc_call_opts *opts,
		  struct rdmx_rpc_reply *reply);
void rdmx_rpc_reply_fini(struct rdmx_rpc_reply *reply);

#ifdef __cplusplus
}
#endif
#endif
