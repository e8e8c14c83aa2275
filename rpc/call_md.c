/* Metadata and rich status of unary calls (rdmx/rpc_stream.h): request
 * headers on the client's request, response headers, trailers and details
 * on the server's response, and their wire form; the handler's view of the
 * request's header (its id, one-way or not).
 *
 * Wire (rdmx/rpc.h's header, flag RPC_F_MD): a request's body starts with
 * a metadata block (metadata.c); a response's status message is followed by
 * u32 details length, the details, the response headers and the trailers
 * (two metadata blocks), then the body. Calls without metadata keep the
 * old format. */
#include <stdlib.h>
#include <string.h>

#include "rpc_priv.h"

struct rpc_resp_md *rdmx__call_resp_md(struct rdmx_rpc_server_call *call)
{
	if (!call->resp_md) {
		call->resp_md = calloc(1, sizeof(*call->resp_md));
		if (call->resp_md) {
			rdmx_rpc_md_init(&call->resp_md->headers);
			rdmx_rpc_md_init(&call->resp_md->trailers);
		}
	}
	return call->resp_md;
}

void rdmx__call_md_release(struct rdmx_rpc_server_call *call)
{
	if (call->req_md) {
		rdmx_rpc_md_fini(call->req_md);
		free(call->req_md);
		call->req_md = NULL;
	}
	if (call->resp_md) {
		rdmx_rpc_md_fini(&call->resp_md->headers);
		rdmx_rpc_md_fini(&call->resp_md->trailers);
		free(call->resp_md->details);
		free(call->resp_md);
		call->resp_md = NULL;
	}
}

static const struct rdmx_rpc_md no_md;

const struct rdmx_rpc_md *rdmx_rpc_call_get_headers(const struct rdmx_rpc_server_call *call)
{
	return call && call->req_md ? call->req_md : &no_md;
}

uint64_t rdmx_rpc_call_get_request_id(const struct rdmx_rpc_server_call *call)
{
	return call ? call->id : 0;
}

static int add_to(struct rdmx_rpc_server_call *call, bool trailer, const char *key,
                  const void *value, size_t len)
{
	struct rpc_resp_md *x;

	if (!call || !key)
		return RDMX_E_INVAL;
	x = rdmx__call_resp_md(call);
	if (!x)
		return RDMX_E_NOMEM;
	return rdmx_rpc_md_add(trailer ? &x->trailers : &x->headers, key, value, len);
}

int rdmx_rpc_call_add_header(struct rdmx_rpc_server_call *call, const char *key, const void *value,
                             size_t len)
{
	return add_to(call, false, key, value, len);
}

int rdmx_rpc_call_add_trailer(struct rdmx_rpc_server_call *call, const char *key, const void *value,
                              size_t len)
{
	return add_to(call, true, key, value, len);
}

int rdmx_rpc_call_set_details(struct rdmx_rpc_server_call *call, const void *details, size_t len)
{
	struct rpc_resp_md *x;
	void *copy;

	if (!call || (len && !details))
		return RDMX_E_INVAL;
	if (len > RDMX_RPC_MAX_STATUS_DETAILS)
		return RDMX_E_TOO_BIG;
	x = rdmx__call_resp_md(call);
	if (!x)
		return RDMX_E_NOMEM;
	copy = len ? malloc(len) : NULL;
	if (len && !copy)
		return RDMX_E_NOMEM;
	if (len)
		memcpy(copy, details, len);
	free(x->details);
	x->details = copy;
	x->dlen = len;
	return 0;
}

size_t rdmx__resp_ext_size(const struct rpc_resp_md *x)
{
	return 4 + x->dlen + rdmx__md_wire_size(&x->headers) + rdmx__md_wire_size(&x->trailers);
}

void rdmx__resp_ext_encode(const struct rpc_resp_md *x, uint8_t *dst)
{
	size_t off = 4;

	rdmx__st32(dst, (uint32_t)x->dlen);
	if (x->dlen)
		memcpy(dst + 4, x->details, x->dlen);
	off += x->dlen;
	off += rdmx__md_encode(&x->headers, dst + off);
	rdmx__md_encode(&x->trailers, dst + off);
}

int rdmx__resp_ext_decode(const uint8_t *p, size_t len, struct rpc_resp_view *v, size_t *used,
                          const char **why)
{
	size_t off = 4, n = 0;
	int rc;

	if (len < 4 || rdmx__ld32(p) > len - 4 || rdmx__ld32(p) > RDMX_RPC_MAX_STATUS_DETAILS) {
		*why = "rpc response details truncated";
		return RDMX_E_PROTOCOL;
	}
	v->dlen = rdmx__ld32(p);
	v->details = v->dlen ? p + 4 : NULL;
	off += v->dlen;
	rc = rdmx__md_decode(p + off, len - off, &v->headers, &n, why);
	if (rc)
		return rc;
	off += n;
	rc = rdmx__md_decode(p + off, len - off, &v->trailers, &n, why);
	if (rc)
		return rc;
	*used = off + n;
	return 0;
}

/* ---- the blocking call's reply ---- */

static int md_copy(struct rdmx_rpc_md **dst, const struct rdmx_rpc_md *src)
{
	int rc;

	*dst = NULL;
	if (!src || !src->n)
		return 0;
	*dst = malloc(sizeof(**dst));
	if (!*dst)
		return RDMX_E_NOMEM;
	rdmx_rpc_md_init(*dst);
	rc = rdmx_rpc_md_append(*dst, src);
	if (rc) {
		rdmx_rpc_md_fini(*dst);
		free(*dst);
		*dst = NULL;
	}
	return rc;
}

int rdmx__reply_take_md(struct rdmx_rpc_reply *r, const struct rdmx_rpc_result *res)
{
	int rc = md_copy(&r->headers, res->headers);

	if (rc == 0)
		rc = md_copy(&r->trailers, res->trailers);
	r->details = NULL;
	r->details_len = 0;
	if (rc == 0 && res->details_len) {
		r->details = malloc(res->details_len);
		if (r->details) {
			memcpy(r->details, res->details, res->details_len);
			r->details_len = res->details_len;
		} else {
			rc = RDMX_E_NOMEM;
		}
	}
	return rc;
}

void rdmx__reply_md_fini(struct rdmx_rpc_reply *r)
{
	struct rdmx_rpc_md **mds[2] = {&r->headers, &r->trailers};

	for (int i = 0; i < 2; i++) {
		if (*mds[i]) {
			rdmx_rpc_md_fini(*mds[i]);
			free(*mds[i]);
			*mds[i] = NULL;
		}
	}
	free(r->details);
	r->details = NULL;
	r->details_len = 0;
}
