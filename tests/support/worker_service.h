/* The service of the multi-worker server tests (rdmx_rpc_workers_* over the
 * cm flow, rdmx_rpc_secure_workers_*): Echo, and Hold (answered CANCELLED
 * once cancelled), run on the worker threads; it counts what it did and
 * the threads it ran on. */
#ifndef RDMX_TEST_WORKER_SERVICE_H
#define RDMX_TEST_WORKER_SERVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdmx/rpc.h>
#include <rdmx/rpc_stream.h> /* struct rdmx_rpc_interceptor */

extern atomic_uint wsvc_echoes, wsvc_held, wsvc_hold_cancelled;
/* Calls the counting interceptor (wsvc_count_ic) saw start and end. */
extern atomic_uint wsvc_ic_started, wsvc_ic_done;

/* Counters and threads back to none (between tests, workers stopped). */
void wsvc_reset(void);
/* Records the calling thread among those that served (any handler). */
void wsvc_saw_thread(void);
/* How many threads served so far. */
unsigned wsvc_threads(void);
/* Echo: the request back, OK. Hold: kept until cancelled. */
void wsvc_echo(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg);
void wsvc_hold(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg);

/* A server interceptor that counts every call's start and end (on any
 * thread) in wsvc_ic_started / wsvc_ic_done and lets every call go. */
extern const struct rdmx_rpc_interceptor wsvc_count_ic;

/* A client's record of one async call to the service: wsvc_call_done is its
 * rdmx_rpc_call_async callback (counts, keeps the code and an 8-byte echo). */
struct wsvc_call {
	int done;
	enum rdmx_rpc_code code;
	uint64_t tag, got;
};
void wsvc_call_done(const struct rdmx_rpc_result *r, void *arg);
/* Whether all n calls of v have completed. */
bool wsvc_calls_done(const struct wsvc_call *v, unsigned n);
/* Asserts that each of the n Echo calls of v completed once, OK, with its
 * own tag back (no call got another call's answer). */
void wsvc_assert_echoed(const struct wsvc_call *v, unsigned n);

#endif
