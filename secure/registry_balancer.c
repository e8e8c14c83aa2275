/* Registry balancer: a service's live members, one picked per call, with
 * back-off for the ones that failed and a budget for retries. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include <rdmx/channel.h>
#include <rdmx/registry.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>

#include "registry_proto.h"
#include "tls_internal.h"
#include "common/clock.h"

#define UNAVAILABLE RDMX_RPC_UNAVAILABLE

struct bmember {
	struct rdmx_registry_member m; /* owned copy */
	void *conn;
	uint32_t in_flight;
	uint32_t backoff_ms; /* 0 while healthy */
	int64_t retry_at;
};

struct rdmx_registry_balancer {
	struct rdmx_registry_balancer_opts o;
	char *service;
	struct rdmx_registry_client *reg;
	struct bmember *items;
	size_t n, cap, next;
	uint64_t calls, retries;
	void *owned; /* the secure members' state (create_secure), freed last */
};

static uint32_t rnd(void)
{
	uint32_t r = 0;

	if (RAND_bytes((unsigned char *)&r, sizeof(r)) != 1)
		r = (uint32_t)rdmx__now_ms() * 2654435761u;
	return r;
}

void rdmx_registry_balancer_opts_init(struct rdmx_registry_balancer_opts *o)
{
	if (o)
		memset(o, 0, sizeof(*o));
}

static struct bmember *find(struct rdmx_registry_balancer *b, uint64_t id, size_t *at)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->items[i].m.id == id) {
			if (at)
				*at = i;
			return &b->items[i];
		}
	return NULL;
}

static int add(struct rdmx_registry_balancer *b, const struct rdmx_registry_member *m)
{
	struct bmember *x;

	if (find(b, m->id, NULL))
		return RDMX_OK;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 8;
		struct bmember *grown = realloc(b->items, cap * sizeof(*grown));

		if (!grown)
			return RDMX_E_NOMEM;
		b->items = grown;
		b->cap = cap;
	}
	x = &b->items[b->n];
	memset(x, 0, sizeof(*x));
	if (rdmx__reg_member_copy(&x->m, m))
		return RDMX_E_NOMEM;
	b->n++;
	return RDMX_OK;
}

static void disconnect(struct rdmx_registry_balancer *b, struct bmember *x)
{
	if (x->conn && b->o.disconnect)
		b->o.disconnect(x->conn, b->o.arg);
	x->conn = NULL;
}

static void drop(struct rdmx_registry_balancer *b, size_t i)
{
	disconnect(b, &b->items[i]);
	rdmx__reg_member_fini(&b->items[i].m);
	b->items[i] = b->items[--b->n];
}

static void back_off(struct rdmx_registry_balancer *b, struct bmember *x)
{
	uint32_t ms = x->backoff_ms ? x->backoff_ms * 2 : b->o.backoff_min_ms;

	if (ms > b->o.backoff_max_ms)
		ms = b->o.backoff_max_ms;
	x->backoff_ms = ms;
	/* full jitter over the upper half: members that failed together do not
	 * come back together */
	x->retry_at = (int64_t)rdmx__now_ms() + ms / 2 + (int64_t)(rnd() % (ms / 2 + 1));
	disconnect(b, x);
}

int rdmx_registry_balancer_create(const struct rdmx_registry_balancer_opts *o,
                                  struct rdmx_registry_balancer **out)
{
	struct rdmx_registry_balancer *b;
	struct rdmx_registry_members *ms = NULL;
	int ret;

	if (!o || !o->url || !o->connect || !rdmx__reg_valid_service(o->service) || !out ||
	    (o->pick != RDMX_REGISTRY_PICK_ROUND_ROBIN &&
	     o->pick != RDMX_REGISTRY_PICK_TWO_CHOICES))
		return RDMX_E_INVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return RDMX_E_NOMEM;
	b->o = *o;
	b->service = strdup(o->service);
	if (!b->service) {
		free(b);
		return RDMX_E_NOMEM;
	}
	b->o.service = b->service;
	b->o.url = NULL; /* not kept */
	if (!b->o.backoff_min_ms)
		b->o.backoff_min_ms = 100;
	if (!b->o.backoff_max_ms)
		b->o.backoff_max_ms = 5000;
	if (b->o.backoff_min_ms > b->o.backoff_max_ms)
		b->o.backoff_min_ms = b->o.backoff_max_ms;
	if (!b->o.retry_budget_percent)
		b->o.retry_budget_percent = 20;
	if (!b->o.retry_budget_min)
		b->o.retry_budget_min = 10;
	ret = rdmx_registry_client_open(o->url, o->cfg, o->timeout_ms, &b->reg);
	/* watch first: a member that joins between the two is not missed */
	if (!ret)
		ret = rdmx_registry_client_watch(b->reg, b->service);
	if (!ret)
		ret = rdmx_registry_client_lookup(b->reg, b->service, &ms);
	for (size_t i = 0; !ret && i < ms->count; i++)
		ret = add(b, &ms->items[i]);
	rdmx_registry_members_free(&ms);
	if (ret) {
		rdmx_registry_balancer_destroy(&b);
		return ret;
	}
	*out = b;
	return RDMX_OK;
}

int rdmx_registry_balancer_destroy(struct rdmx_registry_balancer **bp)
{
	struct rdmx_registry_balancer *b;

	if (!bp || !*bp)
		return RDMX_OK;
	b = *bp;
	while (b->n)
		drop(b, b->n - 1);
	free(b->items);
	rdmx_registry_client_destroy(&b->reg);
	free(b->service);
	free(b->owned);
	free(b);
	*bp = NULL;
	return RDMX_OK;
}

int rdmx_registry_balancer_refresh(struct rdmx_registry_balancer *b)
{
	struct rdmx_registry_event *ev = NULL;
	int ret;

	if (!b)
		return RDMX_E_INVAL;
	while ((ret = rdmx_registry_client_next_event(b->reg, 0, &ev)) == RDMX_OK) {
		size_t at;

		if (ev->type == RDMX_REGISTRY_JOINED)
			add(b, &ev->member);
		else if (find(b, ev->member.id, &at))
			drop(b, at);
		rdmx_registry_event_free(&ev);
	}
	return ret == RDMX_E_TIMEDOUT ? RDMX_OK : ret;
}

static bool usable(const struct bmember *x, int64_t now)
{
	return !x->backoff_ms || now >= x->retry_at;
}

/* The candidate order for this pick: round robin from b->next, or the less
 * loaded of two random usable members first. */
static size_t first_choice(struct rdmx_registry_balancer *b, int64_t now)
{
	size_t a, c;

	if (b->o.pick == RDMX_REGISTRY_PICK_ROUND_ROBIN || b->n < 2)
		return b->next++ % b->n;
	a = rnd() % b->n;
	c = rnd() % (b->n - 1);
	if (c >= a)
		c++;
	if (!usable(&b->items[a], now))
		return c;
	if (!usable(&b->items[c], now))
		return a;
	return b->items[c].in_flight < b->items[a].in_flight ? c : a;
}

int rdmx_registry_balancer_pick(struct rdmx_registry_balancer *b, void **conn, uint64_t *member,
                                uint32_t *wait_ms)
{
	int64_t now, soonest = -1;
	size_t start;

	if (!b || !conn || !member)
		return RDMX_E_INVAL;
	rdmx_registry_balancer_refresh(b);
	if (!b->n)
		return RDMX_E_NOT_FOUND;
	now = (int64_t)rdmx__now_ms();
	start = first_choice(b, now);
	for (size_t k = 0; k < b->n; k++) {
		struct bmember *x = &b->items[(start + k) % b->n];

		if (!usable(x, now)) {
			if (soonest < 0 || x->retry_at < soonest)
				soonest = x->retry_at;
			continue;
		}
		if (!x->conn) {
			int ret = b->o.connect(&x->m, b->o.arg, &x->conn);

			if (ret) {
				RDMX_SEC_WARN("registry: %s member %s: connect: %s; backing off",
				              b->service, x->m.endpoint, rdmx_strerror(ret));
				x->conn = NULL;
				back_off(b, x);
				if (soonest < 0 || x->retry_at < soonest)
					soonest = x->retry_at;
				now = (int64_t)rdmx__now_ms();
				continue;
			}
		}
		x->in_flight++;
		b->calls++;
		*conn = x->conn;
		*member = x->m.id;
		return RDMX_OK;
	}
	if (wait_ms)
		*wait_ms = soonest > now ? (uint32_t)(soonest - now) : 0;
	return RDMX_E_AGAIN;
}

int rdmx_registry_balancer_done(struct rdmx_registry_balancer *b, uint64_t member, int status)
{
	struct bmember *x = b ? find(b, member, NULL) : NULL;

	if (!x)
		return b ? RDMX_E_NOT_FOUND : RDMX_E_INVAL;
	if (x->in_flight)
		x->in_flight--;
	if (status < 0)
		back_off(b, x);
	else
		x->backoff_ms = 0;
	return RDMX_OK;
}

int rdmx_registry_balancer_may_retry(struct rdmx_registry_balancer *b, int status, int reached,
                                     int idempotent)
{
	uint64_t budget;

	if (!b || !(status < 0 || status == UNAVAILABLE) || (reached && !idempotent))
		return 0;
	budget = b->o.retry_budget_min + b->calls * b->o.retry_budget_percent / 100;
	if (b->retries >= budget)
		return 0;
	b->retries++;
	return 1;
}

size_t rdmx_registry_balancer_count(const struct rdmx_registry_balancer *b)
{
	return b ? b->n : 0;
}

uint64_t rdmx_registry_balancer_get_retries(const struct rdmx_registry_balancer *b)
{
	return b ? b->retries : 0;
}

/* ---- the call path: pick, call, fail over ---- */

/* An outcome of the call made here, not by the server: UNAVAILABLE with a
 * message, never reached. */
static int local_reply(struct rdmx_rpc_reply *r, const char *fmt, const char *a, const char *b)
{
	char text[320];

	snprintf(text, sizeof(text), fmt, a, b);
	memset(r, 0, sizeof(*r));
	r->code = RDMX_RPC_UNAVAILABLE;
	r->message = strdup(text);
	r->reached = false;
	return r->message ? RDMX_OK : RDMX_E_NOMEM;
}

static const char *member_endpoint(struct rdmx_registry_balancer *b, uint64_t id)
{
	struct bmember *x = find(b, id, NULL);

	return x ? x->m.endpoint : "(gone)";
}

static void nap_ms(uint32_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L};

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* 0 when the deadline (us, 0: none) passed, else the us left. */
static uint64_t left_us(uint64_t deadline_us)
{
	uint64_t now = rdmx__now_ns() / 1000u;

	if (!deadline_us)
		return UINT64_MAX;
	return now >= deadline_us ? 0 : deadline_us - now;
}

/* One attempt on a picked member. Returns the status may_retry weighs
 * (< 0: the transport; else the reply's code), *reached, and tells done. */
static int attempt(struct rdmx_registry_balancer *b, void *conn, uint64_t member,
                   uint32_t method_id, const struct rdmx_rpc_payload *req,
                   const struct rdmx_rpc_call_opts *co, struct rdmx_rpc_reply *reply, bool *reached,
                   int *fatal)
{
	struct rdmx_rpc_ep *ep = b->o.ep(conn, b->o.arg);
	struct rdmx_chan *chan;
	char text[256];
	int rc = ep ? rdmx_rpc_call(ep, method_id, req, co, reply) : RDMX_E_BAD_STATE;

	*fatal = 0;
	if (rc == RDMX_E_INVAL || rc == RDMX_E_TOO_BIG || rc == RDMX_E_NOMEM) {
		rdmx_registry_balancer_done(b, member, 0);
		*fatal = rc;
		return rc;
	}
	if (rc < 0) {
		/* BAD_STATE: the endpoint was closed (or going away): nothing
		 * was sent; another failure of the engine: it may have been */
		*reached = rc != RDMX_E_BAD_STATE;
		rdmx_registry_balancer_done(b, member, rc);
		snprintf(text, sizeof(text), "%s member %s: %s", b->service,
		         member_endpoint(b, member), rdmx_strerror(rc));
		memset(reply, 0, sizeof(*reply));
		reply->code = RDMX_RPC_UNAVAILABLE;
		reply->message = strdup(text);
		reply->reached = *reached;
		return rc;
	}
	*reached = reply->reached;
	chan = rdmx_rpc_ep_get_chan(ep);
	if (reply->code == RDMX_RPC_UNAVAILABLE && chan &&
	    rdmx_chan_get_state(chan) == RDMX_CHAN_CLOSED) {
		rdmx_registry_balancer_done(b, member, RDMX_E_DISCONNECTED);
		return RDMX_E_DISCONNECTED;
	}
	rdmx_registry_balancer_done(b, member, (int)reply->code);
	return (int)reply->code;
}

int rdmx_registry_balancer_call(struct rdmx_registry_balancer *b, uint32_t method_id,
                                const struct rdmx_rpc_payload *req,
                                const struct rdmx_rpc_call_opts *opts, bool idempotent,
                                struct rdmx_rpc_reply *reply)
{
	struct rdmx_rpc_call_opts co = {0, false};
	uint64_t deadline_us = 0;

	if (!b || !reply || !b->o.ep || (opts && opts->oneway))
		return RDMX_E_INVAL;
	memset(reply, 0, sizeof(*reply));
	if (opts && opts->timeout_us)
		deadline_us = rdmx__now_ns() / 1000u + opts->timeout_us;
	for (;;) {
		uint64_t member = 0, left;
		uint32_t wait_ms = 0;
		void *conn = NULL;
		bool reached = false;
		int ret, status, fatal;

		ret = rdmx_registry_balancer_pick(b, &conn, &member, &wait_ms);
		if (ret == RDMX_E_NOT_FOUND)
			return local_reply(reply, "no member of %s is registered%s", b->service,
			                   "");
		if (ret == RDMX_E_AGAIN) {
			/* every member backs off: wait for the first, within the
			 * deadline and the budget (a wait is a retry) */
			left = left_us(deadline_us);
			if (left == 0 || (deadline_us && (uint64_t)wait_ms * 1000u >= left) ||
			    !rdmx_registry_balancer_may_retry(b, RDMX_E_CONN_REFUSED, 0, 0))
				return local_reply(reply, "no member of %s can be reached%s",
				                   b->service, "");
			nap_ms(wait_ms ? wait_ms : 1);
			continue;
		}
		if (ret)
			return ret;
		left = left_us(deadline_us);
		if (left == 0) {
			rdmx_registry_balancer_done(b, member, 0);
			memset(reply, 0, sizeof(*reply));
			reply->code = RDMX_RPC_DEADLINE_EXCEEDED;
			reply->message = strdup("deadline exceeded");
			return reply->message ? RDMX_OK : RDMX_E_NOMEM;
		}
		co.timeout_us = deadline_us ? left : 0;
		status = attempt(b, conn, member, method_id, req, &co, reply, &reached, &fatal);
		if (fatal)
			return fatal;
		if (status >= 0 && status != UNAVAILABLE)
			return RDMX_OK; /* answered */
		if (left_us(deadline_us) == 0 ||
		    !rdmx_registry_balancer_may_retry(b, status, reached, idempotent))
			return RDMX_OK; /* the last attempt's UNAVAILABLE */
		RDMX_SEC_DBG("registry: %s: retrying a call (%s, %s)", b->service,
		             reached ? "reached" : "not reached", rdmx_strerror(status));
		rdmx_rpc_reply_fini(reply);
	}
}

/* ---- members connected by rdmx_rpc_secure_connect ---- */

struct secure_members {
	struct rdmx_rpc_secure_opts so;
	struct rdmx_tls_config *cfg;
};

/* "HOST:PORT" or "[V6]:PORT" (as members register them). */
static int split_endpoint(const char *endpoint, char *host, size_t host_len, uint16_t *port)
{
	const char *h = endpoint, *colon = strrchr(endpoint, ':');
	size_t n;
	char *end;
	unsigned long p;

	if (!colon || !colon[1])
		return RDMX_E_INVAL;
	n = (size_t)(colon - endpoint);
	if (endpoint[0] == '[') {
		if (n < 2 || endpoint[n - 1] != ']')
			return RDMX_E_INVAL;
		h = endpoint + 1;
		n -= 2;
	}
	if (!n || n >= host_len)
		return RDMX_E_INVAL;
	p = strtoul(colon + 1, &end, 10);
	if (*end || p == 0 || p > 65535)
		return RDMX_E_INVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	*port = (uint16_t)p;
	return RDMX_OK;
}

static int secure_connect(const struct rdmx_registry_member *m, void *arg, void **conn)
{
	struct secure_members *s = arg;
	struct rdmx_rpc_secure_conn *c = NULL;
	char host[RDMX_REGISTRY_MAX_ENDPOINT + 1];
	uint16_t port = 0;
	int ret = split_endpoint(m->endpoint, host, sizeof(host), &port);

	if (ret) {
		RDMX_SEC_WARN("registry: %s member endpoint '%.100s' is not HOST:PORT", m->service,
		              m->endpoint);
		return ret;
	}
	ret = rdmx_rpc_secure_connect(host, port, s->cfg, NULL, &s->so, &c);
	if (ret)
		return ret;
	*conn = c;
	return RDMX_OK;
}

static void secure_disconnect(void *conn, void *arg)
{
	struct rdmx_rpc_secure_conn *c = conn;

	(void)arg;
	rdmx_rpc_secure_close(&c);
}

static struct rdmx_rpc_ep *secure_ep(void *conn, void *arg)
{
	(void)arg;
	return rdmx_rpc_secure_conn_get_ep(conn);
}

int rdmx_registry_balancer_create_secure(const struct rdmx_registry_balancer_opts *opts,
                                         const struct rdmx_rpc_secure_opts *secure,
                                         struct rdmx_registry_balancer **out)
{
	struct rdmx_registry_balancer_opts o;
	struct secure_members *s;
	int ret;

	if (!opts || !opts->cfg || !out)
		return RDMX_E_INVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return RDMX_E_NOMEM;
	if (secure)
		s->so = *secure;
	else
		rdmx_rpc_secure_opts_init(&s->so);
	s->cfg = opts->cfg;
	o = *opts;
	o.connect = secure_connect;
	o.disconnect = secure_disconnect;
	o.ep = secure_ep;
	o.arg = s;
	ret = rdmx_registry_balancer_create(&o, out);
	if (ret) {
		free(s);
		return ret;
	}
	(*out)->owned = s;
	return RDMX_OK;
}
