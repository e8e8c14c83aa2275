#include "test_bsd.h"

#include <string.h>

void rdmx_test_bsd_init(struct rdmx_test_bsd *b, struct rdmx_tls_config *cfg,
                        struct rdmx__policy *policy)
{
	memset(b, 0, sizeof(*b));
	rdmx__bootstrapd_opts_init(&b->opts);
	b->opts.host = "127.0.0.1";
	b->opts.min_ttl_ms = 100;
	b->opts.max_ttl_ms = 60000;
	b->opts.sweep_ms = 20;
	b->cfg = cfg;
	b->policy = policy;
}

/* on the loop thread */
static int bsd_setup(struct ev_loop *loop, void *arg)
{
	struct rdmx_test_bsd *b = arg;
	int rc = rdmx__bootstrapd_create(loop, b->cfg, &b->opts, b->policy, &b->bsd);

	if (!rc)
		b->port = rdmx__bootstrapd_get_port(b->bsd);
	if (!rc && b->hook)
		b->hook(loop, 1, b->hook_arg);
	return rc;
}

static void bsd_teardown(struct ev_loop *loop, void *arg)
{
	struct rdmx_test_bsd *b = arg;

	if (b->bsd && b->hook)
		b->hook(loop, 0, b->hook_arg);
	rdmx__bootstrapd_destroy(&b->bsd);
}

int rdmx_test_bsd_start(struct rdmx_test_bsd *b)
{
	return rdmx_test_ev_thread_start(&b->th, bsd_setup, bsd_teardown, b);
}

void rdmx_test_bsd_stop(struct rdmx_test_bsd *b)
{
	rdmx_test_ev_thread_stop(&b->th);
}
