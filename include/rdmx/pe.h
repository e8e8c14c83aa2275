/* rdmx progress engine: runs completion and connection callbacks of the
 * contexts attached to it, on the thread that calls rdmx_pe_progress().
 *
 * Polling mode: call rdmx_pe_progress() in a loop.
 * Notification mode: rdmx_pe_request_notification(), then wait for the fd
 * from rdmx_pe_get_fd() to become readable (epoll, poll, libev),
 * rdmx_pe_clear_notification(), then rdmx_pe_progress() until it returns 0.
 * rdmx_pe_wait() packages both: busy-poll, block, or busy-poll-then-block.
 *
 * Threading: one thread drives a progress engine; no call on it or its
 * contexts may run concurrently from another thread. rdmx_pe_progress and
 * rdmx_pe_wait called from inside a callback they run answer
 * RDMX_E_BAD_STATE (no re-entrance). */
#ifndef RDMX_PE_H
#define RDMX_PE_H

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

/* Destroys and sets *pe to NULL; NULL / *pe == NULL is a no-op.
 * Errors: RDMX_E_BAD_STATE while contexts created on it still exist
 * (started or not). */
int rdmx_pe_destroy(struct rdmx_pe **pe);

/* Runs ready completions (task and connection callbacks). Returns the number
 * of completions run (>= 0) or a negative RDMX_E_* code. */
int rdmx_pe_progress(struct rdmx_pe *pe);

/* An fd (epoll-able) that becomes readable when a completion is ready after
 * rdmx_pe_request_notification(). Owned by the engine: do not close it. */
int rdmx_pe_get_fd(struct rdmx_pe *pe, int *fd);
int rdmx_pe_request_notification(struct rdmx_pe *pe);
int rdmx_pe_clear_notification(struct rdmx_pe *pe);

/* Mode and spin budget used by rdmx_pe_wait (default HYBRID, 50 us). */
int rdmx_pe_set_poll_mode(struct rdmx_pe *pe, enum rdmx_poll_mode mode, uint32_t spin_us);
int rdmx_pe_get_poll_mode(const struct rdmx_pe *pe, enum rdmx_poll_mode *mode, uint32_t *spin_us);

/* Progresses until at least one completion ran or timeout_ms passed
 * (-1 = no limit), waiting per the poll mode. Returns completions run (0 on
 * timeout) or a negative RDMX_E_* code. */
int rdmx_pe_wait(struct rdmx_pe *pe, int timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
