/* Blocking client streams for generated code (include/rdmx/codec_stream.h):
 * a stream of rpc/stream.c whose callbacks fill a queue that the blocking
 * functions wait on, driving the worker's engine. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/channel.h>
#include <rdmx/codec_stream.h>

struct cs_msg {
	struct cs_msg *next;
	size_t len;
	unsigned char data[];
};

struct rdmx_codec_stream {
	struct rdmx_rpc_stream *s; /* NULL once ended */
	struct rdmx_chan_worker *worker;
	struct cs_msg *head, *tail, *cur; /* cur: returned by the last read */
	uint32_t queued, window;
	bool paused, writable, done, sent_close, discard;
	int err; /* RDMX_E_NOMEM while copying a message */
	int code;
	char *message;
	struct rdmx_rpc_md headers, trailers;
};

static void cs_on_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct rdmx_codec_stream *cs = arg;
	struct cs_msg *m;

	if (cs->discard)
		return;
	m = malloc(sizeof(*m) + len);
	if (!m) {
		cs->err = RDMX_E_NOMEM;
		rdmx_rpc_stream_cancel(s);
		return;
	}
	m->next = NULL;
	m->len = len;
	if (len)
		memcpy(m->data, data, len);
	if (cs->tail)
		cs->tail->next = m;
	else
		cs->head = m;
	cs->tail = m;
	if (++cs->queued >= cs->window && !cs->paused && rdmx_rpc_stream_pause_read(s) == 0)
		cs->paused = true;
}

static void cs_on_writable(struct rdmx_rpc_stream *s, void *arg)
{
	struct rdmx_codec_stream *cs = arg;

	(void)s;
	cs->writable = true;
}

static void cs_on_headers(struct rdmx_rpc_stream *s, const struct rdmx_rpc_md *headers, void *arg)
{
	struct rdmx_codec_stream *cs = arg;

	(void)s;
	if (rdmx_rpc_md_append(&cs->headers, headers))
		cs->err = RDMX_E_NOMEM;
}

static void cs_on_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	struct rdmx_codec_stream *cs = arg;

	(void)s;
	cs->s = NULL;
	cs->done = true;
	cs->code = (int)st->code;
	if (st->message && st->message[0]) {
		cs->message = strdup(st->message);
		if (!cs->message)
			cs->err = RDMX_E_NOMEM;
	}
	if (rdmx_rpc_md_append(&cs->trailers, st->trailers))
		cs->err = RDMX_E_NOMEM;
}

static const struct rdmx_rpc_stream_cbs cs_cbs = {
    .on_msg = cs_on_msg,
    .on_writable = cs_on_writable,
    .on_headers = cs_on_headers,
    .on_done = cs_on_done,
};

static void cs_free(struct rdmx_codec_stream *cs)
{
	struct cs_msg *m, *next;

	free(cs->cur);
	for (m = cs->head; m; m = next) {
		next = m->next;
		free(m);
	}
	free(cs->message);
	rdmx_rpc_md_fini(&cs->headers);
	rdmx_rpc_md_fini(&cs->trailers);
	free(cs);
}

/* one wait of the engine; a failing engine cancels the stream so that no
 * callback outlives the call */
static int cs_wait(struct rdmx_codec_stream *cs)
{
	int rc = rdmx_chan_worker_wait(cs->worker, 1000);

	if (rc < 0 && cs->s)
		rdmx_rpc_stream_cancel(cs->s);
	return rc < 0 ? rc : 0;
}

int rdmx__codec_stream_open(struct rdmx_rpc_ep *ep, uint32_t method_id,
                            enum rdmx_rpc_stream_kind kind, const struct rdmx_rpc_payload *req,
                            const struct rdmx_rpc_stream_opts *opts, struct rdmx_codec_stream **out)
{
	struct rdmx_codec_stream *cs;
	int rc;

	if (!ep || !out || (kind == RDMX_RPC_SERVER_STREAMING) != (req != NULL))
		return RDMX_E_INVAL;
	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return RDMX_E_NOMEM;
	rdmx_rpc_md_init(&cs->headers);
	rdmx_rpc_md_init(&cs->trailers);
	cs->worker = rdmx_chan_get_worker(rdmx_rpc_ep_get_chan(ep));
	cs->window = opts && opts->window ? opts->window : RDMX_RPC_STREAM_WINDOW;
	for (;;) {
		rc = rdmx_rpc_stream_open(ep, method_id, kind, opts, &cs_cbs, cs, &cs->s);
		if (rc != RDMX_E_AGAIN)
			break;
		rc = rdmx_chan_worker_wait(cs->worker, 100);
		if (rc < 0)
			break;
	}
	if (rc) {
		cs_free(cs);
		return rc;
	}
	if (req) {
		rc = rdmx__codec_stream_write(cs, req);
		if (rc == 0)
			rc = rdmx__codec_stream_close_send(cs);
		if (rc < 0) {
			if (cs->s)
				rdmx_rpc_stream_cancel(cs->s);
			cs_free(cs);
			return rc;
		}
		/* rc > 0: the stream already ended; read and finish say how */
	}
	*out = cs;
	return 0;
}

int rdmx__codec_stream_write(struct rdmx_codec_stream *cs, const struct rdmx_rpc_payload *msg)
{
	int rc;

	if (!cs || !msg)
		return RDMX_E_INVAL;
	for (;;) {
		if (cs->done)
			return cs->code != 0 ? cs->code : RDMX_E_BAD_STATE;
		cs->writable = false;
		rc = rdmx_rpc_stream_write(cs->s, msg);
		if (rc != RDMX_E_AGAIN)
			return rc;
		while (!cs->writable && !cs->done) {
			rc = cs_wait(cs);
			if (rc < 0)
				return rc;
		}
	}
}

int rdmx__codec_stream_close_send(struct rdmx_codec_stream *cs)
{
	if (!cs)
		return RDMX_E_INVAL;
	if (cs->sent_close)
		return 0;
	if (cs->done)
		return cs->code != 0 ? cs->code : 0;
	cs->sent_close = true;
	return rdmx_rpc_stream_half_close(cs->s);
}

int rdmx__codec_stream_read(struct rdmx_codec_stream *cs, const void **data, size_t *len)
{
	struct cs_msg *m;
	int rc;

	if (!cs || !data || !len)
		return RDMX_E_INVAL;
	free(cs->cur);
	cs->cur = NULL;
	while (!cs->head && !cs->done) {
		if (cs->err)
			return cs->err;
		rc = cs_wait(cs);
		if (rc < 0)
			return rc;
	}
	if (cs->err)
		return cs->err;
	m = cs->head;
	if (!m)
		return 0;
	cs->head = m->next;
	if (!cs->head)
		cs->tail = NULL;
	cs->queued--;
	cs->cur = m;
	if (cs->paused && cs->queued == 0 && cs->s) {
		cs->paused = false;
		rc = rdmx_rpc_stream_resume_read(cs->s); /* may refill the queue */
		if (rc < 0)
			return rc;
	}
	*data = m->data;
	*len = m->len;
	return 1;
}

int rdmx__codec_stream_finish(struct rdmx_codec_stream *cs, struct rdmx_rpc_status *status,
                              struct rdmx_arena *arena)
{
	struct cs_msg *m, *next;
	int rc = 0;

	if (!cs)
		return RDMX_E_INVAL;
	cs->discard = true;
	for (m = cs->head; m; m = next) {
		next = m->next;
		free(m);
	}
	cs->head = cs->tail = NULL;
	cs->queued = 0;
	if (cs->s && cs->paused) {
		cs->paused = false;
		rdmx_rpc_stream_resume_read(cs->s);
	}
	if (!cs->done && !cs->sent_close) {
		cs->sent_close = true;
		rdmx_rpc_stream_half_close(cs->s);
	}
	while (!cs->done && rc == 0)
		rc = cs_wait(cs);
	if (rc == 0 && cs->err)
		rc = cs->err;
	if (rc == 0)
		rc = rdmx__rpc_status_fill(status, arena, cs->code, cs->message);
	if (rc == 0)
		rc = cs->code;
	cs_free(cs);
	return rc;
}

int rdmx_codec_stream_cancel(struct rdmx_codec_stream *cs)
{
	if (!cs)
		return RDMX_E_INVAL;
	if (!cs->s)
		return 0;
	return rdmx_rpc_stream_cancel(cs->s);
}

const struct rdmx_rpc_md *rdmx_codec_stream_get_headers(const struct rdmx_codec_stream *cs)
{
	return cs ? &cs->headers : NULL;
}

const struct rdmx_rpc_md *rdmx_codec_stream_get_trailers(const struct rdmx_codec_stream *cs)
{
	return cs ? &cs->trailers : NULL;
}

struct rdmx_rpc_stream *rdmx_codec_stream_get_stream(const struct rdmx_codec_stream *cs)
{
	return cs ? cs->s : NULL;
}
