/* rdmx-call: calls with metadata, and streams in and out (callstream.h). */
#include "callstream.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/channel.h>
#include <rdmx/pe.h>
#include <rdmx/status.h>

int callmd_parse_header(const char *arg, struct rdmx_rpc_md *md)
{
	const char *colon = strchr(arg, ':'), *v;
	char key[RDMX_RPC_MD_MAX_KEY + 1];
	size_t kl = 0;

	if (!colon) {
		fprintf(stderr, "rdmx-call: -H '%s': want 'key: value'\n", arg);
		return -1;
	}
	for (const char *p = arg; p < colon; p++) {
		if (*p == ' ' || *p == '\t')
			continue;
		if (kl == RDMX_RPC_MD_MAX_KEY) {
			fprintf(stderr, "rdmx-call: -H: key longer than %u bytes\n",
			        RDMX_RPC_MD_MAX_KEY);
			return -1;
		}
		key[kl++] = (char)tolower((unsigned char)*p);
	}
	key[kl] = '\0';
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	if (!rdmx_rpc_md_key_valid(key) || rdmx_rpc_md_add_str(md, key, v)) {
		fprintf(
		    stderr,
		    "rdmx-call: -H '%s': keys are lower-case letters, digits, '-', '_' and '.', "
		    "values printable ASCII\n",
		    arg);
		return -1;
	}
	return 0;
}

static bool is_bin_key(const char *key)
{
	size_t n = strlen(key);

	return n >= 4 && strcmp(key + n - 4, "-bin") == 0;
}

void callmd_print(FILE *f, const char *title, const struct rdmx_rpc_md *md)
{
	size_t n = rdmx_rpc_md_count(md);

	fprintf(f, "%s\n", title);
	if (n == 0)
		fprintf(f, "(empty)\n");
	for (size_t i = 0; i < n; i++) {
		const struct rdmx_rpc_md_entry *e = &md->v[i];

		if (is_bin_key(e->key)) {
			struct jbuf b = {0};

			base64_encode(&b, e->value, e->len);
			fprintf(f, "%s: %s\n", e->key, b.data ? b.data : "");
			jbuf_free(&b);
		} else {
			fprintf(f, "%s: %.*s\n", e->key, (int)e->len, (const char *)e->value);
		}
	}
	fprintf(f, "\n");
}

void callmd_print_response(const struct jbuf *json, bool verbose)
{
	if (verbose)
		printf("Response contents:\n");
	fwrite(json->data, 1, json->len, stdout);
	putchar('\n');
	if (verbose)
		putchar('\n');
	fflush(stdout);
}

void callmd_print_counts(size_t sent, size_t got)
{
	printf("Sent %zu request%s and received %zu response%s\n", sent, sent == 1 ? "" : "s", got,
	       got == 1 ? "" : "s");
	fflush(stdout);
}

void callmd_print_status(const char *name, enum rdmx_rpc_code code, const char *device,
                         uint64_t t0_ns, size_t sent, size_t got, const char *more)
{
	fprintf(stderr, "rdmx-call: %s: %s on device %s, %.1f us, %zu bytes sent, %zu received%s\n",
	        name, rdmx_rpc_code_name(code), device ? device : "?",
	        (double)(rdmx_pe_now_ns() - t0_ns) / 1000.0, sent, got, more);
}

int callmd_status_exit(enum rdmx_rpc_code code, const char *message)
{
	fprintf(stderr, "ERROR:\n  Code: %s\n  Message: %s\n", rdmx_rpc_code_name(code),
	        message ? message : "");
	return 64 + (int)code;
}

void callsrc_init_text(struct callsrc *src, const char *text, size_t len)
{
	memset(src, 0, sizeof(*src));
	src->fd = -1;
	src->eof = true;
	jbuf_put(&src->buf, text, len);
}

void callsrc_init_fd(struct callsrc *src, int fd)
{
	memset(src, 0, sizeof(*src));
	src->fd = fd;
}

void callsrc_fini(struct callsrc *src)
{
	jbuf_free(&src->buf);
}

/* Reads what the descriptor has now (waiting at most wait_ms). */
static void src_fill(struct callsrc *src, int wait_ms)
{
	struct pollfd pfd = {src->fd, POLLIN, 0};
	char tmp[65536];
	ssize_t n;

	if (src->fd < 0 || src->eof || poll(&pfd, 1, wait_ms) <= 0)
		return;
	n = read(src->fd, tmp, sizeof(tmp));
	if (n > 0) {
		if (src->off > 0 && src->off == src->buf.len) {
			src->buf.len = 0; /* all consumed: start over */
			src->off = 0;
		}
		jbuf_put(&src->buf, tmp, (size_t)n);
	} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
		src->eof = true;
	}
}

/* The next request encoded into *out: 1; 0 when more input is needed; 2 at
 * the end; -1 on an error (said). */
static int src_next(struct callsrc *src, const struct gen_message *m, struct jbuf *out)
{
	const char *text = src->buf.data;
	char err[600];
	size_t used;
	json_t *j;

	while (src->off < src->buf.len && isspace((unsigned char)text[src->off]))
		src->off++;
	if (src->off == src->buf.len || src->buf.oom) {
		if (src->buf.oom) {
			fprintf(stderr, "rdmx-call: out of memory reading the requests\n");
			return -1;
		}
		return src->eof ? 2 : 0;
	}
	if (json_parse_first(text + src->off, src->buf.len - src->off, &j, &used, err,
	                     sizeof(err))) {
		if (!src->eof)
			return 0; /* maybe incomplete: wait for more */
		fprintf(stderr, "rdmx-call: request JSON (message %zu): %s\n", src->count + 1, err);
		return -1;
	}
	if (!src->eof && src->off + used == src->buf.len && !json_is_object(j) &&
	    !json_is_array(j)) {
		json_decref(j); /* a bare value at the end may go on */
		return 0;
	}
	src->off += used;
	memset(out, 0, sizeof(*out));
	if (pbjson_encode(m, j, out, err, sizeof(err)) || out->oom) {
		fprintf(stderr, "rdmx-call: request %zu (%s): %s\n", src->count + 1, m->full_name,
		        out->oom ? "out of memory" : err);
		json_decref(j);
		jbuf_free(out);
		return -1;
	}
	json_decref(j);
	src->count++;
	return 1;
}

static int remaining_ms(uint64_t deadline_ns)
{
	uint64_t now = rdmx_pe_now_ns();

	if (!deadline_ns)
		return 1000;
	if (now >= deadline_ns)
		return 0;
	return (int)((deadline_ns - now) / 1000000u) + 1;
}

/* Reads the whole source: the one request of a unary or server-streaming
 * call: -1 with *out, or the exit status (>= 0, said). */
static int src_one(struct callsrc *src, const struct gen_message *m, const char *name,
                   uint64_t deadline_ns, struct jbuf *out)
{
	struct jbuf extra;
	int rc;

	for (;;) {
		rc = src_next(src, m, out);
		if (rc == 1)
			break;
		if (rc < 0)
			return 1;
		if (rc == 2) {
			if (src->count == 0) {
				/* no request given: the empty message */
				json_t *j = json_object();
				char err[600];

				memset(out, 0, sizeof(*out));
				rc = j ? pbjson_encode(m, j, out, err, sizeof(err)) : -1;
				json_decref(j);
				if (rc == 0 && !out->oom)
					return -1;
				jbuf_free(out);
				return 1;
			}
			break;
		}
		if (deadline_ns && remaining_ms(deadline_ns) == 0) {
			fprintf(stderr, "ERROR:\n  Code: DEADLINE_EXCEEDED\n  Message: deadline "
			                "exceeded while reading the request\n");
			return 64 + RDMX_RPC_DEADLINE_EXCEEDED;
		}
		src_fill(src, remaining_ms(deadline_ns));
	}
	for (;;) {
		rc = src_next(src, m, &extra);
		if (rc == 2)
			return -1;
		if (rc == 1) {
			jbuf_free(&extra);
			fprintf(stderr, "rdmx-call: %s takes one request message, got more\n",
			        name);
			rc = -1;
		}
		if (rc < 0) {
			jbuf_free(out);
			return 1;
		}
		if (deadline_ns && remaining_ms(deadline_ns) == 0) {
			jbuf_free(out);
			fprintf(stderr, "ERROR:\n  Code: DEADLINE_EXCEEDED\n  Message: deadline "
			                "exceeded while reading the request\n");
			return 64 + RDMX_RPC_DEADLINE_EXCEEDED;
		}
		src_fill(src, remaining_ms(deadline_ns));
	}
}

/* ---- one call ---- */

struct call {
	const struct gen_method *m;
	const char *name;
	const struct callstream_opts *o;
	struct callsrc *src;
	struct jbuf pending; /* encoded, not yet written (no credit) */
	bool have_pending, waiting, src_end;
	size_t sent, got;
	size_t bytes_sent, bytes_got; /* for -v's status line */
	bool done, closed, failed;
	enum rdmx_rpc_code code;
	char *message;
	struct rdmx_rpc_md headers, trailers;
};

static void print_response(struct call *c, const void *data, size_t len)
{
	struct jbuf out = {0};
	char err[600];

	c->bytes_got += len;
	if (pbjson_decode(c->m->out, data, len, &out, err, sizeof(err))) {
		fprintf(stderr, "rdmx-call: response %zu (%s): %s\n", c->got + 1,
		        c->m->out->full_name, err);
		c->failed = true;
	} else {
		callmd_print_response(&out, c->o->verbose);
	}
	c->got++;
	jbuf_free(&out);
}

static void save_status(struct call *c, enum rdmx_rpc_code code, const char *message,
                        const struct rdmx_rpc_md *headers, const struct rdmx_rpc_md *trailers)
{
	c->code = code;
	c->message = strdup(message ? message : "");
	if (headers && rdmx_rpc_md_count(&c->headers) == 0)
		rdmx_rpc_md_append(&c->headers, headers);
	if (trailers)
		rdmx_rpc_md_append(&c->trailers, trailers);
	c->done = true;
}

static void unary_done(const struct rdmx_rpc_result *res, void *arg)
{
	struct call *c = arg;

	if (c->o->verbose)
		callmd_print(stdout, "Response headers received:", res->headers);
	if (res->code == RDMX_RPC_OK)
		print_response(c, res->data, res->len);
	save_status(c, res->code, res->message, res->headers, res->trailers);
}

/* Writes what the source has, as credits allow; half-closes at its end. */
static void pump(struct rdmx_rpc_stream *s, void *arg)
{
	struct call *c = arg;

	c->waiting = false;
	while (!c->closed && !c->done) {
		struct rdmx_rpc_payload p;
		int rc;

		if (!c->have_pending) {
			rc = src_next(c->src, c->m->in, &c->pending);
			if (rc == 0)
				return; /* more input first */
			if (rc < 0) {
				c->failed = true;
				rdmx_rpc_stream_cancel(s);
				return;
			}
			if (rc == 2) {
				c->closed = true;
				rdmx_rpc_stream_half_close(s);
				return;
			}
			c->have_pending = true;
		}
		p = rdmx_rpc_bytes(c->pending.data, c->pending.len);
		rc = rdmx_rpc_stream_write(s, &p);
		if (rc == RDMX_E_AGAIN) {
			c->waiting = true; /* on_writable */
			return;
		}
		jbuf_free(&c->pending);
		c->have_pending = false;
		if (rc) {
			fprintf(stderr, "rdmx-call: %s: request %zu: %s\n", c->name, c->sent + 1,
			        rdmx_strerror(rc));
			c->failed = true;
			rdmx_rpc_stream_cancel(s);
			return;
		}
		c->sent++;
		c->bytes_sent += p.len;
	}
}

static void s_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	(void)s;
	print_response(arg, data, len);
}

static void s_headers(struct rdmx_rpc_stream *s, const struct rdmx_rpc_md *headers, void *arg)
{
	struct call *c = arg;

	(void)s;
	rdmx_rpc_md_append(&c->headers, headers);
	if (c->o->verbose)
		callmd_print(stdout, "Response headers received:", headers);
}

static void s_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	(void)s;
	save_status(arg, st->code, st->message, NULL, st->trailers);
}

int callstream_run(struct rdmx_rpc_ep *ep, const struct gen_method *m, const char *full_name,
                   struct callsrc *src, const struct callstream_opts *o)
{
	static const struct rdmx_rpc_stream_cbs cbs = {
	    .on_msg = s_msg, .on_writable = pump, .on_headers = s_headers, .on_done = s_done};
	struct rdmx_chan_worker *w = rdmx_chan_get_worker(rdmx_rpc_ep_get_chan(ep));
	struct call c;
	bool streaming = m->client_streaming || m->server_streaming;
	struct rdmx_rpc_stream *s = NULL;
	uint32_t id = rdmx_rpc_method_id(full_name);
	struct jbuf one = {0};
	uint64_t t0;
	int rc, ret = 1;

	memset(&c, 0, sizeof(c));
	c.m = m;
	c.name = full_name;
	c.o = o;
	c.src = src;
	rdmx_rpc_md_init(&c.headers);
	rdmx_rpc_md_init(&c.trailers);
	if (!m->client_streaming) {
		ret = src_one(src, m->in, full_name, o->deadline_ns, &one);
		if (ret >= 0)
			goto out;
		ret = 1;
	}
	if (o->verbose)
		callmd_print(stdout, "Request metadata to send:", o->headers);
	t0 = rdmx_pe_now_ns();
	for (;;) {
		if (streaming) {
			struct rdmx_rpc_stream_opts so = {o->timeout_us, o->headers, 0};
			enum rdmx_rpc_stream_kind kind =
			    m->client_streaming && m->server_streaming ? RDMX_RPC_BIDI_STREAMING
			    : m->client_streaming                      ? RDMX_RPC_CLIENT_STREAMING
			                                               : RDMX_RPC_SERVER_STREAMING;

			rc = rdmx_rpc_stream_open(ep, id, kind, &so, &cbs, &c, &s);
		} else {
			struct rdmx_rpc_call_opts co = {o->timeout_us, false};
			struct rdmx_rpc_payload p = rdmx_rpc_bytes(one.data, one.len);

			rc = rdmx_rpc_call_async_md(ep, id, &p, &co, o->headers, unary_done, &c,
			                            NULL);
		}
		if (rc != RDMX_E_AGAIN)
			break;
		if (rdmx_chan_worker_wait(w, 100) < 0)
			break;
	}
	if (rc) {
		fprintf(stderr, "rdmx-call: %s: %s\n", full_name, rdmx_strerror(rc));
		goto out;
	}
	if (!s)
		c.bytes_sent = one.len; /* unary: the request went with the call */
	if (s && !m->client_streaming) {
		/* the one request, then the end of the sending */
		struct rdmx_rpc_payload p = rdmx_rpc_bytes(one.data, one.len);

		rc = rdmx_rpc_stream_write(s, &p);
		if (rc == 0)
			rc = rdmx_rpc_stream_half_close(s);
		c.closed = true;
		c.sent = 1;
		c.bytes_sent = one.len;
		if (rc) {
			fprintf(stderr, "rdmx-call: %s: %s\n", full_name, rdmx_strerror(rc));
			rdmx_rpc_stream_cancel(s);
			goto out;
		}
	} else if (s) {
		pump(s, &c);
	}
	while (!c.done) {
		bool reading = s && !c.closed && !c.waiting && src->fd >= 0 && !src->eof;

		rc = rdmx_chan_worker_wait(w, reading ? 5 : 1000);
		if (rc < 0 && !c.done) {
			fprintf(stderr, "rdmx-call: %s: %s\n", full_name, rdmx_strerror(rc));
			if (s)
				rdmx_rpc_stream_cancel(
				    s); /* on_done runs now: nothing outlives c */
			goto out;
		}
		if (reading && !c.done) {
			src_fill(src, 5);
			pump(s, &c);
		}
	}
	if (o->verbose) {
		callmd_print(stdout, "Response trailers received:", &c.trailers);
		callmd_print_counts(streaming ? c.sent : 1, c.got);
		callmd_print_status(full_name, c.code, o->device, t0, c.bytes_sent, c.bytes_got,
		                    "");
	}
	if (c.code != RDMX_RPC_OK)
		ret = callmd_status_exit(c.code, c.message);
	else
		ret = c.failed ? 1 : 0;
out:
	jbuf_free(&one);
	jbuf_free(&c.pending);
	free(c.message);
	rdmx_rpc_md_fini(&c.headers);
	rdmx_rpc_md_fini(&c.trailers);
	return ret;
}
