/* rdmx-bootstrapd's core (services/bootstrapd) on a libev thread of its
 * own (ev_thread.h), for the registry tests: on 127.0.0.1, an ephemeral
 * port, short TTLs and sweeps (min TTL 100 ms, max 60 s, sweep 20 ms).
 * Change b->opts between _init and _start; the server's TLS config and the
 * policy (NULL: none) stay the caller's. The server is created and
 * destroyed on the loop thread. */
#ifndef RDMX_TEST_BSD_H
#define RDMX_TEST_BSD_H

#include <stdint.h>

#include <rdmx/tls.h>

#include "ev_thread.h"
#include "policy.h"
#include "registry_server.h"

struct rdmx_test_bsd {
	struct rdmx__bootstrapd_opts opts;
	struct rdmx_tls_config *cfg;
	struct rdmx__policy *policy;
	uint16_t port; /* once started */
	/* optional, on the loop thread: hook(loop, 1, arg) once the server is
	 * created, hook(loop, 0, arg) before it is destroyed (a test's own
	 * watchers on the server's loop) */
	void (*hook)(struct ev_loop *loop, int up, void *arg);
	void *hook_arg;
	/* private */
	struct rdmx_test_ev_thread th;
	struct rdmx__bootstrapd *bsd;
};

void rdmx_test_bsd_init(struct rdmx_test_bsd *b, struct rdmx_tls_config *cfg,
                        struct rdmx__policy *policy);
/* 0, or the status rdmx__bootstrapd_create answered. */
int rdmx_test_bsd_start(struct rdmx_test_bsd *b);
void rdmx_test_bsd_stop(struct rdmx_test_bsd *b);

#endif
