#include <string.h>

#include "ev_thread.h"

static void stop_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	struct rdmx_test_ev_thread *t = (struct rdmx_test_ev_thread *)w->data;

	(void)revents;
	if (t->teardown)
		t->teardown(loop, t->arg);
	ev_async_stop(loop, w);
	ev_break(loop, EVBREAK_ALL);
}

static void *loop_main(void *arg)
{
	struct rdmx_test_ev_thread *t = arg;
	int rc = t->setup ? t->setup(t->loop, t->arg) : 0;

	pthread_mutex_lock(&t->lock);
	t->rc = rc;
	t->ready = 1;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	if (!rc)
		ev_run(t->loop, 0);
	return NULL;
}

static void finish(struct rdmx_test_ev_thread *t)
{
	pthread_join(t->thread, NULL);
	ev_loop_destroy(t->loop);
	t->loop = NULL;
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	t->started = 0;
}

int rdmx_test_ev_thread_start(struct rdmx_test_ev_thread *t,
                              int (*setup)(struct ev_loop *loop, void *arg),
                              void (*teardown)(struct ev_loop *loop, void *arg), void *arg)
{
	int rc;

	memset(t, 0, sizeof(*t));
	t->setup = setup;
	t->teardown = teardown;
	t->arg = arg;
	t->loop = ev_loop_new(EVFLAG_AUTO);
	if (!t->loop)
		return -1;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	ev_async_init(&t->stop, stop_cb);
	t->stop.data = t;
	ev_async_start(t->loop, &t->stop);
	if (pthread_create(&t->thread, NULL, loop_main, t)) {
		ev_loop_destroy(t->loop);
		t->loop = NULL;
		return -1;
	}
	t->started = 1;
	pthread_mutex_lock(&t->lock);
	while (!t->ready)
		pthread_cond_wait(&t->cond, &t->lock);
	rc = t->rc;
	pthread_mutex_unlock(&t->lock);
	if (rc) {
		/* the loop never ran: teardown is setup's to undo */
		if (t->teardown)
			t->teardown(t->loop, t->arg);
		finish(t);
	}
	return rc;
}

void rdmx_test_ev_thread_stop(struct rdmx_test_ev_thread *t)
{
	if (!t || !t->started)
		return;
	ev_async_send(t->loop, &t->stop);
	finish(t);
}
