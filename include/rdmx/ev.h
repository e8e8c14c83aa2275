/* rdmx_ev: drive an rdmx progress engine from a libev loop (hiredis-style
 * adapter, its own library: the core never links libev).
 *
 *   struct rdmx_ev *ev;
 *   rdmx_ev_attach(EV_DEFAULT, pe, &ev);     // watches rdmx_pe_get_fd(pe)
 *                                            // and rdmx_pe_next_timeout_ms
 *   ev_run(EV_DEFAULT, 0);
 *   ...
 *   rdmx_ev_detach(&ev);
 *
 * How: the engine runs in notification mode. Before the loop sleeps (an
 * ev_prepare watcher) the adapter progresses until nothing is ready, arms
 * the notification (rdmx_pe_request_notification), checks once more (an
 * event that arrived before arming would not wake the fd) and sets an
 * ev_timer for the engine's nearest timer (rdmx_pe_next_timeout_ms: the
 * deadlines, keep-alives and liveness probes of every channel and RPC
 * endpoint on the engine). When the fd becomes readable it clears the
 * notification and progresses; when the timer fires it progresses, which
 * runs the due timers. Nothing to register beyond the engine. All callbacks of the engine,
 * channels and RPC run on the loop's thread, from inside ev_run.
 *
 * The work runs in the ev_prepare watcher, which libev runs on every
 * iteration whatever else is pending; an ev_idle watcher only keeps the loop
 * from sleeping while work is left (libev runs idle watchers only when no
 * other event is pending, so they may starve and must not carry work). An
 * idle engine costs no loop iterations: the loop sleeps until its fd, a
 * timer or another watcher wakes it.
 *
 * Deferred work (rdmx_ev_work_*): a callback the loop runs soon, outside
 * every engine, channel and RPC callback, where destroying an endpoint, a
 * channel or a connection's owner is safe. It runs from the prepare watcher
 * at the next iteration (the adapter keeps the loop awake until then), so
 * it cannot be starved by busy sockets or by other watchers, unlike an
 * application's own ev_idle. Typical use: a server marks a session dead in
 * a callback and schedules one work that frees every dead session.
 *
 * Threading: the loop's thread owns the progress engine (rdmx's rule: one
 * thread drives a progress engine); the rdmx_ev_work_* calls too. */
#ifndef RDMX_EV_H
#define RDMX_EV_H

struct ev_loop;

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_pe;
struct rdmx_ev;
struct rdmx_ev_work;

/* Counters of the adapter (monotonic since attach), for tests and
 * diagnostics: an idle engine's `iterations` stand still. */
struct rdmx_ev_stats {
	unsigned long long iterations;     /* loop iterations seen (prepare runs) */
	unsigned long long wakeups;        /* the engine's fd woke the loop */
	unsigned long long progress_calls; /* rdmx_pe_progress calls */
	unsigned long long works_run;      /* deferred work callbacks run */
};

/* A deferred work callback: `ev` is the adapter, `arg` the work's. */
typedef void (*rdmx_ev_work_cb)(struct rdmx_ev *ev, void *arg);

/* Errors: RDMX_E_INVAL, RDMX_E_NOMEM, or the engine's error for its fd. */
int rdmx_ev_attach(struct ev_loop *loop, struct rdmx_pe *pe, struct rdmx_ev **ev);
/* Stops the watchers (the engine is left in polling mode) and frees.
 * NULL / *ev == NULL: no-op. */
int rdmx_ev_detach(struct rdmx_ev **ev);
/* Progress rounds run per wake-up before the loop gets control back
 * (default 64); each round runs at most the engine's batch. */
int rdmx_ev_set_budget(struct rdmx_ev *ev, unsigned rounds);
/* Copies the counters. RDMX_E_INVAL on NULL. */
int rdmx_ev_get_stats(const struct rdmx_ev *ev, struct rdmx_ev_stats *stats);

/* A deferred work on `ev`, not scheduled. The caller owns it and destroys
 * it (before or after rdmx_ev_detach). RDMX_E_INVAL, RDMX_E_NOMEM. */
int rdmx_ev_work_create(struct rdmx_ev *ev, rdmx_ev_work_cb cb, void *arg,
                        struct rdmx_ev_work **work);
/* Asks for one run of the callback at the loop's next iteration (from its
 * ev_prepare watcher, outside every engine callback); scheduling a work
 * already scheduled is a no-op (still one run). Any callback on the loop's
 * thread may call it, the work's own too (then it runs again at the latest
 * one iteration later). The callback may destroy its work, other works, or
 * detach the adapter. Never fails once created, except RDMX_E_INVAL (NULL)
 * and RDMX_E_BAD_STATE (the adapter was detached). */
int rdmx_ev_work_schedule(struct rdmx_ev_work *work);
/* Unschedules and frees. NULL / *work == NULL: no-op. */
int rdmx_ev_work_destroy(struct rdmx_ev_work **work);

#ifdef __cplusplus
}
#endif
#endif
