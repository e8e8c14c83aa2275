/* The Prometheus text exposition of rdmx's counters (rdmx/metrics.h).
 * Method names come from the server's registry; every number is read
 * through the stats getters, so this file only formats. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/metrics.h>
#include "rpc_priv.h"

/* Histogram edges: every power of two from 2^10 ns (~1 us) to 2^34 ns
 * (~17 s). They fall on edges of the log-linear buckets of rdmx_rpc_hist,
 * so each cumulative count is exact: samples below the edge. */
#define EDGE_FIRST 10u
#define EDGE_LAST 34u

static void put_label_value(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\')
			fputs("\\\\", f);
		else if (*v == '"')
			fputs("\\\"", f);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{method="..."[,code="..."]} value */
static void sample(FILE *f, const char *name, const char *method, const char *code, uint64_t v)
{
	fputs(name, f);
	if (method || code) {
		fputc('{', f);
		if (method) {
			fputs("method=\"", f);
			put_label_value(f, method);
			fputc('"', f);
		}
		if (code)
			fprintf(f, "%scode=\"%s\"", method ? "," : "", code);
		fputc('}', f);
	}
	fprintf(f, " %llu\n", (unsigned long long)v);
}

/* A family of one series without labels. */
static void scalar(FILE *f, const char *name, const char *type, const char *help, uint64_t v)
{
	family(f, name, type, help);
	sample(f, name, NULL, NULL, v);
}

static void histogram(FILE *f, const char *name, const char *method, const struct rdmx_rpc_hist *h)
{
	uint64_t cum = 0;
	unsigned next = 0;

	for (unsigned e = EDGE_FIRST; e <= EDGE_LAST; e++) {
		uint64_t edge = 1ull << e;

		while (next < RDMX_RPC_HIST_BUCKETS && rdmx_rpc_hist_bucket_low(next) < edge)
			cum += h->buckets[next++];
		fprintf(f, "%s_bucket{", name);
		if (method) {
			fputs("method=\"", f);
			put_label_value(f, method);
			fputs("\",", f);
		}
		fprintf(f, "le=\"%.12g\"} %llu\n", (double)edge / 1e9, (unsigned long long)cum);
	}
	fprintf(f, "%s_bucket{", name);
	if (method) {
		fputs("method=\"", f);
		put_label_value(f, method);
		fputs("\",", f);
	}
	fprintf(f, "le=\"+Inf\"} %llu\n", (unsigned long long)h->count);
	fprintf(f, "%s_sum", name);
	if (method) {
		fputs("{method=\"", f);
		put_label_value(f, method);
		fputs("\"}", f);
	}
	fprintf(f, " %.9f\n", (double)h->sum_ns / 1e9);
	fprintf(f, "%s_count", name);
	if (method) {
		fputs("{method=\"", f);
		put_label_value(f, method);
		fputs("\"}", f);
	}
	fprintf(f, " %llu\n", (unsigned long long)h->count);
}

/* ---- server role: one series per registered method ---- */

struct method_view {
	const char *name;
	struct rdmx_rpc_stats st;
};

static size_t server_methods(const struct rdmx_rpc_server *server, struct method_view **out)
{
	const struct rpc_method *m;
	struct method_view *v;
	uint32_t pos = 0;
	size_t n = 0, i = 0;

	*out = NULL;
	while (rdmx__map_next(&server->methods, &pos, NULL))
		n++;
	if (!n)
		return 0;
	v = calloc(n, sizeof(*v));
	if (!v)
		return 0;
	pos = 0;
	while (i < n && (m = rdmx__map_next(&server->methods, &pos, NULL))) {
		if (rdmx_rpc_server_get_method_stats(server, m->id, &v[i].st))
			continue;
		v[i].name = m->name ? m->name : "unknown";
		i++;
	}
	*out = v;
	return i;
}

typedef uint64_t (*stat_fn)(const struct rdmx_rpc_stats *s);

static uint64_t st_calls(const struct rdmx_rpc_stats *s)
{
	return s->calls;
}
static uint64_t st_rx(const struct rdmx_rpc_stats *s)
{
	return s->bytes_received;
}
static uint64_t st_tx(const struct rdmx_rpc_stats *s)
{
	return s->bytes_sent;
}
static uint64_t st_cancels(const struct rdmx_rpc_stats *s)
{
	return s->cancels;
}

static void per_method(FILE *f, const struct method_view *v, size_t n, const char *name,
                       const char *help, stat_fn fn)
{
	family(f, name, "counter", help);
	for (size_t i = 0; i < n; i++)
		sample(f, name, v[i].name, NULL, fn(&v[i].st));
}

static void by_code(FILE *f, const char *name, const char *method, const struct rdmx_rpc_stats *s)
{
	for (unsigned c = 0; c < RDMX_RPC_CODE_COUNT; c++)
		if (c == RDMX_RPC_OK || s->by_code[c])
			sample(f, name, method, rdmx_rpc_code_name((enum rdmx_rpc_code)c),
			       s->by_code[c]);
}

static void write_server(FILE *f, const struct rdmx_rpc_server *server)
{
	struct method_view *v;
	size_t n = server_methods(server, &v);

	per_method(f, v, n, "rdmx_rpc_server_started_total", "Calls received, by method.",
	           st_calls);
	family(f, "rdmx_rpc_server_handled_total", "counter",
	       "Calls answered, by method and status code.");
	for (size_t i = 0; i < n; i++)
		by_code(f, "rdmx_rpc_server_handled_total", v[i].name, &v[i].st);
	family(f, "rdmx_rpc_server_handling_seconds", "histogram",
	       "Time from a request's arrival to its response, by method.");
	for (size_t i = 0; i < n; i++)
		histogram(f, "rdmx_rpc_server_handling_seconds", v[i].name, &v[i].st.latency);
	per_method(f, v, n, "rdmx_rpc_server_msg_received_bytes_total",
	           "Request body bytes received, by method.", st_rx);
	per_method(f, v, n, "rdmx_rpc_server_msg_sent_bytes_total",
	           "Response body bytes sent, by method.", st_tx);
	per_method(f, v, n, "rdmx_rpc_server_cancels_total",
	           "Cancels and deadlines seen by handlers, by method.", st_cancels);
	free(v);
}

/* ---- client role and channels: sums over the endpoints ---- */

static void stats_add(struct rdmx_rpc_stats *sum, const struct rdmx_rpc_stats *s)
{
	sum->calls += s->calls;
	sum->completed += s->completed;
	for (unsigned c = 0; c < RDMX_RPC_CODE_COUNT; c++)
		sum->by_code[c] += s->by_code[c];
	sum->errors += s->errors;
	sum->oneway += s->oneway;
	sum->bytes_sent += s->bytes_sent;
	sum->bytes_received += s->bytes_received;
	sum->credit_stalls += s->credit_stalls;
	sum->rendezvous += s->rendezvous;
	sum->cancels += s->cancels;
	sum->late_replies += s->late_replies;
	if (s->latency.count && (!sum->latency.count || s->latency.min_ns < sum->latency.min_ns))
		sum->latency.min_ns = s->latency.min_ns;
	if (s->latency.max_ns > sum->latency.max_ns)
		sum->latency.max_ns = s->latency.max_ns;
	sum->latency.count += s->latency.count;
	sum->latency.sum_ns += s->latency.sum_ns;
	for (unsigned i = 0; i < RDMX_RPC_HIST_BUCKETS; i++)
		sum->latency.buckets[i] += s->latency.buckets[i];
}

static void chan_add(struct rdmx_chan_stats *sum, const struct rdmx_chan_stats *s)
{
	sum->msgs_sent += s->msgs_sent;
	sum->msgs_received += s->msgs_received;
	sum->bytes_sent += s->bytes_sent;
	sum->bytes_received += s->bytes_received;
	sum->credit_stalls += s->credit_stalls;
	sum->again += s->again;
	sum->rendezvous_sent += s->rendezvous_sent;
	sum->rendezvous_received += s->rendezvous_received;
	sum->credit_updates_sent += s->credit_updates_sent;
	sum->credit_updates_received += s->credit_updates_received;
	if (s->queued_max > sum->queued_max)
		sum->queued_max = s->queued_max;
}

int rdmx_metrics_retire(struct rdmx_rpc_ep *ep, struct rdmx_rpc_stats *client_retired,
                        struct rdmx_chan_stats *chan_retired)
{
	struct rdmx_chan_stats cs;
	struct rdmx_rpc_stats st;
	struct rdmx_chan *chan;

	if (!ep || !client_retired || !chan_retired)
		return RDMX_E_INVAL;
	if (rdmx_rpc_ep_get_stats(ep, RDMX_RPC_ROLE_CLIENT, &st) == 0)
		stats_add(client_retired, &st);
	chan = rdmx_rpc_ep_get_chan(ep);
	if (chan && rdmx_chan_get_stats(chan, &cs) == 0)
		chan_add(chan_retired, &cs);
	return 0;
}

static void write_client_and_channels(FILE *f, const struct rdmx_metrics_sources *src)
{
	struct rdmx_rpc_stats *cl = calloc(1, sizeof(*cl));
	struct rdmx_chan_stats ch;
	struct rdmx_chan_stats cs;

	if (!cl)
		return;
	memset(&ch, 0, sizeof(ch));
	if (src->client_retired)
		stats_add(cl, src->client_retired);
	if (src->chan_retired)
		chan_add(&ch, src->chan_retired);
	for (size_t i = 0; i < src->n_conns; i++) {
		struct rdmx_rpc_stats st;
		struct rdmx_chan *chan;

		if (!src->conns[i])
			continue;
		if (rdmx_rpc_ep_get_stats(src->conns[i], RDMX_RPC_ROLE_CLIENT, &st) == 0)
			stats_add(cl, &st);
		chan = rdmx_rpc_ep_get_chan(src->conns[i]);
		if (chan && rdmx_chan_get_stats(chan, &cs) == 0)
			chan_add(&ch, &cs);
	}
	scalar(f, "rdmx_rpc_client_started_total", "counter", "Calls started by this process.",
	       cl->calls);
	family(f, "rdmx_rpc_client_handled_total", "counter", "Calls completed, by status code.");
	by_code(f, "rdmx_rpc_client_handled_total", NULL, cl);
	family(f, "rdmx_rpc_client_handling_seconds", "histogram", "Round trip of calls made.");
	histogram(f, "rdmx_rpc_client_handling_seconds", NULL, &cl->latency);
	free(cl);

	scalar(f, "rdmx_channel_messages_sent_total", "counter",
	       "Channel messages delivered to peers.", ch.msgs_sent);
	scalar(f, "rdmx_channel_messages_received_total", "counter",
	       "Channel messages received from peers.", ch.msgs_received);
	scalar(f, "rdmx_channel_sent_bytes_total", "counter", "Channel payload bytes sent.",
	       ch.bytes_sent);
	scalar(f, "rdmx_channel_received_bytes_total", "counter", "Channel payload bytes received.",
	       ch.bytes_received);
	scalar(f, "rdmx_channel_credit_stalls_total", "counter",
	       "Sends that found no credit and queued.", ch.credit_stalls);
	scalar(f, "rdmx_channel_rendezvous_sent_total", "counter",
	       "Messages sent by rendezvous (one RDMA read by the peer).", ch.rendezvous_sent);
	scalar(f, "rdmx_channel_rendezvous_received_total", "counter",
	       "Messages received by rendezvous.", ch.rendezvous_received);
}

static void write_listener(FILE *f, const struct rdmx_tls_listener_stats *ls)
{
	const struct rdmx_tls_listener_stats s = *ls;

	scalar(f, "rdmx_tls_listener_accepted_total", "counter", "TCP connections accepted.",
	       s.accepted);
	scalar(f, "rdmx_tls_listener_established_total", "counter",
	       "Connections through the mutual-TLS handshake.", s.established);
	scalar(f, "rdmx_tls_listener_refused_total", "counter", "Handshakes that failed.",
	       s.refused);
	scalar(f, "rdmx_tls_listener_timed_out_total", "counter", "Handshakes that timed out.",
	       s.timed_out);
	scalar(f, "rdmx_tls_listener_over_limit_total", "counter",
	       "Connections closed at once by the per-source limit.", s.over_limit);
	scalar(f, "rdmx_tls_listener_evicted_total", "counter",
	       "Idle half-open handshakes dropped to make room for new connections.", s.evicted);
	scalar(f, "rdmx_tls_listener_handshakes", "gauge", "Handshakes in progress.",
	       s.handshaking);
}

/* ---- engine: one series per task type ---- */

static void per_op(FILE *f, const char *name, const char *help, const uint64_t *v)
{
	family(f, name, "counter", help);
	for (unsigned t = 0; t < RDMX_TASK_TYPE_COUNT; t++)
		fprintf(f, "%s{op=\"%s\"} %llu\n", name,
		        rdmx_task_type_name((enum rdmx_task_type)t), (unsigned long long)v[t]);
}

static void write_engine(FILE *f, const struct rdmx_ctx_stats *es)
{
	per_op(f, "rdmx_engine_tasks_submitted_total", "Engine tasks submitted, by operation.",
	       es->submitted);
	per_op(f, "rdmx_engine_tasks_completed_total",
	       "Engine tasks completed successfully, by operation.", es->completed);
	per_op(f, "rdmx_engine_tasks_failed_total",
	       "Engine tasks completed with an error, by operation.", es->failed);
	per_op(f, "rdmx_engine_bytes_total",
	       "Payload bytes of successful engine tasks (sent, received, written, read), by "
	       "operation.",
	       es->bytes);
	scalar(f, "rdmx_engine_connections_established_total", "counter",
	       "Engine connections established.", es->conns_established);
	scalar(f, "rdmx_engine_connections_failed_total", "counter",
	       "Engine connections that failed to come up or were refused.", es->conns_failed);
	scalar(f, "rdmx_engine_connections_disconnected_total", "counter",
	       "Engine connections that ended.", es->conns_disconnected);
}

int rdmx_metrics_write(FILE *f, const struct rdmx_metrics_sources *src)
{
	if (!f || !src)
		return RDMX_E_INVAL;
	if (src->server)
		write_server(f, src->server);
	if (src->clients >= 0) {
		family(f, "rdmx_rpc_server_clients", "gauge", "Clients with a live endpoint.");
		sample(f, "rdmx_rpc_server_clients", NULL, NULL, (uint64_t)src->clients);
	}
	if (src->n_conns || src->client_retired || src->chan_retired)
		write_client_and_channels(f, src);
	if (src->listener)
		write_listener(f, src->listener);
	if (src->engine)
		write_engine(f, src->engine);
	if (fflush(f) || ferror(f)) {
		RDMX_ERR("writing the metrics exposition failed: %s", strerror(errno));
		return RDMX_E_PROVIDER;
	}
	return 0;
}
