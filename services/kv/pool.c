/* kv client pool: the members of a service and rendezvous hashing. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/channel.h>
#include <rdmx/registry.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "pool.h"
#include "common/clock.h"

struct member {
	char endpoint[RDMX_REGISTRY_MAX_ENDPOINT + 1];
	char owner[RDMX_REGISTRY_MAX_OWNER + 1];
	uint64_t seed; /* hash of the endpoint */
	struct rdmx_tls_config *cfg;
	struct rdmx_rpc_secure_conn *conn;
	int down;            /* the error that took it down, 0 while usable */
	uint32_t backoff_ms; /* the last reconnect back-off, 0 after a success */
	uint64_t retry_at;   /* ms: a down member is not reconnected before */
};

struct kv_pool {
	struct kv_pool_opts o;
	size_t n;
	struct member m[KV_POOL_MAX_MEMBERS];
};

static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ull;
	return h;
}

/* splitmix64's finaliser: spreads the bits of the combined hash */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int add(struct kv_pool *p, const char *endpoint, const char *owner)
{
	struct member *m;

	if (p->n == KV_POOL_MAX_MEMBERS) {
		fprintf(stderr, "rdmx-kv: more than %u instances registered; using the first %u\n",
		        KV_POOL_MAX_MEMBERS, KV_POOL_MAX_MEMBERS);
		return 0;
	}
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->m[i].endpoint, endpoint))
			return 0; /* the same instance listed twice (a rejoin) */
	m = &p->m[p->n++];
	snprintf(m->endpoint, sizeof(m->endpoint), "%s", endpoint);
	snprintf(m->owner, sizeof(m->owner), "%s", owner);
	m->seed = fnv1a(endpoint, strlen(endpoint), 1469598103934665603ull);
	return 0;
}

static int lookup(struct kv_pool *p)
{
	const struct kv_pool_opts *o = &p->o;
	struct rdmx_registry_members *members = NULL;
	struct rdmx_registry_client *reg = NULL;
	const char *reg_name[1] = {o->registry_name};
	struct rdmx_tls_config *cfg;
	char host[256];
	uint16_t port;
	int rc;

	cfg = kv_tls_config(o->tls, reg_name, o->registry_name ? 1 : 0, "rdmx-kv");
	if (!cfg)
		return RDMX_E_INVAL;
	rc = rdmx_registry_client_open(o->registry, cfg, o->timeout_ms, &reg);
	if (!rc)
		rc = rdmx_registry_client_lookup(reg, o->service, &members);
	if (rc) {
		fprintf(stderr, "rdmx-kv: looking up %s at registry %s: %s\n", o->service,
		        o->registry, rdmx_strerror(rc));
	} else {
		for (size_t i = 0; i < members->count; i++) {
			const struct rdmx_registry_member *mb = &members->items[i];

			if (kv_split_addr(mb->endpoint, host, sizeof(host), &port) || !port) {
				fprintf(stderr,
				        "rdmx-kv: registered endpoint %s is not HOST:PORT; "
				        "skipped\n",
				        mb->endpoint);
				continue;
			}
			add(p, mb->endpoint, mb->owner);
			if (o->verbose)
				fprintf(stderr, "rdmx-kv: %s instance at %s (certificate %s)\n",
				        o->service, mb->endpoint, mb->owner);
		}
		if (!p->n) {
			fprintf(stderr, "rdmx-kv: no %s server is registered with %s\n", o->service,
			        o->registry);
			rc = RDMX_E_NOT_FOUND;
		}
	}
	rdmx_registry_members_free(&members);
	rdmx_registry_client_destroy(&reg);
	rdmx_tls_config_destroy(&cfg);
	return rc;
}

int kv_pool_open(const struct kv_pool_opts *o, struct kv_pool **out)
{
	struct kv_pool *p = calloc(1, sizeof(*p));
	char host[256];
	uint16_t port;
	int rc;

	if (!p)
		return RDMX_E_NOMEM;
	p->o = *o;
	if (o->server) {
		if (kv_split_addr(o->server, host, sizeof(host), &port) || !port) {
			fprintf(stderr, "rdmx-kv: --server wants HOST:PORT, got %s\n", o->server);
			free(p);
			return RDMX_E_INVAL;
		}
		add(p, o->server, o->server_name ? o->server_name : "*");
		*out = p;
		return 0;
	}
	if (!o->registry) {
		fprintf(stderr, "rdmx-kv: where is the server? give --registry ADDRESS "
		                "(rdmx-bootstrapd or etcd) or --server HOST:PORT\n");
		free(p);
		return RDMX_E_INVAL;
	}
	if (!strstr(o->registry, "://") &&
	    (kv_split_addr(o->registry, host, sizeof(host), &port) || !port)) {
		fprintf(stderr,
		        "rdmx-kv: --registry wants HOST:PORT, rdmx://HOST:PORT or "
		        "etcd://HOST:PORT[,HOST:PORT...], got %s\n",
		        o->registry);
		free(p);
		return RDMX_E_INVAL;
	}
	rc = lookup(p);
	if (rc) {
		free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void kv_pool_close(struct kv_pool **pp)
{
	struct kv_pool *p = pp ? *pp : NULL;

	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		rdmx_rpc_secure_close(&p->m[i].conn);
		rdmx_tls_config_destroy(&p->m[i].cfg);
	}
	free(p);
	*pp = NULL;
}

size_t kv_pool_size(const struct kv_pool *p)
{
	return p->n;
}

const char *kv_pool_endpoint(const struct kv_pool *p, size_t i)
{
	return p->m[i].endpoint;
}

size_t kv_pool_pick(const struct kv_pool *p, const char *key, size_t klen)
{
	uint64_t kh = fnv1a(key, klen, 1469598103934665603ull), best = 0;
	size_t pick = 0;

	for (size_t i = 0; i < p->n; i++) {
		uint64_t w = mix(p->m[i].seed ^ mix(kh));

		if (i == 0 || w > best) {
			best = w;
			pick = i;
		}
	}
	return pick;
}

/* Exponential back-off (100 ms doubling to 5 s) with jitter over its upper
 * half, so that clients that lost an instance together do not all come
 * back at the same moment. */
static void back_off(struct member *m)
{
	uint32_t ms = m->backoff_ms ? m->backoff_ms * 2 : 100;

	if (ms > 5000)
		ms = 5000;
	m->backoff_ms = ms;
	m->retry_at = rdmx__now_ms() + ms / 2 + (uint64_t)random() % (ms / 2 + 1);
}

static void say_down(const struct member *m, char *why, size_t len)
{
	snprintf(why, len, "kv instance %s (%s) is unavailable: %s", m->endpoint, m->owner,
	         rdmx_strerror(m->down));
}

struct rdmx_rpc_ep *kv_pool_ep(struct kv_pool *p, size_t i, char *why, size_t why_len)
{
	struct member *m = &p->m[i];
	const char *peer[1] = {m->owner};
	struct rdmx_rpc_secure_opts opts;
	char host[256];
	uint16_t port = 0;
	int rc;

	if (m->conn)
		return rdmx_rpc_secure_conn_get_ep(m->conn);
	if (m->down && rdmx__now_ms() < m->retry_at) {
		say_down(m, why, why_len); /* backing off */
		return NULL;
	}
	if (!m->cfg)
		m->cfg = kv_tls_config(p->o.tls, peer, 1, "rdmx-kv");
	if (!m->cfg) {
		m->down = RDMX_E_INVAL;
		say_down(m, why, why_len);
		return NULL;
	}
	kv_split_addr(m->endpoint, host, sizeof(host), &port);
	rdmx_rpc_secure_opts_init(&opts);
	opts.dev = p->o.dev;
	opts.name = "rdmx-kv";
	opts.max_msg_size = p->o.max_msg;
	opts.timeout_ms = p->o.timeout_ms;
	rc = rdmx_rpc_secure_connect(host, port, m->cfg, NULL, &opts, &m->conn);
	if (rc) {
		m->conn = NULL;
		m->down = rc;
		back_off(m);
		if (p->n == 1)
			fprintf(stderr, "rdmx-kv: connecting to %s: %s\n", m->endpoint,
			        rdmx_strerror(rc));
		say_down(m, why, why_len);
		return NULL;
	}
	m->down = 0;
	m->backoff_ms = 0;
	return rdmx_rpc_secure_conn_get_ep(m->conn);
}

void kv_pool_lost(struct kv_pool *p, size_t i, int rc)
{
	struct member *m = &p->m[i];

	rdmx_rpc_secure_close(&m->conn);
	m->down = rc < 0 ? rc : RDMX_E_DISCONNECTED;
	m->retry_at = 0; /* the first reconnect is tried at once */
}

int kv_pool_check(struct kv_pool *p, size_t i)
{
	return p->m[i].conn ? rdmx_rpc_secure_check(p->m[i].conn) : RDMX_E_DISCONNECTED;
}

bool kv_pool_alive(struct kv_pool *p, size_t i)
{
	struct member *m = &p->m[i];
	struct rdmx_chan *chan;

	if (!m->conn)
		return !m->down;
	chan = rdmx_rpc_ep_get_chan(rdmx_rpc_secure_conn_get_ep(m->conn));
	return rdmx_rpc_secure_check(m->conn) == 0 && chan &&
	       rdmx_chan_get_state(chan) == RDMX_CHAN_READY;
}
