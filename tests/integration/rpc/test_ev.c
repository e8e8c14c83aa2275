/* The libev adapter: an RPC server inside a libev loop (its own thread, the
 * loop owning that node's progress engine), called by a client that blocks
 * in rdmx_rpc_call; then a client inside a loop whose deadline must fire
 * with no traffic at all (the adapter's timer). */
#include "rpcfix.h"

#ifdef RDMX_TEST_HAVE_EV
#include <ev.h>
#include <pthread.h>
#include <string.h>

#include <rdmx/ev.h>

struct loop_thread {
	struct ev_loop *loop;
	ev_async stop;
	pthread_t th;
};

static void on_stop(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

static void *loop_main(void *p)
{
	struct loop_thread *lt = p;

	ev_run(lt->loop, 0);
	return NULL;
}

Test(ev, rpc_server_in_libev_loop, .timeout = 300)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct rdmx_ev *ev = NULL;
	struct loop_thread lt;
	struct rdmx_rpc_reply rep;
	char buf[20000];

	echo_pair_open(&a, &b, NULL, &st, &srv, &ra, &rb);
	/* from here on only the loop's thread touches b */
	lt.loop = ev_loop_new(EVFLAG_AUTO);
	cr_assert_not_null(lt.loop);
	ASSERT_OK(rdmx_ev_attach(lt.loop, b.pe, &ev));
	ev_async_init(&lt.stop, on_stop);
	ev_async_start(lt.loop, &lt.stop);
	cr_assert_eq(pthread_create(&lt.th, NULL, loop_main, &lt), 0);

	pattern_fill(buf, sizeof(buf), 9);
	for (int i = 0; i < 200; i++) {
		size_t len = (size_t)(i * 97) % sizeof(buf) + 1; /* eager and rendezvous */
		struct rdmx_rpc_payload p = rdmx_rpc_bytes(buf, len);

		ASSERT_OK(rdmx_rpc_call(ra, rdmx_rpc_method_id(ECHO_NAME), &p, NULL, &rep));
		cr_assert_eq(rep.code, RDMX_RPC_OK);
		cr_assert_eq(rep.len, len);
		cr_assert(memcmp(rep.data, buf, len) == 0);
		rdmx_rpc_reply_fini(&rep);
	}
	/* a held call: the server's own deadline timer fires from the loop */
	struct rdmx_rpc_call_opts o = {.timeout_us = 40000};
	ASSERT_OK(rdmx_rpc_call(ra, rdmx_rpc_method_id(HOLD_NAME), NULL, &o, &rep));
	cr_assert_eq(rep.code, RDMX_RPC_DEADLINE_EXCEEDED);
	rdmx_rpc_reply_fini(&rep);
	uint64_t guard = now_ms() + GUARD_MS;
	while (__atomic_load_n(&st.cancels, __ATOMIC_ACQUIRE) < 1) {
		cr_assert(now_ms() < guard, "the server never saw the deadline");
		rdmx_chan_worker_progress(a.worker);
	}
	ev_async_send(lt.loop, &lt.stop);
	pthread_join(lt.th, NULL);
	ASSERT_OK(rdmx_ev_detach(&ev));
	cr_assert_null(ev);
	ev_loop_destroy(lt.loop);
	cr_assert_eq(st.echoed, 200);
	for (uint32_t i = 0; i < st.held_n; i++)
		rdmx_rpc_respond(st.held[i], RDMX_RPC_OK, NULL, NULL);
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

struct ev_client {
	struct ev_loop *loop;
	int done;
	enum rdmx_rpc_code code;
};

static void ev_client_done(const struct rdmx_rpc_result *r, void *arg)
{
	struct ev_client *c = arg;

	c->done++;
	c->code = r->code;
	ev_break(c->loop, EVBREAK_ALL);
}

Test(ev, client_deadline_fires_from_loop_timer, .timeout = 120)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct rdmx_ev *ev = NULL;
	struct ev_client c = {0};
	struct rdmx_rpc_call_opts o = {.timeout_us = 30000};

	echo_pair_open(&a, &b, NULL, &st, &srv, &ra, &rb);
	/* the server takes the call and holds it, then nobody sends anything */
	c.loop = ev_loop_new(EVFLAG_AUTO);
	ASSERT_OK(rdmx_ev_attach(c.loop, a.pe, &ev));
	ASSERT_OK(rdmx_rpc_call_async(ra, rdmx_rpc_method_id(HOLD_NAME), NULL, &o, ev_client_done,
	                              &c, NULL));
	DRIVE_UNTIL(NULL, &b, st.held_n == 1); /* only b progresses: a's loop is not running */
	uint64_t t0 = now_ms();
	ev_run(c.loop, 0); /* returns from ev_client_done */
	cr_assert_eq(c.done, 1);
	cr_assert_eq(c.code, RDMX_RPC_DEADLINE_EXCEEDED);
	cr_assert(now_ms() - t0 < GUARD_MS);
	ASSERT_OK(rdmx_ev_detach(&ev));
	ev_loop_destroy(c.loop);
	rdmx_rpc_respond(st.held[0], RDMX_RPC_OK, NULL, NULL);
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}
#endif
