/* Private header of the channel layer (chan/): its structures, shared by
 * worker.c (the context's receive pool, connection map, callbacks and
 * timers), channel.c (life cycle), chan_tx.c (send path, credits, hello,
 * keep-alive), chan_rx.c (receive path) and bulk.c (rendezvous). STYLE.md
 * keeps a struct inside its own .c; the channel spans these files, as
 * engine/internal.h spans the engine. Only chan/ (and its tests) include
 * it: the layers above use chan/chan_rpc.h. */
#ifndef RDMX_CHAN_CHAN_INTERNAL_H
#define RDMX_CHAN_CHAN_INTERNAL_H

#include <rdmx/channel.h>
#include <rdmx/ctx.h>
#include <rdmx/dev.h>
#include <rdmx/mr.h>
#include <rdmx/pe.h>
#include <rdmx/task.h>

#include "chan/chan_rpc.h"
#include "common/byteorder.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/map.h"
#include "engine/msg.h"
#include "ring.h"

#define CHAN_CTL_ENTRIES 8u     /* control send buffers per channel */
#define CHAN_RDV_MAX_READS 4u   /* rendezvous messages being read per channel */
#define CHAN_RDV_CHUNK_READS 4u /* chunk reads in flight per message */
#define CHAN_RDV_MAX_TX 64u     /* rendezvous sources awaiting ack per channel */
#define CHAN_DEFAULT_QUEUE_BYTES (128ull << 20)

struct rdmx_chan;

/* ---- regcache.c: the worker's registration cache (rendezvous buffers) ---- */
#define CHAN_DEFAULT_REG_CACHE_BYTES (64ull << 20)
enum regc_kind {
	REGC_RX = 0, /* a read destination: LOCAL_WRITE */
	REGC_TX = 1, /* a sender's copy: REMOTE_READ, grant-only where the device can */
};
struct regc_ent {
	struct regc_ent *prev, *next; /* the idle list (least recently used first) */
	void *buf;
	size_t size;
	struct rdmx_mr *mr;
	enum regc_kind kind;
	uint32_t refs; /* 0: idle (on the list) */
	bool no_reuse; /* a device-wide remote descriptor: freed once released */
};
struct rdmx__regcache {
	struct rdmx_dev *dev;
	uint64_t limit; /* total size of the entries kept (idle ones are evicted above it) */
	uint64_t bytes; /* total size of the entries, busy and idle */
	uint64_t busy;  /* entries referenced */
	struct regc_ent *idle_head, *idle_tail;
	struct rdmx_chan_reg_cache_stats st;
};
void rdmx__regcache_init(struct rdmx__regcache *c, struct rdmx_dev *dev, uint64_t limit);
/* Frees the idle entries (every entry must be back: logs the rest). */
void rdmx__regcache_fini(struct rdmx__regcache *c);
/* A registered buffer of at least len bytes, referenced once (chan: whose
 * connection a REGC_TX registration is for). RDMX_E_INVAL, RDMX_E_NOMEM,
 * a registration error. */
int rdmx__regcache_get(struct rdmx__regcache *c, struct rdmx_chan *chan, enum regc_kind kind,
                       size_t len, struct regc_ent **out);
void rdmx__regcache_ref(struct regc_ent *e);
/* Takes a REGC_RX entry referenced once out of the cache for good: its
 * registration goes, the entry is freed and its buffer (aligned_alloc'd,
 * released with free()) is returned; counted in handovers. An entry held
 * more than once (or a sender's, or NULL) is refused: NULL, an error
 * logged, the entry untouched. */
void *rdmx__regcache_detach(struct rdmx__regcache *c, struct regc_ent *e);
/* Drops a reference (NULL: no-op); the last one makes the entry idle. */
void rdmx__regcache_put(struct rdmx__regcache *c, struct regc_ent *e);
/* Evicts idle entries down to the new limit. */
void rdmx__regcache_set_limit(struct rdmx__regcache *c, uint64_t limit);
void rdmx__regcache_stats(const struct rdmx__regcache *c, struct rdmx_chan_reg_cache_stats *st);

/* One posted receive of the worker's pool. */
struct worker_recv {
	struct rdmx_chan_worker *worker;
	struct rdmx_task *task;
	struct rdmx_buf buf;
	struct worker_recv *next_retry; /* resubmit failed: retried later */
};

struct rdmx_chan_worker {
	struct rdmx_ctx *ctx;
	struct rdmx_pe *pe;
	struct rdmx_dev *dev;
	struct rdmx_chan_worker_attr attr;
	uint32_t max_sge;     /* context's max send buf list len */
	uint64_t dev_max_msg; /* largest single read (device caps, attr.rdv_read_max) */

	/* receive pool: attr.recv_tasks entries of RDMX__CTL_MAX_LEN bytes */
	struct worker_recv *recvs;
	uint8_t *recv_mem;
	struct rdmx_mr *recv_mr;
	bool recvs_posted;
	uint32_t recvs_outstanding; /* submitted, not yet completed */
	struct worker_recv *retry_head;

	struct rdmx__map chans;         /* conn pointer -> channel */
	struct rdmx__map early;         /* conn pointer -> 64-byte hello copy */
	struct rdmx_chan *all;          /* every channel not yet freed (user's and zombies) */
	struct rdmx_chan *starved_head; /* channels waiting for a task of the pool */
	struct rdmx_chan *feeding;      /* the rest of the list worker_feed_starved runs */
	uint32_t num_chans;

	struct rdmx__regcache regc; /* rendezvous buffers, both directions */

	bool light;   /* the context takes light messages (engine/msg.h) */
	int depth;    /* callbacks of this worker on the stack */
	bool stopped; /* the context stopped under us */
};

/* An outgoing message that could not be written at once, or a rendezvous
 * source waiting for its ack. */
enum chan_msg_kind {
	MSG_COPY = 0, /* `data` is our heap copy */
	MSG_ZC = 1,   /* `ubuf` is the caller's registered memory */
};

struct chan_msg {
	struct chan_msg *next;
	enum chan_msg_kind kind;
	uint64_t len;
	void *data;             /* MSG_COPY: heap copy; MSG_ZC: ubuf.addr */
	struct rdmx_buf ubuf;   /* MSG_ZC */
	struct rdmx_mr *rdv_mr; /* rendezvous source registration (REMOTE_READ) */
	uint32_t seq;           /* rendezvous: sequence of its descriptor message */
	uint64_t held;          /* bytes charged to the queue budget */
	rdmx_chan_sent_cb cb;
	void *arg;
	/* rdv_mr granted to the channel's connection (its descriptor's key) */
	struct rdmx_mr_grant *rdv_grant;
	/* a large MSG_COPY: `data` is this cached registered buffer (its mr
	 * becomes rdv_mr, borrowed) instead of a heap copy */
	struct regc_ent *ent;
};

/* One peer slot as seen by the sender (staging copy + in-flight write). */
struct tx_slot {
	struct rdmx_chan *chan;
	struct rdmx_buf hdr;  /* staging slot: header (+ payload when copied) */
	struct rdmx_buf user; /* zero-copy payload, chained after hdr */
	struct rdmx_rbuf dst; /* the peer's slot */
	bool busy;            /* write in flight */
	rdmx_chan_sent_cb cb; /* eager: runs at write completion */
	void *arg;
	uint32_t len;
};

/* Receiver's state of a rendezvous message: one RDMA read, or — when the
 * message is larger than the device's max message size (Soft-RoCE: 8 MiB)
 * — one read per chunk of that size, a few in flight. */
enum rdv_state { RDV_NEW = 0, RDV_READING, RDV_DONE };
struct rdv_rx {
	struct rdmx_chan *chan;
	struct rdmx_mr_remote *remote;
	struct rdmx__regcache *regc; /* the worker's (an orphan outlives its channel) */
	struct regc_ent *ent;        /* the destination: buf and mr are its */
	void *buf;
	struct rdmx_mr *mr;
	struct rdmx_buf *lbs; /* one local buffer per chunk (tasks reference them) */
	uint32_t nchunks, next_chunk;
	uint32_t reads; /* chunk reads in flight */
	uint64_t chunk; /* chunk size */
	uint64_t done;  /* bytes read */
	uint64_t len;
	int err;     /* first failed chunk */
	bool orphan; /* its channel let go while reads ran */
	enum rdv_state state;
};

struct rx_slot {
	uint32_t len;
	struct rdv_rx *rdv; /* NULL: eager message in the ring slot */
};

struct ctl_entry {
	struct rdmx_chan *chan;
	struct rdmx_buf buf;
	bool busy;
};

struct rdmx_chan {
	struct rdmx_chan_worker *worker;
	struct rdmx_conn *conn; /* NULL once the engine freed it */
	enum rdmx_chan_state state;
	int close_status;
	bool user_ref;      /* the user still holds it (not destroyed) */
	bool disconnecting; /* rdmx_conn_disconnect called */
	bool paused;
	bool delivering;
	struct rdv_rx *rx_cur; /* the rendezvous message in recv_cb now, or NULL */
	bool starved;          /* on worker->starved list */
	bool eager_credit;     /* return credits after every delivery batch */
	uint32_t inflight;     /* tasks submitted, not completed */
	uint32_t cb_depth;     /* user callbacks of this channel on the stack */
	struct rdmx_chan *next_all, *prev_all;
	struct rdmx_chan *next_starved;

	/* callbacks */
	rdmx_chan_recv_cb recv_cb;
	rdmx_chan_event_cb event_cb;
	void *arg;
	void *owner; /* the RPC endpoint built on it (rdmx_chan_destroy refuses) */
	void (*idle_cb)(struct rdmx_chan *chan, void *arg); /* all sent and acked */
	void *idle_arg;

	/* settings */
	uint32_t slot_count, slot_size; /* local ring */
	uint64_t max_msg;               /* local limit */
	uint32_t eager;                 /* local eager threshold setting */
	uint32_t queue_len;
	uint64_t queue_bytes;

	/* local receive ring */
	uint8_t *ring;
	struct rdmx_mr *ring_mr;
	struct rdmx_mr_grant *ring_grant; /* the ring, granted to the connection */
	struct rx_slot *rx;
	uint32_t rx_seq;        /* next expected sequence number */
	uint32_t rx_consumed;   /* slots freed (== messages delivered) */
	uint32_t rx_slot;       /* rx_seq's slot in the ring (ring.h) */
	uint32_t consumed_slot; /* rx_consumed's slot */
	uint32_t rx_reported;   /* rx_consumed last told to the peer */
	bool rx_need_ack;       /* a rendezvous was delivered: ack now */
	uint32_t rdv_reads;     /* rendezvous reads in flight */
	uint64_t rdv_read_bytes;

	/* peer ring, as the sender sees it */
	uint32_t peer_count, peer_size;
	uint64_t peer_max_msg;
	struct rdmx_mr_remote *peer_ring;
	uint8_t *stage;
	struct rdmx_mr *stage_mr;
	struct tx_slot *tx;
	uint32_t tx_window; /* staging slots: min(peer slots, staging budget) */
	uint32_t tx_seq;    /* messages written */
	uint32_t tx_slot;   /* tx_seq's staging slot (ring.h) */
	uint32_t peer_slot; /* tx_seq's slot in the peer's ring */
	uint32_t tx_acked;  /* peer's credit count */
	bool peer_light;    /* small writes go as light messages (both sides take them) */

	/* control sends */
	uint8_t *ctl_mem;
	struct rdmx_mr *ctl_mr;
	struct ctl_entry ctl[CHAN_CTL_ENTRIES];
	bool hello_pending;  /* hello not yet handed to the engine */
	bool credit_pending; /* an explicit credit update is owed */
	bool has_early_hello;
	uint8_t early_hello[RDMX__CTL_HELLO_LEN];

	/* send queue and rendezvous sources awaiting ack */
	struct chan_msg *q_head, *q_tail;
	uint32_t q_len;
	uint64_t held_bytes;
	struct chan_msg *rdv_head, *rdv_tail;
	uint32_t rdv_tx;

	/* liveness probe */
	struct rdmx__timer ka_timer;
	uint32_t rx_events, ka_seen; /* arrivals, and their count at the last tick */

	struct rdmx_chan_stats stats;
};

/* ---- worker.c ---- */
/* Posts the receive pool (first channel start). */
int rdmx__worker_post_recvs(struct rdmx_chan_worker *worker);
void rdmx__worker_add_starved(struct rdmx_chan_worker *worker, struct rdmx_chan *chan);
/* Submits a task just allocated with status alloc_rc: a dry task pool
 * (RDMX_E_FULL) parks the channel on the worker's starved list; a failed
 * submit frees the task. Returns the first error, 0 once submitted. */
int rdmx__chan_submit(struct rdmx_chan *chan, int alloc_rc, struct rdmx_task *task);
/* Every worker callback (and every timer of the worker) brackets itself with
 * enter/leave: rdmx__worker_depth tells code that may not nest (a blocking
 * call, a close) that a callback is on the stack. */
void rdmx__worker_enter(struct rdmx_chan_worker *worker);
void rdmx__worker_leave(struct rdmx_chan_worker *worker);
/* Disconnects a connection that has no channel (hostile or stale peer). */
void rdmx__worker_reject_conn(struct rdmx_chan_worker *worker, struct rdmx_conn *conn,
                              const char *why);
/* Maps the channel's connection and lists it (rdmx_chan_create). */
int rdmx__worker_chan_add(struct rdmx_chan_worker *worker, struct rdmx_chan *chan);
/* Unmaps the channel's connection (it stays listed until freed). */
void rdmx__worker_chan_remove(struct rdmx_chan_worker *worker, struct rdmx_chan *chan);
/* Unmaps and unlists (the channel is being freed). */
void rdmx__worker_chan_unlink(struct rdmx_chan_worker *worker, struct rdmx_chan *chan);
/* The hello kept for conn (malloc'd, RDMX__CTL_HELLO_LEN bytes) or NULL. */
void *rdmx__worker_take_early(struct rdmx_chan_worker *worker, struct rdmx_conn *conn);

/* ---- channel.c ---- */
void rdmx__chan_on_write(struct rdmx_chan *chan, uint32_t imm, uint32_t len);
void rdmx__chan_on_ctl(struct rdmx_chan *chan, const void *buf, uint32_t len);
/* The engine freed (or will free) the connection: closes, maybe frees. */
void rdmx__chan_conn_gone(struct rdmx_chan *chan, int status);
void rdmx__chan_pump(struct rdmx_chan *chan);
void rdmx__chan_deliver(struct rdmx_chan *chan);
void rdmx__chan_maybe_free(struct rdmx_chan *chan);
uint32_t rdmx__chan_conn_id(const struct rdmx_chan *chan);
void rdmx__chan_task_done(struct rdmx_chan *chan);
/* Sends the hello if it is still owed. */
void rdmx__chan_try_hello(struct rdmx_chan *chan);
/* Whether the channel's rings and rendezvous sources are granted to its
 * connection (false on Soft-RoCE: channel.c says why). */
bool rdmx__chan_uses_grants(const struct rdmx_chan *chan);
/* Memory the peer reaches (ring, rendezvous sources): registered grant-only
 * where the device has grants, device-wide otherwise (channel.c). */
int rdmx__chan_reg_remote(struct rdmx_chan *chan, void *addr, size_t len, unsigned access,
                          struct rdmx_mr **mr);
/* The descriptor the peer gets for mr: a grant of its first len bytes (0:
 * all of it) bound to the channel's connection (made once into *grant), or
 * the device-wide one (all of mr) when
 * the device has no grants. RDMX_E_BAD_STATE / RDMX_E_FULL: not yet (the
 * connection is not up, the send queue is full): retry. */
int rdmx__chan_grant_desc(struct rdmx_chan *chan, struct rdmx_mr *mr, size_t len, unsigned access,
                          struct rdmx_mr_grant **grant, void *desc);
/* The peer's hello: maps its ring, allocates staging, goes READY. */
void rdmx__chan_apply_hello(struct rdmx_chan *chan, const struct rdmx__hello *h);
/* Arms the liveness timer (READY). */
void rdmx__chan_keepalive_start(struct rdmx_chan *chan);
/* A credit count from the peer (validated by the caller). */
void rdmx__chan_on_credit(struct rdmx_chan *chan, uint32_t credit);
/* The same without the pump that sends what the credits let go (the
 * caller pumps next): true when it is due. */
bool rdmx__chan_take_credit(struct rdmx_chan *chan, uint32_t credit);
/* Frees a channel whatever its state (worker destroy after a context stop). */
void rdmx__chan_free(struct rdmx_chan *chan);

/* Task callbacks (worker.c registers them with the context). */
void rdmx__chan_write_ok(struct rdmx_task *task, void *ud, void *cud);
void rdmx__chan_write_err(struct rdmx_task *task, void *ud, void *cud);
void rdmx__chan_send_ok(struct rdmx_task *task, void *ud, void *cud);
void rdmx__chan_send_err(struct rdmx_task *task, void *ud, void *cud);

/* ---- bulk.c: rendezvous ---- */
/* Sender: registers the message's source with REMOTE_READ only. */
int rdmx__rdv_tx_prepare(struct rdmx_chan *chan, struct chan_msg *m);
/* Sender: releases the source (dereg, free copy) and completes the send. */
void rdmx__rdv_tx_finish(struct rdmx_chan *chan, struct chan_msg *m, int status);
/* Releases what a message holds of its source: its grant, its cached
 * buffer or else its registration and heap copy (not m itself). */
void rdmx__chan_msg_release(struct rdmx_chan *chan, struct chan_msg *m);
/* Receiver: checks the descriptor, builds the rx state. */
int rdmx__rdv_rx_new(struct rdmx_chan *chan, const void *desc, uint64_t len, struct rdv_rx **out,
                     const char **why);
/* Receiver: starts reads for pending rendezvous messages, in order. */
void rdmx__rdv_rx_start(struct rdmx_chan *chan);
void rdmx__rdv_rx_free(struct rdv_rx *r);
void rdmx__chan_read_ok(struct rdmx_task *task, void *ud, void *cud);
void rdmx__chan_read_err(struct rdmx_task *task, void *ud, void *cud);

#endif
