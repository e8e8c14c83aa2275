/* rdmx_metrics_write: HELP/TYPE lines, escaped label values, histogram
 * structure (cumulative buckets ending in +Inf == _count), bad arguments. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/metrics.h>
#include <rdmx/status.h>

static void handler(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	(void)req;
	(void)len;
	(void)arg;
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, NULL);
}

static char *expose(const struct rdmx_metrics_sources *src)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert(f);
	cr_assert_eq(rdmx_metrics_write(f, src), 0);
	cr_assert_eq(fclose(f), 0);
	return text;
}

Test(metrics, server_methods_escaped)
{
	struct rdmx_rpc_server *server = NULL;
	struct rdmx_metrics_sources src;
	char *text;

	cr_assert_eq(rdmx_rpc_server_create(&server), 0);
	cr_assert_eq(rdmx_rpc_server_register(server, 7, "pkg.S/M\"x\\y\nz", handler, NULL), 0);
	memset(&src, 0, sizeof(src));
	src.server = server;
	src.clients = 3;
	text = expose(&src);
	cr_expect(strstr(text, "# HELP rdmx_rpc_server_handled_total "));
	cr_expect(strstr(text, "# TYPE rdmx_rpc_server_handled_total counter\n"));
	cr_expect(strstr(text, "# TYPE rdmx_rpc_server_handling_seconds histogram\n"));
	cr_expect(strstr(text, "rdmx_rpc_server_handled_total{method=\"pkg.S/M\\\"x\\\\y\\nz\","
	                       "code=\"OK\"} 0\n"),
	          "%s", text);
	cr_expect(strstr(text,
	                 "rdmx_rpc_server_handling_seconds_bucket{method=\"pkg.S/M\\\"x\\\\y\\nz\","
	                 "le=\"+Inf\"} 0\n"));
	cr_expect(strstr(
	    text, "rdmx_rpc_server_handling_seconds_count{method=\"pkg.S/M\\\"x\\\\y\\nz\"} 0\n"));
	cr_expect(strstr(text, "rdmx_rpc_server_clients 3\n"));
	/* no raw newline inside a label */
	cr_expect_null(strstr(text, "M\"x"));
	free(text);
	rdmx_rpc_server_destroy(&server);
}

Test(metrics, listener_and_retired_channels)
{
	struct rdmx_tls_listener_stats ls = {
	    .accepted = 5, .established = 4, .refused = 1, .evicted = 3, .handshaking = 2};
	struct rdmx_chan_stats ch;
	struct rdmx_rpc_stats *cl = calloc(1, sizeof(*cl));
	struct rdmx_metrics_sources src;
	char *text;

	cr_assert(cl);
	memset(&ch, 0, sizeof(ch));
	ch.msgs_sent = 11;
	ch.bytes_received = 12345;
	cl->calls = 9;
	cl->by_code[RDMX_RPC_UNAVAILABLE] = 2;
	cl->latency.count = 2;
	cl->latency.sum_ns = 3000000000u;
	cl->latency.buckets[RDMX_RPC_HIST_BUCKETS - 1] = 2; /* beyond every edge */
	memset(&src, 0, sizeof(src));
	src.clients = -1;
	src.listener = &ls;
	src.chan_retired = &ch;
	src.client_retired = cl;
	text = expose(&src);
	cr_expect(strstr(text, "rdmx_tls_listener_accepted_total 5\n"));
	cr_expect(strstr(text, "rdmx_tls_listener_established_total 4\n"));
	cr_expect(strstr(text, "rdmx_tls_listener_evicted_total 3\n"));
	cr_expect(strstr(
	    text, "# TYPE rdmx_tls_listener_handshakes gauge\nrdmx_tls_listener_handshakes 2\n"));
	cr_expect(strstr(text, "rdmx_channel_messages_sent_total 11\n"));
	cr_expect(strstr(text, "rdmx_channel_received_bytes_total 12345\n"));
	cr_expect(strstr(text, "rdmx_rpc_client_started_total 9\n"));
	cr_expect(strstr(text, "rdmx_rpc_client_handled_total{code=\"UNAVAILABLE\"} 2\n"));
	cr_expect(strstr(text, "rdmx_rpc_client_handling_seconds_bucket{le=\"1.073741824\"} 0\n"),
	          "%s", text);
	cr_expect(strstr(text, "rdmx_rpc_client_handling_seconds_bucket{le=\"+Inf\"} 2\n"));
	cr_expect(strstr(text, "rdmx_rpc_client_handling_seconds_sum 3.000000000\n"));
	cr_expect(strstr(text, "rdmx_rpc_client_handling_seconds_count 2\n"));
	cr_expect_null(strstr(text, "rdmx_rpc_server_clients"));
	free(text);
	free(cl);
}

Test(metrics, bad_arguments)
{
	struct rdmx_metrics_sources src;

	memset(&src, 0, sizeof(src));
	cr_expect_eq(rdmx_metrics_write(NULL, &src), RDMX_E_INVAL);
	cr_expect_eq(rdmx_metrics_write(stdout, NULL), RDMX_E_INVAL);
	cr_expect_eq(rdmx_metrics_retire(NULL, NULL, NULL), RDMX_E_INVAL);
}

Test(metrics, engine_counters_by_op)
{
	struct rdmx_ctx_stats es;
	struct rdmx_metrics_sources src;
	char *text;

	memset(&es, 0, sizeof(es));
	es.submitted[RDMX_TASK_WRITE] = 11;
	es.completed[RDMX_TASK_WRITE] = 10;
	es.failed[RDMX_TASK_WRITE] = 1;
	es.bytes[RDMX_TASK_WRITE] = 40960;
	es.bytes[RDMX_TASK_READ] = 7;
	es.conns_established = 3;
	es.conns_failed = 2;
	es.conns_disconnected = 1;
	memset(&src, 0, sizeof(src));
	src.clients = -1;
	src.engine = &es;
	text = expose(&src);
	cr_expect(strstr(text, "# TYPE rdmx_engine_tasks_submitted_total counter\n"), "%s", text);
	cr_expect(strstr(text, "# HELP rdmx_engine_tasks_failed_total "));
	cr_expect(strstr(text, "rdmx_engine_tasks_submitted_total{op=\"write\"} 11\n"), "%s", text);
	cr_expect(strstr(text, "rdmx_engine_tasks_completed_total{op=\"write\"} 10\n"));
	cr_expect(strstr(text, "rdmx_engine_tasks_failed_total{op=\"write\"} 1\n"));
	cr_expect(strstr(text, "rdmx_engine_bytes_total{op=\"write\"} 40960\n"));
	cr_expect(strstr(text, "rdmx_engine_bytes_total{op=\"read\"} 7\n"));
	/* every operation has its series, zero or not */
	cr_expect(strstr(text, "rdmx_engine_tasks_submitted_total{op=\"receive\"} 0\n"));
	cr_expect(strstr(text, "rdmx_engine_tasks_submitted_total{op=\"atomic_fadd\"} 0\n"));
	cr_expect(
	    strstr(text, "rdmx_engine_tasks_submitted_total{op=\"sync_event_notify_add\"} 0\n"));
	cr_expect(strstr(text, "rdmx_engine_connections_established_total 3\n"));
	cr_expect(strstr(text, "rdmx_engine_connections_failed_total 2\n"));
	cr_expect(strstr(text, "rdmx_engine_connections_disconnected_total 1\n"));
	/* nothing else asked for, nothing else written */
	cr_expect_null(strstr(text, "rdmx_rpc_"));
	free(text);

	/* no engine source: no engine family */
	src.engine = NULL;
	text = expose(&src);
	cr_expect_null(strstr(text, "rdmx_engine_"));
	free(text);
}
