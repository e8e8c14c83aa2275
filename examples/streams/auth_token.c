/* auth_token: interceptors that carry and check a bearer token.
 * The client's interceptor adds "authorization: Bearer <token>" to every
 * call of its endpoint; the server's checks it before any handler runs and
 * refuses a call without it (UNAUTHENTICATED). The token itself is never
 * logged.
 *   auth_token [-d DEVICE]     (default tcp) */
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "pair.h"

#define HELLO "example.Auth/Hello"

/* [auth-client] */
static enum rdmx_rpc_code add_token(const struct rdmx_rpc_call_info *info,
                                    struct rdmx_rpc_md *annotate, const char **message,
                                    void **state, void *arg)
{
	const char *token = arg;
	char value[128];

	(void)info;
	(void)state;
	snprintf(value, sizeof(value), "Bearer %s", token);
	if (rdmx_rpc_md_add_str(annotate, "authorization", value)) {
		*message = "cannot add the token";
		return RDMX_RPC_INTERNAL;
	}
	return RDMX_RPC_OK;
}
/* [auth-client] */

/* [auth-server] */
static enum rdmx_rpc_code check_token(const struct rdmx_rpc_call_info *info,
                                      struct rdmx_rpc_md *annotate, const char **message,
                                      void **state, void *arg)
{
	const char *want = arg; /* "Bearer <token>" */
	const void *v;
	size_t n;

	(void)annotate;
	(void)state;
	if (rdmx_rpc_md_get(info->headers, "authorization", &v, &n) || n != strlen(want) ||
	    memcmp(v, want, n) != 0) {
		*message = "missing or wrong token";
		return RDMX_RPC_UNAUTHENTICATED; /* the handler does not run */
	}
	return RDMX_RPC_OK;
}
/* [auth-server] */

static void hello(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(req, len);

	(void)arg;
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p);
}

struct outcome {
	bool done;
	enum rdmx_rpc_code code;
};

static void on_reply(const struct rdmx_rpc_result *r, void *arg)
{
	struct outcome *o = arg;

	o->done = true;
	o->code = r->code;
}

static enum rdmx_rpc_code call_once(struct pair *p, struct rdmx_rpc_ep *ep)
{
	struct outcome o = {0};
	struct rdmx_rpc_payload req = rdmx_rpc_bytes("hi", 2);

	CHECK(rdmx_rpc_call_async(ep, rdmx_rpc_method_id(HELLO), &req, NULL, on_reply, &o, NULL));
	while (!o.done)
		pair_drive(p);
	return o.code;
}

int main(int argc, char **argv)
{
	const char *device = pair_device(argc, argv);
	struct rdmx_rpc_server *srv;
	struct pair p;

	if (!device)
		return 2;
	CHECK(rdmx_rpc_server_create(&srv));
	CHECK(rdmx_rpc_server_register(srv, rdmx_rpc_method_id(HELLO), HELLO, hello, NULL));
	/* [auth-install] */
	static const struct rdmx_rpc_interceptor server_auth = {.on_start = check_token};
	CHECK(rdmx_rpc_server_add_interceptor(srv, &server_auth, "Bearer s3cret"));
	/* [auth-install] */
	pair_open(&p, device, srv);

	enum rdmx_rpc_code without = call_once(&p, p.client.ep);
	static const struct rdmx_rpc_interceptor client_auth = {.on_start = add_token};
	CHECK(rdmx_rpc_ep_add_interceptor(p.client.ep, &client_auth, "s3cret"));
	enum rdmx_rpc_code with = call_once(&p, p.client.ep);

	printf("without a token: %s\nwith the token: %s\n", rdmx_rpc_code_name(without),
	       rdmx_rpc_code_name(with));
	pair_close(&p);
	CHECK(rdmx_rpc_server_destroy(&srv));
	return without == RDMX_RPC_UNAUTHENTICATED && with == RDMX_RPC_OK ? 0 : 1;
}
