/* route_guide client: calls the four methods of routeguide.RouteGuide
 * through the stubs rdmx-gen emits, blocking ones (S_M_open / _read /
 * _write / _close_send / _finish) and async ones (S_M_async with typed
 * callbacks), and checks every answer against the map (db.h). Exit 0 when
 * all of it matched.
 *   route_guide_client [-p PORT] [HOST] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/channel.h>

#include "db.h"
#include "net.h"
#include "route_guide.rdmx.h"

static int failures;

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "route_guide_client: check failed: %s: ", #cond);          \
			fprintf(stderr, __VA_ARGS__);                                              \
			fprintf(stderr, "\n");                                                     \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static routeguide_Point grid(int i, int j)
{
	routeguide_Point p = {ROUTE_LAT0 + i * ROUTE_STEP, ROUTE_LON0 + j * ROUTE_STEP};
	return p;
}

static bool str_eq(struct rdmx_str s, const char *c)
{
	return s.len == strlen(c) && (s.len == 0 || memcmp(s.data, c, s.len) == 0);
}

/* ---- unary ---- */
static void get_feature(struct rdmx_rpc_ep *ep, int i, int j)
{
	routeguide_Point p = grid(i, j);
	routeguide_Feature f;
	struct rdmx_arena arena;
	char want[64] = "";
	int rc;

	rdmx_arena_init(&arena, NULL, 0, 0);
	route_db_name(p.latitude, p.longitude, want, sizeof(want));
	rc = routeguide_RouteGuide_GetFeature(ep, &p, &f, &arena, NULL, NULL);
	EXPECT(rc == 0, "GetFeature: %d", rc);
	if (rc == 0) {
		EXPECT(str_eq(f.name, want), "GetFeature name '%.*s', want '%s'", (int)f.name.len,
		       f.name.data, want);
		EXPECT(f.location && f.location->latitude == p.latitude, "GetFeature location");
		if (f.name.len)
			printf("GetFeature: %s at %d,%d\n", f.name.data, p.latitude, p.longitude);
		else
			printf("GetFeature: no feature at %d,%d\n", p.latitude, p.longitude);
	}
	rdmx_arena_fini(&arena);
}

/* ---- server-streaming ---- */
static int features_in(int i_hi, int j_hi)
{
	char name[64];
	int n = 0;

	for (int i = 0; i <= i_hi; i++)
		for (int j = 0; j <= j_hi; j++) {
			routeguide_Point p = grid(i, j);
			n += route_db_name(p.latitude, p.longitude, name, sizeof(name));
		}
	return n;
}

static void list_blocking(struct rdmx_rpc_ep *ep)
{
	routeguide_Point lo = grid(0, 0), hi = grid(ROUTE_GRID - 1, 4);
	routeguide_Rectangle rect = {&lo, &hi};
	struct rdmx_rpc_stream_opts opts = {.timeout_us = 10000000};
	struct rdmx_codec_stream *call;
	struct rdmx_arena arena;
	routeguide_Feature f;
	int n = 0, rc;

	rdmx_arena_init(&arena, NULL, 0, 0);
	rc = routeguide_RouteGuide_ListFeatures_open(ep, &rect, &opts, &call);
	EXPECT(rc == 0, "ListFeatures_open: %d", rc);
	if (rc)
		return;
	while ((rc = routeguide_RouteGuide_ListFeatures_read(call, &f, &arena)) == 1) {
		char want[64];
		bool named = f.location && route_db_name(f.location->latitude,
		                                         f.location->longitude, want, sizeof(want));
		EXPECT(named && str_eq(f.name, want), "ListFeatures feature %d", n);
		n++;
		rdmx_arena_reset(&arena);
	}
	EXPECT(rc == 0, "ListFeatures_read: %d", rc);
	rc = routeguide_RouteGuide_ListFeatures_finish(call, NULL, NULL);
	EXPECT(rc == 0, "ListFeatures_finish: %d", rc);
	EXPECT(n == features_in(ROUTE_GRID - 1, 4), "ListFeatures count %d", n);
	printf("ListFeatures: %d features (blocking)\n", n);
	rdmx_arena_fini(&arena);
}

struct list_state {
	int n;
	bool done;
	enum rdmx_rpc_code code;
};

static void list_msg(struct rdmx_rpc_stream *s, const routeguide_Feature *f, void *arg)
{
	struct list_state *st = arg;

	(void)s;
	if (f->name.len)
		st->n++;
}

static void list_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *status,
                      void *arg)
{
	struct list_state *st = arg;

	(void)s;
	st->code = status->code;
	st->done = true;
}

static void drive_until(struct rdmx_rpc_ep *ep, const bool *done)
{
	struct rdmx_chan_worker *w = rdmx_chan_get_worker(rdmx_rpc_ep_get_chan(ep));

	while (!*done)
		if (rdmx_chan_worker_wait(w, 1000) < 0)
			break;
}

static void list_async(struct rdmx_rpc_ep *ep)
{
	static const struct routeguide_RouteGuide_ListFeatures_cbs cbs = {.on_msg = list_msg,
	                                                                  .on_done = list_done};
	routeguide_Point lo = grid(0, 0), hi = grid(ROUTE_GRID - 1, ROUTE_GRID - 1);
	routeguide_Rectangle rect = {&hi, &lo}; /* corners in any order */
	struct rdmx_rpc_stream_opts opts = {.timeout_us = 10000000};
	struct list_state st = {0, false, RDMX_RPC_OK};
	int rc = routeguide_RouteGuide_ListFeatures_async(ep, &rect, &opts, &cbs, &st, NULL);

	EXPECT(rc == 0, "ListFeatures_async: %d", rc);
	if (rc)
		return;
	drive_until(ep, &st.done);
	EXPECT(st.done && st.code == RDMX_RPC_OK, "ListFeatures async status %d", (int)st.code);
	EXPECT(st.n == features_in(ROUTE_GRID - 1, ROUTE_GRID - 1), "ListFeatures async count %d",
	       st.n);
	printf("ListFeatures: %d features (async)\n", st.n);
}

/* ---- client-streaming ---- */
static void record_route(struct rdmx_rpc_ep *ep)
{
	struct rdmx_rpc_stream_opts opts = {.timeout_us = 10000000};
	struct rdmx_codec_stream *call;
	routeguide_RouteSummary sum;
	int points = 40, features = 0, distance = 0, rc;
	char name[64];

	rc = routeguide_RouteGuide_RecordRoute_open(ep, &opts, &call);
	EXPECT(rc == 0, "RecordRoute_open: %d", rc);
	if (rc)
		return;
	for (int k = 0; k < points; k++) {
		/* a zig-zag over the grid: rows k / 4, columns k % 4 */
		routeguide_Point p = grid(k / 4, (k / 4) % 2 ? 3 - k % 4 : k % 4);

		if (k > 0) {
			routeguide_Point q =
			    grid((k - 1) / 4, ((k - 1) / 4) % 2 ? 3 - (k - 1) % 4 : (k - 1) % 4);
			distance +=
			    (abs(p.latitude - q.latitude) + abs(p.longitude - q.longitude)) / 1000;
		}
		features += route_db_name(p.latitude, p.longitude, name, sizeof(name));
		rc = routeguide_RouteGuide_RecordRoute_write(call, &p);
		EXPECT(rc == 0, "RecordRoute_write %d: %d", k, rc);
	}
	rc = routeguide_RouteGuide_RecordRoute_close_send(call);
	EXPECT(rc == 0, "RecordRoute_close_send: %d", rc);
	rc = routeguide_RouteGuide_RecordRoute_read(call, &sum, NULL);
	EXPECT(rc == 1, "RecordRoute_read: %d", rc);
	rc = routeguide_RouteGuide_RecordRoute_finish(call, NULL, NULL);
	EXPECT(rc == 0, "RecordRoute_finish: %d", rc);
	EXPECT(sum.point_count == points && sum.feature_count == features &&
	           sum.distance == distance,
	       "RecordRoute summary %d %d %d", sum.point_count, sum.feature_count, sum.distance);
	printf("RecordRoute: %d points, %d features, distance %d\n", sum.point_count,
	       sum.feature_count, sum.distance);
}

/* ---- bidi ---- */
static const char *const notes[] = {"First message",  "Second message", "Third message",
                                    "Fourth message", "Fifth message",  "Sixth message"};
#define NOTES 6

static routeguide_Point note_at(int k)
{
	return grid(0, 1 + k % 3);
}

static void route_chat(struct rdmx_rpc_ep *ep)
{
	struct rdmx_rpc_stream_opts opts = {.timeout_us = 10000000};
	struct rdmx_codec_stream *call;
	struct rdmx_arena arena;
	routeguide_RouteNote got;
	char line[256] = "";
	int n = 0, rc;

	rdmx_arena_init(&arena, NULL, 0, 0);
	rc = routeguide_RouteGuide_RouteChat_open(ep, &opts, &call);
	EXPECT(rc == 0, "RouteChat_open: %d", rc);
	if (rc)
		return;
	for (int k = 0; k < NOTES; k++) {
		routeguide_Point p = note_at(k);
		routeguide_RouteNote note = {&p, rdmx_str_c(notes[k])};

		rc = routeguide_RouteGuide_RouteChat_write(call, &note);
		EXPECT(rc == 0, "RouteChat_write %d: %d", k, rc);
	}
	EXPECT(routeguide_RouteGuide_RouteChat_close_send(call) == 0, "RouteChat_close_send");
	while ((rc = routeguide_RouteGuide_RouteChat_read(call, &got, &arena)) == 1) {
		/* the k-th answer is note k, left at the point of note k + 3 */
		EXPECT(n < 3 && str_eq(got.message, notes[n]), "RouteChat answer %d", n);
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%.*s", n ? "|" : "",
		         (int)got.message.len, got.message.data);
		n++;
	}
	EXPECT(rc == 0, "RouteChat_read: %d", rc);
	rc = routeguide_RouteGuide_RouteChat_finish(call, NULL, NULL);
	EXPECT(rc == 0, "RouteChat_finish: %d", rc);
	EXPECT(n == 3, "RouteChat answers %d", n);
	printf("RouteChat: %d notes back: %s\n", n, line);
	rdmx_arena_fini(&arena);
}

/* the same chat through the async stubs: write from on_writable */
struct chat_state {
	int sent, got;
	bool done, bad;
	enum rdmx_rpc_code code;
};

static void chat_send(struct rdmx_rpc_stream *s, void *arg)
{
	struct chat_state *st = arg;

	while (st->sent < NOTES) {
		routeguide_Point p = note_at(st->sent);
		routeguide_RouteNote note = {&p, rdmx_str_c(notes[st->sent])};
		int rc = routeguide_RouteGuide_RouteChat_write_async(s, &note);

		if (rc == RDMX_E_AGAIN)
			return; /* on_writable calls again */
		if (rc) {
			st->bad = true;
			rdmx_rpc_stream_cancel(s);
			return;
		}
		st->sent++;
	}
	rdmx_rpc_stream_half_close(s);
}

static void chat_msg(struct rdmx_rpc_stream *s, const routeguide_RouteNote *note, void *arg)
{
	struct chat_state *st = arg;

	(void)s;
	if (st->got >= 3 || !str_eq(note->message, notes[st->got]))
		st->bad = true;
	st->got++;
}

static void chat_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *status,
                      void *arg)
{
	struct chat_state *st = arg;

	(void)s;
	st->code = status->code;
	st->done = true;
}

static void route_chat_async(struct rdmx_rpc_ep *ep)
{
	static const struct routeguide_RouteGuide_RouteChat_cbs cbs = {
	    .on_msg = chat_msg, .on_writable = chat_send, .on_done = chat_done};
	struct rdmx_rpc_stream_opts opts = {.timeout_us = 10000000};
	struct chat_state st = {0, 0, false, false, RDMX_RPC_OK};
	struct rdmx_rpc_stream *s;
	int rc = routeguide_RouteGuide_RouteChat_async(ep, &opts, &cbs, &st, &s);

	EXPECT(rc == 0, "RouteChat_async: %d", rc);
	if (rc)
		return;
	chat_send(s, &st);
	drive_until(ep, &st.done);
	EXPECT(st.code == RDMX_RPC_OK && !st.bad && st.got == 3,
	       "RouteChat async: code %d, %d back", (int)st.code, st.got);
	printf("RouteChat: %d notes back (async)\n", st.got);
}

int main(int argc, char **argv)
{
	const char *host = "127.0.0.1";
	struct net_client *client;
	struct rdmx_rpc_ep *ep;
	uint16_t port = 18710;
	int i, rc;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf("usage: route_guide_client [-p PORT] [HOST]\n");
			return 0;
		}
		if (strcmp(argv[i], "-p") == 0 && i + 1 < argc)
			port = (uint16_t)atoi(argv[++i]);
		else
			host = argv[i];
	}
	rc = net_connect(host, port, &client);
	if (rc) {
		fprintf(stderr, "route_guide_client: connect %s:%u: %s\n", host, port,
		        rdmx_strerror(rc));
		return 1;
	}
	ep = net_rpc(client);
	get_feature(ep, 1, 1);
	get_feature(ep, 0, 0);
	list_blocking(ep);
	list_async(ep);
	record_route(ep);
	route_chat(ep);
	route_chat_async(ep);
	net_close(&client);
	if (failures) {
		fprintf(stderr, "route_guide_client: %d checks failed\n", failures);
		return 1;
	}
	printf("route_guide_client: all checks passed\n");
	return 0;
}
