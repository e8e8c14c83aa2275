/* tcp provider: the soft NIC thread (one per device).
 *
 * Why it exists, and why it mostly stays out of the way
 * -----------------------------------------------------
 * One-sided operations (read, write, atomics) must complete even when the
 * target application never calls progress, as they do on an RDMA NIC. A
 * thread that serves every socket would give that, but it would put a
 * cross-thread wake-up on every message when the target application does
 * progress. Measured on this machine kind: a wake-up across cores costs about
 * 29 us, a blocking TCP round trip across cores 73 us, a busy-polled one
 * 8.6 us; UCX's emulated remote read over TCP takes 1.1 ms when the target
 * does not poll. So the application serves the wire itself whenever it can,
 * and the NIC thread steps in only when nobody else will:
 *
 * - Fast path (no thread hop): ctx_poll takes the context lock, reads a
 *   context's only connection with one recv (its listener, if any, is
 *   looked at every few polls and after each wake-up) or else does one
 *   non-blocking epoll_wait over the context's sockets, and handles what is
 *   ready inline (places writes, answers reads and atomics, completes
 *   sends); post_send writes its frame straight to the socket when nothing
 *   is queued or outstanding ahead of it, or the application is armed; a
 *   request posted behind unanswered ones waits for the application's next
 *   poll or arm (ops.c: back-to-back posts share one sendmsg), or for this
 *   thread's next look at a context that stopped driving.
 * - Each context has a progress counter (ctx_poll, post_* and the
 *   connection calls bump it under the lock) and an "armed" flag
 *   (ctx_arm / ctx_disarm). Per context, this thread picks one of three
 *   modes:
 *   ACTIVE  the counter moved within the last grace period (200 us,
 *           RDMX_TCP_NIC_GRACE_US), or the application holds the context
 *           lock (it is inside a call: one sendmsg of a bulk answer can
 *           outlast a grace period; or it sleeps in a read of its only
 *           connection, ctx_wait_read): the thread does not touch the sockets;
 *           it sleeps and looks again, one grace period later at first, the
 *           period doubling at each look that finds the counter moved, up to
 *           TCP_BUSY_GRACES grace periods (1.6 ms). Pinned beside its busy
 *           application the thread's every look preempts it (5000 looks a
 *           second cost a busy 64 B RPC round trip a fifth of its mean and a
 *           quarter of its p99). The longest period stays under the patience:
 *           a period past it made the thread park and the application's
 *           polls kick it, every poll (p99.9 of 4.8 ms, docs/BENCHMARKS.md
 *           session 17). An application that stops is served within that
 *           period and one grace period more.
 *   ARMED   the application sleeps on its notification fd, which contains
 *           the context's sockets, so the kernel wakes it directly (one
 *           wake-up, as raw TCP). While a socket is readable the thread looks
 *           every grace period and serves only when one was readable at two
 *           consecutive looks with the counter unchanged (two strikes): the
 *           application did not react, so the NIC must. While none is, the
 *           thread stays off the sockets for a patience (10 grace periods)
 *           after the counter last moved: an application that arms between
 *           calls is woken for each message by the kernel alone, and the NIC
 *           looks about once per patience instead of once per message. Past
 *           the patience the socket set sits in this thread's epoll set as in
 *           IDLE, so an idle armed context costs no wake-ups.
 *   IDLE    no progress for a grace period and not armed: the context's
 *           socket set sits (EPOLLONESHOT) in this thread's epoll set and the
 *           thread blocks until something arrives, then serves it: trylock
 *           the context (a busy application serves it itself), read frames
 *           until EAGAIN or a budget, unlock. Seeing the counter move sends
 *           the context back to ACTIVE.
 *   Completions the thread produces go to the context's completion queue and
 *   its eventfd is written, which wakes an application sleeping in
 *   notification mode. Timers (RNR retransmission, connect timeouts) of
 *   contexts that are not ACTIVE run here too.
 * - Besides, the thread owns the device's data listener: it accepts data
 *   connections of the export/connect flow, reads their hello with a timeout
 *   and a size bound, and hands the socket to the exported connection whose
 *   token it presents (or closes it).
 * Correctness never depends on the modes: every socket is read and written
 * only under its context's lock. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "tcp.h"

#define NIC_KEY_CTL 0u
#define NIC_KEY_LISTEN 1u
#define NIC_EVENTS 32

/* How long an armed application that was progressing is trusted to serve
 * its own sockets before this thread watches them: ten grace periods (2 ms
 * by default), what an application that stops reacting while armed waits at
 * most before the NIC serves it. A sleep that short is not parking: work
 * left meanwhile (held acknowledgements, timers) waits for it, no nudge. */
static uint64_t patience_ns(const struct tcp_dev *td)
{
	return td->grace_ns * TCP_PATIENCE_GRACES;
}

static uint64_t ctx_key(const struct tcp_ctx *tc)
{
	return (tc->serial << 1) | 1u;
}

void rdmx__tcp_nic_nudge(struct tcp_ctx *tc)
{
	struct tcp_dev *td = tc->td;

	/* seq_cst against nic_main's park-then-recheck (Dekker): either it sees
	 * our dirty flag / deadline, or we see it parked */
	if (!atomic_load(&tc->has_dirty) && atomic_load(&tc->next_deadline) == TCP_NEVER)
		return;
	if (atomic_load(&td->nic_parked) && atomic_exchange(&td->nic_parked, false))
		rdmx__tcp_nic_kick(td);
}

void rdmx__tcp_nic_kick(struct tcp_dev *td)
{
	uint64_t one = 1;

	if (write(td->nic_efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		RDMX_WARN("tcp: eventfd write failed: %s", strerror(errno));
}

static int nic_ctl(struct tcp_dev *td, int op, int fd, uint32_t events, uint64_t key)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.u64 = key;
	if (epoll_ctl(td->nic_epfd, op, fd, &ev)) {
		RDMX_ERR("tcp: nic epoll_ctl fd %d failed: %s", fd, strerror(errno));
		return RDMX_E_PROVIDER;
	}
	return 0;
}

int rdmx__tcp_nic_add_ctx(struct tcp_dev *td, struct tcp_ctx *tc)
{
	tc->serial = td->next_ctx_serial++;
	tc->nic_seen = atomic_load_explicit(&tc->progress, memory_order_relaxed);
	tc->nic_arms = atomic_load_explicit(&tc->arms, memory_order_relaxed);
	tc->nic_moved_ns = rdmx__now_ns();
	tc->nic_registered = false;
	tc->nic_in_set = false;
	tc->next = td->ctxs;
	td->ctxs = tc;
	rdmx__tcp_nic_kick(td);
	return 0;
}

void rdmx__tcp_nic_del_ctx(struct tcp_dev *td, struct tcp_ctx *tc)
{
	for (struct tcp_ctx **pp = &td->ctxs; *pp; pp = &(*pp)->next) {
		if (*pp == tc) {
			*pp = tc->next;
			break;
		}
	}
	tc->next = NULL;
	if (tc->nic_registered) {
		if (epoll_ctl(td->nic_epfd, EPOLL_CTL_DEL, tc->epfd, NULL))
			RDMX_WARN("tcp: nic epoll_ctl del failed: %s", strerror(errno));
		tc->nic_registered = false;
		tc->nic_in_set = false;
	}
}

static struct tcp_ctx *ctx_by_serial(struct tcp_dev *td, uint64_t serial)
{
	for (struct tcp_ctx *tc = td->ctxs; tc; tc = tc->next)
		if (tc->serial == serial)
			return tc;
	return NULL;
}

/* Puts the context's socket set (back) into the NIC's epoll, one shot. */
static void watch_ctx(struct tcp_dev *td, struct tcp_ctx *tc)
{
	int op = tc->nic_registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;

	if (nic_ctl(td, op, tc->epfd, EPOLLIN | EPOLLONESHOT, ctx_key(tc)) == 0) {
		tc->nic_registered = true;
		tc->nic_in_set = true;
	}
}

static bool ctx_readable(const struct tcp_ctx *tc)
{
	struct pollfd p = {.fd = tc->epfd, .events = POLLIN};

	return poll(&p, 1, 0) > 0;
}

/* Serves a context on behalf of an application that does not. False when
 * the application holds the lock: it is inside a call (one long sendmsg of a
 * bulk answer can take a millisecond), which is progress as much as a moved
 * counter is, so the caller gives it a grace period before it looks again.
 * Watching the sockets again at once would spin: they stay readable until
 * the application is back, and on its core this thread is what keeps it
 * away (measured: 40% of a read_bw responder's samples). */
static bool serve(struct tcp_ctx *tc)
{
	bool produced;

	if (pthread_mutex_trylock(&tc->lock)) {
		tc->nic_moved_ns = rdmx__now_ns();
		return false;
	}
	if (tc->stopping) {
		pthread_mutex_unlock(&tc->lock);
		return true;
	}
	rdmx__tcp_ctx_serve(tc, TCP_SERVE_BUDGET, false);
	rdmx__tcp_ctx_flush_dirty(tc);
	produced = tc->produced;
	tc->produced = false;
	pthread_mutex_unlock(&tc->lock);
	if (produced)
		rdmx__tcp_ctx_signal(tc);
	return true;
}

/* The application holds the context's lock: it is inside a poll or a post
 * (a poll that sends bulk answers can outlast a grace period with the
 * counter unchanged). As good as a moved counter. */
static bool app_inside(struct tcp_ctx *tc)
{
	if (pthread_mutex_trylock(&tc->lock))
		return true;
	pthread_mutex_unlock(&tc->lock);
	return false;
}

/* Before the context's socket set is watched: a socket a busy application
 * took out of it (ctx.c: quiet) goes back. False, with *dl one grace period
 * away, when the application holds the lock (it is inside a call: look
 * again then). */
static bool watch_ready(struct tcp_dev *td, struct tcp_ctx *tc, uint64_t now, uint64_t *dl)
{
	if (!atomic_load(&tc->quiet) || rdmx__tcp_ctx_unquiet_try(tc))
		return true;
	*dl = now + td->grace_ns;
	return false;
}

/* Decides the context's mode, serves it if needed; returns when to look
 * again (TCP_NEVER: when its sockets wake us). */
static uint64_t check_ctx(struct tcp_dev *td, struct tcp_ctx *tc, uint64_t now)
{
	uint64_t p = atomic_load_explicit(&tc->progress, memory_order_relaxed);
	uint64_t dl;

	if (p != tc->nic_seen || app_inside(tc)) { /* ACTIVE */
		uint64_t arms = atomic_load_explicit(&tc->arms, memory_order_relaxed);
		bool sleeper = arms != tc->nic_arms;

		tc->nic_seen = p;
		tc->nic_arms = arms;
		tc->nic_moved_ns = now;
		tc->nic_strike = false;
		/* an application that sleeps on its fd between calls wakes for its
		 * sockets itself: looking every grace period would be a second
		 * wake-up for every few calls */
		if (sleeper)
			return now + patience_ns(td);
		tc->nic_period = tc->nic_period ? tc->nic_period * 2 : td->grace_ns;
		if (tc->nic_period > td->grace_ns * TCP_BUSY_GRACES)
			tc->nic_period = td->grace_ns * TCP_BUSY_GRACES;
		return now + tc->nic_period;
	}
	tc->nic_period = 0;
	/* no poll since our last look: acknowledgements held back for the
	 * application's next post go now (it may be waiting on another
	 * context for a completion that needs them) */
	if (atomic_load_explicit(&tc->has_dirty, memory_order_relaxed) &&
	    !atomic_load_explicit(&tc->armed, memory_order_relaxed))
		serve(tc);
	if (now < tc->nic_moved_ns + td->grace_ns)
		return tc->nic_moved_ns + td->grace_ns;
	dl = atomic_load_explicit(&tc->next_deadline, memory_order_relaxed);
	if (atomic_load(&tc->armed)) { /* ARMED */
		if (ctx_readable(tc)) {
			if (tc->nic_strike) {
				serve(tc);
				tc->nic_strike = false;
			} else {
				tc->nic_strike = true;
			}
			return now + td->grace_ns;
		}
		/* nothing readable: sleep until a socket of the set or a timer
		 * needs us (looking every grace period would cost an idle
		 * server a tenth of a core) */
		tc->nic_strike = false;
		if (dl <= now || atomic_load_explicit(&tc->has_dirty, memory_order_relaxed)) {
			serve(tc);
			dl = atomic_load_explicit(&tc->next_deadline, memory_order_relaxed);
			if (dl <= now || atomic_load_explicit(&tc->has_dirty, memory_order_relaxed))
				return now + td->grace_ns; /* trylock failed: look again soon */
		}
		/* armed and progressing until recently: the application is
		 * between calls and its fd holds the sockets, so the kernel wakes
		 * it for the next message. Watching them too would wake this
		 * thread as well, for every message (two wake-ups where raw TCP
		 * has one). Only past the patience (an idle application, or one
		 * that stopped reacting) do the sockets go into our set. */
		if (now < tc->nic_moved_ns + patience_ns(td)) {
			uint64_t until = tc->nic_moved_ns + patience_ns(td);

			return dl < until ? dl : until;
		}
		if (!watch_ready(td, tc, now, &dl))
			return dl;
		if (!tc->nic_in_set)
			watch_ctx(td, tc);
		return dl;
	}
	/* IDLE */
	tc->nic_strike = false;
	if (dl <= now || atomic_load_explicit(&tc->has_dirty, memory_order_relaxed)) {
		if (!serve(tc))
			return now + td->grace_ns; /* the application is inside a call */
		dl = atomic_load_explicit(&tc->next_deadline, memory_order_relaxed);
		if (dl <= now || atomic_load_explicit(&tc->has_dirty, memory_order_relaxed))
			dl = now + td->grace_ns;
	}
	if (!watch_ready(td, tc, now, &dl))
		return dl;
	if (!tc->nic_in_set)
		watch_ctx(td, tc);
	return dl;
}

/* A socket set fired: serve unless the application came back. */
static void ctx_event(struct tcp_dev *td, uint64_t serial, uint64_t now)
{
	struct tcp_ctx *tc = ctx_by_serial(td, serial);
	uint64_t p;

	if (!tc)
		return;
	tc->nic_in_set = false; /* one shot consumed */
	p = atomic_load_explicit(&tc->progress, memory_order_relaxed);
	if (p != tc->nic_seen) {
		tc->nic_seen = p;
		tc->nic_moved_ns = now;
		return;
	}
	if (atomic_load(&tc->armed))
		return; /* the kernel woke the application too: give it a grace */
	serve(tc);
}

/* ---- data connections of the export/connect flow ----
 *
 * Before its hello a data connection is anybody's: it holds one of the
 * device's waiting slots (max_hellos) for at most TCP_HELLO_TIMEOUT_MS. So
 * that stalled connections cannot lock real clients out, one source address
 * holds at most max_hellos_per_source slots, and a new connection never
 * waits for a slot: when its source (or the device) is full, the waiting
 * connection idle the longest gives way (of its source, or of the source
 * holding the most slots). A real client sends its hello at once, so it is
 * never the idlest for long; an attacker's stalled sockets are. */

static const char *const end_text[TCP_HELLO_END_COUNT] = {
    [TCP_HELLO_ATTACHED] = "attached",
    [TCP_HELLO_TIMEOUT] = "dropped: no hello within the timeout",
    [TCP_HELLO_MALFORMED] = "rejected: malformed hello",
    [TCP_HELLO_BAD_TOKEN] = "rejected: bad token",
    [TCP_HELLO_CLOSED] = "closed by the peer before its hello",
    [TCP_HELLO_EVICTED] = "dropped: evicted by a newer connection (waiting slots full)",
};

static void source_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	const void *a = NULL;

	if (ss->ss_family == AF_INET)
		a = &((const struct sockaddr_in *)ss)->sin_addr;
	else if (ss->ss_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
	if (!a || !inet_ntop(ss->ss_family, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static bool same_source(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		               &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return true;
}

/* Logs how a wait ended: one line a second per kind, with the count of the
 * ones not logged. */
static void hello_log(struct tcp_dev *td, struct tcp_hello *h, enum tcp_hello_end how,
                      const char *detail)
{
	uint64_t skipped;
	char src[INET6_ADDRSTRLEN + 1], more[64];

	if (how == TCP_HELLO_ATTACHED ||
	    !rdmx__log_rate_ok(&td->hello_log[how], rdmx__now_ns(), &skipped))
		return;
	source_text(&h->src, src, sizeof(src));
	more[0] = '\0';
	if (skipped)
		snprintf(more, sizeof(more), "; %llu more not logged", (unsigned long long)skipped);
	if (how == TCP_HELLO_CLOSED)
		RDMX_INFO("tcp: data connection from %s %s%s", src, end_text[how], more);
	else
		RDMX_WARN("tcp: data connection from %s %s%s%s", src, end_text[how], detail, more);
}

/* Summaries of the windows that ended with lines held back; returns the
 * next time one is due. */
static uint64_t hello_log_flush(struct tcp_dev *td, uint64_t now)
{
	uint64_t next = TCP_NEVER;

	for (int k = 0; k < TCP_HELLO_END_COUNT; k++) {
		uint64_t skipped, d;

		if (rdmx__log_rate_flush(&td->hello_log[k], now, &skipped))
			RDMX_WARN("tcp: %llu more data connections %s, not logged",
			          (unsigned long long)skipped, end_text[k]);
		d = rdmx__log_rate_deadline(&td->hello_log[k]);
		if (d < next)
			next = d;
	}
	return next;
}

static void hello_drop(struct tcp_dev *td, struct tcp_hello *h, enum tcp_hello_end how,
                       const char *detail)
{
	for (struct tcp_hello **pp = &td->hellos; *pp; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	}
	td->num_hellos--;
	/* count and log first: a peer that sees the close sees them */
	atomic_fetch_add(&td->hello_ends[how], 1);
	hello_log(td, h, how, detail);
	if (h->fd >= 0) {
		epoll_ctl(td->nic_epfd, EPOLL_CTL_DEL, h->fd, NULL);
		close(h->fd);
	}
	free(h);
}

/* The waiting connection to give way for one from `src`: the idlest of
 * that source when it is at its limit, else (device full) the idlest of
 * the source holding the most slots; NULL when there is room. */
static struct tcp_hello *hello_victim(struct tcp_dev *td, const struct sockaddr_storage *src)
{
	struct tcp_hello *mine = NULL, *best = NULL;
	unsigned n_mine = 0, best_n = 0;

	for (struct tcp_hello *h = td->hellos; h; h = h->next) {
		if (same_source(&h->src, src)) {
			n_mine++;
			if (!mine || h->last_rx < mine->last_rx)
				mine = h;
		}
	}
	if (n_mine >= td->max_hellos_per_source)
		return mine;
	if (td->num_hellos < td->max_hellos)
		return NULL;
	for (struct tcp_hello *h = td->hellos; h; h = h->next) {
		unsigned n = 0;
		struct tcp_hello *idlest = NULL;

		for (struct tcp_hello *p = td->hellos; p; p = p->next) {
			if (same_source(&p->src, &h->src)) {
				n++;
				if (!idlest || p->last_rx < idlest->last_rx)
					idlest = p;
			}
		}
		if (n > best_n || (n == best_n && idlest->last_rx < best->last_rx)) {
			best_n = n;
			best = idlest;
		}
	}
	return best;
}

static void accept_data(struct tcp_dev *td, uint64_t now)
{
	for (;;) {
		struct sockaddr_storage src;
		socklen_t src_len = sizeof(src);
		struct tcp_hello *h, *victim;
		int fd = accept4(td->lfd, (struct sockaddr *)&src, &src_len,
		                 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				int err = errno;

				if (rdmx__tcp_accept_rests(&td->data_rest, err) &&
				    nic_ctl(td, EPOLL_CTL_MOD, td->lfd, 0, NIC_KEY_LISTEN))
					td->data_rest.until = 0; /* still watched: retried */
				rdmx__tcp_accept_log(&td->data_rest, err, "data listener");
			}
			return;
		}
		h = calloc(1, sizeof(*h));
		if (!h) {
			close(fd);
			continue;
		}
		h->fd = fd;
		h->src = src;
		h->last_rx = now;
		h->deadline = now + (uint64_t)atomic_load(&td->hello_timeout_ms) * 1000000u;
		victim = hello_victim(td, &src);
		if (victim)
			hello_drop(td, victim, TCP_HELLO_EVICTED, "");
		if (nic_ctl(td, EPOLL_CTL_ADD, fd, EPOLLIN, (uint64_t)(uintptr_t)h)) {
			close(fd);
			free(h);
			continue;
		}
		h->next = td->hellos;
		td->hellos = h;
		td->num_hellos++;
	}
}

/* A sealed hello (the dialer's first record): the export whose keys open
 * it, with the token it names (device lock held). Trial opening keeps the
 * hello free of any cleartext identifier; the candidates are the exports
 * waiting for their data connection. */
static struct tcp_conn *sealed_match(struct tcp_dev *td, const uint8_t *rec,
                                     struct rdmx__tcp_hdr *hdr, uint8_t *payload)
{
	uint8_t scratch[TCP_SEAL_HELLO_SIZE];

	for (struct tcp_conn *p = td->pending; p; p = p->pend_next) {
		const uint8_t *plain = scratch + TCP_SEAL_HDR;

		if (!p->seal)
			continue;
		memcpy(scratch, rec, sizeof(scratch));
		if (rdmx__tcp_seal_open(&p->seal->rx, scratch, sizeof(scratch)))
			continue;
		rdmx__tcp_hdr_decode(plain, hdr);
		memcpy(payload, plain + RDMX__TCP_HDR_SIZE, RDMX__TCP_HELLO_LEN);
		OPENSSL_cleanse(scratch, sizeof(scratch));
		if (hdr->op != RDMX__TCP_OP_HELLO || rdmx__tcp_hdr_check(hdr, TCP_MAX_MSG) ||
		    hdr->op0 != RDMX__TCP_HELLO_WORD || hdr->len != RDMX__TCP_HELLO_LEN ||
		    !rdmx__tcp_ct_equal(payload, p->my_token, RDMX__TCP_TOKEN_SIZE))
			return NULL; /* opened with its keys, yet not its hello */
		return p;
	}
	OPENSSL_cleanse(scratch, sizeof(scratch));
	return NULL;
}

/* How many bytes the hello being read has: its first 48 bytes tell a plain
 * one (a HELLO header) from a sealed one (a record of the fixed length). */
static uint32_t hello_size(const struct tcp_hello *h)
{
	if (h->got < RDMX__TCP_HDR_SIZE)
		return RDMX__TCP_HDR_SIZE;
	if (h->buf[0] == RDMX__TCP_OP_HELLO)
		return RDMX__TCP_HDR_SIZE + RDMX__TCP_HELLO_LEN;
	return TCP_SEAL_HELLO_SIZE;
}

static void hello_read(struct tcp_dev *td, struct tcp_hello *h)
{
	uint8_t payload[RDMX__TCP_HELLO_LEN];
	struct rdmx__tcp_hdr hdr;
	struct tcp_conn *c;
	uint32_t size;
	bool sealed;
	ssize_t n;
	int fd;

	n = recv(h->fd, h->buf + h->got, hello_size(h) - h->got, 0);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		hello_drop(td, h, TCP_HELLO_CLOSED, "");
		return;
	}
	h->got += (uint32_t)n;
	h->last_rx = rdmx__now_ns();
	if (h->got < RDMX__TCP_HDR_SIZE)
		return;
	sealed = h->buf[0] != RDMX__TCP_OP_HELLO &&
	         rdmx__ld32(h->buf) == RDMX__TCP_HDR_SIZE + RDMX__TCP_HELLO_LEN;
	rdmx__tcp_hdr_decode(h->buf, &hdr);
	if (!sealed && (hdr.op != RDMX__TCP_OP_HELLO || rdmx__tcp_hdr_check(&hdr, TCP_MAX_MSG) ||
	                hdr.op0 != RDMX__TCP_HELLO_WORD || hdr.len != RDMX__TCP_HELLO_LEN)) {
		char detail[64];

		snprintf(detail, sizeof(detail), " (opcode 0x%02x, length %llu)", hdr.op,
		         (unsigned long long)hdr.len);
		hello_drop(td, h, TCP_HELLO_MALFORMED, detail);
		return;
	}
	size = hello_size(h);
	if (h->got < size)
		return;
	c = NULL;
	if (sealed) {
		c = sealed_match(td, h->buf, &hdr, payload);
	} else {
		/* constant-time compare against every waiting export; a sealed
		 * export never takes a plain hello (no downgrade) */
		for (struct tcp_conn *p = td->pending; p; p = p->pend_next)
			if (rdmx__tcp_ct_equal(h->buf + RDMX__TCP_HDR_SIZE, p->my_token,
			                       RDMX__TCP_TOKEN_SIZE) &&
			    !p->seal && !c)
				c = p;
		if (c)
			memcpy(payload, h->buf + RDMX__TCP_HDR_SIZE, sizeof(payload));
	}
	if (!c) {
		hello_drop(td, h, TCP_HELLO_BAD_TOKEN, sealed ? " (sealed hello)" : "");
		return;
	}
	rdmx__tcp_pending_del(td, c);
	fd = h->fd;
	epoll_ctl(td->nic_epfd, EPOLL_CTL_DEL, fd, NULL);
	h->fd = -1;
	hello_drop(td, h, TCP_HELLO_ATTACHED, "");
	rdmx__tcp_conn_attach(c, fd, &hdr, payload);
	OPENSSL_cleanse(payload, sizeof(payload));
}

/* The data listener back in the NIC's set once its rest is over (tcp.h:
 * struct tcp_accept_rest), else *wait no later than that. */
static void data_listener_resume(struct tcp_dev *td, uint64_t now, uint64_t *wait)
{
	if (!td->data_rest.until)
		return;
	if (td->data_rest.until > now) {
		if (td->data_rest.until < *wait)
			*wait = td->data_rest.until;
		return;
	}
	td->data_rest.until = 0;
	nic_ctl(td, EPOLL_CTL_MOD, td->lfd, EPOLLIN, NIC_KEY_LISTEN);
}

static void expire_hellos(struct tcp_dev *td, uint64_t now, uint64_t *wait)
{
	struct tcp_hello *h = td->hellos;

	while (h) {
		struct tcp_hello *next = h->next;

		if (h->deadline <= now) {
			char detail[32];

			snprintf(detail, sizeof(detail), " (%u ms)",
			         atomic_load(&td->hello_timeout_ms));
			hello_drop(td, h, TCP_HELLO_TIMEOUT, detail);
		} else if (h->deadline < *wait)
			*wait = h->deadline;
		h = next;
	}
}

/* ---- the thread ---- */

/* Sleeps until an event of the NIC's set or `wait`; returns the events
 * (one system call per wake-up: epoll_pwait2 takes the timeout in ns). */
static int nic_sleep(struct tcp_dev *td, struct epoll_event *evs, uint64_t wait, uint64_t now)
{
	struct timespec ts, *tsp = NULL;
	int n;

	if (wait != TCP_NEVER) {
		uint64_t d = wait > now ? wait - now : 0;

		ts.tv_sec = (time_t)(d / 1000000000u);
		ts.tv_nsec = (long)(d % 1000000000u);
		tsp = &ts;
	}
	n = epoll_pwait2(td->nic_epfd, evs, NIC_EVENTS, tsp, NULL);
	if (n < 0 && errno == ENOSYS) { /* kernels before 5.11 */
		struct pollfd p = {.fd = td->nic_epfd, .events = POLLIN};

		if (ppoll(&p, 1, tsp, NULL) < 0 && errno != EINTR)
			RDMX_WARN("tcp: nic ppoll failed: %s", strerror(errno));
		n = epoll_wait(td->nic_epfd, evs, NIC_EVENTS, 0);
	}
	if (n < 0) {
		if (errno != EINTR)
			RDMX_WARN("tcp: nic epoll_pwait2 failed: %s", strerror(errno));
		return 0;
	}
	return n;
}

static void *nic_main(void *arg)
{
	struct tcp_dev *td = arg;
	struct epoll_event evs[NIC_EVENTS];

	pthread_mutex_lock(&td->lock);
	while (!td->nic_stop) {
		uint64_t now = rdmx__now_ns(), wait = TCP_NEVER;
		int n;

		atomic_fetch_add_explicit(&td->nic_rounds, 1, memory_order_relaxed);

		for (struct tcp_ctx *tc = td->ctxs; tc; tc = tc->next) {
			uint64_t w = check_ctx(td, tc, now);

			if (w < wait)
				wait = w;
		}
		expire_hellos(td, now, &wait);
		data_listener_resume(td, now, &wait);
		{
			uint64_t w = hello_log_flush(td, now);

			if (w < wait)
				wait = w;
		}
		if (wait == TCP_NEVER || wait > now + patience_ns(td)) {
			/* parking: announce it, then look once more for work the
			 * application left meanwhile (it nudges us if it sees us
			 * parked; it may have looked before we announced) */
			bool work = false;

			atomic_store(&td->nic_parked, true);
			for (struct tcp_ctx *tc = td->ctxs; tc && !work; tc = tc->next)
				work = atomic_load(&tc->has_dirty) ||
				       atomic_load(&tc->next_deadline) < wait ||
				       atomic_load_explicit(&tc->progress, memory_order_relaxed) !=
				           tc->nic_seen;
			if (work) {
				atomic_store(&td->nic_parked, false);
				continue;
			}
		}
		pthread_mutex_unlock(&td->lock);
		n = nic_sleep(td, evs, wait, now);
		atomic_store(&td->nic_parked, false);
		rdmx__tcp_seal_pipe_serve(&td->seal_pipe); /* records a flush posted */
		pthread_mutex_lock(&td->lock);
		now = rdmx__now_ns();
		for (int i = 0; i < n && !td->nic_stop; i++) {
			uint64_t key = evs[i].data.u64;

			if (key == NIC_KEY_CTL) {
				uint64_t v;

				if (read(td->nic_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
					RDMX_WARN("tcp: eventfd read failed: %s", strerror(errno));
			} else if (key == NIC_KEY_LISTEN) {
				accept_data(td, now);
			} else if (key & 1u) {
				ctx_event(td, key >> 1, now);
			} else {
				struct tcp_hello *h = (struct tcp_hello *)(uintptr_t)key;
				bool live = false;

				/* an earlier event of this batch may have dropped it */
				for (struct tcp_hello *p = td->hellos; p && !live; p = p->next)
					live = p == h;
				if (live)
					hello_read(td, h);
			}
		}
	}
	pthread_mutex_unlock(&td->lock);
	return NULL;
}

int rdmx__tcp_nic_start(struct tcp_dev *td)
{
	sigset_t all, old;
	int rc;

	if (td->nic_started)
		return 0;
	if (nic_ctl(td, EPOLL_CTL_ADD, td->nic_efd, EPOLLIN, NIC_KEY_CTL) ||
	    nic_ctl(td, EPOLL_CTL_ADD, td->lfd, EPOLLIN, NIC_KEY_LISTEN)) {
		epoll_ctl(td->nic_epfd, EPOLL_CTL_DEL, td->nic_efd, NULL);
		return RDMX_E_PROVIDER;
	}
	td->nic_stop = false;
	/* the thread takes no signals: the application's handlers stay its own */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&td->nic, NULL, nic_main, td);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		RDMX_ERR("tcp: starting the nic thread failed: %s", strerror(rc));
		epoll_ctl(td->nic_epfd, EPOLL_CTL_DEL, td->nic_efd, NULL);
		epoll_ctl(td->nic_epfd, EPOLL_CTL_DEL, td->lfd, NULL);
		return RDMX_E_PROVIDER;
	}
	td->nic_started = true;
	return 0;
}

void rdmx__tcp_nic_stop(struct tcp_dev *td)
{
	pthread_mutex_lock(&td->lock);
	if (!td->nic_started) {
		pthread_mutex_unlock(&td->lock);
		return;
	}
	td->nic_stop = true;
	pthread_mutex_unlock(&td->lock);
	rdmx__tcp_nic_kick(td);
	pthread_join(td->nic, NULL);
	td->nic_started = false;
}
