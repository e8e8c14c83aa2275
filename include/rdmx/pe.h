/* rdmx progress engine: runs completion and connection callbacks of the
 * contexts attached to it, on the thread that calls rdmx_pe_progress().
 *
 * Polling mode: call rdmx_pe_progress() in a loop.
 * Notification mode: rdmx_pe_request_notification(), then wait for the fd
 * from rdmx_pe_get_fd() to become readable (epoll, poll, libev),
 * rdmx_pe_clear_notification(), then rdmx_pe_progress() until it returns 0.
 * rdmx_pe_wait() packages both: busy-poll, block, or busy-poll-then-block.
 *
 * Timers (libuv's model: the loop owns them): rdmx_pe_progress runs the
 * timers that are due, after the contexts' completions; rdmx_pe_wait sleeps
 * no longer than the nearest one; another loop that embeds the engine
 * watches rdmx_pe_get_fd() and wakes after rdmx_pe_next_timeout_ms() (as
 * uv_backend_fd / uv_backend_timeout). Channel keep-alives, RPC deadlines
 * and secure liveness probes are timers of the engine: any of these ways of
 * driving it runs them, with or without traffic.
 *
 * Threading: one thread drives a progress engine; no call on it or its
 * contexts may run concurrently from another thread. rdmx_pe_progress and
 * rdmx_pe_wait called from inside a callback they run answer
 * RDMX_E_BAD_STATE (no re-entrance). */
#ifndef RDMX_PE_H
#define RDMX_PE_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_pe;

enum rdmx_poll_mode {
	RDMX_POLL_BUSY = 0,   /* rdmx_pe_wait spins on progress */
	RDMX_POLL_BLOCK = 1,  /* rdmx_pe_wait sleeps on the fd at once */
	RDMX_POLL_HYBRID = 2, /* spins for spin_us, then sleeps on the fd (default) */
};

int rdmx_pe_create(struct rdmx_pe **pe);

/* Destroys and sets *pe to NULL; NULL / *pe == NULL is a no-op. Timers
 * still started are stopped (their callbacks do not run).
 * Errors: RDMX_E_BAD_STATE while contexts created on it still exist
 * (started or not). */
int rdmx_pe_destroy(struct rdmx_pe **pe);

/* Runs ready completions (task and connection callbacks), then the timers
 * that are due. Returns the number of completions and timers run (>= 0) or
 * a negative RDMX_E_* code. */
int rdmx_pe_progress(struct rdmx_pe *pe);

/* The number of the progress pass under way (or of the last one): it grows
 * by one as each rdmx_pe_progress begins (rdmx_pe_wait runs passes too), 0
 * before the first. Two callbacks that read the same number ran in the same
 * pass: a callback can gather work for the end of its pass (an engine timer
 * due now runs there) and tell a pass's first event without a timer.
 * RDMX_E_INVAL for NULL arguments. */
int rdmx_pe_get_pass(const struct rdmx_pe *pe, uint64_t *pass);

/* An fd (epoll-able) that becomes readable when a completion is ready after
 * rdmx_pe_request_notification(). Owned by the engine: do not close it. */
int rdmx_pe_get_fd(struct rdmx_pe *pe, int *fd);
int rdmx_pe_request_notification(struct rdmx_pe *pe);
int rdmx_pe_clear_notification(struct rdmx_pe *pe);

/* Mode and spin budget used by rdmx_pe_wait (default HYBRID, 50 us). */
int rdmx_pe_set_poll_mode(struct rdmx_pe *pe, enum rdmx_poll_mode mode, uint32_t spin_us);
int rdmx_pe_get_poll_mode(const struct rdmx_pe *pe, enum rdmx_poll_mode *mode, uint32_t *spin_us);

/* Progresses until at least one completion or timer ran or timeout_ms
 * passed (-1 = no limit), waiting per the poll mode; it never sleeps past
 * the nearest timer. Returns completions and timers run (0 on timeout) or a
 * negative RDMX_E_* code. */
int rdmx_pe_wait(struct rdmx_pe *pe, int timeout_ms);

/* Milliseconds until the nearest timer is due, rounded up (0: one is due
 * now), or -1 when no timer is started. For a loop that embeds the engine:
 * sleep on rdmx_pe_get_fd() at most this long, then rdmx_pe_progress().
 * -1 for NULL. */
int rdmx_pe_next_timeout_ms(const struct rdmx_pe *pe);

/* ---- timers ---- */

/* CLOCK_MONOTONIC in nanoseconds: the clock of timer due times. */
uint64_t rdmx_pe_now_ns(void);

struct rdmx_pe_timer;
/* Runs on the engine's thread from rdmx_pe_progress, the timer already
 * stopped: it may start it again, stop or start others, or free the
 * storage of its own timer. */
typedef void (*rdmx_pe_timer_cb)(struct rdmx_pe_timer *timer, void *arg);

/* A timer is the caller's storage (embed it in the object it serves); its
 * fields belong to the engine: set them only with rdmx_pe_timer_init. */
struct rdmx_pe_timer {
	struct rdmx_pe *pe;
	rdmx_pe_timer_cb cb;
	void *arg;
	uint64_t when_ns;
	uint32_t pos; /* heap index + 1; 0 when stopped */
};

/* Binds the timer to `pe` and its callback, stopped. Call it on fresh
 * storage before the first start, and again only while it is stopped. */
void rdmx_pe_timer_init(struct rdmx_pe *pe, struct rdmx_pe_timer *timer, rdmx_pe_timer_cb cb,
                        void *arg);
/* Starts (or moves) the timer: due at `when_ns` (rdmx_pe_now_ns() clock; a
 * time in the past is due at the next progress). Timers due at the same
 * time run in no promised order. Errors: RDMX_E_INVAL (NULL, or never
 * initialised), RDMX_E_NOMEM. */
int rdmx_pe_timer_start(struct rdmx_pe_timer *timer, uint64_t when_ns);
/* Stops it; a stopped (or never started) timer: no-op. Must be called
 * before the timer's storage is freed while it is started. */
void rdmx_pe_timer_stop(struct rdmx_pe_timer *timer);
bool rdmx_pe_timer_is_active(const struct rdmx_pe_timer *timer);

#ifdef __cplusplus
}
#endif
#endif
