/* stream_bench: rdmx RPC streams on one machine over a device (default
 * tcp): server-streaming messages/s at a message size, bidi ping-pong
 * latency per message, and the unary round trip beside it. The server side
 * runs its own engine on its own thread (core SERVER_CPU when run.sh pins
 * it); the client drives its engine on the main thread. Prints RESULT lines:
 *   RESULT rdmx stream SIZE MSGS MSGS_PER_S
 *   RESULT rdmx bidi SIZE ROUNDS US_PER_MSG
 *   RESULT rdmx unary SIZE CALLS US_PER_CALL
 *   stream_bench [-d DEVICE] [-s SIZE] [-n MSGS] [-r ROUNDS] [-w WINDOW] [-W BYTES]
 * WINDOW / BYTES: the client's receive window of the server-streaming run,
 * in messages (default RDMX_RPC_STREAM_MAX_WINDOW) and in bytes (default
 * RDMX_RPC_STREAM_WINDOW_BYTES); either one set marks the result line
 * "rdmx-w". */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdmx/pe.h>
#include <rdmx/rpc_stream.h>

#include "../../../examples/streams/pair.h"

#define FLOOD "bench.Streams/Flood"
#define PING "bench.Streams/Ping"
#define UNARY "bench.Streams/Unary"

static unsigned char payload[1 << 20];
static size_t size = 64;

/* ---- server ---- */
struct flood {
	uint32_t left;
};

static void flood_pump(struct rdmx_rpc_stream *s, void *arg)
{
	struct flood *f = arg;
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(payload, size);

	while (f->left) {
		int rc = rdmx_rpc_stream_write(s, &p);

		if (rc == RDMX_E_AGAIN)
			return;
		CHECK(rc);
		f->left--;
	}
	CHECK(rdmx_rpc_stream_finish(s, RDMX_RPC_OK, NULL, NULL, 0, NULL));
}

static void flood_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct flood *f = arg;

	(void)s;
	if (len == sizeof(uint32_t))
		memcpy(&f->left, data, len);
}

static void free_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	(void)s;
	(void)st;
	free(arg);
}

static void on_flood(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_msg = flood_msg,
	                                               .on_half_close = flood_pump,
	                                               .on_writable = flood_pump,
	                                               .on_done = free_done};
	struct flood *f = calloc(1, sizeof(*f));

	(void)arg;
	CHECK(f ? rdmx_rpc_stream_set_callbacks(s, &cbs, f) : RDMX_E_NOMEM);
}

static void ping_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(data, len);

	(void)arg;
	CHECK(rdmx_rpc_stream_write(s, &p)); /* one at a time: within the window */
}

static void ping_half_close(struct rdmx_rpc_stream *s, void *arg)
{
	(void)arg;
	CHECK(rdmx_rpc_stream_finish(s, RDMX_RPC_OK, NULL, NULL, 0, NULL));
}

static void nop_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	(void)s;
	(void)st;
	(void)arg;
}

static void on_ping(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {
	    .on_msg = ping_msg, .on_half_close = ping_half_close, .on_done = nop_done};

	(void)arg;
	CHECK(rdmx_rpc_stream_set_callbacks(s, &cbs, NULL));
}

static void on_unary(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(req, len);

	(void)arg;
	CHECK(rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p));
}

static atomic_int stop;

static void *serve(void *arg)
{
	struct side *s = arg;

	while (!atomic_load(&stop))
		if (rdmx_chan_worker_progress(s->worker) == 0)
			sched_yield();
	return NULL;
}

/* ---- client ---- */
struct run {
	uint64_t msgs, rounds, want;
	bool done;
	struct rdmx_rpc_ep *ep;
	struct rdmx_rpc_stream *s;
};

static void count_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct run *r = arg;

	(void)s;
	(void)data;
	if (len == size)
		r->msgs++;
}

static void run_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	struct run *r = arg;

	(void)s;
	if (st->code != RDMX_RPC_OK) {
		fprintf(stderr, "stream_bench: stream ended %s: %s\n", rdmx_rpc_code_name(st->code),
		        st->message);
		exit(1);
	}
	r->done = true;
}

static void pong_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct run *r = arg;
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(data, len);

	if (++r->rounds == r->want)
		CHECK(rdmx_rpc_stream_half_close(s));
	else
		CHECK(rdmx_rpc_stream_write(s, &p));
}

static void unary_done(const struct rdmx_rpc_result *res, void *arg)
{
	struct run *r = arg;
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(payload, size);

	if (res->code != RDMX_RPC_OK) {
		fprintf(stderr, "stream_bench: unary %s\n", rdmx_rpc_code_name(res->code));
		exit(1);
	}
	(void)p;
	r->rounds++;
	r->done = true; /* the next call starts from the loop, as a client's would */
}

static void drive(struct side *c, const bool *done)
{
	while (!*done)
		rdmx_chan_worker_progress(c->worker);
}

int main(int argc, char **argv)
{
	const char *device = "tcp";
	uint64_t n = 100000, rounds = 20000, t0, t1;
	struct rdmx_rpc_server *srv;
	struct pair p;
	pthread_t th;
	int c;

	uint32_t window = 0, window_bytes = 0;

	while ((c = getopt(argc, argv, "d:s:n:r:w:W:")) != -1) {
		switch (c) {
		case 'd':
			device = optarg;
			break;
		case 's':
			size = (size_t)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			n = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			rounds = strtoull(optarg, NULL, 0);
			break;
		case 'w':
			window = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'W':
			window_bytes = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: stream_bench [-d DEVICE] [-s SIZE] [-n MSGS] [-r "
			                "ROUNDS] [-w WINDOW] [-W BYTES]\n");
			return 2;
		}
	}
	if (size == 0 || size > sizeof(payload) || n == 0 || n > UINT32_MAX || rounds == 0) {
		fprintf(stderr, "stream_bench: bad -s, -n or -r\n");
		return 2;
	}
	memset(payload, 0xa5, sizeof(payload));
	CHECK(rdmx_rpc_server_create(&srv));
	CHECK(rdmx_rpc_server_register_stream(srv, rdmx_rpc_method_id(FLOOD), FLOOD,
	                                      RDMX_RPC_SERVER_STREAMING, on_flood, NULL));
	CHECK(rdmx_rpc_server_register_stream(srv, rdmx_rpc_method_id(PING), PING,
	                                      RDMX_RPC_BIDI_STREAMING, on_ping, NULL));
	CHECK(rdmx_rpc_server_register(srv, rdmx_rpc_method_id(UNARY), UNARY, on_unary, NULL));
	pair_open(&p, device, srv);
	if (pthread_create(&th, NULL, serve, &p.server))
		return 1;

	{ /* server-streaming: n messages of `size` */
		static const struct rdmx_rpc_stream_cbs cbs = {.on_msg = count_msg,
		                                               .on_done = run_done};
		struct run r = {0, 0, n, false, p.client.ep, NULL};
		uint32_t want = (uint32_t)n;
		struct rdmx_rpc_payload q = rdmx_rpc_bytes(&want, sizeof(want));

		t0 = rdmx_pe_now_ns();
		struct rdmx_rpc_stream_opts so = {.timeout_us = 0,
		                                  .headers = NULL,
		                                  .window = window,
		                                  .window_bytes = window_bytes};

		CHECK(rdmx_rpc_stream_open(p.client.ep, rdmx_rpc_method_id(FLOOD),
		                           RDMX_RPC_SERVER_STREAMING, &so, &cbs, &r, &r.s));
		CHECK(rdmx_rpc_stream_write(r.s, &q));
		CHECK(rdmx_rpc_stream_half_close(r.s));
		drive(&p.client, &r.done);
		t1 = rdmx_pe_now_ns();
		if (r.msgs != n) {
			fprintf(stderr, "stream_bench: %llu of %llu messages\n",
			        (unsigned long long)r.msgs, (unsigned long long)n);
			return 1;
		}
		printf("RESULT rdmx%s stream %zu %llu %.0f\n", window || window_bytes ? "-w" : "",
		       size, (unsigned long long)n, (double)n * 1e9 / (double)(t1 - t0));
	}
	{ /* bidi ping-pong: one message each way per round */
		static const struct rdmx_rpc_stream_cbs cbs = {.on_msg = pong_msg,
		                                               .on_done = run_done};
		struct run r = {0, 0, rounds, false, p.client.ep, NULL};
		struct rdmx_rpc_payload q = rdmx_rpc_bytes(payload, size);

		t0 = rdmx_pe_now_ns();
		CHECK(rdmx_rpc_stream_open(p.client.ep, rdmx_rpc_method_id(PING),
		                           RDMX_RPC_BIDI_STREAMING, NULL, &cbs, &r, &r.s));
		CHECK(rdmx_rpc_stream_write(r.s, &q));
		drive(&p.client, &r.done);
		t1 = rdmx_pe_now_ns();
		printf("RESULT rdmx bidi %zu %llu %.2f\n", size, (unsigned long long)rounds,
		       (double)(t1 - t0) / 1e3 / (double)rounds);
	}
	{ /* unary round trips, one at a time */
		struct run r = {0, 0, rounds, false, p.client.ep, NULL};
		struct rdmx_rpc_payload q = rdmx_rpc_bytes(payload, size);

		t0 = rdmx_pe_now_ns();
		while (r.rounds < rounds) {
			r.done = false;
			CHECK(rdmx_rpc_call_async(p.client.ep, rdmx_rpc_method_id(UNARY), &q, NULL,
			                          unary_done, &r, NULL));
			drive(&p.client, &r.done);
		}
		t1 = rdmx_pe_now_ns();
		printf("RESULT rdmx unary %zu %llu %.2f\n", size, (unsigned long long)rounds,
		       (double)(t1 - t0) / 1e3 / (double)rounds);
	}
	fflush(stdout);
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	pair_close(&p);
	CHECK(rdmx_rpc_server_destroy(&srv));
	return 0;
}
