/* The libev TLS listener (target rdmx_secure_ev, never in the core library).
 *
 * Defences, each bounded by a number the config states:
 * - a handshake that has not finished in the handshake timeout is dropped,
 *   whatever the peer trickles in (slowloris);
 * - at most max_per_source half-open handshakes (no whole ClientHello yet)
 *   per source address, and at most max_total handshakes per listener. A
 *   new connection over either budget evicts the handshake that has been
 *   idle longest (of its source's half-open ones; of all, half-open ones
 *   first), so the listener never stops accepting: a peer holding half-open
 *   handshakes sheds its own oldest ones, and a legitimate client, whose
 *   handshake moves at once, gets through even from the attacker's
 *   address;
 * so the memory held by unauthenticated peers is bounded by max_total
 * sessions, whatever the number of connection attempts. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <ev.h>

#include "tls_internal.h"

struct handshake {
	struct rdmx_tls_listener *l;
	struct rdmx_tls_conn *conn;
	ev_io io;
	ev_timer timer;
	ev_tstamp last; /* last time the peer moved the handshake */
	struct sockaddr_storage src;
	struct handshake *prev, *next;
};

/* At most one line a second per kind of drop, whatever the flood, and no
 * count lost: the next line says how many went unreported, and when no next
 * line comes, `flush` logs the count once the second is over. */
struct rate_log {
	ev_tstamp last;
	uint64_t suppressed;
	ev_timer flush;
	const char *what; /* "handshake timeouts", for the summary line */
};

/* one more of a listener counter, read from any thread */
#define COUNT(c) atomic_fetch_add_explicit(&(c), 1, memory_order_relaxed)

struct rdmx_tls_listener {
	struct ev_loop *loop;
	struct rdmx_tls_config *cfg;
	int fd;
	uint16_t port;
	ev_io accept_io;
	ev_timer resume_timer; /* restarts accepting after EMFILE */
	int accept_paused;
	int closing;

	uint32_t timeout_ms;
	uint32_t max_total;
	uint32_t max_per_source;

	struct handshake *head;
	/* rdmx_tls_listener_stats's counters: written on the loop's thread,
	 * read from any (a server's /metrics, its other workers) */
	struct {
		atomic_uint_fast64_t accepted, established, refused, timed_out, over_limit, evicted;
		atomic_uint handshaking;
	} stats;

	rdmx_tls_established_cb established;
	rdmx_tls_refused_cb refused;
	void *arg;
	rdmx__tls_dispatch_fn dispatch; /* NULL: handshake here */
	void *dispatch_arg;

	struct rate_log limit_log;
	struct rate_log timeout_log;
	struct rate_log refused_log;
	struct rate_log accept_log; /* out of descriptors: a retry every 100 ms */
};

/* Per accept callback, then back to the loop (other watchers run). */
#define ACCEPT_BATCH 64

static int same_source(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		              &((const struct sockaddr_in6 *)b)->sin6_addr,
		              sizeof(struct in6_addr)) == 0;
	return 1;
}

static int half_open(const struct handshake *h)
{
	return !rdmx__tls_conn_hello_done(h->conn);
}

/* Half-open handshakes from src, and the one of them idle longest. */
static uint32_t count_source(const struct rdmx_tls_listener *l, const struct sockaddr_storage *src,
                             struct handshake **oldest)
{
	uint32_t n = 0;

	*oldest = NULL;
	for (struct handshake *h = l->head; h; h = h->next) {
		if (!same_source(&h->src, src) || !half_open(h))
			continue;
		n++;
		if (!*oldest || h->last < (*oldest)->last)
			*oldest = h;
	}
	return n;
}

/* Of all handshakes, the half-open one idle longest, else the one idle
 * longest. */
static struct handshake *oldest_of_all(const struct rdmx_tls_listener *l)
{
	struct handshake *best = NULL;

	for (struct handshake *h = l->head; h; h = h->next) {
		if (!best || (half_open(h) && !half_open(best)) ||
		    (half_open(h) == half_open(best) && h->last < best->last))
			best = h;
	}
	return best;
}

static void source_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	if (getnameinfo((const struct sockaddr *)ss, sizeof(*ss), buf, (socklen_t)len, NULL, 0,
	                NI_NUMERICHOST) != 0)
		snprintf(buf, len, "unknown");
}

static void accept_resume(struct rdmx_tls_listener *l)
{
	if (l->accept_paused && !l->closing && !ev_is_active(&l->resume_timer)) {
		l->accept_paused = 0;
		ev_io_start(l->loop, &l->accept_io);
	}
}

static void accept_pause(struct rdmx_tls_listener *l)
{
	if (!l->accept_paused) {
		l->accept_paused = 1;
		ev_io_stop(l->loop, &l->accept_io);
	}
}

/* Unlinks and frees; the connection is destroyed unless handed over. */
static void handshake_end(struct handshake *h, int keep_conn)
{
	struct rdmx_tls_listener *l = h->l;

	ev_io_stop(l->loop, &h->io);
	ev_timer_stop(l->loop, &h->timer);
	if (h->prev)
		h->prev->next = h->next;
	else
		l->head = h->next;
	if (h->next)
		h->next->prev = h->prev;
	atomic_fetch_sub_explicit(&l->stats.handshaking, 1, memory_order_relaxed);
	if (!keep_conn)
		rdmx_tls_conn_destroy(&h->conn);
	free(h);
}

static void handshake_refused(struct handshake *h, int err, const char *reason)
{
	struct rdmx_tls_listener *l = h->l;
	const char *peer = "unknown";

	rdmx_tls_conn_get_peer_addr(h->conn, &peer);
	if (l->refused)
		l->refused(l, err, reason ? reason : rdmx_strerror(err), peer, l->arg);
	handshake_end(h, 0);
}

static void log_refused(struct handshake *h);

static void handshake_step(struct handshake *h)
{
	struct rdmx_tls_listener *l = h->l;
	struct rdmx_tls_conn *conn;
	int ret = rdmx_tls_conn_handshake(h->conn);
	int fd;

	if (ret == RDMX_TLS_DONE) {
		conn = h->conn;
		COUNT(l->stats.established);
		rdmx__tls_conn_set_quiet_fail(conn, 0); /* its own failures from now on */
		handshake_end(h, 1);
		l->established(l, conn, l->arg);
		return;
	}
	if (ret < 0) {
		COUNT(l->stats.refused);
		log_refused(h);
		handshake_refused(h, ret, rdmx_tls_conn_get_failure(h->conn));
		return;
	}
	rdmx_tls_conn_get_fd(h->conn, &fd);
	ev_io_stop(l->loop, &h->io);
	ev_io_set(&h->io, fd, ret == RDMX_TLS_WANT_READ ? EV_READ : EV_WRITE);
	ev_io_start(l->loop, &h->io);
}

static void handshake_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct handshake *h = w->data;

	(void)revents;
	h->last = ev_now(loop);
	handshake_step(h);
}

static const char *skipped_text(uint64_t skipped)
{
	static __thread char buf[64];

	buf[0] = '\0';
	if (skipped)
		snprintf(buf, sizeof(buf), "; %llu more not logged in the last second",
		         (unsigned long long)skipped);
	return buf;
}

/* 1 when a line may be logged now; *skipped tells how many were not. */
static int rate_ok(struct rdmx_tls_listener *l, struct rate_log *r, uint64_t *skipped)
{
	ev_tstamp now = ev_now(l->loop);

	if (now - r->last < 1.0) {
		if (!r->suppressed++) {
			ev_timer_set(&r->flush, r->last + 1.0 - now, 0.0);
			ev_timer_start(l->loop, &r->flush);
		}
		return 0;
	}
	ev_timer_stop(l->loop, &r->flush);
	*skipped = r->suppressed;
	r->last = now;
	r->suppressed = 0;
	return 1;
}

/* Logs the count no line carried yet. */
static void rate_report(struct rate_log *r, ev_tstamp now)
{
	if (!r->suppressed)
		return;
	RDMX_SEC_WARN("tls: %llu more %s not logged in the last second",
	              (unsigned long long)r->suppressed, r->what);
	r->suppressed = 0;
	r->last = now;
}

/* The second is over and no line carried the count of those not logged. */
static void rate_flush_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	rate_report(w->data, ev_now(loop));
}

static void rate_log_init(struct rate_log *r, const char *what)
{
	ev_timer_init(&r->flush, rate_flush_cb, 1.0, 0.0);
	r->flush.data = r;
	r->what = what;
}

/* The one line of a refused handshake (the connection keeps quiet about it):
 * at most one a second, a scanner's flood counted in the next. */
static void log_refused(struct handshake *h)
{
	uint64_t skipped;

	if (rate_ok(h->l, &h->l->refused_log, &skipped))
		rdmx__tls_conn_log_failure(h->conn, skipped_text(skipped));
}

static void handshake_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct handshake *h = w->data;
	const char *peer = "unknown";
	uint64_t skipped;

	(void)loop;
	(void)revents;
	rdmx_tls_conn_get_peer_addr(h->conn, &peer);
	if (rate_ok(h->l, &h->l->timeout_log, &skipped))
		RDMX_SEC_WARN(
		    "tls: handshake timed out after %u ms, connection dropped (peer %s)%s",
		    h->l->timeout_ms, peer, skipped_text(skipped));
	COUNT(h->l->stats.timed_out);
	handshake_refused(h, RDMX_E_TIMEDOUT, "handshake timed out");
}

/* Makes room for a new connection from src: drops the handshake idle
 * longest, of src when it is at its budget, else of all when the listener
 * is. */
static void make_room(struct rdmx_tls_listener *l, const struct sockaddr_storage *src)
{
	struct handshake *victim = NULL;
	const char *budget = NULL;
	char text[NI_MAXHOST];
	uint64_t skipped;
	uint32_t limit = 0;

	if (count_source(l, src, &victim) >= l->max_per_source && victim) {
		COUNT(l->stats.over_limit);
		budget = "half-open from one source";
		limit = l->max_per_source;
	} else if (atomic_load_explicit(&l->stats.handshaking, memory_order_relaxed) >=
	               l->max_total &&
	           (victim = oldest_of_all(l))) {
		budget = "in all";
		limit = l->max_total;
	} else {
		return;
	}
	COUNT(l->stats.evicted);
	source_text(&victim->src, text, sizeof(text));
	if (rate_ok(l, &l->limit_log, &skipped))
		RDMX_SEC_WARN("tls: %u handshakes in progress %s: dropped the one idle longest "
		              "(%.1f s, peer %s)%s",
		              limit, budget, ev_now(l->loop) - victim->last, text,
		              skipped_text(skipped));
	handshake_refused(victim, RDMX_E_FULL, "handshake evicted: too many in progress");
}

static void handshake_start(struct rdmx_tls_listener *l, int fd, const struct sockaddr_storage *src)
{
	struct handshake *h;
	int one = 1, ret;

	make_room(l, src);
	h = calloc(1, sizeof(*h));
	if (!h) {
		RDMX_SEC_ERR("tls: out of memory for a handshake, connection dropped");
		close(fd);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ret = rdmx_tls_conn_create(l->cfg, fd, RDMX_TLS_SERVER, NULL, &h->conn);
	if (ret) {
		RDMX_SEC_ERR("tls: cannot start a handshake: %s", rdmx_strerror(ret));
		free(h);
		return;
	}
	rdmx__tls_conn_set_quiet_fail(h->conn, 1); /* log_refused, rate-limited */
	h->l = l;
	h->src = *src;
	h->last = ev_now(l->loop);
	h->next = l->head;
	if (l->head)
		l->head->prev = h;
	l->head = h;
	COUNT(l->stats.handshaking);
	ev_io_init(&h->io, handshake_io_cb, fd, EV_READ);
	h->io.data = h;
	ev_timer_init(&h->timer, handshake_timer_cb, l->timeout_ms / 1000.0, 0.0);
	h->timer.data = h;
	ev_timer_start(l->loop, &h->timer);
	ev_io_start(l->loop, &h->io);
	/* its ClientHello is often there already: a client that moves at once
	 * is no longer half-open when the next connection needs room */
	handshake_step(h);
}

static void resume_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rdmx_tls_listener *l = w->data;

	(void)loop;
	(void)revents;
	accept_resume(l);
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct rdmx_tls_listener *l = w->data;

	(void)loop;
	(void)revents;
	/* bounded: a batch, then back to the loop */
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage src;
		socklen_t sl = sizeof(src);
		int fd = accept4(l->fd, (struct sockaddr *)&src, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			int err = errno;
			uint64_t skipped;

			if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR ||
			    err == ECONNABORTED)
				return;
			/* a peer that holds the process's descriptors keeps this
			 * going for as long as it likes: one line a second */
			if (rate_ok(l, &l->accept_log, &skipped))
				RDMX_SEC_ERR("tls: accept failed: %s (pausing 100 ms)%s",
				             strerror(err), skipped_text(skipped));
			accept_pause(l);
			ev_timer_set(&l->resume_timer, 0.1, 0.0);
			ev_timer_start(l->loop, &l->resume_timer);
			return;
		}
		if (l->dispatch) {
			l->dispatch(l, fd, &src, l->dispatch_arg);
			continue;
		}
		COUNT(l->stats.accepted);
		handshake_start(l, fd, &src);
	}
}

static int bind_listen(const char *host, uint16_t port, int *out_fd, uint16_t *out_port)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *res = NULL;
	char service[8];
	int gai, fd = -1, one = 1, err = 0;

	snprintf(service, sizeof(service), "%u", port);
	gai = getaddrinfo(host, service, &hints, &res);
	if (gai != 0) {
		RDMX_SEC_ERR("tls: cannot resolve listen address %s: %s", host ? host : "*",
		             gai_strerror(gai));
		return RDMX_E_INVAL;
	}
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		            ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1024) == 0)
			break;
		err = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		RDMX_SEC_ERR("tls: cannot listen on %s:%u: %s", host ? host : "*", port,
		             strerror(err));
		return RDMX_E_PROVIDER;
	}
	{
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);

		getsockname(fd, (struct sockaddr *)&ss, &sl);
		*out_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
		                                           : ((struct sockaddr_in *)&ss)->sin_port);
	}
	*out_fd = fd;
	return RDMX_OK;
}

static int listener_create(struct ev_loop *loop, struct rdmx_tls_config *cfg, bool bound,
                           const char *host, uint16_t port, rdmx_tls_established_cb established,
                           void *arg, struct rdmx_tls_listener **out)
{
	struct rdmx_tls_listener *l;
	int ret;

	if (!loop || !cfg || !established || !out)
		return RDMX_E_INVAL;
	ret = rdmx_tls_config_load(cfg);
	if (ret)
		return ret;
	l = calloc(1, sizeof(*l));
	if (!l)
		return RDMX_E_NOMEM;
	l->loop = loop;
	l->cfg = cfg;
	l->established = established;
	l->arg = arg;
	rdmx_tls_config_get_handshake_timeout(cfg, &l->timeout_ms);
	rdmx_tls_config_get_handshake_limits(cfg, &l->max_total, &l->max_per_source);
	l->fd = -1;
	ret = bound ? bind_listen(host, port, &l->fd, &l->port) : RDMX_OK;
	if (ret) {
		free(l);
		return ret;
	}
	l->limit_log.last = l->timeout_log.last = l->refused_log.last = l->accept_log.last = -10.0;
	ev_io_init(&l->accept_io, accept_cb, l->fd, EV_READ);
	l->accept_io.data = l;
	ev_timer_init(&l->resume_timer, resume_timer_cb, 0.1, 0.0);
	l->resume_timer.data = l;
	rate_log_init(&l->limit_log, "handshake evictions");
	rate_log_init(&l->timeout_log, "handshake timeouts");
	rate_log_init(&l->accept_log, "failed accepts");
	rate_log_init(&l->refused_log, "refused handshakes");
	if (bound)
		ev_io_start(loop, &l->accept_io);
	*out = l;
	return RDMX_OK;
}

int rdmx_tls_listener_create(struct ev_loop *loop, struct rdmx_tls_config *cfg, const char *host,
                             uint16_t port, rdmx_tls_established_cb established, void *arg,
                             struct rdmx_tls_listener **out)
{
	return listener_create(loop, cfg, true, host, port, established, arg, out);
}

int rdmx__tls_listener_create_unbound(struct ev_loop *loop, struct rdmx_tls_config *cfg,
                                      rdmx_tls_established_cb established, void *arg,
                                      struct rdmx_tls_listener **out)
{
	return listener_create(loop, cfg, false, NULL, 0, established, arg, out);
}

void rdmx__tls_listener_set_dispatch(struct rdmx_tls_listener *l, rdmx__tls_dispatch_fn fn,
                                     void *arg)
{
	l->dispatch = fn;
	l->dispatch_arg = arg;
}

void rdmx__tls_listener_adopt(struct rdmx_tls_listener *l, int fd,
                              const struct sockaddr_storage *src)
{
	COUNT(l->stats.accepted);
	handshake_start(l, fd, src);
}

int rdmx_tls_listener_set_refused_cb(struct rdmx_tls_listener *l, rdmx_tls_refused_cb cb)
{
	if (!l)
		return RDMX_E_INVAL;
	l->refused = cb;
	return RDMX_OK;
}

int rdmx_tls_listener_get_port(const struct rdmx_tls_listener *l, uint16_t *port)
{
	if (!l || !port)
		return RDMX_E_INVAL;
	*port = l->port;
	return RDMX_OK;
}

int rdmx_tls_listener_get_stats(const struct rdmx_tls_listener *l,
                                struct rdmx_tls_listener_stats *stats)
{
	if (!l || !stats)
		return RDMX_E_INVAL;
	stats->accepted = atomic_load_explicit(&l->stats.accepted, memory_order_relaxed);
	stats->established = atomic_load_explicit(&l->stats.established, memory_order_relaxed);
	stats->refused = atomic_load_explicit(&l->stats.refused, memory_order_relaxed);
	stats->timed_out = atomic_load_explicit(&l->stats.timed_out, memory_order_relaxed);
	stats->over_limit = atomic_load_explicit(&l->stats.over_limit, memory_order_relaxed);
	stats->evicted = atomic_load_explicit(&l->stats.evicted, memory_order_relaxed);
	stats->handshaking = atomic_load_explicit(&l->stats.handshaking, memory_order_relaxed);
	return RDMX_OK;
}

int rdmx_tls_listener_destroy(struct rdmx_tls_listener **lp)
{
	struct rdmx_tls_listener *l;

	if (!lp || !*lp)
		return RDMX_OK;
	l = *lp;
	ev_io_stop(l->loop, &l->accept_io);
	ev_timer_stop(l->loop, &l->resume_timer);
	l->closing = 1;
	while (l->head)
		handshake_end(l->head, 0);
	ev_timer_stop(l->loop, &l->limit_log.flush);
	ev_timer_stop(l->loop, &l->timeout_log.flush);
	ev_timer_stop(l->loop, &l->accept_log.flush);
	ev_timer_stop(l->loop, &l->refused_log.flush);
	rate_report(&l->limit_log, ev_now(l->loop));
	rate_report(&l->timeout_log, ev_now(l->loop));
	rate_report(&l->accept_log, ev_now(l->loop));
	rate_report(&l->refused_log, ev_now(l->loop));
	if (l->fd >= 0)
		close(l->fd);
	free(l);
	*lp = NULL;
	return RDMX_OK;
}
