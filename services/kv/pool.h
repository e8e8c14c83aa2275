/* The kv client's view of a service with several instances: every live
 * member the registry lists (or the one --server), a key's instance chosen
 * by rendezvous hashing over the members' endpoints (adding or losing an
 * instance moves only the keys it gains or held), connections made on first
 * use. A member that cannot be reached is marked down: only its keys are
 * unavailable, with a reason that names it. */
#ifndef RDMX_KV_POOL_H
#define RDMX_KV_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmx/dev.h>
#include <rdmx/rpc.h>

#include "kv.h"

#define KV_POOL_MAX_MEMBERS 64u

struct kv_pool;

struct kv_pool_opts {
	const char *registry, *registry_name; /* the registry address, its name */
	const char *server, *server_name;     /* or one server */
	const char *service;
	const struct kv_tls *tls;
	int timeout_ms;
	bool verbose;
	struct rdmx_dev *dev; /* outlives the pool */
	uint64_t max_msg;
};

/* Finds the members (a line on stderr and an error when there are none). */
int kv_pool_open(const struct kv_pool_opts *o, struct kv_pool **pool);
void kv_pool_close(struct kv_pool **pool);
size_t kv_pool_size(const struct kv_pool *p);
const char *kv_pool_endpoint(const struct kv_pool *p, size_t i);
/* The member that owns key[klen]: the highest hash of (endpoint, key). */
size_t kv_pool_pick(const struct kv_pool *p, const char *key, size_t klen);
/* Member i's connection, made now when needed; NULL with why[] filled
 * ("kv instance HOST:PORT (NAME) is unavailable: ...") when it is down:
 * its connect failed and it backs off (100 ms doubling to 5 s, with
 * jitter) before the next connect is tried. */
struct rdmx_rpc_ep *kv_pool_ep(struct kv_pool *p, size_t i, char *why, size_t why_len);
/* A call to member i failed at the transport (rc < 0): the connection is
 * closed and the member marked down; the next kv_pool_ep reconnects at
 * once (a restarted instance is used again), later ones back off. */
void kv_pool_lost(struct kv_pool *p, size_t i, int rc);
/* Whether member i has a connection that is still up. */
bool kv_pool_alive(struct kv_pool *p, size_t i);
/* The secure connection's own check of member i (rdmx_rpc_secure_check):
 * 0 while its TLS session is healthy, RDMX_E_DISCONNECTED when none. */
int kv_pool_check(struct kv_pool *p, size_t i);

#endif
