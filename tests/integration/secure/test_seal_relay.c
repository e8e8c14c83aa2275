/* Sealed tcp data connections (rdmx_conn_set_data_keys; on by default on the
 * secure path) seen from the wire: a relay in this process stands between
 * the two devices (each device's advertised data port is pointed at a relay
 * that forwards to the real one) and records every byte of the data
 * connection.
 *
 * - a kv-like secure RPC session (rdmx_rpc_secure_listen /
 *   rdmx_rpc_secure_connect): the recording holds no key, value,
 *   connection token or memory descriptor; the same session in the explicit
 *   plaintext mode is the control (the search finds them all there) and is
 *   logged and counted in the stats;
 * - engine connections with keys: the relay flips a bit of, replays, drops,
 *   reorders or truncates one record while writes are outstanding: the
 *   receiver moves the connection to error with a log line, every write
 *   completes exactly once, with an error, and the process goes on. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif

#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include <rdmx/channel.h>
#include <rdmx/ctx.h>
#include <rdmx/dev.h>
#include <rdmx/mr.h>
#include <rdmx/pe.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/status.h>
#include <rdmx/task.h>
#include <rdmx/tls.h>

#include "internal.h"
#include "providers/tcp/tcp.h"
#include "relay.h"
#include "ev_thread.h"
#include "secure_server.h"
#include "test_assert.h"
#include "tls_test_pki.h"
#include "tls_test_suite.h"

static struct tls_test_pki pki;

/* ---- engine sides ---- */

struct counts {
	int ok, err, status;
};

struct side {
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_conn *conn;
	uint8_t *mem;
	struct rdmx_mr *mr;
	int established, ended;
};

static void task_ok(struct rdmx_task *t, void *ud, void *cud)
{
	struct counts *c = ud;

	(void)t;
	(void)cud;
	c->ok++;
}

static void task_err(struct rdmx_task *t, void *ud, void *cud)
{
	struct counts *c = ud;

	(void)cud;
	c->err++;
	c->status = rdmx_task_get_status(t);
}

static void on_est(struct rdmx_conn *c, void *cud, void *xud)
{
	(void)c;
	(void)cud;
	((struct side *)xud)->established++;
}

static void on_end(struct rdmx_conn *c, void *cud, void *xud)
{
	(void)c;
	(void)cud;
	((struct side *)xud)->ended++;
}

#define MEM (1u << 20)
#define NWRITES 4
#define WLEN (200u * 1024u)

static void side_open(struct side *s)
{
	memset(s, 0, sizeof(*s));
	cr_assert_rc(rdmx_dev_open("tcp", &s->dev), RDMX_OK);
	cr_assert_rc(rdmx_pe_create(&s->pe), RDMX_OK);
	cr_assert_rc(rdmx_ctx_create(s->dev, s->pe, &s->ctx), RDMX_OK);
	cr_assert_rc(rdmx_ctx_set_user_data(s->ctx, s), RDMX_OK);
	cr_assert_rc(rdmx_ctx_set_conn_callbacks(s->ctx, NULL, on_est, on_end, on_end), RDMX_OK);
	cr_assert_rc(
	    rdmx_ctx_set_task_conf(s->ctx, RDMX_TASK_WRITE, task_ok, task_err, NWRITES + 1),
	    RDMX_OK);
	cr_assert_rc(rdmx_ctx_set_task_conf(s->ctx, RDMX_TASK_SEND, task_ok, task_err, 1), RDMX_OK);
	cr_assert_rc(rdmx_ctx_set_rnr_retry_count(s->ctx, 7), RDMX_OK); /* retry for ever */
	cr_assert_rc(rdmx_ctx_start(s->ctx), RDMX_OK);
	s->mem = calloc(1, MEM);
	cr_assert_not_null(s->mem);
	cr_assert_rc(rdmx_mr_reg(s->dev, s->mem, MEM, RDMX_ACCESS_ALL, &s->mr), RDMX_OK);
}

static void side_close(struct side *s)
{
	rdmx_mr_dereg(&s->mr);
	rdmx_ctx_stop(s->ctx);
	rdmx_ctx_destroy(&s->ctx);
	rdmx_pe_destroy(&s->pe);
	rdmx_dev_close(&s->dev);
	free(s->mem);
}

/* Drives both sides until pred holds; a bounded guard, not a timing test. */
static bool drive(struct side *a, struct side *b, bool (*pred)(void *), void *arg)
{
	int64_t until = tls_test_now_ms() + 20000;

	while (!pred(arg)) {
		if (tls_test_now_ms() > until)
			return false;
		rdmx_pe_progress(a->pe);
		rdmx_pe_progress(b->pe);
		rdmx_pe_wait(a->pe, 1);
	}
	return true;
}

static struct side A, B;
static struct relay RA, RB;

static bool both_up(void *arg)
{
	(void)arg;
	return A.established == 1 && B.established == 1;
}

static void keys_fill(struct rdmx_conn_keys *k, uint8_t seed, bool mirror)
{
	for (unsigned i = 0; i < RDMX_CONN_KEY_SIZE; i++) {
		k->tx_key[i] = (uint8_t)(seed + (mirror ? 100 : 0) + i);
		k->rx_key[i] = (uint8_t)(seed + (mirror ? 0 : 100) + i);
	}
	for (unsigned i = 0; i < RDMX_CONN_IV_SIZE; i++) {
		k->tx_iv[i] = (uint8_t)(seed * 3 + (mirror ? 50 : 0) + i);
		k->rx_iv[i] = (uint8_t)(seed * 3 + (mirror ? 0 : 50) + i);
	}
}

/* A and B connected through relays with mode `mode`, keyed (or not). */
static void pair_up(enum relay_mode mode, bool keyed)
{
	const void *da, *db;
	size_t la, lb;
	struct rdmx_conn_keys ka, kb;
	bool sealed = false;

	side_open(&A);
	side_open(&B);
	relay_start(&RA, A.dev, mode);
	relay_start(&RB, B.dev, mode);
	cr_assert_rc(rdmx_ctx_export(A.ctx, &da, &la, &A.conn), RDMX_OK);
	cr_assert_rc(rdmx_ctx_export(B.ctx, &db, &lb, &B.conn), RDMX_OK);
	if (keyed) {
		keys_fill(&ka, 7, false);
		keys_fill(&kb, 7, true);
		cr_assert_rc(rdmx_conn_set_data_keys(A.conn, &ka), RDMX_OK);
		cr_assert_rc(rdmx_conn_set_data_keys(B.conn, &kb), RDMX_OK);
		cr_assert_rc(rdmx_conn_set_data_keys(B.conn, &kb), RDMX_E_BAD_STATE);
		cr_assert_rc(rdmx_conn_is_sealed(A.conn, &sealed), RDMX_OK);
		cr_assert(sealed);
	}
	cr_assert_rc(rdmx_ctx_connect(A.ctx, db, lb, A.conn), RDMX_OK);
	cr_assert_rc(rdmx_ctx_connect(B.ctx, da, la, B.conn), RDMX_OK);
	if (keyed)
		cr_assert_rc(rdmx_conn_set_data_keys(A.conn, &ka), RDMX_E_BAD_STATE);
	cr_assert(drive(&A, &B, both_up, NULL), "the pair did not come up through the relay");
}

static void pair_down(void)
{
	if (!A.ended)
		rdmx_conn_disconnect(A.conn);
	if (!B.ended)
		rdmx_conn_disconnect(B.conn);
	relay_stop(&RA);
	relay_stop(&RB);
	side_close(&A);
	side_close(&B);
	relay_free(&RA);
	relay_free(&RB);
}

static struct counts wc[NWRITES + 1];

static bool writes_done(void *arg)
{
	int n = *(int *)arg;

	for (int i = 0; i < n; i++)
		if (wc[i].ok + wc[i].err == 0)
			return false;
	return true;
}

/* Writes n x WLEN bytes from A's region into B's (tasks i0 .. i0+n-1). */
static void write_batch(int i0, int n, struct rdmx_task **tasks)
{
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
	static struct rdmx_buf src[NWRITES + 1];
	static struct rdmx_mr_remote *rm;
	struct rdmx_rbuf dst;

	if (!rm) {
		cr_assert_rc(rdmx_mr_get_descriptor(B.mr, desc), RDMX_OK);
		cr_assert_rc(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &rm), RDMX_OK);
	}
	for (int i = i0; i < i0 + n; i++) {
		memset(A.mem + (size_t)i * WLEN, 0xa0 + i, WLEN);
		src[i] = (struct rdmx_buf){A.mr, A.mem + (size_t)i * WLEN, WLEN, NULL};
		dst = (struct rdmx_rbuf){rm, (uint64_t)i * WLEN, WLEN};
		cr_assert_rc(rdmx_task_write_alloc(A.ctx, A.conn, &src[i], &dst, &wc[i], &tasks[i]),
		             RDMX_OK);
		cr_assert_rc(rdmx_task_submit(tasks[i]), RDMX_OK);
	}
}

static bool conn_in_error(void *arg)
{
	enum rdmx_conn_state st = RDMX_CONN_ESTABLISHED;

	(void)arg;
	if (B.ended) /* the connection ended (the object is gone) */
		return true;
	rdmx_conn_get_state(B.conn, &st);
	return st == RDMX_CONN_ERROR;
}

/* One clean write, then the relay tampers with the next record while
 * NWRITES writes are outstanding. */
static void tamper(enum relay_mode mode, const char *log_needle)
{
	struct rdmx_task *tasks[NWRITES + 1];
	int one = 1, all = NWRITES + 1;

	tls_test_log_capture();
	tls_test_log_clear();
	memset(wc, 0, sizeof(wc));
	pair_up(mode, true);
	write_batch(0, 1, tasks);
	cr_assert(drive(&A, &B, writes_done, &one));
	cr_assert_eq(wc[0].ok, 1, "the clean write failed: %s", rdmx_err_name(wc[0].status));
	cr_assert_eq(B.mem[WLEN - 1], 0xa0);
	__atomic_store_n(&RA.armed, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&RB.armed, 1, __ATOMIC_SEQ_CST);
	write_batch(1, NWRITES, tasks);
	cr_assert(drive(&A, &B, writes_done, &all), "outstanding writes did not complete");
	cr_assert(drive(&A, &B, conn_in_error, NULL), "the receiver did not leave the connection");
	cr_assert(__atomic_load_n(&RA.done, __ATOMIC_SEQ_CST) ||
	          __atomic_load_n(&RB.done, __ATOMIC_SEQ_CST));
	for (int i = 1; i <= NWRITES; i++) {
		cr_assert_eq(wc[i].ok + wc[i].err, 1, "write %d completed %d times", i,
		             wc[i].ok + wc[i].err);
		cr_assert_eq(wc[i].err, 1, "write %d succeeded through a tampered stream", i);
	}
	/* nothing completes twice later either */
	for (int k = 0; k < 50; k++) {
		rdmx_pe_progress(A.pe);
		rdmx_pe_progress(B.pe);
	}
	for (int i = 0; i <= NWRITES; i++)
		cr_assert_eq(wc[i].ok + wc[i].err, 1);
	cr_assert(tls_test_log_contains(log_needle), "no log line '%s'", log_needle);
	for (int i = 0; i <= NWRITES; i++)
		rdmx_task_free(tasks[i]);
	pair_down();
}

TestSuite(seal, .init = NULL);

Test(seal, engine_pair_roundtrip_and_stats)
{
	struct rdmx_task *tasks[NWRITES + 1];
	struct rdmx_ctx_stats st;
	int all = NWRITES;

	memset(wc, 0, sizeof(wc));
	pair_up(R_FORWARD, true);
	write_batch(0, NWRITES, tasks);
	cr_assert(drive(&A, &B, writes_done, &all));
	for (int i = 0; i < NWRITES; i++) {
		cr_assert_eq(wc[i].ok, 1, "write %d: %s", i, rdmx_err_name(wc[i].status));
		cr_assert_eq(B.mem[(size_t)i * WLEN + 12345], 0xa0 + i);
	}
	cr_assert_rc(rdmx_ctx_get_stats(A.ctx, &st), RDMX_OK);
	cr_assert_eq(st.conns_sealed, 1);
	cr_assert_eq(st.conns_plaintext, 0);
	/* the payload never crossed the relay in the clear: a run of 0xa1 */
	{
		uint8_t run[64];

		memset(run, 0xa1, sizeof(run));
		cr_assert(RA.rec_len + RB.rec_len > NWRITES * WLEN, "nothing recorded");
		cr_assert(!relay_seen(&RA, run, sizeof(run)) && !relay_seen(&RB, run, sizeof(run)));
	}
	for (int i = 0; i < NWRITES; i++)
		rdmx_task_free(tasks[i]);
	pair_down();
}

Test(seal, engine_pair_plaintext_control)
{
	struct rdmx_task *tasks[NWRITES + 1];
	struct rdmx_ctx_stats st;
	uint8_t run[64];
	int all = NWRITES;

	memset(wc, 0, sizeof(wc));
	pair_up(R_FORWARD, false);
	write_batch(0, NWRITES, tasks);
	cr_assert(drive(&A, &B, writes_done, &all));
	cr_assert_rc(rdmx_ctx_get_stats(A.ctx, &st), RDMX_OK);
	cr_assert_eq(st.conns_sealed, 0);
	cr_assert_eq(st.conns_plaintext, 1);
	memset(run, 0xa1, sizeof(run));
	cr_assert(relay_seen(&RA, run, sizeof(run)) || relay_seen(&RB, run, sizeof(run)));
	for (int i = 0; i < NWRITES; i++)
		rdmx_task_free(tasks[i]);
	pair_down();
}

Test(seal, flipped_bit)
{
	tamper(R_FLIP, "authentication failed");
}

Test(seal, replayed_record)
{
	tamper(R_REPLAY, "authentication failed");
}

Test(seal, dropped_record)
{
	tamper(R_DROP, "authentication failed");
}

Test(seal, reordered_records)
{
	tamper(R_REORDER, "authentication failed");
}

Test(seal, truncated_record)
{
	tamper(R_TRUNCATE, "truncated");
}

/* RC semantics on the side that detects the tampering: its oldest
 * outstanding task (a send the peer cannot take: no receive posted, so it
 * waits in receiver-not-ready retries) fails with RDMX_E_AUTH. */
static struct counts sc;

static bool send_and_writes_done(void *arg)
{
	int all = NWRITES + 1;

	(void)arg;
	return sc.ok + sc.err > 0 && writes_done(&all);
}

Test(seal, detecting_side_fails_its_oldest_task_with_auth)
{
	struct rdmx_task *tasks[NWRITES + 1], *send;
	struct rdmx_buf sb;
	int one = 1;

	tls_test_log_capture();
	tls_test_log_clear();
	memset(wc, 0, sizeof(wc));
	memset(&sc, 0, sizeof(sc));
	pair_up(R_FLIP, true);
	/* tamper only with what travels towards B, whoever dialed */
	RB.only_to = 1;
	RA.only_to = 0;
	write_batch(0, 1, tasks);
	cr_assert(drive(&A, &B, writes_done, &one));
	cr_assert_eq(wc[0].ok, 1);
	sb = (struct rdmx_buf){B.mr, B.mem + MEM - 64, 8, NULL};
	cr_assert_rc(rdmx_task_send_alloc(B.ctx, B.conn, &sb, &sc, &send), RDMX_OK);
	cr_assert_rc(rdmx_task_submit(send), RDMX_OK);
	__atomic_store_n(&RA.armed, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&RB.armed, 1, __ATOMIC_SEQ_CST);
	write_batch(1, NWRITES, tasks);
	cr_assert(drive(&A, &B, send_and_writes_done, NULL), "tasks did not complete");
	cr_assert_eq(sc.ok, 0);
	cr_assert_eq(sc.err, 1);
	cr_assert_eq(sc.status, RDMX_E_AUTH, "the send failed with %s", rdmx_err_name(sc.status));
	for (int i = 1; i <= NWRITES; i++)
		cr_assert_eq(wc[i].err, 1, "write %d: ok %d err %d", i, wc[i].ok, wc[i].err);
	cr_assert(tls_test_log_contains("authentication failed"));
	rdmx_task_free(send);
	for (int i = 0; i <= NWRITES; i++)
		rdmx_task_free(tasks[i]);
	pair_down();
}

/* The continuation of a write's payload (records after the one holding its
 * header) is decrypted straight into the target region. A bit flipped in
 * such a record: the write fails exactly once, the receiver's connection goes
 * to error with the log line, and no later completion appears. */
Test(seal, tampered_continuation_record_fails_the_write_once)
{
	struct rdmx_task *tasks[NWRITES + 1];
	int one = 1, two = 2;

	tls_test_log_capture();
	tls_test_log_clear();
	memset(wc, 0, sizeof(wc));
	pair_up(R_FLIP, true);
	RB.only_to = 1; /* towards B, whoever dialed */
	RA.only_to = 0;
	write_batch(0, 1, tasks);
	cr_assert(drive(&A, &B, writes_done, &one));
	cr_assert_eq(wc[0].ok, 1, "the clean write failed: %s", rdmx_err_name(wc[0].status));
	/* WLEN spans four records: let the first (frame header and the start of
	 * the payload) pass, flip a bit in the second (payload only) */
	RA.skip = RB.skip = 1;
	__atomic_store_n(&RA.armed, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&RB.armed, 1, __ATOMIC_SEQ_CST);
	write_batch(1, 1, tasks);
	cr_assert(drive(&A, &B, writes_done, &two), "the write did not complete");
	cr_assert(drive(&A, &B, conn_in_error, NULL), "the receiver did not leave the connection");
	cr_assert(__atomic_load_n(&RA.done, __ATOMIC_SEQ_CST) ||
	          __atomic_load_n(&RB.done, __ATOMIC_SEQ_CST));
	cr_assert_eq(wc[1].ok, 0, "a write through a tampered record succeeded");
	cr_assert_eq(wc[1].err, 1, "the write completed %d times", wc[1].ok + wc[1].err);
	for (int k = 0; k < 50; k++) {
		rdmx_pe_progress(A.pe);
		rdmx_pe_progress(B.pe);
	}
	cr_assert_eq(wc[0].ok + wc[0].err, 1);
	cr_assert_eq(wc[1].ok + wc[1].err, 1);
	cr_assert(tls_test_log_contains("authentication failed"));
	rdmx_task_free(tasks[0]);
	rdmx_task_free(tasks[1]);
	pair_down();
}

/* ---- the seal pipe: payload records sealed on the sender's NIC thread ----
 *
 * wait_for_nic makes the sending flush leave every posted record to A's NIC
 * thread (never taken back), so these tests run the pipelined path whatever
 * the scheduling; nic_records shows that it did. */

static struct rdmx_mr_remote *b_remote(void)
{
	static struct rdmx_mr_remote *rm;
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];

	if (!rm) {
		cr_assert_rc(rdmx_mr_get_descriptor(B.mr, desc), RDMX_OK);
		cr_assert_rc(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &rm), RDMX_OK);
	}
	return rm;
}

/* Task i writes A.mem[src, src + len) (filled with `fill` first) into
 * B.mem[dst, dst + len). */
static struct rdmx_task *pipe_write(int i, size_t src, size_t dst, size_t len, int fill)
{
	static struct rdmx_buf sb[NWRITES + 1];
	struct rdmx_rbuf db = {b_remote(), dst, len};
	struct rdmx_task *t;

	if (fill >= 0)
		memset(A.mem + src, fill, len);
	sb[i] = (struct rdmx_buf){A.mr, A.mem + src, len, NULL};
	cr_assert_rc(rdmx_task_write_alloc(A.ctx, A.conn, &sb[i], &db, &wc[i], &t), RDMX_OK);
	cr_assert_rc(rdmx_task_submit(t), RDMX_OK);
	return t;
}

static uint64_t pipe_sealed(void)
{
	return atomic_load(&TCP_DEV(A.dev)->seal_pipe.nic_records);
}

static void pipe_up(enum relay_mode mode)
{
	pair_up(mode, true);
	atomic_store(&TCP_DEV(A.dev)->seal_pipe.wait_for_nic, true);
	RB.only_to = 1; /* tampering: only what travels towards B */
	RA.only_to = 0;
}

/* A 1 MiB write is 17 records: its header's, then 16 of payload only, which
 * the pipe seals. One goes through clean; in the next the relay flips a bit
 * of the fifth record (a payload record the NIC thread sealed): the write
 * fails exactly once, the receiver logs the refusal and leaves the
 * connection, no completion follows. */
Test(seal, pipelined_write_with_a_tampered_record_fails_once)
{
	struct rdmx_task *t[2];
	int one = 1, two = 2;

	tls_test_log_capture();
	tls_test_log_clear();
	memset(wc, 0, sizeof(wc));
	pipe_up(R_FLIP);
	t[0] = pipe_write(0, 0, 0, MEM, 0xc1);
	cr_assert(drive(&A, &B, writes_done, &one));
	cr_assert_eq(wc[0].ok, 1, "the clean write failed: %s", rdmx_err_name(wc[0].status));
	cr_assert(memcmp(A.mem, B.mem, MEM) == 0, "the pipelined write did not land intact");
	cr_assert_gt(pipe_sealed(), 0, "no record went through the pipe");
	RA.skip = RB.skip = 4;
	__atomic_store_n(&RA.armed, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&RB.armed, 1, __ATOMIC_SEQ_CST);
	t[1] = pipe_write(1, 0, 0, MEM, 0xc2);
	cr_assert(drive(&A, &B, writes_done, &two), "the write did not complete");
	cr_assert(drive(&A, &B, conn_in_error, NULL), "the receiver did not leave the connection");
	cr_assert(__atomic_load_n(&RB.done, __ATOMIC_SEQ_CST) ||
	          __atomic_load_n(&RA.done, __ATOMIC_SEQ_CST));
	cr_assert_eq(wc[1].ok, 0, "a write through a tampered record succeeded");
	cr_assert_eq(wc[1].err, 1);
	for (int k = 0; k < 50; k++) {
		rdmx_pe_progress(A.pe);
		rdmx_pe_progress(B.pe);
	}
	cr_assert_eq(wc[0].ok + wc[0].err, 1);
	cr_assert_eq(wc[1].ok + wc[1].err, 1, "the write completed %d times", wc[1].ok + wc[1].err);
	cr_assert(tls_test_log_contains("authentication failed"));
	rdmx_task_free(t[0]);
	rdmx_task_free(t[1]);
	pair_down();
}

/* The payload after a header sealed in the same flush goes to the pipe
 * too: a write of exactly one pipe of payload records (TCP_PIPE_RECS records
 * of TCP_SEAL_MAX bytes) is its header's record, sealed inline, then a pipe
 * that the NIC thread seals whole; the write lands intact. */
Test(seal, pipelined_payload_follows_its_header_into_the_pipe)
{
	const size_t len = (size_t)TCP_PIPE_RECS * TCP_SEAL_MAX;
	struct rdmx_task *t;
	uint64_t before;
	int one = 1;

	cr_assert_leq(len, MEM);
	memset(wc, 0, sizeof(wc));
	pipe_up(R_FORWARD);
	before = pipe_sealed();
	for (size_t k = 0; k < len; k++)
		A.mem[k] = (uint8_t)(k / 4099 + 7);
	t = pipe_write(0, 0, 0, len, -1);
	cr_assert(drive(&A, &B, writes_done, &one));
	cr_assert_eq(wc[0].ok, 1, "the write failed: %s", rdmx_err_name(wc[0].status));
	cr_assert(memcmp(A.mem, B.mem, len) == 0, "the pipelined write did not land intact");
	cr_assert_eq(pipe_sealed() - before, TCP_PIPE_RECS,
	             "the NIC sealed %llu of the write's %u payload records",
	             (unsigned long long)(pipe_sealed() - before), TCP_PIPE_RECS);
	rdmx_task_free(t);
	pair_down();
}

/* Writes submitted back to back share the send queue: the header of the
 * second follows the payload records of the first that the pipe holds.
 * Three writes, the second over the same bytes as the first: every write
 * succeeds and the target holds the later bytes where they overlap. */
Test(seal, pipelined_writes_back_to_back_stay_in_order)
{
	struct rdmx_task *t[3];
	const size_t half = MEM / 2;
	int three = 3;

	memset(wc, 0, sizeof(wc));
	pipe_up(R_FORWARD);
	t[0] = pipe_write(0, 0, 0, half, 0xd1);
	t[1] = pipe_write(1, half, 0, half, 0xd2);
	for (size_t k = 0; k < half; k++) /* not one 64 KiB pattern: order shows */
		A.mem[k] = (uint8_t)(k / 4099);
	memcpy(B.mem + half, "stale", 5);
	t[2] = pipe_write(2, 0, half, half, -1);
	cr_assert(drive(&A, &B, writes_done, &three));
	for (int i = 0; i < 3; i++)
		cr_assert_eq(wc[i].ok, 1, "write %d: %s", i, rdmx_err_name(wc[i].status));
	for (size_t k = 0; k < half; k++)
		cr_assert_eq(B.mem[k], 0xd2, "byte %zu: the first write landed after the second",
		             k);
	cr_assert(memcmp(B.mem + half, A.mem, half) == 0, "the third write is not intact");
	cr_assert_gt(pipe_sealed(), 0, "no record went through the pipe");
	for (int i = 0; i < 3; i++)
		rdmx_task_free(t[i]);
	pair_down();
}

/* The target goes away in the middle of pipelined writes: every write
 * completes once, with an error, and the source memory is released right
 * after the last completion; nothing reads it afterwards (ASan stage: a
 * record still being sealed from it would be a use after free). */
static bool a_writes_done(void *arg)
{
	int n = *(int *)arg;

	for (int i = 0; i < n; i++)
		if (wc[i].ok + wc[i].err == 0)
			return false;
	return A.ended > 0;
}

Test(seal, target_gone_during_pipelined_writes_frees_everything)
{
	struct rdmx_task *t[NWRITES];
	const size_t len = MEM / NWRITES;
	int all = NWRITES, one = 1;

	memset(wc, 0, sizeof(wc));
	pipe_up(R_FORWARD);
	t[0] = pipe_write(0, 0, 0, len, 0xe0);
	cr_assert(drive(&A, &B, writes_done, &one));
	cr_assert_eq(wc[0].ok, 1);
	cr_assert_gt(pipe_sealed(), 0, "no record went through the pipe");
	memset(wc, 0, sizeof(wc));
	rdmx_task_free(t[0]);
	for (int i = 0; i < NWRITES; i++)
		t[i] = pipe_write(i, (size_t)i * len, (size_t)i * len, len, 0xe1 + i);
	/* B goes away at once: A learns it in the middle of its writes */
	relay_stop(&RA);
	relay_stop(&RB);
	{
		int64_t until = tls_test_now_ms() + 20000;

		while (!a_writes_done(&all) && tls_test_now_ms() < until) {
			rdmx_pe_progress(A.pe);
			rdmx_pe_wait(A.pe, 1);
		}
	}
	cr_assert(a_writes_done(&all), "A's writes did not all complete");
	rdmx_mr_dereg(&A.mr);
	free(A.mem);
	A.mem = NULL;
	for (int i = 0; i < NWRITES; i++) {
		cr_assert_eq(wc[i].ok + wc[i].err, 1, "write %d completed %d times", i,
		             wc[i].ok + wc[i].err);
		rdmx_task_free(t[i]);
	}
	for (int k = 0; k < 50; k++)
		rdmx_pe_progress(A.pe);
	for (int i = 0; i < NWRITES; i++)
		cr_assert_eq(wc[i].ok + wc[i].err, 1);
	/* pair_down without its relay_stop: the relays are stopped */
	if (!B.ended)
		rdmx_conn_disconnect(B.conn);
	side_close(&A);
	side_close(&B);
	relay_free(&RA);
	relay_free(&RB);
}

/* Sealed writes through a connection-bound grant: a multi-record write
 * inside the grant lands intact (its continuation records are decrypted
 * straight into the region), one reaching past the grant's end is refused
 * with RDMX_E_REMOTE_ACCESS and touches no byte of the region. */
static struct counts gc[2];

static bool grant_writes_done(void *arg)
{
	int i = *(int *)arg;

	return gc[i].ok + gc[i].err > 0;
}

Test(seal, sealed_write_into_grant_and_outside_it)
{
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
	struct rdmx_mr_remote *rm, *big;
	struct rdmx_mr_grant *g = NULL;
	struct rdmx_task *t0, *t1;
	struct rdmx_buf src;
	struct rdmx_rbuf dst;
	const size_t glen = 2 * WLEN;
	int i0 = 0, i1 = 1;

	memset(gc, 0, sizeof(gc));
	pair_up(R_FORWARD, true);
	cr_assert_rc(rdmx_mr_grant(B.mr, B.conn, 0, glen,
	                           RDMX_ACCESS_REMOTE_WRITE | RDMX_ACCESS_REMOTE_READ, &g),
	             RDMX_OK);
	cr_assert_rc(rdmx_mr_grant_get_descriptor(g, desc), RDMX_OK);
	cr_assert_rc(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &rm), RDMX_OK);
	for (size_t k = 0; k < WLEN; k++)
		A.mem[k] = (uint8_t)(k * 7 + 3);
	src = (struct rdmx_buf){A.mr, A.mem, WLEN, NULL};
	dst = (struct rdmx_rbuf){rm, 0, WLEN};
	cr_assert_rc(rdmx_task_write_alloc(A.ctx, A.conn, &src, &dst, &gc[0], &t0), RDMX_OK);
	cr_assert_rc(rdmx_task_submit(t0), RDMX_OK);
	cr_assert(drive(&A, &B, grant_writes_done, &i0));
	cr_assert_eq(gc[0].ok, 1, "the write inside the grant failed: %s",
	             rdmx_err_name(gc[0].status));
	cr_assert(memcmp(B.mem, A.mem, WLEN) == 0, "the granted region does not hold the data");
	/* [WLEN + WLEN / 2, + WLEN) crosses the grant's end; the initiator
	 * claims a longer grant (its descriptor's length field rewritten, as a
	 * hostile peer would), so only the target's check stands in the way */
	rdmx__st64(desc + 16, MEM);
	cr_assert_rc(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &big), RDMX_OK);
	dst = (struct rdmx_rbuf){big, WLEN + WLEN / 2, WLEN};
	cr_assert_rc(rdmx_task_write_alloc(A.ctx, A.conn, &src, &dst, &gc[1], &t1), RDMX_OK);
	cr_assert_rc(rdmx_task_submit(t1), RDMX_OK);
	cr_assert(drive(&A, &B, grant_writes_done, &i1));
	cr_assert_eq(gc[1].ok, 0);
	cr_assert_eq(gc[1].err, 1);
	cr_assert_eq(gc[1].status, RDMX_E_REMOTE_ACCESS, "refused with %s",
	             rdmx_err_name(gc[1].status));
	for (size_t k = WLEN; k < MEM; k++)
		cr_assert_eq(B.mem[k], 0, "byte %zu of the region was written", k);
	rdmx_task_free(t0);
	rdmx_task_free(t1);
	rdmx_mr_remote_delete(&rm);
	rdmx_mr_remote_delete(&big);
	rdmx_mr_grant_revoke(&g);
	pair_down();
}

/* A plain hello never reaches a keyed export (no downgrade): the keyed side
 * refuses it as a bad token. */
Test(seal, keyed_export_refuses_plain_peer)
{
	const void *da, *db;
	size_t la, lb;
	struct rdmx_conn_keys k;

	tls_test_log_capture();
	tls_test_log_clear();
	side_open(&A);
	side_open(&B);
	cr_assert_rc(rdmx_ctx_export(A.ctx, &da, &la, &A.conn), RDMX_OK);
	cr_assert_rc(rdmx_ctx_export(B.ctx, &db, &lb, &B.conn), RDMX_OK);
	keys_fill(&k, 9, false);
	/* whoever dials, the keyed side either refuses the hello or dials sealed */
	cr_assert_rc(rdmx_conn_set_data_keys(A.conn, &k), RDMX_OK);
	cr_assert_rc(rdmx_ctx_connect(A.ctx, db, lb, A.conn), RDMX_OK);
	cr_assert_rc(rdmx_ctx_connect(B.ctx, da, la, B.conn), RDMX_OK);
	{
		int64_t until = tls_test_now_ms() + 20000;

		while ((A.ended == 0 || B.ended == 0) && tls_test_now_ms() < until) {
			rdmx_pe_progress(A.pe);
			rdmx_pe_progress(B.pe);
			rdmx_pe_wait(A.pe, 1);
		}
	}
	cr_assert_eq(A.established + B.established, 0, "a mixed pair came up");
	cr_assert(A.ended == 1 && B.ended == 1, "ended %d %d", A.ended, B.ended);
	side_close(&A);
	side_close(&B);
}

/* ---- a kv-like secure RPC session through the relays ---- */

#define KV_PUT "rdmx.test.Kv/Put"
#define KV_GET "rdmx.test.Kv/Get"
#define KEY "kv-secret-key-5f1c9e2a"
#define VLEN (60u * 1000u)

static struct {
	struct rdmx_test_ev_thread ev;
	struct test_secure_server srv;
	uint8_t value[VLEN];
	size_t vlen;
} S;

static void kv_put(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	(void)arg;
	if (len < sizeof(KEY) - 1 || len - (sizeof(KEY) - 1) > VLEN) {
		rdmx_rpc_respond(call, RDMX_RPC_INVALID_ARGUMENT, "bad put", NULL);
		return;
	}
	S.vlen = len - (sizeof(KEY) - 1);
	memcpy(S.value, (const uint8_t *)req + sizeof(KEY) - 1, S.vlen);
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, NULL);
}

static void kv_get(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(S.value, S.vlen);

	(void)arg;
	(void)req;
	(void)len;
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p);
}

static const struct test_secure_method kv_methods[] = {{KV_PUT, kv_put}, {KV_GET, kv_get}};

/* Every registered region of a device as the 32-byte descriptor a peer
 * would get (rdmx/mr.h format): found in the recording means leaked. */
static int device_descriptors(struct rdmx_dev *dev, uint8_t (*out)[32], int max)
{
	struct rdmx__tcp_keytab *kt = &TCP_DEV(dev)->keys;
	int n = 0;

	pthread_rwlock_rdlock(&kt->lock); /* header-only access: the library hides its internals */
	for (uint32_t i = 0; i <= kt->mask && n < max; i++) {
		const struct rdmx__tcp_region *r = &kt->slots[i];
		uint8_t *d = out[n];

		if (!r->key)
			continue;
		memset(d, 0, 32);
		rdmx__st16(d, 0x5852);
		d[2] = 1;
		d[3] = 1;
		rdmx__st32(d + 4, r->access);
		rdmx__st64(d + 8, (uint64_t)(uintptr_t)r->addr);
		rdmx__st64(d + 16, r->len);
		rdmx__st32(d + 24, r->key);
		n++;
	}
	pthread_rwlock_unlock(&kt->lock);
	return n;
}

struct leak {
	bool value, key, token, descriptor;
	int n_desc;
};

static void kv_session(bool plaintext, struct leak *lk)
{
	struct rdmx_tls_config *ccfg;
	struct rdmx_rpc_secure_opts o;
	struct rdmx_rpc_secure_conn *conn = NULL;
	struct rdmx_rpc_reply reply;
	struct rdmx_rpc_payload req;
	struct rdmx_ctx_stats st;
	struct rdmx_dev *cdev;
	struct relay rs, rcl;
	struct tcp_conn *tcn;
	uint8_t tokens[2][RDMX__TCP_TOKEN_SIZE];
	static uint8_t put[sizeof(KEY) - 1 + VLEN];
	static uint8_t descs[64][32];
	int nd = 0;

	memset(&S, 0, sizeof(S));
	S.srv.methods = kv_methods;
	S.srv.n_methods = sizeof(kv_methods) / sizeof(kv_methods[0]);
	memset(lk, 0, sizeof(*lk));
	tls_test_log_capture();
	tls_test_log_clear();
	S.srv.cfg = tls_test_config(&pki, "server", "client.test", 0);
	ccfg = tls_test_config(&pki, "client", "server.test", 0);
	cr_assert(S.srv.cfg && ccfg);
	cr_assert_rc(rdmx_tls_config_set_data_plaintext(S.srv.cfg, plaintext), RDMX_OK);
	cr_assert_rc(rdmx_tls_config_set_data_plaintext(ccfg, plaintext), RDMX_OK);
	cr_assert_rc(rdmx_dev_open("tcp", &S.srv.dev), RDMX_OK);
	cr_assert_rc(rdmx_dev_open("tcp", &cdev), RDMX_OK);
	relay_start(&rs, S.srv.dev, R_FORWARD);
	relay_start(&rcl, cdev, R_FORWARD);
	cr_assert_rc(rdmx_test_ev_thread_start(&S.ev, test_secure_server_setup,
	                                       test_secure_server_teardown, &S.srv),
	             RDMX_OK);

	rdmx_rpc_secure_opts_init(&o);
	o.dev = cdev;
	cr_assert_rc(rdmx_rpc_secure_connect("127.0.0.1", S.srv.port, ccfg, NULL, &o, &conn),
	             RDMX_OK);
	tcn = TCP_CONN(rdmx_chan_get_conn(rdmx_rpc_ep_get_chan(rdmx_rpc_secure_conn_get_ep(conn))));
	memcpy(tokens[0], tcn->my_token, sizeof(tokens[0]));
	memcpy(tokens[1], tcn->peer_token, sizeof(tokens[1]));
	for (unsigned i = 0; i < VLEN; i++)
		put[sizeof(KEY) - 1 + i] = (uint8_t)((i * 2654435761u) >> 13);
	memcpy(put, KEY, sizeof(KEY) - 1);
	req = rdmx_rpc_bytes(put, sizeof(put));
	cr_assert_rc(rdmx_rpc_call(rdmx_rpc_secure_conn_get_ep(conn), rdmx_rpc_method_id(KV_PUT),
	                           &req, NULL, &reply),
	             RDMX_OK);
	cr_assert_eq(reply.code, RDMX_RPC_OK);
	rdmx_rpc_reply_fini(&reply);
	req = rdmx_rpc_bytes(KEY, sizeof(KEY) - 1);
	cr_assert_rc(rdmx_rpc_call(rdmx_rpc_secure_conn_get_ep(conn), rdmx_rpc_method_id(KV_GET),
	                           &req, NULL, &reply),
	             RDMX_OK);
	cr_assert_eq(reply.code, RDMX_RPC_OK);
	cr_assert_eq(reply.len, VLEN);
	cr_assert(memcmp(reply.data, put + sizeof(KEY) - 1, VLEN) == 0);
	rdmx_rpc_reply_fini(&reply);
	cr_assert_rc(
	    rdmx_ctx_get_stats(rdmx_chan_worker_get_ctx(rdmx_chan_get_worker(
	                           rdmx_rpc_ep_get_chan(rdmx_rpc_secure_conn_get_ep(conn)))),
	                       &st),
	    RDMX_OK);
	cr_assert_eq(st.conns_sealed, plaintext ? 0 : 1);
	cr_assert_eq(st.conns_plaintext, plaintext ? 1 : 0);
	nd += device_descriptors(S.srv.dev, descs + nd, 32);
	nd += device_descriptors(cdev, descs + nd, 32);
	cr_assert(nd >= 2, "no registered rings found");

	cr_assert_rc(rdmx_rpc_secure_close(&conn), RDMX_OK);
	rdmx_test_ev_thread_stop(&S.ev);
	relay_stop(&rs);
	relay_stop(&rcl);

	cr_assert(rs.rec_len + rcl.rec_len > VLEN, "the relays recorded nothing");
	for (int i = 0; i < 2; i++) {
		struct relay *r = i ? &rcl : &rs;

		for (unsigned off = 0; off + 64 <= VLEN; off += 10000)
			lk->value |= relay_seen(r, put + sizeof(KEY) - 1 + off, 64);
		lk->key |= relay_seen(r, KEY, sizeof(KEY) - 1);
		lk->token |= relay_seen(r, tokens[0], sizeof(tokens[0])) ||
		             relay_seen(r, tokens[1], sizeof(tokens[1]));
		for (int d = 0; d < nd; d++)
			lk->descriptor |=
			    relay_seen(r, descs[d], 32) || relay_seen(r, descs[d] + 8, 8);
	}
	lk->n_desc = nd;
	relay_free(&rs);
	relay_free(&rcl);
	rdmx_dev_close(&S.srv.dev);
	rdmx_dev_close(&cdev);
	rdmx_tls_config_destroy(&S.srv.cfg);
	rdmx_tls_config_destroy(&ccfg);
}

static void pki_up(void)
{
	cr_assert_eq(tls_test_pki_create(&pki), 0);
}

static void pki_down(void)
{
	tls_test_pki_destroy(&pki);
}

Test(seal_session, kv_session_leaks_nothing, .init = pki_up, .fini = pki_down)
{
	struct leak lk;

	kv_session(false, &lk);
	cr_assert(!lk.value, "the 60 KB value crossed in the clear");
	cr_assert(!lk.key, "the key crossed in the clear");
	cr_assert(!lk.token, "a connection token crossed in the clear");
	cr_assert(!lk.descriptor, "a memory descriptor crossed in the clear");
	cr_assert(!tls_test_log_contains("data plane in plaintext"));
}

/* The control: asked for explicitly, the plaintext mode shows everything to
 * the relay (so the search above can see), says so at start and in stats. */
Test(seal_session, plaintext_mode_is_explicit_logged_and_visible, .init = pki_up, .fini = pki_down)
{
	struct leak lk;

	kv_session(true, &lk);
	cr_assert(lk.value && lk.key && lk.token && lk.descriptor,
	          "control: value %d key %d token %d descriptor %d", lk.value, lk.key, lk.token,
	          lk.descriptor);
	cr_assert(tls_test_log_contains("data plane in plaintext"));
}

/* Both ends must agree on the data plane: a plaintext client meets a
 * sealed server (and the other way round) with a refusal, never with a
 * connection in the weaker mode. */
static void mode_mismatch(bool server_plain)
{
	struct rdmx_tls_config *ccfg;
	struct rdmx_rpc_secure_opts o;
	struct rdmx_rpc_secure_conn *conn = NULL;
	int ret;

	memset(&S, 0, sizeof(S));
	S.srv.methods = kv_methods;
	S.srv.n_methods = sizeof(kv_methods) / sizeof(kv_methods[0]);
	tls_test_log_capture();
	tls_test_log_clear();
	S.srv.cfg = tls_test_config(&pki, "server", "client.test", 0);
	ccfg = tls_test_config(&pki, "client", "server.test", 0);
	cr_assert(S.srv.cfg && ccfg);
	cr_assert_rc(rdmx_tls_config_set_data_plaintext(S.srv.cfg, server_plain), RDMX_OK);
	cr_assert_rc(rdmx_tls_config_set_data_plaintext(ccfg, !server_plain), RDMX_OK);
	cr_assert_rc(rdmx_dev_open("tcp", &S.srv.dev), RDMX_OK);
	cr_assert_rc(rdmx_test_ev_thread_start(&S.ev, test_secure_server_setup,
	                                       test_secure_server_teardown, &S.srv),
	             RDMX_OK);
	rdmx_rpc_secure_opts_init(&o);
	o.device = "tcp";
	ret = rdmx_rpc_secure_connect("127.0.0.1", S.srv.port, ccfg, NULL, &o, &conn);
	cr_assert_lt(ret, 0, "a %s client connected to a %s server",
	             server_plain ? "sealed" : "plaintext", server_plain ? "plaintext" : "sealed");
	cr_assert_null(conn);
	rdmx_test_ev_thread_stop(&S.ev);
	cr_assert(tls_test_log_contains("data-plane mode mismatch"), "no log line of the refusal");
	rdmx_dev_close(&S.srv.dev);
	rdmx_tls_config_destroy(&S.srv.cfg);
	rdmx_tls_config_destroy(&ccfg);
}

Test(seal_session, plaintext_client_refused_by_sealed_server, .init = pki_up, .fini = pki_down)
{
	mode_mismatch(false);
}

Test(seal_session, sealed_client_refused_by_plaintext_server, .init = pki_up, .fini = pki_down)
{
	mode_mismatch(true);
}
