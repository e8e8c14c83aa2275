/* The Prometheus / OpenMetrics text exposition (format 0.0.4) of the
 * counters rdmx collects: RPC server and client, channels, TLS listener.
 *
 * Names follow Prometheus' conventions: counters end in _total, units are
 * in the name (_seconds, _bytes), latencies are histograms (_bucket{le},
 * _sum, _count). Every family has its HELP and TYPE lines; label values are
 * escaped (backslash, double quote, newline).
 *
 *   rdmx_rpc_server_started_total{method}
 *   rdmx_rpc_server_handled_total{method,code}        code: "OK", "NOT_FOUND", ...
 *   rdmx_rpc_server_handling_seconds{method}          histogram
 *   rdmx_rpc_server_msg_received_bytes_total{method}, _msg_sent_bytes_total{method}
 *   rdmx_rpc_server_cancels_total{method}
 *   rdmx_rpc_server_clients                           gauge (when known)
 *   rdmx_rpc_client_started_total, _handled_total{code}, _handling_seconds
 *   rdmx_channel_messages_sent_total, _messages_received_total,
 *   rdmx_channel_sent_bytes_total, _received_bytes_total, _credit_stalls_total,
 *   rdmx_channel_rendezvous_sent_total, _rendezvous_received_total
 *   rdmx_tls_listener_accepted_total, _established_total, _refused_total,
 *   rdmx_tls_listener_timed_out_total, _over_limit_total, _evicted_total,
 *   rdmx_tls_listener_handshakes
 *   rdmx_engine_tasks_submitted_total{op}, _tasks_completed_total{op},
 *   rdmx_engine_tasks_failed_total{op}, rdmx_engine_bytes_total{op}
 *                                                     op: rdmx_task_type_name()
 *   rdmx_engine_connections_established_total, _connections_failed_total,
 *   rdmx_engine_connections_disconnected_total
 *
 * Threading: the counters are plain words owned by the thread that runs the
 * objects (their loop); call rdmx_metrics_write on that thread. */
#ifndef RDMX_METRICS_H
#define RDMX_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rdmx/channel.h>
#include <rdmx/ctx.h>
#include <rdmx/rpc.h>
#include <rdmx/tls.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What to expose; every member may be NULL / 0. */
struct rdmx_metrics_sources {
	/* per registered method, server role, summed over every endpoint */
	const struct rdmx_rpc_server *server;
	/* live endpoints: their client-role totals and their channels' counters */
	struct rdmx_rpc_ep *const *conns;
	size_t n_conns;
	/* counters of endpoints already gone, added to the live ones so that
	 * counters never go down (see rdmx_metrics_retire) */
	const struct rdmx_rpc_stats *client_retired;
	const struct rdmx_chan_stats *chan_retired;
	/* a snapshot from rdmx_tls_listener_get_stats (rdmx/tls.h) */
	const struct rdmx_tls_listener_stats *listener;
	int64_t clients; /* rdmx_rpc_server_clients gauge; < 0: not exported */
	/* a snapshot from rdmx_ctx_get_stats (rdmx/ctx.h): the engine counters */
	const struct rdmx_ctx_stats *engine;
};

/* Adds an endpoint's client-role totals and its channel's counters to the
 * retired sums (call when the endpoint goes). Errors: RDMX_E_INVAL. */
int rdmx_metrics_retire(struct rdmx_rpc_ep *ep, struct rdmx_rpc_stats *client_retired,
                        struct rdmx_chan_stats *chan_retired);

/* Writes the exposition to `f`. Errors: RDMX_E_INVAL (f or src NULL),
 * RDMX_E_PROVIDER (a write failed; errno logged). */
int rdmx_metrics_write(FILE *f, const struct rdmx_metrics_sources *src);

/* The Content-Type to serve it with. */
#define RDMX_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#ifdef __cplusplus
}
#endif
#endif
