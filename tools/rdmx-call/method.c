/* rdmx-call's method calls: at ADDR through callstream.c, through the
 * --service balancer one unary call */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "callstream.h"
#include "method.h"
#include "schema.h"

static char *read_all(FILE *f, size_t *len)
{
	struct jbuf b = {0};
	char tmp[65536];
	size_t n;

	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		jbuf_put(&b, tmp, n);
	if (ferror(f) || b.oom) {
		jbuf_free(&b);
		return NULL;
	}
	if (!b.data)
		jbuf_put(&b, "", 0);
	*len = b.len;
	return b.data;
}

static char *request_text(const char *data, size_t *len)
{
	char *text;
	FILE *f;

	if (!data) {
		*len = 2;
		return strdup("{}");
	}
	if (!strcmp(data, "-"))
		return read_all(stdin, len);
	if (data[0] != '@') {
		*len = strlen(data);
		return strdup(data);
	}
	f = fopen(data + 1, "rb");
	if (!f) {
		fprintf(stderr, "rdmx-call: %s: %s\n", data + 1, strerror(errno));
		return NULL;
	}
	text = read_all(f, len);
	fclose(f);
	return text;
}

/* The reply of a unary call made with calltarget_call: with -v, grpcurl's
 * blocks (as callstream_run prints them). Returns the exit status. */
static int print_reply(const struct callopts *o, const struct gen_method *m,
                       const struct rdmx_rpc_reply *r)
{
	struct jbuf out = {0};
	char err[600];
	size_t got = 0;
	int ret = 0;

	if (o->verbose)
		callmd_print(stdout, "Response headers received:", r->headers);
	if (r->code == RDMX_RPC_OK &&
	    pbjson_decode(m->out, r->data, r->len, &out, err, sizeof(err))) {
		fprintf(stderr, "rdmx-call: reply (%s): %s\n", m->out->full_name, err);
		ret = 1;
	} else if (r->code == RDMX_RPC_OK) {
		callmd_print_response(&out, o->verbose);
		got = 1;
	}
	jbuf_free(&out);
	if (o->verbose) {
		callmd_print(stdout, "Response trailers received:", r->trailers);
		callmd_print_counts(1, got);
	}
	if (r->code != RDMX_RPC_OK)
		return callmd_status_exit(r->code, r->message);
	return ret || fflush(stdout) ? 1 : 0;
}

/* A unary call of m through the balancer (--service): the request from the
 * argument, the reply printed. Returns the exit status. */
static int service_unary(struct calltarget *t, const struct callopts *o, const struct gen_method *m,
                         const char *full)
{
	struct rdmx_rpc_reply r = {0};
	struct jbuf req = {0};
	json_t *j = NULL;
	char err[600], *text;
	size_t tlen = 0;
	int ret = 1;

	if (m->client_streaming || m->server_streaming) {
		fprintf(stderr, "rdmx-call: %s is a streaming method: call it at ADDR\n", full);
		return 1;
	}
	text = request_text(o->data, &tlen);
	if (!text)
		return 1;
	if (json_parse(text, tlen, &j, err, sizeof(err))) {
		fprintf(stderr, "rdmx-call: request JSON: %s\n", err);
		goto out;
	}
	if (pbjson_encode(m->in, j, &req, err, sizeof(err))) {
		fprintf(stderr, "rdmx-call: request (%s): %s\n", m->in->full_name, err);
		goto out;
	}
	if (o->verbose)
		callmd_print(stdout, "Request metadata to send:", &o->headers);
	if (calltarget_call(t, o, full, req.data, req.len, m->idempotent, &r) == 0)
		ret = print_reply(o, m, &r);
out:
	rdmx_rpc_reply_fini(&r);
	jbuf_free(&req);
	json_free(j);
	free(text);
	return ret;
}

/* A call of m at ADDR (any kind: callstream_run), the requests from -d or
 * the argument. Returns the exit status. */
static int addr_call(struct calltarget *t, const struct callopts *o, const struct gen_method *m,
                     const char *full)
{
	struct callstream_opts co = {calltarget_timeout_us(o), &o->headers, o->verbose,
	                             o->deadline_ns, calltarget_device(t)};
	struct callsrc src;
	char *text = NULL;
	size_t tlen = 0;
	int ret;

	if (o->data_opt && strcmp(o->data_opt, "@") == 0) {
		callsrc_init_fd(&src, STDIN_FILENO);
	} else if (o->data_opt) {
		callsrc_init_text(&src, o->data_opt, strlen(o->data_opt));
	} else if (o->data) {
		text = request_text(o->data, &tlen);
		if (!text)
			return 1;
		callsrc_init_text(&src, text, tlen);
	} else {
		callsrc_init_text(&src, "", 0); /* "{}" unless client-streaming */
	}
	ret = callstream_run(rpcnet_client_rpc(t->c), m, full, &src, &co);
	callsrc_fini(&src);
	free(text);
	return ret;
}

/* "package.Service/Method" or "package.Service.Method" as the first, its
 * service in svc. 0, or -1 when what is neither. */
static int split_method(const char *what, char *full, size_t full_len, char *svc, size_t svc_len)
{
	char *slash;

	snprintf(full, full_len, "%s", what);
	if (!strchr(full, '/')) {
		char *dot = strrchr(full, '.');

		if (dot)
			*dot = '/';
	}
	slash = strchr(full, '/');
	if (!slash || slash == full || !slash[1])
		return -1;
	snprintf(svc, svc_len, "%.*s", (int)(slash - full), full);
	return 0;
}

int cmd_method(struct calltarget *t, const struct callopts *o)
{
	char full[512], svc[512];
	const struct gen_method *m;
	struct pbschema schema;
	int ret = 1;

	memset(&schema, 0, sizeof(schema));
	if (split_method(o->what, full, sizeof(full), svc, sizeof(svc))) {
		fprintf(stderr, "rdmx-call: %s: expected package.Service/Method\n", o->what);
		return 2;
	}
	if (callschema_load(t, o, svc, &schema))
		goto out;
	m = pbschema_method(&schema, full);
	if (!m) {
		fprintf(stderr, "rdmx-call: %s: no such method in %s\n", full,
		        o->proto ? o->proto : "the server's IDL");
		goto out;
	}
	ret = t->b ? service_unary(t, o, m, full) : addr_call(t, o, m, full);
out:
	pbschema_fini(&schema);
	return ret;
}
