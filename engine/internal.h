/* Private engine structures shared by the engine core and its providers.
 *
 * STYLE.md keeps a struct inside its own .c; these are the exception because
 * providers (engine/providers/<name>/) read and fill them through the ops
 * table of provider.h, as rdma-core's providers embed verbs' objects. Nothing
 * outside engine/ includes this file. */
#ifndef RDMX_ENGINE_INTERNAL_H
#define RDMX_ENGINE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rdmx/ctx.h>
#include <rdmx/dev.h>
#include <rdmx/log.h>
#include <rdmx/mr.h>
#include <rdmx/pe.h>
#include <rdmx/status.h>
#include <rdmx/task.h>

#include "common/clock.h"
#include "common/log.h"

/* At most one line a window per kind of event, whatever the flood, and no
 * count lost: the next line logged after a quiet window carries the number
 * of lines suppressed before it, and rdmx__log_rate_flush hands out that
 * number once the window is over even when no further event comes (call it
 * from a timer at rdmx__log_rate_deadline). Zero-initialised; not locked
 * (one thread per limiter). */
#define RDMX__LOG_RATE_WINDOW_NS 1000000000ull
struct rdmx__log_rate {
	uint64_t window_ns;  /* start of the current window */
	uint64_t suppressed; /* lines not logged in it */
	bool logged;         /* a window was opened */
};
/* True when the line may be logged now; *skipped: lines not logged since
 * the previous one (to append as "; N more not logged"). */
bool rdmx__log_rate_ok(struct rdmx__log_rate *r, uint64_t now_ns, uint64_t *skipped);
/* True when a window with suppressed lines has ended: log *skipped. */
bool rdmx__log_rate_flush(struct rdmx__log_rate *r, uint64_t now_ns, uint64_t *skipped);
/* When rdmx__log_rate_flush will have something (UINT64_MAX: nothing). */
uint64_t rdmx__log_rate_deadline(const struct rdmx__log_rate *r);

/* A spin-wait's pause hint to the CPU (engine/pe.c, engine/sync_event.c). */
static inline void rdmx__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* ---- timers of a progress engine (engine/timer.c) ---- */
struct rdmx__timers {
	struct rdmx_pe_timer **heap;
	uint32_t len, cap;
};
void rdmx__timers_init(struct rdmx__timers *ts);
/* Stops every timer (their callbacks do not run) and frees the heap. */
void rdmx__timers_fini(struct rdmx__timers *ts);
/* Earliest due time, UINT64_MAX when none (inline: every progress pass). */
static inline uint64_t rdmx__timers_next(const struct rdmx__timers *ts)
{
	return ts->len ? ts->heap[0]->when_ns : UINT64_MAX;
}
/* Stops and runs every timer due at now_ns (a callback may start or stop
 * timers); returns how many ran. */
int rdmx__timers_run(struct rdmx__timers *ts, uint64_t now_ns);
/* The heap of `pe` (engine/pe.c). */
struct rdmx__timers *rdmx__pe_timers(struct rdmx_pe *pe);

#define RDMX_CONN_DETAILS_MAX 256u
#define RDMX_DESC_MAGIC 0x5852u
#define RDMX_DESC_VERSION 1u
#define RDMX_PROVIDER_ID_TCP 1u
#define RDMX_PROVIDER_ID_VERBS 2u

struct rdmx_provider_ops;

struct rdmx_dev {
	const struct rdmx_provider_ops *ops;
	char name[RDMX_DEV_NAME_MAX];
	atomic_uint users; /* registered regions + contexts + sync events */
	void *prov;        /* provider's device state */
};

struct rdmx_mr {
	struct rdmx_dev *dev;
	void *addr;
	size_t len;
	unsigned access; /* RDMX_ACCESS_* (never RDMX_ACCESS_GRANT_ONLY) */
	bool grant_only; /* registered with RDMX_ACCESS_GRANT_ONLY: the own key
	                  * gives no remote access, only grants do */
	/* live rdmx_mr_grant objects (dereg refuses while > 0); grants may
	 * come from contexts driven by other threads */
	atomic_uint grants;
	uint32_t lkey; /* provider-defined; tcp: same as rkey */
	uint32_t rkey;
	/* no other registration of this process had it: a region registered
	 * at the address of a freed one is told apart (task.c) */
	uint64_t serial;
	void *prov;
};

/* A connection-bound grant (engine/mr.c). Providers fill rkey and prov in
 * ops->mr_grant and read the rest. */
struct rdmx_mr_grant {
	struct rdmx_mr *mr;
	struct rdmx_conn *conn; /* NULL once ENDED */
	uint64_t offset;        /* into the region */
	uint64_t len;
	unsigned access; /* RDMX_ACCESS_REMOTE_* granted */
	uint32_t rkey;
	bool active; /* the key works: neither ended nor revoked */
	void *prov;
	struct rdmx_mr_grant *next_in_conn; /* conn->grants */
};

/* Decoded descriptor of a peer's region. */
struct rdmx_mr_remote {
	uint64_t addr; /* the owner's virtual address of the region start */
	uint64_t len;
	uint32_t rkey;
	unsigned access;
	uint8_t provider; /* RDMX_PROVIDER_ID_* */
};

struct rdmx_addr {
	enum rdmx_addr_type type;
	char text[64];
	uint16_t port;
	struct sockaddr_storage ss; /* resolved, port set */
	socklen_t ss_len;
};

/* The wire operation a task performs (sync events map onto read / atomics). */
enum rdmx__op {
	RDMX__OP_RECV = 0,
	RDMX__OP_SEND,
	RDMX__OP_SEND_IMM,
	RDMX__OP_READ,
	RDMX__OP_WRITE,
	RDMX__OP_WRITE_IMM,
	RDMX__OP_CAS,
	RDMX__OP_FADD,
	RDMX__OP_ATOMIC_WRITE,
	RDMX__OP_FLUSH,
};

/* What the last successful validation of a task saw (task.c): the only entry
 * of its local chain, copied (mr NULL: no chain). The remote side needs no
 * copy: the task holds its own rbuf, and a rdmx_mr_remote is the library's
 * and never changes. A submit whose chain still matches skips the walk. */
struct rdmx__task_checked {
	bool valid;          /* the chain had at most one entry */
	struct rdmx_buf buf; /* that entry as it was (next NULL) */
	uint64_t mr_serial;  /* and its region's serial */
};

enum rdmx__task_state {
	RDMX__TASK_FREE = 0,     /* in the pool */
	RDMX__TASK_IDLE = 1,     /* allocated, not in flight */
	RDMX__TASK_INFLIGHT = 2, /* owned by the provider until completed */
};

struct rdmx_task {
	struct rdmx_ctx *ctx;
	struct rdmx_conn *conn; /* NULL for receive */
	enum rdmx_task_type type;
	enum rdmx__op op;
	enum rdmx__task_state state;
	int status;
	void *user_data;
	struct rdmx_buf *local; /* src (send/write), dst (recv/read), result (atomics) */
	struct rdmx_rbuf remote;
	uint64_t len;      /* send/write: total of local chain; read: remote.len */
	uint32_t imm;      /* host order */
	uint64_t op0, op1; /* cas: cmp, swap; fadd: add; atomic write: value */
	/* results, written by the provider before rdmx__task_complete */
	enum rdmx_opcode res_opcode;
	uint32_t res_len;
	uint32_t res_imm;
	struct rdmx_conn *res_conn;
	struct rdmx__task_checked checked;
	/* provider scratch while in flight (and the pool's free list link) */
	struct rdmx_task *next;
	uint64_t prov_u64[2];
	void *prov_ptr;
};

struct rdmx_ctx_props {
	uint32_t send_queue_size;
	uint32_t recv_queue_size;
	uint32_t max_send_buf_list_len;
	uint32_t max_recv_buf_list_len;
	unsigned permissions;
	uint32_t mtu;
	uint32_t gid_index;
	uint8_t sl;
	bool grh;
	uint32_t conn_request_timeout_ms;
	uint8_t rnr_retry_count;
	uint32_t transport_timeout_ms; /* 0: none */
	uint8_t retry_count;
	uint32_t max_connections;
	enum rdmx_transport_type transport_type;
	uint32_t max_inline; /* bytes; 0: no inline data */
};

struct rdmx_task_conf {
	rdmx_task_cb ok_cb;
	rdmx_task_cb err_cb;
	uint32_t num_tasks;
};

struct rdmx_task_pool {
	struct rdmx_task *tasks; /* num_tasks entries, allocated at start */
	struct rdmx_task *free;  /* free list through task->next */
	uint32_t in_use;
};

struct rdmx_conn {
	struct rdmx_ctx *ctx;
	uint32_t id;
	enum rdmx_conn_state state;
	void *user_data;
	bool has_peer_addr;
	struct rdmx_addr peer_addr;
	uint8_t private_data[RDMX_PRIVATE_DATA_MAX];
	size_t private_data_len;
	uint8_t details[RDMX_CONN_DETAILS_MAX]; /* exported local details */
	size_t details_len;
	struct rdmx_conn *next_in_ctx;
	void *prov;
	/* engine-private (providers read at most, never write) */
	bool exported;                /* made by rdmx_ctx_export */
	bool can_post;                /* rdmx_ctx_connect returned 0 or ESTABLISHED was reported */
	bool closing;                 /* rdmx_conn_disconnect called: later submits are aborted */
	bool sealed;                  /* rdmx_conn_set_data_keys succeeded */
	uint32_t outstanding;         /* send-side tasks handed to post_send, not yet completed */
	uint32_t fail_posts;          /* posts still to refuse (rdmx__conn_fail_posts, tests) */
	struct rdmx_mr_grant *grants; /* active grants bound to this connection */
};

struct rdmx_ctx {
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	enum rdmx_ctx_state state;
	struct rdmx_ctx_props props;
	struct rdmx_task_conf conf[RDMX_TASK_TYPE_COUNT];
	struct rdmx_task_pool pool[RDMX_TASK_TYPE_COUNT];
	rdmx_conn_request_cb request_cb;
	rdmx_conn_established_cb established_cb;
	rdmx_conn_failure_cb failure_cb;
	rdmx_conn_disconnected_cb disconnected_cb;
	void *user_data;
	struct rdmx_conn *conns; /* live connections */
	uint32_t num_conns;
	uint32_t next_conn_id;
	/* tasks submitted on a connection in error: completed with
	 * RDMX_E_CONN_ABORTED by the next progress, in submission order */
	struct rdmx_task *deferred_head, *deferred_tail;
	struct rdmx_ctx *next_in_pe;
	void *prov;
	/* engine-private */
	struct rdmx_dev_caps caps; /* queried at create */
	unsigned in_poll;          /* > 0 while ctx_poll / ctx_stop run its callbacks */
	/* completions the running poll has in hand after the callback it runs,
	 * a lower bound (set by the provider: rdmx_ctx_get_completions_pending) */
	uint32_t cb_more;
	bool listening;
	struct rdmx_conn *dead;      /* finished connections, released after ctx_poll returns */
	struct rdmx_ctx_stats stats; /* engine/ctx_stats.c; kept by task.c and conn.c */
	/* light messages' handler (engine/msg.h), NULL: none */
	void (*msg_fn)(void *arg, struct rdmx_conn *conn, uint32_t imm, uint32_t len);
	void *msg_arg;
};

/* ---- engine services for providers (engine/ core files) ---- */

/* Completes an in-flight task: records status, runs ok_cb or err_cb. Call on
 * the progress thread only (from ops->ctx_poll or ops->ctx_stop), never
 * holding a provider lock: the callback may submit, free or disconnect. */
void rdmx__task_complete(struct rdmx_task *task, int status);

/* A light message arrived on conn (engine/msg.h): counts it and runs the
 * context's handler. Same rules as rdmx__task_complete. */
void rdmx__msg_arrived(struct rdmx_conn *conn, uint32_t imm, uint32_t len);

enum rdmx__conn_event {
	RDMX__CONN_EV_REQUEST, /* incoming cm request (conn from rdmx__conn_new) */
	RDMX__CONN_EV_ESTABLISHED,
	RDMX__CONN_EV_FAILURE,      /* connect failed / rejected; conn is freed after */
	RDMX__CONN_EV_DISCONNECTED, /* conn is freed after (ops->conn_release first) */
};

/* Reports a connection event and runs the user's callback; from ops->ctx_poll
 * (or ops->ctx_stop) only. Before FAILURE or DISCONNECTED the provider must
 * have completed every task of the connection. After those two final events
 * the engine unlinks the connection; ops->conn_release and the free happen
 * once the current ctx_poll / ctx_stop call has returned, so the provider may
 * still touch the conn until it returns. The same holds for a connection the
 * user rejects from the request callback. */
void rdmx__conn_event(struct rdmx_conn *conn, enum rdmx__conn_event ev);

/* Moves a connection to RDMX_CONN_ERROR (later submits complete CONN_ABORTED).
 * Progress thread only (from ctx_poll). The provider completes the tasks it
 * already holds for the connection (flushed, RDMX_E_CONN_ABORTED) itself; the
 * engine delivers the aborted later submits only after those, keeping the
 * per-connection completion order. */
void rdmx__conn_set_error(struct rdmx_conn *conn);

/* New connection object for an incoming cm request; NULL when the context
 * is at max connections (the provider then rejects the request). */
struct rdmx_conn *rdmx__conn_new(struct rdmx_ctx *ctx, enum rdmx_conn_state state);

/* Descriptor encode/decode (engine/mr.c), shared with providers' tests.
 * decode: RDMX_E_INVAL for a wrong size, magic, version, provider, flags,
 * reserved field, zero length or an address range that wraps. */
void rdmx__mr_descriptor_encode(const struct rdmx_mr *mr, uint8_t provider_id, void *desc);
int rdmx__mr_descriptor_decode(const void *desc, size_t size, struct rdmx_mr_remote *remote);

/* Test hook: the next n posts of requests on conn (rdmx_task_submit) are
 * refused with RDMX_E_PROVIDER, as a provider refuses a post (verbs: a
 * failed ibv_post_send), the task left unposted; while any remain, a light
 * message (engine/msg.h) is refused too, as the tcp provider refuses one it
 * cannot take (RDMX_E_AGAIN: its sender posts a request instead), without
 * counting. n = 0 ends it. Application thread only. */
void rdmx__conn_fail_posts(struct rdmx_conn *conn, uint32_t n);

/* ---- engine-internal (core files only) ---- */

/* The connection reached its end (final event or retirement): every grant
 * bound to it is invalidated (ops->mr_revoke) and marks ENDED (engine/mr.c).
 * Idempotent. */
void rdmx__conn_end_grants(struct rdmx_conn *conn);

/* Contexts created on a pe hold it (ctx create / destroy): rdmx_pe_destroy
 * answers RDMX_E_BAD_STATE while any exists, started or not. */
void rdmx__pe_hold(struct rdmx_pe *pe);
void rdmx__pe_release(struct rdmx_pe *pe);
/* Progress engine membership (ctx start / stop). attach adds the provider fd
 * of the context to the pe's epoll set. */
int rdmx__pe_attach(struct rdmx_pe *pe, struct rdmx_ctx *ctx);
void rdmx__pe_detach(struct rdmx_pe *pe, struct rdmx_ctx *ctx);
/* Makes the pe fd readable when notification is armed (engine-level
 * completions became ready). */
void rdmx__pe_signal(struct rdmx_pe *pe);
/* Completes the ready tasks of the ctx's deferred list with
 * RDMX_E_CONN_ABORTED (engine/task.c); returns how many. `all`: ignore the
 * per-connection ordering wait (used at stop). */
int rdmx__ctx_deliver_deferred(struct rdmx_ctx *ctx, bool all);
/* True when the deferred list holds a task that can be delivered now. */
bool rdmx__ctx_deferred_ready(const struct rdmx_ctx *ctx);
/* Releases (ops->conn_release) and frees the finished connections. */
void rdmx__ctx_reap_conns(struct rdmx_ctx *ctx);
/* Unlinks a connection from its context, forgets it in every task, and
 * queues it for reaping (or reaps it at once outside ctx_poll). */
void rdmx__conn_retire(struct rdmx_conn *conn);
/* Frees the task pools (ctx stop / failed start) and builds them (start). */
int rdmx__task_pools_create(struct rdmx_ctx *ctx);
void rdmx__task_pools_destroy(struct rdmx_ctx *ctx);
/* Checks a task's fields for its op (chains, regions, lengths, alignment)
 * and sets task->len. RDMX_E_INVAL on a bad field. */
int rdmx__task_validate(struct rdmx_task *task);
/* Task completion without the provider's outstanding accounting. */
void rdmx__task_finish(struct rdmx_task *task, int status);

static inline uint64_t rdmx__buf_chain_len(const struct rdmx_buf *b)
{
	uint64_t total = 0;
	for (; b; b = b->next)
		total += b->len;
	return total;
}

#endif
