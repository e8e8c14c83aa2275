/* Ordering and exactly-once under load: 100 000 calls over 16 connections,
 * 64 in flight on each, every reply checked by call id and payload
 * checksum; and the same through a peer that dies with 1 000 calls in
 * flight (a separate process, killed). */
#include "rpcfix.h"

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOAD_CONNS 16
#define LOAD_CALLS 100000
#define LOAD_INFLIGHT 64

/* request/reply: [u64 tag][u32 len][pattern(seed = tag)] */
struct lcall {
	uint64_t tag;
	uint64_t want_sum;
	uint32_t want_len;
	uint8_t done;
	uint8_t ok;
};

struct lconn {
	struct rdmx_rpc_ep *ep;
	uint32_t next, issued, done;
};

static struct lcall *calls;
static uint64_t bad_replies;

static void load_done(const struct rdmx_rpc_result *r, void *arg)
{
	struct lcall *c = arg;
	uint64_t tag;

	c->done++;
	if (r->code != RDMX_RPC_OK || r->len != c->want_len || r->len < 12) {
		bad_replies++;
		return;
	}
	memcpy(&tag, r->data, 8);
	if (tag != c->tag || checksum64(r->data, r->len) != c->want_sum) {
		bad_replies++;
		return;
	}
	c->ok = 1;
}

Test(load, calls_100k_over_16_connections, .timeout = 1500)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct lconn lc[LOAD_CONNS];
	struct rdmx_rpc_ep *rb[LOAD_CONNS];
	struct chan_conf conf = {.slot_count = 64, .slot_size = 1024};
	uint32_t per = LOAD_CALLS / LOAD_CONNS, total_done = 0;
	uint32_t ECHO = rdmx_rpc_method_id(ECHO_NAME);
	uint8_t buf[600];

	calls = calloc(LOAD_CALLS, sizeof(*calls));
	cr_assert_not_null(calls);
	bad_replies = 0;
	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	srv = echo_server(&st);
	for (int i = 0; i < LOAD_CONNS; i++) {
		memset(&lc[i], 0, sizeof(lc[i]));
		rpc_pair(&a, &b, NULL, srv, &conf, &conf, &lc[i].ep, &rb[i]);
	}
	uint64_t guard = now_ms() + 1200000;
	while (total_done < LOAD_CALLS) {
		cr_assert(now_ms() < guard, "stuck at %u of %u calls", total_done, LOAD_CALLS);
		for (int i = 0; i < LOAD_CONNS; i++) {
			struct lconn *l = &lc[i];

			while (l->issued < per && l->issued - l->done < LOAD_INFLIGHT) {
				uint32_t idx = (uint32_t)i * per + l->issued;
				struct lcall *c = &calls[idx];
				uint32_t len = 12 + (idx * 37u) % 500u;
				struct rdmx_rpc_payload p;

				c->tag = ((uint64_t)i << 32) | l->issued;
				c->want_len = len;
				memcpy(buf, &c->tag, 8);
				memcpy(buf + 8, &len, 4);
				pattern_fill(buf + 12, len - 12, idx);
				c->want_sum = checksum64(buf, len);
				p = rdmx_rpc_bytes(buf, len);
				int rc =
				    rdmx_rpc_call_async(l->ep, ECHO, &p, NULL, load_done, c, NULL);
				if (rc == RDMX_E_AGAIN)
					break;
				cr_assert_eq(rc, 0, "call %u: %s", idx, rdmx_err_name(rc));
				l->issued++;
			}
		}
		drive_once(&a, &b);
		total_done = 0;
		for (int i = 0; i < LOAD_CONNS; i++) {
			struct lconn *l = &lc[i];

			/* completions are per connection in order of the calls */
			while (l->done < l->issued && calls[(uint32_t)i * per + l->done].done)
				l->done++;
			total_done += l->done;
		}
	}
	drive_for(&a, &b, 50); /* anything duplicated would show now */
	uint64_t ok = 0;
	for (uint32_t i = 0; i < LOAD_CALLS; i++) {
		cr_assert_eq(calls[i].done, 1, "call %u completed %u times", i, calls[i].done);
		ok += calls[i].ok;
	}
	cr_assert_eq(bad_replies, 0, "%llu replies with the wrong id, length or checksum",
	             (unsigned long long)bad_replies);
	cr_assert_eq(ok, LOAD_CALLS);
	cr_assert_eq(st.echoed, LOAD_CALLS, "the server ran %u handlers", st.echoed);
	uint64_t srv_calls = 0;
	for (int i = 0; i < LOAD_CONNS; i++) {
		struct rdmx_rpc_stats s;

		ASSERT_OK(rdmx_rpc_ep_get_stats(rb[i], RDMX_RPC_ROLE_SERVER, &s));
		cr_assert_eq(s.calls, per, "connection %d served %llu", i,
		             (unsigned long long)s.calls);
		srv_calls += s.calls;
	}
	cr_assert_eq(srv_calls, LOAD_CALLS);
	for (int i = 0; i < LOAD_CONNS; i++)
		rpc_pair_close(&lc[i].ep, &rb[i]);
	ASSERT_OK(rdmx_rpc_server_destroy(&srv));
	node_close(&a);
	node_close(&b);
	free(calls);
}

/* ---- peer death: the server is another process, killed mid-flight ---- */

static uint32_t child_held;

static void child_hold(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	(void)call; /* never answered: the process dies holding it */
	(void)req;
	(void)len;
	(void)arg;
	child_held++;
}

static int child_setup(struct rdmx_rpc_server *srv)
{
	return rdmx_rpc_server_register(srv, rdmx_rpc_method_id(HOLD_NAME), HOLD_NAME, child_hold,
	                                NULL);
}

static bool child_ready(void)
{
	return child_held >= 1000;
}

static void death_done(const struct rdmx_rpc_result *r, void *arg)
{
	struct lcall *c = arg;

	c->done++;
	c->ok = r->code == RDMX_RPC_UNAVAILABLE;
}

static int count_calls(const struct lcall *c, int n)
{
	int d = 0;

	for (int i = 0; i < n; i++)
		d += c[i].done;
	return d;
}

Test(load, peer_killed_with_1000_in_flight, .timeout = 600)
{
	struct node a;
	struct peer_proc p;
	static struct lcall c[1000];
	struct rdmx_rpc_call_opts o = {.timeout_us = 60u * 1000000u};

	memset(c, 0, sizeof(c));
	peer_proc_open(&a, child_setup, child_ready, &p);
	uint32_t HOLD = rdmx_rpc_method_id(HOLD_NAME);
	for (int i = 0; i < 1000; i++)
		ASSERT_OK(rdmx_rpc_call_async(p.ep, HOLD, NULL, &o, death_done, &c[i], NULL));
	/* wait until the child holds all 1000 */
	peer_proc_wait_ready(&a, &p, "the child never held 1000 calls");
	cr_assert_eq(rdmx_rpc_ep_get_inflight(p.ep), 1000);
	peer_proc_kill(&p);
	DRIVE_UNTIL(&a, NULL, count_calls(c, 1000) == 1000);
	drive_for(&a, NULL, 50);
	for (int i = 0; i < 1000; i++) {
		cr_assert_eq(c[i].done, 1, "call %d completed %u times", i, c[i].done);
		cr_assert_eq(c[i].ok, 1, "call %d did not fail with UNAVAILABLE", i);
	}
	cr_assert_eq(rdmx_chan_get_state(p.chan), RDMX_CHAN_CLOSED);
	peer_proc_close(&p);
	node_close(&a);
}

/* ---- a frozen server (SIGSTOP) with the client's liveness probes off ---- */

#include "chan_internal.h"

static bool frozen_ready(void)
{
	return child_held >= 1;
}

struct frozen_call {
	int done;
	enum rdmx_rpc_code code;
};

static void frozen_done(const struct rdmx_rpc_result *r, void *arg)
{
	struct frozen_call *c = arg;

	c->done++;
	c->code = r->code;
}

/* The transport timeout (tcp: 1000 ms x 8 by default) declares a frozen
 * peer lost while a request of ours waits for its answer: a call made to a
 * frozen server fails UNAVAILABLE even with the channel's liveness probes
 * off (keepalive_ms = 0). A light message (engine/msg.h) waits for no
 * answer: sent as one, the call hung for good. */
Test(load, frozen_server_fails_calls_without_liveness_probes, .timeout = 120)
{
	struct node a;
	struct peer_proc p;
	struct frozen_call c1 = {0}, c2 = {0};
	uint32_t hold = rdmx_rpc_method_id(HOLD_NAME);
	uint64_t end;
	int st;

	/* light messages are tcp's; on verbs the NIC (rxe: the kernel) still
	 * acknowledges the writes of a stopped process, which no transport
	 * timeout can call frozen */
	if (strcmp(env_device(0), "tcp") || strcmp(env_device(1), "tcp"))
		cr_skip_test("tcp devices only (%s/%s)", env_device(0), env_device(1));
	peer_proc_open(&a, child_setup, frozen_ready, &p);
	a.worker->attr.keepalive_ms = 0; /* before the channel is READY */
	ASSERT_OK(rdmx_rpc_call_async(p.ep, hold, NULL, NULL, frozen_done, &c1, NULL));
	peer_proc_wait_ready(&a, &p, "the child never held the call");
	drive_for(&a, NULL, 200); /* every request before the freeze answered */
	cr_assert_eq(kill(p.pid, SIGSTOP), 0);
	/* stopped before the call goes: kill() returns before the child stops,
	 * and a child still running could take and acknowledge the request,
	 * leaving nothing outstanding to time out */
	cr_assert_eq(waitpid(p.pid, &st, WUNTRACED), p.pid);
	cr_assert(WIFSTOPPED(st), "child not stopped (status 0x%x)", st);
	ASSERT_OK(rdmx_rpc_call_async(p.ep, hold, NULL, NULL, frozen_done, &c2, NULL));
	end = now_ms() + 30000; /* failure guard: the loss is declared after ~8 s */
	while ((!c1.done || !c2.done) && now_ms() < end)
		drive_once(&a, NULL);
	kill(p.pid, SIGCONT);
	cr_assert_eq(c2.done, 1, "the call to the frozen server completed %d times in 30 s",
	             c2.done);
	cr_assert_eq(c1.done, 1, "the held call completed %d times in 30 s", c1.done);
	cr_assert_eq(c2.code, RDMX_RPC_UNAVAILABLE);
	cr_assert_eq(c1.code, RDMX_RPC_UNAVAILABLE);
	peer_proc_close(&p);
	node_close(&a);
}
