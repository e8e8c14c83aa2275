/* tcp provider: private state shared by its files: device.c (device, caps),
 * nic.c (the soft NIC thread: why and how, at its top), mr.c (key table),
 * ctx.c (contexts, completion queue, poll), conn.c (export/connect, end of
 * life), cm.c (listen/connect_to_addr), rx.c / tx.c (the wire engine),
 * ops.c (posting, ops table), wire.h (frame format). Nothing outside this
 * folder and its tests includes it.
 *
 * Locking (order: device lock -> context lock -> key table read lock; the
 * application thread never takes the device lock while it holds a context
 * lock; the NIC thread trylocks a context to serve it, and locks it only for
 * the short hand-over of an accepted data connection):
 * - tcp_dev.lock guards the device's context list, the table of exported
 *   connections waiting for their data connection, the hello sockets and
 *   the NIC bookkeeping in each tcp_ctx.
 * - tcp_ctx.lock guards everything of one context: its sockets' rx/tx state,
 *   queues, receive queue, completion queue. Whoever holds it "serves the
 *   wire": the application thread (ctx_poll, post_*) or the soft NIC.
 * - the key table has its own rwlock; a reader holds it while it touches
 *   registered memory, so mr_dereg waits for in-flight copies. */
#ifndef RDMX_TCP_H
#define RDMX_TCP_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "../../provider.h"
#include "common/clock.h"
#include "wire.h"

#define TCP_MAX_QUEUE 16384u
#define TCP_MAX_SGE 32u
#define TCP_MAX_MSG (1ull << 30)
/* Connections per context (caps.max_connections; a context takes 64 unless
 * asked): twice RDMX_RPC_SECURE_DEFAULT_MAX_CLIENTS, so that a secure server
 * at its client limit has room for a newcomer while the client it gave up
 * for it is released (rpc_secure_server.c, set_max_connections). */
#define TCP_MAX_CONNS 2048u
/* What rdmx_ctx_set_max_inline accepts (reported only: frames copy anyway). */
#define TCP_MAX_INLINE 1024u
#define TCP_STAGE_SIZE 16384u        /* per connection receive staging buffer */
#define TCP_DIRECT_MIN 4096u         /* payload remainders this big bypass the stage */
#define TCP_WAIT_READ_US 1000u       /* receive timeout of a connection read in a wait */
#define TCP_HELLO_TIMEOUT_MS 5000u   /* to read a hello / cm request */
#define TCP_MAX_HELLOS 64u           /* per device: data connections awaiting their hello */
#define TCP_MAX_HELLOS_PER_SOURCE 8u /* ... of them from one source address */
#define TCP_MAX_CMREQS 64u           /* per context: cm connections awaiting their request */
#define TCP_RNR_MIN_US 200u
#define TCP_RNR_MAX_US 10000u
#define TCP_SERVE_BUDGET (1u << 20) /* bytes read from one socket per serve pass */
#define TCP_SIDE_LOOK 32u           /* app polls per look at a solo conn's side fds */
#define TCP_QUIET_POLLS                                                                            \
	256u /* app polls in a row, unarmed, before a solo conn's                                  \
	      * socket leaves the epoll sets (ctx.c: quiet) */
#define TCP_GRACE_US_DEFAULT 200u
#define TCP_PATIENCE_GRACES 10u /* nic.c: armed applications serve themselves this long */
#define TCP_BUSY_GRACES 8u      /* nic.c: longest look period over a busy context (< patience) */
#define TCP_NEVER UINT64_MAX
#define TCP_ACCEPT_REST_MS 250u /* a listener out of descriptors rests this long */

/* The least power of two >= n (n <= 2^31): ring sizes, indexed with a mask
 * (a division by a variable size costs tens of cycles per index). */
static inline uint32_t rdmx__tcp_pow2(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

struct tcp_ctx;
struct tcp_conn;

/* ---- key table (mr.c) ---- */

/* Random bytes for keys and tokens; constant-time comparison of secrets. */
int rdmx__tcp_random(void *buf, size_t len);
bool rdmx__tcp_ct_equal(const uint8_t *a, const uint8_t *b, size_t n);

struct rdmx__tcp_region {
	uint8_t *addr;
	uint64_t len;
	uint64_t serial; /* registration number: a reused key is a different region */
	uint32_t key;    /* 0: empty slot */
	unsigned access;
	/* a grant (rdmx_mr_grant): the only connection the key works through;
	 * NULL: device-wide. Removed from the table before the conn is freed. */
	const struct tcp_conn *owner;
	uint32_t owner_id; /* its rdmx_conn id and its context's serial, for logs */
	uint64_t owner_ctx;
};

struct rdmx__tcp_keytab {
	pthread_rwlock_t lock;
	struct rdmx__tcp_region *slots; /* open addressing, linear probing */
	uint32_t mask;
	uint32_t count;
	uint64_t next_serial;
};

int rdmx__tcp_keytab_init(struct rdmx__tcp_keytab *kt);
void rdmx__tcp_keytab_fini(struct rdmx__tcp_keytab *kt);
/* Write-locks. RDMX_E_INVAL for key 0, RDMX_E_EXISTS when taken, RDMX_E_NOMEM. */
int rdmx__tcp_keytab_insert(struct rdmx__tcp_keytab *kt, uint32_t key, void *addr, uint64_t len,
                            unsigned access, uint64_t *serial);
/* Write-locks. RDMX_E_NOT_FOUND when absent. */
int rdmx__tcp_keytab_remove(struct rdmx__tcp_keytab *kt, uint32_t key);
void rdmx__tcp_keytab_rdlock(struct rdmx__tcp_keytab *kt);
void rdmx__tcp_keytab_unlock(struct rdmx__tcp_keytab *kt);
/* insert for a grant: the key works only through `owner`. */
int rdmx__tcp_keytab_insert_bound(struct rdmx__tcp_keytab *kt, uint32_t key, void *addr,
                                  uint64_t len, unsigned access, const struct tcp_conn *owner,
                                  uint32_t owner_id, uint64_t owner_ctx, uint64_t *serial);
/* Read lock held: the region of key, or NULL. */
const struct rdmx__tcp_region *rdmx__tcp_keytab_find(const struct rdmx__tcp_keytab *kt,
                                                     uint32_t key);
/* Read lock held: the check of a one-sided request arriving through `via`:
 * the key known and, when it is a grant, granted to `via`; then
 * rdmx__tcp_region_allows with the context's permissions. The region, or
 * NULL with a log line saying why (never the key). */
const struct rdmx__tcp_region *rdmx__tcp_remote_access(const struct tcp_conn *via, uint32_t key,
                                                       uint64_t off, uint64_t len, unsigned need);
/* The checks of every one-sided access: `need` (RDMX_ACCESS_REMOTE_*) must be
 * in the region's flags and in the target context's permissions, and
 * [off, off + len) inside the region without wrap-around. True when allowed. */
bool rdmx__tcp_region_allows(const struct rdmx__tcp_region *r, uint64_t off, uint64_t len,
                             unsigned need, unsigned ctx_perm);

/* ---- sealed records (seal.c) ---- */

#define TCP_SEAL_KEY 32u
#define TCP_SEAL_IV 12u
#define TCP_SEAL_TAG 16u
#define TCP_SEAL_HDR 4u
#define TCP_SEAL_MAX 65536u /* plaintext bytes per record */
#define TCP_SEAL_REC (TCP_SEAL_HDR + TCP_SEAL_MAX + TCP_SEAL_TAG)
#define TCP_SEAL_SLOTS 8u /* sealed records waiting for the socket (tx.c's slot ring) */
#define TCP_SEAL_RXBUF (4u * TCP_SEAL_REC) /* records being received (one recv) */
/* The first record of an initiator: its HELLO frame. */
#define TCP_SEAL_HELLO_SIZE (TCP_SEAL_HDR + RDMX__TCP_HDR_SIZE + RDMX__TCP_HELLO_LEN + TCP_SEAL_TAG)

struct evp_cipher_ctx_st;
struct evp_cipher_st;

/* One direction: its key schedule (in evp), IV and record counter. */
struct tcp_seal_dir {
	struct evp_cipher_ctx_st *evp;
	struct evp_cipher_st *cipher; /* fetched once: no per-record lookup */
	uint8_t iv[TCP_SEAL_IV];
	bool encrypt;
	uint64_t seq; /* records sealed / opened so far: the next nonce */
};

struct tcp_seal_pipe;

struct tcp_seal {
	struct tcp_seal_dir tx, rx;
	struct tcp_seal_dir tx_pipe; /* tx's key and IV, for records sealed by the pipe */
	/* TCP_SEAL_SLOTS slots of TCP_SEAL_REC bytes, a ring of records in
	 * record order: [slot_head, slot_head + slot_count) hold records, the
	 * first tx_off bytes of the head one are sent; slot_len 0 marks a slot
	 * the pipe is sealing (tx.c) */
	uint8_t *txbuf;
	uint32_t slot_len[TCP_SEAL_SLOTS];
	uint8_t slot_head, slot_count;
	uint32_t tx_off;
	struct tcp_seal_pipe *posted; /* the device pipe holding records of ours, NULL: none */
	uint8_t *rxbuf;               /* [rx_off, rx_len): received, not yet opened */
	uint32_t rx_len, rx_off;
};

int rdmx__tcp_seal_dir_init(struct tcp_seal_dir *d, const uint8_t key[TCP_SEAL_KEY],
                            const uint8_t iv[TCP_SEAL_IV], bool encrypt);
void rdmx__tcp_seal_dir_fini(struct tcp_seal_dir *d);
/* Seals the first `take` (1 .. TCP_SEAL_MAX) bytes of iov into one record at
 * out (room for TCP_SEAL_REC). Returns the record's size, or RDMX_E_FULL once
 * the counter would wrap, RDMX_E_INVAL, RDMX_E_PROVIDER. */
int rdmx__tcp_seal_record(struct tcp_seal_dir *d, const struct iovec *iov, int niov, size_t take,
                          uint8_t *out);
/* Opens the record rec[rec_len] in place (plaintext at rec + TCP_SEAL_HDR).
 * 0, RDMX_E_AUTH (tag mismatch: forged, altered, replayed, reordered),
 * RDMX_E_PROTOCOL (length field), RDMX_E_FULL (counter exhausted). The
 * counter moves only on success. */
int rdmx__tcp_seal_open(struct tcp_seal_dir *d, uint8_t *rec, size_t rec_len);
/* The same in pieces, so that the plaintext can go straight to where it
 * belongs: begin with the record's length field (rec[0..TCP_SEAL_HDR)),
 * update over the ciphertext in order (any split, out may equal in), final
 * with the tag. Until final returned 0 the plaintext is unverified: whoever
 * placed it must treat it as undefined and act on none of it. */
int rdmx__tcp_seal_open_begin(struct tcp_seal_dir *d, const uint8_t *rec);
int rdmx__tcp_seal_open_update(struct tcp_seal_dir *d, uint8_t *out, const uint8_t *in, size_t len);
int rdmx__tcp_seal_open_final(struct tcp_seal_dir *d, const uint8_t tag[TCP_SEAL_TAG]);
int rdmx__tcp_seal_create(const uint8_t tx_key[TCP_SEAL_KEY], const uint8_t tx_iv[TCP_SEAL_IV],
                          const uint8_t rx_key[TCP_SEAL_KEY], const uint8_t rx_iv[TCP_SEAL_IV],
                          struct tcp_seal **out);
void rdmx__tcp_seal_destroy(struct tcp_seal *s);
/* Drops buffered records (the socket is gone). */
void rdmx__tcp_seal_reset(struct tcp_seal *s);

/* ---- the seal pipe (seal_pipe.c) ----
 *
 * One per device: payload records of a sealed connection sealed on the
 * device's NIC thread while the application thread sends the records before
 * them. A flush claims the pipe, fills up to TCP_PIPE_RECS records (each with
 * its record number, its source bytes and its slot), posts it (s->posted)
 * and kicks the NIC; the NIC thread seals them when it wakes. A flush that
 * ends on a full socket leaves them there; the connection's next flush, or
 * any path that completes or forgets its tasks or drops its records
 * (rdmx__tcp_tx_forget_task, rdmx__tcp_seal_reset, rdmx__tcp_seal_destroy),
 * joins first: a record the NIC has not started is taken back and sealed by
 * the joiner, one it is sealing is waited for (pure cipher work, no lock).
 * So no source byte (a task's buffer) is read after its task completes. */

#define TCP_PIPE_RECS 4
#define TCP_PIPE_IOV 16 /* source pieces per record (more: sealed inline) */
/* A flush posts a whole pipe behind the records sealed before it (a
 * header's), and the slot ring keeps a slot index in a byte. */
_Static_assert(TCP_SEAL_SLOTS > TCP_PIPE_RECS && TCP_SEAL_SLOTS < 256, "tx slot ring too small");
_Static_assert(TCP_SEAL_RXBUF >= 2u * TCP_SEAL_REC, "a partial record needs room behind it");

struct tcp_seal_pipe_rec {
	uint64_t seq;
	uint8_t *out;
	size_t take;
	int niov;
	int rc; /* the record's size, or an error (seal.c) */
	struct iovec iov[TCP_PIPE_IOV];
};

struct tcp_seal_pipe {
	atomic_int state; /* enum in seal_pipe.c; zero: idle */
	struct tcp_seal_dir *dir;
	unsigned nrec;
	struct tcp_seal_pipe_rec rec[TCP_PIPE_RECS];
	atomic_uint_least64_t nic_records; /* records the NIC thread sealed */
	atomic_bool wait_for_nic;          /* tests: the joiner never takes records back */
};

/* False when RDMX_TCP_SEAL_PIPE=0 (read once): every record sealed inline. */
bool rdmx__tcp_seal_pipe_enabled(void);

/* Takes the idle pipe for this flush; false when another flush holds it. */
bool rdmx__tcp_seal_pipe_claim(struct tcp_seal_pipe *p, struct tcp_seal_dir *dir);
/* The next record to fill (nrec < TCP_PIPE_RECS), NULL when full. */
struct tcp_seal_pipe_rec *rdmx__tcp_seal_pipe_next(struct tcp_seal_pipe *p);
/* Hands the filled records to the NIC thread (the caller kicks it). */
void rdmx__tcp_seal_pipe_post(struct tcp_seal_pipe *p);
/* Every posted record sealed (by the NIC or here), the pipe idle again. 0,
 * or the first record's error. may_wait: the caller is not the NIC thread
 * (only then does wait_for_nic hold it until the NIC took the records). */
int rdmx__tcp_seal_pipe_join(struct tcp_seal_pipe *p, bool may_wait);
/* Joins the pipe that holds records of s (s->posted), if any, and gives
 * their slots their sizes; a failed record and those after it leave the
 * ring (the connection is going to error). 0 or that record's error. */
int rdmx__tcp_seal_pipe_settle(struct tcp_seal *s, bool may_wait);
/* NIC thread: seals the posted records, if any. */
void rdmx__tcp_seal_pipe_serve(struct tcp_seal_pipe *p);

/* ---- device (device.c, nic.c) ---- */

/* How a data connection's wait for its hello ended (device counters). */
enum tcp_hello_end {
	TCP_HELLO_ATTACHED,  /* the token matched an export */
	TCP_HELLO_TIMEOUT,   /* no complete hello in TCP_HELLO_TIMEOUT_MS */
	TCP_HELLO_MALFORMED, /* not a hello frame */
	TCP_HELLO_BAD_TOKEN, /* a well-formed hello naming no export */
	TCP_HELLO_CLOSED,    /* the peer closed (or reset) before its hello */
	TCP_HELLO_EVICTED,   /* oldest idle one dropped for a newer connection */
	TCP_HELLO_END_COUNT
};

struct tcp_hello {
	int fd;
	uint64_t deadline;
	uint64_t last_rx; /* accepted or last bytes received (eviction order) */
	struct sockaddr_storage src;
	uint32_t got;
	uint8_t buf[TCP_SEAL_HELLO_SIZE]; /* a plain hello is the first 80 bytes */
	struct tcp_hello *next;
};

/* A listener whose accept failed for want of descriptors or memory
 * (EMFILE, ENFILE, ENOBUFS, ENOMEM): the pending connection keeps it
 * readable, so a loop that retried at once would spin and log without end.
 * It leaves its epoll sets for TCP_ACCEPT_REST_MS instead (the connection
 * waits in the backlog: a legitimate client is served once descriptors
 * are free), and the failure is logged at most once a second. */
struct tcp_accept_rest {
	uint64_t until; /* 0: watching; else when it watches again */
	struct rdmx__log_rate log;
};
/* After a failed accept (err: errno): true when the listener should rest
 * (until set; the caller takes it out of its sets, then logs). */
bool rdmx__tcp_accept_rests(struct tcp_accept_rest *r, int err);
/* The failure's line, at most one a second (it says whether it rests). */
void rdmx__tcp_accept_log(struct tcp_accept_rest *r, int err, const char *what);

struct tcp_dev {
	struct rdmx_dev *dev;
	int lfd; /* data listener of the export/connect flow */
	int family;
	struct sockaddr_storage addr; /* bound address, port set */
	socklen_t addr_len;
	uint8_t addr_raw[16];
	uint16_t port;
	struct rdmx__tcp_keytab keys;
	uint64_t grace_ns;

	pthread_mutex_t lock;
	struct tcp_ctx *ctxs; /* started contexts */
	uint64_t next_ctx_serial;
	struct tcp_conn *pending; /* exported conns awaiting a data connection */
	struct tcp_hello *hellos;
	unsigned num_hellos;
	unsigned max_hellos;            /* TCP_MAX_HELLOS (tests lower it) */
	unsigned max_hellos_per_source; /* TCP_MAX_HELLOS_PER_SOURCE */
	atomic_uint hello_timeout_ms;   /* TCP_HELLO_TIMEOUT_MS (tests lower it) */
	/* written before the socket is closed: whoever sees the close sees
	 * the count */
	atomic_uint_least64_t hello_ends[TCP_HELLO_END_COUNT];
	struct rdmx__log_rate hello_log[TCP_HELLO_END_COUNT]; /* NIC thread */
	struct tcp_accept_rest data_rest;                     /* lfd's (NIC thread) */
	pthread_t nic;
	bool nic_started;
	bool nic_stop;
	atomic_bool nic_parked; /* the NIC sleeps past its patience (nic.c): nudge it */
	int nic_epfd;           /* ctl eventfd, listener, hellos, idle contexts' socket sets */
	int nic_efd;            /* wakes the NIC thread (context added/removed, stop) */
	atomic_uint_least64_t nic_rounds; /* passes of the NIC loop (tests: no busy loop) */
	struct tcp_seal_pipe seal_pipe;   /* seal_pipe.c */
};

/* Starts the NIC thread once (device lock held). */
int rdmx__tcp_nic_start(struct tcp_dev *td);
/* Stops and joins it (device close). */
void rdmx__tcp_nic_stop(struct tcp_dev *td);
void rdmx__tcp_nic_kick(struct tcp_dev *td);
/* The application thread left work for later (an answer to send, a timer):
 * wakes the NIC only if it is parked (at most one eventfd write per idle
 * period, none while the application keeps progressing). */
void rdmx__tcp_nic_nudge(struct tcp_ctx *tc);
/* Registers / forgets a context with the NIC (device lock held). */
int rdmx__tcp_nic_add_ctx(struct tcp_dev *td, struct tcp_ctx *tc);
void rdmx__tcp_nic_del_ctx(struct tcp_dev *td, struct tcp_ctx *tc);

/* ---- context (ctx.c) ---- */

enum tcp_cqe_kind {
	TCP_CQE_TASK,        /* p: task, status */
	TCP_CQE_ESTABLISHED, /* p: tcp_conn */
	TCP_CQE_SET_ERROR,   /* p: tcp_conn */
	TCP_CQE_REQUEST,     /* p: tcp_cmreq (incoming cm request) */
	TCP_CQE_MSG,         /* p: tcp_conn, a light message (engine/msg.h): imm, len */
};

struct tcp_cqe {
	void *p;
	int32_t status;
	uint8_t kind;
	uint32_t imm, len; /* TCP_CQE_MSG */
};

/* What an epoll entry of a context's socket set stands for. */
enum tcp_ep_kind { TCP_EP_CONN = 1, TCP_EP_LISTEN, TCP_EP_CMREQ };

struct tcp_ep {
	uint8_t kind;
};

/* An accepted cm connection until its request arrived and was delivered. */
struct tcp_cmreq {
	struct tcp_ep ep;
	int fd;
	uint64_t deadline;
	uint32_t got;
	bool queued; /* read completely, in the completion queue */
	uint8_t buf[RDMX__TCP_HDR_SIZE + RDMX__TCP_PD_MAX];
	struct sockaddr_storage peer;
	socklen_t peer_len;
	struct tcp_cmreq *next;
};

/* A cm listener shared by contexts of one device (rdmx_ctx_listen_join):
 * the listener's accept deals each socket to m[next] in turn (m[0] is the
 * listener). Lock order: the listener's tc->lock, then the group's lock,
 * then a member's tc->lock; a member leaving takes the group's lock before
 * its own. Freed by the last to leave. */
struct tcp_lgroup {
	pthread_mutex_t lock;
	struct tcp_ctx *m[RDMX_CTX_MAX_LISTEN_GROUP];
	unsigned n, next, refs;
};

struct tcp_ctx {
	struct rdmx_ctx *ctx;
	struct tcp_dev *td;
	pthread_mutex_t lock;
	int epfd;                            /* the context's sockets */
	int efd;                             /* completions produced by the NIC thread */
	int nfd;                             /* notification fd: epfd's sockets + efd: ctx_get_fd */
	atomic_uint_least64_t progress;      /* bumped by every ctx_poll / post (lock held) */
	atomic_bool armed;                   /* notification requested */
	atomic_uint_least64_t arms;          /* ctx_arm calls (the NIC: a sleeper between calls) */
	atomic_bool efd_set;                 /* efd written since the last disarm */
	atomic_uint_least64_t next_deadline; /* earliest timer (ns), TCP_NEVER */

	/* under lock */
	struct rdmx_task *rq_head, *rq_tail; /* shared receive queue */
	uint32_t rq_count;
	struct tcp_cqe *cq; /* ring of completions and events, delivered in order */
	uint32_t cq_cap, cq_head, cq_count;
	struct tcp_conn *conns;
	struct tcp_conn *dirty;       /* conns with answers to send (rx.c, tx.c) */
	uint32_t n_ep;                /* fds in epfd */
	uint32_t n_conn_ep;           /* ... of them, connections' */
	struct tcp_conn *last_conn;   /* the conn added to epfd last */
	uint32_t side_polls;          /* app polls since the last look at the other fds */
	atomic_bool side_due;         /* woken from a wait: look at every fd */
	atomic_bool has_dirty;        /* dirty != NULL, for the NIC thread's look */
	uint32_t num_finals;          /* conns with a final event to deliver */
	uint64_t wait_reads;          /* waits that ended in a read with bytes (ctx_wait_read) */
	uint32_t quiet_polls;         /* app polls since the last arm or unquiet */
	uint64_t quiets;              /* sockets that went quiet (ctx.c) */
	atomic_bool quiet;            /* a conn's socket is out of the sets (ctx.c: quiet) */
	struct tcp_conn *wait_staged; /* ... the conn read, until the next serve */
	struct tcp_ep listen_ep;
	int lfd; /* cm listener or -1 */
	struct tcp_accept_rest cm_rest;
	struct tcp_cmreq *cmreqs;
	unsigned num_cmreqs;
	struct tcp_lgroup *lgroup; /* listen group joined or led, NULL when none */
	bool produced;             /* completions pushed since the NIC last looked */
	bool stopping;

	/* NIC bookkeeping, under the device lock */
	struct tcp_ctx *next;
	uint64_t serial;
	uint64_t nic_seen;     /* progress value seen last */
	uint64_t nic_arms;     /* arms value seen last */
	uint64_t nic_moved_ns; /* when it was seen moving */
	bool nic_registered;   /* socket set added to the NIC's epoll */
	bool nic_in_set;       /* ... and armed (oneshot) */
	bool nic_strike;       /* armed mode: unserved data seen at the last check */
	uint64_t nic_period;   /* ACTIVE: time between looks, 0: one grace period */
};

/* Makes the notification fd readable (completions the application did not
 * produce itself are waiting). Any thread, no lock needed. */
void rdmx__tcp_ctx_signal(struct tcp_ctx *tc);
void rdmx__tcp_cq_task(struct tcp_ctx *tc, struct rdmx_task *task, int status);
void rdmx__tcp_cq_event(struct tcp_ctx *tc, enum tcp_cqe_kind kind, void *p);
/* A light message that arrived on c (counted in c->msg_backlog until
 * delivered). False: no memory for its entry (not queued). */
bool rdmx__tcp_cq_msg(struct tcp_ctx *tc, struct tcp_conn *c, uint32_t imm, uint32_t len);
/* Makes room for the completions a new connection may queue. */
int rdmx__tcp_cq_reserve(struct tcp_ctx *tc, uint32_t extra);
/* Serves the context's sockets and timers (lock held). Returns bytes read.
 * app: the application's poll (ctx.c: one connection and a listener cost
 * one recv, not an epoll_wait and a recv); false: the NIC thread's pass. */
size_t rdmx__tcp_ctx_serve(struct tcp_ctx *tc, size_t budget, bool app);
void rdmx__tcp_ctx_timer(struct tcp_ctx *tc, uint64_t deadline);
void rdmx__tcp_ctx_run_timers(struct tcp_ctx *tc, uint64_t now);
/* The application's entry into the context (a poll, a post, a connection
 * call): takes the lock and bumps the progress counter the NIC thread reads
 * (nic.c). Every writer holds the lock, so the bump is a plain load and
 * store, no locked instruction. */
static inline void rdmx__tcp_ctx_enter(struct tcp_ctx *tc)
{
	pthread_mutex_lock(&tc->lock);
	atomic_store_explicit(&tc->progress,
	                      atomic_load_explicit(&tc->progress, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
}
int rdmx__tcp_ep_set(struct tcp_ctx *tc, int fd, struct tcp_ep *ep, uint32_t events, bool add);
void rdmx__tcp_ep_del(struct tcp_ctx *tc, int fd, const struct tcp_ep *ep);
/* Puts quiet sockets back into the context's sets (lock held); the NIC
 * thread's form trylocks, false when the application holds the lock. */
void rdmx__tcp_ctx_unquiet(struct tcp_ctx *tc);
bool rdmx__tcp_ctx_unquiet_try(struct tcp_ctx *tc);

/* ---- connection (conn.c; the cm listener's requests in cm.c) ---- */

enum tcp_conn_state {
	TC_IDLE,        /* exported, no wire yet */
	TC_DIALING,     /* our TCP connect is in progress */
	TC_HELLO_WAIT,  /* we sent HELLO / CM_REQ and wait for the answer */
	TC_ACCEPT_WAIT, /* export/connect acceptor: waiting for the peer's socket or our connect */
	TC_REQUESTED,   /* cm passive side: request reported, not yet accepted */
	TC_UP,          /* frames flow */
	TC_ERROR,       /* RC error: tasks flushed; the socket (if any) only drains */
	TC_DOWN,        /* wire gone; the final event is pending or delivered */
};

struct tcp_resp {
	uint8_t op;
	uint16_t status;
	uint32_t psn;
	uint32_t rkey;
	uint64_t serial;
	uint64_t off;
	uint64_t len;
	uint64_t val;
};

enum tcp_src { TCP_SRC_NONE, TCP_SRC_CHAIN, TCP_SRC_MR, TCP_SRC_INLINE };
enum tcp_tx_what { TCP_TX_CTL = 1, TCP_TX_RESP, TCP_TX_REQ, TCP_TX_ORPHAN, TCP_TX_MSG };

/* One frame picked for sending (tx.c). */
struct tcp_frame {
	uint8_t what;
	uint8_t src;
	uint32_t hdr_off; /* header bytes already sent */
	uint8_t hdr[RDMX__TCP_HDR_SIZE];
	struct rdmx_task *task;     /* TCP_TX_REQ */
	const struct rdmx_buf *buf; /* chain source */
	size_t buf_off;
	uint32_t rkey; /* region source (read response) */
	uint64_t serial;
	uint64_t mr_off;
	uint32_t inl_off;               /* inline source */
	uint64_t left;                  /* payload bytes still to send */
	bool acks;                      /* a request carrying the next owed ACK (RDMX__TCP_F_ACK),
	                                 * until its header is out (the ACK's slot is freed then) */
	uint8_t inl[RDMX__TCP_MSG_MAX]; /* private data, or a light message (TCP_TX_MSG) */
};

/* Frames go out several per sendmsg: an acknowledgement and the next
 * request share one segment. */
#define TCP_TX_FRAMES 8

struct tcp_tx {
	struct tcp_frame q[TCP_TX_FRAMES];
	uint8_t head, count;
	uint8_t reqs;         /* request frames in q */
	uint32_t resp_picked; /* response ring entries in q */
	bool piping;          /* advancing over bytes handed to the seal pipe */
};

/* prov_u64[1] of a send-side task: rkey (low bits) and this flag once its
 * frame is completely on the wire (a response before that is a violation). */
#define TCP_TASK_SENT (1ull << 63)
/* Instead of TCP_TASK_SENT while the frame's last bytes are in records the
 * seal pipe has not sealed yet (the NIC thread may still read the task's
 * buffer): it becomes TCP_TASK_SENT when the pipe is joined, before those
 * records can go; an answer before then is a violation too. */
#define TCP_TASK_PIPED (1ull << 62)

enum tcp_sink { TCP_SINK_DISCARD, TCP_SINK_CHAIN, TCP_SINK_MR, TCP_SINK_INLINE };

struct tcp_rx {
	uint8_t *stage;
	uint32_t stage_len, stage_off;
	uint32_t hdr_got;
	uint8_t hdr[RDMX__TCP_HDR_SIZE];
	struct rdmx__tcp_hdr h; /* the frame being received */
	bool in_payload;
	uint8_t sink;
	uint8_t post;         /* what to do once the payload is in (rx.c) */
	uint16_t nak;         /* NAK status to answer with at the end, 0: none */
	uint64_t left;        /* payload bytes still to come */
	struct rdmx_buf *buf; /* chain sink */
	size_t buf_off;
	uint32_t rkey; /* region sink */
	uint64_t serial;
	uint64_t mr_off;
	uint32_t inl_got;
	uint8_t
	    inl[RDMX__TCP_HELLO_LEN > RDMX__TCP_PD_MAX ? RDMX__TCP_HELLO_LEN : RDMX__TCP_PD_MAX];
	struct rdmx_task *task; /* receive consumed by this frame, or the read it answers */
};

struct tcp_conn {
	struct tcp_ep ep;
	struct rdmx_conn *conn;
	struct tcp_ctx *tc; /* NULL once the context stopped */
	struct tcp_dev *td;
	enum tcp_conn_state state;
	int fd;
	uint32_t ep_events; /* registered in tc->epfd (0: not registered) */
	bool ep_quiet;      /* registered, yet out of epfd and nfd for now (ctx.c: quiet) */
	bool linked;        /* in tc->conns */
	bool pending;       /* in td->pending */
	bool initiator;
	bool cm;              /* listen/connect_to_addr flow */
	bool err_after_tx;    /* a response turned into a NAK: error once it is out */
	bool wait_read_on;    /* socket blocking with a receive timeout (rx_wait) */
	bool wait_read_off;   /* ... could not be made so: never read in a wait */
	bool local_connected; /* export flow: rdmx_ctx_connect called */
	bool peer_arrived;    /* export flow acceptor: the peer's socket is attached */
	bool est_queued;
	bool final_pending;
	bool final_done;
	uint8_t final_ev;       /* RDMX__CONN_EV_FAILURE / DISCONNECTED */
	uint32_t cq_refs;       /* completion queue entries naming this conn */
	uint32_t msg_backlog;   /* ... of them, light messages (engine/msg.h) */
	uint32_t msgs_unheard;  /* light messages sent since the peer's last frame */
	uint64_t conn_deadline; /* handshake timeout */
	uint64_t tt_ns;         /* transport timeout x tries (0: none) */
	uint64_t tt_last;       /* last sign of life: bytes in or out, or sq was empty
	                         * (rdmx__stamp_ns: the timeout never ends early) */
	uint32_t timeout_ms;
	uint8_t my_token[RDMX__TCP_TOKEN_SIZE];
	uint8_t peer_token[RDMX__TCP_TOKEN_SIZE];
	uint8_t presented[RDMX__TCP_TOKEN_SIZE]; /* initiator's own token from its hello */
	uint32_t my_psn0;
	uint32_t peer_psn0;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	uint8_t pd[RDMX__TCP_PD_MAX]; /* private data the peer sent */
	uint32_t pd_len;
	struct tcp_seal *seal; /* NULL: plaintext frames (set before connect, seal.c) */

	/* control frame (handshake, error) waiting to go out before anything */
	bool ctl_pending;
	struct rdmx__tcp_hdr ctl;
	uint8_t ctl_payload[RDMX__TCP_HELLO_LEN > RDMX__TCP_PD_MAX ? RDMX__TCP_HELLO_LEN
	                                                           : RDMX__TCP_PD_MAX];

	/* initiator: send-side tasks in order; [head, cur) sent and unanswered */
	struct rdmx_task *sq_head, *sq_cur, *sq_tail;
	uint32_t sq_count;
	uint32_t next_psn;
	bool rnr_wait;
	bool rewind_pending;
	uint8_t rnr_tries;
	uint32_t rnr_backoff_us;
	uint64_t rnr_deadline;

	/* target */
	uint32_t expect_psn;
	bool rnr_discard; /* go-back-N: drop requests until rnr_psn comes again */
	uint32_t rnr_psn;
	struct tcp_resp *resp; /* responses in request order: a ring of resp_mask + 1 (a
	                        * power of two) entries, at most resp_cap of them used */
	uint32_t resp_cap, resp_mask, resp_head, resp_count;
	uint32_t peer_depth;

	struct tcp_tx tx;
	struct tcp_rx rx;
	bool dirty; /* in tc->dirty: answers queued, to send after the callbacks */
	struct tcp_conn *next_dirty;
	struct tcp_conn *next; /* in tc->conns */
	struct tcp_conn *pend_next;
};

struct tcp_conn *rdmx__tcp_conn_create(struct tcp_ctx *tc, struct rdmx_conn *conn);
/* Links a new conn into its context / unlinks it (lock held). */
int rdmx__tcp_conn_link(struct tcp_ctx *tc, struct tcp_conn *c);
void rdmx__tcp_conn_unlink(struct tcp_ctx *tc, struct tcp_conn *c);
/* No-delay and keepalive on a data socket. */
void rdmx__tcp_data_sockopts(int fd);
void rdmx__tcp_fill_addr(struct rdmx_addr *a, const struct sockaddr_storage *ss, socklen_t len);
/* A handshake control frame announcing our initial psn and queue depth. */
void rdmx__tcp_ctl_handshake(struct tcp_conn *c, uint8_t op, const void *payload, uint32_t len);
/* Starts a non-blocking connect to c->peer (lock held); failures become the
 * failure event, never a synchronous error. */
void rdmx__tcp_dial(struct tcp_conn *c);
bool rdmx__tcp_depth_ok(uint64_t depth);
void rdmx__tcp_conn_free(struct tcp_conn *c);
/* Wire established: buffers, ESTABLISHED event, queued tasks start. */
int rdmx__tcp_conn_up(struct tcp_conn *c, uint32_t peer_psn, uint32_t peer_depth);
/* RC error: fails the oldest task with head_status, the others with
 * RDMX_E_CONN_ABORTED; frame != 0 sends an ERROR frame; close drops the
 * socket (protocol violations: the stream is out of sync). */
void rdmx__tcp_conn_error(struct tcp_conn *c, int head_status, uint16_t frame, bool close_fd);
/* The wire is gone: tasks flushed with `status`, final event pending. */
void rdmx__tcp_conn_down(struct tcp_conn *c, int status, enum rdmx__conn_event ev);
void rdmx__tcp_conn_close_fd(struct tcp_conn *c);
/* Sets a control frame to send (replaces an unsent one). */
void rdmx__tcp_conn_ctl(struct tcp_conn *c, uint8_t op, uint16_t status, const void *payload,
                        uint32_t len);
/* Handshake answers arriving on the wire (rx.c). */
void rdmx__tcp_conn_handshake(struct tcp_conn *c, const struct rdmx__tcp_hdr *h,
                              const uint8_t *payload);
/* The TCP connect finished (writable socket in TC_DIALING). */
void rdmx__tcp_conn_dialed(struct tcp_conn *c);
void rdmx__tcp_conn_timer(struct tcp_conn *c, uint64_t now);
/* The peer showed life (bytes moved either way): restarts the transport
 * timeout (lock held). */
void rdmx__tcp_conn_alive(struct tcp_conn *c);
/* cm listener became readable / a cm request socket became readable. */
void rdmx__tcp_cm_accept(struct tcp_ctx *tc);
/* Puts a resting cm listener back in its sets once its rest is over, else
 * keeps its timer (lock held; run_timers). */
void rdmx__tcp_cm_resume(struct tcp_ctx *tc, uint64_t now);
void rdmx__tcp_cmreq_read(struct tcp_ctx *tc, struct tcp_cmreq *r);
void rdmx__tcp_cmreq_free(struct tcp_ctx *tc, struct tcp_cmreq *r);
/* Delivers a queued cm request (ctx_poll, no lock held). */
void rdmx__tcp_cm_deliver(struct tcp_ctx *tc, struct tcp_cmreq *r);
/* NIC thread: a hello matched an exported connection's token. Device lock
 * held; takes the context lock. Consumes fd. */
void rdmx__tcp_conn_attach(struct tcp_conn *c, int fd, const struct rdmx__tcp_hdr *h,
                           const uint8_t *payload);
void rdmx__tcp_pending_del(struct tcp_dev *td, struct tcp_conn *c);
/* Aborts every send-side task (first one with head_status). True when a
 * request was cut in its payload: the stream cannot go on (its frame can
 * neither be finished nor dropped), close it. */
bool rdmx__tcp_conn_flush_tasks(struct tcp_conn *c, int head_status, int rest_status);

/* ---- wire engine (rx.c, tx.c) ---- */

/* Reads and handles frames (lock held). Returns bytes read. */
size_t rdmx__tcp_rx_serve(struct tcp_conn *c, size_t budget);
/* ctx_wait_read's read (context lock held): one blocking recv of the
 * connection into its stage, for up to TCP_WAIT_READ_US (the socket's
 * receive timeout, set at the first such read; every other read passes
 * MSG_DONTWAIT); the next serve frames the staged bytes (without a recv of
 * its own when they were a short read). 1: bytes came,
 * or the stream ended (handled as rx_serve does); 0: the time ran out, or
 * the connection cannot be read this way now (sealed, a payload going
 * straight to its destination, bytes still staged). */
int rdmx__tcp_rx_wait(struct tcp_conn *c);
/* Sends whatever is queued until the socket is full (lock held). */
void rdmx__tcp_tx_flush(struct tcp_conn *c);
/* Queues a light message's frame (engine/msg.h) behind the frames queued,
 * its bytes copied (lock held). False when it cannot go now: a request is
 * unanswered or not yet on the wire, the frame queue is full, or the
 * connection is not up. */
bool rdmx__tcp_tx_msg(struct tcp_conn *c, const struct rdmx_buf *src, const struct rdmx_rbuf *dst,
                      uint32_t imm, uint32_t len);
/* A light message sent at once, from the stack, in one send() (lock held):
 * when nothing is queued or owed before it and the socket took the last
 * bytes, the common case of a ping-pong. What the socket does not take is
 * queued as its frame (the flush sends it on EPOLLOUT). False, with nothing
 * done: use rdmx__tcp_tx_msg (something goes first, or it cannot go now). */
bool rdmx__tcp_tx_msg_now(struct tcp_conn *c, const struct rdmx_buf *src,
                          const struct rdmx_rbuf *dst, uint32_t imm, uint32_t len);
bool rdmx__tcp_tx_pending(const struct tcp_conn *c);
void rdmx__tcp_tx_reset(struct tcp_conn *c);
/* RNR timer: go back to the oldest unanswered request. */
void rdmx__tcp_tx_rewind(struct tcp_conn *c);
/* Queues the conn for a flush at the end of the current serve / poll. */
void rdmx__tcp_conn_dirty(struct tcp_conn *c);
void rdmx__tcp_ctx_flush_dirty(struct tcp_ctx *tc);
/* The tasks are completing early: stop referencing them. True when the one
 * under transmission was cut in its payload (the stream must close). */
bool rdmx__tcp_tx_forget_task(struct tcp_conn *c);
void rdmx__tcp_rx_forget_task(struct tcp_conn *c, int status);
struct tcp_resp *rdmx__tcp_resp_push(struct tcp_conn *c);
/* Sets the epoll interest of the connection's socket. */
void rdmx__tcp_conn_want(struct tcp_conn *c, bool out);
void rdmx__tcp_conn_rnr_timer(struct tcp_conn *c);

/* ---- ops (device.c, mr.c, ctx.c, conn.c, cm.c, ops.c; the table is in ops.c) ---- */

int rdmx__tcp_dev_list(struct rdmx_dev_info *infos, size_t max, size_t *count);
int rdmx__tcp_dev_open(struct rdmx_dev *dev, const char *ip);
void rdmx__tcp_dev_close(struct rdmx_dev *dev);
int rdmx__tcp_dev_query_caps(const struct rdmx_dev *dev, struct rdmx_dev_caps *caps);
int rdmx__tcp_dev_get_gid(const struct rdmx_dev *dev, uint32_t index, uint8_t gid[16]);
int rdmx__tcp_dev_find_by_addr(const char *ip, char name[RDMX_DEV_NAME_MAX]);
int rdmx__tcp_listen_socket(const struct sockaddr_storage *ss, socklen_t len, int backlog);
int rdmx__tcp_mr_reg(struct rdmx_mr *mr);
void rdmx__tcp_mr_dereg(struct rdmx_mr *mr);
int rdmx__tcp_mr_grant(struct rdmx_mr_grant *grant);
void rdmx__tcp_mr_revoke(struct rdmx_mr_grant *grant);
int rdmx__tcp_ctx_start(struct rdmx_ctx *ctx);
void rdmx__tcp_ctx_stop(struct rdmx_ctx *ctx);
int rdmx__tcp_ctx_get_fd(struct rdmx_ctx *ctx);
int rdmx__tcp_ctx_arm(struct rdmx_ctx *ctx);
int rdmx__tcp_ctx_wait_read(struct rdmx_ctx *ctx);
int rdmx__tcp_ctx_disarm(struct rdmx_ctx *ctx);
int rdmx__tcp_ctx_poll(struct rdmx_ctx *ctx, unsigned budget);
int rdmx__tcp_conn_export(struct rdmx_conn *conn, void *details, size_t *len);
int rdmx__tcp_conn_connect(struct rdmx_conn *conn, const void *details, size_t len);
int rdmx__tcp_listen(struct rdmx_ctx *ctx, uint16_t port);
void rdmx__tcp_stop_listen(struct rdmx_ctx *ctx);
int rdmx__tcp_listen_join(struct rdmx_ctx *ctx, struct rdmx_ctx *listener);
/* Leaves the listen group (a member at stop, the listener at stop_listen);
 * called without the group's lock, and for a member without its own lock. */
void rdmx__tcp_lgroup_leave(struct tcp_ctx *tc);
int rdmx__tcp_connect_to_addr(struct rdmx_conn *conn, const struct rdmx_addr *addr, const void *pd,
                              size_t pd_len);
int rdmx__tcp_conn_accept(struct rdmx_conn *conn, const void *pd, size_t pd_len);
int rdmx__tcp_conn_reject(struct rdmx_conn *conn);
int rdmx__tcp_conn_disconnect(struct rdmx_conn *conn);
int rdmx__tcp_conn_set_keys(struct rdmx_conn *conn, const struct rdmx_conn_keys *keys);
void rdmx__tcp_conn_release(struct rdmx_conn *conn);
int rdmx__tcp_post_recv(struct rdmx_ctx *ctx, struct rdmx_task *task);
int rdmx__tcp_post_send(struct rdmx_conn *conn, struct rdmx_task *task);
int rdmx__tcp_post_msg(struct rdmx_conn *conn, const struct rdmx_buf *src,
                       const struct rdmx_rbuf *dst, uint32_t imm, uint32_t len);

#define TCP_CTX(ctx) ((struct tcp_ctx *)(ctx)->prov)
#define TCP_DEV(dev) ((struct tcp_dev *)(dev)->prov)
#define TCP_CONN(conn) ((struct tcp_conn *)(conn)->prov)

#endif
