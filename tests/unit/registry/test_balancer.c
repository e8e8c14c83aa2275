/* The registry balancer (rdmx_registry_balancer_*) against rdmx-bootstrapd's
 * core in a server thread over loopback mutual TLS; members' connections are
 * a fake connect callback (no data connection is ever made). The balancer
 * takes time from a clock of its own, so back-off is checked by what pick
 * skips and tries, never by durations. Timeouts are failure guards only.
 *
 * Watch events reach the balancer asynchronously. The daemon is one thread
 * and sends an event to every watcher before it reads its next request, so a
 * request answered after the event was made (the barrier below) means the
 * event is in the balancer's socket: refresh (which never waits) sees it. */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <ev.h>

#include <rdmx/registry.h>
#include <rdmx/rpc.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "registry_server.h"
#include "ev_thread.h"
#include "test_assert.h"
#include "test_bsd.h"
#include "tls_test_pki.h"

#define SERVICE "kv"
#define MAX_FAKE 4

static struct tls_test_pki pki;

static struct {
	struct rdmx_test_bsd bsd;
	struct rdmx_tls_config *cfg;
	uint16_t port;
	char url[64];
} srv;

static void server_start(void)
{
	srv.cfg = tls_test_config(&pki, "server", "*", 1);
	cr_assert_not_null(srv.cfg);
	rdmx_test_bsd_init(&srv.bsd, srv.cfg, NULL);
	srv.bsd.opts.max_members_per_owner = 16;
	cr_assert_rc(rdmx_test_bsd_start(&srv.bsd), RDMX_OK);
	srv.port = srv.bsd.port;
	snprintf(srv.url, sizeof(srv.url), "rdmx://127.0.0.1:%u", (unsigned)srv.port);
}

static void server_stop(void)
{
	rdmx_test_bsd_stop(&srv.bsd);
	rdmx_tls_config_destroy(&srv.cfg);
}

/* ---- fake member connections: one per endpoint "10.0.0.<i>:7000" ---- */

static struct fake {
	char endpoint[32];
	int fail;        /* connect answers this error when != 0 */
	int connects;    /* connect callbacks (successful or not) */
	int disconnects; /* disconnect callbacks */
	int picks;
	int open; /* a connection handed out and not closed */
	int eps;  /* ep callbacks (the fakes have no RPC endpoint: NULL) */
} fakes[MAX_FAKE];

/* Makes time pass inside a callback (not a timing check): the callbacks
 * return only after spin_*_us microseconds. */
static uint64_t spin_connect_us, spin_ep_us;

static void spin(uint64_t us)
{
	struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};

	while (us && nanosleep(&ts, &ts) != 0)
		;
}

static struct fake *fake_of(const char *endpoint)
{
	for (int i = 0; i < MAX_FAKE; i++)
		if (!strcmp(fakes[i].endpoint, endpoint))
			return &fakes[i];
	return NULL;
}

static int fake_connect(const struct rdmx_registry_member *m, void *arg, void **conn)
{
	struct fake *f = fake_of(m->endpoint);

	cr_assert_eq(arg, (void *)fakes, "the callback gets the opts' arg");
	cr_assert_not_null(f, "member %s is not one of ours", m->endpoint);
	cr_assert_str_eq(m->service, SERVICE);
	f->connects++;
	spin(spin_connect_us);
	if (f->fail)
		return f->fail;
	cr_assert_eq(f->open, 0, "%s: connected twice without a disconnect", m->endpoint);
	f->open = 1;
	*conn = f;
	return RDMX_OK;
}

static void fake_disconnect(void *conn, void *arg)
{
	struct fake *f = conn;

	cr_assert_eq(arg, (void *)fakes);
	cr_assert_eq(f->open, 1, "%s: closed a connection that was not open", f->endpoint);
	f->open = 0;
	f->disconnects++;
}

static struct rdmx_rpc_ep *fake_ep(void *conn, void *arg)
{
	struct fake *f = conn;

	cr_assert_eq(arg, (void *)fakes);
	cr_assert_eq(f->open, 1, "asked the endpoint of a closed connection");
	f->eps++;
	spin(spin_ep_us);
	return NULL; /* as a connection whose endpoint is gone: nothing is sent */
}

/* ---- registry side: one client joins the members ---- */

static struct rdmx_tls_config *cli_cfg;
static struct rdmx_registry_client *joiner;
static struct rdmx_registry_balancer *bal;

static void setup(void)
{
	memset(&srv, 0, sizeof(srv));
	memset(fakes, 0, sizeof(fakes));
	spin_connect_us = spin_ep_us = 0;
	for (int i = 0; i < MAX_FAKE; i++)
		snprintf(fakes[i].endpoint, sizeof(fakes[i].endpoint), "10.0.0.%d:7000", i + 1);
	cr_assert_eq(tls_test_pki_create(&pki), 0);
	tls_test_log_capture();
	server_start();
	cli_cfg = tls_test_config(&pki, "client", "server.test", 1);
	cr_assert_not_null(cli_cfg);
	cr_assert_rc(rdmx_registry_client_open(srv.url, cli_cfg, 5000, &joiner), RDMX_OK);
}

static void teardown(void)
{
	rdmx_registry_balancer_destroy(&bal);
	rdmx_registry_client_destroy(&joiner);
	rdmx_tls_config_destroy(&cli_cfg);
	server_stop();
	tls_test_pki_destroy(&pki);
}

TestSuite(balancer, .init = setup, .fini = teardown, .timeout = 60);

static uint64_t join(int i, uint32_t ttl_ms)
{
	uint64_t id = 0;

	cr_assert_rc(rdmx_registry_client_join(joiner, SERVICE, fakes[i].endpoint, NULL, 0, ttl_ms,
	                                       &id, NULL),
	             RDMX_OK);
	cr_assert_neq(id, 0);
	return id;
}

/* Every event made before this returns is in the balancer's socket. */
static void barrier(void)
{
	struct rdmx_registry_members *ms = NULL;

	cr_assert_rc(rdmx_registry_client_lookup(joiner, SERVICE, &ms), RDMX_OK);
	rdmx_registry_members_free(&ms);
}

static void opts_for(struct rdmx_registry_balancer_opts *o, enum rdmx_registry_pick pick)
{
	rdmx_registry_balancer_opts_init(o);
	o->url = srv.url;
	o->cfg = cli_cfg;
	o->service = SERVICE;
	o->timeout_ms = 5000;
	o->pick = pick;
	o->connect = fake_connect;
	o->disconnect = fake_disconnect;
	o->ep = fake_ep;
	o->arg = fakes;
	/* long enough that no back-off ends while a test runs */
	o->backoff_min_ms = 60000;
	o->backoff_max_ms = 60000;
}

static void create(enum rdmx_registry_pick pick)
{
	struct rdmx_registry_balancer_opts o;

	opts_for(&o, pick);
	cr_assert_rc(rdmx_registry_balancer_create(&o, &bal), RDMX_OK);
}

/* One whole call: pick, then done with status. Returns the fake picked. */
static struct fake *call(int status, uint64_t *member)
{
	void *conn = NULL;
	uint64_t id = 0;
	struct fake *f;

	cr_assert_rc(rdmx_registry_balancer_pick(bal, &conn, &id, NULL), RDMX_OK);
	cr_assert_not_null(conn);
	f = conn;
	cr_assert_eq(f->open, 1, "picked a closed connection");
	f->picks++;
	cr_assert_rc(rdmx_registry_balancer_done(bal, id, status), RDMX_OK);
	if (member)
		*member = id;
	return f;
}

Test(balancer, round_robin_spreads_picks_evenly_and_connects_lazily)
{
	for (int i = 0; i < 3; i++)
		join(i, 30000);
	create(RDMX_REGISTRY_PICK_ROUND_ROBIN);
	cr_assert_eq(rdmx_registry_balancer_count(bal), 3);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(fakes[i].connects, 0, "connected before the first pick");
	for (int k = 0; k < 30; k++)
		call(0, NULL);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(fakes[i].picks, 10, "%s picked %d times of 30", fakes[i].endpoint,
		             fakes[i].picks);
		cr_assert_eq(fakes[i].connects, 1, "one connection per member, kept");
	}
	rdmx_registry_balancer_destroy(&bal);
	cr_assert_null(bal);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(fakes[i].disconnects, 1, "destroy closes every connection");
}

Test(balancer, round_robin_consecutive_picks_differ)
{
	uint64_t prev = 0, id;

	join(0, 30000);
	join(1, 30000);
	create(RDMX_REGISTRY_PICK_ROUND_ROBIN);
	for (int k = 0; k < 10; k++) {
		call(0, &id);
		cr_assert_neq(id, prev, "the same member twice in a row");
		prev = id;
	}
}

Test(balancer, two_choices_prefers_the_idle_member)
{
	join(0, 30000);
	join(1, 30000);
	create(RDMX_REGISTRY_PICK_TWO_CHOICES);
	/* with two members both are the two choices: the one with the call in
	 * flight must lose every time */
	for (int k = 0; k < 40; k++) {
		void *c1 = NULL, *c2 = NULL;
		uint64_t m1 = 0, m2 = 0;

		cr_assert_rc(rdmx_registry_balancer_pick(bal, &c1, &m1, NULL), RDMX_OK);
		cr_assert_rc(rdmx_registry_balancer_pick(bal, &c2, &m2, NULL), RDMX_OK);
		cr_assert_neq(m1, m2, "round %d: the busy member was picked over the idle one", k);
		cr_assert_neq(c1, c2);
		((struct fake *)c1)->picks++;
		((struct fake *)c2)->picks++;
		cr_assert_rc(rdmx_registry_balancer_done(bal, m1, 0), RDMX_OK);
		cr_assert_rc(rdmx_registry_balancer_done(bal, m2, 0), RDMX_OK);
	}
	cr_assert_eq(fakes[0].picks, 40);
	cr_assert_eq(fakes[1].picks, 40);

	/* a call held on one member: the other takes every next one */
	{
		void *busy_conn = NULL, *c = NULL;
		uint64_t busy = 0, m = 0;

		cr_assert_rc(rdmx_registry_balancer_pick(bal, &busy_conn, &busy, NULL), RDMX_OK);
		cr_assert_rc(rdmx_registry_balancer_pick(bal, &c, &m, NULL), RDMX_OK);
		cr_assert_neq(m, busy);
		/* the other one's call ends: it is idle again, busy has one */
		cr_assert_rc(rdmx_registry_balancer_done(bal, m, 0), RDMX_OK);
		for (int k = 0; k < 20; k++) {
			cr_assert_rc(rdmx_registry_balancer_pick(bal, &c, &m, NULL), RDMX_OK);
			cr_assert_neq(m, busy, "pick %d went to the member with a call in flight",
			              k);
			cr_assert_rc(rdmx_registry_balancer_done(bal, m, 0), RDMX_OK);
		}
		cr_assert_rc(rdmx_registry_balancer_done(bal, busy, 0), RDMX_OK);
	}
}

Test(balancer, two_choices_with_one_member_picks_it)
{
	uint64_t id = join(2, 30000), got;

	create(RDMX_REGISTRY_PICK_TWO_CHOICES);
	for (int k = 0; k < 5; k++) {
		cr_assert_eq(call(0, &got), &fakes[2]);
		cr_assert_eq(got, id);
	}
}

Test(balancer, a_member_that_left_is_never_picked_again)
{
	uint64_t gone;

	join(0, 30000);
	gone = join(1, 30000);
	join(2, 30000);
	create(RDMX_REGISTRY_PICK_ROUND_ROBIN);
	for (int k = 0; k < 3; k++)
		call(0, NULL);
	cr_assert_eq(fakes[1].open, 1);

	cr_assert_rc(rdmx_registry_client_leave(joiner, gone), RDMX_OK);
	barrier();
	cr_assert_rc(rdmx_registry_balancer_refresh(bal), RDMX_OK);
	cr_assert_eq(rdmx_registry_balancer_count(bal), 2);
	cr_assert_eq(fakes[1].disconnects, 1, "the left member's connection is closed");
	cr_assert_eq(fakes[1].open, 0);
	fakes[1].picks = 0;
	for (int k = 0; k < 30; k++) {
		uint64_t id;

		call(0, &id);
		cr_assert_neq(id, gone, "pick %d chose the member that left", k);
	}
	cr_assert_eq(fakes[1].picks, 0);
	cr_assert_eq(fakes[0].picks + fakes[2].picks, 30 + 2);
	cr_assert_rc(rdmx_registry_balancer_done(bal, gone, 0), RDMX_E_NOT_FOUND);
}

Test(balancer, an_expired_member_is_never_picked_again)
{
	struct rdmx_registry_client *watcher = NULL;
	struct rdmx_registry_event *ev = NULL;
	uint64_t gone, id;

	/* watching before the member joins: its expiry cannot be missed */
	cr_assert_rc(rdmx_registry_client_open(srv.url, cli_cfg, 5000, &watcher), RDMX_OK);
	cr_assert_rc(rdmx_registry_client_watch(watcher, SERVICE), RDMX_OK);
	join(0, 30000);
	gone = join(1, 100); /* the server's minimum lease, never renewed */
	create(RDMX_REGISTRY_PICK_TWO_CHOICES);
	/* the lease may already have run out before create looked it up: then
	 * the member is simply unknown, which is what this test wants too */
	for (;;) {
		/* the timeout is a failure guard: the expiry comes after ~100 ms */
		cr_assert_rc(rdmx_registry_client_next_event(watcher, 10000, &ev), RDMX_OK);
		if (ev->type == RDMX_REGISTRY_EXPIRED && ev->member.id == gone)
			break;
		rdmx_registry_event_free(&ev);
	}
	rdmx_registry_event_free(&ev);
	rdmx_registry_client_destroy(&watcher);
	barrier();
	cr_assert_rc(rdmx_registry_balancer_refresh(bal), RDMX_OK);
	cr_assert_eq(rdmx_registry_balancer_count(bal), 1);
	for (int k = 0; k < 20; k++) {
		cr_assert_eq(call(0, &id), &fakes[0]);
		cr_assert_neq(id, gone);
	}
	cr_assert_eq(fakes[1].picks, 0);
}

Test(balancer, a_member_that_joins_later_is_picked)
{
	void *conn = NULL;
	uint64_t id = 0, joined;

	create(RDMX_REGISTRY_PICK_ROUND_ROBIN);
	cr_assert_eq(rdmx_registry_balancer_count(bal), 0);
	cr_assert_rc(rdmx_registry_balancer_pick(bal, &conn, &id, NULL), RDMX_E_NOT_FOUND);
	joined = join(3, 30000);
	barrier();
	/* pick applies the watch events itself */
	cr_assert_eq(call(0, &id), &fakes[3]);
	cr_assert_eq(id, joined);
	cr_assert_eq(rdmx_registry_balancer_count(bal), 1);
}

Test(balancer, a_failing_connect_backs_off_and_is_skipped)
{
	void *conn = NULL;
	uint64_t id = 0;
	uint32_t wait = 0;

	join(0, 30000);
	join(1, 30000);
	fakes[0].fail = RDMX_E_DISCONNECTED;
	create(RDMX_REGISTRY_PICK_ROUND_ROBIN);
	for (int k = 0; k < 20; k++)
		cr_assert_eq(call(0, NULL), &fakes[1], "pick %d: not the healthy member", k);
	cr_assert_eq(fakes[0].connects, 1, "the failed member was tried %d times while backing off",
	             fakes[0].connects);
	cr_assert_eq(fakes[0].picks, 0);
	cr_assert_eq(rdmx_registry_balancer_count(bal), 2, "backing off is not dropped");
	cr_assert(tls_test_log_contains("backing off"));

	/* the healthy one fails at the transport: closed, backing off too */
	cr_assert_rc(rdmx_registry_balancer_pick(bal, &conn, &id, NULL), RDMX_OK);
	cr_assert_eq(conn, &fakes[1]);
	cr_assert_rc(rdmx_registry_balancer_done(bal, id, RDMX_E_DISCONNECTED), RDMX_OK);
	cr_assert_eq(fakes[1].disconnects, 1, "a transport failure closes the connection");
	cr_assert_eq(fakes[1].open, 0);

	/* both back off: nothing to pick, and when to try again (the first
	 * back-off is backoff_min_ms with jitter over its upper half) */
	wait = 0;
	cr_assert_rc(rdmx_registry_balancer_pick(bal, &conn, &id, &wait), RDMX_E_AGAIN);
	cr_assert(wait > 0 && wait <= 60000, "wait_ms %u", wait);
	cr_assert_rc(rdmx_registry_balancer_pick(bal, &conn, &id, NULL), RDMX_E_AGAIN);
	cr_assert_eq(fakes[0].connects, 1);
	cr_assert_eq(fakes[1].connects, 1, "a backing-off member is not reconnected");
	cr_assert_eq(rdmx_registry_balancer_count(bal), 2);
}

Test(balancer, a_call_answered_by_the_member_keeps_it)
{
	join(0, 30000);
	create(RDMX_REGISTRY_PICK_ROUND_ROBIN);
	/* an RPC status > 0 means the member answered: no back-off */
	for (int k = 0; k < 5; k++)
		cr_assert_eq(call(RDMX_RPC_NOT_FOUND, NULL), &fakes[0]);
	cr_assert_eq(call(RDMX_RPC_UNAVAILABLE, NULL), &fakes[0]);
	cr_assert_eq(call(0, NULL), &fakes[0]);
	cr_assert_eq(fakes[0].connects, 1);
	cr_assert_eq(fakes[0].disconnects, 0);
}

Test(balancer, all_members_failing_to_connect_is_again_not_not_found)
{
	void *conn = NULL;
	uint64_t id = 0;
	uint32_t wait = 0;

	join(0, 30000);
	join(1, 30000);
	fakes[0].fail = RDMX_E_TIMEDOUT;
	fakes[1].fail = RDMX_E_DISCONNECTED;
	create(RDMX_REGISTRY_PICK_TWO_CHOICES);
	cr_assert_rc(rdmx_registry_balancer_pick(bal, &conn, &id, &wait), RDMX_E_AGAIN);
	cr_assert(wait > 0 && wait <= 60000, "wait_ms %u", wait);
	cr_assert_eq(fakes[0].connects, 1, "each member tried once in one pick");
	cr_assert_eq(fakes[1].connects, 1);
	cr_assert_rc(rdmx_registry_balancer_pick(bal, &conn, &id, &wait), RDMX_E_AGAIN);
	cr_assert_eq(fakes[0].connects + fakes[1].connects, 2);
}

Test(balancer, may_retry_follows_reach_idempotency_and_budget)
{
	struct rdmx_registry_balancer_opts o;

	join(0, 30000);
	opts_for(&o, RDMX_REGISTRY_PICK_ROUND_ROBIN);
	o.retry_budget_min = 2;
	o.retry_budget_percent = 50;
	cr_assert_rc(rdmx_registry_balancer_create(&o, &bal), RDMX_OK);

	/* never retried, and not counted against the budget */
	cr_assert_eq(rdmx_registry_balancer_may_retry(bal, RDMX_RPC_UNAVAILABLE, 1, 0), 0,
	             "a non-idempotent call that reached the server");
	cr_assert_eq(rdmx_registry_balancer_may_retry(bal, RDMX_E_DISCONNECTED, 1, 0), 0);
	cr_assert_eq(rdmx_registry_balancer_may_retry(bal, 0, 0, 1), 0, "a success");
	cr_assert_eq(rdmx_registry_balancer_may_retry(bal, RDMX_RPC_NOT_FOUND, 0, 1), 0,
	             "an answer other than UNAVAILABLE");
	cr_assert_eq(rdmx_registry_balancer_may_retry(bal, RDMX_RPC_DEADLINE_EXCEEDED, 1, 1), 0);

	/* the budget: retry_budget_min before any call */
	cr_assert_eq(rdmx_registry_balancer_may_retry(bal, RDMX_RPC_UNAVAILABLE, 0, 0), 1,
	             "UNAVAILABLE, never reached the server");
	cr_assert_eq(rdmx_registry_balancer_may_retry(bal, RDMX_E_DISCONNECTED, 1, 1), 1,
	             "an idempotent call that reached the server");
	cr_assert_eq(rdmx_registry_balancer_may_retry(bal, RDMX_RPC_UNAVAILABLE, 0, 0), 0,
	             "the budget is spent");
	cr_assert_eq(rdmx_registry_balancer_may_retry(bal, RDMX_E_TIMEDOUT, 1, 1), 0);

	/* it grows by retry_budget_percent of the calls: 4 calls -> 2 more */
	for (int k = 0; k < 4; k++)
		call(0, NULL);
	cr_assert_eq(rdmx_registry_balancer_may_retry(bal, RDMX_RPC_UNAVAILABLE, 0, 1), 1);
	cr_assert_eq(rdmx_registry_balancer_may_retry(bal, RDMX_E_DISCONNECTED, 0, 0), 1);
	cr_assert_eq(rdmx_registry_balancer_may_retry(bal, RDMX_RPC_UNAVAILABLE, 0, 0), 0);
	cr_assert_eq(rdmx_registry_balancer_may_retry(NULL, RDMX_RPC_UNAVAILABLE, 0, 0), 0);
}

Test(balancer, default_budget_is_ten_retries_before_any_call)
{
	int n = 0;

	create(RDMX_REGISTRY_PICK_ROUND_ROBIN);
	while (n < 100 && rdmx_registry_balancer_may_retry(bal, RDMX_RPC_UNAVAILABLE, 0, 0))
		n++;
	cr_assert_eq(n, 10, "%d retries allowed with the default budget", n);
}

Test(balancer, bad_arguments_are_refused)
{
	struct rdmx_registry_balancer_opts o;
	struct rdmx_registry_balancer *b = NULL;
	void *conn = NULL;
	uint64_t id = 0;

	rdmx_registry_balancer_opts_init(NULL);
	opts_for(&o, RDMX_REGISTRY_PICK_ROUND_ROBIN);
	cr_assert_rc(rdmx_registry_balancer_create(NULL, &b), RDMX_E_INVAL);
	cr_assert_rc(rdmx_registry_balancer_create(&o, NULL), RDMX_E_INVAL);
	o.url = NULL;
	cr_assert_rc(rdmx_registry_balancer_create(&o, &b), RDMX_E_INVAL);
	opts_for(&o, RDMX_REGISTRY_PICK_ROUND_ROBIN);
	o.connect = NULL;
	cr_assert_rc(rdmx_registry_balancer_create(&o, &b), RDMX_E_INVAL);
	opts_for(&o, RDMX_REGISTRY_PICK_ROUND_ROBIN);
	o.service = NULL;
	cr_assert_rc(rdmx_registry_balancer_create(&o, &b), RDMX_E_INVAL);
	o.service = "not a service";
	cr_assert_rc(rdmx_registry_balancer_create(&o, &b), RDMX_E_INVAL);
	o.service = "";
	cr_assert_rc(rdmx_registry_balancer_create(&o, &b), RDMX_E_INVAL);
	opts_for(&o, (enum rdmx_registry_pick)7);
	cr_assert_rc(rdmx_registry_balancer_create(&o, &b), RDMX_E_INVAL);
	opts_for(&o, RDMX_REGISTRY_PICK_ROUND_ROBIN);
	o.url = "not a registry address";
	cr_assert_rc(rdmx_registry_balancer_create(&o, &b), RDMX_E_INVAL);
	cr_assert_null(b);

	cr_assert_rc(rdmx_registry_balancer_destroy(NULL), RDMX_OK);
	cr_assert_rc(rdmx_registry_balancer_destroy(&b), RDMX_OK);
	cr_assert_rc(rdmx_registry_balancer_refresh(NULL), RDMX_E_INVAL);
	cr_assert_rc(rdmx_registry_balancer_pick(NULL, &conn, &id, NULL), RDMX_E_INVAL);
	cr_assert_rc(rdmx_registry_balancer_done(NULL, 1, 0), RDMX_E_INVAL);
	cr_assert_eq(rdmx_registry_balancer_count(NULL), 0);

	join(0, 30000);
	create(RDMX_REGISTRY_PICK_ROUND_ROBIN);
	cr_assert_rc(rdmx_registry_balancer_pick(bal, NULL, &id, NULL), RDMX_E_INVAL);
	cr_assert_rc(rdmx_registry_balancer_pick(bal, &conn, NULL, NULL), RDMX_E_INVAL);
	cr_assert_rc(rdmx_registry_balancer_done(bal, 424242, 0), RDMX_E_NOT_FOUND);
	cr_assert_eq(fakes[0].connects, 0, "refused calls connect nothing");
}

/* ---- rdmx_registry_balancer_call: the retry decisions on the call path ---- */

static int eps_total(void)
{
	int n = 0;

	for (int i = 0; i < MAX_FAKE; i++)
		n += fakes[i].eps;
	return n;
}

Test(balancer, call_never_sent_fails_over_to_every_member_whatever_the_method)
{
	struct rdmx_rpc_call_opts co = {10u * 1000000u, false};
	struct rdmx_rpc_reply r;

	for (int i = 0; i < 3; i++)
		join(i, 30000);
	create(RDMX_REGISTRY_PICK_ROUND_ROBIN);
	/* not idempotent: still retried, the request never went out */
	cr_assert_rc(rdmx_registry_balancer_call(bal, 7, NULL, &co, false, &r), RDMX_OK);
	cr_assert_eq(r.code, RDMX_RPC_UNAVAILABLE);
	cr_assert_not(r.reached);
	cr_assert_not_null(r.message);
	cr_assert(strstr(r.message, "no member of " SERVICE " can be reached"), "message: %s",
	          r.message);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(fakes[i].eps, 1, "member %d tried %d times", i, fakes[i].eps);
		cr_assert_eq(fakes[i].open, 0, "a failed member's connection is closed");
	}
	/* three failovers; the back-off (30-60 s) is past the deadline: no wait */
	cr_assert_eq(rdmx_registry_balancer_get_retries(bal), 3);
	rdmx_rpc_reply_fini(&r);
}

Test(balancer, call_retries_stop_when_the_budget_is_spent)
{
	struct rdmx_registry_balancer_opts o;
	struct rdmx_rpc_reply r;

	for (int i = 0; i < 3; i++)
		join(i, 30000);
	opts_for(&o, RDMX_REGISTRY_PICK_ROUND_ROBIN);
	o.retry_budget_min = 1;
	o.retry_budget_percent = 1;
	cr_assert_rc(rdmx_registry_balancer_create(&o, &bal), RDMX_OK);
	cr_assert_rc(rdmx_registry_balancer_call(bal, 7, NULL, NULL, true, &r), RDMX_OK);
	cr_assert_eq(r.code, RDMX_RPC_UNAVAILABLE);
	cr_assert_eq(eps_total(), 2, "one attempt and one retry, got %d attempts", eps_total());
	cr_assert_eq(rdmx_registry_balancer_get_retries(bal), 1);
	rdmx_rpc_reply_fini(&r);
	/* spent: the next call gets one attempt */
	cr_assert_rc(rdmx_registry_balancer_call(bal, 7, NULL, NULL, true, &r), RDMX_OK);
	cr_assert_eq(r.code, RDMX_RPC_UNAVAILABLE);
	cr_assert_eq(eps_total(), 3);
	rdmx_rpc_reply_fini(&r);
}

Test(balancer, call_is_not_retried_past_its_deadline)
{
	struct rdmx_rpc_call_opts co = {200000, false}; /* 200 ms */
	struct rdmx_rpc_reply r;

	for (int i = 0; i < 3; i++)
		join(i, 30000);
	create(RDMX_REGISTRY_PICK_ROUND_ROBIN);
	spin_ep_us = 300000; /* the first attempt outlives the deadline */
	cr_assert_rc(rdmx_registry_balancer_call(bal, 7, NULL, &co, true, &r), RDMX_OK);
	cr_assert_eq(r.code, RDMX_RPC_UNAVAILABLE);
	cr_assert_eq(eps_total(), 1, "retried past the deadline: %d attempts", eps_total());
	cr_assert_eq(rdmx_registry_balancer_get_retries(bal), 0);
	rdmx_rpc_reply_fini(&r);
}

Test(balancer, call_whose_deadline_passed_while_connecting_is_deadline_exceeded)
{
	struct rdmx_rpc_call_opts co = {200000, false};
	struct rdmx_rpc_reply r;

	join(0, 30000);
	create(RDMX_REGISTRY_PICK_ROUND_ROBIN);
	spin_connect_us = 300000;
	cr_assert_rc(rdmx_registry_balancer_call(bal, 7, NULL, &co, true, &r), RDMX_OK);
	cr_assert_eq(r.code, RDMX_RPC_DEADLINE_EXCEEDED);
	cr_assert_eq(fakes[0].eps, 0, "nothing is sent once the deadline passed");
	cr_assert_eq(fakes[0].open, 1, "the member is kept: it did nothing wrong");
	rdmx_rpc_reply_fini(&r);
}

Test(balancer, call_with_no_member_registered_names_the_service)
{
	struct rdmx_rpc_reply r;

	create(RDMX_REGISTRY_PICK_TWO_CHOICES);
	cr_assert_rc(rdmx_registry_balancer_call(bal, 7, NULL, NULL, true, &r), RDMX_OK);
	cr_assert_eq(r.code, RDMX_RPC_UNAVAILABLE);
	cr_assert_not(r.reached);
	cr_assert(strstr(r.message, "no member of " SERVICE " is registered"), "%s", r.message);
	rdmx_rpc_reply_fini(&r);
}

Test(balancer, call_bad_arguments_are_refused)
{
	struct rdmx_registry_balancer_opts o;
	struct rdmx_rpc_call_opts oneway = {0, true};
	struct rdmx_rpc_reply r;

	join(0, 30000);
	cr_assert_rc(rdmx_registry_balancer_call(NULL, 7, NULL, NULL, true, &r), RDMX_E_INVAL);
	opts_for(&o, RDMX_REGISTRY_PICK_ROUND_ROBIN);
	o.ep = NULL;
	cr_assert_rc(rdmx_registry_balancer_create(&o, &bal), RDMX_OK);
	cr_assert_rc(rdmx_registry_balancer_call(bal, 7, NULL, NULL, true, &r), RDMX_E_INVAL);
	rdmx_registry_balancer_destroy(&bal);
	create(RDMX_REGISTRY_PICK_ROUND_ROBIN);
	cr_assert_rc(rdmx_registry_balancer_call(bal, 7, NULL, NULL, true, NULL), RDMX_E_INVAL);
	cr_assert_rc(rdmx_registry_balancer_call(bal, 7, NULL, &oneway, true, &r), RDMX_E_INVAL);
	cr_assert_eq(fakes[0].connects, 0, "refused calls connect nothing");
	cr_assert_eq(rdmx_registry_balancer_get_retries(NULL), 0);
}
