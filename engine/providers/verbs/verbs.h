/* verbs provider (rdma-core: libibverbs + librdmacm): structures shared by
 * its files. One file per object: device.c, mr.c, ctx.c, conn.c (QP and the
 * export/connect flow), cm.c (the rdma_cm flow), post.c, poll.c, ops.c.
 *
 * Resources:
 *   device   ibv_context + one PD (memory is registered on the device before
 *            any context exists, so the PD cannot be per context)
 *   context  one SRQ, a send CQ and a recv CQ on one completion channel, an
 *            rdma_cm event channel (created on first cm use), an eventfd for
 *            work the provider owes without a CQE, and an epoll fd holding
 *            all three: the fd the progress engine watches
 *   conn     one RC QP on the context's CQs and SRQ (created by hand, also in
 *            the cm flow, so that the QP attributes are ours: rnr_retry and
 *            the path MTU come from the context's properties) and a small
 *            registered scratch area (8 bytes per send queue slot) for
 *            emulated atomic writes and flushes
 *
 * Threading: a context and its connections are used by one thread (the one
 * that drives the progress engine); nothing here takes a lock. */
#ifndef RDMX_VERBS_H
#define RDMX_VERBS_H

#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "../../provider.h"

/* Scatter-gather entries per work request we ever build (caps are clamped). */
#define VERBS_MAX_SGE 32u
/* Inline data a context may ask for (rdmx_ctx_set_max_inline): what rxe and
 * mlx5 grant; a device that grants less per QP is clamped at QP creation. */
#define VERBS_MAX_INLINE 256u
/* Addresses one listen binds to (one rdma_cm id each). */
#define VERBS_MAX_LISTEN 8u
/* Completions polled per ibv_poll_cq call, and kept from ctx_arm's peek. */
#define VERBS_POLL_BATCH 16u
/* The rdma_cm event channel is read (a write(2) of a get-event command on
 * its fd, EAGAIN when empty) by the first ctx_poll after a wake-up
 * (ctx_disarm), by the next one after an event (they come in bursts), and
 * while busy polling by one ctx_poll in `cm_every`: VERBS_CM_POLL_EVERY
 * after an event or after this context asked rdma_cm for one (an address
 * resolve, an accept; the rest of the flow follows events), doubled by every read that finds
 * nothing, up to VERBS_CM_POLL_MAX. So an awaited event waits at most about as many polls as were
 * already spent waiting for it (and never more than the cap), and a busy data path pays one such
 * syscall per VERBS_CM_POLL_MAX polls, not one per VERBS_CM_POLL_EVERY (a ping-pong polls about 64
 * times per round trip on Soft-RoCE: that was one syscall per operation). */
#define VERBS_CM_POLL_EVERY 64u
#define VERBS_CM_POLL_MAX 4096u
/* A software device (Soft-RoCE, Soft-iWARP: the vendor ids their kernel
 * drivers report) does the NIC's work on the host's CPUs, mostly on the
 * sender's (the requester runs in its post system call, the veth pair's
 * receive path and the acknowledgements in softirq context there), and
 * the kernel hands long softirq work (checksums and copies of large
 * messages) to ksoftirqd: a busy poller on that CPU then shares it with
 * the device's work by the scheduler's fair share. Soft-RoCE send_bw 64 KiB
 * went at 0.53-0.63x perftest with a busy sender, and a sched_yield every
 * 16 empty polls did not change that (9-pass medians). So while the last
 * operation it posted was large (VERBS_SOFT_NAP_LEN or more) and some are
 * outstanding, a context of a software device that found nothing in
 * VERBS_SOFT_NAP_EVERY polls in a row naps: both CQs armed (what came
 * before the arm is stashed), it sleeps on its epoll fd until a completion
 * or another event comes, at most VERBS_SOFT_NAP_MS (0.96x perftest). Small
 * operations leave the kernel little to do and keep the spin (a nap
 * during a ping-pong delays the answer); a context of a hardware device
 * never naps. */
#define VERBS_SOFT_NAP_EVERY 16u
#define VERBS_SOFT_NAP_LEN 16384u
#define VERBS_SOFT_NAP_MS 1
#define VERBS_VENDOR_RXE 0xffffffu
#define VERBS_VENDOR_SIW 0x626d74u
/* Exported connection details (little-endian). */
#define VERBS_DETAILS_SIZE 32u
#define VERBS_DETAILS_MAGIC 0x5644u /* "VD" */
#define VERBS_DETAILS_VERSION 1u
/* Local ACK timeout 4.096 us * 2^18 = 1.07 s, 6 retries: a peer that stops
 * answering (or whose QP is not ready yet) fails work after about 7.5 s of
 * silence (rxe resets the count on any progress). Shorter timeouts lost
 * 8 MiB RDMA reads on a loaded Soft-RoCE guest (a 134 ms stall of the
 * emulated responder was enough to restart the read six times). Not 7
 * retries: rxe (drivers/infiniband/sw/rxe/rxe_comp.c) takes a retry count
 * of 7 as "retry forever", like the rnr retry count, and a dead peer would
 * then never be noticed. */
#define VERBS_QP_TIMEOUT 18u
#define VERBS_QP_RETRY_CNT 6u
/* RNR NAK timer the responder asks for: 12 = 0.64 ms. */
#define VERBS_MIN_RNR_TIMER 12u
/* Outstanding RDMA reads / atomics per QP, each direction. */
#define VERBS_MAX_RD_ATOMIC 16u
/* Liveness probe of idle export/connect connections (conn.c). */
#define VERBS_PROBE_MS 500u
/* ctx_stop waits at most this long for flushed work requests. */
#define VERBS_STOP_DRAIN_MS 5000u

struct verbs_dev {
	struct ibv_context *ibv;
	struct ibv_pd *pd;
	struct ibv_device_attr_ex attr;
	struct ibv_port_attr port_attr;
	uint8_t port;
	char name[RDMX_DEV_NAME_MAX];
	bool has_ip;                /* opened by address: bind cm ids there */
	struct sockaddr_storage ip; /* port 0 */
};

struct verbs_conn;
struct verbs_ctx;

/* An rdma_cm event as cm.c keeps it: copied, and acked at once. */
struct verbs_cm_ev {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id;
	uint8_t pd[256];
	size_t pd_len;
	uint8_t resp_res, init_depth;
};

/* A shared cm listener (rdmx_ctx_listen_join, lgroup.c): the contexts its
 * connection requests are dealt to, in turn (the listener's own first). */
struct verbs_lgroup {
	struct verbs_ctx *m[RDMX_CTX_MAX_LISTEN_GROUP];
	unsigned n, next;
};

/* A connection request dealt to another member of a listen group: its id
 * already on that member's cm channel, waiting for the member's ctx_poll. */
struct verbs_dealt {
	struct verbs_cm_ev e;
	struct verbs_dealt *next;
};

/* A peer's exported details (conn.c), kept for a QP restart. */
struct verbs_peer {
	uint32_t qpn, psn;
	uint16_t lid;
	enum ibv_mtu mtu;
	bool grh, writable, readable;
	uint8_t gid[16];
};

struct verbs_ctx {
	struct rdmx_ctx *ctx;
	struct verbs_dev *vdev;
	struct ibv_comp_channel *chan;
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	struct rdma_event_channel *cm; /* NULL until the first cm call */
	int epfd, evfd, tfd;           /* tfd: probe timer (notification mode) */
	uint32_t scq_cap, scq_used;    /* send CQEs: reserved per accepted send task */
	uint32_t probe_cap, nprobing;  /* send CQEs kept for liveness probes */
	uint32_t srq_cap, srq_used;
	unsigned scq_events, rcq_events; /* CQ events got, not yet acked */
	enum ibv_mtu mtu;                /* min(ctx mtu property, port active mtu) */
	int qp_access;                   /* IBV_ACCESS_REMOTE_* from ctx permissions */
	uint8_t rd_atomic;               /* our max reads/atomics in flight, each way */
	uint32_t gid_index;              /* rdmx__verbs_dev_gid_index(props.gid_index) */
	/* posted receives: doubly linked through task->next / task->prov_ptr */
	struct rdmx_task *recv_head;
	struct verbs_conn *conns;    /* every connection with provider state */
	struct verbs_conn **qpn_tab; /* qp number -> connection (receives) */
	uint32_t qpn_mask;
	struct rdma_cm_id *listen[VERBS_MAX_LISTEN];
	unsigned nlisten;
	/* completions ctx_arm polled while checking for a race: delivered first */
	struct ibv_wc sstash[VERBS_POLL_BATCH], rstash[VERBS_POLL_BATCH];
	unsigned nsstash, nrstash;
	uint32_t nprobed; /* connected export/connect connections */
	uint64_t next_probe_ms;
	unsigned cm_skip;  /* ctx_polls since the cm channel was last read */
	unsigned cm_every; /* busy polls per cm read (VERBS_CM_POLL_EVERY..MAX) */
	bool cm_due;       /* read the cm channel at the next ctx_poll */
	bool soft;         /* a software device (VERBS_SOFT_NAP_EVERY) */
	bool soft_big;     /* and the last operation posted was large */
	unsigned idle;     /* ctx_polls in a row that found nothing */
	bool pending;      /* a connection waits for the connection phase of ctx_poll */
	bool stopping;     /* ctx_stop runs: flushes become RDMX_E_CANCELED */
	/* listen group (lgroup.c): these three under its lock */
	struct verbs_lgroup *lgroup; /* joined or led, NULL when none */
	struct verbs_dealt *dealt;   /* requests dealt to us, oldest first */
	struct verbs_dealt **dealt_tail;
	atomic_bool dealt_due; /* dealt is not empty: ctx_poll takes it */
};

/* A grant's type-2 memory window (post.c). wr_id of its bind = address | 2.
 * It outlives neither its grant nor, while its bind is in flight, its
 * connection: a window revoked with the bind in flight is an orphan that
 * the bind's completion (or the connection's destruction) deallocates. */
struct verbs_mw {
	struct ibv_mw *mw;
	struct ibv_mr *sub;    /* a partial grant's own MR over exactly its range */
	struct verbs_conn *vc; /* NULL once the connection is destroyed */
	bool bind_inflight;    /* counted in vc->posted and vctx->scq_used */
	bool orphan;           /* the grant is gone */
	struct verbs_mw *next; /* vc->mws */
};

#define VERBS_WRID_BIND 2u

struct verbs_conn {
	struct rdmx_conn *conn;
	struct verbs_ctx *vctx;
	struct rdma_cm_id *id; /* cm flow only */
	struct ibv_qp *qp;
	uint32_t qpn, psn;
	uint32_t sq_size;    /* power of two: scratch slots */
	uint32_t max_inline; /* inline bytes the QP was granted (0: none) */
	uint64_t *scratch;
	struct ibv_mr *scratch_mr;
	uint64_t seq;    /* work requests posted: scratch slot = seq % sq_size */
	uint32_t posted; /* work requests in the send queue */
	/* posted send tasks, in order (completions come in this order) */
	struct rdmx_task *infl_head, *infl_tail;
	/* accepted send tasks waiting behind an emulated atomic write */
	struct rdmx_task *stall_head, *stall_tail;
	uint32_t nstall;
	bool stalled; /* an emulated atomic write is in flight */
	/* liveness probe: a zero-length op the peer's QP permits */
	enum ibv_wr_opcode probe_op;
	bool can_probe, probing;
	uint64_t probe_at_ms;
	/* export/connect handshake: ESTABLISHED once the peer's QP answered */
	bool handshake;
	uint64_t hs_deadline_ms;
	struct verbs_peer peer;
	/* cm negotiation (passive side: from the request) */
	uint8_t resp_res, init_depth;
	uint8_t cm_pd[RDMX_PRIVATE_DATA_MAX + 1]; /* encoded private data to send */
	uint8_t cm_pd_len;
	/* life cycle */
	bool exported;            /* export/connect flow */
	bool connected;           /* export flow: conn_connect succeeded */
	bool accepted;            /* cm passive: rdma_accept done */
	bool established;         /* ESTABLISHED reported */
	bool est_pending;         /* ESTABLISHED to report at the next ctx_poll */
	bool fail_pending;        /* FAILURE to report once drained */
	bool closing;             /* QP moved to error: DISCONNECTED once drained */
	bool in_error;            /* rdmx__conn_set_error done */
	bool final;               /* FAILURE or DISCONNECTED reported */
	struct verbs_mw *mws;     /* windows bound (or being bound) to the QP (post.c) */
	struct verbs_conn *next;  /* vctx->conns */
	struct verbs_conn *hnext; /* qpn_tab bucket */
};

static inline uint64_t rdmx__verbs_now_ms(void)
{
	return rdmx__now_ms();
}

/* The same clock as of its last tick (common/clock.h: never ahead, a tick
 * behind at most), with no clock-source read: for checks made on every
 * poll whose due times need no better than a tick (liveness probes). */
static inline uint64_t rdmx__verbs_now_coarse_ms(void)
{
	return rdmx__now_coarse_ns() / 1000000u;
}

/* This context asked rdma_cm for an event (verbs.h, VERBS_CM_POLL_EVERY):
 * read the channel soon again. */
static inline void rdmx__verbs_cm_expect(struct verbs_ctx *vctx)
{
	vctx->cm_every = VERBS_CM_POLL_EVERY;
}

static inline struct verbs_ctx *verbs_ctx_of(const struct rdmx_ctx *ctx)
{
	return ctx->prov;
}

/* device.c */
int rdmx__verbs_dev_list(struct rdmx_dev_info *infos, size_t max, size_t *count);
int rdmx__verbs_dev_open(struct rdmx_dev *dev, const char *ip);
void rdmx__verbs_dev_close(struct rdmx_dev *dev);
int rdmx__verbs_dev_query_caps(const struct rdmx_dev *dev, struct rdmx_dev_caps *caps);
int rdmx__verbs_dev_get_gid(const struct rdmx_dev *dev, uint32_t index, uint8_t gid[16]);
int rdmx__verbs_dev_find_by_addr(const char *ip, char name[RDMX_DEV_NAME_MAX]);
/* The GID index a context uses for property value `want`. Index 0, the
 * engine's default, is on RoCE the link-local default GID (fe80::, derived
 * from the MAC): RoCEv2 packets to it are routed by the host's IPv6 stack
 * and, between two devices of one host, never leave it. So on RoCE index 0
 * means "this device's routable address": the entry of the address the
 * device was opened by, else the first IPv4-mapped RoCEv2 entry (the one
 * rdma_cm and perftest -x pick). Any other index is used as given. */
uint32_t rdmx__verbs_dev_gid_index(const struct verbs_dev *vdev, uint32_t want);
/* A local IP address of the device for cm ids (family AF_INET or AF_INET6,
 * or AF_UNSPEC for either), preferring the GID at gid_index. Port 0.
 * RDMX_E_NOT_FOUND when the GID table holds no usable address. */
int rdmx__verbs_dev_local_addr(const struct verbs_dev *vdev, uint32_t gid_index, int family,
                               struct sockaddr_storage *ss);
/* Every usable local address (at most max); returns how many. */
unsigned rdmx__verbs_dev_local_addrs(const struct verbs_dev *vdev, struct sockaddr_storage *ss,
                                     unsigned max);

/* mr.c */
int rdmx__verbs_mr_reg(struct rdmx_mr *mr);
void rdmx__verbs_mr_dereg(struct rdmx_mr *mr);
/* Memory windows (post.c): true when the device binds type-2 windows. */
bool rdmx__verbs_dev_has_mw(const struct verbs_dev *vdev);
int rdmx__verbs_mr_grant(struct rdmx_mr_grant *grant);
void rdmx__verbs_mr_revoke(struct rdmx_mr_grant *grant);
/* A bind's completion (poll.c; wr_id & 3 == VERBS_WRID_BIND). */
void rdmx__verbs_bind_wc(struct verbs_ctx *vctx, const struct ibv_wc *wc);
/* The connection is destroyed (conn.c): its windows forget it; orphans go. */
void rdmx__verbs_conn_drop_windows(struct verbs_conn *vc);

/* ctx.c */
int rdmx__verbs_ctx_start(struct rdmx_ctx *ctx);
void rdmx__verbs_ctx_stop(struct rdmx_ctx *ctx);
int rdmx__verbs_ctx_get_fd(struct rdmx_ctx *ctx);
int rdmx__verbs_ctx_arm(struct rdmx_ctx *ctx);
int rdmx__verbs_ctx_disarm(struct rdmx_ctx *ctx);
/* A software device's nap (VERBS_SOFT_NAP_EVERY): arms, sleeps on the
 * epoll fd until an event or `ms`, disarms; what the arm found is stashed. */
void rdmx__verbs_ctx_nap(struct verbs_ctx *vctx, int ms);
/* Starts / stops the probe timer (when the first export/connect connection
 * is connected / the last one is gone). */
void rdmx__verbs_ctx_probe_timer(struct verbs_ctx *vctx, bool on);
/* Wakes the progress engine (eventfd) for work without a CQE. */
void rdmx__verbs_ctx_kick(struct verbs_ctx *vctx);
/* Creates the rdma_cm event channel on first use (non-blocking, in epoll). */
int rdmx__verbs_ctx_cm_channel(struct verbs_ctx *vctx);

/* conn.c */
struct verbs_conn *rdmx__verbs_conn_new(struct verbs_ctx *vctx, struct rdmx_conn *conn);
/* Creates the QP (RESET) and the scratch area; maps the qp number. */
int rdmx__verbs_conn_create_qp(struct verbs_conn *vc);
int rdmx__verbs_qp_to_init(struct verbs_conn *vc, uint8_t port);
/* Moves the QP to ERR (flushes its send queue); logs a failure once. */
void rdmx__verbs_qp_to_err(struct verbs_conn *vc);
/* Frees everything the connection holds (QP, scratch, cm id). */
void rdmx__verbs_conn_destroy(struct verbs_conn *vc);
struct verbs_conn *rdmx__verbs_conn_by_qpn(const struct verbs_ctx *vctx, uint32_t qpn);
/* Starts the close of a connection: QP to ERR, DISCONNECTED once drained. */
void rdmx__verbs_conn_close(struct verbs_conn *vc);
int rdmx__verbs_conn_export(struct rdmx_conn *conn, void *details, size_t *len);
int rdmx__verbs_conn_connect(struct rdmx_conn *conn, const void *details, size_t len);
int rdmx__verbs_conn_disconnect(struct rdmx_conn *conn);
void rdmx__verbs_conn_release(struct rdmx_conn *conn);
/* A handshake probe came back (ok: acknowledged by the peer's QP). */
void rdmx__verbs_conn_hello_done(struct verbs_conn *vc, bool ok);
/* Posts a liveness probe on every idle export/connect connection when due
 * (ctx_poll). wr_id of a probe: the connection's address | 1. */
void rdmx__verbs_conn_probe(struct verbs_ctx *vctx);
/* Shared by conn.c (export flow) and cm.c. */
enum ibv_mtu rdmx__verbs_mtu_enum(uint32_t bytes);
int rdmx__verbs_random_psn(uint32_t *psn);

/* cm.c */
int rdmx__verbs_listen(struct rdmx_ctx *ctx, uint16_t port);
void rdmx__verbs_stop_listen(struct rdmx_ctx *ctx);
int rdmx__verbs_connect_to_addr(struct rdmx_conn *conn, const struct rdmx_addr *addr,
                                const void *pd, size_t pd_len);
int rdmx__verbs_conn_accept(struct rdmx_conn *conn, const void *pd, size_t pd_len);
int rdmx__verbs_conn_reject(struct rdmx_conn *conn);
/* Handles pending rdma_cm events (at most budget callbacks); returns the
 * number of callbacks run. */
int rdmx__verbs_cm_poll(struct verbs_ctx *vctx, unsigned budget);
/* A connection request for this context (from its own channel or dealt to
 * it): 1 when the engine was told, 0 when it was refused here. */
int rdmx__verbs_cm_request(struct verbs_ctx *vctx, const struct verbs_cm_ev *e);
/* Rejects a connection request's id and destroys it. */
void rdmx__verbs_cm_refuse(struct rdma_cm_id *id);

/* lgroup.c */
int rdmx__verbs_listen_join(struct rdmx_ctx *ctx, struct rdmx_ctx *listener);
/* Deals a connection request that came to the listener lc: true when it
 * went to another member, false when lc serves it itself. */
bool rdmx__verbs_lgroup_deal(struct verbs_ctx *lc, const struct verbs_cm_ev *e);
/* The requests dealt to vc (ctx_poll, when dealt_due): callbacks run. */
int rdmx__verbs_lgroup_take(struct verbs_ctx *vc);
/* vc leaves its group (ctx_stop); requests dealt to it and not taken are
 * rejected. */
void rdmx__verbs_lgroup_leave(struct verbs_ctx *vc);
/* Private data framing (exposed for unit tests). */
size_t rdmx__verbs_pd_encode(const void *pd, size_t len, size_t room, uint8_t *out);
size_t rdmx__verbs_pd_decode(const uint8_t *in, size_t len, uint8_t *out);

/* post.c */
int rdmx__verbs_post_recv(struct rdmx_ctx *ctx, struct rdmx_task *task);
int rdmx__verbs_post_send(struct rdmx_conn *conn, struct rdmx_task *task);
/* Posts one task's work request now (not the stall check). */
int rdmx__verbs_post_now(struct verbs_conn *vc, struct rdmx_task *task);
/* Re-posts an emulated atomic write's compare-and-swap with a new guess. */
int rdmx__verbs_post_cas_retry(struct verbs_conn *vc, struct rdmx_task *task, uint64_t guess);
/* Posts the tasks that waited behind an emulated atomic write. */
void rdmx__verbs_unstall(struct verbs_conn *vc);
/* Re-posts a receive's work request (a message of a dead connection). */
int rdmx__verbs_repost_recv(struct verbs_ctx *vctx, struct rdmx_task *task);
void rdmx__verbs_recv_unlink(struct verbs_ctx *vctx, struct rdmx_task *task);

/* poll.c */
int rdmx__verbs_ctx_poll(struct rdmx_ctx *ctx, unsigned budget);
/* Polls both CQs until no connection holds a posted work request or the
 * deadline passes, then completes whatever is left (ctx_stop). */
void rdmx__verbs_drain(struct verbs_ctx *vctx, unsigned timeout_ms);
int rdmx__verbs_wc_status(enum ibv_wc_status st, bool stopping);

#endif
