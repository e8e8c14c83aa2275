/* rdmx engine conformance battery: shared fixture.
 *
 * Written once against the public API and run per device: the environment
 * picks the two devices (RDMX_TEST_DEVICE, RDMX_TEST_PEER_DEVICE; default
 * "tcp") and their addresses (RDMX_TEST_ADDR, RDMX_TEST_PEER_ADDR; default
 * 127.0.0.1). Side "a" opens RDMX_TEST_DEVICE, side "b" the peer device.
 *
 * Every wait goes through DRIVE_UNTIL, which progresses both sides until a
 * condition holds; its timeout (GUARD_MS) is only a failure guard, never a
 * timing assertion. */
#ifndef RDMX_CONFORMANCE_H
#define RDMX_CONFORMANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include <rdmx/rdmx.h>

#define GUARD_MS 20000

/* assertions that name the expression and the status: ASSERT_OK, ASSERT_RC,
 * ASSERT_RC2; deterministic payloads (tests/support) */
#include "test_assert.h"
#include "test_pattern.h"

/* ---- per-task completion record (the task's user data) ---- */

struct tinfo {
	int ok, err; /* how many times each callback ran for this task */
	int status;  /* rdmx_task_get_status() seen in the callback */
	int seq;     /* completion sequence number on its side */
	int tag;     /* caller's label (e.g. submission index) */
	bool bad;    /* ok_cb with status != 0 or err_cb with status == 0 */
	/* receive results, captured in the callback */
	enum rdmx_opcode opcode;
	uint32_t len;
	uint32_t imm;
	struct rdmx_conn *conn;
	/* read / sync_event_get result length */
	uint32_t read_len;
};

#define TI_DONE(ti) ((ti)->ok + (ti)->err)

#define ASSERT_DONE_OK(ti)                                                                         \
	do {                                                                                       \
		const struct tinfo *_t = (ti);                                                     \
		cr_assert(_t->ok == 1 && _t->err == 0 && _t->status == 0 && !_t->bad,              \
		          "%s: completed ok=%d err=%d times, status %s", #ti, _t->ok, _t->err,     \
		          rdmx_err_name(_t->status));                                              \
	} while (0)

#define ASSERT_DONE_ERR(ti, code)                                                                  \
	do {                                                                                       \
		const struct tinfo *_t = (ti);                                                     \
		int _want = (code);                                                                \
		cr_assert(_t->ok == 0 && _t->err == 1 && _t->status == _want && !_t->bad,          \
		          "%s: completed ok=%d err=%d times, status %s, expected one error "       \
		          "completion with %s",                                                    \
		          #ti, _t->ok, _t->err, rdmx_err_name(_t->status), rdmx_err_name(_want));  \
	} while (0)

/* ---- one side: device + progress engine + context ---- */

enum req_policy { REQ_ACCEPT = 0, REQ_REJECT, REQ_HOLD };

#define SIDE_MAX_REGIONS 64
#define SIDE_MAX_REMOTES 64
#define SIDE_MAX_ORDER 4096
#define SIDE_MAX_CONN_EVENTS 64

enum conn_ev_kind { CEV_REQUEST, CEV_ESTABLISHED, CEV_FAILURE, CEV_DISCONNECTED };

struct conn_ev {
	enum conn_ev_kind kind;
	struct rdmx_conn *conn;
	void *conn_ud;
	uint32_t id;
	int completions; /* side's task completions when the event ran */
};

struct region;
struct side;

typedef void (*side_hook)(struct side *s, struct rdmx_task *task, struct tinfo *ti, bool ok);

struct side {
	const char *name;    /* "a" or "b" (or whatever the test calls it) */
	const char *devname; /* device name asked for */
	const char *addr;    /* the device's IP address */
	bool tcp;            /* provider is tcp */
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_dev_caps caps;
	bool own_dev, own_pe; /* side_close closes/destroys only what the side opened */

	/* task completions */
	int completions, oks, errs;
	struct tinfo *order[SIDE_MAX_ORDER]; /* completion order (NULL user data too) */
	int norder;
	side_hook hook; /* optional: runs after the record is updated */
	void *hook_arg;

	/* connection events */
	int requests, established, failures, disconnects;
	struct conn_ev events[SIDE_MAX_CONN_EVENTS];
	int nevents;
	enum req_policy policy;
	uint8_t accept_pd[RDMX_PRIVATE_DATA_MAX + 8];
	size_t accept_pd_len;
	void *accept_ud;        /* user data set on accepted connections */
	int accept_rc;          /* rdmx_conn_accept / reject result in the request callback */
	struct rdmx_conn *held; /* REQ_HOLD: the last request */
	/* private data seen in the last request (server) / established (client) */
	uint8_t req_pd[RDMX_PRIVATE_DATA_MAX + 8];
	size_t req_pd_len;
	int req_pd_rc;
	uint8_t est_pd[RDMX_PRIVATE_DATA_MAX + 8];
	size_t est_pd_len;
	int est_pd_rc;

	/* resources closed by side_close */
	struct region *regions[SIDE_MAX_REGIONS];
	int nregions;
	struct rdmx_mr_remote *remotes[SIDE_MAX_REMOTES];
	int nremotes;
};

/* A registered buffer owned by a side. */
struct region {
	struct side *owner;
	uint8_t *mem;
	size_t len;
	unsigned access;
	struct rdmx_mr *mr;
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
};

/* ---- environment ---- */

#include "test_env.h" /* env_device, env_addr (tests/support) */

#include "test_leak.h" /* leak_begin, leak_end (tests/support) */

/* ---- sides ---- */

/* Opens device `which` (0/1), a progress engine and an IDLE context with the
 * side as ctx user data and the recording connection callbacks. */
void side_open(struct side *s, const char *name, int which);
/* A side on an already open device (and progress engine, when pe is not
 * NULL): creates what is missing and an IDLE context; side_close leaves the
 * borrowed objects to their owner (close that side last). */
void side_attach(struct side *s, const char *name, struct side *dev_owner, struct rdmx_pe *pe);
/* Opens only the device (for tests that create their own objects). */
int side_open_dev(int which, struct rdmx_dev **dev);
/* Configures every task type with num_tasks tasks and the recording callbacks,
 * queue sizes (1024 send, 256 recv, within caps) and 16 max connections. */
void side_conf(struct side *s, uint32_t num_tasks);
void side_start(struct side *s);
/* Stops (if running), deletes remotes, deregisters regions, destroys the
 * context and progress engine, closes the device; asserts every call is 0. */
void side_close(struct side *s);

/* Open + conf + start both sides; close both (stop both first). */
void pair_open(struct side *a, struct side *b, uint32_t num_tasks);
void pair_close(struct side *a, struct side *b);
/* a on device 0, a2 a second context on a's device and engine, b on device
 * 1, all configured with num_tasks; none started. Close a2 before a. */
void trio_open(struct side *a, struct side *a2, struct side *b, uint32_t num_tasks);

/* ---- memory ---- */

/* Registers len bytes (64-aligned, filled with `fill`) with access flags. */
struct region *region_new(struct side *s, size_t len, unsigned access, uint8_t fill);
/* Deregisters now (the memory stays allocated until side_close). */
void region_dereg(struct region *r);
/* The peer's handle on r, built from its descriptor (deleted at side_close). */
struct rdmx_mr_remote *remote_of(struct side *user, const struct region *r);
/* Same from raw descriptor bytes (e.g. corrupted). */
struct rdmx_mr_remote *remote_from_desc(struct side *user, const void *desc);

static inline struct rdmx_buf lbuf(struct region *r, size_t off, size_t len)
{
	struct rdmx_buf b = {.mr = r->mr, .addr = r->mem + off, .len = len, .next = NULL};
	return b;
}

static inline struct rdmx_rbuf rbuf(struct rdmx_mr_remote *m, uint64_t off, uint64_t len)
{
	struct rdmx_rbuf b = {.mr = m, .offset = off, .len = len};
	return b;
}

/* ---- connections ---- */

enum rdmx_conn_state conn_state(const struct rdmx_conn *c);
/* export/connect both ways and drive until both ESTABLISHED. */
void connect_pair(struct side *a, struct side *b, struct rdmx_conn **ca, struct rdmx_conn **cb);
/* b writes len bytes (at most 4096) of pattern `seed` on cb into a fresh
 * region of a and the data is checked there: the connection carries
 * traffic. */
void write_checked(struct side *a, struct side *b, struct rdmx_conn *cb, size_t len, uint32_t seed);
/* The one-sided set-up: pair_open(a, b, num_tasks), one connection (*ca on
 * a, *cb on b), a zeroed 4096-byte region on a with every access (*ra) and
 * one on b for local writes (*rb); returns b's view of a's region. */
struct rdmx_mr_remote *pair_one_sided(struct side *a, struct side *b, uint32_t num_tasks,
                                      struct rdmx_conn **ca, struct rdmx_conn **cb,
                                      struct region **ra, struct region **rb);
/* Listens on `srv` on a free port (returns it). */
uint16_t listen_any(struct side *srv);
/* rdmx_addr for side s's address at port. Caller destroys it. */
struct rdmx_addr *addr_of(struct side *s, uint16_t port);
/* cm flow: srv listens (if port == 0), cli connects with pd/ud; drives until
 * both established. Returns the server-side and client-side conns. */
void cm_pair(struct side *srv, struct side *cli, const void *pd, size_t pd_len, void *ud,
             struct rdmx_conn **sconn, struct rdmx_conn **cconn);

/* Count of events of a kind on conn (NULL: any conn). */
int conn_events(const struct side *s, enum conn_ev_kind kind, const struct rdmx_conn *conn);
/* The connection of the side's latest event of a kind (NULL: none yet). */
struct rdmx_conn *latest_conn(const struct side *s, enum conn_ev_kind kind);

/* ---- driving ---- */

uint64_t now_ms(void);
/* One round of progress on each non-NULL side; sleeps a little when idle. */
void drive_once(struct side *a, struct side *b, struct side *c);
/* Progresses a and b (b may be NULL) until pred(arg) or timeout_ms; returns
 * whether pred held. */
bool drive(struct side *a, struct side *b, bool (*pred)(void *), void *arg, int timeout_ms);
/* Progresses for ms milliseconds (an observation window, not a timing check). */
void drive_for(struct side *a, struct side *b, struct side *c, int ms);

#define DRIVE_UNTIL3(a, b, c, cond) TEST_DRIVE_UNTIL(cond, drive_once((a), (b), (c)))
#define DRIVE_UNTIL(a, b, cond) DRIVE_UNTIL3(a, b, NULL, cond)

/* ---- tasks ---- */

/* Submit and drive until the task's record shows a completion. */
void submit_wait(struct side *a, struct side *b, struct rdmx_task *t, struct tinfo *ti);
/* Allocates and submits a receive into dst (caller storage that must outlive
 * the task) with record ti. Returns the task. */
struct rdmx_task *post_recv(struct side *s, struct rdmx_buf *dst, struct tinfo *ti);

/* Skips the test when the device lacks atomics. */
void require_atomics(const struct side *s);

#endif
