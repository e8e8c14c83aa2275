/* RPC: an endpoint whose channel closes — destroyed from inside its own
 * close (a held call's cancel callback, a call's completion), and what it
 * counts afterwards (active calls, drained); when an endpoint is drained
 * (rdmx_rpc_ep_is_drained and its callback agree), and the order of the
 * closed and drained callbacks; an endpoint destroyed by its closed callback
 * inside a send the engine refused (respond, cancel, the deadline's
 * CANCEL, drain's GOAWAY). */
#include "rpcfix.h"

#include "chan_internal.h"   /* peer_light */
#include "engine/internal.h" /* rdmx__conn_fail_posts */

#include <string.h>

static uint32_t ECHO, HOLD;

static int closed_n;
static void count_closed(struct rdmx_rpc_ep *ep, int status, void *arg)
{
	(void)ep;
	(void)status;
	(void)arg;
	closed_n++;
}

/* What the drained callback ran (and how often is_drained answered true
 * inside it), and what the closed callback saw of it. */
static int drained_n, drained_said, drained_n_at_close;
static bool drained_at_close;
static void count_drained(struct rdmx_rpc_ep *ep, void *arg)
{
	(void)arg;
	drained_n++;
	drained_said += rdmx_rpc_ep_is_drained(ep);
}

/* The set-up of every test here: nodes a and b, the echo server on b, a's
 * endpoint ra the client, b's rb the server's; close_fix_close ends it. */
struct close_fix {
	struct node a, b;
	struct echo_state st;
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
};

static void close_fix_open(struct close_fix *f)
{
	memset(f, 0, sizeof(*f));
	ECHO = rdmx_rpc_method_id(ECHO_NAME);
	HOLD = rdmx_rpc_method_id(HOLD_NAME);
	closed_n = 0;
	drained_n = drained_said = drained_n_at_close = 0;
	drained_at_close = false;
	echo_pair_open(&f->a, &f->b, NULL, &f->st, &f->srv, &f->ra, &f->rb);
}

static void close_fix_close(struct close_fix *f)
{
	rpc_pair_close_all(&f->ra, &f->rb, &f->srv, &f->a, &f->b);
}

/* One side's endpoint and channel go: the other side's channel closes. */
static void side_goes(struct rdmx_rpc_ep **ep)
{
	struct rdmx_chan *chan = rdmx_rpc_ep_get_chan(*ep);

	ASSERT_OK(rdmx_rpc_ep_destroy(ep));
	ASSERT_OK(rdmx_chan_destroy(&chan));
}

/* Held calls whose cancel callbacks tear their endpoint down (the first to
 * run: endpoint, then channel, the documented order) and answer their call. */
#define SD_CALLS 3
struct self_destroy {
	struct rdmx_rpc_ep **ep;
	struct rdmx_chan **chan;
	struct rdmx_rpc_server_call *call[SD_CALLS];
	int runs[SD_CALLS];
	int nested; /* cancel callbacks run inside the destroy */
	bool in_destroy;
	int answered;
};

static void destroy_cancel_cb(struct rdmx_rpc_server_call *call, void *arg)
{
	struct self_destroy *sd = arg;
	int i = 0;

	while (i < SD_CALLS && sd->call[i] != call)
		i++;
	cr_assert_lt(i, SD_CALLS, "a cancel callback of a call the test does not hold");
	sd->runs[i]++;
	if (sd->in_destroy)
		sd->nested++;
	if (*sd->ep) {
		sd->in_destroy = true;
		ASSERT_OK(rdmx_rpc_ep_destroy(sd->ep));
		sd->in_destroy = false;
		cr_assert_null(*sd->ep);
		ASSERT_OK(rdmx_chan_destroy(sd->chan));
	}
	ASSERT_OK(rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, NULL));
	sd->answered++;
}

/* The destroy waits for the close's walk over the held calls: no cancel
 * callback runs inside it, the walk goes on (each callback once, each
 * call answerable in it), the channel may be destroyed at once, the
 * closed callback does not run, and the server is let go (its destroy
 * succeeds). Under ASan, the walk resuming over freed calls showed here. */
Test(rpc, cancel_cb_destroys_its_endpoint)
{
	struct close_fix f;
	struct self_destroy sd = {0};
	struct rdmx_chan *chb;
	struct call_rec r[SD_CALLS];

	memset(r, 0, sizeof(r));
	close_fix_open(&f);
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(f.rb, count_closed, NULL));
	for (int i = 0; i < SD_CALLS; i++)
		ASSERT_OK(rdmx_rpc_call_async(f.ra, HOLD, NULL, NULL, call_rec_cb, &r[i], NULL));
	DRIVE_UNTIL(&f.a, &f.b, f.st.held_n == SD_CALLS);
	chb = rdmx_rpc_ep_get_chan(f.rb);
	sd.ep = &f.rb;
	sd.chan = &chb;
	for (int i = 0; i < SD_CALLS; i++) {
		sd.call[i] = f.st.held[i];
		ASSERT_OK(rdmx_rpc_call_set_cancel_cb(sd.call[i], destroy_cancel_cb, &sd));
	}
	side_goes(&f.ra);
	DRIVE_UNTIL(&f.a, &f.b, sd.answered == SD_CALLS);
	drive_for(&f.a, &f.b, 20);
	cr_assert_null(f.rb);
	cr_assert_null(chb);
	for (int i = 0; i < SD_CALLS; i++)
		cr_assert_eq(sd.runs[i], 1, "call %d: cancel callback ran %d times", i, sd.runs[i]);
	cr_assert_eq(sd.nested, 0, "%d cancel callbacks ran inside the destroy", sd.nested);
	cr_assert_eq(closed_n, 0, "the closed callback ran after the destroy");
	close_fix_close(&f);
}

/* A callback that tears its endpoint down (endpoint, then channel: the
 * documented order) and counts its runs; one body for each callback type
 * (teardown_run), the completion's form also keeps the call's code, the
 * closed callback's the close's status. */
struct teardown {
	struct rdmx_rpc_ep **ep;
	struct rdmx_chan **chan;
	int runs;
	enum rdmx_rpc_code code;
	int status;
};

static void teardown_run(struct teardown *d)
{
	d->runs++;
	if (*d->ep) {
		ASSERT_OK(rdmx_rpc_ep_destroy(d->ep));
		ASSERT_OK(rdmx_chan_destroy(d->chan));
	}
}

static void teardown_done_cb(const struct rdmx_rpc_result *res, void *arg)
{
	struct teardown *d = arg;

	d->code = res->code;
	teardown_run(d);
}

static void teardown_drained_cb(struct rdmx_rpc_ep *ep, void *arg)
{
	(void)ep;
	teardown_run(arg);
}

static void teardown_closed_cb(struct rdmx_rpc_ep *ep, int status, void *arg)
{
	struct teardown *d = arg;

	(void)ep;
	d->status = status;
	teardown_run(d);
}

/* The close fails the client's call; its completion destroys the endpoint:
 * the endpoint's closed callback does not run after that. */
Test(rpc, completion_destroys_its_endpoint_no_closed_cb)
{
	struct close_fix f;
	struct teardown d = {0};
	struct rdmx_chan *cha;

	close_fix_open(&f);
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(f.ra, count_closed, NULL));
	cha = rdmx_rpc_ep_get_chan(f.ra);
	d.ep = &f.ra;
	d.chan = &cha;
	ASSERT_OK(rdmx_rpc_call_async(f.ra, HOLD, NULL, NULL, teardown_done_cb, &d, NULL));
	DRIVE_UNTIL(&f.a, &f.b, f.st.held_n == 1);
	side_goes(&f.rb);
	DRIVE_UNTIL(&f.a, &f.b, d.runs);
	drive_for(&f.a, &f.b, 20);
	cr_assert_eq(d.runs, 1);
	cr_assert_eq(d.code, RDMX_RPC_UNAVAILABLE, "%s", rdmx_rpc_code_name(d.code));
	cr_assert_null(f.ra);
	cr_assert_eq(closed_n, 0, "the closed callback ran after the destroy");
	ASSERT_OK(rdmx_rpc_respond(f.st.held[0], RDMX_RPC_OK, NULL, NULL)); /* detached */
	close_fix_close(&f);
}

/* What the closed callback saw. */
static uint32_t active_at_close;
static void active_closed(struct rdmx_rpc_ep *ep, int status, void *arg)
{
	(void)status;
	(void)arg;
	active_at_close = rdmx_rpc_ep_get_active(ep);
	closed_n++;
}

/* Answers handed to the channel and not yet delivered when the peer goes
 * can never complete: after the close the endpoint's active count is its
 * unanswered calls only. The server's answers go as write tasks, as on
 * verbs (on tcp a light message would be gone at once, nothing on its way). */
Test(rpc, active_counts_no_answer_of_a_closed_channel)
{
	struct close_fix f;
	enum { N = 8 };
	struct call_rec r[N];

	memset(r, 0, sizeof(r));
	close_fix_open(&f);
	rdmx_rpc_ep_get_chan(f.rb)->peer_light = false;
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(f.rb, active_closed, NULL));
	for (int i = 0; i < N; i++)
		ASSERT_OK(rdmx_rpc_call_async(f.ra, HOLD, NULL, NULL, call_rec_cb, &r[i], NULL));
	DRIVE_UNTIL(&f.a, &f.b, f.st.held_n == N);
	for (int i = 0; i < N - 1; i++) /* the last one stays held */
		ASSERT_OK(rdmx_rpc_respond(f.st.held[i], RDMX_RPC_OK, NULL, NULL));
	cr_assert_eq(rdmx_rpc_ep_get_active(f.rb), N, "answers on their way count while open");
	side_goes(&f.ra); /* before a read any answer */
	DRIVE_UNTIL(&f.a, &f.b, closed_n == 1);
	cr_assert_eq(active_at_close, 1, "active %u in the closed callback", active_at_close);
	cr_assert_eq(rdmx_rpc_ep_get_active(f.rb), 1);
	ASSERT_OK(rdmx_rpc_respond(f.st.held[N - 1], RDMX_RPC_OK, NULL, NULL));
	cr_assert_eq(rdmx_rpc_ep_get_active(f.rb), 0);
	close_fix_close(&f);
}

/* A closed callback given an argument destroys that endpoint and channel. */
static void drained_closed(struct rdmx_rpc_ep *ep, int status, void *arg)
{
	struct rdmx_rpc_ep **own = arg;

	(void)status;
	drained_at_close = rdmx_rpc_ep_is_drained(ep);
	drained_n_at_close = drained_n;
	closed_n++;
	if (own)
		side_goes(own);
}

/* The server drains, answers every call it holds, and the client goes
 * before any answer was delivered. The answers can never be sent: once the
 * channel closed they no longer keep the endpoint from being drained (as
 * rdmx_rpc_ep_get_active counts them no more), so it is drained in its
 * closed callback, the drained callback runs from the close, after the
 * closed callback, and it runs once, whatever completions come back later.
 * The answers go as write tasks, as on verbs (see above). */
Test(rpc, drained_counts_no_answer_of_a_closed_channel)
{
	struct close_fix f;
	enum { N = 8 };
	struct call_rec r[N];

	memset(r, 0, sizeof(r));
	close_fix_open(&f);
	rdmx_rpc_ep_get_chan(f.rb)->peer_light = false;
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(f.rb, drained_closed, NULL));
	ASSERT_OK(rdmx_rpc_ep_set_drained_cb(f.rb, count_drained, NULL));
	for (int i = 0; i < N; i++)
		ASSERT_OK(rdmx_rpc_call_async(f.ra, HOLD, NULL, NULL, call_rec_cb, &r[i], NULL));
	DRIVE_UNTIL(&f.a, &f.b, f.st.held_n == N);
	ASSERT_OK(rdmx_rpc_ep_drain(f.rb));
	for (int i = 0; i < N; i++)
		ASSERT_OK(rdmx_rpc_respond(f.st.held[i], RDMX_RPC_OK, NULL, NULL));
	cr_assert_not(rdmx_rpc_ep_is_drained(f.rb), "drained with answers on their way, open");
	cr_assert_eq(drained_n, 0);
	side_goes(&f.ra); /* before a read any answer */
	DRIVE_UNTIL(&f.a, &f.b, closed_n == 1);
	cr_assert(drained_at_close, "not drained in the closed callback");
	cr_assert_eq(drained_n_at_close, 0, "the drained callback ran before the closed one");
	cr_assert_eq(drained_n, 1, "the close ran the drained callback %d times", drained_n);
	drive_for(&f.a, &f.b, 20); /* observation window: the answers' failed completions */
	cr_assert_eq(drained_n, 1, "the drained callback ran %d times", drained_n);
	cr_assert(rdmx_rpc_ep_is_drained(f.rb));
	close_fix_close(&f);
}

/* The server answers every call it holds and the answers are delivered;
 * then it drains, and the client goes before it acknowledged anything (a
 * few messages owe it no credit update yet). All the endpoint waited for
 * was those acknowledgements (its GOAWAY's among them), which no event
 * will bring now: the close itself runs the drained callback, once. */
Test(rpc, drained_cb_runs_from_the_close)
{
	struct close_fix f;
	enum { N = 4 };
	struct call_rec r[N];

	memset(r, 0, sizeof(r));
	close_fix_open(&f);
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(f.rb, drained_closed, NULL));
	ASSERT_OK(rdmx_rpc_ep_set_drained_cb(f.rb, count_drained, NULL));
	for (int i = 0; i < N; i++)
		ASSERT_OK(rdmx_rpc_call_async(f.ra, HOLD, NULL, NULL, call_rec_cb, &r[i], NULL));
	DRIVE_UNTIL(&f.a, &f.b, f.st.held_n == N);
	for (int i = 0; i < N; i++)
		ASSERT_OK(rdmx_rpc_respond(f.st.held[i], RDMX_RPC_OK, NULL, NULL));
	DRIVE_UNTIL(&f.a, &f.b, call_recs_done(r, N) == N && rdmx_rpc_ep_get_active(f.rb) == 0);
	ASSERT_OK(rdmx_rpc_ep_drain(f.rb));
	side_goes(&f.ra);
	DRIVE_UNTIL(&f.a, &f.b, closed_n == 1);
	cr_assert(drained_at_close, "not drained in the closed callback");
	cr_assert_eq(drained_n, 1, "the drained callback ran %d times by the close", drained_n);
	drive_for(&f.a, &f.b, 20);
	cr_assert_eq(drained_n, 1, "the drained callback ran %d times", drained_n);
	close_fix_close(&f);
}

/* The same close as above, with a closed callback that destroys the
 * endpoint: the drained callback does not run after the destroy. */
Test(rpc, drained_cb_not_after_destroy_in_closed_cb)
{
	struct close_fix f;
	enum { N = 4 };
	struct call_rec r[N];

	memset(r, 0, sizeof(r));
	close_fix_open(&f);
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(f.rb, drained_closed, &f.rb));
	ASSERT_OK(rdmx_rpc_ep_set_drained_cb(f.rb, count_drained, NULL));
	for (int i = 0; i < N; i++)
		ASSERT_OK(rdmx_rpc_call_async(f.ra, HOLD, NULL, NULL, call_rec_cb, &r[i], NULL));
	DRIVE_UNTIL(&f.a, &f.b, f.st.held_n == N);
	for (int i = 0; i < N; i++)
		ASSERT_OK(rdmx_rpc_respond(f.st.held[i], RDMX_RPC_OK, NULL, NULL));
	DRIVE_UNTIL(&f.a, &f.b, call_recs_done(r, N) == N && rdmx_rpc_ep_get_active(f.rb) == 0);
	ASSERT_OK(rdmx_rpc_ep_drain(f.rb));
	side_goes(&f.ra);
	DRIVE_UNTIL(&f.a, &f.b, closed_n == 1);
	drive_for(&f.a, &f.b, 20);
	cr_assert_null(f.rb);
	cr_assert_eq(drained_n, drained_n_at_close, "the drained callback ran after the destroy");
	close_fix_close(&f);
}

/* Drained means nothing of ours is outstanding and the peer knows we go
 * away. With nothing in flight, rdmx_rpc_ep_drain does not make the
 * endpoint drained (its GOAWAY is not acknowledged yet): is_drained
 * answers false and the callback has not run; both turn once the GOAWAY is
 * acknowledged, when the peer refuses new calls (it saw the GOAWAY). */
Test(rpc, drain_with_nothing_in_flight_waits_for_the_goaway)
{
	struct close_fix f;
	struct call_rec r = {0};

	close_fix_open(&f);
	ASSERT_OK(rdmx_rpc_ep_set_drained_cb(f.ra, count_drained, NULL));
	ASSERT_OK(rdmx_rpc_ep_drain(f.ra));
	cr_assert_eq(drained_n, 0, "the drained callback ran from rdmx_rpc_ep_drain");
	cr_assert_not(rdmx_rpc_ep_is_drained(f.ra), "drained before the GOAWAY was acknowledged");
	DRIVE_UNTIL(&f.a, &f.b, drained_n == 1);
	cr_assert(rdmx_rpc_ep_is_drained(f.ra));
	cr_assert_eq(drained_said, 1, "is_drained answered false in the drained callback");
	ASSERT_RC(rdmx_rpc_call_async(f.rb, HOLD, NULL, NULL, call_rec_cb, &r, NULL),
	          RDMX_E_BAD_STATE);
	drive_for(&f.a, &f.b, 20);
	cr_assert_eq(drained_n, 1, "the drained callback ran %d times", drained_n);
	cr_assert(rdmx_rpc_ep_is_drained(f.ra));
	close_fix_close(&f);
}

static void answer_cancel_cb(struct rdmx_rpc_server_call *call, void *arg)
{
	(void)arg;
	ASSERT_OK(rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, NULL));
}

/* The server drains holding one call, and the client goes: the close runs
 * the held call's cancel callback, which answers the call, the last thing
 * the drain waited for. The closed callback still runs first, the drained
 * callback after it, once. */
Test(rpc, drained_cb_after_closed_cb_when_a_cancel_cb_answers)
{
	struct close_fix f;
	struct call_rec r = {0};

	close_fix_open(&f);
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(f.rb, drained_closed, NULL));
	ASSERT_OK(rdmx_rpc_ep_set_drained_cb(f.rb, count_drained, NULL));
	ASSERT_OK(rdmx_rpc_call_async(f.ra, HOLD, NULL, NULL, call_rec_cb, &r, NULL));
	DRIVE_UNTIL(&f.a, &f.b, f.st.held_n == 1);
	ASSERT_OK(rdmx_rpc_call_set_cancel_cb(f.st.held[0], answer_cancel_cb, NULL));
	ASSERT_OK(rdmx_rpc_ep_drain(f.rb));
	side_goes(&f.ra);
	DRIVE_UNTIL(&f.a, &f.b, closed_n == 1);
	cr_assert_eq(drained_n_at_close, 0, "the drained callback ran before the closed one");
	cr_assert(drained_at_close, "not drained in the closed callback");
	cr_assert_eq(drained_n, 1, "the close ran the drained callback %d times", drained_n);
	drive_for(&f.a, &f.b, 20);
	cr_assert_eq(drained_n, 1, "the drained callback ran %d times", drained_n);
	cr_assert_eq(drained_said, 1);
	close_fix_close(&f);
}

/* How many of the one-way calls (arg) had completed when the closed
 * callback ran. */
#define OW_CALLS 4
static int oneways_at_close;
static void oneways_closed(struct rdmx_rpc_ep *ep, int status, void *arg)
{
	(void)ep;
	(void)status;
	oneways_at_close = call_recs_done(arg, OW_CALLS);
	closed_n++;
}

/* One-way calls with a callback whose sends have not come back when the
 * channel closes end with the close, as the calls waiting for a reply do:
 * UNAVAILABLE, before the closed callback; the draining endpoint is drained
 * at the end of the close (as rdmx_rpc_ep_get_active counts: nothing
 * awaited of a closed channel), and the sends' completions, failed or not,
 * run no callback again. The channel closes here on its own side (as a
 * failed task closes it), before a poll could take any send's completion. */
Test(rpc, oneway_calls_end_with_the_close)
{
	struct close_fix f;
	struct call_rec r[OW_CALLS];
	struct rdmx_rpc_call_opts ow = {.oneway = true};

	memset(r, 0, sizeof(r));
	close_fix_open(&f);
	oneways_at_close = 0;
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(f.ra, oneways_closed, r));
	ASSERT_OK(rdmx_rpc_ep_set_drained_cb(f.ra, count_drained, NULL));
	for (int i = 0; i < OW_CALLS; i++)
		ASSERT_OK(rdmx_rpc_call_async(f.ra, ECHO, NULL, &ow, call_rec_cb, &r[i], NULL));
	ASSERT_OK(rdmx_rpc_ep_drain(f.ra));
	rdmx__chan_fail(rdmx_rpc_ep_get_chan(f.ra), RDMX_E_CANCELED, NULL);
	cr_assert_eq(closed_n, 1);
	cr_assert_eq(oneways_at_close, OW_CALLS, "%d one-way calls done in the closed callback",
	             oneways_at_close);
	cr_assert(rdmx_rpc_ep_is_drained(f.ra), "one-way calls keep a closed endpoint undrained");
	cr_assert_eq(drained_n, 1, "the close ran the drained callback %d times", drained_n);
	drive_for(&f.a, &f.b, 20); /* observation window: the sends' completions */
	for (int i = 0; i < OW_CALLS; i++) {
		cr_assert_eq(r[i].done, 1, "one-way call %d: callback ran %d times", i, r[i].done);
		cr_assert_eq(r[i].code, RDMX_RPC_UNAVAILABLE, "%s", rdmx_rpc_code_name(r[i].code));
	}
	cr_assert_eq(drained_n, 1, "the drained callback ran %d times", drained_n);
	cr_assert_eq(drained_said, 1);
	close_fix_close(&f);
}

/* The drained callback runs from progress once the GOAWAY is acknowledged
 * (the channel's idle callback) and destroys its endpoint and channel:
 * both are released (under ASan, the endpoint leaked here), and nothing
 * runs again. */
Test(rpc, drained_cb_destroys_its_endpoint)
{
	struct close_fix f;
	struct teardown d = {0};
	struct rdmx_chan *cha;

	close_fix_open(&f);
	cha = rdmx_rpc_ep_get_chan(f.ra);
	d.ep = &f.ra;
	d.chan = &cha;
	ASSERT_OK(rdmx_rpc_ep_set_drained_cb(f.ra, teardown_drained_cb, &d));
	ASSERT_OK(rdmx_rpc_ep_drain(f.ra));
	cr_assert_eq(d.runs, 0);
	DRIVE_UNTIL(&f.a, &f.b, d.runs);
	drive_for(&f.a, &f.b, 20);
	cr_assert_eq(d.runs, 1, "the drained callback ran %d times", d.runs);
	cr_assert_null(f.ra);
	cr_assert_null(cha);
	close_fix_close(&f);
}

/* rdmx_rpc_ep_drain on an endpoint whose channel closed with nothing left
 * runs the drained callback from inside itself; the callback destroys its
 * endpoint and channel: both are released (under ASan, the endpoint leaked
 * here). */
Test(rpc, drained_cb_destroys_its_endpoint_from_drain)
{
	struct close_fix f;
	struct teardown d = {0};
	struct rdmx_chan *cha;

	close_fix_open(&f);
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(f.ra, count_closed, NULL));
	cha = rdmx_rpc_ep_get_chan(f.ra);
	d.ep = &f.ra;
	d.chan = &cha;
	side_goes(&f.rb);
	DRIVE_UNTIL(&f.a, &f.b, closed_n == 1);
	ASSERT_OK(rdmx_rpc_ep_set_drained_cb(f.ra, teardown_drained_cb, &d));
	ASSERT_OK(rdmx_rpc_ep_drain(f.ra));
	cr_assert_eq(d.runs, 1, "the drained callback ran %d times from the drain", d.runs);
	cr_assert_null(f.ra);
	cr_assert_null(cha);
	drive_for(&f.a, &f.b, 20);
	cr_assert_eq(d.runs, 1, "the drained callback ran %d times", d.runs);
	close_fix_close(&f);
}

/* ---- a send the engine refuses, whose close destroys the endpoint ----
 * The engine refuses the post of an RPC's own send (a test hook,
 * rdmx__conn_fail_posts, as a provider refuses a post): the channel fails
 * inside the send, and the closed callback destroys the endpoint and its
 * channel there. The RPC function that sent goes on with an endpoint it
 * holds until it returns. */

/* *ep's closed callback tears it down (d); *chan gets its channel. */
static void teardown_on_close(struct teardown *d, struct rdmx_rpc_ep **ep, struct rdmx_chan **chan)
{
	*chan = rdmx_rpc_ep_get_chan(*ep);
	d->ep = ep;
	d->chan = chan;
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(*ep, teardown_closed_cb, d));
}

/* The next post on ep's connection is refused. */
static void refuse_next_post(struct rdmx_rpc_ep *ep)
{
	struct rdmx_conn *conn = rdmx_chan_get_conn(rdmx_rpc_ep_get_chan(ep));

	cr_assert_not_null(conn);
	rdmx__conn_fail_posts(conn, 1);
}

/* The teardown ran once, from the refused send's close, and let go of both. */
static void assert_torn_down(const struct teardown *d, struct rdmx_rpc_ep *ep,
                             struct rdmx_chan *chan)
{
	cr_assert_eq(d->runs, 1, "the closed callback ran %d times", d->runs);
	cr_assert_eq(d->status, RDMX_E_PROVIDER, "closed with %s", rdmx_err_name(d->status));
	cr_assert_null(ep);
	cr_assert_null(chan);
}

/* The peer's endpoint saw the close: its held calls (cancelled by the
 * close) are answered, silently. */
static void answer_held_after_close(struct close_fix *f)
{
	DRIVE_UNTIL(&f->a, &f->b, closed_n == 1);
	for (uint32_t i = 0; i < f->st.held_n; i++)
		ASSERT_OK(rdmx_rpc_respond(f->st.held[i], RDMX_RPC_OK, NULL, NULL));
}

/* rdmx_rpc_respond (rpc_server.c, after send_response): under ASan it
 * counted the answer into the freed endpoint and recycled the call into it. */
Test(rpc, respond_refused_closed_cb_destroys_its_endpoint)
{
	struct close_fix f;
	struct teardown d = {0};
	struct rdmx_chan *chb;
	struct call_rec r = {0};

	close_fix_open(&f);
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(f.ra, count_closed, NULL));
	ASSERT_OK(rdmx_rpc_call_async(f.ra, HOLD, NULL, NULL, call_rec_cb, &r, NULL));
	DRIVE_UNTIL(&f.a, &f.b, f.st.held_n == 1);
	teardown_on_close(&d, &f.rb, &chb);
	refuse_next_post(f.rb);
	ASSERT_RC(rdmx_rpc_respond(f.st.held[0], RDMX_RPC_OK, NULL, NULL), RDMX_E_PROVIDER);
	assert_torn_down(&d, f.rb, chb);
	DRIVE_UNTIL(&f.a, &f.b, r.done && closed_n == 1);
	cr_assert_eq(r.code, RDMX_RPC_UNAVAILABLE, "%s", rdmx_rpc_code_name(r.code));
	close_fix_close(&f);
}

/* The closed callback of a refused answer destroys its endpoint, its
 * channel and then the server: the answer still reads the server's method
 * and interceptors, so the server stays in use (RDMX_E_BAD_STATE) until
 * rdmx_rpc_respond returns, and goes then (under ASan, the answer read the
 * freed server). */
struct teardown_all {
	struct teardown d;
	struct rdmx_rpc_server **srv;
	int srv_rc;
};

static void teardown_all_closed_cb(struct rdmx_rpc_ep *ep, int status, void *arg)
{
	struct teardown_all *t = arg;

	teardown_closed_cb(ep, status, &t->d);
	t->srv_rc = rdmx_rpc_server_destroy(t->srv);
}

Test(rpc, respond_refused_closed_cb_destroys_its_server)
{
	struct close_fix f;
	struct teardown_all t = {{0}};
	struct rdmx_chan *chb;
	struct call_rec r = {0};

	close_fix_open(&f);
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(f.ra, count_closed, NULL));
	ASSERT_OK(rdmx_rpc_call_async(f.ra, HOLD, NULL, NULL, call_rec_cb, &r, NULL));
	DRIVE_UNTIL(&f.a, &f.b, f.st.held_n == 1);
	teardown_on_close(&t.d, &f.rb, &chb);
	t.srv = &f.srv;
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(f.rb, teardown_all_closed_cb, &t));
	refuse_next_post(f.rb);
	ASSERT_RC(rdmx_rpc_respond(f.st.held[0], RDMX_RPC_OK, NULL, NULL), RDMX_E_PROVIDER);
	assert_torn_down(&t.d, f.rb, chb);
	cr_assert_eq(t.srv_rc, RDMX_E_BAD_STATE, "server destroy inside the answer: %s",
	             rdmx_err_name(t.srv_rc));
	cr_assert_not_null(f.srv);
	ASSERT_OK(rdmx_rpc_server_destroy(&f.srv)); /* the answer is over: no endpoint uses it */
	cr_assert_null(f.srv);
	DRIVE_UNTIL(&f.a, &f.b, r.done && closed_n == 1);
	cr_assert_eq(r.code, RDMX_RPC_UNAVAILABLE, "%s", rdmx_rpc_code_name(r.code));
	close_fix_close(&f);
}

/* rdmx_rpc_cancel (call.c, after the CANCEL's send): under ASan it counted
 * the cancel into the freed endpoint. The call still ends CANCELLED, once. */
Test(rpc, cancel_refused_closed_cb_destroys_its_endpoint)
{
	struct close_fix f;
	struct teardown d = {0};
	struct rdmx_chan *cha;
	struct call_rec r = {0};
	uint64_t id = 0;

	close_fix_open(&f);
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(f.rb, count_closed, NULL));
	ASSERT_OK(rdmx_rpc_call_async(f.ra, HOLD, NULL, NULL, call_rec_cb, &r, &id));
	DRIVE_UNTIL(&f.a, &f.b, f.st.held_n == 1);
	teardown_on_close(&d, &f.ra, &cha);
	refuse_next_post(f.ra);
	ASSERT_OK(rdmx_rpc_cancel(f.ra, id));
	assert_torn_down(&d, f.ra, cha);
	cr_assert_eq(r.done, 1, "the call's callback ran %d times", r.done);
	cr_assert_eq(r.code, RDMX_RPC_CANCELLED, "%s", rdmx_rpc_code_name(r.code));
	answer_held_after_close(&f);
	cr_assert_eq(r.done, 1, "the call's callback ran %d times", r.done);
	close_fix_close(&f);
}

/* The deadline (call.c, deadline_fired, after the CANCEL's send): under
 * ASan it counted the cancel into the freed endpoint. A deadline of 1 us
 * is due at the first progress pass after the call (no clock waited on);
 * the call ends DEADLINE_EXCEEDED, once: the refused post was the CANCEL's,
 * not another's. */
Test(rpc, deadline_cancel_refused_closed_cb_destroys_its_endpoint)
{
	struct close_fix f;
	struct teardown d = {0};
	struct rdmx_chan *cha;
	struct call_rec r = {0};
	struct rdmx_rpc_call_opts o = {.timeout_us = 1};

	close_fix_open(&f);
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(f.rb, count_closed, NULL));
	ASSERT_OK(rdmx_rpc_call_async(f.ra, HOLD, NULL, &o, call_rec_cb, &r, NULL));
	teardown_on_close(&d, &f.ra, &cha);
	refuse_next_post(f.ra);
	DRIVE_UNTIL(&f.a, &f.b, d.runs);
	assert_torn_down(&d, f.ra, cha);
	cr_assert_eq(r.done, 1, "the call's callback ran %d times", r.done);
	cr_assert_eq(r.code, RDMX_RPC_DEADLINE_EXCEEDED, "%s", rdmx_rpc_code_name(r.code));
	answer_held_after_close(&f);
	cr_assert_eq(r.done, 1, "the call's callback ran %d times", r.done);
	close_fix_close(&f);
}

/* rdmx_rpc_ep_drain (rpc.c) holds its endpoint across the GOAWAY's send:
 * its guard's test (without it, under ASan, the drain marked the freed
 * endpoint draining). */
Test(rpc, drain_refused_closed_cb_destroys_its_endpoint)
{
	struct close_fix f;
	struct teardown d = {0};
	struct rdmx_chan *cha;

	close_fix_open(&f);
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(f.rb, count_closed, NULL));
	teardown_on_close(&d, &f.ra, &cha);
	refuse_next_post(f.ra);
	ASSERT_OK(rdmx_rpc_ep_drain(f.ra));
	assert_torn_down(&d, f.ra, cha);
	answer_held_after_close(&f);
	close_fix_close(&f);
}
