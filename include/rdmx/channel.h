/* rdmx message channel: ordered, reliable, exactly-once messages over one
 * engine connection, on either provider.
 *
 * Two objects:
 *
 * struct rdmx_chan_worker — the channel layer's hold on one context. Created
 *   on an IDLE context, before rdmx_ctx_start: it configures the context's
 *   task pools (receive, send, read, write_imm) and connection callbacks,
 *   and takes the context's user data. From then on the context belongs to
 *   the channel layer (use another context for raw tasks). It keeps a pool
 *   of receive tasks posted (write-with-immediate consumes one receive per
 *   message; the data lands in the ring, not in the receive buffer), a
 *   connection -> channel map. The timers of its channels and RPC
 *   endpoints (keep-alives, deadlines) are timers of its progress engine
 *   (rdmx/pe.h): whatever drives the engine runs them.
 *
 * struct rdmx_chan — one connection. Life cycle (like a context):
 *   rdmx_chan_create(worker, conn)  -> IDLE: setters allowed
 *   rdmx_chan_start()             -> STARTING: the receive ring is registered
 *                                    (REMOTE_WRITE only) and the handshake
 *                                    ("hello") is sent
 *   peer's hello arrives          -> READY (event callback RDMX_CHAN_EV_READY)
 *   error / peer gone / destroy   -> CLOSED (event callback RDMX_CHAN_EV_CLOSED)
 *
 * Handshake (in band, chosen so that the out-of-band exchange — bootstrap —
 * carries only the engine's connection details): the first message each
 * side sends on the connection is a SEND (not a ring write) of a 64-byte
 * hello holding the version, the slot count and slot size of its receive
 * ring, its maximum message size and the ring's memory descriptor. The
 * connection itself was set up from secret details, so only the peer sees
 * the ring descriptor. A hello that arrives before the local channel exists
 * is kept by the worker until rdmx_chan_start.
 *
 * Wire (see rpc/ring.h for the exact layout):
 * - each side owns a receive ring of N slots x S bytes; a message up to the
 *   eager threshold (<= S - RDMX_CHAN_HDR_SIZE) goes as ONE write-with-
 *   immediate of header + payload into the peer's next slot; the immediate
 *   names the slot and the low bits of the sequence number; the 16-byte slot
 *   header holds magic, flags, length, sequence and the credit count; on
 *   the tcp device a small one (<= 512 bytes with its header) whose send has
 *   no callback goes as a light message, the same write without an engine
 *   task on either side (no receive consumed, no acknowledgement);
 * - credits: the sender never writes into a slot the receiver has not freed.
 *   Each header carries the cumulative number of slots its writer has freed
 *   in its own ring (piggybacked credits); a receiver with nothing to send
 *   returns credits with an explicit 16-byte credit SEND once half its ring
 *   is consumed, and at once after each rendezvous (that is its ack);
 * - rendezvous, for messages above the eager threshold: the sender registers
 *   the source with REMOTE_READ only and writes its descriptor into a slot;
 *   the receiver reads it with ONE RDMA read into a buffer it owns, delivers,
 *   and acknowledges with a credit update; the sender deregisters the source
 *   when the ack arrives, then completes the send;
 * - delivery is in order and exactly once: slots and sequence numbers are
 *   checked on every message; later messages wait behind a rendezvous read.
 *
 * Every incoming header is validated (immediate's slot and sequence against
 * the expected ones, magic, flags, length <= slot payload and == written
 * length, credits never beyond what was sent, rendezvous descriptor length,
 * size and access, message length <= the local maximum). A violation closes
 * that connection with RDMX_E_PROTOCOL and one error log line naming the
 * connection and the bad value; other connections go on.
 *
 * Backpressure: rdmx_chan_send* never blocks. A message is written at once
 * when a credit (a free peer slot) is available, otherwise QUEUED in the
 * channel's send queue; the queue holds at most `send_queue_len` messages
 * (default RDMX_CHAN_DEFAULT_SEND_QUEUE_LEN); beyond that a send returns
 * RDMX_E_AGAIN and nothing is queued. A queued eager message is copied
 * (<= one slot); rendezvous sources are registered at send time, so memory
 * stays bounded by send_queue_len x slot size plus the sender's own
 * rendezvous sources. A receiver that stops consuming (rdmx_chan_pause, or
 * a slow callback) returns no credits: its sender stalls, its ring is the
 * only memory used, and every message is delivered once after it resumes.
 *
 * Threading: one thread — the one that drives the worker's progress engine —
 * calls everything here; callbacks run from progress (and from
 * rdmx_chan_resume), never concurrently. */
#ifndef RDMX_CHANNEL_H
#define RDMX_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmx/ctx.h>
#include <rdmx/mr.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_ctx;
struct rdmx_conn;
struct rdmx_pe;
struct rdmx_chan_worker;
struct rdmx_chan;

#define RDMX_CHAN_HDR_SIZE 16u /* slot header bytes */
#define RDMX_CHAN_DEFAULT_SLOT_COUNT 256u
#define RDMX_CHAN_DEFAULT_SLOT_SIZE 8192u
#define RDMX_CHAN_DEFAULT_MAX_MSG_SIZE (64u << 20) /* 64 MiB */
#define RDMX_CHAN_DEFAULT_SEND_QUEUE_LEN 1024u
#define RDMX_CHAN_MIN_SLOT_COUNT 2u
#define RDMX_CHAN_MAX_SLOT_COUNT 65536u
#define RDMX_CHAN_MIN_SLOT_SIZE 64u /* multiple of 64 */
#define RDMX_CHAN_MAX_SLOT_SIZE (1u << 20)
#define RDMX_CHAN_MAX_MSG_SIZE_LIMIT (1u << 30) /* 1 GiB */

enum rdmx_chan_state {
	RDMX_CHAN_IDLE = 0,
	RDMX_CHAN_STARTING = 1, /* hello sent, waiting for the peer's */
	RDMX_CHAN_READY = 2,
	RDMX_CHAN_CLOSED = 3,
};

enum rdmx_chan_event {
	RDMX_CHAN_EV_READY = 0,  /* status 0 */
	RDMX_CHAN_EV_CLOSED = 1, /* status: RDMX_E_DISCONNECTED (peer or local
	                          * disconnect), RDMX_E_PROTOCOL (peer broke the
	                          * wire rules), RDMX_E_CONN_ABORTED / other task
	                          * error, RDMX_E_CANCELED (context stopped) */
};

/* A delivered message: `data` points into the receive ring (eager) or into
 * the channel's rendezvous buffer; valid only during the callback. */
typedef void (*rdmx_chan_recv_cb)(struct rdmx_chan *chan, const void *data, size_t len, void *arg);
typedef void (*rdmx_chan_event_cb)(struct rdmx_chan *chan, enum rdmx_chan_event ev, int status,
                                   void *arg);
/* A send finished: 0 once the message is in the peer's ring (eager) or the
 * peer acknowledged its rendezvous read; a negative RDMX_E_* when the
 * channel closed first. Runs exactly once per accepted send that gave a cb,
 * from progress (never from inside the send call). */
typedef void (*rdmx_chan_sent_cb)(struct rdmx_chan *chan, int status, void *arg);
/* Writes exactly `len` bytes of the message into dst. A non-zero return
 * aborts the send (the send call returns it). */
typedef int (*rdmx_chan_fill_fn)(void *dst, size_t len, void *arg);

/* ---- worker ---- */

struct rdmx_chan_worker_attr {
	uint32_t recv_tasks;  /* receive tasks kept posted (default 1024) */
	uint32_t write_tasks; /* write-with-immediate tasks (default 2048) */
	uint32_t send_tasks;  /* control sends: hello, credit updates (default 1024) */
	uint32_t read_tasks;  /* rendezvous reads (default 64) */
	/* Liveness: a READY channel that heard nothing from its peer for this
	 * long sends a 16-byte probe (a credit update); a dead peer fails it
	 * (RC retries exhausted, broken socket), which closes the channel and
	 * fails its RPC calls with UNAVAILABLE — also where the transport gives
	 * no disconnect event (export/connect on verbs). 0 turns it off; then
	 * every ring write is a write task (no light messages on tcp), whose
	 * wait for its acknowledgement is what the transport timeout watches.
	 * Default 1000 ms. */
	uint32_t keepalive_ms;
	/* A rendezvous is ONE RDMA read of the whole message when the device
	 * can move that much in one operation; above this size (0: the
	 * device's max message size — 8 MiB on Soft-RoCE) it is read in
	 * chunks of this size, four in flight. */
	uint64_t rdv_read_max;
	/* Connection callbacks passed through to the user (any may be NULL);
	 * they get `user_data` as their ctx_user_data. request_cb is needed to
	 * listen. A channel's own connection events reach it first. */
	rdmx_conn_request_cb request_cb;
	rdmx_conn_established_cb established_cb;
	rdmx_conn_failure_cb failure_cb;
	rdmx_conn_disconnected_cb disconnected_cb;
	void *user_data;
	/* Registration cache of rendezvous buffers (the sender's copy of a
	 * large message, the receiver's read destination): buffers stay
	 * registered (pinned) between messages and are reused; idle ones are
	 * evicted, least recently used first, while the total size of the
	 * cached buffers is above this many bytes. Buffers in use are never
	 * evicted. 0: the default, 64 MiB. */
	uint64_t reg_cache_bytes;
};

/* Fills the defaults. */
void rdmx_chan_worker_attr_init(struct rdmx_chan_worker_attr *attr);

/* `ctx` must be IDLE and created on `pe`; attr may be NULL (defaults).
 * Raises the context's queue sizes as the pools need (within device caps),
 * sets its task confs, connection callbacks and user data.
 * Errors: RDMX_E_INVAL, RDMX_E_BAD_STATE (ctx not IDLE), RDMX_E_NOMEM. */
int rdmx_chan_worker_create(struct rdmx_ctx *ctx, struct rdmx_pe *pe,
                            const struct rdmx_chan_worker_attr *attr,
                            struct rdmx_chan_worker **worker);
/* Only with the context IDLE again (rdmx_ctx_stop) and after every channel
 * was destroyed (else RDMX_E_BAD_STATE). NULL / *worker == NULL: no-op. */
int rdmx_chan_worker_destroy(struct rdmx_chan_worker **worker);

/* rdmx_pe_progress on the worker's engine (completions and due timers).
 * Returns what ran or a negative RDMX_E_* code. */
int rdmx_chan_worker_progress(struct rdmx_chan_worker *worker);
/* rdmx_pe_wait on the worker's engine (it never sleeps past the next timer).
 * Returns completions and timers run (0 on timeout). */
int rdmx_chan_worker_wait(struct rdmx_chan_worker *worker, int timeout_ms);
struct rdmx_ctx *rdmx_chan_worker_get_ctx(const struct rdmx_chan_worker *worker);
struct rdmx_pe *rdmx_chan_worker_get_pe(const struct rdmx_chan_worker *worker);

/* The registration cache's counters (attr.reg_cache_bytes). */
struct rdmx_chan_reg_cache_stats {
	uint64_t hits;      /* a rendezvous buffer reused with its registration */
	uint64_t misses;    /* a buffer allocated and registered */
	uint64_t evictions; /* idle buffers deregistered and freed to stay within the limit */
	uint64_t regs;      /* registrations the cache holds now (busy + idle) */
	uint64_t peak_regs; /* high-water mark of regs */
	uint64_t busy;      /* buffers in use now */
	uint64_t bytes;     /* total size of the cached buffers now */
	uint64_t limit;     /* the limit in bytes */
	uint64_t handovers; /* receive buffers given away with their message (deregistered, out of
	                       the cache) */
};
/* RDMX_E_INVAL on NULL arguments. */
int rdmx_chan_worker_get_reg_cache_stats(const struct rdmx_chan_worker *worker,
                                         struct rdmx_chan_reg_cache_stats *stats);
/* Sets the cache's limit (0: the default) and evicts idle buffers down to
 * it; buffers in use stay until they are released. RDMX_E_INVAL. */
int rdmx_chan_worker_set_reg_cache_limit(struct rdmx_chan_worker *worker, uint64_t bytes);

/* ---- channel ---- */

/* Creates an IDLE channel over `conn` (a connection of the worker's context:
 * from rdmx_ctx_export before or after rdmx_ctx_connect, or from the cm
 * flow's established callback). The channel owns the connection from then
 * on: rdmx_chan_destroy disconnects it.
 * Errors: RDMX_E_INVAL, RDMX_E_EXISTS (conn already has a channel),
 * RDMX_E_BAD_STATE (context not RUNNING), RDMX_E_NOMEM. */
int rdmx_chan_create(struct rdmx_chan_worker *worker, struct rdmx_conn *conn,
                     struct rdmx_chan **chan);

/* Setters allowed in IDLE only (RDMX_E_BAD_STATE later; RDMX_E_INVAL out of
 * range). Slot count: 2..65536; slot size: 64..1 MiB, a multiple of 64;
 * max message size: 1..1 GiB and at most the device's max message size; the
 * value is the largest message this side ACCEPTS (the peer learns it in the
 * hello) and sends (a send is limited by the smaller of both sides').
 * send_queue_len: 0..1M messages. */
int rdmx_chan_set_slot_count(struct rdmx_chan *chan, uint32_t count);
int rdmx_chan_set_slot_size(struct rdmx_chan *chan, uint32_t size);
int rdmx_chan_set_max_msg_size(struct rdmx_chan *chan, uint64_t size);
int rdmx_chan_set_send_queue_len(struct rdmx_chan *chan, uint32_t len);
/* Messages longer than `bytes` go by rendezvous. Any state. Default and
 * maximum: the peer's slot payload (slot size - RDMX_CHAN_HDR_SIZE), which
 * caps larger values once the peer's hello is in (the getter shows the
 * effective value). 0 sends everything by rendezvous except empty messages. */
int rdmx_chan_set_eager_threshold(struct rdmx_chan *chan, uint32_t bytes);
/* Any state; recv_cb may be NULL only while nothing arrives. */
int rdmx_chan_set_callbacks(struct rdmx_chan *chan, rdmx_chan_recv_cb recv_cb,
                            rdmx_chan_event_cb event_cb, void *arg);

/* IDLE -> STARTING. Errors: RDMX_E_BAD_STATE, RDMX_E_NOMEM, RDMX_E_PROVIDER. */
int rdmx_chan_start(struct rdmx_chan *chan);

/* Closes (disconnecting the connection if it still lives) and releases the
 * channel. Queued sends complete with RDMX_E_CANCELED; sends already handed
 * to the engine complete (with an error) when the engine releases their
 * buffers, from progress, after this returns. No recv/event callback runs
 * after this. From a callback of this channel too. NULL / *chan: no-op.
 * RDMX_E_BAD_STATE (nothing done) while an RPC endpoint (rdmx_rpc_ep)
 * is built on the channel: destroy the endpoint first. */
int rdmx_chan_destroy(struct rdmx_chan **chan);

/* Sends `len` bytes (copied: `data` may be reused on return). cb may be NULL.
 * Errors: RDMX_E_BAD_STATE (IDLE or CLOSED), RDMX_E_TOO_BIG (above the max
 * message size), RDMX_E_AGAIN (send queue full), RDMX_E_NOMEM,
 * RDMX_E_PROVIDER (rendezvous registration failed). In STARTING the message
 * is queued (subject to the queue bound). */
int rdmx_chan_send(struct rdmx_chan *chan, const void *data, size_t len, rdmx_chan_sent_cb cb,
                   void *arg);
/* Same, the bytes produced by `fill` straight into the staging slot (or the
 * queue copy / rendezvous buffer): no intermediate copy. */
int rdmx_chan_send_fill(struct rdmx_chan *chan, size_t len, rdmx_chan_fill_fn fill, void *fill_arg,
                        rdmx_chan_sent_cb cb, void *arg);
/* Zero copy from registered memory: one buffer (buf->next must be NULL) of a
 * region of the worker's device. Eager: written straight from buf (the header
 * goes as the first scatter-gather entry); rendezvous: the peer reads it
 * (the range is registered again with REMOTE_READ only for the duration).
 * The memory must stay untouched until cb runs (cb required); the struct
 * itself may be reused on return. Errors as rdmx_chan_send. */
int rdmx_chan_send_buf(struct rdmx_chan *chan, const struct rdmx_buf *buf, rdmx_chan_sent_cb cb,
                       void *arg);

/* Stops / restarts delivery. While paused, arrived messages stay in their
 * slots and no credits go back: the peer's sender stalls. resume delivers
 * what is waiting before it returns (callbacks run from inside it). */
int rdmx_chan_pause(struct rdmx_chan *chan);
int rdmx_chan_resume(struct rdmx_chan *chan);

/* ---- getters ---- */
enum rdmx_chan_state rdmx_chan_get_state(const struct rdmx_chan *chan);
struct rdmx_conn *rdmx_chan_get_conn(const struct rdmx_chan *chan); /* NULL once gone */
struct rdmx_chan_worker *rdmx_chan_get_worker(const struct rdmx_chan *chan);
int rdmx_chan_get_slot_count(const struct rdmx_chan *chan, uint32_t *count);
int rdmx_chan_get_slot_size(const struct rdmx_chan *chan, uint32_t *size);
/* The local limit; once READY, the effective send limit
 * (min of both sides'). */
int rdmx_chan_get_max_msg_size(const struct rdmx_chan *chan, uint64_t *size);
int rdmx_chan_get_eager_threshold(const struct rdmx_chan *chan, uint32_t *bytes);
int rdmx_chan_get_send_queue_len(const struct rdmx_chan *chan, uint32_t *len);
/* Free peer slots now (0 before READY). */
uint32_t rdmx_chan_get_credits(const struct rdmx_chan *chan);
/* Messages waiting in the send queue. */
uint32_t rdmx_chan_get_queued(const struct rdmx_chan *chan);
void *rdmx_chan_get_arg(const struct rdmx_chan *chan);

struct rdmx_chan_stats {
	uint64_t msgs_sent, msgs_received;   /* delivered to the peer / to us */
	uint64_t bytes_sent, bytes_received; /* payload bytes */
	uint64_t credit_stalls;              /* sends that found no credit and queued */
	uint64_t again;                      /* sends refused with RDMX_E_AGAIN */
	uint64_t rendezvous_sent, rendezvous_received;
	uint64_t credit_updates_sent, credit_updates_received; /* explicit */
	uint32_t queued_max; /* high-water mark of the send queue */
};
int rdmx_chan_get_stats(const struct rdmx_chan *chan, struct rdmx_chan_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
