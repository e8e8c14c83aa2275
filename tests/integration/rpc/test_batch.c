/* RPC answer batching (rpc/batch.c): the first answer given inside one
 * progress call leaves at once unless the poll has more completions in
 * hand (rdmx_ctx_get_completions_pending), the others of that call in one
 * channel message; answers given outside progress leave at once; a large
 * answer goes alone, in order; every call completes once with its own
 * answer. Counted on the channel's stats, no timing. */
#include "rpcfix.h"

#include <stdio.h>
#include <string.h>

#define NHELD 16
#define PAYLOAD 64

static uint32_t ECHO, HOLD;

static uint64_t msgs_sent(struct rdmx_rpc_ep *ep)
{
	struct rdmx_chan_stats st;

	ASSERT_OK(rdmx_chan_get_stats(rdmx_rpc_ep_get_chan(ep), &st));
	return st.msgs_sent;
}

/* answer i: `size` bytes of value i */
static uint8_t big_answer[4096];
static size_t answer_size(int i, int big_at)
{
	return i == big_at ? sizeof(big_answer) : PAYLOAD;
}

static struct echo_state *held_st;
static struct rdmx_ctx *held_ctx;
static int held_big_at = -1;
static uint32_t held_pending; /* completions pending when the held calls were answered */

static void answer_held(void)
{
	for (uint32_t i = 0; i < held_st->held_n; i++) {
		uint8_t small[PAYLOAD];
		size_t n = answer_size((int)i, held_big_at);
		uint8_t *b = n == PAYLOAD ? small : big_answer;
		struct rdmx_rpc_payload p;

		memset(b, (int)(i + 1), n);
		p = rdmx_rpc_bytes(b, n);
		ASSERT_OK(rdmx_rpc_respond(held_st->held[i], RDMX_RPC_OK, NULL, &p));
	}
	held_st->held_n = 0;
}

/* a completion on the server's node: answers the held calls from inside
 * that node's progress */
static void trigger_cb(const struct rdmx_rpc_result *r, void *arg)
{
	(void)r;
	(void)arg;
	ASSERT_OK(rdmx_ctx_get_completions_pending(held_ctx, &held_pending));
	answer_held();
}

struct scene {
	struct node a, b;
	struct echo_state sta;
	struct rdmx_rpc_server *srva;
	struct rdmx_rpc_ep *ra, *rb;
	struct call_rec held[NHELD];
};

/* b calls a's Hold NHELD times; a holds them all */
static void scene_open(struct scene *s)
{
	memset(s, 0, sizeof(*s));
	ECHO = rdmx_rpc_method_id(ECHO_NAME);
	HOLD = rdmx_rpc_method_id(HOLD_NAME);
	node_open(&s->a, "a", 0, NULL);
	node_open(&s->b, "b", 1, NULL);
	s->srva = echo_server(&s->sta);
	rpc_pair(&s->a, &s->b, s->srva, NULL, NULL, NULL, &s->ra, &s->rb);
	for (int i = 0; i < NHELD; i++)
		ASSERT_OK(
		    rdmx_rpc_call_async(s->rb, HOLD, NULL, NULL, call_rec_cb, &s->held[i], NULL));
	DRIVE_UNTIL(&s->a, &s->b, s->sta.held_n == NHELD);
	held_st = &s->sta;
	held_ctx = s->a.ctx;
}

/* 1 when the first answer of the callback left alone (nothing pending) */
static uint64_t first_alone(void)
{
	return held_pending == 0;
}

static void scene_check_answers(struct scene *s, int big_at)
{
	DRIVE_UNTIL(&s->a, &s->b, call_recs_done(s->held, NHELD) == NHELD);
	for (int i = 0; i < NHELD; i++) {
		size_t n = answer_size(i, big_at);
		uint8_t want[sizeof(big_answer)];

		memset(want, i + 1, n);
		cr_assert_eq(s->held[i].done, 1, "call %d completed %d times", i, s->held[i].done);
		cr_assert_eq(s->held[i].code, RDMX_RPC_OK);
		cr_assert_eq(s->held[i].len, n, "call %d: %zu bytes", i, s->held[i].len);
		cr_assert_eq(s->held[i].sum, checksum64(want, n), "call %d: not its answer", i);
	}
	struct rdmx_rpc_stats ss, cs;
	ASSERT_OK(rdmx_rpc_ep_get_stats(s->ra, RDMX_RPC_ROLE_SERVER, &ss));
	ASSERT_OK(rdmx_rpc_ep_get_stats(s->rb, RDMX_RPC_ROLE_CLIENT, &cs));
	cr_assert_eq(ss.completed, NHELD);
	cr_assert_eq(cs.completed, NHELD);
	cr_assert_eq(cs.by_code[RDMX_RPC_OK], NHELD);
	cr_assert_eq(ss.bytes_sent, cs.bytes_received);
	/* every answer handed to the channel was sent: none left pending */
	DRIVE_UNTIL(&s->a, &s->b, rdmx_rpc_ep_get_active(s->ra) == 0);
	cr_assert_eq(rdmx_rpc_ep_get_inflight(s->rb), 0);
}

static void scene_close(struct scene *s)
{
	held_big_at = -1;
	rpc_pair_close_all(&s->ra, &s->rb, &s->srva, &s->a, &s->b);
}

Test(rpc_batch, first_answer_of_a_pass_at_once_the_rest_in_one_message)
{
	struct scene s;
	struct call_rec trig = {0};

	scene_open(&s);
	uint64_t m0 = msgs_sent(s.ra);
	/* one request of a's (one message), whose completion answers all 16 */
	ASSERT_OK(rdmx_rpc_call_async(s.ra, ECHO, NULL, NULL, trigger_cb, &trig, NULL));
	scene_check_answers(&s, -1);
	cr_assert_eq(msgs_sent(s.ra) - m0, 1 + first_alone() + 1,
	             "16 answers of one callback (%u pending): %llu messages", held_pending,
	             (unsigned long long)(msgs_sent(s.ra) - m0 - 1));
	scene_close(&s);
}

Test(rpc_batch, answers_outside_progress_leave_at_once)
{
	struct scene s;

	scene_open(&s);
	for (uint32_t i = 0; i < NHELD; i++) {
		uint8_t v[PAYLOAD];
		struct rdmx_rpc_payload p = rdmx_rpc_bytes(v, sizeof(v));
		uint64_t m0 = msgs_sent(s.ra);

		memset(v, (int)(i + 1), sizeof(v));
		ASSERT_OK(rdmx_rpc_respond(s.sta.held[i], RDMX_RPC_OK, NULL, &p));
		cr_assert_eq(msgs_sent(s.ra) - m0, 1, "answer %u did not leave at once", i);
	}
	s.sta.held_n = 0;
	scene_check_answers(&s, -1);
	scene_close(&s);
}

Test(rpc_batch, large_answer_goes_alone_in_order)
{
	struct scene s;
	struct call_rec trig = {0};

	scene_open(&s);
	held_big_at = 5; /* 5 small, one too large for a batch, 10 small */
	uint64_t m0 = msgs_sent(s.ra);
	ASSERT_OK(rdmx_rpc_call_async(s.ra, ECHO, NULL, NULL, trigger_cb, &trig, NULL));
	scene_check_answers(&s, 5);
	cr_assert_eq(msgs_sent(s.ra) - m0, 1 + first_alone() + 3,
	             "[the first,] a batch, the large one, a batch (%u pending): %llu messages",
	             held_pending, (unsigned long long)(msgs_sent(s.ra) - m0 - 1));
	scene_close(&s);
}
