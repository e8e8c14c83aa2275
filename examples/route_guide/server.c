/* route_guide server: the four methods of routeguide.RouteGuide
 * (route_guide.proto) through the skeletons rdmx-gen emits: a unary
 * respond, a server-streaming writer that honours flow control
 * (RDMX_E_AGAIN, then on_writable), a client-streaming reader that answers
 * on the client's half-close, and a bidi chat.
 *   route_guide_server [-p PORT] [--once] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/pe.h>

#include "db.h"
#include "net.h"
#include "route_guide.rdmx.h"

/* Metadata: every request header whose key starts with "x-" comes back as a
 * response header and as a trailer, and a "served-by" trailer names the
 * method (what rdmx-call -H and -v show). */
static void echo_md(const struct rdmx_rpc_md *in, struct rdmx_rpc_md *out)
{
	for (size_t i = 0; i < rdmx_rpc_md_count(in); i++)
		if (strncmp(in->v[i].key, "x-", 2) == 0)
			rdmx_rpc_md_add(out, in->v[i].key, in->v[i].value, in->v[i].len);
}

/* Sends the echoed headers of a stream (before its first message). */
static void stream_headers(struct rdmx_rpc_stream *s)
{
	struct rdmx_rpc_md md;

	rdmx_rpc_md_init(&md);
	echo_md(rdmx_rpc_stream_get_headers(s), &md);
	rdmx_rpc_stream_send_headers(s, &md);
	rdmx_rpc_md_fini(&md);
}

/* Ends a stream with the echoed trailers and served-by. */
static void stream_end(struct rdmx_rpc_stream *s, enum rdmx_rpc_code code, const char *message)
{
	struct rdmx_rpc_md md;

	rdmx_rpc_md_init(&md);
	echo_md(rdmx_rpc_stream_get_headers(s), &md);
	rdmx_rpc_md_add_str(&md, "served-by", "route_guide_server");
	rdmx_rpc_stream_finish(s, code, message, NULL, 0, &md);
	rdmx_rpc_md_fini(&md);
}

static bool feature_at(int32_t lat, int32_t lon, char *name, size_t size)
{
	if (route_db_name(lat, lon, name, size))
		return true;
	name[0] = '\0';
	return false;
}

/* ---- GetFeature (unary) ---- */
static void get_feature(struct rdmx_rpc_server_call *call, const routeguide_Point *req, void *arg)
{
	char name[64];
	routeguide_Point where = *req;
	routeguide_Feature f;

	(void)arg;
	routeguide_Feature_init(&f);
	feature_at(req->latitude, req->longitude, name, sizeof(name));
	f.name = rdmx_str_c(name);
	f.location = &where;
	{
		const struct rdmx_rpc_md *h = rdmx_rpc_call_get_headers(call);

		for (size_t i = 0; i < rdmx_rpc_md_count(h); i++)
			if (strncmp(h->v[i].key, "x-", 2) == 0) {
				rdmx_rpc_call_add_header(call, h->v[i].key, h->v[i].value,
				                         h->v[i].len);
				rdmx_rpc_call_add_trailer(call, h->v[i].key, h->v[i].value,
				                          h->v[i].len);
			}
		rdmx_rpc_call_add_trailer(call, "served-by", "route_guide_server", 18);
	}
	routeguide_RouteGuide_GetFeature_respond(call, RDMX_RPC_OK, NULL, &f);
}

/* ---- ListFeatures (server-streaming) ---- */
struct lister {
	int32_t lat_lo, lat_hi, lon_lo, lon_hi;
	int i, j; /* the next grid point to look at */
	bool have_req;
};

/* Writes features until the stream is out of credits (on_writable calls
 * again) or the rectangle is done (then the status). */
static void list_pump(struct rdmx_rpc_stream *s, void *arg)
{
	struct lister *l = arg;

	for (; l->i < ROUTE_GRID; l->i++, l->j = 0) {
		for (; l->j < ROUTE_GRID; l->j++) {
			int32_t lat = ROUTE_LAT0 + l->i * ROUTE_STEP,
			        lon = ROUTE_LON0 + l->j * ROUTE_STEP;
			routeguide_Point p = {lat, lon};
			routeguide_Feature f;
			char name[64];
			int rc;

			if (lat < l->lat_lo || lat > l->lat_hi || lon < l->lon_lo ||
			    lon > l->lon_hi || !feature_at(lat, lon, name, sizeof(name)))
				continue;
			routeguide_Feature_init(&f);
			f.name = rdmx_str_c(name);
			f.location = &p;
			rc = routeguide_RouteGuide_ListFeatures_send(s, &f);
			if (rc == RDMX_E_AGAIN)
				return; /* this point again from on_writable */
			if (rc) {
				stream_end(s, RDMX_RPC_INTERNAL, rdmx_strerror(rc));
				return;
			}
		}
	}
	stream_end(s, RDMX_RPC_OK, NULL);
}

static int32_t min32(int32_t a, int32_t b)
{
	return a < b ? a : b;
}

static int32_t max32(int32_t a, int32_t b)
{
	return a > b ? a : b;
}

static void list_request(struct rdmx_rpc_stream *s, const routeguide_Rectangle *req, void *arg)
{
	struct lister *l = arg;
	routeguide_Point zero = {0, 0};
	const routeguide_Point *lo = req->lo ? req->lo : &zero, *hi = req->hi ? req->hi : &zero;

	(void)s;
	l->lat_lo = min32(lo->latitude, hi->latitude);
	l->lat_hi = max32(lo->latitude, hi->latitude);
	l->lon_lo = min32(lo->longitude, hi->longitude);
	l->lon_hi = max32(lo->longitude, hi->longitude);
	l->have_req = true;
}

static void list_half_close(struct rdmx_rpc_stream *s, void *arg)
{
	struct lister *l = arg;

	if (!l->have_req)
		stream_end(s, RDMX_RPC_INVALID_ARGUMENT, "no rectangle");
	else
		list_pump(s, l);
}

static void free_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	(void)s;
	(void)st;
	free(arg);
}

static void list_features(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct routeguide_RouteGuide_ListFeatures_server_cbs cbs = {
	    .on_msg = list_request,
	    .on_half_close = list_half_close,
	    .on_writable = list_pump,
	    .on_done = free_done,
	};
	struct lister *l = calloc(1, sizeof(*l));

	(void)arg;
	if (!l || routeguide_RouteGuide_ListFeatures_accept(s, &cbs, l)) {
		free(l);
		rdmx_rpc_stream_finish(s, RDMX_RPC_RESOURCE_EXHAUSTED, "no memory", NULL, 0, NULL);
		return;
	}
	stream_headers(s);
}

/* ---- RecordRoute (client-streaming) ---- */
struct recorder {
	routeguide_RouteSummary sum;
	routeguide_Point last;
	uint64_t first_ns;
};

static void record_point(struct rdmx_rpc_stream *s, const routeguide_Point *p, void *arg)
{
	struct recorder *r = arg;
	char name[64];

	(void)s;
	if (r->sum.point_count == 0) {
		r->first_ns = rdmx_pe_now_ns();
	} else {
		int64_t d = llabs((long long)p->latitude - r->last.latitude) +
		            llabs((long long)p->longitude - r->last.longitude);
		r->sum.distance += (int32_t)(d / 1000);
	}
	r->sum.point_count++;
	if (route_db_name(p->latitude, p->longitude, name, sizeof(name)))
		r->sum.feature_count++;
	r->last = *p;
}

static void record_half_close(struct rdmx_rpc_stream *s, void *arg)
{
	struct recorder *r = arg;
	int rc;

	if (r->sum.point_count)
		r->sum.elapsed_us = (int64_t)((rdmx_pe_now_ns() - r->first_ns) / 1000);
	rc = routeguide_RouteGuide_RecordRoute_send(s, &r->sum);
	/* one response, the first message of its direction: within any window */
	stream_end(s, rc ? RDMX_RPC_INTERNAL : RDMX_RPC_OK, rc ? rdmx_strerror(rc) : NULL);
}

static void record_route(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct routeguide_RouteGuide_RecordRoute_server_cbs cbs = {
	    .on_msg = record_point,
	    .on_half_close = record_half_close,
	    .on_done = free_done,
	};
	struct recorder *r = calloc(1, sizeof(*r));

	(void)arg;
	if (!r || routeguide_RouteGuide_RecordRoute_accept(s, &cbs, r)) {
		free(r);
		rdmx_rpc_stream_finish(s, RDMX_RPC_RESOURCE_EXHAUSTED, "no memory", NULL, 0, NULL);
		return;
	}
	stream_headers(s);
}

/* ---- RouteChat (bidi) ---- */
#define CHAT_MAX 256 /* notes one chat keeps */
#define NOTE_MAX 128 /* bytes of one note's message */

struct note {
	routeguide_Point at;
	char text[NOTE_MAX];
};

struct chat {
	struct note notes[CHAT_MAX];
	int n;
	/* what is still to send: notes[out_from .. out_to) that share out_at */
	int out_next, out_to;
	routeguide_Point out_at;
	bool peer_done;
};

static bool same_point(const routeguide_Point *a, const routeguide_Point *b)
{
	return a->latitude == b->latitude && a->longitude == b->longitude;
}

/* Sends the earlier notes at out_at; false when out of credits. */
static bool chat_pump(struct rdmx_rpc_stream *s, struct chat *c)
{
	for (; c->out_next < c->out_to; c->out_next++) {
		struct note *n = &c->notes[c->out_next];
		routeguide_RouteNote out;
		int rc;

		if (!same_point(&n->at, &c->out_at))
			continue;
		routeguide_RouteNote_init(&out);
		out.location = &n->at;
		out.message = rdmx_str_c(n->text);
		rc = routeguide_RouteGuide_RouteChat_send(s, &out);
		if (rc == RDMX_E_AGAIN) {
			rdmx_rpc_stream_pause_read(s); /* no new note until these are out */
			return false;
		}
		if (rc) {
			stream_end(s, RDMX_RPC_INTERNAL, rdmx_strerror(rc));
			return false;
		}
	}
	return true;
}

static void chat_writable(struct rdmx_rpc_stream *s, void *arg)
{
	struct chat *c = arg;

	if (!chat_pump(s, c))
		return;
	if (c->peer_done)
		stream_end(s, RDMX_RPC_OK, NULL);
	else
		rdmx_rpc_stream_resume_read(s);
}

static void chat_note(struct rdmx_rpc_stream *s, const routeguide_RouteNote *req, void *arg)
{
	struct chat *c = arg;
	routeguide_Point zero = {0, 0};
	struct note *n;

	if (c->n == CHAT_MAX) {
		stream_end(s, RDMX_RPC_RESOURCE_EXHAUSTED, "too many notes");
		return;
	}
	n = &c->notes[c->n];
	n->at = req->location ? *req->location : zero;
	snprintf(n->text, sizeof(n->text), "%.*s", (int)req->message.len, req->message.data);
	c->out_next = 0;
	c->out_to = c->n++;
	c->out_at = n->at;
	chat_pump(s, c);
}

static void chat_half_close(struct rdmx_rpc_stream *s, void *arg)
{
	struct chat *c = arg;

	c->peer_done = true;
	if (c->out_next >= c->out_to)
		stream_end(s, RDMX_RPC_OK, NULL);
}

static void route_chat(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct routeguide_RouteGuide_RouteChat_server_cbs cbs = {
	    .on_msg = chat_note,
	    .on_half_close = chat_half_close,
	    .on_writable = chat_writable,
	    .on_done = free_done,
	};
	struct chat *c = calloc(1, sizeof(*c));

	(void)arg;
	if (!c || routeguide_RouteGuide_RouteChat_accept(s, &cbs, c)) {
		free(c);
		rdmx_rpc_stream_finish(s, RDMX_RPC_RESOURCE_EXHAUSTED, "no memory", NULL, 0, NULL);
		return;
	}
	stream_headers(s);
}

int main(int argc, char **argv)
{
	struct routeguide_RouteGuide_handlers handlers = {
	    .GetFeature = get_feature,
	    .ListFeatures = list_features,
	    .RecordRoute = record_route,
	    .RouteChat = route_chat,
	};
	struct rdmx_rpc_server *server;
	uint16_t port = 18710;
	bool once = false;
	int rc;

	if (net_server_args(argc, argv, "route_guide_server", &port, &once))
		return 0;
	if (rdmx_rpc_server_create(&server) ||
	    routeguide_RouteGuide_register(server, &handlers, NULL))
		return 1;
	rc = net_server_run("route_guide_server", server, port, once);
	printf("route_guide_server: done\n");
	return rc ? 1 : 0;
}
