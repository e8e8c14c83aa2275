/* rdmx codec streams: the blocking client side of streaming calls, for the
 * S_M_open / S_M_read / S_M_write / S_M_close_send / S_M_finish functions
 * rdmx-gen emits (docs/codegen.md). It runs a stream of rdmx/rpc_stream.h
 * and drives the endpoint's progress engine (rdmx_chan_worker_wait) while
 * it waits, as rdmx_rpc_call does: call it from the thread that owns the
 * engine, never from a callback.
 *
 * Memory: incoming messages are copied into the call; the call stops
 * reading (rdmx_rpc_stream_pause_read) when a window of them waits
 * unread, so a slow reader stalls its own stream's writer only and holds
 * at most two windows of messages. Writes wait for credits (flow control)
 * until the stream's deadline (opts->timeout_us), which the runtime
 * enforces: a stream past it ends DEADLINE_EXCEEDED and every waiting
 * function returns. */
#ifndef RDMX_CODEC_STREAM_H
#define RDMX_CODEC_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include <rdmx/codec.h>
#include <rdmx/rpc_stream.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_codec_stream;

/* Ends the stream now (CANCELLED on both sides) if it has not ended; the
 * call stays valid until S_M_finish (which then returns CANCELLED). */
int rdmx_codec_stream_cancel(struct rdmx_codec_stream *cs);
/* The response headers received so far and, after the end, the trailers
 * (never NULL; valid until S_M_finish). */
const struct rdmx_rpc_md *rdmx_codec_stream_get_headers(const struct rdmx_codec_stream *cs);
const struct rdmx_rpc_md *rdmx_codec_stream_get_trailers(const struct rdmx_codec_stream *cs);
/* The underlying stream while it runs (NULL once it ended). */
struct rdmx_rpc_stream *rdmx_codec_stream_get_stream(const struct rdmx_codec_stream *cs);

/* ---- for generated code ----
 * open: opens the stream; req (server-streaming) is written and the
 * sending half-closed at once. write: 0 written; a positive enum
 * rdmx_rpc_code when the stream ended before it could be written (see
 * finish); negative RDMX_E_*. read: 1 and *data, *len (valid until the next
 * read or finish), 0 at the end of the stream (finish says how it ended),
 * negative RDMX_E_*. finish: half-closes if needed, drops unread
 * messages, waits for the end, fills *status (code and message copied
 * into arena, may be NULL), frees the call and returns 0 (OK), the
 * positive code, or a negative RDMX_E_* (the call is freed anyway). */
int rdmx__codec_stream_open(struct rdmx_rpc_ep *ep, uint32_t method_id,
                            enum rdmx_rpc_stream_kind kind, const struct rdmx_rpc_payload *req,
                            const struct rdmx_rpc_stream_opts *opts, struct rdmx_codec_stream **cs);
int rdmx__codec_stream_write(struct rdmx_codec_stream *cs, const struct rdmx_rpc_payload *msg);
int rdmx__codec_stream_close_send(struct rdmx_codec_stream *cs);
int rdmx__codec_stream_read(struct rdmx_codec_stream *cs, const void **data, size_t *len);
int rdmx__codec_stream_finish(struct rdmx_codec_stream *cs, struct rdmx_rpc_status *status,
                              struct rdmx_arena *arena);

#ifdef __cplusplus
}
#endif
#endif
