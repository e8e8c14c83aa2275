/* rdmx-bootstrapd core: sessions over the TLS listener, the member table
 * with leases, watchers. Everything runs on the loop's thread.
 *
 * Memory stays bounded whatever clients do: members (max_members, and
 * max_members_per_owner per certificate), sessions (max_clients), one
 * frame per session being decoded, and each session's send queue (the TLS
 * connection refuses past two frames: a client that does not read its
 * answers or events is disconnected, as is one that leaves the session
 * waiting to write for frame_timeout_ms). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <ev.h>

#include <rdmx/log.h>
#include <rdmx/status.h>

#include "registry_proto.h"
#include "registry_server.h"
#include "tls_internal.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/share.h"

#define FRAMES_PER_WAKEUP 64
/* At most one "new session refused" / "session evicted" line a second each
 * (each needs a completed handshake, but a member may make many); the
 * counters (/metrics) keep them all. */
struct rate_log {
	ev_tstamp last;
	uint64_t skipped;
};
/* A certificate name escaped for a log line (rdmx__log_escape): a
 * printable name of up to RDMX_TLS_NAME_MAX bytes shows whole, a longer
 * escape is cut with "...". */
#define LOG_NAME 300

struct member {
	struct rdmx_registry_member pub;
	int64_t expires; /* monotonic ms */
	struct member *prev, *next;
};

struct session {
	struct rdmx__bootstrapd *bsd;
	struct rdmx_tls_conn *conn;
	const char *name;        /* certificate name, owned by conn */
	char log_name[LOG_NAME]; /* name escaped: the certificate's text, any byte but NUL */
	const char *addr;
	ev_io io;
	/* RDMX_TLS_WANT_* of the last rdmx__tls_conn_step: what the TLS layer
	 * waits for before it can read on (write alone: its answer to a
	 * KeyUpdate, say, the socket full because the peer does not read) */
	int wants;
	/* runs while a frame is received in part or the session waits to write */
	ev_timer stall;
	ev_tstamp last; /* opened, or last readable or writable (eviction order) */
	int closing;
	int watching;
	char *watch_service; /* NULL: all */
	struct session *prev, *next;
};

struct rdmx__bootstrapd {
	struct ev_loop *loop;
	struct rdmx_tls_config *cfg;
	struct rdmx_tls_listener *listener;
	struct rdmx__bootstrapd_opts o;
	struct rdmx__policy *policy;
	uint32_t max_frame;

	struct member *members;
	uint32_t n_members;
	struct session *sessions;
	uint32_t n_sessions;
	struct session *graveyard;                   /* closed sessions freed at the next prepare */
	uint64_t sessions_refused, sessions_evicted; /* at max_clients */
	struct rate_log refused_log, evicted_log;

	ev_timer sweep;
	ev_prepare reaper;
};

void rdmx__bootstrapd_opts_init(struct rdmx__bootstrapd_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->min_ttl_ms = 1000;
	o->max_ttl_ms = 300000;
	o->default_ttl_ms = 30000;
	o->max_members = 4096;
	o->max_members_per_owner = 64;
	o->max_clients = 1024;
	o->sweep_ms = 100;
	o->frame_timeout_ms = 10000;
}

/* ---- sessions ---- */

/* A certificate name for a log line: the peer's certificate may hold any
 * byte but NUL in it (a newline, an escape sequence) when the allow-list
 * takes any name. */
static const char *log_name(const char *name, char out[LOG_NAME])
{
	return rdmx__log_escape(name, strlen(name), out, LOG_NAME);
}

static void session_close(struct session *s, const char *why)
{
	struct rdmx__bootstrapd *bsd = s->bsd;

	if (s->closing)
		return;
	s->closing = 1;
	if (why)
		RDMX_INFO("bootstrapd: session of %s (peer %s) closed: %s", s->log_name, s->addr,
		          why);
	ev_io_stop(bsd->loop, &s->io);
	ev_timer_stop(bsd->loop, &s->stall);
	if (s->prev)
		s->prev->next = s->next;
	else
		bsd->sessions = s->next;
	if (s->next)
		s->next->prev = s->prev;
	bsd->n_sessions--;
	/* freed later: the caller may be inside this session's callback */
	s->prev = NULL;
	s->next = bsd->graveyard;
	bsd->graveyard = s;
	ev_prepare_start(bsd->loop, &bsd->reaper);
}

static void session_free(struct session *s)
{
	rdmx_tls_conn_destroy(&s->conn);
	free(s->watch_service);
	free(s);
}

static void reaper_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct rdmx__bootstrapd *bsd = w->data;

	(void)revents;
	while (bsd->graveyard) {
		struct session *s = bsd->graveyard;

		bsd->graveyard = s->next;
		session_free(s);
	}
	ev_prepare_stop(loop, w);
}

/* The session waits for its peer to read: its TLS layer cannot read on
 * before it writes, or our frames wait in its queue. */
static int session_waits_to_write(const struct session *s)
{
	return (s->wants & RDMX_TLS_WANT_WRITE) || rdmx_tls_conn_want_write(s->conn);
}

static void stall_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct session *s = w->data;

	(void)loop;
	(void)revents;
	if (session_waits_to_write(s))
		RDMX_WARN("bootstrapd: %s (peer %s) does not read: waited %u ms to write, "
		          "disconnected",
		          s->log_name, s->addr, s->bsd->o.frame_timeout_ms);
	else
		RDMX_WARN("bootstrapd: %s (peer %s) stalled mid-frame for %u ms, disconnected",
		          s->log_name, s->addr, s->bsd->o.frame_timeout_ms);
	session_close(s, NULL);
}

/* A frame begun must end, and what we write must be taken, within
 * frame_timeout_ms: the clock starts when the session begins to stall (the
 * first bytes of a frame, or a write the socket does not take) and stops
 * when it no longer does. */
static void stall_watch(struct session *s)
{
	if (!rdmx_tls_conn_rx_partial(s->conn) && !session_waits_to_write(s)) {
		ev_timer_stop(s->bsd->loop, &s->stall);
	} else if (!ev_is_active(&s->stall)) {
		ev_timer_set(&s->stall, s->bsd->o.frame_timeout_ms / 1000.0, 0.0);
		ev_timer_start(s->bsd->loop, &s->stall);
	}
}

/* Watches for what the TLS layer waits for, and only that (a read that must
 * first write gets no further on a readable socket: watching readability
 * then spins), plus writability while our frames are queued. */
static void session_rearm(struct session *s)
{
	int fd, events = 0;

	if (s->closing)
		return;
	if (s->wants & RDMX_TLS_WANT_READ)
		events |= EV_READ;
	if ((s->wants & RDMX_TLS_WANT_WRITE) || rdmx_tls_conn_want_write(s->conn))
		events |= EV_WRITE;
	rdmx_tls_conn_get_fd(s->conn, &fd);
	ev_io_stop(s->bsd->loop, &s->io);
	ev_io_set(&s->io, fd, events);
	ev_io_start(s->bsd->loop, &s->io);
	stall_watch(s);
}

/* Sends one encoded message; a client whose queue is full is dropped. */
static void session_send(struct session *s, const void *buf, size_t len)
{
	int ret;

	if (s->closing)
		return;
	ret = rdmx_tls_conn_send(s->conn, buf, len);
	if (ret == RDMX_E_AGAIN) {
		RDMX_WARN("bootstrapd: %s (peer %s) does not read its messages, disconnected",
		          s->log_name, s->addr);
		session_close(s, NULL);
		return;
	}
	if (ret < 0) {
		session_close(s, rdmx_strerror(ret));
		return;
	}
	session_rearm(s);
}

static void respond(struct session *s, uint64_t id, int status, const char *error, uint64_t member,
                    uint32_t ttl, const struct rdmx_registry_member *const *list, size_t n,
                    int with_list)
{
	void *buf = NULL;
	size_t len = 0;
	int ret = rdmx__reg_encode_response(id, status, error, member, ttl, list, n, with_list,
	                                    &buf, &len);

	if (!ret && len > s->bsd->max_frame) {
		free(buf);
		buf = NULL;
		ret = RDMX_E_TOO_BIG;
	}
	if (ret == RDMX_E_TOO_BIG)
		ret = rdmx__reg_encode_response(id, RDMX_E_TOO_BIG,
		                                "answer larger than the frame limit", 0, 0, NULL, 0,
		                                0, &buf, &len);
	if (ret) {
		/* the client waits for this answer: without it, end the session */
		session_close(s, rdmx_strerror(ret));
		return;
	}
	session_send(s, buf, len);
	free(buf);
}

/* ---- members ---- */

static void notify(struct rdmx__bootstrapd *bsd, enum rdmx_registry_event_type type,
                   struct member *m)
{
	int64_t now = (int64_t)rdmx__now_ms();
	void *buf;
	size_t len;
	int ret;

	m->pub.expires_in_ms = m->expires > now ? (uint32_t)(m->expires - now) : 0;
	ret = rdmx__reg_encode_event(type, &m->pub, &buf, &len);
	if (ret) {
		RDMX_WARN("bootstrapd: event on member %llu not sent to the watchers: %s",
		          (unsigned long long)m->pub.id, rdmx_strerror(ret));
		return;
	}
	for (struct session *s = bsd->sessions, *next; s; s = next) {
		next = s->next;
		if (s->watching && (!s->watch_service || !strcmp(s->watch_service, m->pub.service)))
			session_send(s, buf, len);
	}
	free(buf);
}

static void member_unlink(struct rdmx__bootstrapd *bsd, struct member *m)
{
	if (m->prev)
		m->prev->next = m->next;
	else
		bsd->members = m->next;
	if (m->next)
		m->next->prev = m->prev;
	bsd->n_members--;
}

static void member_free(struct member *m)
{
	rdmx__reg_member_fini(&m->pub);
	free(m);
}

static struct member *member_find(struct rdmx__bootstrapd *bsd, uint64_t id)
{
	for (struct member *m = bsd->members; m; m = m->next)
		if (m->pub.id == id)
			return m;
	return NULL;
}

static uint64_t new_member_id(struct rdmx__bootstrapd *bsd)
{
	uint64_t id = 0;

	/* random, so that ids are not reused across restarts */
	while (id == 0 || member_find(bsd, id)) {
		if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
			id = (rdmx__now_ms() << 20) ^ (uint64_t)rand();
		id &= (1ull << 53) - 1; /* exact in a double, for scripts */
	}
	return id;
}

static void sweep_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rdmx__bootstrapd *bsd = w->data;
	int64_t now = (int64_t)rdmx__now_ms();
	char owner[LOG_NAME];

	(void)loop;
	(void)revents;
	for (struct member *m = bsd->members, *next; m; m = next) {
		next = m->next;
		if (m->expires > now)
			continue;
		member_unlink(bsd, m);
		RDMX_LOG(NOTICE, "bootstrapd: member %llu (service %s, owner %s) expired",
		         (unsigned long long)m->pub.id, m->pub.service,
		         log_name(m->pub.owner, owner));
		notify(bsd, RDMX_REGISTRY_EXPIRED, m);
		member_free(m);
	}
}

static uint32_t clamp_ttl(const struct rdmx__bootstrapd *bsd, uint32_t ttl)
{
	if (ttl == 0)
		ttl = bsd->o.default_ttl_ms;
	if (ttl < bsd->o.min_ttl_ms)
		ttl = bsd->o.min_ttl_ms;
	if (ttl > bsd->o.max_ttl_ms)
		ttl = bsd->o.max_ttl_ms;
	return ttl;
}

static void take_meta(struct member *m, struct rdmx__reg_request *r)
{
	struct rdmx_registry_member old = m->pub;

	/* the member takes the request's decoded metadata */
	old.service = old.endpoint = old.owner = NULL;
	rdmx__reg_member_fini(&old);
	m->pub.meta = r->meta;
	m->pub.n_meta = r->n_meta;
	r->meta = NULL;
	r->n_meta = 0;
}

static void handle_join(struct session *s, struct rdmx__reg_request *r)
{
	struct rdmx__bootstrapd *bsd = s->bsd;
	uint32_t ttl = clamp_ttl(bsd, r->ttl_ms), owned = 0;
	struct member *m;
	char err[LOG_NAME + RDMX_REGISTRY_MAX_SERVICE + 64]; /* under the 512 bytes of the wire */

	/* a member's owner is its certificate's name, sent in every list and
	 * event: one the decoders refuse would fail them for every client */
	if (!rdmx__reg_valid_owner(s->name)) {
		RDMX_WARN("bootstrapd: join of service '%s' by %s (peer %s) refused: the "
		          "certificate name is not a registry owner (printable ASCII, no spaces)",
		          r->service, s->log_name, s->addr);
		snprintf(
		    err, sizeof(err),
		    "certificate name %s is not a registry owner (printable ASCII, no spaces): "
		    "not registered",
		    s->log_name);
		respond(s, r->id, RDMX_E_AUTH, err, 0, 0, NULL, 0, 0);
		return;
	}
	if (bsd->policy && !rdmx__policy_allows(bsd->policy, s->name, r->service)) {
		RDMX_WARN("bootstrapd: join of service '%s' by %s (peer %s) refused by the policy",
		          r->service, s->log_name, s->addr);
		snprintf(err, sizeof(err), "certificate %s may not register service %s",
		         s->log_name, r->service);
		respond(s, r->id, RDMX_E_AUTH, err, 0, 0, NULL, 0, 0);
		return;
	}
	for (m = bsd->members; m; m = m->next) {
		if (strcmp(m->pub.owner, s->name) != 0)
			continue;
		owned++;
		/* joining again with the same endpoint refreshes the member */
		if (!strcmp(m->pub.service, r->service) && !strcmp(m->pub.endpoint, r->endpoint)) {
			take_meta(m, r);
			m->pub.ttl_ms = ttl;
			m->expires = (int64_t)rdmx__now_ms() + ttl;
			respond(s, r->id, RDMX_OK, NULL, m->pub.id, ttl, NULL, 0, 0);
			return;
		}
	}
	if (owned >= bsd->o.max_members_per_owner || bsd->n_members >= bsd->o.max_members) {
		RDMX_WARN("bootstrapd: join of '%s' by %s refused: %s full", r->service,
		          s->log_name,
		          owned >= bsd->o.max_members_per_owner ? "owner's quota" : "registry");
		respond(s, r->id, RDMX_E_FULL, "registry full", 0, 0, NULL, 0, 0);
		return;
	}
	m = calloc(1, sizeof(*m));
	if (m)
		m->pub.owner = strdup(s->name);
	if (!m || !m->pub.owner) {
		free(m);
		respond(s, r->id, RDMX_E_NOMEM, "out of memory", 0, 0, NULL, 0, 0);
		return;
	}
	m->pub.id = new_member_id(bsd);
	m->pub.service = r->service;
	m->pub.endpoint = r->endpoint;
	r->service = r->endpoint = NULL;
	take_meta(m, r);
	m->pub.ttl_ms = ttl;
	m->expires = (int64_t)rdmx__now_ms() + ttl;
	m->next = bsd->members;
	if (bsd->members)
		bsd->members->prev = m;
	bsd->members = m;
	bsd->n_members++;
	RDMX_LOG(NOTICE, "bootstrapd: member %llu joined: service %s at %s, owner %s, lease %u ms",
	         (unsigned long long)m->pub.id, m->pub.service, m->pub.endpoint, s->log_name, ttl);
	respond(s, r->id, RDMX_OK, NULL, m->pub.id, ttl, NULL, 0, 0);
	notify(bsd, RDMX_REGISTRY_JOINED, m);
}

/* A member may only be renewed or removed by the certificate that made it. */
static struct member *owned_member(struct session *s, struct rdmx__reg_request *r)
{
	struct member *m = member_find(s->bsd, r->member);
	char owner[LOG_NAME];

	if (!m) {
		respond(s, r->id, RDMX_E_NOT_FOUND, "no such member (expired?)", 0, 0, NULL, 0, 0);
		return NULL;
	}
	if (strcmp(m->pub.owner, s->name) != 0) {
		RDMX_WARN("bootstrapd: %s (peer %s) tried to %s member %llu of %s: refused",
		          s->log_name, s->addr, rdmx__reg_op_name(r->op),
		          (unsigned long long)r->member, log_name(m->pub.owner, owner));
		respond(s, r->id, RDMX_E_AUTH, "member belongs to another certificate", 0, 0, NULL,
		        0, 0);
		return NULL;
	}
	return m;
}

static void handle_members(struct session *s, struct rdmx__reg_request *r)
{
	struct rdmx__bootstrapd *bsd = s->bsd;
	const struct rdmx_registry_member **list;
	int64_t now = (int64_t)rdmx__now_ms();
	size_t n = 0;

	list = calloc(bsd->n_members ? bsd->n_members : 1, sizeof(*list));
	if (!list) {
		respond(s, r->id, RDMX_E_NOMEM, "out of memory", 0, 0, NULL, 0, 0);
		return;
	}
	for (struct member *m = bsd->members; m; m = m->next) {
		if (r->op == RDMX__REG_LOOKUP && strcmp(m->pub.service, r->service) != 0)
			continue;
		m->pub.expires_in_ms = m->expires > now ? (uint32_t)(m->expires - now) : 0;
		list[n++] = &m->pub;
	}
	respond(s, r->id, RDMX_OK, NULL, 0, 0, list, n, 1);
	free(list);
}

static void handle(struct session *s, struct rdmx__reg_request *r)
{
	struct member *m;

	switch (r->op) {
	case RDMX__REG_JOIN:
		handle_join(s, r);
		break;
	case RDMX__REG_HEARTBEAT:
		m = owned_member(s, r);
		if (m) {
			m->expires = (int64_t)rdmx__now_ms() + m->pub.ttl_ms;
			respond(s, r->id, RDMX_OK, NULL, m->pub.id, m->pub.ttl_ms, NULL, 0, 0);
		}
		break;
	case RDMX__REG_LEAVE:
		m = owned_member(s, r);
		if (m) {
			member_unlink(s->bsd, m);
			RDMX_LOG(NOTICE, "bootstrapd: member %llu (service %s) left",
			         (unsigned long long)m->pub.id, m->pub.service);
			respond(s, r->id, RDMX_OK, NULL, 0, 0, NULL, 0, 0);
			notify(s->bsd, RDMX_REGISTRY_LEFT, m);
			member_free(m);
		}
		break;
	case RDMX__REG_LOOKUP:
	case RDMX__REG_LIST:
		handle_members(s, r);
		break;
	case RDMX__REG_WATCH:
		free(s->watch_service);
		s->watch_service = r->service;
		r->service = NULL;
		s->watching = 1;
		respond(s, r->id, RDMX_OK, NULL, 0, 0, NULL, 0, 0);
		break;
	}
}

static void session_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct session *s = w->data;
	const void *frame;
	size_t len;
	char why[200];
	int ret;

	(void)revents;
	s->last = ev_now(loop);
	for (int i = 0; !s->closing; i++) {
		struct rdmx__reg_request r;

		if (i == FRAMES_PER_WAKEUP) {
			/* fairness: let the others in, come back next iteration */
			s->wants = RDMX_TLS_WANT_READ;
			ev_feed_event(s->bsd->loop, &s->io, EV_READ);
			break;
		}
		ret = rdmx__tls_conn_step(s->conn, &frame, &len);
		if (ret > 0) {
			s->wants = ret;
			break;
		}
		if (ret < 0) {
			session_close(s, ret == RDMX_E_DISCONNECTED ? "peer closed"
			                                            : rdmx_strerror(ret));
			return;
		}
		ret = rdmx__reg_decode_request(frame, len, &r, why, sizeof(why));
		if (ret) {
			RDMX_WARN(
			    "bootstrapd: bad request from %s (peer %s), connection closed: %s",
			    s->log_name, s->addr, why);
			session_close(s, NULL);
			return;
		}
		handle(s, &r);
		rdmx__reg_request_fini(&r);
	}
	session_rearm(s);
}

/* True when a line may go now; *skipped: the lines not logged before it. */
static int rate_ok(struct rate_log *r, ev_tstamp now, uint64_t *skipped)
{
	*skipped = 0;
	if (r->last > 0 && now - r->last < 1.0) {
		r->skipped++;
		return 0;
	}
	*skipped = r->skipped;
	r->skipped = 0;
	r->last = now;
	return 1;
}

static const char *skipped_text(uint64_t skipped, char *buf, size_t len)
{
	if (!skipped)
		return "";
	snprintf(buf, len, " (%llu more not logged)", (unsigned long long)skipped);
	return buf;
}

/* All max_clients sessions are open and a new one is established: a
 * service that cannot reconnect loses its lease, so one certificate must
 * not hold them all (common/share.h): the name holding the most gives up
 * its session idle longest. 0: room made. Only at the limit, O(n log n). */
static int make_room(struct rdmx__bootstrapd *bsd, struct rdmx_tls_conn *conn)
{
	struct rdmx__place *all = malloc(bsd->n_sessions * sizeof(*all));
	struct session *victim = NULL;
	const char *name = "", *addr = "unknown";
	char name_log[LOG_NAME];
	uint32_t n = 0, mine = 0, most = 0;
	uint64_t skipped;
	char more[48];
	long top;

	rdmx_tls_conn_get_peer_name(conn, &name);
	rdmx_tls_conn_get_peer_addr(conn, &addr);
	if (all) {
		for (struct session *s = bsd->sessions; s; s = s->next)
			all[n++] = (struct rdmx__place){s->name, s};
		top = rdmx__share_pick(all, n, name, &mine, &most);
		for (long i = top; top >= 0 && i < top + (long)most; i++) {
			struct session *s = all[i].holder;

			if (!victim || s->last < victim->last)
				victim = s;
		}
		free(all);
	}
	if (!victim) {
		bsd->sessions_refused++;
		if (rate_ok(&bsd->refused_log, ev_now(bsd->loop), &skipped))
			RDMX_WARN("bootstrapd: %u clients connected, new session of %s (peer %s) "
			          "refused (%u of them its certificate's)%s",
			          bsd->o.max_clients, log_name(name, name_log), addr, mine,
			          skipped_text(skipped, more, sizeof(more)));
		return -1;
	}
	bsd->sessions_evicted++;
	if (rate_ok(&bsd->evicted_log, ev_now(bsd->loop), &skipped))
		RDMX_WARN("bootstrapd: %u clients connected, %u of them %s's: its session idle "
		          "longest (peer %s) closed for one of %s (peer %s)%s",
		          bsd->o.max_clients, most, victim->log_name, victim->addr,
		          log_name(name, name_log), addr,
		          skipped_text(skipped, more, sizeof(more)));
	session_close(victim, NULL);
	return 0;
}

static void established_cb(struct rdmx_tls_listener *l, struct rdmx_tls_conn *conn, void *arg)
{
	struct rdmx__bootstrapd *bsd = arg;
	struct session *s;
	int fd;

	(void)l;
	if (bsd->n_sessions >= bsd->o.max_clients && make_room(bsd, conn)) {
		rdmx_tls_conn_destroy(&conn);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		rdmx_tls_conn_destroy(&conn);
		return;
	}
	s->bsd = bsd;
	s->conn = conn;
	s->wants = RDMX_TLS_WANT_READ;
	rdmx_tls_conn_get_peer_name(conn, &s->name);
	log_name(s->name, s->log_name);
	rdmx_tls_conn_get_peer_addr(conn, &s->addr);
	s->last = ev_now(bsd->loop);
	s->next = bsd->sessions;
	if (bsd->sessions)
		bsd->sessions->prev = s;
	bsd->sessions = s;
	bsd->n_sessions++;
	RDMX_INFO("bootstrapd: session of %s (peer %s) opened", s->log_name, s->addr);
	rdmx_tls_conn_get_fd(conn, &fd);
	ev_io_init(&s->io, session_cb, fd, EV_READ);
	s->io.data = s;
	ev_timer_init(&s->stall, stall_cb, bsd->o.frame_timeout_ms / 1000.0, 0.0);
	s->stall.data = s;
	ev_io_start(bsd->loop, &s->io);
	ev_feed_event(bsd->loop, &s->io, EV_READ);
}

/* ---- life cycle ---- */

int rdmx__bootstrapd_create(struct ev_loop *loop, struct rdmx_tls_config *cfg,
                            const struct rdmx__bootstrapd_opts *opts, struct rdmx__policy *policy,
                            struct rdmx__bootstrapd **out)
{
	struct rdmx__bootstrapd *bsd;
	int ret;

	if (!loop || !cfg || !opts || !out || opts->min_ttl_ms == 0 ||
	    opts->min_ttl_ms > opts->max_ttl_ms || !opts->max_members || !opts->max_clients ||
	    !opts->max_members_per_owner || !opts->sweep_ms)
		return RDMX_E_INVAL;
	bsd = calloc(1, sizeof(*bsd));
	if (!bsd)
		return RDMX_E_NOMEM;
	bsd->loop = loop;
	bsd->cfg = cfg;
	bsd->o = *opts;
	if (!bsd->o.frame_timeout_ms)
		bsd->o.frame_timeout_ms = 10000;
	rdmx_tls_config_get_max_frame(cfg, &bsd->max_frame);
	ret = rdmx_tls_listener_create(loop, cfg, opts->host, opts->port, established_cb, bsd,
	                               &bsd->listener);
	if (ret) {
		free(bsd);
		return ret;
	}
	bsd->policy = policy;
	ev_timer_init(&bsd->sweep, sweep_cb, opts->sweep_ms / 1000.0, opts->sweep_ms / 1000.0);
	bsd->sweep.data = bsd;
	ev_timer_start(loop, &bsd->sweep);
	ev_prepare_init(&bsd->reaper, reaper_cb);
	bsd->reaper.data = bsd;
	*out = bsd;
	return RDMX_OK;
}

void rdmx__bootstrapd_set_policy(struct rdmx__bootstrapd *bsd, struct rdmx__policy *policy)
{
	rdmx__policy_destroy(&bsd->policy);
	bsd->policy = policy;
}

uint16_t rdmx__bootstrapd_get_port(const struct rdmx__bootstrapd *bsd)
{
	uint16_t port = 0;

	rdmx_tls_listener_get_port(bsd->listener, &port);
	return port;
}

uint32_t rdmx__bootstrapd_members(const struct rdmx__bootstrapd *bsd)
{
	return bsd->n_members;
}

void rdmx__bootstrapd_session_limits(const struct rdmx__bootstrapd *bsd, uint64_t *refused,
                                     uint64_t *evicted)
{
	*refused = bsd ? bsd->sessions_refused : 0;
	*evicted = bsd ? bsd->sessions_evicted : 0;
}

uint32_t rdmx__bootstrapd_sessions(const struct rdmx__bootstrapd *bsd)
{
	return bsd->n_sessions;
}

int rdmx__bootstrapd_listener_stats(const struct rdmx__bootstrapd *bsd,
                                    struct rdmx_tls_listener_stats *stats)
{
	return rdmx_tls_listener_get_stats(bsd->listener, stats);
}

void rdmx__bootstrapd_destroy(struct rdmx__bootstrapd **pbsd)
{
	struct rdmx__bootstrapd *bsd;

	if (!pbsd || !*pbsd)
		return;
	bsd = *pbsd;
	rdmx_tls_listener_destroy(&bsd->listener);
	ev_timer_stop(bsd->loop, &bsd->sweep);
	while (bsd->sessions)
		session_close(bsd->sessions, NULL);
	reaper_cb(bsd->loop, &bsd->reaper, 0);
	while (bsd->members) {
		struct member *m = bsd->members;

		member_unlink(bsd, m);
		member_free(m);
	}
	rdmx__policy_destroy(&bsd->policy);
	free(bsd);
	*pbsd = NULL;
}
