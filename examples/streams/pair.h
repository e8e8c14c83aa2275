/* Two RPC endpoints in one process, connected over a device (default
 * "tcp"): the examples' stage. A real program has one side per process and
 * connects them as examples/hello does; everything else reads the same. */
#ifndef EXAMPLES_STREAMS_PAIR_H
#define EXAMPLES_STREAMS_PAIR_H

#include <rdmx/rdmx.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define CHECK(expr)                                                                                \
	do {                                                                                       \
		int rc_ = (expr);                                                                  \
		if (rc_) {                                                                         \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,              \
			        rdmx_strerror(rc_));                                               \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* The examples' command line: [-d DEVICE] (default "tcp"). NULL on a bad
 * option (the example exits 2). */
static inline const char *pair_device(int argc, char **argv)
{
	const char *device = "tcp";
	int opt;

	while ((opt = getopt(argc, argv, "d:")) != -1) {
		if (opt != 'd')
			return NULL;
		device = optarg;
	}
	return device;
}

/* Server stream callbacks the examples share: on_half_close finishing the
 * stream OK once the client has sent everything, and an on_done that needs
 * nothing (the stream is freed when it returns). */
static inline void pair_finish_on_half_close(struct rdmx_rpc_stream *s, void *arg)
{
	(void)arg;
	CHECK(rdmx_rpc_stream_finish(s, RDMX_RPC_OK, NULL, NULL, 0, NULL));
}

static inline void pair_stream_done(struct rdmx_rpc_stream *s,
                                    const struct rdmx_rpc_rich_status *st, void *arg)
{
	(void)s;
	(void)st;
	(void)arg;
}

struct side {
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_chan_worker *worker;
	struct rdmx_conn *conn;
	struct rdmx_chan *chan;
	struct rdmx_rpc_ep *ep;
};

struct pair {
	struct side client, server;
};

static inline void side_open(struct side *s, const char *device)
{
	CHECK(rdmx_dev_open(device, &s->dev));
	CHECK(rdmx_pe_create(&s->pe));
	CHECK(rdmx_ctx_create(s->dev, s->pe, &s->ctx));
	CHECK(rdmx_chan_worker_create(s->ctx, s->pe, NULL, &s->worker));
	CHECK(rdmx_ctx_start(s->ctx));
}

static inline void pair_drive(struct pair *p)
{
	int n = rdmx_chan_worker_progress(p->client.worker);

	n += rdmx_chan_worker_progress(p->server.worker);
	if (n == 0)
		sched_yield();
}

/* Connects the two sides; `server` serves on the server side. */
static inline void pair_open(struct pair *p, const char *device, struct rdmx_rpc_server *server)
{
	const void *dc, *ds;
	size_t lc, ls;

	side_open(&p->client, device);
	side_open(&p->server, device);
	CHECK(rdmx_ctx_export(p->client.ctx, &dc, &lc, &p->client.conn));
	CHECK(rdmx_ctx_export(p->server.ctx, &ds, &ls, &p->server.conn));
	CHECK(rdmx_ctx_connect(p->client.ctx, ds, ls, p->client.conn));
	CHECK(rdmx_ctx_connect(p->server.ctx, dc, lc, p->server.conn));
	CHECK(rdmx_chan_create(p->client.worker, p->client.conn, &p->client.chan));
	CHECK(rdmx_chan_create(p->server.worker, p->server.conn, &p->server.chan));
	CHECK(rdmx_rpc_ep_create(p->client.chan, NULL, &p->client.ep));
	CHECK(rdmx_rpc_ep_create(p->server.chan, server, &p->server.ep));
	while (rdmx_chan_get_state(p->client.chan) != RDMX_CHAN_READY ||
	       rdmx_chan_get_state(p->server.chan) != RDMX_CHAN_READY)
		pair_drive(p);
}

static inline void side_close(struct side *s)
{
	CHECK(rdmx_rpc_ep_destroy(&s->ep));
	CHECK(rdmx_chan_destroy(&s->chan));
	CHECK(rdmx_ctx_stop(s->ctx));
	CHECK(rdmx_chan_worker_destroy(&s->worker));
	CHECK(rdmx_ctx_destroy(&s->ctx));
	CHECK(rdmx_pe_destroy(&s->pe));
	CHECK(rdmx_dev_close(&s->dev));
}

static inline void pair_close(struct pair *p)
{
	side_close(&p->client);
	side_close(&p->server);
}

#endif
