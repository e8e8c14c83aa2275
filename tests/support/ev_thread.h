/* A libev loop on its own thread, for tests that run a server beside the
 * client code of the test: setup runs on the loop thread before the loop,
 * the test waits for its result, and stop runs teardown on the loop thread
 * (so servers are destroyed by the thread that drives them), then ends the
 * loop, joins the thread and destroys the loop. */
#ifndef RDMX_TEST_EV_THREAD_H
#define RDMX_TEST_EV_THREAD_H

#include <pthread.h>

#include <ev.h>

struct rdmx_test_ev_thread {
	struct ev_loop *loop; /* the servers' loop: valid from start to stop */
	/* private */
	ev_async stop;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int ready, rc, started;
	int (*setup)(struct ev_loop *loop, void *arg);
	void (*teardown)(struct ev_loop *loop, void *arg);
	void *arg;
};

/* Creates the loop and the thread, which runs setup(loop, arg) (may be NULL)
 * and, when it returned 0, the loop. Returns setup's result once it is known;
 * on a failure the thread has ended and the fixture is stopped. */
int rdmx_test_ev_thread_start(struct rdmx_test_ev_thread *t,
                              int (*setup)(struct ev_loop *loop, void *arg),
                              void (*teardown)(struct ev_loop *loop, void *arg), void *arg);
/* teardown(loop, arg) (may be NULL) on the loop thread, then the loop ends,
 * the thread is joined and the loop destroyed. A fixture never started or
 * already stopped: no-op. */
void rdmx_test_ev_thread_stop(struct rdmx_test_ev_thread *t);

#endif
