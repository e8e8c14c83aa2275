/* rdmx channel/RPC battery: shared fixture.
 *
 * Two "nodes" (device + progress engine + context + channel worker) in one
 * process, or one per process for the peer-death test. The devices come
 * from the environment, as in the engine's conformance battery:
 * RDMX_TEST_DEVICE / RDMX_TEST_PEER_DEVICE (default "tcp") and
 * RDMX_TEST_ADDR / RDMX_TEST_PEER_ADDR. Waits go through DRIVE_UNTIL, whose
 * timeout is only a failure guard, never a timing assertion. */
#ifndef RDMX_RPCFIX_H
#define RDMX_RPCFIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/types.h>

#include <criterion/criterion.h>

#include <rdmx/rdmx.h>
#include <rdmx/channel.h>
#include <rdmx/rpc.h>

#define GUARD_MS 60000

#include "test_assert.h"  /* ASSERT_OK, ASSERT_RC (tests/support) */
#include "test_pattern.h" /* pattern_fill/_check, checksum64 (tests/support) */

struct node {
	const char *name;
	int which;
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_chan_worker *worker;
	bool tcp;
};

#include "test_env.h" /* env_device, env_addr (tests/support) */

/* Opens device `which` (0/1), a progress engine (busy polling), a context
 * and a channel worker (attr may be NULL), and starts the context. */
void node_open(struct node *n, const char *name, int which,
               const struct rdmx_chan_worker_attr *attr);
/* Stops the context, destroys worker, context, engine, device. */
void node_close(struct node *n);

/* Channel settings applied before start (0 = default). */
struct chan_conf {
	uint32_t slot_count, slot_size;
	uint64_t max_msg;
	uint32_t queue_len;
	rdmx_chan_recv_cb recv_cb;
	rdmx_chan_event_cb event_cb;
	void *arg;
};

/* Connects a and b (export/connect), creates a channel on each side with
 * its conf (NULL: defaults, no callbacks), starts both and — when
 * wait_ready — drives until both are READY. */
void chan_pair(struct node *a, struct node *b, const struct chan_conf *ca,
               const struct chan_conf *cb, struct rdmx_chan **xa, struct rdmx_chan **xb,
               bool wait_ready);
/* The end of a test on one chan_pair: both channels destroyed, both nodes
 * closed. */
void chan_pair_close(struct rdmx_chan **xa, struct rdmx_chan **xb, struct node *a, struct node *b);
/* Raw connection pair only (export/connect); drives until both can post. */
void conn_pair(struct node *a, struct node *b, struct rdmx_conn **ca, struct rdmx_conn **cb);

/* An RPC endpoint on each side of a fresh channel pair (server may be NULL
 * on either side). Channel confs as chan_pair (callbacks ignored). */
void rpc_pair(struct node *a, struct node *b, struct rdmx_rpc_server *sa,
              struct rdmx_rpc_server *sb, const struct chan_conf *ca, const struct chan_conf *cb,
              struct rdmx_rpc_ep **ra, struct rdmx_rpc_ep **rb);
/* Destroys both endpoints and their channels. */
void rpc_pair_close(struct rdmx_rpc_ep **ra, struct rdmx_rpc_ep **rb);
/* The end of a test on one rpc_pair: rpc_pair_close, the server destroyed,
 * both nodes closed. */
void rpc_pair_close_all(struct rdmx_rpc_ep **ra, struct rdmx_rpc_ep **rb,
                        struct rdmx_rpc_server **srv, struct node *a, struct node *b);

/* One async call's record, filled by call_rec_cb (an rdmx_rpc_callback whose
 * argument is the record): its callback must run exactly once (done == 1).
 * want_* are the caller's expectations, left alone by call_rec_cb. */
struct call_rec {
	int done;
	enum rdmx_rpc_code code;
	char msg[128];
	size_t len;
	uint8_t first; /* first payload byte, 0 for none */
	uint64_t sum;  /* checksum64 of the payload */
	uint64_t want_sum;
	size_t want_len;
};
void call_rec_cb(const struct rdmx_rpc_result *r, void *arg);
/* How many callbacks ran over r[0..n). */
int call_recs_done(const struct call_rec *r, int n);

/* Echo server methods used across tests: "test.Echo/Echo" returns the
 * request, "test.Echo/Fail" answers NOT_FOUND with a message,
 * "test.Echo/Hold" keeps the call in held_calls (answered by the test). */
#define ECHO_NAME "test.Echo/Echo"
#define FAIL_NAME "test.Echo/Fail"
#define HOLD_NAME "test.Echo/Hold"
#define HELD_MAX 2048
struct echo_state {
	uint32_t echoed, failed, held_n, cancels;
	struct rdmx_rpc_server_call *held[HELD_MAX];
	uint64_t held_deadline[HELD_MAX];
};
struct rdmx_rpc_server *echo_server(struct echo_state *st);
/* Nodes a and b (worker attributes attr on both, may be NULL) and an
 * rpc_pair with default channels and server srv on b: a's endpoint *ra is
 * the client, b's *rb the server's. */
void server_pair_open(struct node *a, struct node *b, const struct rdmx_chan_worker_attr *attr,
                      struct rdmx_rpc_server *srv, struct rdmx_rpc_ep **ra,
                      struct rdmx_rpc_ep **rb);
/* The set-up of most tests: nodes a and b (worker attributes attr on both,
 * may be NULL), an echo server with state st (*srv) and an rpc_pair with
 * default channels, a's endpoint *ra the client, b's *rb the server's.
 * rpc_pair_close_all ends it. */
void echo_pair_open(struct node *a, struct node *b, const struct rdmx_chan_worker_attr *attr,
                    struct echo_state *st, struct rdmx_rpc_server **srv, struct rdmx_rpc_ep **ra,
                    struct rdmx_rpc_ep **rb);

/* The statuses a channel closes with when its peer went away: a disconnect
 * event (tcp, rdma_cm) or, where the transport gives none (verbs
 * export/connect), the failed probe or task (RC retries exhausted). */
static inline bool conn_lost_status(int st)
{
	return st == RDMX_E_DISCONNECTED || st == RDMX_E_CONN_ABORTED || st == RDMX_E_TIMEDOUT;
}

uint64_t now_ms(void);
void drive_once(struct node *a, struct node *b);

#define DRIVE_UNTIL(a, b, cond) TEST_DRIVE_UNTIL(cond, drive_once((a), (b)))

/* Observation window (not a timing check): drives for ms. */
void drive_for(struct node *a, struct node *b, int ms);

#include "test_leak.h" /* leak_begin, leak_end (tests/support) */

/* Counts log lines at ERROR that contain `needle` (installed by
 * log_capture_begin; restored by log_capture_end). */
void log_capture_begin(void);
int log_capture_count(const char *needle);
void log_capture_end(void);

/* Peer death: the server is another process (forked before the test opens
 * anything), with its own device 1, engine, context, worker and endpoint,
 * connected to node a by engine details swapped over a socketpair. The
 * child dies with the test (PR_SET_PDEATHSIG); it serves the server setup
 * filled and signals the test once when ready() says so. */
struct peer_proc {
	pid_t pid;
	int fd; /* the test's end of the socketpair */
	struct rdmx_chan *chan;
	struct rdmx_rpc_ep *ep; /* the test's endpoint to the child */
};
/* Child side: setup registers the child's methods (non-zero: the child
 * exits), ready is polled between progress rounds. */
void peer_proc_open(struct node *a, int (*setup)(struct rdmx_rpc_server *srv), bool (*ready)(void),
                    struct peer_proc *p);
/* Drives a until the child signalled ready (failure guard: `what`). */
void peer_proc_wait_ready(struct node *a, struct peer_proc *p, const char *what);
/* SIGKILL and reap the child. */
void peer_proc_kill(struct peer_proc *p);
/* Destroys the endpoint and channel, closes the socket. */
void peer_proc_close(struct peer_proc *p);

/* A node served on a thread of its own (one thread per node, as the
 * threading rule says): node_serve_start spawns a thread that drives n's
 * worker until node_serve_stop, which joins it. */
struct node_serve {
	struct node *n;
	volatile int stop;
	pthread_t th;
};
void node_serve_start(struct node_serve *s, struct node *n);
void node_serve_stop(struct node_serve *s);

#endif
