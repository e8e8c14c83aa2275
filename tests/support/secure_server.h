/* A secure RPC server (rdmx_rpc_secure_listen) on 127.0.0.1 with an
 * ephemeral port, run on a libev thread (ev_thread.h), for the tests that
 * call a few methods of it over rdmx_rpc_secure_connect. Fill the first
 * fields, then start it with
 *   rdmx_test_ev_thread_start(&th, test_secure_server_setup,
 *                             test_secure_server_teardown, &srv)
 * and stop it with rdmx_test_ev_thread_stop(&th); cfg stays the caller's. */
#ifndef RDMX_TEST_SECURE_SERVER_H
#define RDMX_TEST_SECURE_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>

struct test_secure_method {
	const char *name; /* full method name; its id is rdmx_rpc_method_id(name) */
	rdmx_rpc_handler fn;
};

struct test_secure_server {
	/* in */
	struct rdmx_tls_config *cfg;
	struct rdmx_dev *dev; /* rdmx_rpc_secure_opts.dev and .device */
	const char *device;
	const struct test_secure_method *methods;
	size_t n_methods;
	const struct rdmx_rpc_secure_server_ops *ops; /* NULL: defaults */
	/* out, once setup returned 0 */
	struct rdmx_rpc_server *server;
	struct rdmx_rpc_secure_server *ss;
	uint16_t port;
};

/* On the loop thread: creates the server, registers the methods (handler
 * argument NULL), listens and reads the port. 0, or the first error (what
 * was made is left for teardown). */
int test_secure_server_setup(struct ev_loop *loop, void *srv);
/* On the loop thread: destroys the secure server, then the RPC server. */
void test_secure_server_teardown(struct ev_loop *loop, void *srv);

#endif
