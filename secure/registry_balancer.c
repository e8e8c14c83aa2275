/* Registry balancer: a service's live members, one picked per call, with
 * back-off for the ones that failed and a budget for retries. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include <rdmx/registry.h>

#include "registry_proto.h"
#include "tls_internal.h"
#include "common/clock.h"

#define UNAVAILABLE 14 /* RDMX_RPC_UNAVAILABLE */

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
