/* rdmx RPC streams: server-streaming, client-streaming and bidirectional
 * calls beside the unary ones of rdmx/rpc.h, over the same endpoint
 * (struct rdmx_rpc_ep), many at once, opened from either side; call
 * metadata (ordered key/value lists) and rich status (code, message,
 * details bytes, trailers).
 *
 * A stream has an opener (the client: rdmx_rpc_stream_open) and an
 * acceptor (the server: the handler registered with
 * rdmx_rpc_server_register_stream). Either side writes messages
 * (rdmx_rpc_stream_write), ends its sending (rdmx_rpc_stream_half_close)
 * and may cancel (rdmx_rpc_stream_cancel). The acceptor ends the stream
 * with a status (rdmx_rpc_stream_finish); the opener sees it in on_done.
 *
 * Exactly once: on each side, on_done runs once per stream with the final
 * status — the acceptor's status, CANCELLED (local or peer cancel),
 * DEADLINE_EXCEEDED (the stream's one deadline), UNAVAILABLE (connection
 * lost, endpoint destroyed) or RESOURCE_EXHAUSTED (metadata over a limit).
 * After on_done returns the stream object is freed: do not use it again.
 * On the acceptor on_done also runs for the status it sent itself (from
 * rdmx_rpc_stream_finish / _cancel), so interceptors and timers see it.
 *
 * Flow control, per stream and per direction: a receiver grants its peer a
 * window counted both in messages and in bytes (a message counts its length
 * plus RDMX_RPC_STREAM_MSG_COST). At open every stream grants
 * RDMX_RPC_STREAM_WINDOW messages (and RDMX_RPC_STREAM_WINDOW_BYTES bytes);
 * the reader's own window — by default RDMX_RPC_STREAM_WINDOW_BYTES bytes
 * and no count beyond RDMX_RPC_STREAM_MAX_WINDOW messages, else what
 * opts.window / window_bytes or rdmx_rpc_stream_set_window / _set_window_bytes
 * ask — comes with the first credits it returns (as it consumes its first
 * messages; at once when set explicitly). A writer may write while it has a
 * message credit and any byte credit left (so one message may run past the
 * byte window, and a message larger than the window still goes). A message
 * is delivered to on_msg straight from the channel's ring when the reader is
 * not paused; a paused reader's messages wait in the stream (copies, at most
 * its window: window messages, and window_bytes bytes plus one message), and
 * credits go back to the writer only as the reader consumes them. A writer
 * without credits gets RDMX_E_AGAIN and, once credits return, one on_writable
 * call. So a reader that stops reading stalls its own stream's writer only;
 * other streams and unary calls on the connection go on; memory per stream
 * is bounded by the window.
 * A peer that writes beyond its window (messages or bytes; a batch is checked
 * whole before any of its messages is delivered), names a stream it never opened or
 * writes after its own half-close violates the protocol: the connection is
 * closed with a log line (RDMX_E_PROTOCOL), other connections are untouched.
 *
 * Ordering: messages of a stream arrive in order, of any size up to the
 * channel's maximum message size (eager below the slot size, rendezvous
 * above); a status that arrives while a paused reader still holds messages is
 * delivered after them.
 *
 * Threading and callbacks: as rdmx/rpc.h; every callback runs from progress
 * on the engine's thread, except on_done of a local rdmx_rpc_stream_cancel /
 * _finish, which runs from inside that call. */
#ifndef RDMX_RPC_STREAM_H
#define RDMX_RPC_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmx/rpc.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_rpc_stream;

/* ---- metadata (rpc/metadata.c) ----
 * An ordered list of (key, value) entries; keys repeat freely. Keys are
 * 1..255 bytes of lower-case ASCII letters, digits, '-', '_' and '.'; a key
 * ending in "-bin" carries any bytes, other values are printable ASCII
 * (0x20..0x7e). The list owns copies of what is added. Its size, for the
 * limits, is the sum of key and value lengths plus 32 bytes per entry. */
struct rdmx_rpc_md_entry {
	char *key;
	void *value;
	size_t len;
};
struct rdmx_rpc_md {
	struct rdmx_rpc_md_entry *v;
	size_t n, cap;
	size_t bytes;
};
#define RDMX_RPC_MD_ENTRY_OVERHEAD 32u
#define RDMX_RPC_MD_MAX_KEY 255u
#define RDMX_RPC_DEFAULT_MAX_MD 8192u /* bytes of one header or trailer list */

void rdmx_rpc_md_init(struct rdmx_rpc_md *md);
void rdmx_rpc_md_fini(struct rdmx_rpc_md *md);
/* Checks a key (and, for a non "-bin" key, the value) as above. */
bool rdmx_rpc_md_key_valid(const char *key);
/* Appends a copy. Errors: RDMX_E_INVAL (key or value refused), RDMX_E_NOMEM. */
int rdmx_rpc_md_add(struct rdmx_rpc_md *md, const char *key, const void *value, size_t len);
static inline int rdmx_rpc_md_add_str(struct rdmx_rpc_md *md, const char *key, const char *value)
{
	size_t n = 0;

	while (value && value[n])
		n++;
	return rdmx_rpc_md_add(md, key, value, n);
}
/* The first entry with this key: 0 and *value and *len, or RDMX_E_NOT_FOUND.
 * md may be NULL (nothing found). */
int rdmx_rpc_md_get(const struct rdmx_rpc_md *md, const char *key, const void **value, size_t *len);
size_t rdmx_rpc_md_count(const struct rdmx_rpc_md *md);
/* Copies every entry of src after those of dst: all of them, or (an error,
 * RDMX_E_NOMEM) none. */
int rdmx_rpc_md_append(struct rdmx_rpc_md *dst, const struct rdmx_rpc_md *src);

/* ---- rich status ---- */
/* A stream's final status as on_done sees it; every pointer is valid only
 * during the callback. details: opaque bytes (e.g. an encoded
 * google.rpc.Status-like message), NULL when none. */
struct rdmx_rpc_rich_status {
	enum rdmx_rpc_code code;
	const char *message; /* never NULL ("" when none) */
	const void *details;
	size_t details_len;
	const struct rdmx_rpc_md *trailers; /* never NULL (may be empty) */
};
#define RDMX_RPC_MAX_STATUS_DETAILS 65536u

/* ---- unary calls: metadata and rich status ----
 * rdmx_rpc_call_async with request headers (NULL: none; over the
 * endpoint's limit: RDMX_E_TOO_BIG). The result (rdmx/rpc.h) carries the
 * response headers, trailers and details; response metadata over the
 * limit completes the call RESOURCE_EXHAUSTED. */
int rdmx_rpc_call_async_md(struct rdmx_rpc_ep *ep, uint32_t method_id,
                           const struct rdmx_rpc_payload *req,
                           const struct rdmx_rpc_call_opts *opts, const struct rdmx_rpc_md *headers,
                           rdmx_rpc_done_cb cb, void *arg, uint64_t *call_id);
/* The blocking rdmx_rpc_call with request headers (NULL: none); the reply
 * (rdmx/rpc.h) owns copies of the response headers, trailers and details
 * (rdmx_rpc_call fills them too). Errors as rdmx_rpc_call, and
 * RDMX_E_TOO_BIG (headers over the endpoint's limit). */
int rdmx_rpc_call_md(struct rdmx_rpc_ep *ep, uint32_t method_id, const struct rdmx_rpc_payload *req,
                     const struct rdmx_rpc_call_opts *opts, const struct rdmx_rpc_md *headers,
                     struct rdmx_rpc_reply *reply);
/* Server side, from the handler until rdmx_rpc_respond: the request headers
 * (never NULL) and id (the caller's call id); response headers, trailers
 * and status details to send with the answer (copied). Request headers
 * over the endpoint's limit are answered RESOURCE_EXHAUSTED before the
 * handler runs. Errors: RDMX_E_INVAL (key or value), RDMX_E_TOO_BIG
 * (details over RDMX_RPC_MAX_STATUS_DETAILS), RDMX_E_NOMEM. */
const struct rdmx_rpc_md *rdmx_rpc_call_get_headers(const struct rdmx_rpc_server_call *call);
uint64_t rdmx_rpc_call_get_request_id(const struct rdmx_rpc_server_call *call);
int rdmx_rpc_call_add_header(struct rdmx_rpc_server_call *call, const char *key, const void *value,
                             size_t len);
int rdmx_rpc_call_add_trailer(struct rdmx_rpc_server_call *call, const char *key, const void *value,
                              size_t len);
int rdmx_rpc_call_set_details(struct rdmx_rpc_server_call *call, const void *details, size_t len);

/* ---- interceptors (rpc/interceptor.c) ----
 * Ordered chains that see every call: the endpoint's client chain (calls
 * and streams this endpoint starts) and the server's chain (calls and
 * streams it serves, on every endpoint). For each call, on_start runs in
 * the order of registration — before the request goes out (client) or
 * before the handler runs (server) — and may add metadata to `annotate`
 * (client: the request headers; server: the response headers) and keep a
 * per-call pointer in *state. Returning a code other than RDMX_RPC_OK
 * rejects the call with it (and *message, a static string, may say why):
 * the later interceptors do not run, nothing reaches the peer (client) or
 * the handler (server), and the call ends with that code (client: from
 * progress). on_message sees each message (outgoing: sent by this side;
 * a unary call's request, its reply when the status is OK, every message
 * of a stream; data is NULL for a message written by an encoder,
 * rdmx_rpc_payload.encode, and len is its size),
 * on_done the final status, once, in reverse order, for every
 * interceptor whose on_start ran. All three are optional. */
#define RDMX_RPC_MAX_INTERCEPTORS 8u
struct rdmx_rpc_call_info {
	enum rdmx_rpc_role role;
	uint32_t method;
	const char *method_name; /* server: the registered name; client: NULL */
	uint64_t request_id;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC, 0: none */
	bool stream;
	const struct rdmx_rpc_md *headers; /* the request headers (never NULL) */
	struct rdmx_rpc_ep *ep;
};
struct rdmx_rpc_interceptor {
	enum rdmx_rpc_code (*on_start)(const struct rdmx_rpc_call_info *info,
	                               struct rdmx_rpc_md *annotate, const char **message,
	                               void **state, void *arg);
	void (*on_message)(const struct rdmx_rpc_call_info *info, bool outgoing, const void *data,
	                   size_t len, void *state, void *arg);
	void (*on_done)(const struct rdmx_rpc_call_info *info, enum rdmx_rpc_code code,
	                const char *message, void *state, void *arg);
};
/* ic is copied. Errors: RDMX_E_INVAL, RDMX_E_FULL (RDMX_RPC_MAX_INTERCEPTORS),
 * RDMX_E_NOMEM. Add them before the first call. */
int rdmx_rpc_ep_add_interceptor(struct rdmx_rpc_ep *ep, const struct rdmx_rpc_interceptor *ic,
                                void *arg);
int rdmx_rpc_server_add_interceptor(struct rdmx_rpc_server *server,
                                    const struct rdmx_rpc_interceptor *ic, void *arg);

/* ---- streams ---- */
enum rdmx_rpc_stream_kind {
	RDMX_RPC_SERVER_STREAMING = 1, /* one request, many responses */
	RDMX_RPC_CLIENT_STREAMING = 2, /* many requests, one response */
	RDMX_RPC_BIDI_STREAMING = 3,   /* many both ways */
};
/* Granted at open, each direction, before the reader's own window. */
#define RDMX_RPC_STREAM_WINDOW 16u /* messages */
/* The default window, each direction: bytes (also granted at open). */
#define RDMX_RPC_STREAM_WINDOW_BYTES (1u << 20)
/* The default count limit (messages): the bytes bind long before it. */
#define RDMX_RPC_STREAM_MAX_WINDOW 65536u
/* What a message counts in the byte window beyond its length. */
#define RDMX_RPC_STREAM_MSG_COST 32u

struct rdmx_rpc_stream_cbs {
	/* A message; data is valid during the call only. Required to read. */
	void (*on_msg)(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg);
	/* The peer ended its sending (after its last message). Optional. */
	void (*on_half_close)(struct rdmx_rpc_stream *s, void *arg);
	/* Credits came back after a write answered RDMX_E_AGAIN. Optional. */
	void (*on_writable)(struct rdmx_rpc_stream *s, void *arg);
	/* Opener: the acceptor's response headers arrived. Optional. */
	void (*on_headers)(struct rdmx_rpc_stream *s, const struct rdmx_rpc_md *headers, void *arg);
	/* The end, exactly once (see the top of this file). Required. */
	void (*on_done)(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st,
	                void *arg);
};

struct rdmx_rpc_stream_opts {
	uint64_t timeout_us;               /* one deadline for the whole stream; 0: none */
	const struct rdmx_rpc_md *headers; /* request headers, may be NULL */
	uint32_t window;                   /* messages; 0: RDMX_RPC_STREAM_MAX_WINDOW */
	uint32_t window_bytes;             /* bytes; 0: RDMX_RPC_STREAM_WINDOW_BYTES */
};

/* Opens a stream on ep (client side). cbs is copied. Callbacks run from
 * progress, never from inside this function. A stream one of ep's
 * interceptors refused is opened all the same and ends with the refusal at
 * the next progress; until then its writes, half-close, window changes and
 * cancel are accepted and send nothing (the peer never heard of it).
 * Errors: RDMX_E_INVAL, RDMX_E_BAD_STATE (closed, draining), RDMX_E_AGAIN
 * (max_inflight calls and streams of ep open), RDMX_E_TOO_BIG (headers over
 * the endpoint's metadata limit or the message size), RDMX_E_NOMEM; the
 * send's error. On an error no stream exists: *s is not written, no
 * callback runs and nothing of it reached the peer (but for a channel that
 * closed right after the open went, with the window of opts:
 * RDMX_E_BAD_STATE; the peer's stream ends with the connection). */
int rdmx_rpc_stream_open(struct rdmx_rpc_ep *ep, uint32_t method_id, enum rdmx_rpc_stream_kind kind,
                         const struct rdmx_rpc_stream_opts *opts,
                         const struct rdmx_rpc_stream_cbs *cbs, void *arg,
                         struct rdmx_rpc_stream **s);

/* Server side: the handler runs once per accepted stream; it sets the
 * callbacks (rdmx_rpc_stream_set_callbacks) before it returns. Messages
 * that arrive while no on_msg is set wait as for a paused reader. */
typedef void (*rdmx_rpc_stream_handler)(struct rdmx_rpc_stream *s, void *arg);
/* Errors: RDMX_E_EXISTS (id taken), RDMX_E_INVAL. A stream opened with
 * another kind, or a unary call to it, is answered UNIMPLEMENTED. */
int rdmx_rpc_server_register_stream(struct rdmx_rpc_server *server, uint32_t method_id,
                                    const char *name, enum rdmx_rpc_stream_kind kind,
                                    rdmx_rpc_stream_handler handler, void *arg);
int rdmx_rpc_stream_set_callbacks(struct rdmx_rpc_stream *s, const struct rdmx_rpc_stream_cbs *cbs,
                                  void *arg);

/* Writes one message. Errors: RDMX_E_AGAIN (no credit: nothing sent; on_writable
 * follows), RDMX_E_BAD_STATE (after half-close, ended, or beyond the kind: a
 * second request of a server-streaming call, a second response of a
 * client-streaming one), RDMX_E_TOO_BIG (over the maximum message size, with
 * or without credit), RDMX_E_INVAL. A message counts one message credit and
 * its length + RDMX_RPC_STREAM_MSG_COST byte credits; it may start while any
 * byte credit is left. Written from inside a callback of the engine, messages
 * up to 16 KiB are coalesced (up to 64 KiB per channel message, in order)
 * and go when that callback returns or before any other frame of the
 * stream. */
int rdmx_rpc_stream_write(struct rdmx_rpc_stream *s, const struct rdmx_rpc_payload *msg);
/* Ends this side's sending; the peer's on_half_close follows its last message.
 * Acceptor: response headers that server interceptors added and that have
 * not gone yet go first; an error sending them is returned (the stream is
 * not half-closed). */
int rdmx_rpc_stream_half_close(struct rdmx_rpc_stream *s);
/* Acceptor: response headers, at most once, before the first message. */
int rdmx_rpc_stream_send_headers(struct rdmx_rpc_stream *s, const struct rdmx_rpc_md *headers);
/* Acceptor: the final status (details and trailers may be NULL); on_done
 * runs with it from inside this call. Response headers that server
 * interceptors added and that have not gone yet (no message was written)
 * go first. Errors: RDMX_E_BAD_STATE (opener, or ended), RDMX_E_TOO_BIG
 * (details over RDMX_RPC_MAX_STATUS_DETAILS or trailers over the metadata
 * limit: the stream ends RESOURCE_EXHAUSTED). A status, or those headers,
 * that cannot go as given (over the metadata limit, too big for the
 * channel, or another send error such as RDMX_E_NOMEM, returned) gives way
 * to a bare RESOURCE_EXHAUSTED on both sides; when not even that fits, the
 * connection closes and the opener's stream ends UNAVAILABLE. The opener
 * always learns the end, once. */
int rdmx_rpc_stream_finish(struct rdmx_rpc_stream *s, enum rdmx_rpc_code code, const char *message,
                           const void *details, size_t details_len,
                           const struct rdmx_rpc_md *trailers);
/* Either side: ends the stream now, on_done with CANCELLED from inside this
 * call; the peer's ends CANCELLED too. */
int rdmx_rpc_stream_cancel(struct rdmx_rpc_stream *s);

/* A paused reader keeps its messages (up to its window) and returns no
 * credits; resume delivers what waits (from inside the call) and returns
 * credits. */
int rdmx_rpc_stream_pause_read(struct rdmx_rpc_stream *s);
int rdmx_rpc_stream_resume_read(struct rdmx_rpc_stream *s);
/* The window this side grants: messages (>= 1) and bytes (>= 1). A larger
 * one is granted at once, a smaller one by returning fewer credits (what
 * was granted stays granted). Errors: RDMX_E_INVAL (NULL, 0), RDMX_E_BAD_STATE
 * (the stream ended: also from inside on_done). */
int rdmx_rpc_stream_set_window(struct rdmx_rpc_stream *s, uint32_t window);
int rdmx_rpc_stream_set_window_bytes(struct rdmx_rpc_stream *s, uint32_t bytes);

/* Getters. headers: acceptor — the request headers; opener — the response
 * headers (empty until they come). id: the request id (the opener's stream
 * id, unique per endpoint and direction). deadline: CLOCK_MONOTONIC ns, 0
 * when none. queued: messages waiting for a paused reader; queued_bytes:
 * their bytes as the byte window counts them (length + RDMX_RPC_STREAM_MSG_COST
 * each). */
const struct rdmx_rpc_md *rdmx_rpc_stream_get_headers(const struct rdmx_rpc_stream *s);
uint64_t rdmx_rpc_stream_get_id(const struct rdmx_rpc_stream *s);
uint32_t rdmx_rpc_stream_get_method(const struct rdmx_rpc_stream *s);
uint64_t rdmx_rpc_stream_get_deadline(const struct rdmx_rpc_stream *s);
uint32_t rdmx_rpc_stream_get_queued(const struct rdmx_rpc_stream *s);
uint64_t rdmx_rpc_stream_get_queued_bytes(const struct rdmx_rpc_stream *s);
struct rdmx_rpc_ep *rdmx_rpc_stream_get_ep(const struct rdmx_rpc_stream *s);
/* Streams of the endpoint not yet ended (both directions). */
uint32_t rdmx_rpc_ep_get_streams(const struct rdmx_rpc_ep *ep);
/* The largest header or trailer list this endpoint accepts from its peer and
 * sends (bytes, as counted above; default RDMX_RPC_DEFAULT_MAX_MD). Larger
 * incoming metadata ends that stream RESOURCE_EXHAUSTED; the connection stays. */
int rdmx_rpc_ep_set_max_metadata(struct rdmx_rpc_ep *ep, uint32_t bytes);

#ifdef __cplusplus
}
#endif
#endif
