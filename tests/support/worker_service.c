#include "worker_service.h"

#include <pthread.h>
#include <string.h>

atomic_uint wsvc_echoes, wsvc_held, wsvc_hold_cancelled;

static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t seen[64];
static unsigned n_seen;

void wsvc_reset(void)
{
	atomic_store(&wsvc_echoes, 0);
	atomic_store(&wsvc_held, 0);
	atomic_store(&wsvc_hold_cancelled, 0);
	pthread_mutex_lock(&seen_lock);
	n_seen = 0;
	pthread_mutex_unlock(&seen_lock);
}

void wsvc_saw_thread(void)
{
	pthread_t me = pthread_self();
	unsigned i;

	pthread_mutex_lock(&seen_lock);
	for (i = 0; i < n_seen && !pthread_equal(seen[i], me); i++)
		;
	if (i == n_seen && n_seen < 64)
		seen[n_seen++] = me;
	pthread_mutex_unlock(&seen_lock);
}

unsigned wsvc_threads(void)
{
	unsigned n;

	pthread_mutex_lock(&seen_lock);
	n = n_seen;
	pthread_mutex_unlock(&seen_lock);
	return n;
}

void wsvc_echo(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(req, len);

	(void)arg;
	wsvc_saw_thread();
	atomic_fetch_add(&wsvc_echoes, 1);
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p);
}

static void hold_cancel(struct rdmx_rpc_server_call *call, void *arg)
{
	(void)arg;
	atomic_fetch_add(&wsvc_hold_cancelled, 1);
	rdmx_rpc_respond(call, RDMX_RPC_CANCELLED, "cancelled", NULL);
}

void wsvc_hold(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	(void)req;
	(void)len;
	(void)arg;
	atomic_fetch_add(&wsvc_held, 1);
	rdmx_rpc_call_set_cancel_cb(call, hold_cancel, NULL);
}

void wsvc_call_done(const struct rdmx_rpc_result *r, void *arg)
{
	struct wsvc_call *c = arg;

	c->done++;
	c->code = r->code;
	if (r->len == sizeof(c->got))
		memcpy(&c->got, r->data, sizeof(c->got));
}

bool wsvc_calls_done(const struct wsvc_call *v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (!v[i].done)
			return false;
	return true;
}
