/* Private header of the RPC layer (rpc/): its structures, shared by rpc.c
 * (endpoint and client calls), rpc_server.c (handler table and incoming
 * calls), rpc_wire.c (header codec), stats.c and metrics.c (counters,
 * histograms), health.c and reflection.c (built-in services). Only rpc/
 * (and its tests) include it. The channel is reached through
 * chan/chan_rpc.h and rdmx/channel.h only. */
#ifndef RDMX_RPC_PRIV_H
#define RDMX_RPC_PRIV_H

#include <rdmx/channel.h>
#include <rdmx/rpc.h>

#include "chan/chan_rpc.h"
#include "common/byteorder.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/map.h"

/* ---- wire (rpc_wire.c) ---- */
enum rpc_type {
	RPC_T_REQUEST = 1,
	RPC_T_RESPONSE = 2,
	RPC_T_CANCEL = 3,
	RPC_T_GOAWAY = 4,
};
#define RPC_F_ONEWAY 0x1u

struct rpc_hdr {
	uint8_t type;
	uint8_t flags;
	uint8_t code;
	uint32_t word; /* method id (request) / status message length (response) */
	uint64_t call_id;
	uint64_t timeout_us;
};

void rdmx__rpc_hdr_encode(const struct rpc_hdr *h, void *dst);
/* Checks the header against the message length; on success *body points
 * after the header (and the status message for responses). */
int rdmx__rpc_hdr_decode(const void *msg, size_t len, struct rpc_hdr *h, const char **why);

/* ---- stats (stats.c) ---- */
struct rpc_mstats {
	struct rdmx_rpc_stats st[2]; /* by role */
};
void rdmx__hist_add(struct rdmx_rpc_hist *h, uint64_t ns);
void rdmx__stats_done(struct rdmx_rpc_stats *s, enum rdmx_rpc_code code, uint64_t ns);
/* method -> rpc_mstats, created on first use (NULL when out of memory);
 * !known: the one bucket of every unregistered method. */
struct rpc_mstats *rdmx__mstats_get(struct rdmx__map *m, uint32_t method, bool known);
void rdmx__mstats_free_all(struct rdmx__map *m);

/* ---- server ---- */
struct rpc_method {
	uint32_t id;
	char *name;
	rdmx_rpc_handler handler;
	void *arg;
	struct rdmx_rpc_stats stats; /* server role, summed over endpoints */
};

struct rdmx_rpc_server {
	struct rdmx__map methods; /* id -> rpc_method */
	uint32_t refs;            /* endpoints using it */
};

/* One incoming call (server side). */
struct rdmx_rpc_server_call {
	struct rdmx_rpc_ep *ep; /* NULL once its endpoint was destroyed */
	struct rpc_method *m;   /* NULL: unknown method, or detached */
	struct rpc_mstats *ms;
	uint64_t id;
	uint32_t method;
	uint64_t deadline_ns;
	uint64_t start_ns;
	uint64_t req_len;
	struct rdmx__timer timer;
	bool cancelled, cancel_ran, oneway;
	void (*cancel_cb)(struct rdmx_rpc_server_call *call, void *arg);
	void *cancel_arg;
	struct rdmx_rpc_server_call *next; /* free list / work list */
};

/* One outgoing call (client side). */
struct rpc_ccall {
	struct rdmx_rpc_ep *ep;
	uint64_t id;
	uint32_t method;
	rdmx_rpc_done_cb cb;
	void *arg;
	struct rdmx__timer timer;
	uint64_t start_ns;
	struct rpc_mstats *ms;
	bool oneway;
	bool rdv;                      /* the request went by rendezvous */
	bool unsent;                   /* failed in the send queue: never reached the server */
	struct rpc_ccall *next, *prev; /* free list / one-way list / work list */
};

struct rdmx_rpc_ep {
	struct rdmx_chan *chan;
	struct rdmx_chan_worker *worker;
	struct rdmx_rpc_server *server;
	struct rdmx__map calls;    /* our call id -> rpc_ccall */
	struct rdmx__map incoming; /* peer's call id -> rdmx_rpc_call */
	struct rpc_ccall *oneways; /* one-way calls with a callback, not yet sent */
	uint64_t next_id;
	uint32_t max_inflight, max_active;
	uint32_t resp_pending; /* responses handed to the channel, not yet sent */
	bool draining, peer_goaway, closed, drained_fired, paused_by_us;
	int close_status;
	int busy; /* our callbacks on the stack */
	bool destroy_pending;
	rdmx_rpc_drained_cb drained_cb;
	void *drained_arg;
	rdmx_rpc_closed_cb closed_cb;
	void *closed_arg;
	void *user_data;
	struct rdmx_rpc_stats st[2];
	struct rdmx__map mstats; /* method -> rpc_mstats */
	struct rpc_ccall *free_calls;
	struct rdmx_rpc_server_call *free_scalls;
	uint32_t nfree_calls, nfree_scalls;
};

/* rpc.c */
void rdmx__rpc_check_drained(struct rdmx_rpc_ep *ep);
/* Sends a header-only message (cancel, goaway), forced. */
int rdmx__rpc_send_ctl(struct rdmx_rpc_ep *ep, enum rpc_type type, uint64_t call_id);
void rdmx__rpc_release(struct rdmx_rpc_ep *ep); /* frees if destroyed and idle */

/* rpc_server.c */
void rdmx__rpc_on_request(struct rdmx_rpc_ep *ep, const struct rpc_hdr *h, const void *body,
                          size_t len);
void rdmx__rpc_on_cancel(struct rdmx_rpc_ep *ep, uint64_t call_id);
/* The channel closed: every incoming call is cancelled (kept until answered). */
void rdmx__rpc_cancel_incoming(struct rdmx_rpc_ep *ep);
/* The endpoint goes: incoming calls are cancelled and detached. */
void rdmx__rpc_detach_incoming(struct rdmx_rpc_ep *ep);
void rdmx__rpc_free_scalls(struct rdmx_rpc_ep *ep);
/* Rechecks max_active after a call was answered / a response was sent. */
void rdmx__rpc_check_active(struct rdmx_rpc_ep *ep);

#endif
