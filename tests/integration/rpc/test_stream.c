/* RPC streams: the three streaming kinds with 0, 1 and many messages, sizes
 * around the slot size and above the rendezvous threshold, a stalled reader
 * (bounded memory; other streams and unary calls go on), cancel racing the
 * last message, a deadline mid-stream, a peer killed with 100 streams open,
 * metadata and its limits, rich status, hostile stream frames, an open
 * whose stream table has no room (librdmx's rdmx__map_put interposed), an
 * open whose channel closes inside its own send or its window grant
 * (rdmx__chan_send_ex interposed). */
#include "rpcfix.h"

#include <rdmx/health.h>
#include <rdmx/rpc_stream.h>

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define SOURCE_NAME "test.Stream/Source" /* server-streaming: (count, size) -> count msgs */
#define SINK_NAME "test.Stream/Sink"     /* client-streaming: msgs -> (count, checksum) */
#define BIDI_NAME "test.Stream/Echo"     /* bidi: echoes every message */
#define HOLD_S_NAME "test.Stream/Hold"   /* bidi: reads, never answers */
#define MUTE_NAME "test.Stream/Mute"     /* bidi: never reads */
#define MD_NAME "test.Stream/Meta"       /* server-streaming: metadata and rich status */

static uint32_t SOURCE, SINK, BIDI, HOLD_S, MUTE, META, ECHO;

static void ids(void)
{
	SOURCE = rdmx_rpc_method_id(SOURCE_NAME);
	SINK = rdmx_rpc_method_id(SINK_NAME);
	BIDI = rdmx_rpc_method_id(BIDI_NAME);
	HOLD_S = rdmx_rpc_method_id(HOLD_S_NAME);
	MUTE = rdmx_rpc_method_id(MUTE_NAME);
	META = rdmx_rpc_method_id(MD_NAME);
	ECHO = rdmx_rpc_method_id(ECHO_NAME);
}

/* What a message counts in the byte window (rdmx/rpc_stream.h). */
static uint64_t cost(size_t len)
{
	return (uint64_t)len + RDMX_RPC_STREAM_MSG_COST;
}

/* ---- the server side ---- */

#define SMAX 256
struct sstream {
	struct rdmx_rpc_stream *s;
	uint32_t count, size, sent, got;
	uint32_t sent_at_again; /* source: sent when a write last met the window */
	uint64_t sum;
	uint8_t *pending; /* echo: a message waiting for credits */
	size_t pending_len;
	bool blocked, done;
	int done_n;
	enum rdmx_rpc_code code;
};
struct sstate {
	struct sstream st[SMAX];
	uint32_t n, done, again;
	uint32_t by_code[RDMX_RPC_CODE_COUNT];
	struct echo_state echo;
};

static struct sstream *slot_new(struct sstate *ss, struct rdmx_rpc_stream *s)
{
	struct sstream *x;

	cr_assert(ss->n < SMAX);
	x = &ss->st[ss->n++];
	memset(x, 0, sizeof(*x));
	x->s = s;
	return x;
}

static void s_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg);

static struct sstate *state_of(struct sstream *x);
static struct sstate *cur_state;
static struct sstate *state_of(struct sstream *x)
{
	(void)x;
	return cur_state;
}

static void source_pump(struct sstream *x)
{
	while (x->sent < x->count) {
		uint8_t *buf = malloc(x->size ? x->size : 1);
		struct rdmx_rpc_payload p = rdmx_rpc_bytes(buf, x->size);
		int rc;

		pattern_fill(buf, x->size, x->sent);
		rc = rdmx_rpc_stream_write(x->s, &p);
		free(buf);
		if (rc == RDMX_E_AGAIN) {
			x->blocked = true;
			x->sent_at_again = x->sent;
			state_of(x)->again++;
			return;
		}
		cr_assert_eq(rc, 0, "server write -> %s", rdmx_err_name(rc));
		x->sent++;
	}
	x->blocked = false;
	struct rdmx_rpc_md tr;
	char num[16];
	rdmx_rpc_md_init(&tr);
	snprintf(num, sizeof(num), "%u", x->sent);
	ASSERT_OK(rdmx_rpc_md_add_str(&tr, "x-sent", num));
	ASSERT_OK(rdmx_rpc_stream_finish(x->s, RDMX_RPC_OK, NULL, NULL, 0, &tr));
	rdmx_rpc_md_fini(&tr);
}

static void source_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct sstream *x = arg;
	const uint32_t *w = data;

	(void)s;
	cr_assert_eq(len, 8);
	x->count = w[0];
	x->size = w[1];
	x->got++;
}

static void source_half(struct rdmx_rpc_stream *s, void *arg)
{
	(void)s;
	source_pump(arg);
}

static void source_writable(struct rdmx_rpc_stream *s, void *arg)
{
	(void)s;
	source_pump(arg);
}

static void sink_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct sstream *x = arg;

	(void)s;
	cr_assert(pattern_check(data, len, x->got), "sink: message %u corrupt", x->got);
	x->got++;
	x->sum += len;
}

static void sink_half(struct rdmx_rpc_stream *s, void *arg)
{
	struct sstream *x = arg;
	uint64_t r[2] = {x->got, x->sum};
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(r, sizeof(r));

	ASSERT_OK(rdmx_rpc_stream_write(s, &p));
	ASSERT_RC(rdmx_rpc_stream_write(s, &p), RDMX_E_BAD_STATE); /* one response only */
	ASSERT_OK(rdmx_rpc_stream_finish(s, RDMX_RPC_OK, "sunk", NULL, 0, NULL));
}

static void echo_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct sstream *x = arg;
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(data, len);
	int rc;

	x->got++;
	rc = rdmx_rpc_stream_write(s, &p);
	if (rc == RDMX_E_AGAIN) {
		/* keep it and stop reading until the peer reads */
		x->pending = malloc(len ? len : 1);
		memcpy(x->pending, data, len);
		x->pending_len = len;
		ASSERT_OK(rdmx_rpc_stream_pause_read(s));
		return;
	}
	cr_assert_eq(rc, 0, "echo write -> %s", rdmx_err_name(rc));
	x->sent++;
}

static void echo_writable(struct rdmx_rpc_stream *s, void *arg)
{
	struct sstream *x = arg;
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(x->pending, x->pending_len);

	if (!x->pending)
		return;
	ASSERT_OK(rdmx_rpc_stream_write(s, &p));
	x->sent++;
	free(x->pending);
	x->pending = NULL;
	ASSERT_OK(rdmx_rpc_stream_resume_read(s));
}

static void echo_half(struct rdmx_rpc_stream *s, void *arg)
{
	(void)arg;
	ASSERT_OK(rdmx_rpc_stream_finish(s, RDMX_RPC_OK, NULL, NULL, 0, NULL));
}

static void hold_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct sstream *x = arg;

	(void)s;
	(void)data;
	(void)len;
	x->got++;
}

static void s_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	struct sstream *x = arg;

	(void)s;
	x->done_n++;
	x->done = true;
	x->code = st->code;
	free(x->pending);
	x->pending = NULL;
	cur_state->done++;
	cur_state->by_code[st->code]++;
}

static void on_source(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_msg = source_msg,
	                                               .on_half_close = source_half,
	                                               .on_writable = source_writable,
	                                               .on_done = s_done};
	ASSERT_OK(rdmx_rpc_stream_set_callbacks(s, &cbs, slot_new(arg, s)));
}

static void on_sink(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {
	    .on_msg = sink_msg, .on_half_close = sink_half, .on_done = s_done};
	ASSERT_OK(rdmx_rpc_stream_set_callbacks(s, &cbs, slot_new(arg, s)));
}

static void on_echo(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_msg = echo_msg,
	                                               .on_half_close = echo_half,
	                                               .on_writable = echo_writable,
	                                               .on_done = s_done};
	ASSERT_OK(rdmx_rpc_stream_set_callbacks(s, &cbs, slot_new(arg, s)));
}

static void on_hold(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_msg = hold_msg, .on_done = s_done};
	ASSERT_OK(rdmx_rpc_stream_set_callbacks(s, &cbs, slot_new(arg, s)));
}

static void on_mute(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_done = s_done};
	ASSERT_OK(rdmx_rpc_stream_set_callbacks(s, &cbs, slot_new(arg, s)));
}

/* Metadata: echoes x-request-id and every -bin header as response headers,
 * sends one message, ends with details and trailers. */
static void on_meta(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_done = s_done};
	const struct rdmx_rpc_md *h = rdmx_rpc_stream_get_headers(s);
	struct rdmx_rpc_md out, tr;
	const void *v;
	size_t n;

	ASSERT_OK(rdmx_rpc_stream_set_callbacks(s, &cbs, slot_new(arg, s)));
	rdmx_rpc_md_init(&out);
	rdmx_rpc_md_init(&tr);
	ASSERT_OK(rdmx_rpc_md_get(h, "x-request-id", &v, &n));
	ASSERT_OK(rdmx_rpc_md_add(&out, "x-request-id", v, n));
	ASSERT_OK(rdmx_rpc_md_get(h, "trace-bin", &v, &n));
	ASSERT_OK(rdmx_rpc_md_add(&out, "trace-bin", v, n));
	if (rdmx_rpc_md_get(h, "big-trailers", &v, &n) == 0) {
		static char big[1000];
		memset(big, 'z', sizeof(big));
		ASSERT_OK(rdmx_rpc_md_add(&tr, "pad", big, sizeof(big)));
	}
	ASSERT_OK(rdmx_rpc_md_add_str(&tr, "x-trailer", "last"));
	ASSERT_OK(rdmx_rpc_stream_send_headers(s, &out));
	ASSERT_RC(rdmx_rpc_stream_send_headers(s, &out), RDMX_E_BAD_STATE);
	struct rdmx_rpc_payload p = rdmx_rpc_bytes("m", 1);
	ASSERT_OK(rdmx_rpc_stream_write(s, &p));
	ASSERT_OK(rdmx_rpc_stream_finish(s, RDMX_RPC_FAILED_PRECONDITION, "not ready",
	                                 "\x01\x02\x00\x03", 4, &tr));
	rdmx_rpc_md_fini(&out);
	rdmx_rpc_md_fini(&tr);
}

static struct rdmx_rpc_server *stream_server(struct sstate *ss)
{
	struct rdmx_rpc_server *srv = echo_server(&ss->echo);

	cur_state = ss;
	ASSERT_OK(rdmx_rpc_server_register_stream(srv, SOURCE, SOURCE_NAME,
	                                          RDMX_RPC_SERVER_STREAMING, on_source, ss));
	ASSERT_OK(rdmx_rpc_server_register_stream(srv, SINK, SINK_NAME, RDMX_RPC_CLIENT_STREAMING,
	                                          on_sink, ss));
	ASSERT_OK(rdmx_rpc_server_register_stream(srv, BIDI, BIDI_NAME, RDMX_RPC_BIDI_STREAMING,
	                                          on_echo, ss));
	ASSERT_OK(rdmx_rpc_server_register_stream(srv, HOLD_S, HOLD_S_NAME, RDMX_RPC_BIDI_STREAMING,
	                                          on_hold, ss));
	ASSERT_OK(rdmx_rpc_server_register_stream(srv, MUTE, MUTE_NAME, RDMX_RPC_BIDI_STREAMING,
	                                          on_mute, ss));
	ASSERT_OK(rdmx_rpc_server_register_stream(srv, META, MD_NAME, RDMX_RPC_SERVER_STREAMING,
	                                          on_meta, ss));
	ASSERT_RC(rdmx_rpc_server_register_stream(srv, META, MD_NAME, RDMX_RPC_SERVER_STREAMING,
	                                          on_meta, ss),
	          RDMX_E_EXISTS);
	return srv;
}

/* ---- the client side ---- */

struct cstream {
	struct rdmx_rpc_stream *s;
	uint32_t got, bad, max_queued;
	uint64_t bytes, max_queued_bytes;
	size_t want_size;  /* 0: any */
	uint32_t pause_at; /* on_msg pauses the reader after this many; 0: never */
	bool check_ended;  /* on_done: calls that must see an ended stream */
	int ended_rc[2];
	int done_n, half_n, hdr_n, writable_n;
	enum rdmx_rpc_code code;
	char msg[128];
	char trailer[32];
	uint8_t details[16];
	size_t details_len;
	uint64_t reply[2];
	char hdr_id[32];
	size_t hdr_count, hdr_app_len; /* the last headers: entries, "x-app"'s length */
	bool echo_check;               /* messages carry pattern seed = index */
};

static void c_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct cstream *x = arg;

	if (rdmx_rpc_stream_get_queued(s) > x->max_queued)
		x->max_queued = rdmx_rpc_stream_get_queued(s);
	if (rdmx_rpc_stream_get_queued_bytes(s) > x->max_queued_bytes)
		x->max_queued_bytes = rdmx_rpc_stream_get_queued_bytes(s);
	if (x->echo_check && !pattern_check(data, len, x->got))
		x->bad++;
	if (x->want_size && len != x->want_size)
		x->bad++;
	if (len == sizeof(x->reply))
		memcpy(x->reply, data, len);
	x->got++;
	x->bytes += len;
	if (x->pause_at && x->got == x->pause_at)
		ASSERT_OK(rdmx_rpc_stream_pause_read(s));
}

static void c_half(struct rdmx_rpc_stream *s, void *arg)
{
	(void)s;
	((struct cstream *)arg)->half_n++;
}

static void c_writable(struct rdmx_rpc_stream *s, void *arg)
{
	(void)s;
	((struct cstream *)arg)->writable_n++;
}

static void c_headers(struct rdmx_rpc_stream *s, const struct rdmx_rpc_md *h, void *arg)
{
	struct cstream *x = arg;
	const void *v;
	size_t n;

	(void)s;
	x->hdr_n++;
	x->hdr_count = rdmx_rpc_md_count(h);
	x->hdr_app_len = rdmx_rpc_md_get(h, "x-app", &v, &n) == 0 ? n : 0;
	if (rdmx_rpc_md_get(h, "x-request-id", &v, &n) == 0 && n < sizeof(x->hdr_id)) {
		memcpy(x->hdr_id, v, n);
		x->hdr_id[n] = '\0';
	}
}

static void c_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	struct cstream *x = arg;
	const void *v;
	size_t n;

	x->done_n++;
	x->code = st->code;
	if (x->check_ended) {
		x->ended_rc[0] = rdmx_rpc_stream_set_window_bytes(s, 4096);
		x->ended_rc[1] = rdmx_rpc_stream_set_window(s, 4);
	}
	snprintf(x->msg, sizeof(x->msg), "%s", st->message);
	x->details_len = st->details_len < sizeof(x->details) ? st->details_len : 0;
	if (x->details_len)
		memcpy(x->details, st->details, x->details_len);
	if (rdmx_rpc_md_get(st->trailers, "x-sent", &v, &n) == 0 ||
	    rdmx_rpc_md_get(st->trailers, "x-trailer", &v, &n) == 0) {
		n = n < sizeof(x->trailer) - 1 ? n : sizeof(x->trailer) - 1;
		memcpy(x->trailer, v, n);
		x->trailer[n] = '\0';
	}
	x->s = NULL;
}

static const struct rdmx_rpc_stream_cbs ccbs = {.on_msg = c_msg,
                                                .on_half_close = c_half,
                                                .on_writable = c_writable,
                                                .on_headers = c_headers,
                                                .on_done = c_done};

struct scene {
	struct node a, b;
	struct sstate ss;
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
};

static void scene_open(struct scene *sc, const struct chan_conf *conf)
{
	ids();
	memset(&sc->ss, 0, sizeof(sc->ss));
	node_open(&sc->a, "a", 0, NULL);
	node_open(&sc->b, "b", 1, NULL);
	sc->srv = stream_server(&sc->ss);
	rpc_pair(&sc->a, &sc->b, NULL, sc->srv, conf, conf, &sc->ra, &sc->rb);
}

static void scene_close(struct scene *sc)
{
	DRIVE_UNTIL(&sc->a, &sc->b,
	            rdmx_rpc_ep_get_streams(sc->ra) == 0 && rdmx_rpc_ep_get_streams(sc->rb) == 0);
	rpc_pair_close(&sc->ra, &sc->rb);
	ASSERT_OK(rdmx_rpc_server_destroy(&sc->srv));
	node_close(&sc->a);
	node_close(&sc->b);
}

static void source_req(struct rdmx_rpc_stream *s, uint32_t count, uint32_t size)
{
	uint32_t w[2] = {count, size};
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(w, sizeof(w));

	ASSERT_OK(rdmx_rpc_stream_write(s, &p));
	ASSERT_RC(rdmx_rpc_stream_write(s, &p), RDMX_E_BAD_STATE); /* one request only */
	ASSERT_OK(rdmx_rpc_stream_half_close(s));
	ASSERT_RC(rdmx_rpc_stream_half_close(s), RDMX_E_BAD_STATE);
}

/* Writes n pattern messages of `size`, driving while credits lack. */
static void write_n(struct scene *sc, struct cstream *x, uint32_t n, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1);

	for (uint32_t i = 0; i < n; i++) {
		struct rdmx_rpc_payload p = rdmx_rpc_bytes(buf, size);
		int rc;

		pattern_fill(buf, size, i);
		while ((rc = rdmx_rpc_stream_write(x->s, &p)) == RDMX_E_AGAIN)
			drive_once(&sc->a, &sc->b);
		cr_assert_eq(rc, 0, "write %u -> %s", i, rdmx_err_name(rc));
	}
	free(buf);
}

Test(stream, server_streaming_0_1_many)
{
	struct scene sc;
	const uint32_t counts[] = {0, 1, 300};

	leak_begin();
	scene_open(&sc, NULL);
	for (unsigned i = 0; i < 3; i++) {
		/* 300 x 4000 B: more than the byte window */
		struct cstream x = {.echo_check = true, .want_size = 4000};

		ASSERT_OK(rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, NULL,
		                               &ccbs, &x, &x.s));
		source_req(x.s, counts[i], 4000);
		DRIVE_UNTIL(&sc.a, &sc.b, x.done_n);
		cr_assert_eq(x.code, RDMX_RPC_OK, "%s", x.msg);
		cr_assert_eq(x.got, counts[i]);
		cr_assert_eq(x.bad, 0);
		char want[16];
		snprintf(want, sizeof(want), "%u", counts[i]);
		cr_assert_str_eq(x.trailer, want);
		drive_for(&sc.a, &sc.b, 5);
		cr_assert_eq(x.done_n, 1, "on_done ran %d times", x.done_n);
	}
	DRIVE_UNTIL(&sc.a, &sc.b, sc.ss.done == 3);
	cr_assert_eq(sc.ss.by_code[RDMX_RPC_OK], 3);
	cr_assert(sc.ss.again > 0, "300 messages never met the window");
	scene_close(&sc);
	leak_end();
}

Test(stream, client_streaming_0_1_many)
{
	struct scene sc;
	const uint32_t counts[] = {0, 1, 300};

	scene_open(&sc, NULL);
	for (unsigned i = 0; i < 3; i++) {
		struct cstream x = {0};

		ASSERT_OK(rdmx_rpc_stream_open(sc.ra, SINK, RDMX_RPC_CLIENT_STREAMING, NULL, &ccbs,
		                               &x, &x.s));
		write_n(&sc, &x, counts[i], 77);
		ASSERT_OK(rdmx_rpc_stream_half_close(x.s));
		DRIVE_UNTIL(&sc.a, &sc.b, x.done_n);
		cr_assert_eq(x.code, RDMX_RPC_OK, "%s", x.msg);
		cr_assert_str_eq(x.msg, "sunk");
		cr_assert_eq(x.got, 1);
		cr_assert_eq(x.reply[0], counts[i]);
		cr_assert_eq(x.reply[1], (uint64_t)counts[i] * 77u);
	}
	scene_close(&sc);
}

Test(stream, bidi_0_1_many_both_directions)
{
	struct scene sc;
	const uint32_t counts[] = {0, 1, 300};
	struct rdmx_rpc_server *srv_a;
	struct sstate ssa;
	struct rdmx_rpc_ep *ra, *rb;

	scene_open(&sc, NULL);
	for (unsigned i = 0; i < 3; i++) {
		struct cstream x = {.echo_check = true};

		ASSERT_OK(rdmx_rpc_stream_open(sc.ra, BIDI, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs,
		                               &x, &x.s));
		write_n(&sc, &x, counts[i], 333);
		ASSERT_OK(rdmx_rpc_stream_half_close(x.s));
		DRIVE_UNTIL(&sc.a, &sc.b, x.done_n);
		cr_assert_eq(x.code, RDMX_RPC_OK, "%s", x.msg);
		cr_assert_eq(x.got, counts[i]);
		cr_assert_eq(x.bad, 0);
	}
	DRIVE_UNTIL(&sc.a, &sc.b, sc.ss.done == 3);
	/* both directions on one connection, many streams at once */
	memset(&ssa, 0, sizeof(ssa));
	srv_a = stream_server(&ssa);
	cur_state = &sc.ss;
	rpc_pair_close(&sc.ra, &sc.rb);
	rpc_pair(&sc.a, &sc.b, srv_a, sc.srv, NULL, NULL, &ra, &rb);
	sc.ss.n = sc.ss.done = 0;
	enum { K = 40 };
	static struct cstream xa[K], xb[K];
	memset(xa, 0, sizeof(xa));
	memset(xb, 0, sizeof(xb));
	for (int i = 0; i < K; i++) {
		xa[i].echo_check = xb[i].echo_check = true;
		ASSERT_OK(rdmx_rpc_stream_open(ra, BIDI, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs,
		                               &xa[i], &xa[i].s));
		ASSERT_OK(rdmx_rpc_stream_open(rb, BIDI, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs,
		                               &xb[i], &xb[i].s));
	}
	cr_assert_eq(rdmx_rpc_ep_get_streams(ra), K);
	for (uint32_t m = 0; m < 5; m++) {
		for (int i = 0; i < K; i++) {
			uint8_t buf[64];
			struct rdmx_rpc_payload p = rdmx_rpc_bytes(buf, sizeof(buf));

			pattern_fill(buf, sizeof(buf), m);
			ASSERT_OK(rdmx_rpc_stream_write(xa[i].s, &p));
			ASSERT_OK(rdmx_rpc_stream_write(xb[i].s, &p));
		}
	}
	for (int i = 0; i < K; i++) {
		ASSERT_OK(rdmx_rpc_stream_half_close(xa[i].s));
		ASSERT_OK(rdmx_rpc_stream_half_close(xb[i].s));
	}
	int done;
	DRIVE_UNTIL(&sc.a, &sc.b,
	            (done = 0, ({
		             for (int i = 0; i < K; i++)
			             done += xa[i].done_n + xb[i].done_n;
	             }),
	             done == 2 * K));
	for (int i = 0; i < K; i++) {
		cr_assert_eq(xa[i].code, RDMX_RPC_OK);
		cr_assert_eq(xb[i].code, RDMX_RPC_OK);
		cr_assert_eq(xa[i].got, 5);
		cr_assert_eq(xb[i].got, 5);
		cr_assert_eq(xa[i].bad + xb[i].bad, 0);
	}
	DRIVE_UNTIL(&sc.a, &sc.b,
	            rdmx_rpc_ep_get_streams(ra) == 0 && rdmx_rpc_ep_get_streams(rb) == 0);
	rpc_pair_close(&ra, &rb);
	ASSERT_OK(rdmx_rpc_server_destroy(&srv_a));
	rpc_pair(&sc.a, &sc.b, NULL, sc.srv, NULL, NULL, &sc.ra, &sc.rb);
	scene_close(&sc);
}

/* Eager below the slot, rendezvous above; order kept across the switch. */
Test(stream, sizes_around_slot_and_rendezvous, .timeout = 300)
{
	struct scene sc;
	struct chan_conf conf = {.slot_size = 4096, .slot_count = 32, .max_msg = 1u << 20};
	const size_t sizes[] = {1,    4096 - 64,    4096 - 32, 4096 - 24,      4096,
	                        4097, 3 * 4096 + 5, 300000,    (1u << 20) - 24};

	scene_open(&sc, &conf);
	struct cstream x = {0};
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, BIDI, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs, &x, &x.s));
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *buf = malloc(sizes[i]);
		struct rdmx_rpc_payload p = rdmx_rpc_bytes(buf, sizes[i]);

		int rc;

		pattern_fill(buf, sizes[i], i);
		/* the byte window: the larger ones wait for the echo's credits */
		while ((rc = rdmx_rpc_stream_write(x.s, &p)) == RDMX_E_AGAIN)
			drive_once(&sc.a, &sc.b);
		ASSERT_OK(rc);
		free(buf);
	}
	/* one beyond the maximum is refused locally */
	{
		size_t big = 1u << 20;
		uint8_t *buf = calloc(1, big);
		struct rdmx_rpc_payload p = rdmx_rpc_bytes(buf, big);
		ASSERT_RC(rdmx_rpc_stream_write(x.s, &p), RDMX_E_TOO_BIG);
		free(buf);
	}
	x.echo_check = true;
	ASSERT_OK(rdmx_rpc_stream_half_close(x.s));
	DRIVE_UNTIL(&sc.a, &sc.b, x.done_n);
	cr_assert_eq(x.code, RDMX_RPC_OK, "%s", x.msg);
	cr_assert_eq(x.got, sizeof(sizes) / sizeof(sizes[0]));
	cr_assert_eq(x.bad, 0, "a message came back out of order or corrupt");
	uint64_t want = 0;
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		want += sizes[i];
	cr_assert_eq(x.bytes, want);
	struct rdmx_rpc_stats st;
	ASSERT_OK(rdmx_rpc_ep_get_stats(sc.rb, RDMX_RPC_ROLE_SERVER, &st));
	scene_close(&sc);
}

static int unary_done;
static enum rdmx_rpc_code unary_code;
static void unary_cb(const struct rdmx_rpc_result *r, void *arg)
{
	(void)arg;
	unary_done++;
	unary_code = r->code;
}

/* A paused reader stalls only its stream: its writer sees AGAIN after one
 * window, at most a window waits in memory, and another stream and unary
 * calls on the same connection complete meanwhile. */
Test(stream, stalled_reader_bounded_others_go_on)
{
	struct scene sc;
	struct cstream stalled = {.echo_check = true, .want_size = 64};

	scene_open(&sc, NULL);
	ASSERT_OK(rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, NULL, &ccbs,
	                               &stalled, &stalled.s));
	ASSERT_OK(rdmx_rpc_stream_pause_read(stalled.s));
	source_req(stalled.s, 1000, 64);
	DRIVE_UNTIL(&sc.a, &sc.b,
	            sc.ss.n == 1 && sc.ss.st[0].blocked &&
	                rdmx_rpc_stream_get_queued(stalled.s) == RDMX_RPC_STREAM_WINDOW);
	cr_assert_eq(sc.ss.st[0].sent, RDMX_RPC_STREAM_WINDOW, "the writer went past its window");
	cr_assert_eq(stalled.got, 0);
	/* others on the same connection */
	for (int round = 0; round < 3; round++) {
		struct cstream other = {.echo_check = true};
		ASSERT_OK(rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, NULL,
		                               &ccbs, &other, &other.s));
		source_req(other.s, 100, 64);
		unary_done = 0;
		ASSERT_OK(rdmx_rpc_call_async(sc.ra, ECHO, NULL, NULL, unary_cb, NULL, NULL));
		DRIVE_UNTIL(&sc.a, &sc.b, other.done_n && unary_done);
		cr_assert_eq(other.code, RDMX_RPC_OK);
		cr_assert_eq(other.got, 100);
		cr_assert_eq(unary_code, RDMX_RPC_OK);
		cr_assert_eq(rdmx_rpc_stream_get_queued(stalled.s), RDMX_RPC_STREAM_WINDOW,
		             "the stalled stream grew");
		cr_assert_eq(sc.ss.st[0].sent, RDMX_RPC_STREAM_WINDOW);
	}
	/* reading again: everything arrives, never more than a window waiting */
	ASSERT_OK(rdmx_rpc_stream_resume_read(stalled.s));
	DRIVE_UNTIL(&sc.a, &sc.b, stalled.done_n);
	cr_assert_eq(stalled.code, RDMX_RPC_OK, "%s", stalled.msg);
	cr_assert_eq(stalled.got, 1000);
	cr_assert_eq(stalled.bad, 0);
	cr_assert_leq(stalled.max_queued, RDMX_RPC_STREAM_WINDOW);
	scene_close(&sc);
}

/* A client writer blocked by a server that does not read gets AGAIN and
 * one on_writable once the reader returns credits; a smaller window is
 * honoured. */
Test(stream, writer_backpressure_and_writable_cb)
{
	struct scene sc;
	struct cstream x = {0};
	struct rdmx_rpc_payload p = rdmx_rpc_bytes("abcd", 4);
	int n = 0, rc;

	scene_open(&sc, NULL);
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, BIDI, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs, &x, &x.s));
	DRIVE_UNTIL(&sc.a, &sc.b, sc.ss.n == 1);
	/* the client does not read: the server's echo blocks, then pauses its
	 * reading, then the client's writes block */
	ASSERT_OK(rdmx_rpc_stream_pause_read(x.s));
	for (;;) {
		rc = rdmx_rpc_stream_write(x.s, &p);
		if (rc == RDMX_E_AGAIN) {
			drive_for(&sc.a, &sc.b, 2);
			if ((rc = rdmx_rpc_stream_write(x.s, &p)) == RDMX_E_AGAIN &&
			    x.writable_n == 0)
				break;
		}
		cr_assert(rc == 0 || rc == RDMX_E_AGAIN, "%s", rdmx_err_name(rc));
		if (rc == 0)
			n++;
		drive_once(&sc.a, &sc.b);
		cr_assert(n < 100000, "writes never blocked");
	}
	/* bounded: the server echoed what the client's 16 credits at open let
	 * it (the client never read), holds one echo, and queues at most its
	 * byte window (plus one message) while paused; the client queues 16 */
	cr_assert_leq(rdmx_rpc_stream_get_queued(x.s), RDMX_RPC_STREAM_WINDOW);
	cr_assert_leq(rdmx_rpc_stream_get_queued_bytes(sc.ss.st[0].s),
	              RDMX_RPC_STREAM_WINDOW_BYTES + cost(4));
	cr_assert_leq((uint64_t)n * cost(4),
	              RDMX_RPC_STREAM_WINDOW_BYTES + (2 * RDMX_RPC_STREAM_WINDOW + 2) * cost(4));
	cr_assert_gt(n, 2 * RDMX_RPC_STREAM_WINDOW + 1, "the byte window, not 16 messages, binds");
	ASSERT_OK(rdmx_rpc_stream_resume_read(x.s));
	DRIVE_UNTIL(&sc.a, &sc.b, x.writable_n == 1);
	ASSERT_OK(rdmx_rpc_stream_write(x.s, &p));
	n++;
	ASSERT_OK(rdmx_rpc_stream_half_close(x.s));
	DRIVE_UNTIL(&sc.a, &sc.b, x.done_n);
	cr_assert_eq(x.code, RDMX_RPC_OK);
	cr_assert_eq((int)x.got, n);
	/* window 1: one message in flight at a time */
	struct cstream y = {0};
	struct rdmx_rpc_stream_opts o = {.window = 1};
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, &o, &ccbs, &y, &y.s));
	ASSERT_OK(rdmx_rpc_stream_pause_read(y.s));
	source_req(y.s, 50, 8);
	/* the first 16 credits were granted at open; no more come back */
	DRIVE_UNTIL(&sc.a, &sc.b, rdmx_rpc_stream_get_queued(y.s) == RDMX_RPC_STREAM_WINDOW);
	ASSERT_OK(rdmx_rpc_stream_resume_read(y.s));
	DRIVE_UNTIL(&sc.a, &sc.b, y.done_n);
	cr_assert_eq(y.got, 50);
	cr_assert_leq(y.max_queued, RDMX_RPC_STREAM_WINDOW);
	scene_close(&sc);
}

/* Cancel at every point around the last message: each side ends once. */
Test(stream, cancel_races_last_message, .timeout = 300)
{
	struct scene sc;
	enum { R = 60 };
	static struct cstream x[R];

	scene_open(&sc, NULL);
	memset(x, 0, sizeof(x));
	int cancelled = 0;
	for (int i = 0; i < R; i++) {
		ASSERT_OK(rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, NULL,
		                               &ccbs, &x[i], &x[i].s));
		source_req(x[i].s, 1, 16);
		for (int k = 0; k < i % 12; k++)
			drive_once(&sc.a, &sc.b);
		if (x[i].done_n == 0) {
			ASSERT_OK(rdmx_rpc_stream_cancel(x[i].s));
			cancelled++;
		}
		cr_assert_eq(x[i].done_n, 1);
	}
	DRIVE_UNTIL(&sc.a, &sc.b, sc.ss.done == R);
	drive_for(&sc.a, &sc.b, 20);
	for (int i = 0; i < R; i++) {
		cr_assert_eq(x[i].done_n, 1, "stream %d ended %d times", i, x[i].done_n);
		cr_assert(x[i].code == RDMX_RPC_OK || x[i].code == RDMX_RPC_CANCELLED);
	}
	for (int i = 0; i < R; i++)
		cr_assert_eq(sc.ss.st[i].done_n, 1, "server stream %d ended %d times", i,
		             sc.ss.st[i].done_n);
	cr_assert_eq(sc.ss.by_code[RDMX_RPC_OK] + sc.ss.by_code[RDMX_RPC_CANCELLED], R);
	cr_assert(cancelled > 0);
	/* the server cancels too */
	struct cstream y = {0};
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, HOLD_S, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs, &y, &y.s));
	DRIVE_UNTIL(&sc.a, &sc.b, sc.ss.n == R + 1);
	ASSERT_OK(rdmx_rpc_stream_cancel(sc.ss.st[R].s));
	cr_assert_eq(sc.ss.st[R].done_n, 1);
	cr_assert_eq(sc.ss.st[R].code, RDMX_RPC_CANCELLED);
	DRIVE_UNTIL(&sc.a, &sc.b, y.done_n);
	cr_assert_eq(y.code, RDMX_RPC_CANCELLED);
	scene_close(&sc);
}

Test(stream, deadline_mid_stream)
{
	struct scene sc;
	struct cstream x = {0};
	struct rdmx_rpc_stream_opts o = {.timeout_us = 100000};

	scene_open(&sc, NULL);
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, HOLD_S, RDMX_RPC_BIDI_STREAMING, &o, &ccbs, &x, &x.s));
	cr_assert(rdmx_rpc_stream_get_deadline(x.s) > 0);
	write_n(&sc, &x, 3, 10);
	DRIVE_UNTIL(&sc.a, &sc.b, sc.ss.n == 1 && sc.ss.st[0].got == 3);
	cr_assert(rdmx_rpc_stream_get_deadline(sc.ss.st[0].s) > 0, "the server sees no deadline");
	DRIVE_UNTIL(&sc.a, &sc.b, x.done_n && sc.ss.done == 1);
	cr_assert_eq(x.code, RDMX_RPC_DEADLINE_EXCEEDED, "%s", rdmx_rpc_code_name(x.code));
	cr_assert_eq(sc.ss.st[0].code, RDMX_RPC_DEADLINE_EXCEEDED);
	drive_for(&sc.a, &sc.b, 5);
	cr_assert_eq(x.done_n, 1);
	cr_assert_eq(sc.ss.st[0].done_n, 1);
	/* the connection goes on */
	unary_done = 0;
	ASSERT_OK(rdmx_rpc_call_async(sc.ra, ECHO, NULL, NULL, unary_cb, NULL, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, unary_done);
	cr_assert_eq(unary_code, RDMX_RPC_OK);
	scene_close(&sc);
}

Test(stream, metadata_rich_status_and_limits)
{
	struct scene sc;
	struct rdmx_rpc_md h;
	struct cstream x = {0};
	struct rdmx_rpc_stream_opts o = {.headers = &h};
	const uint8_t trace[5] = {0, 0xff, 7, 0, 1};

	/* keys and values */
	rdmx_rpc_md_init(&h);
	ASSERT_RC(rdmx_rpc_md_add_str(&h, "X-Upper", "v"), RDMX_E_INVAL);
	ASSERT_RC(rdmx_rpc_md_add_str(&h, "", "v"), RDMX_E_INVAL);
	ASSERT_RC(rdmx_rpc_md_add(&h, "text", "\n", 1), RDMX_E_INVAL);
	ASSERT_RC(rdmx_rpc_md_add(&h, "trace", trace, sizeof(trace)), RDMX_E_INVAL);
	cr_assert_eq(rdmx_rpc_md_count(&h), 0);
	ASSERT_OK(rdmx_rpc_md_add_str(&h, "x-request-id", "req-42"));
	ASSERT_OK(rdmx_rpc_md_add(&h, "trace-bin", trace, sizeof(trace)));
	ASSERT_OK(rdmx_rpc_md_add_str(&h, "dup", "1"));
	ASSERT_OK(rdmx_rpc_md_add_str(&h, "dup", "2"));
	cr_assert_eq(rdmx_rpc_md_count(&h), 4);

	scene_open(&sc, NULL);
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, META, RDMX_RPC_SERVER_STREAMING, &o, &ccbs, &x, &x.s));
	ASSERT_OK(rdmx_rpc_stream_half_close(x.s));
	DRIVE_UNTIL(&sc.a, &sc.b, x.done_n);
	cr_assert_eq(x.hdr_n, 1);
	cr_assert_str_eq(x.hdr_id, "req-42");
	cr_assert_eq(x.got, 1);
	cr_assert_eq(x.code, RDMX_RPC_FAILED_PRECONDITION);
	cr_assert_str_eq(x.msg, "not ready");
	cr_assert_eq(x.details_len, 4);
	cr_assert_eq(memcmp(x.details, "\x01\x02\x00\x03", 4), 0);
	cr_assert_str_eq(x.trailer, "last");

	/* request headers over the server's limit: RESOURCE_EXHAUSTED, connection kept */
	char big[600];
	memset(big, 'q', sizeof(big));
	ASSERT_OK(rdmx_rpc_md_add(&h, "big", big, sizeof(big)));
	ASSERT_OK(rdmx_rpc_ep_set_max_metadata(sc.rb, 512));
	struct cstream y = {0};
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, META, RDMX_RPC_SERVER_STREAMING, &o, &ccbs, &y, &y.s));
	DRIVE_UNTIL(&sc.a, &sc.b, y.done_n);
	cr_assert_eq(y.code, RDMX_RPC_RESOURCE_EXHAUSTED, "%s", rdmx_rpc_code_name(y.code));
	/* and over our own limit: refused before it goes */
	ASSERT_OK(rdmx_rpc_ep_set_max_metadata(sc.ra, 512));
	struct rdmx_rpc_stream *z;
	ASSERT_RC(rdmx_rpc_stream_open(sc.ra, META, RDMX_RPC_SERVER_STREAMING, &o, &ccbs, &y, &z),
	          RDMX_E_TOO_BIG);
	ASSERT_OK(rdmx_rpc_ep_set_max_metadata(sc.rb, RDMX_RPC_DEFAULT_MAX_MD));
	/* trailers over the client's limit: the client ends it RESOURCE_EXHAUSTED */
	rdmx_rpc_md_fini(&h);
	ASSERT_OK(rdmx_rpc_md_add_str(&h, "x-request-id", "r"));
	ASSERT_OK(rdmx_rpc_md_add(&h, "trace-bin", trace, 1));
	ASSERT_OK(rdmx_rpc_md_add_str(&h, "big-trailers", "1"));
	struct cstream w = {0};
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, META, RDMX_RPC_SERVER_STREAMING, &o, &ccbs, &w, &w.s));
	DRIVE_UNTIL(&sc.a, &sc.b, w.done_n);
	cr_assert_eq(w.code, RDMX_RPC_RESOURCE_EXHAUSTED, "%s", rdmx_rpc_code_name(w.code));
	cr_assert_eq(rdmx_chan_get_state(rdmx_rpc_ep_get_chan(sc.ra)), RDMX_CHAN_READY);
	unary_done = 0;
	ASSERT_OK(rdmx_rpc_call_async(sc.ra, ECHO, NULL, NULL, unary_cb, NULL, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, unary_done);
	cr_assert_eq(unary_code, RDMX_RPC_OK);
	/* wrong kind, unknown method, unary call to a stream method */
	struct cstream k = {0}, u = {0};
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, META, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs, &k, &k.s));
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, 12345, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs, &u, &u.s));
	unary_done = 0;
	ASSERT_OK(rdmx_rpc_call_async(sc.ra, BIDI, NULL, NULL, unary_cb, NULL, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, k.done_n && u.done_n && unary_done);
	cr_assert_eq(k.code, RDMX_RPC_UNIMPLEMENTED);
	cr_assert_eq(u.code, RDMX_RPC_UNIMPLEMENTED);
	cr_assert_eq(unary_code, RDMX_RPC_UNIMPLEMENTED);
	rdmx_rpc_md_fini(&h);
	scene_close(&sc);
}

/* ---- peer death: the server is another process, killed with 100 streams ---- */

static uint32_t child_got;
static void child_msg(struct rdmx_rpc_stream *s, const void *d, size_t l, void *arg)
{
	(void)s;
	(void)d;
	(void)l;
	(void)arg;
	child_got++;
}
static void child_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *a)
{
	(void)s;
	(void)st;
	(void)a;
}
static void child_stream(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_msg = child_msg, .on_done = child_done};
	(void)arg;
	if (rdmx_rpc_stream_set_callbacks(s, &cbs, NULL))
		_exit(20);
}

static int child_setup(struct rdmx_rpc_server *srv)
{
	return rdmx_rpc_server_register_stream(srv, rdmx_rpc_method_id(HOLD_S_NAME), HOLD_S_NAME,
	                                       RDMX_RPC_BIDI_STREAMING, child_stream, NULL);
}

static bool child_ready(void)
{
	return child_got >= 100;
}

Test(stream, peer_killed_with_100_streams_open, .timeout = 300)
{
	struct node a;
	struct peer_proc p;
	static struct cstream x[100];

	ids();
	memset(x, 0, sizeof(x));
	peer_proc_open(&a, child_setup, child_ready, &p);
	struct rdmx_rpc_stream_opts o = {.timeout_us = 120u * 1000000u};
	for (int i = 0; i < 100; i++) {
		struct rdmx_rpc_payload pl = rdmx_rpc_bytes("hi", 2);

		ASSERT_OK(rdmx_rpc_stream_open(p.ep, HOLD_S, RDMX_RPC_BIDI_STREAMING, &o, &ccbs,
		                               &x[i], &x[i].s));
		ASSERT_OK(rdmx_rpc_stream_write(x[i].s, &pl));
	}
	peer_proc_wait_ready(&a, &p, "the child never held 100 streams");
	cr_assert_eq(rdmx_rpc_ep_get_streams(p.ep), 100);
	peer_proc_kill(&p);
	int done;
	DRIVE_UNTIL(&a, NULL,
	            (done = 0, ({
		             for (int i = 0; i < 100; i++)
			             done += x[i].done_n;
	             }),
	             done == 100));
	drive_for(&a, NULL, 20);
	for (int i = 0; i < 100; i++) {
		cr_assert_eq(x[i].done_n, 1, "stream %d ended %d times", i, x[i].done_n);
		cr_assert_eq(x[i].code, RDMX_RPC_UNAVAILABLE, "stream %d: %s", i,
		             rdmx_rpc_code_name(x[i].code));
	}
	cr_assert_eq(rdmx_rpc_ep_get_streams(p.ep), 0);
	peer_proc_close(&p);
	node_close(&a);
}

/* Destroying the endpoint ends every stream of both sides once. */
Test(stream, endpoint_destroy_ends_streams)
{
	struct scene sc;
	static struct cstream x[20];

	scene_open(&sc, NULL);
	memset(x, 0, sizeof(x));
	for (int i = 0; i < 20; i++)
		ASSERT_OK(rdmx_rpc_stream_open(sc.ra, HOLD_S, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs,
		                               &x[i], &x[i].s));
	DRIVE_UNTIL(&sc.a, &sc.b, sc.ss.n == 20);
	struct rdmx_chan *cb = rdmx_rpc_ep_get_chan(sc.rb);
	ASSERT_OK(rdmx_rpc_ep_destroy(&sc.rb));
	cr_assert_eq(sc.ss.done, 20);
	cr_assert_eq(sc.ss.by_code[RDMX_RPC_UNAVAILABLE], 20);
	ASSERT_OK(rdmx_chan_destroy(&cb));
	int done;
	DRIVE_UNTIL(&sc.a, &sc.b,
	            (done = 0, ({
		             for (int i = 0; i < 20; i++)
			             done += x[i].done_n;
	             }),
	             done == 20));
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(x[i].done_n, 1);
		cr_assert_eq(x[i].code, RDMX_RPC_UNAVAILABLE);
	}
	struct rdmx_chan *ca = rdmx_rpc_ep_get_chan(sc.ra);
	ASSERT_OK(rdmx_rpc_ep_destroy(&sc.ra));
	ASSERT_OK(rdmx_chan_destroy(&ca));
	ASSERT_OK(rdmx_rpc_server_destroy(&sc.srv));
	node_close(&sc.a);
	node_close(&sc.b);
}

/* ---- hostile stream frames: a raw channel speaks to an endpoint ---- */

static int raw_closed;
static void raw_recv(struct rdmx_chan *c, const void *d, size_t l, void *arg)
{
	(void)c;
	(void)d;
	(void)l;
	(void)arg;
}
static void raw_event(struct rdmx_chan *c, enum rdmx_chan_event ev, int st, void *arg)
{
	(void)c;
	(void)st;
	(void)arg;
	if (ev == RDMX_CHAN_EV_CLOSED)
		raw_closed++;
}

static size_t frame(uint8_t *b, uint8_t type, uint8_t flags, uint32_t word, uint64_t id)
{
	memset(b, 0, 64);
	b[0] = type;
	b[1] = flags;
	for (int i = 0; i < 4; i++)
		b[4 + i] = (uint8_t)(word >> (8 * i));
	for (int i = 0; i < 8; i++)
		b[8 + i] = (uint8_t)(id >> (8 * i));
	return 24;
}

enum hostile_case {
	H_UNKNOWN_ID,
	H_AFTER_END,
	H_WINDOW_OVERRUN,
	H_REUSED_ID,
	H_BAD_MD,
	H_UNARY_BAD_MD,
	H_BATCH_TRUNCATED,
	H_BATCH_OVERRUN,
	H_BYTES_OVERRUN,
	H_BATCH_BYTES_OVERRUN
};

static void hostile_run(enum hostile_case hc)
{
	struct scene sc;
	struct chan_conf rc = {.recv_cb = raw_recv, .event_cb = raw_event};
	struct rdmx_chan *p, *q;
	struct rdmx_rpc_ep *victim;
	uint8_t b[64];
	size_t n;
	int closed = 0;

	scene_open(&sc, NULL);
	raw_closed = 0;
	chan_pair(&sc.a, &sc.b, &rc, NULL, &p, &q, false);
	ASSERT_OK(rdmx_rpc_ep_create(q, sc.srv, &victim));
	DRIVE_UNTIL(&sc.a, &sc.b,
	            rdmx_chan_get_state(p) == RDMX_CHAN_READY &&
	                rdmx_chan_get_state(q) == RDMX_CHAN_READY);
	log_capture_begin();
	/* an open (empty headers) of a stream that never reads */
	n = frame(b, 5, RDMX_RPC_BIDI_STREAMING, MUTE, 7);
	b[n] = b[n + 1] = 0;
	n += 2;
	if (hc == H_BAD_MD) {
		b[n - 2] = 1; /* one entry, its key upper case */
		b[n++] = 1;
		b[n++] = 'K';
		memset(b + n, 0, 4);
		n += 4;
	}
	ASSERT_OK(rdmx_chan_send(p, b, n, NULL, NULL));
	switch (hc) {
	case H_UNKNOWN_ID:
		n = frame(b, 7, 0, 0, 99);
		ASSERT_OK(rdmx_chan_send(p, b, n + 3, NULL, NULL));
		break;
	case H_AFTER_END:
		n = frame(b, 8, 0, 0, 7);
		ASSERT_OK(rdmx_chan_send(p, b, n, NULL, NULL));
		n = frame(b, 7, 0, 0, 7);
		ASSERT_OK(rdmx_chan_send(p, b, n + 1, NULL, NULL));
		break;
	case H_WINDOW_OVERRUN:
		for (unsigned i = 0; i <= RDMX_RPC_STREAM_WINDOW; i++) {
			n = frame(b, 7, 0, 0, 7);
			ASSERT_OK(rdmx_chan_send(p, b, n + 1, NULL, NULL));
		}
		break;
	case H_REUSED_ID:
		n = frame(b, 5, RDMX_RPC_BIDI_STREAMING, MUTE, 7);
		b[n] = b[n + 1] = 0;
		ASSERT_OK(rdmx_chan_send(p, b, n + 2, NULL, NULL));
		break;
	case H_BAD_MD:
		break;
	case H_BATCH_TRUNCATED: /* a batch of 3 whose second message runs past the end */
		n = frame(b, 7, 0, 3, 7);
		memset(b + n, 0, 12);
		b[n] = 1;     /* 1 byte */
		b[n + 5] = 9; /* 9 bytes, 3 left */
		ASSERT_OK(rdmx_chan_send(p, b, n + 12, NULL, NULL));
		break;
	case H_BATCH_OVERRUN: { /* a batch of more empty messages than the window */
		uint8_t big[24 + 4 * (RDMX_RPC_STREAM_WINDOW + 1)];

		n = frame(b, 7, 0, RDMX_RPC_STREAM_WINDOW + 1, 7);
		memcpy(big, b, n);
		memset(big + n, 0, sizeof(big) - n);
		ASSERT_OK(rdmx_chan_send(p, big, sizeof(big), NULL, NULL));
		break;
	}
	case H_BYTES_OVERRUN:         /* 5 x a quarter window: the 5th starts past it */
	case H_BATCH_BYTES_OVERRUN: { /* the same 5 in one batch (5 < 16 messages) */
		const size_t ml = RDMX_RPC_STREAM_WINDOW_BYTES / 4, one = 24 + ml,
		             batch = 24 + 5 * (4 + ml);
		uint8_t *big = calloc(1, batch);

		cr_assert_not_null(big);
		if (hc == H_BYTES_OVERRUN) {
			n = frame(b, 7, 0, 0, 7);
			memcpy(big, b, n);
			for (int i = 0; i < 5; i++)
				ASSERT_OK(rdmx_chan_send(p, big, one, NULL, NULL));
		} else {
			n = frame(b, 7, 0, 5, 7);
			memcpy(big, b, n);
			for (int i = 0; i < 5; i++) {
				uint8_t *m = big + n + (size_t)i * (4 + ml);

				for (int k = 0; k < 4; k++)
					m[k] = (uint8_t)(ml >> (8 * k));
			}
			ASSERT_OK(rdmx_chan_send(p, big, batch, NULL, NULL));
		}
		free(big);
		break;
	}
	case H_UNARY_BAD_MD: /* a unary request whose headers lie about their length */
		n = frame(b, 1, 2, ECHO, 8);
		b[n++] = 1;
		b[n++] = 0;
		b[n++] = 3;
		b[n++] = 'k';
		ASSERT_OK(rdmx_chan_send(p, b, n, NULL, NULL));
		break;
	}
	DRIVE_UNTIL(&sc.a, &sc.b, rdmx_chan_get_state(q) == RDMX_CHAN_CLOSED);
	closed = log_capture_count("rpc");
	log_capture_end();
	cr_assert(closed >= 1, "no log line for the violation");
	/* a stream the victim accepted ended once, UNAVAILABLE */
	cr_assert_eq(sc.ss.done, sc.ss.n);
	for (uint32_t i = 0; i < sc.ss.n; i++) {
		cr_assert_eq(sc.ss.st[i].done_n, 1);
		cr_assert_eq(sc.ss.st[i].code, RDMX_RPC_UNAVAILABLE);
	}
	/* the other connection is untouched */
	struct cstream x = {0};
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, NULL, &ccbs, &x, &x.s));
	source_req(x.s, 20, 10);
	unary_done = 0;
	ASSERT_OK(rdmx_rpc_call_async(sc.ra, ECHO, NULL, NULL, unary_cb, NULL, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, x.done_n && unary_done);
	cr_assert_eq(x.code, RDMX_RPC_OK);
	cr_assert_eq(x.got, 20);
	cr_assert_eq(unary_code, RDMX_RPC_OK);
	ASSERT_OK(rdmx_rpc_ep_destroy(&victim));
	ASSERT_OK(rdmx_chan_destroy(&q));
	DRIVE_UNTIL(&sc.a, &sc.b, raw_closed || rdmx_chan_get_state(p) == RDMX_CHAN_CLOSED);
	ASSERT_OK(rdmx_chan_destroy(&p));
	scene_close(&sc);
}

Test(stream, hostile_unknown_stream_id)
{
	hostile_run(H_UNKNOWN_ID);
}

Test(stream, hostile_frame_after_end)
{
	hostile_run(H_AFTER_END);
}

Test(stream, hostile_window_overrun)
{
	hostile_run(H_WINDOW_OVERRUN);
}

Test(stream, hostile_reused_stream_id)
{
	hostile_run(H_REUSED_ID);
}

Test(stream, hostile_bad_metadata)
{
	hostile_run(H_BAD_MD);
}

Test(stream, hostile_batch_truncated)
{
	hostile_run(H_BATCH_TRUNCATED);
}

Test(stream, hostile_batch_beyond_window)
{
	hostile_run(H_BATCH_OVERRUN);
}

/* The byte window: 5 messages of a quarter window each to a stream that
 * never reads, alone or in one batch, run past the bytes granted at open. */
Test(stream, hostile_byte_window_overrun)
{
	hostile_run(H_BYTES_OVERRUN);
}

Test(stream, hostile_batch_byte_window_overrun)
{
	hostile_run(H_BATCH_BYTES_OVERRUN);
}

/* ---- unary calls: metadata, request id, rich status ---- */

static uint64_t umeta_req_id;
static void umeta_handler(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	const void *v;
	size_t n;
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(req, len);

	(void)arg;
	umeta_req_id = rdmx_rpc_call_get_request_id(call);
	if (rdmx_rpc_md_get(rdmx_rpc_call_get_headers(call), "x-request-id", &v, &n) == 0)
		ASSERT_OK(rdmx_rpc_call_add_header(call, "x-request-id", v, n));
	if (rdmx_rpc_md_get(rdmx_rpc_call_get_headers(call), "big-trailers", &v, &n) == 0) {
		static char big[2000];
		memset(big, 'b', sizeof(big));
		ASSERT_OK(rdmx_rpc_call_add_trailer(call, "pad", big, sizeof(big)));
	}
	ASSERT_RC(rdmx_rpc_call_add_trailer(call, "Bad", "x", 1), RDMX_E_INVAL);
	ASSERT_OK(rdmx_rpc_call_add_trailer(call, "x-trailer", "t1", 2));
	ASSERT_OK(rdmx_rpc_call_set_details(call, "\x00\x09\x08", 3));
	ASSERT_OK(rdmx_rpc_respond(call, RDMX_RPC_PERMISSION_DENIED, "no", &p));
}

struct urec {
	int done;
	enum rdmx_rpc_code code;
	size_t len, details_len;
	char hdr[32], trailer[32];
	uint8_t details[8];
};

static void urec_cb(const struct rdmx_rpc_result *r, void *arg)
{
	struct urec *u = arg;
	const void *v;
	size_t n;

	u->done++;
	u->code = r->code;
	u->len = r->len;
	cr_assert_not_null(r->headers);
	cr_assert_not_null(r->trailers);
	if (rdmx_rpc_md_get(r->headers, "x-request-id", &v, &n) == 0 && n < sizeof(u->hdr))
		memcpy(u->hdr, v, n);
	if (rdmx_rpc_md_get(r->trailers, "x-trailer", &v, &n) == 0 && n < sizeof(u->trailer))
		memcpy(u->trailer, v, n);
	u->details_len = r->details_len;
	if (r->details_len <= sizeof(u->details) && r->details_len)
		memcpy(u->details, r->details, r->details_len);
}

Test(stream, unary_metadata_request_id_rich_status)
{
	struct scene sc;
	struct rdmx_rpc_md h;
	uint32_t UMETA = rdmx_rpc_method_id("test.Stream/UMeta");
	struct rdmx_rpc_payload p = rdmx_rpc_bytes("body", 4);
	uint64_t id = 0;

	scene_open(&sc, NULL);
	ASSERT_OK(
	    rdmx_rpc_server_register(sc.srv, UMETA, "test.Stream/UMeta", umeta_handler, NULL));
	rdmx_rpc_md_init(&h);
	ASSERT_OK(rdmx_rpc_md_add_str(&h, "x-request-id", "u-7"));
	struct urec u = {0};
	ASSERT_OK(rdmx_rpc_call_async_md(sc.ra, UMETA, &p, NULL, &h, urec_cb, &u, &id));
	DRIVE_UNTIL(&sc.a, &sc.b, u.done);
	cr_assert_eq(u.code, RDMX_RPC_PERMISSION_DENIED);
	cr_assert_eq(u.len, 4);
	cr_assert_str_eq(u.hdr, "u-7");
	cr_assert_str_eq(u.trailer, "t1");
	cr_assert_eq(u.details_len, 3);
	cr_assert_eq(memcmp(u.details, "\x00\x09\x08", 3), 0);
	cr_assert_eq(umeta_req_id, id, "the server sees another request id");
	/* plain calls still carry empty lists */
	struct urec v = {0};
	ASSERT_OK(rdmx_rpc_call_async(sc.ra, UMETA, &p, NULL, urec_cb, &v, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, v.done);
	cr_assert_eq(v.code, RDMX_RPC_PERMISSION_DENIED);
	cr_assert_str_eq(v.hdr, "");
	/* request headers over the server's limit */
	char big[700];
	memset(big, 'q', sizeof(big));
	ASSERT_OK(rdmx_rpc_md_add(&h, "big", big, sizeof(big)));
	ASSERT_OK(rdmx_rpc_ep_set_max_metadata(sc.rb, 512));
	struct urec w = {0};
	ASSERT_OK(rdmx_rpc_call_async_md(sc.ra, UMETA, &p, NULL, &h, urec_cb, &w, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, w.done);
	cr_assert_eq(w.code, RDMX_RPC_RESOURCE_EXHAUSTED, "%s", rdmx_rpc_code_name(w.code));
	ASSERT_OK(rdmx_rpc_ep_set_max_metadata(sc.ra, 512));
	ASSERT_RC(rdmx_rpc_call_async_md(sc.ra, UMETA, &p, NULL, &h, urec_cb, &w, NULL),
	          RDMX_E_TOO_BIG);
	ASSERT_OK(rdmx_rpc_ep_set_max_metadata(sc.rb, RDMX_RPC_DEFAULT_MAX_MD));
	/* response trailers over the client's limit */
	rdmx_rpc_md_fini(&h);
	ASSERT_OK(rdmx_rpc_md_add_str(&h, "big-trailers", "1"));
	struct urec x = {0};
	ASSERT_OK(rdmx_rpc_call_async_md(sc.ra, UMETA, &p, NULL, &h, urec_cb, &x, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, x.done);
	cr_assert_eq(x.code, RDMX_RPC_RESOURCE_EXHAUSTED, "%s", rdmx_rpc_code_name(x.code));
	/* and over the server's own limit: it sends RESOURCE_EXHAUSTED instead */
	ASSERT_OK(rdmx_rpc_ep_set_max_metadata(sc.ra, RDMX_RPC_DEFAULT_MAX_MD));
	ASSERT_OK(rdmx_rpc_ep_set_max_metadata(sc.rb, 512));
	struct urec y = {0};
	ASSERT_OK(rdmx_rpc_call_async_md(sc.ra, UMETA, &p, NULL, &h, urec_cb, &y, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, y.done);
	cr_assert_eq(y.code, RDMX_RPC_RESOURCE_EXHAUSTED, "%s", rdmx_rpc_code_name(y.code));
	cr_assert_eq(y.len, 0);
	/* the connection stays */
	unary_done = 0;
	ASSERT_OK(rdmx_rpc_call_async(sc.ra, ECHO, NULL, NULL, unary_cb, NULL, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, unary_done);
	cr_assert_eq(unary_code, RDMX_RPC_OK);
	rdmx_rpc_md_fini(&h);
	scene_close(&sc);
}

Test(stream, hostile_unary_bad_metadata)
{
	hostile_run(H_UNARY_BAD_MD);
}

/* ---- interceptors ---- */

struct ic_log {
	char seq[512];
	int msgs_out, msgs_in, dones;
	bool reject;
	enum rdmx_rpc_code last_code;
	uint64_t deadline_ns; /* the last start's */
};

static void ic_note(struct ic_log *l, const char *what)
{
	size_t n = strlen(l->seq);

	snprintf(l->seq + n, sizeof(l->seq) - n, "%s ", what);
}

struct ic_arg {
	struct ic_log *log;
	const char *name; /* "A", "B", "S1", "S2" */
	const char *key;  /* header it adds, or NULL */
};

static enum rdmx_rpc_code ic_start(const struct rdmx_rpc_call_info *info,
                                   struct rdmx_rpc_md *annotate, const char **message, void **state,
                                   void *arg)
{
	struct ic_arg *a = arg;
	char w[16];

	snprintf(w, sizeof(w), "s%s", a->name);
	ic_note(a->log, w);
	a->log->deadline_ns = info->deadline_ns;
	*state = a;
	if (a->key)
		ASSERT_OK(rdmx_rpc_md_add_str(annotate, a->key, a->name));
	if (info->role == RDMX_RPC_ROLE_SERVER && strcmp(a->name, "S1") == 0) {
		const void *v;
		size_t n;

		if (rdmx_rpc_md_get(info->headers, "authorization", &v, &n) ||
		    n != strlen("Bearer t0k") || memcmp(v, "Bearer t0k", n)) {
			*message = "bad token";
			return RDMX_RPC_UNAUTHENTICATED;
		}
		/* the client chain's annotations arrived in order */
		cr_assert(rdmx_rpc_md_count(info->headers) >= 3);
		cr_assert_str_eq(info->headers->v[1].key, "x-a");
		cr_assert_str_eq(info->headers->v[2].key, "x-b");
		cr_assert_not_null(info->method_name);
	}
	if (a->log->reject && strcmp(a->name, "B") == 0) {
		*message = "refused by B";
		return RDMX_RPC_PERMISSION_DENIED;
	}
	return RDMX_RPC_OK;
}

static void ic_message(const struct rdmx_rpc_call_info *info, bool outgoing, const void *data,
                       size_t len, void *state, void *arg)
{
	struct ic_arg *a = arg;

	(void)info;
	(void)data;
	(void)len;
	cr_assert_eq(state, a);
	if (outgoing)
		a->log->msgs_out++;
	else
		a->log->msgs_in++;
}

static void ic_done(const struct rdmx_rpc_call_info *info, enum rdmx_rpc_code code,
                    const char *message, void *state, void *arg)
{
	struct ic_arg *a = arg;
	char w[16];

	(void)info;
	(void)message;
	cr_assert_eq(state, a);
	snprintf(w, sizeof(w), "d%s", a->name);
	ic_note(a->log, w);
	a->log->dones++;
	a->log->last_code = code;
}

static const struct rdmx_rpc_interceptor test_ic = {ic_start, ic_message, ic_done};

Test(stream, interceptor_order_reject_annotate)
{
	struct scene sc;
	struct ic_log cl = {0}, sl = {0};
	struct ic_arg A = {&cl, "A", "x-a"}, B = {&cl, "B", "x-b"};
	struct ic_arg S1 = {&sl, "S1", NULL}, S2 = {&sl, "S2", "x-served-by"};
	struct rdmx_rpc_md h;
	struct rdmx_rpc_payload p = rdmx_rpc_bytes("ping", 4);

	scene_open(&sc, NULL);
	ASSERT_OK(rdmx_rpc_ep_add_interceptor(sc.ra, &test_ic, &A));
	ASSERT_OK(rdmx_rpc_ep_add_interceptor(sc.ra, &test_ic, &B));
	ASSERT_OK(rdmx_rpc_server_add_interceptor(sc.srv, &test_ic, &S1));
	ASSERT_OK(rdmx_rpc_server_add_interceptor(sc.srv, &test_ic, &S2));
	rdmx_rpc_md_init(&h);
	ASSERT_OK(rdmx_rpc_md_add_str(&h, "authorization", "Bearer t0k"));

	/* unary: both chains in order, messages seen, annotations delivered */
	struct urec u = {0};
	uint32_t echoed = sc.ss.echo.echoed;
	ASSERT_OK(rdmx_rpc_call_async_md(sc.ra, ECHO, &p, NULL, &h, urec_cb, &u, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, u.done);
	cr_assert_eq(u.code, RDMX_RPC_OK);
	cr_assert_str_eq(cl.seq, "sA sB dB dA ");
	cr_assert_str_eq(sl.seq, "sS1 sS2 dS2 dS1 ");
	cr_assert_eq(cl.msgs_out, 2); /* the request, seen by A and B */
	cr_assert_eq(cl.msgs_in, 2);  /* the reply */
	cr_assert_eq(sl.msgs_in, 2);
	cr_assert_eq(sl.msgs_out, 2);
	cr_assert_eq(sc.ss.echo.echoed, echoed + 1);

	/* the server's auth check refuses a call without the token: the
	 * handler never runs, both of the server's interceptors see the end */
	memset(&cl, 0, sizeof(cl));
	memset(&sl, 0, sizeof(sl));
	struct urec v = {0};
	ASSERT_OK(rdmx_rpc_call_async(sc.ra, ECHO, &p, NULL, urec_cb, &v, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, v.done);
	cr_assert_eq(v.code, RDMX_RPC_UNAUTHENTICATED);
	cr_assert_eq(sc.ss.echo.echoed, echoed + 1, "the handler ran for a refused call");
	cr_assert_str_eq(sl.seq, "sS1 dS1 ");
	cr_assert_str_eq(cl.seq, "sA sB dB dA ");

	/* a client interceptor refuses: from progress, nothing reaches the server */
	memset(&cl, 0, sizeof(cl));
	memset(&sl, 0, sizeof(sl));
	cl.reject = true;
	struct urec w = {0};
	ASSERT_OK(rdmx_rpc_call_async_md(sc.ra, ECHO, &p, NULL, &h, urec_cb, &w, NULL));
	cr_assert_eq(w.done, 0, "the callback ran inside call_async");
	DRIVE_UNTIL(&sc.a, &sc.b, w.done);
	cr_assert_eq(w.code, RDMX_RPC_PERMISSION_DENIED);
	cr_assert_str_eq(cl.seq, "sA sB dB dA ");
	drive_for(&sc.a, &sc.b, 5);
	cr_assert_str_eq(sl.seq, "");

	/* streams: the same chains, every message, the end once */
	memset(&cl, 0, sizeof(cl));
	memset(&sl, 0, sizeof(sl));
	struct cstream x = {.echo_check = true};
	struct rdmx_rpc_stream_opts o = {.headers = &h};
	ASSERT_OK(rdmx_rpc_stream_open(sc.ra, BIDI, RDMX_RPC_BIDI_STREAMING, &o, &ccbs, &x, &x.s));
	write_n(&sc, &x, 3, 20);
	ASSERT_OK(rdmx_rpc_stream_half_close(x.s));
	DRIVE_UNTIL(&sc.a, &sc.b, x.done_n && sl.dones == 2);
	cr_assert_eq(x.code, RDMX_RPC_OK);
	cr_assert_eq(x.got, 3);
	cr_assert_eq(x.hdr_n, 1, "the server's annotation came as response headers");
	cr_assert_str_eq(cl.seq, "sA sB dB dA ");
	cr_assert_str_eq(sl.seq, "sS1 sS2 dS2 dS1 ");
	cr_assert_eq(cl.msgs_out, 6);
	cr_assert_eq(cl.msgs_in, 6);
	cr_assert_eq(sl.msgs_in, 6);
	cr_assert_eq(sl.msgs_out, 6);
	/* a stream without the token is refused by the server */
	memset(&sl, 0, sizeof(sl));
	struct cstream y = {0};
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, BIDI, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs, &y, &y.s));
	DRIVE_UNTIL(&sc.a, &sc.b, y.done_n);
	cr_assert_eq(y.code, RDMX_RPC_UNAUTHENTICATED);
	cr_assert_str_eq(y.msg, "bad token");
	cr_assert_str_eq(sl.seq, "sS1 dS1 ");
	/* refused by the client chain: what the caller does with it before it
	 * ends (write, half-close, window, cancel) sends nothing (the server
	 * never heard of it: a frame for it failed the whole connection once) */
	cl.reject = true;
	struct cstream z = {0}, z2 = {0};
	struct urec busy = {0};
	ASSERT_OK(rdmx_rpc_call_async_md(sc.ra, ECHO, &p, NULL, &h, urec_cb, &busy, NULL));
	ASSERT_OK(rdmx_rpc_stream_open(sc.ra, BIDI, RDMX_RPC_BIDI_STREAMING, &o, &ccbs, &z, &z.s));
	cr_assert_eq(z.done_n, 0);
	ASSERT_OK(rdmx_rpc_stream_write(z.s, &p));
	ASSERT_OK(rdmx_rpc_stream_set_window(z.s, 200));
	ASSERT_OK(rdmx_rpc_stream_half_close(z.s));
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, BIDI, RDMX_RPC_BIDI_STREAMING, &o, &ccbs, &z2, &z2.s));
	ASSERT_OK(rdmx_rpc_stream_cancel(z2.s));
	DRIVE_UNTIL(&sc.a, &sc.b, z.done_n && z2.done_n && busy.done);
	cr_assert_eq(z.code, RDMX_RPC_PERMISSION_DENIED);
	cr_assert_eq(busy.code, RDMX_RPC_PERMISSION_DENIED); /* B refuses every call */
	cl.reject = false;
	struct urec after = {0};
	ASSERT_OK(rdmx_rpc_call_async_md(sc.ra, ECHO, &p, NULL, &h, urec_cb, &after, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, after.done);
	cr_assert_eq(after.code, RDMX_RPC_OK, "the connection did not survive: %s",
	             rdmx_rpc_code_name(after.code));
	rdmx_rpc_md_fini(&h);
	/* a full chain */
	for (unsigned i = 2; i < RDMX_RPC_MAX_INTERCEPTORS; i++)
		ASSERT_OK(rdmx_rpc_ep_add_interceptor(sc.ra, &test_ic, &A));
	ASSERT_RC(rdmx_rpc_ep_add_interceptor(sc.ra, &test_ic, &A), RDMX_E_FULL);
	scene_close(&sc);
}

/* Both chains saw a deadline over 100 years after t0. */
static void assert_far_deadlines(const char *what, const struct ic_log *cl, const struct ic_log *sl,
                                 uint64_t t0)
{
	const uint64_t century_ns = 100ull * 365 * 24 * 3600 * 1000000000ull;

	cr_assert(cl->deadline_ns > t0 + century_ns && sl->deadline_ns > t0 + century_ns,
	          "%s: deadlines client %llu, server %llu, now %llu", what,
	          (unsigned long long)cl->deadline_ns, (unsigned long long)sl->deadline_ns,
	          (unsigned long long)t0);
}

/* A timeout too long for 64-bit nanoseconds: both chains see a deadline far
 * ahead (it wrapped into the past on the client's side once), and the call
 * completes. */
Test(stream, interceptor_far_deadline)
{
	struct scene sc;
	struct ic_log cl = {0}, sl = {0};
	struct ic_arg A = {&cl, "A", NULL}, S2 = {&sl, "S2", NULL};
	struct rdmx_rpc_payload p = rdmx_rpc_bytes("ping", 4);
	struct rdmx_rpc_call_opts o = {.timeout_us = UINT64_MAX};
	struct urec u = {0};
	uint64_t t0;

	scene_open(&sc, NULL);
	ASSERT_OK(rdmx_rpc_ep_add_interceptor(sc.ra, &test_ic, &A));
	ASSERT_OK(rdmx_rpc_server_add_interceptor(sc.srv, &test_ic, &S2));
	t0 = rdmx_pe_now_ns();
	ASSERT_OK(rdmx_rpc_call_async(sc.ra, ECHO, &p, &o, urec_cb, &u, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, u.done);
	cr_assert_eq(u.code, RDMX_RPC_OK);
	assert_far_deadlines("call", &cl, &sl, t0);

	/* the same for a stream */
	struct cstream x = {0};
	struct rdmx_rpc_stream_opts so = {.timeout_us = UINT64_MAX};
	cl.deadline_ns = sl.deadline_ns = 0;
	ASSERT_OK(rdmx_rpc_stream_open(sc.ra, BIDI, RDMX_RPC_BIDI_STREAMING, &so, &ccbs, &x, &x.s));
	ASSERT_OK(rdmx_rpc_stream_half_close(x.s));
	DRIVE_UNTIL(&sc.a, &sc.b, x.done_n);
	cr_assert_eq(x.code, RDMX_RPC_OK);
	assert_far_deadlines("stream", &cl, &sl, t0);
	scene_close(&sc);
}

/* ---- rdmx.health.v1.Health/Watch ---- */

struct watch_rec {
	int got, done;
	int status[16];
	enum rdmx_rpc_code code;
};

static void watch_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct watch_rec *w = arg;
	const uint8_t *b = data;

	(void)s;
	cr_assert(w->got < 16);
	/* HealthCheckResponse: {} (UNKNOWN) or {1: status} */
	w->status[w->got++] = len == 1 && b[0] == 0x80 ? 0 : len == 3 ? b[2] : -1;
}

static void watch_end(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	struct watch_rec *w = arg;

	(void)s;
	w->done++;
	w->code = st->code;
}

static struct rdmx_rpc_stream *watch_open(struct scene *sc, const char *svc, struct watch_rec *w)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_msg = watch_msg, .on_done = watch_end};
	struct rdmx_rpc_stream *s;
	uint8_t req[64];
	size_t n = strlen(svc);

	cr_assert(n < 32);
	req[0] = 0x81;
	req[1] = 0x01;
	req[2] = (uint8_t)(0xa0 | n);
	memcpy(req + 3, svc, n);
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(req, 3 + n);
	ASSERT_OK(rdmx_rpc_stream_open(sc->ra, rdmx_rpc_method_id(RDMX_HEALTH_WATCH_NAME),
	                               RDMX_RPC_SERVER_STREAMING, NULL, &cbs, w, &s));
	ASSERT_OK(rdmx_rpc_stream_write(s, &p));
	ASSERT_OK(rdmx_rpc_stream_half_close(s));
	return s;
}

Test(stream, health_watch)
{
	struct scene sc;
	struct watch_rec all = {0}, svc = {0}, unknown = {0};

	scene_open(&sc, NULL);
	struct rdmx_rpc_stream *sa = watch_open(&sc, "", &all);
	struct rdmx_rpc_stream *ss = watch_open(&sc, "test.Stream", &svc);
	struct rdmx_rpc_stream *su = watch_open(&sc, "no.Such", &unknown);
	DRIVE_UNTIL(&sc.a, &sc.b, all.got == 1 && svc.got == 1 && unknown.got == 1);
	cr_assert_eq(all.status[0], RDMX_HEALTH_SERVING);
	cr_assert_eq(svc.status[0], RDMX_HEALTH_SERVING);
	cr_assert_eq(unknown.status[0], RDMX_HEALTH_SERVICE_UNKNOWN);
	/* a change reaches the watchers of what changed */
	ASSERT_OK(rdmx_rpc_server_set_health(sc.srv, "test.Stream", RDMX_HEALTH_NOT_SERVING));
	DRIVE_UNTIL(&sc.a, &sc.b, svc.got == 2);
	cr_assert_eq(svc.status[1], RDMX_HEALTH_NOT_SERVING);
	/* the same status again sends nothing; the unknown one becomes known */
	ASSERT_OK(rdmx_rpc_server_set_health(sc.srv, "test.Stream", RDMX_HEALTH_NOT_SERVING));
	ASSERT_OK(rdmx_rpc_server_set_health(sc.srv, "no.Such", RDMX_HEALTH_SERVING));
	DRIVE_UNTIL(&sc.a, &sc.b, unknown.got == 2);
	cr_assert_eq(unknown.status[1], RDMX_HEALTH_SERVING);
	ASSERT_OK(rdmx_rpc_server_set_health(sc.srv, NULL, RDMX_HEALTH_NOT_SERVING));
	DRIVE_UNTIL(&sc.a, &sc.b, all.got == 2);
	cr_assert_eq(all.status[1], RDMX_HEALTH_NOT_SERVING);
	drive_for(&sc.a, &sc.b, 5);
	cr_assert_eq(svc.got, 2, "a repeated status was sent again");
	cr_assert_eq(all.done + svc.done + unknown.done, 0);
	/* the caller ends the watch; later changes are harmless */
	ASSERT_OK(rdmx_rpc_stream_cancel(sa));
	ASSERT_OK(rdmx_rpc_stream_cancel(ss));
	ASSERT_OK(rdmx_rpc_stream_cancel(su));
	cr_assert_eq(all.done + svc.done + unknown.done, 3);
	cr_assert_eq(all.code, RDMX_RPC_CANCELLED);
	DRIVE_UNTIL(&sc.a, &sc.b, rdmx_rpc_ep_get_streams(sc.rb) == 0);
	ASSERT_OK(rdmx_rpc_server_set_health(sc.srv, NULL, RDMX_HEALTH_SERVING));
	/* a watcher whose endpoint goes away is dropped */
	struct watch_rec gone = {0};
	watch_open(&sc, "", &gone);
	DRIVE_UNTIL(&sc.a, &sc.b, gone.got == 1);
	rpc_pair_close(&sc.ra, &sc.rb);
	cr_assert_eq(gone.done, 1);
	cr_assert_eq(gone.code, RDMX_RPC_UNAVAILABLE);
	ASSERT_OK(rdmx_rpc_server_destroy(&sc.srv)); /* its watcher list is empty again */
	node_close(&sc.a);
	node_close(&sc.b);
}

/* ---- stream traffic in the stats ---- */

Test(stream, stats_per_endpoint_and_method)
{
	struct scene sc;
	struct cstream src = {.want_size = 100}, unk = {0}, bid = {0};
	struct rdmx_rpc_stats st;
	const uint32_t nope = rdmx_rpc_method_id("test.Stream/Nope");

	scene_open(&sc, NULL);
	ASSERT_OK(rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, NULL, &ccbs, &src,
	                               &src.s));
	source_req(src.s, 300, 100);
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, nope, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs, &unk, &unk.s));
	DRIVE_UNTIL(&sc.a, &sc.b, src.done_n && unk.done_n);
	cr_assert_eq(src.code, RDMX_RPC_OK);
	cr_assert_eq(unk.code, RDMX_RPC_UNIMPLEMENTED);
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, MUTE, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs, &bid, &bid.s));
	DRIVE_UNTIL(&sc.a, &sc.b, sc.ss.n == 2);
	ASSERT_OK(rdmx_rpc_stream_cancel(bid.s));
	DRIVE_UNTIL(&sc.a, &sc.b, sc.ss.done == 2);

	/* the client endpoint */
	ASSERT_OK(rdmx_rpc_ep_get_stats(sc.ra, RDMX_RPC_ROLE_CLIENT, &st));
	cr_assert_eq(st.streams_opened, 3);
	cr_assert_eq(st.streams_ended, 3);
	cr_assert_eq(st.streams_by_code[RDMX_RPC_OK], 1);
	cr_assert_eq(st.streams_by_code[RDMX_RPC_UNIMPLEMENTED], 1);
	cr_assert_eq(st.streams_by_code[RDMX_RPC_CANCELLED], 1);
	cr_assert_eq(st.stream_msgs_sent, 1);
	cr_assert_eq(st.stream_bytes_sent, 8);
	cr_assert_eq(st.stream_msgs_received, 300);
	cr_assert_eq(st.stream_bytes_received, 30000);
	cr_assert_eq(st.calls, 0, "streams are not unary calls");
	ASSERT_OK(rdmx_rpc_ep_get_method_stats(sc.ra, RDMX_RPC_ROLE_CLIENT, SOURCE, &st));
	cr_assert_eq(st.streams_opened, 1);
	cr_assert_eq(st.stream_msgs_received, 300);
	/* the server endpoint */
	ASSERT_OK(rdmx_rpc_ep_get_stats(sc.rb, RDMX_RPC_ROLE_SERVER, &st));
	cr_assert_eq(st.streams_opened, 3);
	cr_assert_eq(st.streams_ended, 3);
	cr_assert_eq(st.streams_by_code[RDMX_RPC_OK], 1);
	cr_assert_eq(st.streams_by_code[RDMX_RPC_UNIMPLEMENTED], 1);
	cr_assert_eq(st.streams_by_code[RDMX_RPC_CANCELLED], 1);
	cr_assert_eq(st.stream_msgs_received, 1);
	cr_assert_eq(st.stream_bytes_received, 8);
	cr_assert_eq(st.stream_msgs_sent, 300);
	cr_assert_eq(st.stream_bytes_sent, 30000);
	ASSERT_OK(rdmx_rpc_ep_get_method_stats(sc.rb, RDMX_RPC_ROLE_SERVER, RDMX_RPC_METHOD_UNKNOWN,
	                                       &st));
	cr_assert_eq(st.streams_opened, 1);
	cr_assert_eq(st.streams_by_code[RDMX_RPC_UNIMPLEMENTED], 1);
	ASSERT_OK(rdmx_rpc_ep_get_method_stats(sc.rb, RDMX_RPC_ROLE_SERVER, MUTE, &st));
	cr_assert_eq(st.streams_by_code[RDMX_RPC_CANCELLED], 1);
	size_t n = 0;
	ASSERT_OK(rdmx_rpc_ep_list_methods(sc.rb, RDMX_RPC_ROLE_SERVER, NULL, 0, &n));
	cr_assert_eq(n, 3, "Source, Mute and the unknown bucket: %zu", n);
	/* the server's per-method sums */
	ASSERT_OK(rdmx_rpc_server_get_method_stats(sc.srv, SOURCE, &st));
	cr_assert_eq(st.streams_opened, 1);
	cr_assert_eq(st.streams_ended, 1);
	cr_assert_eq(st.streams_by_code[RDMX_RPC_OK], 1);
	cr_assert_eq(st.stream_msgs_sent, 300);
	cr_assert_eq(st.stream_bytes_sent, 30000);
	cr_assert_eq(st.stream_msgs_received, 1);
	ASSERT_OK(rdmx_rpc_server_get_method_stats(sc.srv, MUTE, &st));
	cr_assert_eq(st.streams_opened, 1);
	cr_assert_eq(st.streams_by_code[RDMX_RPC_CANCELLED], 1);
	scene_close(&sc);
}

/* ---- frames for a stream that ended here: counted, logged once ---- */

/* every level (log_capture keeps errors only) */
static atomic_int late_lines, unknown_lines;
static void late_log(enum rdmx_log_level level, const char *file, int line, const char *func,
                     const char *message)
{
	(void)level;
	(void)file;
	(void)line;
	(void)func;
	if (strstr(message, "already ended"))
		atomic_fetch_add(&late_lines, 1);
	if (strstr(message, "unknown stream id"))
		atomic_fetch_add(&unknown_lines, 1);
}

Test(stream, late_frames_counted_logged_once)
{
	struct scene sc;
	struct chan_conf rc = {.recv_cb = raw_recv, .event_cb = raw_event};
	struct rdmx_chan *p, *q;
	struct rdmx_rpc_ep *victim;
	struct rdmx_rpc_stats st;
	uint8_t b[64];
	size_t n;

	scene_open(&sc, NULL);
	raw_closed = 0;
	chan_pair(&sc.a, &sc.b, &rc, NULL, &p, &q, false);
	ASSERT_OK(rdmx_rpc_ep_create(q, sc.srv, &victim));
	DRIVE_UNTIL(&sc.a, &sc.b,
	            rdmx_chan_get_state(p) == RDMX_CHAN_READY &&
	                rdmx_chan_get_state(q) == RDMX_CHAN_READY);
	atomic_store(&late_lines, 0);
	atomic_store(&unknown_lines, 0);
	rdmx_log_set_function(late_log);
	n = frame(b, 5, RDMX_RPC_BIDI_STREAMING, MUTE, 7); /* open 7 */
	b[n] = b[n + 1] = 0;
	ASSERT_OK(rdmx_chan_send(p, b, n + 2, NULL, NULL));
	n = frame(b, 10, 0, 0, 7); /* cancel 7: it ends on the victim */
	ASSERT_OK(rdmx_chan_send(p, b, n, NULL, NULL));
	for (int i = 0; i < 3; i++) { /* late messages */
		n = frame(b, 7, 0, 0, 7);
		ASSERT_OK(rdmx_chan_send(p, b, n + 1, NULL, NULL));
	}
	n = frame(b, 8, 0, 0, 7); /* late half-close, late cancel */
	ASSERT_OK(rdmx_chan_send(p, b, n, NULL, NULL));
	n = frame(b, 10, 0, 0, 7);
	ASSERT_OK(rdmx_chan_send(p, b, n, NULL, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b,
	            rdmx_rpc_ep_get_stats(victim, RDMX_RPC_ROLE_SERVER, &st) == 0 &&
	                st.stream_late_frames == 5);
	cr_assert_eq(atomic_load(&late_lines), 1, "one line per stream");
	cr_assert_eq(rdmx_chan_get_state(q), RDMX_CHAN_READY, "late frames are not hostile");
	cr_assert_eq(sc.ss.n, 1);
	cr_assert_eq(sc.ss.st[0].done_n, 1);
	cr_assert_eq(sc.ss.st[0].code, RDMX_RPC_CANCELLED);
	/* a second stream's late frame gets its own line */
	n = frame(b, 5, RDMX_RPC_BIDI_STREAMING, MUTE, 9);
	b[n] = b[n + 1] = 0;
	ASSERT_OK(rdmx_chan_send(p, b, n + 2, NULL, NULL));
	n = frame(b, 10, 0, 0, 9);
	ASSERT_OK(rdmx_chan_send(p, b, n, NULL, NULL));
	n = frame(b, 7, 0, 0, 9);
	ASSERT_OK(rdmx_chan_send(p, b, n + 1, NULL, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b,
	            rdmx_rpc_ep_get_stats(victim, RDMX_RPC_ROLE_SERVER, &st) == 0 &&
	                st.stream_late_frames == 6);
	cr_assert_eq(atomic_load(&late_lines), 2);
	cr_assert_eq(rdmx_chan_get_state(q), RDMX_CHAN_READY);
	/* an id never opened is still hostile: closed with a log line */
	n = frame(b, 7, 0, 0, 99);
	ASSERT_OK(rdmx_chan_send(p, b, n + 1, NULL, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, rdmx_chan_get_state(q) == RDMX_CHAN_CLOSED);
	rdmx_log_set_function(NULL);
	cr_assert(atomic_load(&unknown_lines) >= 1);
	ASSERT_OK(rdmx_rpc_ep_destroy(&victim));
	ASSERT_OK(rdmx_chan_destroy(&q));
	DRIVE_UNTIL(&sc.a, &sc.b, raw_closed || rdmx_chan_get_state(p) == RDMX_CHAN_CLOSED);
	ASSERT_OK(rdmx_chan_destroy(&p));
	scene_close(&sc);
}

/* ---- the blocking call: response headers, trailers and details ---- */

struct bserve {
	struct node *n;
	atomic_int stop;
};

static void *bserve_thread(void *p)
{
	struct bserve *s = p;

	while (!atomic_load(&s->stop))
		if (rdmx_chan_worker_progress(s->n->worker) == 0)
			sched_yield();
	return NULL;
}

Test(stream, blocking_call_metadata_and_details)
{
	struct scene sc;
	struct rdmx_rpc_md h;
	struct rdmx_rpc_reply rep;
	uint32_t UMETA = rdmx_rpc_method_id("test.Stream/UMeta");
	struct rdmx_rpc_payload p = rdmx_rpc_bytes("body", 4);
	struct bserve bs = {.n = NULL};
	pthread_t th;
	const void *v;
	size_t n;

	scene_open(&sc, NULL);
	ASSERT_OK(
	    rdmx_rpc_server_register(sc.srv, UMETA, "test.Stream/UMeta", umeta_handler, NULL));
	bs.n = &sc.b;
	atomic_init(&bs.stop, 0);
	cr_assert_eq(pthread_create(&th, NULL, bserve_thread, &bs), 0);
	rdmx_rpc_md_init(&h);
	ASSERT_OK(rdmx_rpc_md_add_str(&h, "x-request-id", "b-9"));
	ASSERT_OK(rdmx_rpc_call_md(sc.ra, UMETA, &p, NULL, &h, &rep));
	cr_assert_eq(rep.code, RDMX_RPC_PERMISSION_DENIED);
	cr_assert_str_eq(rep.message, "no");
	cr_assert_eq(rep.len, 4);
	cr_assert_eq(memcmp(rep.data, "body", 4), 0);
	ASSERT_OK(rdmx_rpc_md_get(rep.headers, "x-request-id", &v, &n));
	cr_assert_eq(n, 3);
	cr_assert_eq(memcmp(v, "b-9", 3), 0);
	ASSERT_OK(rdmx_rpc_md_get(rep.trailers, "x-trailer", &v, &n));
	cr_assert_eq(n, 2);
	cr_assert_eq(memcmp(v, "t1", 2), 0);
	cr_assert_eq(rep.details_len, 3);
	cr_assert_eq(memcmp(rep.details, "\x00\x09\x08", 3), 0);
	rdmx_rpc_reply_fini(&rep);
	cr_assert_null(rep.headers);
	cr_assert_null(rep.trailers);
	cr_assert_null(rep.details);
	/* plain rdmx_rpc_call fills them as well (no request headers) */
	ASSERT_OK(rdmx_rpc_call(sc.ra, UMETA, &p, NULL, &rep));
	cr_assert_eq(rep.code, RDMX_RPC_PERMISSION_DENIED);
	cr_assert_eq(rdmx_rpc_md_count(rep.headers), 0, "no x-request-id was sent");
	ASSERT_OK(rdmx_rpc_md_get(rep.trailers, "x-trailer", &v, &n));
	cr_assert_eq(rep.details_len, 3);
	rdmx_rpc_reply_fini(&rep);
	/* a reply without metadata: nothing allocated */
	ASSERT_OK(rdmx_rpc_call(sc.ra, ECHO, &p, NULL, &rep));
	cr_assert_eq(rep.code, RDMX_RPC_OK);
	cr_assert_null(rep.headers);
	cr_assert_null(rep.trailers);
	cr_assert_null(rep.details);
	rdmx_rpc_reply_fini(&rep);
	rdmx_rpc_md_fini(&h);
	atomic_store(&bs.stop, 1);
	pthread_join(th, NULL);
	scene_close(&sc);
}

/* ---- coalescing: many small messages, back to back, a slow reader ---- */

Test(stream, small_messages_coalesced_in_order_slow_reader, .timeout = 240)
{
	struct scene sc;
	struct cstream x = {.echo_check = true, .want_size = 40};
	struct rdmx_chan_stats cs0, cs1;
	struct rdmx_rpc_stats st;
	const uint32_t total = 50000; /* 50000 x (40 + 32) B: over three byte windows */
	uint32_t max_q = 0, again = 0;
	uint64_t max_qb = 0;

	scene_open(&sc, NULL);
	ASSERT_OK(rdmx_chan_get_stats(rdmx_rpc_ep_get_chan(sc.rb), &cs0));
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, NULL, &ccbs, &x, &x.s));
	/* the reader is slow: it reads in spurts, paused in between */
	ASSERT_OK(rdmx_rpc_stream_pause_read(x.s));
	source_req(x.s, total, 40);
	while (!x.done_n) {
		/* the server writes back to back from its callback until the
		 * window is used up; nothing more arrives while paused */
		DRIVE_UNTIL(&sc.a, &sc.b,
		            x.done_n ||
		                (sc.ss.n && (sc.ss.again > again || sc.ss.st[0].done) &&
		                 x.got + rdmx_rpc_stream_get_queued(x.s) == sc.ss.st[0].sent));
		if (x.done_n)
			break;
		again = sc.ss.again;
		if (rdmx_rpc_stream_get_queued(x.s) > max_q)
			max_q = rdmx_rpc_stream_get_queued(x.s);
		if (rdmx_rpc_stream_get_queued_bytes(x.s) > max_qb)
			max_qb = rdmx_rpc_stream_get_queued_bytes(x.s);
		drive_for(&sc.a, &sc.b, 1);
		cr_assert(rdmx_rpc_stream_get_queued_bytes(x.s) <=
		              RDMX_RPC_STREAM_WINDOW_BYTES + cost(40),
		          "a paused reader holds more than its byte window: %llu",
		          (unsigned long long)rdmx_rpc_stream_get_queued_bytes(x.s));
		cr_assert_eq(rdmx_rpc_stream_get_queued_bytes(x.s),
		             (uint64_t)rdmx_rpc_stream_get_queued(x.s) * cost(40));
		ASSERT_OK(rdmx_rpc_stream_resume_read(x.s));
		if (!x.done_n && x.s)
			ASSERT_OK(rdmx_rpc_stream_pause_read(x.s));
	}
	cr_assert_eq(x.code, RDMX_RPC_OK, "%s", x.msg);
	cr_assert_eq(x.got, total, "complete: %u of %u", x.got, total);
	cr_assert_eq(x.bad, 0, "in order and intact");
	cr_assert_leq(max_qb, RDMX_RPC_STREAM_WINDOW_BYTES + cost(40));
	/* the reader's byte window, not the 16 messages granted at open, binds */
	cr_assert_gt(max_q, RDMX_RPC_STREAM_WINDOW, "%u", max_q);
	cr_assert_geq(max_qb, RDMX_RPC_STREAM_WINDOW_BYTES / 2, "%llu", (unsigned long long)max_qb);
	/* coalesced: far fewer channel messages than stream messages */
	ASSERT_OK(rdmx_chan_get_stats(rdmx_rpc_ep_get_chan(sc.rb), &cs1));
	cr_assert_lt(cs1.msgs_sent - cs0.msgs_sent, total / 4, "%llu channel messages for %u",
	             (unsigned long long)(cs1.msgs_sent - cs0.msgs_sent), total);
	ASSERT_OK(rdmx_rpc_ep_get_stats(sc.rb, RDMX_RPC_ROLE_SERVER, &st));
	cr_assert_eq(st.stream_msgs_sent, total);
	/* a lone message written outside any callback goes at once */
	struct cstream e = {0};
	uint8_t one[8] = {1};
	struct rdmx_rpc_payload p1 = rdmx_rpc_bytes(one, sizeof(one));
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, BIDI, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs, &e, &e.s));
	ASSERT_OK(rdmx_rpc_stream_write(e.s, &p1));
	DRIVE_UNTIL(&sc.a, &sc.b, e.got == 1);
	ASSERT_OK(rdmx_rpc_stream_half_close(e.s));
	DRIVE_UNTIL(&sc.a, &sc.b, e.done_n);
	cr_assert_eq(e.code, RDMX_RPC_OK);
	scene_close(&sc);
}

/* ---- the byte window ---- */

/* Waits until the reader paused with something queued, the server's last
 * write met the window and everything it sent has arrived. The tests pick
 * pause points where no credits are due (or the queued message proves the
 * last ones were used), so nothing more comes after. */
#define DRIVE_STALLED(sc, x, slot)                                                                 \
	DRIVE_UNTIL(&(sc)->a, &(sc)->b,                                                            \
	            (x)->done_n ||                                                                 \
	                ((x)->got == (x)->pause_at && (sc)->ss.n > (slot) &&                       \
	                 (sc)->ss.st[slot].blocked &&                                              \
	                 (sc)->ss.st[slot].sent_at_again == (sc)->ss.st[slot].sent &&              \
	                 rdmx_rpc_stream_get_queued((x)->s) > 0 &&                                 \
	                 (x)->got + rdmx_rpc_stream_get_queued((x)->s) == (sc)->ss.st[slot].sent))

/* A reader that stops reading mid-stream holds at most its byte window
 * (plus the message that crossed it) of 4 KiB messages — far more than
 * 16 messages, far less than the stream —, its writer gets AGAIN, another
 * stream and a unary call on the connection go on, and a smaller window set
 * at open is honoured once the open's grant is used. */
Test(stream, byte_window_bounds_queued_bytes_stalled_reader, .timeout = 120)
{
	struct scene sc;
	struct cstream x = {.echo_check = true, .want_size = 4096, .pause_at = 20};
	const uint32_t total = 1000; /* 1000 x 4 KiB: near four default windows */

	scene_open(&sc, NULL);
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, NULL, &ccbs, &x, &x.s));
	source_req(x.s, total, 4096);
	DRIVE_STALLED(&sc, &x, 0);
	cr_assert_eq(x.done_n, 0);
	cr_assert(sc.ss.st[0].blocked, "the writer was not told to wait");
	uint64_t qb = rdmx_rpc_stream_get_queued_bytes(x.s);
	uint32_t q = rdmx_rpc_stream_get_queued(x.s);
	cr_assert_leq(qb, RDMX_RPC_STREAM_WINDOW_BYTES + cost(4096), "%llu queued",
	              (unsigned long long)qb);
	cr_assert_geq(qb, RDMX_RPC_STREAM_WINDOW_BYTES / 2, "%llu queued", (unsigned long long)qb);
	cr_assert_eq(qb, (uint64_t)q * cost(4096));
	cr_assert_gt(q, RDMX_RPC_STREAM_WINDOW, "%u queued: the byte window should bind", q);
	cr_assert_lt(sc.ss.st[0].sent, total);
	/* the same connection: another stream and a unary call complete, the
	 * stalled stream does not grow */
	struct cstream other = {.echo_check = true, .want_size = 4096};
	ASSERT_OK(rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, NULL, &ccbs,
	                               &other, &other.s));
	source_req(other.s, 200, 4096);
	unary_done = 0;
	ASSERT_OK(rdmx_rpc_call_async(sc.ra, ECHO, NULL, NULL, unary_cb, NULL, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, other.done_n && unary_done);
	cr_assert_eq(other.code, RDMX_RPC_OK, "%s", other.msg);
	cr_assert_eq(other.got, 200);
	cr_assert_eq(other.bad, 0);
	cr_assert_eq(unary_code, RDMX_RPC_OK);
	cr_assert_eq(rdmx_rpc_stream_get_queued_bytes(x.s), qb, "the stalled stream grew");
	cr_assert_eq(rdmx_rpc_stream_get_queued(x.s) + x.got, sc.ss.st[0].sent);
	/* reading again: all of it, in order */
	ASSERT_OK(rdmx_rpc_stream_resume_read(x.s));
	DRIVE_UNTIL(&sc.a, &sc.b, x.done_n);
	cr_assert_eq(x.code, RDMX_RPC_OK, "%s", x.msg);
	cr_assert_eq(x.got, total);
	cr_assert_eq(x.bad, 0, "out of order or corrupt");
	cr_assert_leq(x.max_queued_bytes, RDMX_RPC_STREAM_WINDOW_BYTES + cost(4096));
	cr_assert_eq(rdmx_rpc_stream_get_queued_bytes(NULL), 0);
	/* a 16 KiB window: once the 1 MiB granted at open is consumed (253
	 * messages; then credits every second message), a paused reader holds
	 * at most 16 KiB + one message */
	struct cstream y = {.echo_check = true, .want_size = 4096, .pause_at = 300};
	struct rdmx_rpc_stream_opts o = {.window_bytes = 16384};
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, &o, &ccbs, &y, &y.s));
	source_req(y.s, total, 4096);
	DRIVE_STALLED(&sc, &y, 2);
	cr_assert_eq(y.done_n, 0);
	cr_assert_leq(rdmx_rpc_stream_get_queued_bytes(y.s), 16384 + cost(4096), "%llu",
	              (unsigned long long)rdmx_rpc_stream_get_queued_bytes(y.s));
	cr_assert_gt(rdmx_rpc_stream_get_queued(y.s), 0);
	ASSERT_OK(rdmx_rpc_stream_resume_read(y.s));
	DRIVE_UNTIL(&sc.a, &sc.b, y.done_n);
	cr_assert_eq(y.code, RDMX_RPC_OK, "%s", y.msg);
	cr_assert_eq(y.got, total);
	cr_assert_eq(y.bad, 0);
	scene_close(&sc);
}

/* Messages written back to back from the server's callback travel in
 * batches larger than a ring slot (rendezvous, many messages per channel
 * message); every one arrives intact and in order, at sizes on both sides
 * of the batching limit. */
Test(stream, batch_spanning_slots_intact_in_order, .timeout = 120)
{
	struct scene sc;
	const uint32_t sizes[] = {1000, 4096, 16384, 16385};
	uint32_t eager = 0;

	scene_open(&sc, NULL);
	ASSERT_OK(rdmx_chan_get_eager_threshold(rdmx_rpc_ep_get_chan(sc.rb), &eager));
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct cstream x = {.echo_check = true, .want_size = sizes[i]};
		struct rdmx_chan_stats c0, c1;
		const uint32_t total = 300;

		ASSERT_OK(rdmx_chan_get_stats(rdmx_rpc_ep_get_chan(sc.rb), &c0));
		ASSERT_OK(rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, NULL,
		                               &ccbs, &x, &x.s));
		source_req(x.s, total, sizes[i]);
		DRIVE_UNTIL(&sc.a, &sc.b, x.done_n);
		cr_assert_eq(x.code, RDMX_RPC_OK, "%u B: %s", sizes[i], x.msg);
		cr_assert_eq(x.got, total, "%u B: %u of %u", sizes[i], x.got, total);
		cr_assert_eq(x.bad, 0, "%u B: out of order or corrupt", sizes[i]);
		cr_assert_eq(x.bytes, (uint64_t)total * sizes[i]);
		ASSERT_OK(rdmx_chan_get_stats(rdmx_rpc_ep_get_chan(sc.rb), &c1));
		uint64_t msgs = c1.msgs_sent - c0.msgs_sent;
		uint64_t rdv = c1.rendezvous_sent - c0.rendezvous_sent;
		if (sizes[i] <= 16384) {
			/* batched: few channel messages (64 KiB each at most: 3 of
			 * 16 KiB, 15 of 4 KiB), some larger than a slot */
			cr_assert_lt(msgs, sizes[i] <= 4096 ? total / 8 : total / 2,
			             "%u B: %llu channel messages", sizes[i],
			             (unsigned long long)msgs);
			cr_assert_gt(rdv, 0, "%u B: no batch spanned slots (eager %u)", sizes[i],
			             eager);
		} else {
			cr_assert_geq(msgs, total, "%u B: larger messages go alone", sizes[i]);
		}
	}
	scene_close(&sc);
}

/* A message larger than the whole byte window still goes (one at a time),
 * and so do 4 KiB messages under a 1-byte window. */
Test(stream, message_larger_than_window_goes, .timeout = 120)
{
	struct scene sc;
	const uint32_t big = RDMX_RPC_STREAM_WINDOW_BYTES + 4096;
	struct cstream x = {.echo_check = true, .want_size = big, .pause_at = 1};

	scene_open(&sc, NULL);
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, NULL, &ccbs, &x, &x.s));
	source_req(x.s, 6, big);
	DRIVE_STALLED(&sc, &x, 0);
	/* paused after one: the next one crossed the window, no third came */
	cr_assert_eq(rdmx_rpc_stream_get_queued(x.s), 1);
	cr_assert_leq(rdmx_rpc_stream_get_queued_bytes(x.s),
	              RDMX_RPC_STREAM_WINDOW_BYTES + cost(big));
	ASSERT_OK(rdmx_rpc_stream_resume_read(x.s));
	DRIVE_UNTIL(&sc.a, &sc.b, x.done_n);
	cr_assert_eq(x.code, RDMX_RPC_OK, "%s", x.msg);
	cr_assert_eq(x.got, 6);
	cr_assert_eq(x.bad, 0);
	/* a 1-byte window, set after open */
	struct cstream y = {.echo_check = true, .want_size = 4096};
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, NULL, &ccbs, &y, &y.s));
	ASSERT_OK(rdmx_rpc_stream_set_window_bytes(y.s, 1));
	source_req(y.s, 200, 4096);
	DRIVE_UNTIL(&sc.a, &sc.b, y.done_n);
	cr_assert_eq(y.code, RDMX_RPC_OK, "%s", y.msg);
	cr_assert_eq(y.got, 200);
	cr_assert_eq(y.bad, 0);
	scene_close(&sc);
}

/* rdmx_rpc_stream_set_window_bytes: NULL or 0 -> RDMX_E_INVAL; an ended
 * stream -> RDMX_E_BAD_STATE (so does set_window); a valid one -> 0. */
Test(stream, set_window_bytes_argument_errors)
{
	struct scene sc;
	struct cstream x = {.check_ended = true};

	scene_open(&sc, NULL);
	ASSERT_RC(rdmx_rpc_stream_set_window_bytes(NULL, 4096), RDMX_E_INVAL);
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, NULL, &ccbs, &x, &x.s));
	ASSERT_RC(rdmx_rpc_stream_set_window_bytes(x.s, 0), RDMX_E_INVAL);
	ASSERT_RC(rdmx_rpc_stream_set_window(x.s, 0), RDMX_E_INVAL);
	ASSERT_OK(rdmx_rpc_stream_set_window_bytes(x.s, UINT32_MAX));
	ASSERT_OK(rdmx_rpc_stream_set_window_bytes(x.s, 8192));
	source_req(x.s, 50, 4096);
	DRIVE_UNTIL(&sc.a, &sc.b, x.done_n);
	cr_assert_eq(x.code, RDMX_RPC_OK, "%s", x.msg);
	cr_assert_eq(x.got, 50);
	cr_assert_eq(x.ended_rc[0], RDMX_E_BAD_STATE, "%s", rdmx_err_name(x.ended_rc[0]));
	cr_assert_eq(x.ended_rc[1], RDMX_E_BAD_STATE, "%s", rdmx_err_name(x.ended_rc[1]));
	scene_close(&sc);
}

/* ---- the acceptor's status always ends the opener's stream ---- */

#define TELL_NAME "test.Stream/Tell" /* server-streaming: a long status at once */
static int tell_rc;

/* Finishes at once with a message longer than a small channel carries. */
static void on_tell(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_done = s_done};
	char msg[200];

	memset(msg, 'w', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	ASSERT_OK(rdmx_rpc_stream_set_callbacks(s, &cbs, slot_new(arg, s)));
	tell_rc = rdmx_rpc_stream_finish(s, RDMX_RPC_OK, msg, NULL, 0, NULL);
}

/* A scene whose channels carry at most max_msg bytes, with TELL_NAME served,
 * and a stream opened to it (a deadline bounds a status that never comes). */
static void tell_open(struct scene *sc, uint64_t max_msg, struct cstream *x)
{
	struct chan_conf conf = {.max_msg = max_msg};
	struct rdmx_rpc_stream_opts o = {.timeout_us = 5u * 1000000u};
	uint32_t tell = rdmx_rpc_method_id(TELL_NAME);

	tell_rc = 1;
	scene_open(sc, &conf);
	ASSERT_OK(rdmx_rpc_server_register_stream(sc->srv, tell, TELL_NAME,
	                                          RDMX_RPC_SERVER_STREAMING, on_tell, &sc->ss));
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc->ra, tell, RDMX_RPC_SERVER_STREAMING, &o, &ccbs, x, &x->s));
	DRIVE_UNTIL(&sc->a, &sc->b, x->done_n && sc->ss.done);
	drive_for(&sc->a, &sc->b, 20);
	cr_assert_eq(tell_rc, RDMX_E_TOO_BIG, "finish -> %s", rdmx_err_name(tell_rc));
	cr_assert_eq(x->done_n, 1, "the client's stream ended %d times", x->done_n);
	cr_assert_eq(sc->ss.done, 1);
}

/* A status the channel cannot carry (a 200-byte message, 64-byte messages)
 * reaches the client as a bare RESOURCE_EXHAUSTED whose reason is cut to
 * fit, once; both sides end with it and the connection goes on. */
Test(stream, finish_status_too_big_for_the_channel_ends_the_client)
{
	struct scene sc;
	struct cstream x = {0}, y = {0};

	tell_open(&sc, 64, &x);
	cr_assert_eq(x.code, RDMX_RPC_RESOURCE_EXHAUSTED, "the client ended %s (%s)",
	             rdmx_rpc_code_name(x.code), x.msg);
	cr_assert_str_eq(x.msg, "status larger than this connection");
	cr_assert_eq(sc.ss.st[0].code, RDMX_RPC_RESOURCE_EXHAUSTED, "%s",
	             rdmx_rpc_code_name(sc.ss.st[0].code));
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, NULL, &ccbs, &y, &y.s));
	source_req(y.s, 3, 8);
	DRIVE_UNTIL(&sc.a, &sc.b, y.done_n);
	cr_assert_eq(y.code, RDMX_RPC_OK, "%s", y.msg);
	cr_assert_eq(y.got, 3);
	scene_close(&sc);
}

/* Not even a bare status fits (28-byte messages): the connection closes,
 * so the client learns the end from it, once, instead of waiting for its
 * deadline (or forever without one). tcp only: over verbs' export/connect
 * flow no disconnect event reaches the client, which learns of the close
 * from its keep-alive probe failing (RC retries), after this test's 5 s
 * deadline. */
Test(stream, finish_status_that_cannot_go_closes_the_connection)
{
	struct scene sc;
	struct cstream x = {0};

	if (strcmp(env_device(0), "tcp") || strcmp(env_device(1), "tcp"))
		cr_skip_test("tcp devices only (%s/%s)", env_device(0), env_device(1));
	tell_open(&sc, 28, &x);
	cr_assert_eq(x.code, RDMX_RPC_UNAVAILABLE, "the client ended %s (%s)",
	             rdmx_rpc_code_name(x.code), x.msg);
	cr_assert_eq(sc.ss.st[0].code, RDMX_RPC_UNAVAILABLE, "%s",
	             rdmx_rpc_code_name(sc.ss.st[0].code));
	cr_assert_eq(rdmx_chan_get_state(rdmx_rpc_ep_get_chan(sc.ra)), RDMX_CHAN_CLOSED);
	scene_close(&sc);
}

/* ---- response headers of the server's interceptors that cannot go ---- */

#define FIN_NAME "test.Stream/Fin" /* server-streaming: finishes OK at once */
static int fin_rc;

static void on_fin(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_done = s_done};

	ASSERT_OK(rdmx_rpc_stream_set_callbacks(s, &cbs, slot_new(arg, s)));
	fin_rc = rdmx_rpc_stream_finish(s, RDMX_RPC_OK, "done", NULL, 0, NULL);
}

/* A server interceptor that adds one response header, "x-big", of big_len
 * bytes (none when 0), and notes the ends it sees. */
static size_t big_len;
static struct ic_log big_log;

static enum rdmx_rpc_code big_start(const struct rdmx_rpc_call_info *info,
                                    struct rdmx_rpc_md *annotate, const char **message,
                                    void **state, void *arg)
{
	static char v[1024];

	(void)info;
	(void)message;
	(void)state;
	(void)arg;
	cr_assert(big_len <= sizeof(v));
	memset(v, 'h', big_len);
	if (big_len)
		ASSERT_OK(rdmx_rpc_md_add(annotate, "x-big", v, big_len));
	return RDMX_RPC_OK;
}

static void big_done(const struct rdmx_rpc_call_info *info, enum rdmx_rpc_code code,
                     const char *message, void *state, void *arg)
{
	(void)info;
	(void)message;
	(void)state;
	(void)arg;
	big_log.dones++;
	big_log.last_code = code;
}

static const struct rdmx_rpc_interceptor big_ic = {big_start, NULL, big_done};

/* A scene for a server-streaming method of the server's (name, served by
 * handler) behind big_ic, which adds a header of hdr_len bytes; fin_rc is 1
 * and big_log empty until the handler runs. */
struct fin_scene {
	const char *name;
	rdmx_rpc_stream_handler handler;
	uint64_t max_msg;    /* the channels' message size; 0: the default */
	uint32_t max_md;     /* the server's endpoint's metadata limit; 0: the default */
	size_t hdr_len;      /* big_ic's header; 0: none */
	uint64_t timeout_us; /* the stream's deadline; 0: none */
};

/* Opens the scene fs describes and a stream to its method (callbacks ccbs,
 * arg x), and drives until the stream has ended on both sides. */
static void fin_scene_open(struct scene *sc, const struct fin_scene *fs, struct cstream *x)
{
	struct chan_conf conf = {.max_msg = fs->max_msg};
	struct rdmx_rpc_stream_opts o = {.timeout_us = fs->timeout_us};
	uint32_t m = rdmx_rpc_method_id(fs->name);

	fin_rc = 1;
	big_len = fs->hdr_len;
	memset(&big_log, 0, sizeof(big_log));
	scene_open(sc, fs->max_msg ? &conf : NULL);
	ASSERT_OK(rdmx_rpc_server_register_stream(sc->srv, m, fs->name, RDMX_RPC_SERVER_STREAMING,
	                                          fs->handler, &sc->ss));
	ASSERT_OK(rdmx_rpc_server_add_interceptor(sc->srv, &big_ic, NULL));
	if (fs->max_md)
		ASSERT_OK(rdmx_rpc_ep_set_max_metadata(sc->rb, fs->max_md));
	ASSERT_OK(rdmx_rpc_stream_open(sc->ra, m, RDMX_RPC_SERVER_STREAMING,
	                               fs->timeout_us ? &o : NULL, &ccbs, x, &x->s));
	DRIVE_UNTIL(&sc->a, &sc->b, x->done_n && sc->ss.done);
}

/* A scene (channels of max_msg bytes, 0: the default; the server's
 * endpoint's metadata limit max_md) whose server's interceptor adds a
 * header of len bytes to FIN_NAME's stream, which finishes OK at once: the
 * headers cannot go, so finish fails with RDMX_E_TOO_BIG and the stream
 * ends RESOURCE_EXHAUSTED on both sides, once, with the reason `why`; the
 * client never sees an OK without the headers. Then the connection goes on. */
static void fin_headers_fail(uint64_t max_msg, uint32_t max_md, size_t len, const char *why)
{
	const struct fin_scene fs = {.name = FIN_NAME,
	                             .handler = on_fin,
	                             .max_msg = max_msg,
	                             .max_md = max_md,
	                             .hdr_len = len,
	                             .timeout_us = 5u * 1000000u};
	struct scene sc;
	struct cstream x = {0}, y = {0};

	fin_scene_open(&sc, &fs, &x);
	drive_for(&sc.a, &sc.b, 20);
	cr_assert_eq(fin_rc, RDMX_E_TOO_BIG, "finish -> %s", rdmx_err_name(fin_rc));
	cr_assert_eq(x.code, RDMX_RPC_RESOURCE_EXHAUSTED, "the client ended %s (%s)",
	             rdmx_rpc_code_name(x.code), x.msg);
	cr_assert_str_eq(x.msg, why);
	cr_assert_eq(x.hdr_n, 0);
	cr_assert_eq(x.done_n, 1, "the client's stream ended %d times", x.done_n);
	cr_assert_eq(sc.ss.done, 1);
	cr_assert_eq(sc.ss.st[0].done_n, 1);
	cr_assert_eq(sc.ss.st[0].code, RDMX_RPC_RESOURCE_EXHAUSTED, "%s",
	             rdmx_rpc_code_name(sc.ss.st[0].code));
	cr_assert_eq(big_log.dones, 1);
	cr_assert_eq(big_log.last_code, RDMX_RPC_RESOURCE_EXHAUSTED, "%s",
	             rdmx_rpc_code_name(big_log.last_code));

	big_len = 0;
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, SOURCE, RDMX_RPC_SERVER_STREAMING, NULL, &ccbs, &y, &y.s));
	source_req(y.s, 3, 8);
	DRIVE_UNTIL(&sc.a, &sc.b, y.done_n);
	cr_assert_eq(y.code, RDMX_RPC_OK, "%s", y.msg);
	cr_assert_eq(y.got, 3);
	scene_close(&sc);
}

Test(stream, finish_interceptor_headers_over_the_metadata_limit)
{
	fin_headers_fail(0, 256, 300, "response headers over the metadata limit");
}

/* 136 bytes of headers frame, 128-byte messages; the bare status fits. */
Test(stream, finish_interceptor_headers_too_big_for_the_channel)
{
	fin_headers_fail(128, RDMX_RPC_DEFAULT_MAX_MD, 100,
	                 "response headers larger than this connection carries");
}

#define HALF_FIN_NAME "test.Stream/HalfFin" /* server-streaming: half-close, then OK */

static void on_half_fin(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_done = s_done};

	ASSERT_OK(rdmx_rpc_stream_set_callbacks(s, &cbs, slot_new(arg, s)));
	ASSERT_OK(rdmx_rpc_stream_half_close(s));
	fin_rc = rdmx_rpc_stream_finish(s, RDMX_RPC_OK, "done", NULL, 0, NULL);
}

/* A server that half-closes without a message, then finishes: the
 * interceptor's response headers go before its half-close (after it the
 * client takes them for a protocol violation), so the client sees them,
 * then the half-close and the OK; they were dropped once. */
Test(stream, half_close_sends_interceptor_headers_first)
{
	const struct fin_scene fs = {.name = HALF_FIN_NAME, .handler = on_half_fin, .hdr_len = 10};
	struct scene sc;
	struct cstream x = {0};

	fin_scene_open(&sc, &fs, &x);
	cr_assert_eq(fin_rc, 0, "finish -> %s", rdmx_err_name(fin_rc));
	cr_assert_eq(x.code, RDMX_RPC_OK, "the client ended %s (%s)", rdmx_rpc_code_name(x.code),
	             x.msg);
	cr_assert_eq(x.hdr_n, 1, "the client saw the response headers %d times", x.hdr_n);
	cr_assert_eq(x.half_n, 1);
	cr_assert_eq(big_log.dones, 1);
	cr_assert_eq(big_log.last_code, RDMX_RPC_OK);
	big_len = 0;
	scene_close(&sc);
}

#define HDR_RETRY_NAME "test.Stream/HdrRetry" /* headers too big, then smaller, then OK */
static int hdr_retry_rc[2];

static int send_app_header(struct rdmx_rpc_stream *s, size_t len)
{
	static char v[512];
	struct rdmx_rpc_md h;
	int rc;

	memset(v, 'a', len);
	rdmx_rpc_md_init(&h);
	ASSERT_OK(rdmx_rpc_md_add(&h, "x-app", v, len));
	rc = rdmx_rpc_stream_send_headers(s, &h);
	rdmx_rpc_md_fini(&h);
	return rc;
}

static void on_hdr_retry(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_done = s_done};

	ASSERT_OK(rdmx_rpc_stream_set_callbacks(s, &cbs, slot_new(arg, s)));
	hdr_retry_rc[0] = send_app_header(s, 200); /* 237 bytes alone, 284 with x-big */
	hdr_retry_rc[1] = send_app_header(s, 10);
	fin_rc = rdmx_rpc_stream_finish(s, RDMX_RPC_OK, "done", NULL, 0, NULL);
}

/* Response headers that fit the metadata limit alone but not with the
 * interceptors' are refused (RDMX_E_TOO_BIG) and leave nothing behind: a
 * smaller retry goes as the interceptors' headers and the retry's, once
 * (the refused ones were kept with the interceptors' and went again). */
Test(stream, refused_response_headers_leave_nothing_behind)
{
	const struct fin_scene fs = {
	    .name = HDR_RETRY_NAME, .handler = on_hdr_retry, .max_md = 256, .hdr_len = 10};
	struct scene sc;
	struct cstream x = {0};

	fin_scene_open(&sc, &fs, &x);
	cr_assert_eq(hdr_retry_rc[0], RDMX_E_TOO_BIG, "%s", rdmx_err_name(hdr_retry_rc[0]));
	cr_assert_eq(hdr_retry_rc[1], 0, "the retry -> %s", rdmx_err_name(hdr_retry_rc[1]));
	cr_assert_eq(fin_rc, 0, "finish -> %s", rdmx_err_name(fin_rc));
	cr_assert_eq(x.code, RDMX_RPC_OK, "%s (%s)", rdmx_rpc_code_name(x.code), x.msg);
	cr_assert_eq(x.hdr_n, 1);
	cr_assert_eq(x.hdr_count, 2, "the client got %zu headers", x.hdr_count);
	cr_assert_eq(x.hdr_app_len, 10);
	big_len = 0;
	scene_close(&sc);
}

/* ---- an open whose stream table has no room ---- */

/* librdmx's rdmx__map_put, interposed: this battery links the shared
 * library, whose calls between its own files go through the PLT, so this
 * definition takes them. It fails the insert of key map_fail_key once, on
 * this thread, as a table that cannot grow does (RDMX_E_NOMEM: the only way
 * a stream table's insert fails), and passes every other on. */
struct rdmx__map;
static _Thread_local uint64_t map_fail_key; /* 0: none armed */
static _Thread_local int map_fail_hits;

int rdmx__map_put(struct rdmx__map *m, uint64_t key, void *val);
int rdmx__map_put(struct rdmx__map *m, uint64_t key, void *val)
{
	static int (*_Atomic real)(struct rdmx__map *, uint64_t, void *);
	int (*fn)(struct rdmx__map *, uint64_t, void *) = real;

	if (map_fail_key && key == map_fail_key) {
		map_fail_key = 0;
		map_fail_hits++;
		return RDMX_E_NOMEM;
	}
	if (!fn) {
		*(void **)&fn = dlsym(RTLD_NEXT, "rdmx__map_put");
		cr_assert_not_null(fn, "librdmx's rdmx__map_put not found: %s", dlerror());
		real = fn;
	}
	return fn(m, key, val);
}

/* The open fails RDMX_E_NOMEM before anything reaches the wire: no stream
 * (*s untouched, no callback, none counted on either side), the server never
 * hears of it (it once got the open, then a reset), the interceptors that
 * saw it start see it end, once; the connection goes on. */
Test(stream, open_without_room_in_the_stream_table_sends_nothing)
{
	struct scene sc;
	struct ic_log cl = {0}, seen;
	struct ic_arg A = {&cl, "A", NULL};
	struct cstream pre = {0}, x = {0}, y = {.echo_check = true};
	struct rdmx_rpc_stream *const sentinel = (struct rdmx_rpc_stream *)&x;
	struct rdmx_rpc_stats before, after, cbefore, cafter;
	struct rdmx_rpc_payload p = rdmx_rpc_bytes("ping", 4);
	struct urec u = {0};
	int rc;

	scene_open(&sc, NULL);
	ASSERT_OK(rdmx_rpc_ep_add_interceptor(sc.ra, &test_ic, &A));
	/* stream ids count on from this one (no other call in between) */
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, MUTE, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs, &pre, &pre.s));
	DRIVE_UNTIL(&sc.a, &sc.b, sc.ss.n == 1);
	ASSERT_OK(rdmx_rpc_ep_get_stats(sc.rb, RDMX_RPC_ROLE_SERVER, &before));
	ASSERT_OK(rdmx_rpc_ep_get_stats(sc.ra, RDMX_RPC_ROLE_CLIENT, &cbefore));
	memset(&cl, 0, sizeof(cl));

	x.s = sentinel;
	map_fail_key = rdmx_rpc_stream_get_id(pre.s) + 1;
	map_fail_hits = 0;
	rc = rdmx_rpc_stream_open(sc.ra, MUTE, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs, &x, &x.s);
	map_fail_key = 0;
	cr_assert_eq(map_fail_hits, 1, "the table's insert was not failed (interposition lost?)");
	cr_assert_eq(rc, RDMX_E_NOMEM, "open -> %s", rdmx_err_name(rc));
	cr_assert_eq(x.s, sentinel, "*s written by a failed open");
	cr_assert_eq(rdmx_rpc_ep_get_streams(sc.ra), 1, "the failed stream is in the table");
	seen = cl;

	/* a call behind it has its answer: anything sent before it arrived */
	ASSERT_OK(rdmx_rpc_call_async(sc.ra, ECHO, &p, NULL, urec_cb, &u, NULL));
	DRIVE_UNTIL(&sc.a, &sc.b, u.done);
	cr_assert_eq(u.code, RDMX_RPC_OK);
	drive_for(&sc.a, &sc.b, 5);
	cr_assert_eq(x.done_n, 0, "on_done ran for a stream that failed to open");
	cr_assert_eq(sc.ss.n, 1, "the server heard of the failed stream");
	ASSERT_OK(rdmx_rpc_ep_get_stats(sc.rb, RDMX_RPC_ROLE_SERVER, &after));
	cr_assert_eq(after.streams_opened, before.streams_opened);
	cr_assert_eq(after.streams_ended, before.streams_ended);
	cr_assert_eq(after.stream_late_frames, before.stream_late_frames);
	ASSERT_OK(rdmx_rpc_ep_get_stats(sc.ra, RDMX_RPC_ROLE_CLIENT, &cafter));
	cr_assert_eq(cafter.streams_opened, cbefore.streams_opened);
	cr_assert_eq(cafter.streams_ended, cbefore.streams_ended);
	cr_assert_str_eq(seen.seq, "sA dA ");
	cr_assert_eq(seen.last_code, RDMX_RPC_RESOURCE_EXHAUSTED, "%s",
	             rdmx_rpc_code_name(seen.last_code));

	/* the connection goes on: a new stream, and the first one still open */
	ASSERT_OK(
	    rdmx_rpc_stream_open(sc.ra, BIDI, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs, &y, &y.s));
	write_n(&sc, &y, 3, 100);
	ASSERT_OK(rdmx_rpc_stream_half_close(y.s));
	DRIVE_UNTIL(&sc.a, &sc.b, y.done_n);
	cr_assert_eq(y.code, RDMX_RPC_OK, "%s", y.msg);
	cr_assert_eq(y.got, 3);
	cr_assert_eq(y.bad, 0);
	cr_assert_eq(pre.done_n, 0);
	ASSERT_OK(rdmx_rpc_stream_cancel(pre.s));
	DRIVE_UNTIL(&sc.a, &sc.b, pre.done_n && sc.ss.st[0].done);
	cr_assert_eq(pre.code, RDMX_RPC_CANCELLED);
	scene_close(&sc);
}

/* ---- an open whose channel closes during its own send ---- */

/* librdmx's rdmx__chan_send_ex, interposed as rdmx__map_put is above.
 * Armed with a channel, the next send on it from this thread sends nothing
 * and closes the channel from inside the send, as a send whose post fails
 * does (rdmx__chan_fail, then the post's error), and returns send_fail_rc:
 * that error, or 0 (a send that took its message and saw its channel close
 * on the way, which rdmx_rpc_stream_open tells by its endpoint closed). */
typedef int send_ex_fn(struct rdmx_chan *chan, size_t len, rdmx_chan_fill_fn fill, void *fill_arg,
                       rdmx_chan_sent_cb cb, void *arg, unsigned flags, unsigned *how);
send_ex_fn rdmx__chan_send_ex;
void rdmx__chan_fail(struct rdmx_chan *chan, int status, const char *why);
static _Thread_local struct rdmx_chan *send_fail_chan; /* NULL: none armed */
static _Thread_local int send_fail_rc, send_fail_hits;
static _Thread_local int send_fail_skip; /* sends on it let through first */

int rdmx__chan_send_ex(struct rdmx_chan *chan, size_t len, rdmx_chan_fill_fn fill, void *fill_arg,
                       rdmx_chan_sent_cb cb, void *arg, unsigned flags, unsigned *how)
{
	static send_ex_fn *_Atomic real;
	send_ex_fn *fn = real;

	if (send_fail_chan && chan == send_fail_chan && send_fail_skip > 0) {
		send_fail_skip--;
	} else if (send_fail_chan && chan == send_fail_chan) {
		send_fail_chan = NULL;
		send_fail_hits++;
		rdmx__chan_fail(chan, RDMX_E_PROVIDER, NULL);
		if (how)
			*how = 0;
		return send_fail_rc;
	}
	if (!fn) {
		*(void **)&fn = dlsym(RTLD_NEXT, "rdmx__chan_send_ex");
		cr_assert_not_null(fn, "librdmx's rdmx__chan_send_ex not found: %s", dlerror());
		real = fn;
	}
	return fn(chan, len, fill, fill_arg, cb, arg, flags, how);
}

/* The channel closes inside the open's own send (which returns send_rc):
 * the open returns `want`, once: *s untouched, no stream in the table, no
 * on_done then or later, not counted opened; the interceptor that saw it
 * start sees it end, once (UNAVAILABLE); the server, once it has seen the
 * close, never ran a handler. tcp only: over verbs' export/connect flow the
 * server learns of the close from its keep-alive probe, long after. */
static void open_closed_by_its_send(int send_rc, int want)
{
	struct scene sc;
	struct ic_log cl = {0};
	struct ic_arg A = {&cl, "A", NULL};
	struct cstream x = {0};
	struct rdmx_rpc_stream *const sentinel = (struct rdmx_rpc_stream *)&x;
	struct rdmx_rpc_stats before, after;
	struct rdmx_chan *ca;
	int rc;

	if (strcmp(env_device(0), "tcp") || strcmp(env_device(1), "tcp"))
		cr_skip_test("tcp devices only (%s/%s)", env_device(0), env_device(1));
	scene_open(&sc, NULL);
	ASSERT_OK(rdmx_rpc_ep_add_interceptor(sc.ra, &test_ic, &A));
	ASSERT_OK(rdmx_rpc_ep_get_stats(sc.ra, RDMX_RPC_ROLE_CLIENT, &before));
	ca = rdmx_rpc_ep_get_chan(sc.ra);

	x.s = sentinel;
	send_fail_chan = ca;
	send_fail_rc = send_rc;
	send_fail_hits = 0;
	rc = rdmx_rpc_stream_open(sc.ra, MUTE, RDMX_RPC_BIDI_STREAMING, NULL, &ccbs, &x, &x.s);
	send_fail_chan = NULL;
	cr_assert_eq(send_fail_hits, 1, "the open's send was not failed (interposition lost?)");
	cr_assert_eq(rc, want, "open -> %s", rdmx_err_name(rc));
	cr_assert_eq(x.s, sentinel, "*s written by a failed open");
	cr_assert_eq(rdmx_chan_get_state(ca), RDMX_CHAN_CLOSED);
	cr_assert_eq(rdmx_rpc_ep_get_streams(sc.ra), 0, "the failed stream is in the table");
	cr_assert_eq(x.done_n, 0, "on_done ran for a stream whose open failed");
	cr_assert_str_eq(cl.seq, "sA dA ");
	cr_assert_eq(cl.last_code, RDMX_RPC_UNAVAILABLE, "%s", rdmx_rpc_code_name(cl.last_code));
	ASSERT_OK(rdmx_rpc_ep_get_stats(sc.ra, RDMX_RPC_ROLE_CLIENT, &after));
	cr_assert_eq(after.streams_opened, before.streams_opened);
	cr_assert_eq(after.streams_ended, before.streams_ended);

	/* over tcp the disconnect comes after anything sent before it */
	DRIVE_UNTIL(&sc.a, &sc.b,
	            rdmx_chan_get_state(rdmx_rpc_ep_get_chan(sc.rb)) == RDMX_CHAN_CLOSED);
	drive_for(&sc.a, &sc.b, 5);
	cr_assert_eq(x.done_n, 0, "on_done ran for a stream whose open failed");
	cr_assert_eq(sc.ss.n, 0, "the server ran a handler for the failed open");
	cr_assert_eq(rdmx_rpc_ep_get_streams(sc.rb), 0);
	scene_close(&sc);
}

Test(stream, open_whose_send_fails_closing_the_channel_returns_the_error)
{
	open_closed_by_its_send(RDMX_E_PROVIDER, RDMX_E_PROVIDER);
}

Test(stream, open_whose_channel_closes_inside_a_taken_send_returns_bad_state)
{
	open_closed_by_its_send(0, RDMX_E_BAD_STATE);
}

/* The open's own frame goes and the window grant right after it (opts'
 * window and window_bytes) closes the channel: the open fails as one whose
 * send closed its channel (RDMX_E_BAD_STATE, *s untouched, no on_done: the
 * stream never reached its caller). Under ASan, the open applied the byte
 * window to the stream the close had ended and freed, and returned it. */
Test(stream, open_whose_window_grant_closes_the_channel_returns_bad_state)
{
	struct scene sc;
	struct cstream x = {0};
	struct rdmx_rpc_stream *const sentinel = (struct rdmx_rpc_stream *)&x;
	struct rdmx_rpc_stream_opts o = {.window = RDMX_RPC_STREAM_MAX_WINDOW,
	                                 .window_bytes = 8u << 20};
	struct rdmx_chan *ca;
	int rc;

	if (strcmp(env_device(0), "tcp") || strcmp(env_device(1), "tcp"))
		cr_skip_test("tcp devices only (%s/%s)", env_device(0), env_device(1));
	scene_open(&sc, NULL);
	ca = rdmx_rpc_ep_get_chan(sc.ra);
	x.s = sentinel;
	send_fail_chan = ca;
	send_fail_rc = RDMX_E_PROVIDER;
	send_fail_hits = 0;
	send_fail_skip = 1; /* the open's frame */
	rc = rdmx_rpc_stream_open(sc.ra, MUTE, RDMX_RPC_BIDI_STREAMING, &o, &ccbs, &x, &x.s);
	send_fail_chan = NULL;
	send_fail_skip = 0;
	cr_assert_eq(send_fail_hits, 1, "the grant's send was not failed (interposition lost?)");
	cr_assert_eq(rc, RDMX_E_BAD_STATE, "open -> %s", rdmx_err_name(rc));
	cr_assert_eq(x.s, sentinel, "*s written by a failed open");
	cr_assert_eq(rdmx_chan_get_state(ca), RDMX_CHAN_CLOSED);
	cr_assert_eq(rdmx_rpc_ep_get_streams(sc.ra), 0, "the failed stream is in the table");
	cr_assert_eq(x.done_n, 0, "on_done ran for a stream whose open failed");
	DRIVE_UNTIL(&sc.a, &sc.b,
	            rdmx_chan_get_state(rdmx_rpc_ep_get_chan(sc.rb)) == RDMX_CHAN_CLOSED);
	drive_for(&sc.a, &sc.b, 5);
	cr_assert_eq(x.done_n, 0, "on_done ran for a stream whose open failed");
	cr_assert_eq(rdmx_rpc_ep_get_streams(sc.rb), 0);
	scene_close(&sc);
}
