/* streams: a server-streaming "Count" (one request, N numbers back) and a
 * bidi "Upper" (every message comes back upper-cased), with flow control on
 * both sides: the writer stops at RDMX_E_AGAIN and goes on from
 * on_writable; the client pauses its reading for a while to show that the
 * server stalls without growing memory.
 *   streams [-d DEVICE]     (default tcp) */
#include <ctype.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "pair.h"

#define COUNT "example.Streams/Count"
#define UPPER "example.Streams/Upper"

/* ---- server: Count ---- */
struct counter {
	uint32_t next, last;
};

/* [count-writer] */
static void count_pump(struct rdmx_rpc_stream *s, void *arg)
{
	struct counter *c = arg;

	while (c->next < c->last) {
		struct rdmx_rpc_payload p = rdmx_rpc_bytes(&c->next, sizeof(c->next));
		int rc = rdmx_rpc_stream_write(s, &p);

		if (rc == RDMX_E_AGAIN)
			return; /* no credit: on_writable calls us again */
		CHECK(rc);
		c->next++;
	}
	CHECK(rdmx_rpc_stream_finish(s, RDMX_RPC_OK, NULL, NULL, 0, NULL));
}
/* [count-writer] */

static void count_request(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct counter *c = arg;

	(void)s;
	if (len == sizeof(uint32_t))
		memcpy(&c->last, data, len);
}

static void count_half_close(struct rdmx_rpc_stream *s, void *arg)
{
	count_pump(s, arg); /* the request is in: start sending */
}

static void count_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	(void)s;
	(void)st;
	free(arg);
}

/* [count-handler] */
static void on_count(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {
	    .on_msg = count_request,
	    .on_half_close = count_half_close,
	    .on_writable = count_pump,
	    .on_done = count_done,
	};
	struct counter *c = calloc(1, sizeof(*c));

	(void)arg;
	if (!c || rdmx_rpc_stream_set_callbacks(s, &cbs, c)) {
		free(c);
		rdmx_rpc_stream_finish(s, RDMX_RPC_RESOURCE_EXHAUSTED, "no memory", NULL, 0, NULL);
	}
}
/* [count-handler] */

/* ---- server: Upper (bidi) ---- */
static void upper_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	char buf[256];
	struct rdmx_rpc_payload p;

	(void)arg;
	len = len < sizeof(buf) ? len : sizeof(buf);
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)toupper(((const unsigned char *)data)[i]);
	p = rdmx_rpc_bytes(buf, len);
	/* one answer per request and the client reads them all: within the window */
	CHECK(rdmx_rpc_stream_write(s, &p));
}

static void on_upper(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_msg = upper_msg,
	                                               .on_half_close = pair_finish_on_half_close,
	                                               .on_done = pair_stream_done};

	(void)arg;
	CHECK(rdmx_rpc_stream_set_callbacks(s, &cbs, NULL));
}

/* ---- client ---- */
struct reader {
	uint32_t got, sum;
	bool done;
	enum rdmx_rpc_code code;
	char last[256];
};

static void read_number(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct reader *r = arg;
	uint32_t v = 0;

	(void)s;
	if (len == sizeof(v))
		memcpy(&v, data, len);
	r->got++;
	r->sum += v;
}

static void read_text(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct reader *r = arg;

	(void)s;
	len = len < sizeof(r->last) - 1 ? len : sizeof(r->last) - 1;
	memcpy(r->last, data, len);
	r->last[len] = '\0';
	r->got++;
}

/* [client-done] */
static void read_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	struct reader *r = arg;

	(void)s; /* freed when this returns */
	r->done = true;
	r->code = st->code;
	if (st->code != RDMX_RPC_OK)
		fprintf(stderr, "streams: %s: %s\n", rdmx_rpc_code_name(st->code), st->message);
}
/* [client-done] */

int main(int argc, char **argv)
{
	const char *device = pair_device(argc, argv);
	struct rdmx_rpc_server *srv;
	struct pair p;

	if (!device)
		return 2;
	CHECK(rdmx_rpc_server_create(&srv));
	CHECK(rdmx_rpc_server_register_stream(srv, rdmx_rpc_method_id(COUNT), COUNT,
	                                      RDMX_RPC_SERVER_STREAMING, on_count, NULL));
	CHECK(rdmx_rpc_server_register_stream(srv, rdmx_rpc_method_id(UPPER), UPPER,
	                                      RDMX_RPC_BIDI_STREAMING, on_upper, NULL));
	pair_open(&p, device, srv);

	/* [client-count] */
	static const struct rdmx_rpc_stream_cbs count_cbs = {.on_msg = read_number,
	                                                     .on_done = read_done};
	struct reader r = {0};
	struct rdmx_rpc_stream *s;
	uint32_t n = 1000;
	struct rdmx_rpc_payload req = rdmx_rpc_bytes(&n, sizeof(n));
	struct rdmx_rpc_stream_opts opts = {.timeout_us = 10u * 1000000u}; /* 10 s for it all */

	CHECK(rdmx_rpc_stream_open(p.client.ep, rdmx_rpc_method_id(COUNT),
	                           RDMX_RPC_SERVER_STREAMING, &opts, &count_cbs, &r, &s));
	CHECK(rdmx_rpc_stream_write(s, &req));
	CHECK(rdmx_rpc_stream_half_close(s));
	/* a slow reader: the server stops after the 16 messages granted at open */
	CHECK(rdmx_rpc_stream_pause_read(s));
	while (rdmx_rpc_stream_get_queued(s) < RDMX_RPC_STREAM_WINDOW)
		pair_drive(&p);
	printf("paused: %u messages wait, the server is stalled\n", rdmx_rpc_stream_get_queued(s));
	CHECK(rdmx_rpc_stream_resume_read(s));
	while (!r.done)
		pair_drive(&p);
	/* [client-count] */
	printf("Count: %u numbers, sum %u, %s\n", r.got, r.sum, rdmx_rpc_code_name(r.code));
	if (r.code != RDMX_RPC_OK || r.got != n || r.sum != n * (n - 1) / 2)
		return 1;

	static const struct rdmx_rpc_stream_cbs upper_cbs = {.on_msg = read_text,
	                                                     .on_done = read_done};
	struct reader u = {0};
	const char *words[] = {"streams", "over", "rdma"};

	CHECK(rdmx_rpc_stream_open(p.client.ep, rdmx_rpc_method_id(UPPER), RDMX_RPC_BIDI_STREAMING,
	                           NULL, &upper_cbs, &u, &s));
	for (unsigned i = 0; i < 3; i++) {
		struct rdmx_rpc_payload w = rdmx_rpc_bytes(words[i], strlen(words[i]));

		CHECK(rdmx_rpc_stream_write(s, &w));
	}
	CHECK(rdmx_rpc_stream_half_close(s));
	while (!u.done)
		pair_drive(&p);
	printf("Upper: %u answers, last \"%s\", %s\n", u.got, u.last, rdmx_rpc_code_name(u.code));
	if (u.code != RDMX_RPC_OK || u.got != 3 || strcmp(u.last, "RDMA") != 0)
		return 1;
	pair_close(&p);
	CHECK(rdmx_rpc_server_destroy(&srv));
	return 0;
}
