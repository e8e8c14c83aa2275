#include "worker_service.h"

#include <criterion/criterion.h>

#include <pthread.h>
#include <string.h>

atomic_uint wsvc_echoes, wsvc_held, wsvc_hold_cancelled;
atomic_uint wsvc_ic_started, wsvc_ic_done;

static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t seen[64];
static unsigned n_seen;

void wsvc_reset(void)
{
	atomic_store(&wsvc_echoes, 0);
	atomic_store(&wsvc_held, 0);
	atomic_store(&wsvc_hold_cancelled, 0);
	atomic_store(&wsvc_ic_started, 0);
	atomic_store(&wsvc_ic_done, 0);
	pthread_mutex_lock(&seen_lock);
	n_seen = 0;
	pthread_mutex_unlock(&seen_lock);
}

static enum rdmx_rpc_code count_ic_start(const struct rdmx_rpc_call_info *info,
                                         struct rdmx_rpc_md *annotate, const char **message,
                                         void **state, void *arg)
{
	(void)info;
	(void)annotate;
	(void)message;
	(void)state;
	(void)arg;
	atomic_fetch_add(&wsvc_ic_started, 1);
	return RDMX_RPC_OK;
}

static void count_ic_done(const struct rdmx_rpc_call_info *info, enum rdmx_rpc_code code,
                          const char *message, void *state, void *arg)
{
	(void)info;
	(void)code;
	(void)message;
	(void)state;
	(void)arg;
	atomic_fetch_add(&wsvc_ic_done, 1);
}

const struct rdmx_rpc_interceptor wsvc_count_ic = {count_ic_start, NULL, count_ic_done};

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

void wsvc_assert_echoed(const struct wsvc_call *v, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		cr_assert_eq(v[i].done, 1, "call %u completed %d times", i, v[i].done);
		cr_assert_eq(v[i].code, RDMX_RPC_OK, "call %u: %s", i,
		             rdmx_rpc_code_name(v[i].code));
		cr_assert_eq(v[i].got, v[i].tag, "call %u got another call's answer", i);
	}
}
