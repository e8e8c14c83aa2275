/* Interceptor chains (rdmx/rpc_stream.h): an endpoint's client chain and a
 * server's chain, and the per-call record that walks them. on_start runs in
 * the order of registration and may reject; on_message sees every message
 * of the call; on_done runs once, in reverse order, for every interceptor
 * whose on_start ran (a rejecting one included). */
#include <stdlib.h>
#include <string.h>

#include "rpc_priv.h"

static int chain_add(struct rpc_chain **chain, const struct rdmx_rpc_interceptor *ic, void *arg)
{
	struct rpc_chain *c;

	if (!ic)
		return RDMX_E_INVAL;
	if (!*chain && !(*chain = calloc(1, sizeof(**chain))))
		return RDMX_E_NOMEM;
	c = *chain;
	if (c->n >= RDMX_RPC_MAX_INTERCEPTORS)
		return RDMX_E_FULL;
	c->v[c->n].ic = *ic;
	c->v[c->n].arg = arg;
	c->n++;
	return 0;
}

int rdmx_rpc_ep_add_interceptor(struct rdmx_rpc_ep *ep, const struct rdmx_rpc_interceptor *ic,
                                void *arg)
{
	if (!ep)
		return RDMX_E_INVAL;
	return chain_add(&ep->chain, ic, arg);
}

int rdmx_rpc_server_add_interceptor(struct rdmx_rpc_server *server,
                                    const struct rdmx_rpc_interceptor *ic, void *arg)
{
	if (!server)
		return RDMX_E_INVAL;
	return chain_add(&server->chain, ic, arg);
}

void rdmx__ic_chain_free(struct rpc_chain **chain)
{
	free(*chain);
	*chain = NULL;
}

enum rdmx_rpc_code rdmx__ic_start(const struct rpc_chain *chain,
                                  const struct rdmx_rpc_call_info *info,
                                  const struct rdmx_rpc_md *copy, struct rdmx_rpc_md *annotate,
                                  const char **message, struct rpc_icall **out)
{
	struct rpc_icall *c;
	enum rdmx_rpc_code code = RDMX_RPC_OK;

	*out = NULL;
	*message = NULL;
	if (!chain || !chain->n)
		return RDMX_RPC_OK;
	c = calloc(1, sizeof(*c));
	if (!c) {
		*message = "no memory for the interceptors";
		return RDMX_RPC_RESOURCE_EXHAUSTED;
	}
	c->chain = chain;
	c->info = *info;
	rdmx_rpc_md_init(&c->own);
	if (!annotate) { /* client: the request headers, owned by the record */
		if (rdmx_rpc_md_append(&c->own, copy)) {
			rdmx_rpc_md_fini(&c->own);
			free(c);
			*message = "no memory for the interceptors";
			return RDMX_RPC_RESOURCE_EXHAUSTED;
		}
		annotate = &c->own;
		c->info.headers = &c->own;
	}
	for (unsigned i = 0; i < chain->n && code == RDMX_RPC_OK; i++) {
		const struct rpc_chain_entry *e = &chain->v[i];

		c->started = i + 1;
		if (e->ic.on_start)
			code = e->ic.on_start(&c->info, annotate, message, &c->state[i], e->arg);
		if ((unsigned)code >= RDMX_RPC_CODE_COUNT)
			code = RDMX_RPC_UNKNOWN;
	}
	if (code != RDMX_RPC_OK && !*message)
		*message = "rejected by an interceptor";
	*out = c;
	return code;
}

enum rdmx_rpc_code rdmx__ic_client_start(struct rdmx_rpc_ep *ep, uint32_t method, uint64_t id,
                                         uint64_t timeout_us, bool stream,
                                         const struct rdmx_rpc_md *headers, const char **message,
                                         struct rpc_icall **out)
{
	struct rdmx_rpc_call_info info = {
	    .role = RDMX_RPC_ROLE_CLIENT,
	    .method = method,
	    .request_id = id,
	    .deadline_ns = timeout_us ? rdmx__deadline_after(rdmx__now_ns(), timeout_us) : 0,
	    .stream = stream,
	    .ep = ep};
	enum rdmx_rpc_code code = rdmx__ic_start(ep->chain, &info, headers, NULL, message, out);

	if (code == RDMX_RPC_OK && *out && (*out)->own.bytes > ep->streams.max_md) {
		*message = "request headers over the metadata limit";
		code = RDMX_RPC_RESOURCE_EXHAUSTED;
	}
	return code;
}

void rdmx__ic_message(struct rpc_icall *c, bool outgoing, const void *data, size_t len)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->started; i++) {
		const struct rpc_chain_entry *e = &c->chain->v[i];

		if (e->ic.on_message)
			e->ic.on_message(&c->info, outgoing, data, len, c->state[i], e->arg);
	}
}

void rdmx__ic_done(struct rpc_icall **cp, enum rdmx_rpc_code code, const char *message)
{
	struct rpc_icall *c = *cp;

	if (!c)
		return;
	*cp = NULL;
	for (unsigned i = c->started; i-- > 0;) {
		const struct rpc_chain_entry *e = &c->chain->v[i];

		if (e->ic.on_done)
			e->ic.on_done(&c->info, code, message ? message : "", c->state[i], e->arg);
	}
	rdmx_rpc_md_fini(&c->own);
	free(c);
}
