/* The channel layer's narrow interface for the layers built on it (rpc/,
 * secure/): what an RPC endpoint needs of its channel and worker beyond
 * rdmx/channel.h, and nothing of the channel's structs. The only chan/
 * header a file outside chan/ may include (tests/arch/check-includes.sh). */
#ifndef RDMX_CHAN_CHAN_RPC_H
#define RDMX_CHAN_CHAN_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmx/channel.h>
#include <rdmx/pe.h>

/* ---- sending ---- */
#define RDMX__SEND_FORCE 0x1u /* ignore the queue bounds (RPC responses) */
/* the callback matters only if the message fails: a message that leaves at
 * once as a light message (engine/msg.h: tcp) is done then, and its
 * callback never runs (RDMX__SENT_LIGHT says so). A connection that fails
 * later closes the channel, which the owner sees. */
#define RDMX__SEND_LIGHT 0x2u
#define RDMX__SENT_QUEUED 0x1u /* out: the message waited for credits */
#define RDMX__SENT_RDV 0x2u    /* out: it goes by rendezvous */
#define RDMX__SENT_LIGHT 0x4u  /* out: done, its callback will not run */
/* rdmx_chan_send with flags, and *how (may be NULL) telling how it went. */
int rdmx__chan_send_ex(struct rdmx_chan *chan, size_t len, rdmx_chan_fill_fn fill, void *fill_arg,
                       rdmx_chan_sent_cb cb, void *arg, unsigned flags, unsigned *how);
/* The largest message that goes eager (in one ring slot, no rendezvous)
 * once the channel is READY; 0 before. */
size_t rdmx__chan_get_eager_max(const struct rdmx_chan *chan);
/* Return credits after every delivery batch (a draining peer wants acks). */
void rdmx__chan_set_eager_credit(struct rdmx_chan *chan, bool on);
/* Called when the queue is empty and every message was acknowledged. */
void rdmx__chan_set_idle_cb(struct rdmx_chan *chan, void (*cb)(struct rdmx_chan *, void *),
                            void *arg);
bool rdmx__chan_is_idle(const struct rdmx_chan *chan);
/* Drops every pending send callback equal to cb (its owner goes away). */
void rdmx__chan_forget_cb(struct rdmx_chan *chan, rdmx_chan_sent_cb cb);
/* Closes the channel with `status` (logs `why`, a protocol violation, when
 * not NULL). */
void rdmx__chan_fail(struct rdmx_chan *chan, int status, const char *why);

/* ---- receiving ---- */
/* Inside the receive callback of a rendezvous message, `data` pointing into
 * it: takes the message's buffer out of the worker's registration cache
 * (deregistered, no longer counted there) and gives it to the caller, who
 * releases it with free(); `data` stays valid in it. *size (may be NULL):
 * the buffer's size. RDMX_E_BAD_STATE for an eager message (it lives in a
 * ring slot: copy it) or outside the callback, RDMX_E_INVAL. */
int rdmx__chan_take_rx(struct rdmx_chan *chan, const void *data, void **owned, size_t *size);

/* ---- the object built on a channel (an RPC endpoint) ---- */
/* The owner, NULL when none; while set, rdmx_chan_destroy refuses. */
void *rdmx__chan_get_owner(const struct rdmx_chan *chan);
void rdmx__chan_set_owner(struct rdmx_chan *chan, void *owner);
/* True when the channel has a receive callback or an owner already. */
bool rdmx__chan_has_receiver(const struct rdmx_chan *chan);
/* Clears a pause of the owner's without delivering (the owner goes away). */
void rdmx__chan_clear_pause(struct rdmx_chan *chan);

/* ---- defined by rpc/ for the servers built on it (rpc/workers.c,
 * secure/rpc_secure_server.c), which reach no rpc/ header but this one ---- */
struct rdmx_rpc_ep;
/* Closes the endpoint's channel with `status` as the end of its connection
 * would (the held calls' cancel callbacks run, its calls fail, its streams
 * end), without the endpoint's closed callback, which it clears. Nothing
 * more when the channel is closed already. */
void rdmx__rpc_ep_close(struct rdmx_rpc_ep *ep, int status);

/* ---- timers of the worker: an engine timer (rdmx/pe.h) whose callback
 * runs inside the worker's callback bracket (chan/worker.c) ---- */
struct rdmx__timer;
typedef void (*rdmx__timer_fn)(struct rdmx__timer *t);
struct rdmx__timer {
	struct rdmx_pe_timer pe_timer;
	rdmx__timer_fn fn; /* set before the first arm */
};
static inline bool rdmx__timer_armed(const struct rdmx__timer *t)
{
	return rdmx_pe_timer_is_active(&t->pe_timer);
}
/* Starts (or moves) t, due at when_ns (rdmx_pe_now_ns clock), on the
 * worker's engine; t->fn runs from rdmx_pe_progress. RDMX_E_NOMEM. */
int rdmx__worker_timer_arm(struct rdmx_chan_worker *worker, struct rdmx__timer *t,
                           uint64_t when_ns);
void rdmx__worker_timer_disarm(struct rdmx_chan_worker *worker, struct rdmx__timer *t);
/* Callbacks (and timers) of this worker on the stack: > 0 inside one, where
 * a blocking call or a close may not nest. */
int rdmx__worker_depth(const struct rdmx_chan_worker *worker);
/* Whether the poll running the current callback has more completions in
 * hand (rdmx_ctx_get_completions_pending). */
bool rdmx__worker_more_pending(const struct rdmx_chan_worker *worker);
/* The worker's engine pass under way (rdmx_pe_get_pass): equal values, the same
 * pass. */
uint64_t rdmx__worker_pass(const struct rdmx_chan_worker *worker);

#endif
