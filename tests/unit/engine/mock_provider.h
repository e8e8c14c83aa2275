/* A scripted in-memory provider for the engine's unit tests (not a transport:
 * it moves no data). It completes send-side tasks in submission order from
 * ctx_poll, lets a test fail a connection, hold completions, deliver a
 * receive or a cm request, and counts what the engine asked of it. */
#ifndef RDMX_TEST_MOCK_PROVIDER_H
#define RDMX_TEST_MOCK_PROVIDER_H

#include "provider.h"

extern const struct rdmx_provider_ops mock_ops;

struct mock_stats {
	unsigned conn_releases;
	unsigned posts;
	unsigned polls;
	unsigned arms;
	unsigned disarms;
};

/* Opens the mock device ("mock0") through the engine's test seam. */
int mock_dev_open(struct rdmx_dev **dev);
const struct mock_stats *mock_stats(void);
void mock_stats_reset(void);

/* While held, ctx_poll delivers nothing. */
void mock_hold(struct rdmx_ctx *ctx, bool hold);
/* At most `n` items per ctx_poll (0: the engine's budget). */
void mock_poll_limit(struct rdmx_ctx *ctx, unsigned n);
/* The next send-side task of conn fails with `status` and moves the
 * connection to error; the later ones already queued are flushed
 * (RDMX_E_CONN_ABORTED), as RC does. */
void mock_fail_next(struct rdmx_conn *conn, int status);
/* Queues an incoming message on conn: completes one posted receive. */
void mock_incoming(struct rdmx_ctx *ctx, struct rdmx_conn *conn, enum rdmx_opcode opcode,
                   uint32_t len, uint32_t imm);
/* Queues an incoming cm request (the engine calls the request callback). */
void mock_incoming_request(struct rdmx_ctx *ctx);
/* Queues a peer disconnect of conn. */
void mock_peer_disconnect(struct rdmx_ctx *ctx, struct rdmx_conn *conn);
/* connect_to_addr: the peer refuses (FAILURE event) when set. */
void mock_refuse(struct rdmx_ctx *ctx, bool refuse);
/* Number of items (tasks, events) waiting in the ctx's queue. */
unsigned mock_pending(struct rdmx_ctx *ctx);

#endif
