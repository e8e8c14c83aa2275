/* Registry keeper: holds one membership on a thread of its own, so that a
 * slow, frozen or gone registry never blocks the program's serving loop.
 *
 * The thread owns its registry client (its own socket and TLS session) and
 * shares nothing with the caller but a mutex-guarded state word and the
 * stop request; the serving loop never waits for it. Every connect and
 * request is bounded by the keeper's timeout; a failed connect, join or
 * heartbeat is retried after an exponential back-off (min .. max, doubled
 * per failure, reset by a success). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdmx/registry.h>

#include "registry_proto.h"
#include "tls_internal.h"
#include "common/clock.h"

struct rdmx_registry_keeper {
	/* settings (copied, read-only once the thread runs) */
	char *url; /* NULL: host + port */
	char *host;
	uint16_t port;
	struct rdmx_tls_config *cfg;
	char *service, *endpoint;
	struct rdmx_registry_kv *meta;
	size_t n_meta;
	uint32_t ttl_ms;
	int timeout_ms;
	uint32_t backoff_min_ms, backoff_max_ms;
	rdmx_registry_keeper_cb cb;
	void *arg;

	/* the keeper thread's own */
	struct rdmx_registry_client *client;
	uint64_t held; /* a member whose renewal failed in transit: its lease may still hold */
	uint32_t granted_ms;
	uint32_t backoff_ms;

	pthread_t thread;
	bool running;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;         /* guarded by lock */
	uint64_t member;   /* guarded by lock */
	int last_status;   /* guarded by lock */
	uint64_t failures; /* guarded by lock */
};

/* Waits until `at` (monotonic ms) or a stop request: true when asked to
 * stop. */
static bool wait_until(struct rdmx_registry_keeper *k, int64_t at)
{
	struct timespec ts;
	bool stop;

	pthread_mutex_lock(&k->lock);
	while (!k->stop) {
		int64_t left = at - (int64_t)rdmx__now_ms();

		if (left <= 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += left / 1000;
		ts.tv_nsec += (left % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_cond_timedwait(&k->cond, &k->lock, &ts) == ETIMEDOUT)
			break;
	}
	stop = k->stop;
	pthread_mutex_unlock(&k->lock);
	return stop;
}

static void set_state(struct rdmx_registry_keeper *k, uint64_t member, int status)
{
	bool changed;

	pthread_mutex_lock(&k->lock);
	changed = k->member != member || (k->last_status != 0) != (status != 0);
	k->member = member;
	k->last_status = status;
	if (status)
		k->failures++;
	pthread_mutex_unlock(&k->lock);
	if (changed && k->cb)
		k->cb(k, member, status, k->arg);
}

/* Connects when needed: 0 or the error. */
static int open_client(struct rdmx_registry_keeper *k)
{
	if (k->client)
		return RDMX_OK;
	return k->url ? rdmx_registry_client_open(k->url, k->cfg, k->timeout_ms, &k->client)
	              : rdmx_registry_client_connect_timeout(k->host, k->port, k->cfg,
	                                                     k->timeout_ms, &k->client);
}

/* Connects when needed and joins: 0 or the error. */
static int join(struct rdmx_registry_keeper *k)
{
	uint64_t member = 0;
	int ret = open_client(k);

	if (ret)
		return ret;
	ret = rdmx_registry_client_join(k->client, k->service, k->endpoint, k->meta, k->n_meta,
	                                k->ttl_ms, &member, &k->granted_ms);
	if (ret) {
		if (*rdmx_registry_client_last_error(k->client))
			RDMX_SEC_WARN("registry: joining as %s refused: %s", k->service,
			              rdmx_registry_client_last_error(k->client));
		rdmx_registry_client_destroy(&k->client);
		return ret;
	}
	set_state(k, member, 0);
	return RDMX_OK;
}

/* The next heartbeat: a third of the lease, at least 50 ms. */
static int64_t beat_after(const struct rdmx_registry_keeper *k)
{
	uint32_t ms = (k->granted_ms ? k->granted_ms : k->ttl_ms) / 3;

	return (int64_t)rdmx__now_ms() + (ms < 50 ? 50 : ms);
}

static int64_t failed(struct rdmx_registry_keeper *k, const char *what, int ret)
{
	int64_t at = (int64_t)rdmx__now_ms() + k->backoff_ms;

	RDMX_SEC_WARN("registry: %s %s: %s; retrying in %u ms", what, k->service,
	              rdmx_strerror(ret), k->backoff_ms);
	set_state(k, 0, ret);
	k->backoff_ms =
	    k->backoff_ms >= k->backoff_max_ms / 2 ? k->backoff_max_ms : k->backoff_ms * 2;
	return at;
}

static void *keeper_main(void *arg)
{
	struct rdmx_registry_keeper *k = arg;
	int64_t at = beat_after(k);

	while (!wait_until(k, at)) {
		uint64_t member;
		int ret;

		pthread_mutex_lock(&k->lock);
		member = k->member;
		pthread_mutex_unlock(&k->lock);
		if (!member)
			member = k->held;
		if (member) {
			ret = open_client(k);
			if (!ret)
				ret = rdmx_registry_client_heartbeat(k->client, member);
			if (!ret) {
				k->held = 0;
				set_state(k, member, 0);
				k->backoff_ms = k->backoff_min_ms;
				at = beat_after(k);
				continue;
			}
			if (ret != RDMX_E_NOT_FOUND && ret != RDMX_E_AUTH) {
				/* no answer (timeout, lost session, registry down): the
				 * lease may still hold, so renew this member again rather
				 * than join a second one beside it */
				rdmx_registry_client_destroy(&k->client);
				k->held = member;
				at = failed(k, "renewing the membership of", ret);
				continue;
			}
			RDMX_SEC_WARN("registry: %s member %llu is gone (%s); joining again",
			              k->service, (unsigned long long)member, rdmx_strerror(ret));
			k->held = 0;
			set_state(k, 0, ret);
		}
		ret = join(k);
		if (ret) {
			at = failed(k, "joining as", ret);
			continue;
		}
		k->backoff_ms = k->backoff_min_ms;
		at = beat_after(k);
	}
	/* leave while the session is there; bounded by the timeout */
	pthread_mutex_lock(&k->lock);
	if (k->member && k->client) {
		uint64_t member = k->member;

		k->member = 0;
		pthread_mutex_unlock(&k->lock);
		rdmx_registry_client_leave(k->client, member);
	} else {
		pthread_mutex_unlock(&k->lock);
	}
	rdmx_registry_client_destroy(&k->client);
	return NULL;
}

void rdmx_registry_keeper_opts_init(struct rdmx_registry_keeper_opts *o)
{
	if (o)
		memset(o, 0, sizeof(*o));
}

static void keeper_free(struct rdmx_registry_keeper *k)
{
	for (size_t i = 0; i < k->n_meta; i++) {
		free((char *)k->meta[i].key);
		free((char *)k->meta[i].value);
	}
	free(k->meta);
	free(k->url);
	free(k->host);
	free(k->service);
	free(k->endpoint);
	pthread_mutex_destroy(&k->lock);
	pthread_cond_destroy(&k->cond);
	free(k);
}

static int copy_settings(struct rdmx_registry_keeper *k, const struct rdmx_registry_keeper_opts *o)
{
	if (o->url)
		k->url = strdup(o->url);
	else
		k->host = strdup(o->host);
	k->service = strdup(o->service);
	k->endpoint = strdup(o->endpoint);
	if ((!k->url && !k->host) || !k->service || !k->endpoint)
		return RDMX_E_NOMEM;
	if (o->n_meta) {
		k->meta = calloc(o->n_meta, sizeof(*k->meta));
		if (!k->meta)
			return RDMX_E_NOMEM;
		for (size_t i = 0; i < o->n_meta; i++) {
			k->meta[i].key = strdup(o->meta[i].key);
			k->meta[i].value = strdup(o->meta[i].value);
			k->n_meta = i + 1;
			if (!k->meta[i].key || !k->meta[i].value)
				return RDMX_E_NOMEM;
		}
	}
	return RDMX_OK;
}

static bool opts_valid(const struct rdmx_registry_keeper_opts *o)
{
	if (!o || (!o->url && (!o->host || !*o->host || !o->port)) || (o->url && !*o->url) ||
	    !o->cfg || !rdmx__reg_valid_service(o->service) ||
	    !rdmx__reg_valid_endpoint(o->endpoint) || o->n_meta > RDMX_REGISTRY_MAX_META ||
	    (o->n_meta && !o->meta) || o->timeout_ms < 0 || o->timeout_ms > 600000 ||
	    (o->backoff_max_ms && o->backoff_min_ms > o->backoff_max_ms))
		return false;
	for (size_t i = 0; i < o->n_meta; i++)
		if (!rdmx__reg_valid_meta_key(o->meta[i].key) ||
		    !rdmx__reg_valid_meta_value(o->meta[i].value))
			return false;
	return true;
}

int rdmx_registry_keeper_start(const struct rdmx_registry_keeper_opts *o,
                               struct rdmx_registry_keeper **out)
{
	struct rdmx_registry_keeper *k;
	pthread_condattr_t ca;
	int ret;

	if (!opts_valid(o) || !out)
		return RDMX_E_INVAL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return RDMX_E_NOMEM;
	pthread_mutex_init(&k->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cond, &ca);
	pthread_condattr_destroy(&ca);
	ret = copy_settings(k, o);
	if (ret)
		goto free_k;
	k->port = o->port;
	k->cfg = o->cfg;
	k->ttl_ms = o->ttl_ms;
	k->timeout_ms = o->timeout_ms ? o->timeout_ms : RDMX_REGISTRY_KEEPER_DEFAULT_TIMEOUT_MS;
	k->backoff_min_ms = o->backoff_min_ms ? o->backoff_min_ms : 250;
	k->backoff_max_ms = o->backoff_max_ms ? o->backoff_max_ms : 10000;
	if (k->backoff_min_ms > k->backoff_max_ms)
		k->backoff_min_ms = k->backoff_max_ms;
	k->backoff_ms = k->backoff_min_ms;
	k->cb = o->cb;
	k->arg = o->arg;
	/* the first join here, so that a program can fail at start-up */
	ret = join(k);
	if (ret)
		goto free_k;
	ret = pthread_create(&k->thread, NULL, keeper_main, k);
	if (ret) {
		RDMX_SEC_ERR("registry: cannot start the keeper thread: %s", strerror(ret));
		if (k->member)
			rdmx_registry_client_leave(k->client, k->member);
		rdmx_registry_client_destroy(&k->client);
		ret = RDMX_E_NOMEM;
		goto free_k;
	}
	k->running = true;
	*out = k;
	return RDMX_OK;

free_k:
	keeper_free(k);
	return ret;
}

uint64_t rdmx_registry_keeper_get_member(struct rdmx_registry_keeper *k)
{
	uint64_t m;

	if (!k)
		return 0;
	pthread_mutex_lock(&k->lock);
	m = k->member;
	pthread_mutex_unlock(&k->lock);
	return m;
}

uint64_t rdmx_registry_keeper_get_failures(struct rdmx_registry_keeper *k)
{
	uint64_t n;

	if (!k)
		return 0;
	pthread_mutex_lock(&k->lock);
	n = k->failures;
	pthread_mutex_unlock(&k->lock);
	return n;
}

int rdmx_registry_keeper_stop(struct rdmx_registry_keeper **kp)
{
	struct rdmx_registry_keeper *k;

	if (!kp || !*kp)
		return RDMX_OK;
	k = *kp;
	pthread_mutex_lock(&k->lock);
	k->stop = true;
	pthread_cond_broadcast(&k->cond);
	pthread_mutex_unlock(&k->lock);
	if (k->running)
		pthread_join(k->thread, NULL);
	keeper_free(k);
	*kp = NULL;
	return RDMX_OK;
}
