/* Private to the stream object (rpc/stream.c: life cycle, frames out, the
 * API; rpc/stream_rx.c: frames in, credits, delivery). */
#ifndef RDMX_RPC_STREAM_PRIV_H
#define RDMX_RPC_STREAM_PRIV_H

#include "rpc_priv.h"

struct qmsg {
	struct qmsg *next;
	size_t len;
	uint8_t data[];
};

struct rdmx_rpc_stream {
	struct rdmx_rpc_ep *ep;
	uint64_t id;
	uint32_t method;
	enum rdmx_rpc_stream_kind kind;
	bool opener;
	struct rdmx_rpc_stream_cbs cbs;
	void *arg;
	struct rdmx__timer timer;
	uint64_t deadline_ns;
	struct rdmx_rpc_md headers; /* the peer's */
	bool headers_in, headers_out;
	/* sending */
	uint64_t sent, send_limit;             /* messages */
	uint64_t sent_bytes, send_limit_bytes; /* bytes: length + RDMX_RPC_STREAM_MSG_COST */
	bool want_writable, local_end;
	/* coalescing (stream.c): small messages written from inside a callback
	 * of the engine wait here, each u32 length + bytes, until that callback
	 * returns (flush_timer, due at once: it runs at the end of the same
	 * progress call), the batch fills, or another frame of the stream goes */
	uint8_t *batch; /* batch_cap bytes, allocated once */
	size_t batch_len, batch_cap;
	uint32_t batch_n;
	struct rdmx__timer flush_timer;
	bool in_batch; /* receiving a batch: credits go back after it */
	/* receiving */
	uint64_t received, consumed, granted;                   /* messages */
	uint64_t received_bytes, consumed_bytes, granted_bytes; /* bytes, as sent_bytes */
	uint32_t window, window_bytes;
	bool paused, delivering, peer_end, half_close_pending;
	struct qmsg *qhead, *qtail;
	uint32_t queued;
	uint64_t queued_bytes;
	/* opener: a status that waits for the queued messages */
	bool status_pending;
	enum rdmx_rpc_code st_code;
	char *st_msg;
	void *st_details;
	size_t st_details_len;
	struct rdmx_rpc_md st_trailers;
	/* interceptors (interceptor.c) */
	struct rpc_icall *ic;
	struct rdmx_rpc_md ann;      /* acceptor: response headers they added */
	enum rdmx_rpc_code rejected; /* opener: their refusal, due from progress */
	const char *reject_msg;
	/* stats (stats.c): the endpoint's method bucket, the server's method */
	struct rpc_mstats *ms;
	struct rpc_method *m;
	/* life */
	bool opening; /* its open is being sent: rdmx_rpc_stream_open ends a failure */
	bool ended;
	/* rdmx__stream_abort sends its reset or status: a close inside that
	 * send ends the stream with the abort's code and message, not its own */
	enum rdmx_rpc_code abort_code;
	const char *abort_msg;
	int busy;
	struct rdmx_rpc_stream *next; /* fail list */
};

static inline uint8_t rdmx__stream_dir_flag(const struct rdmx_rpc_stream *s)
{
	return s->opener ? 0 : RPC_SF_ACC;
}

/* Nothing of this stream goes on the wire: a client interceptor refused it
 * before its open went out, so the peer never heard of it (a frame under its
 * id would make the peer close the connection). It ends with the refusal
 * from progress; until then the caller's writes, half-close, window changes
 * and cancel are accepted and send nothing. */
static inline bool rdmx__stream_silent(const struct rdmx_rpc_stream *s)
{
	return s->rejected != RDMX_RPC_OK;
}

/* stream.c */
void rdmx__stream_free(struct rdmx_rpc_stream *s);
/* Drops one hold (busy); frees an ended stream nobody holds. */
void rdmx__stream_drop(struct rdmx_rpc_stream *s);
/* Frames out, forced past the channel's queue bound (credits bound them). */
int rdmx__stream_send_frame(struct rdmx_rpc_ep *ep, uint8_t type, uint8_t flags, uint8_t code,
                            uint32_t word, uint64_t id, uint64_t timeout_us, const uint8_t *pre,
                            size_t prelen, const struct rdmx_rpc_payload *body);
/* A frame of stream s (its id and direction; wide: the header's 64-bit
 * field); for a silent stream none, and 0. */
int rdmx__stream_send(struct rdmx_rpc_stream *s, uint8_t type, uint8_t code, uint32_t word,
                      uint64_t wide, const uint8_t *pre, size_t prelen,
                      const struct rdmx_rpc_payload *body);
int rdmx__stream_send_status(struct rdmx_rpc_ep *ep, uint64_t id, enum rdmx_rpc_code code,
                             const char *msg, const void *details, size_t dlen,
                             const struct rdmx_rpc_md *trailers);
/* The one end: out of its table, on_done once (nothing if ended). */
void rdmx__stream_end(struct rdmx_rpc_stream *s, enum rdmx_rpc_code code, const char *msg,
                      const void *details, size_t dlen, const struct rdmx_rpc_md *trailers);
/* Ends with the status the opener holds for after its queued messages. */
void rdmx__stream_end_held(struct rdmx_rpc_stream *s);
/* Ends the stream here and for the peer: the opener sends a reset with code,
 * the acceptor a status without details or trailers (code, peer_msg); on_done
 * gets code and msg. The peer always learns the end: when that frame cannot
 * go, the connection is closed. The caller holds the endpoint. */
void rdmx__stream_abort(struct rdmx_rpc_stream *s, enum rdmx_rpc_code code, const char *peer_msg,
                        const char *msg);
/* Refuses stream id, which has no object here (acceptor): a status as above. */
void rdmx__stream_refuse(struct rdmx_rpc_ep *ep, uint64_t id, enum rdmx_rpc_code code,
                         const char *msg);
struct rdmx_rpc_stream *rdmx__stream_new(struct rdmx_rpc_ep *ep, uint64_t id, uint32_t method,
                                         enum rdmx_rpc_stream_kind kind, bool opener);
void rdmx__stream_arm_deadline(struct rdmx_rpc_stream *s, uint64_t start_ns, uint64_t us);

/* Sends the messages waiting in the batch (nothing when none). */
int rdmx__stream_flush(struct rdmx_rpc_stream *s);
/* Drops them (the stream ends without them reaching the peer). */
void rdmx__stream_batch_drop(struct rdmx_rpc_stream *s);

/* Counters of the stream's endpoint, method and (acceptor) server method. */
enum rdmx__sstat { SST_OPEN, SST_END, SST_TX, SST_RX };
void rdmx__stream_count(struct rdmx_rpc_stream *s, enum rdmx__sstat ev, enum rdmx_rpc_code code,
                        size_t bytes);

/* stream_rx.c */
/* A message's cost in the byte window. */
static inline uint64_t rdmx__stream_cost(size_t len)
{
	return (uint64_t)len + RDMX_RPC_STREAM_MSG_COST;
}
/* Returns credits consumed since the last grant, once half a window (of
 * messages or of bytes) is due. */
void rdmx__stream_grant(struct rdmx_rpc_stream *s);
/* Delivers what a paused reader holds, then a held half-close or status. */
void rdmx__stream_deliver(struct rdmx_rpc_stream *s);

#endif
