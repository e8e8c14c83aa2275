/* The cluster registry served by rdmx-bootstrapd, as a library so that the
 * tests can run it in-process. One libev loop, one thread. */
#ifndef RDMX_BOOTSTRAPD_REGISTRY_SERVER_H
#define RDMX_BOOTSTRAPD_REGISTRY_SERVER_H

#include <stdint.h>

#include <rdmx/tls.h>

#include "policy.h"

struct ev_loop;
struct rdmx__bootstrapd;

struct rdmx__bootstrapd_opts {
	const char *host;    /* NULL: all addresses */
	uint16_t port;       /* 0: any (see get_port) */
	uint32_t min_ttl_ms; /* lease bounds; a join's ttl is clamped */
	uint32_t max_ttl_ms;
	uint32_t default_ttl_ms;        /* for a join with ttl 0 */
	uint32_t max_members;           /* whole registry */
	uint32_t max_members_per_owner; /* per certificate name */
	/* established sessions; at the limit the certificate holding the most
	 * gives up its session idle longest to a newcomer whose certificate
	 * holds at least two fewer, else the newcomer is refused */
	uint32_t max_clients;
	uint32_t sweep_ms; /* how often leases are checked */
	/* a frame begun must end, and a session waiting to write (its peer
	 * not reading) must be able to, within this (0: 10000); else the
	 * session is closed */
	uint32_t frame_timeout_ms;
};

/* Fills the defaults: ttl 1 s .. 5 min (default 30 s), 4096 members, 64 per
 * owner, 1024 clients, sweep every 100 ms. */
void rdmx__bootstrapd_opts_init(struct rdmx__bootstrapd_opts *o);

/* `policy` NULL allows every authenticated member to register any service;
 * the server takes ownership of it. `cfg` must outlive the server. */
int rdmx__bootstrapd_create(struct ev_loop *loop, struct rdmx_tls_config *cfg,
                            const struct rdmx__bootstrapd_opts *opts, struct rdmx__policy *policy,
                            struct rdmx__bootstrapd **bsd);
/* Replaces the policy (members already joined stay). */
void rdmx__bootstrapd_set_policy(struct rdmx__bootstrapd *bsd, struct rdmx__policy *policy);
uint16_t rdmx__bootstrapd_get_port(const struct rdmx__bootstrapd *bsd);
uint32_t rdmx__bootstrapd_members(const struct rdmx__bootstrapd *bsd);
/* Sessions open now, and the TLS listener's counters (for /metrics). */
uint32_t rdmx__bootstrapd_sessions(const struct rdmx__bootstrapd *bsd);
/* New sessions refused, and sessions closed for a newcomer, at max_clients
 * (the certificate holding the most sessions gives one up to another's). */
void rdmx__bootstrapd_session_limits(const struct rdmx__bootstrapd *bsd, uint64_t *refused,
                                     uint64_t *evicted);
int rdmx__bootstrapd_listener_stats(const struct rdmx__bootstrapd *bsd,
                                    struct rdmx_tls_listener_stats *stats);
void rdmx__bootstrapd_destroy(struct rdmx__bootstrapd **bsd);

#endif
