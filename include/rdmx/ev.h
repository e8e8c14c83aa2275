/* rdmx_ev: drive an rdmx progress engine from a libev loop (hiredis-style
 * adapter, its own library: the core never links libev).
 *
 *   struct rdmx_ev *ev;
 *   rdmx_ev_attach(EV_DEFAULT, pe, &ev);     // watches rdmx_pe_get_fd(pe)
 *   rdmx_ev_add_host(ev, host);              // deadlines of that host's
 *                                            // channels and RPC endpoints
 *   ev_run(EV_DEFAULT, 0);
 *   ...
 *   rdmx_ev_detach(&ev);
 *
 * How: the engine runs in notification mode. Before the loop sleeps (an
 * ev_prepare watcher) the adapter progresses until nothing is ready, arms
 * the notification (rdmx_pe_request_notification), checks once more (an
 * event that arrived before arming would not wake the fd) and sets an
 * ev_timer for the nearest deadline of the hosts it watches. When the fd
 * becomes readable it clears the notification and progresses; when the
 * timer fires it runs the hosts' due timers. All callbacks of the engine,
 * channels and RPC run on the loop's thread, from inside ev_run.
 *
 * Threading: the loop's thread owns the progress engine (rdmx's rule: one
 * thread drives a progress engine). */
#ifndef RDMX_EV_H
#define RDMX_EV_H

struct ev_loop;

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_pe;
struct rdmx_chan_host;
struct rdmx_ev;

#define RDMX_EV_MAX_HOSTS 16

/* Errors: RDMX_E_INVAL, RDMX_E_NOMEM, or the engine's error for its fd. */
int rdmx_ev_attach(struct ev_loop *loop, struct rdmx_pe *pe, struct rdmx_ev **ev);
/* Stops the watchers (the engine is left in polling mode) and frees.
 * NULL / *ev == NULL: no-op. */
int rdmx_ev_detach(struct rdmx_ev **ev);
/* Runs the timers of `host` (a host on `pe`) from the loop. At most
 * RDMX_EV_MAX_HOSTS (else RDMX_E_FULL); RDMX_E_EXISTS when added twice. */
int rdmx_ev_add_host(struct rdmx_ev *ev, struct rdmx_chan_host *host);
/* RDMX_E_NOT_FOUND when it was not added. */
int rdmx_ev_remove_host(struct rdmx_ev *ev, struct rdmx_chan_host *host);
/* Progress rounds run per wake-up before the loop gets control back
 * (default 64); each round runs at most the engine's batch. */
int rdmx_ev_set_budget(struct rdmx_ev *ev, unsigned rounds);

#ifdef __cplusplus
}
#endif
#endif
