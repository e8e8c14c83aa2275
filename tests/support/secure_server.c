#include "secure_server.h"

int test_secure_server_setup(struct ev_loop *loop, void *arg)
{
	struct test_secure_server *s = arg;
	struct rdmx_rpc_secure_opts o;
	int rc;

	rdmx_rpc_secure_opts_init(&o);
	o.dev = s->dev;
	o.device = s->device;
	rc = rdmx_rpc_server_create(&s->server);
	for (size_t i = 0; !rc && i < s->n_methods; i++)
		rc = rdmx_rpc_server_register(s->server, rdmx_rpc_method_id(s->methods[i].name),
		                              s->methods[i].name, s->methods[i].fn, NULL);
	if (!rc)
		rc = rdmx_rpc_secure_listen(loop, s->server, s->cfg, "127.0.0.1", 0, s->ops, &o,
		                            NULL, &s->ss);
	if (!rc)
		rc = rdmx_rpc_secure_server_get_port(s->ss, &s->port);
	return rc;
}

void test_secure_server_teardown(struct ev_loop *loop, void *arg)
{
	struct test_secure_server *s = arg;

	(void)loop;
	rdmx_rpc_secure_server_destroy(&s->ss);
	rdmx_rpc_server_destroy(&s->server);
}
