/* Threading: a device may be shared by contexts on different threads, each
 * thread driving its own progress engines (dev.h, pe.h). Two threads each run
 * a pair of contexts on the same two devices and move data concurrently.
 * Set-up and checks run on the test's thread; the workers only call the
 * engine and record what went wrong (Criterion asserts stay on one thread). */
#include "conformance.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NWORKERS 2
#define ROUNDS 300
#define CHUNK 8192

struct worker {
	struct side a, b;
	struct rdmx_conn *ca, *cb;
	struct region *ra, *rb;
	struct rdmx_mr_remote *m;
	int index;
	int rounds_done;
	char failed[200];
};

static struct side A, B;
static struct worker W[NWORKERS];

static bool wait_done(struct worker *w, struct tinfo *ti, int want)
{
	uint64_t deadline = now_ms() + GUARD_MS;
	while (TI_DONE(ti) < want) {
		if (now_ms() > deadline)
			return false;
		int n = rdmx_pe_progress(w->a.pe) + rdmx_pe_progress(w->b.pe);
		if (n == 0)
			usleep(20);
	}
	return true;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct rdmx_buf s = lbuf(w->rb, 0, CHUNK), back = lbuf(w->rb, CHUNK, CHUNK);
	struct rdmx_buf rd = lbuf(w->ra, CHUNK, 64), sm = lbuf(w->rb, 2 * CHUNK, 64);
	struct rdmx_rbuf dst = rbuf(w->m, 0, 0), src = rbuf(w->m, 0, CHUNK);
	struct tinfo tw = {0}, trd = {0}, tr = {0}, ts = {0};
	struct rdmx_task *wt = NULL, *rt = NULL, *recv = NULL, *snd = NULL;
	if (rdmx_task_write_alloc(w->b.ctx, w->cb, &s, &dst, &tw, &wt) ||
	    rdmx_task_read_alloc(w->b.ctx, w->cb, &src, &back, &trd, &rt) ||
	    rdmx_task_receive_alloc(w->a.ctx, &rd, &tr, &recv) ||
	    rdmx_task_send_alloc(w->b.ctx, w->cb, &sm, &ts, &snd)) {
		snprintf(w->failed, sizeof(w->failed), "task allocation failed");
		return NULL;
	}
	for (int i = 1; i <= ROUNDS; i++) {
		uint32_t seed = (uint32_t)(w->index * 100000 + i);
		pattern_fill(w->rb->mem, CHUNK, seed);
		memcpy(w->rb->mem + 2 * CHUNK, &seed, 4);
		if (rdmx_task_submit(recv) || rdmx_task_submit(wt) || rdmx_task_submit(rt) ||
		    rdmx_task_submit(snd)) {
			snprintf(w->failed, sizeof(w->failed), "round %d: submit failed", i);
			return NULL;
		}
		if (!wait_done(w, &tw, i) || !wait_done(w, &trd, i) || !wait_done(w, &ts, i) ||
		    !wait_done(w, &tr, i)) {
			snprintf(w->failed, sizeof(w->failed), "round %d: timed out", i);
			return NULL;
		}
		if (tw.ok != i || trd.ok != i || ts.ok != i || tr.ok != i) {
			snprintf(w->failed, sizeof(w->failed),
			         "round %d: write %s read %s send %s recv %s", i,
			         rdmx_err_name(tw.status), rdmx_err_name(trd.status),
			         rdmx_err_name(ts.status), rdmx_err_name(tr.status));
			return NULL;
		}
		uint32_t got;
		memcpy(&got, w->ra->mem + CHUNK, 4);
		if (!pattern_check(w->ra->mem, CHUNK, seed) ||
		    !pattern_check(w->rb->mem + CHUNK, CHUNK, seed) || got != seed ||
		    tr.conn != w->ca) {
			snprintf(w->failed, sizeof(w->failed), "round %d: wrong data", i);
			return NULL;
		}
		w->rounds_done = i;
	}
	return NULL;
}

TestSuite(threads, .timeout = 180);

Test(threads, contexts_on_shared_devices_in_parallel)
{
	leak_begin();
	side_open(&A, "a", 0);
	side_open(&B, "b", 1);
	for (int i = 0; i < NWORKERS; i++) {
		struct worker *w = &W[i];
		w->index = i;
		side_attach(&w->a, "wa", &A, NULL);
		side_attach(&w->b, "wb", &B, NULL);
		side_conf(&w->a, 4);
		side_conf(&w->b, 4);
		side_start(&w->a);
		side_start(&w->b);
		connect_pair(&w->a, &w->b, &w->ca, &w->cb);
		w->ra = region_new(&w->a, 2 * CHUNK, RDMX_ACCESS_ALL, 0);
		w->rb = region_new(&w->b, 3 * CHUNK, RDMX_ACCESS_ALL, 0);
		w->m = remote_of(&w->b, w->ra);
	}
	pthread_t th[NWORKERS];
	for (int i = 0; i < NWORKERS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, worker_main, &W[i]), 0);
	for (int i = 0; i < NWORKERS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < NWORKERS; i++) {
		cr_assert_eq(W[i].failed[0], 0, "worker %d: %s", i, W[i].failed);
		cr_assert_eq(W[i].rounds_done, ROUNDS);
	}
	for (int i = 0; i < NWORKERS; i++) {
		ASSERT_OK(rdmx_ctx_stop(W[i].a.ctx));
		ASSERT_OK(rdmx_ctx_stop(W[i].b.ctx));
	}
	for (int i = 0; i < NWORKERS; i++) {
		side_close(&W[i].a);
		side_close(&W[i].b);
	}
	side_close(&A);
	side_close(&B);
	leak_end();
}
