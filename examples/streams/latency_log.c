/* latency_log: a server interceptor that times every call per method and
 * logs one line per call (method name, status, microseconds), then prints
 * a per-method summary. Unary calls and streams alike.
 *   latency_log [-d DEVICE]     (default tcp) */
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "pair.h"

#define FAST "example.Latency/Fast"
#define WORDS "example.Latency/Words"

/* [latency-interceptor] */
struct method_time {
	uint32_t method;
	const char *name;
	uint64_t calls, total_ns;
};
struct latency_log {
	struct method_time m[16];
	unsigned n;
};

static enum rdmx_rpc_code time_start(const struct rdmx_rpc_call_info *info,
                                     struct rdmx_rpc_md *annotate, const char **message,
                                     void **state, void *arg)
{
	uint64_t *start = malloc(sizeof(*start));

	(void)info;
	(void)annotate;
	(void)arg;
	if (!start) {
		*message = "out of memory";
		return RDMX_RPC_RESOURCE_EXHAUSTED;
	}
	*start = rdmx_pe_now_ns();
	*state = start; /* per call, handed back to on_done */
	return RDMX_RPC_OK;
}

static void time_done(const struct rdmx_rpc_call_info *info, enum rdmx_rpc_code code,
                      const char *message, void *state, void *arg)
{
	struct latency_log *log = arg;
	uint64_t ns = state ? rdmx_pe_now_ns() - *(uint64_t *)state : 0;
	unsigned i;

	(void)message;
	free(state);
	for (i = 0; i < log->n && log->m[i].method != info->method; i++)
		;
	if (i == log->n && log->n < 16) {
		log->m[i].method = info->method;
		log->m[i].name = info->method_name;
		log->n++;
	}
	if (i < log->n) {
		log->m[i].calls++;
		log->m[i].total_ns += ns;
	}
	printf("%s%s %s %llu us\n", info->method_name ? info->method_name : "?",
	       info->stream ? " (stream)" : "", rdmx_rpc_code_name(code),
	       (unsigned long long)(ns / 1000u));
}
/* [latency-interceptor] */

static void fast(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	(void)req;
	(void)len;
	(void)arg;
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, NULL);
}

static void words_msg(struct rdmx_rpc_stream *s, const void *d, size_t l, void *a)
{
	(void)s;
	(void)d;
	(void)l;
	(*(unsigned *)a)++;
}

static void on_words(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_msg = words_msg,
	                                               .on_half_close = pair_finish_on_half_close,
	                                               .on_done = pair_stream_done};

	CHECK(rdmx_rpc_stream_set_callbacks(s, &cbs, arg));
}

static bool replied;
static void on_reply(const struct rdmx_rpc_result *r, void *arg)
{
	(void)r;
	(void)arg;
	replied = true;
}

static bool stream_ended;
static void on_stream_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st,
                           void *arg)
{
	(void)s;
	(void)st;
	(void)arg;
	stream_ended = true;
}

int main(int argc, char **argv)
{
	const char *device = pair_device(argc, argv);
	struct rdmx_rpc_server *srv;
	struct latency_log log = {0};
	unsigned words = 0;
	struct pair p;

	if (!device)
		return 2;
	CHECK(rdmx_rpc_server_create(&srv));
	CHECK(rdmx_rpc_server_register(srv, rdmx_rpc_method_id(FAST), FAST, fast, NULL));
	CHECK(rdmx_rpc_server_register_stream(srv, rdmx_rpc_method_id(WORDS), WORDS,
	                                      RDMX_RPC_CLIENT_STREAMING, on_words, &words));
	static const struct rdmx_rpc_interceptor timer = {.on_start = time_start,
	                                                  .on_done = time_done};
	CHECK(rdmx_rpc_server_add_interceptor(srv, &timer, &log));
	pair_open(&p, device, srv);

	for (int i = 0; i < 5; i++) {
		replied = false;
		CHECK(rdmx_rpc_call_async(p.client.ep, rdmx_rpc_method_id(FAST), NULL, NULL,
		                          on_reply, NULL, NULL));
		while (!replied)
			pair_drive(&p);
	}
	static const struct rdmx_rpc_stream_cbs cbs = {.on_done = on_stream_done};
	struct rdmx_rpc_stream *s;
	CHECK(rdmx_rpc_stream_open(p.client.ep, rdmx_rpc_method_id(WORDS),
	                           RDMX_RPC_CLIENT_STREAMING, NULL, &cbs, NULL, &s));
	for (int i = 0; i < 10; i++) {
		struct rdmx_rpc_payload w = rdmx_rpc_bytes("word", 4);

		CHECK(rdmx_rpc_stream_write(s, &w));
	}
	CHECK(rdmx_rpc_stream_half_close(s));
	while (!stream_ended)
		pair_drive(&p);

	printf("per method:\n");
	for (unsigned i = 0; i < log.n; i++)
		printf("  %-24s %llu calls, mean %llu us\n", log.m[i].name,
		       (unsigned long long)log.m[i].calls,
		       (unsigned long long)(log.m[i].total_ns / log.m[i].calls / 1000u));
	pair_close(&p);
	CHECK(rdmx_rpc_server_destroy(&srv));
	return log.n == 2 && log.m[0].calls == 5 && log.m[1].calls == 1 && words == 10 ? 0 : 1;
}
