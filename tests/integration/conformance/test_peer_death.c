/* Peer process killed: a child process is the target of a connection (it
 * registers a region and posts receives); the parent submits many tasks on
 * that connection and keeps a second connection to a third party (an
 * in-process context), then SIGKILLs the child. Every task on the dead
 * connection completes exactly once with an error (or had succeeded before),
 * the connection's end is reported, and the second connection keeps working.
 *
 * The child opens its device after fork (no engine state crosses fork) and
 * talks to the parent over a socketpair; it never uses Criterion. */
#include "conformance.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_REGION (16u << 20)
#define CHILD_RECVS 16
#define NTASKS 200

static struct side P, T;

/* ---- framing over the socketpair: u32 length + bytes ---- */

static int put_msg(int fd, const void *p, uint32_t n)
{
	if (write(fd, &n, 4) != 4)
		return -1;
	return write(fd, p, n) == (ssize_t)n ? 0 : -1;
}

static int get_msg(int fd, void *p, uint32_t max, uint32_t *n)
{
	size_t got = 0;
	uint8_t *b = (uint8_t *)n;
	while (got < 4) {
		ssize_t r = read(fd, b + got, 4 - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	if (*n > max)
		return -1;
	got = 0;
	while (got < *n) {
		ssize_t r = read(fd, (uint8_t *)p + got, *n - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* ---- the child: plain calls, exit status says where it failed ---- */

static void child_cb(struct rdmx_task *t, void *ud, void *cud)
{
	(void)t;
	(void)ud;
	(void)cud;
}

static void child_main(int fd)
{
	struct rdmx_dev *dev = NULL;
	struct rdmx_pe *pe = NULL;
	struct rdmx_ctx *ctx = NULL;
	struct rdmx_mr *mr = NULL;
	struct rdmx_conn *conn = NULL;
	static struct rdmx_buf bufs[CHILD_RECVS];
	uint8_t *mem = aligned_alloc(4096, CHILD_REGION);
	uint8_t msg[512], desc[RDMX_MR_DESCRIPTOR_SIZE];
	const void *details;
	size_t dlen;
	uint32_t n;

	/* dies with the test, even stopped (SIGKILL reaches a stopped process) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (!mem)
		_exit(10);
	memset(mem, 0, CHILD_REGION);
	if (side_open_dev(1, &dev) || rdmx_pe_create(&pe) || rdmx_ctx_create(dev, pe, &ctx))
		_exit(11);
	if (rdmx_ctx_set_task_conf(ctx, RDMX_TASK_RECEIVE, child_cb, child_cb, CHILD_RECVS) ||
	    rdmx_ctx_start(ctx))
		_exit(12);
	if (rdmx_mr_reg(dev, mem, CHILD_REGION, RDMX_ACCESS_ALL, &mr) ||
	    rdmx_mr_get_descriptor(mr, desc))
		_exit(13);
	if (rdmx_ctx_export(ctx, &details, &dlen, &conn))
		_exit(14);
	if (put_msg(fd, details, (uint32_t)dlen) || put_msg(fd, desc, sizeof(desc)))
		_exit(15);
	if (get_msg(fd, msg, sizeof(msg), &n) || rdmx_ctx_connect(ctx, msg, n, conn))
		_exit(16);
	for (int i = 0; i < CHILD_RECVS; i++) {
		struct rdmx_task *t;
		bufs[i] = (struct rdmx_buf){.mr = mr, .addr = mem + 4096 * i, .len = 4096};
		if (rdmx_task_receive_alloc(ctx, &bufs[i], NULL, &t) || rdmx_task_submit(t))
			_exit(17);
	}
	if (put_msg(fd, "ready", 5))
		_exit(18);
	/* serve until killed (bounded in case the parent vanished) */
	uint64_t deadline = now_ms() + 120000;
	while (now_ms() < deadline) {
		if (rdmx_pe_progress(pe) == 0)
			usleep(100);
	}
	_exit(0);
}

/* ---- the parent ---- */

TestSuite(peer_death, .timeout = 180);

/* Forks the child (child_main) on one end of a socket pair; returns the
 * parent's end. */
static int start_child(pid_t *pid)
{
	int sp[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	*pid = fork();
	cr_assert(*pid >= 0, "fork: %s", strerror(errno));
	if (*pid == 0) {
		close(sp[0]);
		child_main(sp[1]);
		_exit(1);
	}
	close(sp[1]);
	return sp[0];
}

/* P's connection to the child behind fd, established: the child's details
 * and the descriptor of its region (into cdesc) come first, P's details go
 * back, then the child says it has posted its receives. */
static struct rdmx_conn *connect_to_child(int fd, pid_t pid,
                                          uint8_t cdesc[RDMX_MR_DESCRIPTOR_SIZE + 1])
{
	uint8_t cdet[512], ready[8];
	uint32_t cdlen, n;
	const void *pdet;
	size_t pdlen;
	struct rdmx_conn *pc = NULL;
	int st;

	cr_assert_eq(get_msg(fd, cdet, sizeof(cdet), &cdlen), 0,
	             "child gave no details (exit status %d)",
	             waitpid(pid, &st, WNOHANG) == pid ? WEXITSTATUS(st) : -1);
	cr_assert_eq(get_msg(fd, cdesc, RDMX_MR_DESCRIPTOR_SIZE + 1, &n), 0);
	cr_assert_eq(n, RDMX_MR_DESCRIPTOR_SIZE);
	ASSERT_OK(rdmx_ctx_export(P.ctx, &pdet, &pdlen, &pc));
	cr_assert_eq(put_msg(fd, pdet, (uint32_t)pdlen), 0);
	ASSERT_OK(rdmx_ctx_connect(P.ctx, cdet, cdlen, pc));
	cr_assert_eq(get_msg(fd, ready, sizeof(ready), &n), 0, "child failed to post receives");
	DRIVE_UNTIL(&P, NULL, conn_state(pc) == RDMX_CONN_ESTABLISHED);
	return pc;
}

Test(peer_death, killed_peer_completes_every_task_once)
{
	leak_begin();
	pid_t pid;
	int fd = start_child(&pid);

	side_open(&P, "parent", 0);
	side_open(&T, "third", 1);
	side_conf(&P, 128);
	side_conf(&T, 16);
	side_start(&P);
	side_start(&T);

	/* connect to the child */
	uint8_t cdesc[RDMX_MR_DESCRIPTOR_SIZE + 1];
	int st;
	struct rdmx_conn *pc = connect_to_child(fd, pid, cdesc);

	/* and to the third party */
	struct rdmx_conn *p2, *t2;
	connect_pair(&P, &T, &p2, &t2);

	/* 200 mixed tasks on the child's connection, a big write in the middle */
	struct rdmx_mr_remote *m = remote_from_desc(&P, cdesc);
	struct region *src = region_new(&P, 1 << 20, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct region *big = region_new(&P, CHILD_REGION, 0, 0x3b);
	pattern_fill(src->mem, 65536, 140);
	static struct rdmx_buf l[NTASKS];
	static struct rdmx_rbuf r[NTASKS];
	static struct tinfo ti[NTASKS];
	static int kind[NTASKS]; /* 0 write, 1 read, 2 send, 3 big write */
	int nsend = 0;
	for (int i = 0; i < NTASKS; i++) {
		struct rdmx_task *t = NULL;
		int k = (i == NTASKS / 2) ? 3 : i % 3;
		kind[i] = k;
		ti[i].tag = i;
		size_t off = 65536 + (size_t)(i % 64) * 1024;
		switch (k) {
		case 0:
			l[i] = lbuf(src, (size_t)(i % 16) * 1024, 1024);
			r[i] = rbuf(m, off, 0);
			ASSERT_OK(rdmx_task_write_alloc(P.ctx, pc, &l[i], &r[i], &ti[i], &t));
			break;
		case 1:
			l[i] = lbuf(src, 131072 + (size_t)i * 1024, 1024);
			r[i] = rbuf(m, off, 1024);
			ASSERT_OK(rdmx_task_read_alloc(P.ctx, pc, &r[i], &l[i], &ti[i], &t));
			break;
		case 2:
			l[i] = lbuf(src, 0, 512);
			ASSERT_OK(rdmx_task_send_alloc(P.ctx, pc, &l[i], &ti[i], &t));
			nsend++;
			break;
		case 3:
			/* the largest message the device takes (rxe: 8 MiB) */
			l[i] = lbuf(big, 0,
			            P.caps.max_message_size < CHILD_REGION
			                ? (size_t)P.caps.max_message_size
			                : CHILD_REGION);
			r[i] = rbuf(m, 0, 0);
			ASSERT_OK(rdmx_task_write_alloc(P.ctx, pc, &l[i], &r[i], &ti[i], &t));
			break;
		}
		ASSERT_OK(rdmx_task_submit(t));
	}
	cr_assert_gt(nsend, CHILD_RECVS, "the test needs sends that wait for receives");
	/* let a few complete, then kill the child with the rest in flight */
	DRIVE_UNTIL(&P, NULL, P.completions >= 10);
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	          "child ended otherwise (status 0x%x): it failed before the kill", st);
	close(fd);

	/* every task completes exactly once; the connection's end is reported */
	DRIVE_UNTIL3(&P, &T, NULL,
	             P.completions >= NTASKS &&
	                 conn_events(&P, CEV_DISCONNECTED, pc) + conn_events(&P, CEV_FAILURE, pc) >=
	                     1);
	drive_for(&P, &T, NULL, 100);
	int oks = 0, errs = 0, sends_ok = 0;
	for (int i = 0; i < NTASKS; i++) {
		cr_assert_eq(TI_DONE(&ti[i]), 1, "task %d (kind %d) completed %d times", i, kind[i],
		             TI_DONE(&ti[i]));
		cr_assert(!ti[i].bad, "task %d: callback and status disagree", i);
		if (ti[i].ok) {
			oks++;
			if (kind[i] == 2)
				sends_ok++;
		} else {
			errs++;
			cr_assert_neq(ti[i].status, RDMX_E_AGAIN);
		}
	}
	cr_assert_eq(P.completions, NTASKS, "%d completions for %d tasks", P.completions, NTASKS);
	cr_assert_leq(sends_ok, CHILD_RECVS, "%d sends succeeded, the child posted %d receives",
	              sends_ok, CHILD_RECVS);
	cr_assert_gt(errs, 0, "no task failed although the peer died with tasks in flight");
	/* completions of the connection stayed in submission order: once a task
	 * failed, no later one succeeded */
	int first_err = -1;
	for (int c = 0; c < P.norder; c++) {
		struct tinfo *x = P.order[c];
		if (!x || x < ti || x >= ti + NTASKS)
			continue;
		cr_assert_eq(x->tag, c, "completion %d is task %d", c, x->tag);
		if (x->err && first_err < 0)
			first_err = c;
		if (first_err >= 0)
			cr_assert(x->err, "task %d succeeded after task %d failed", c, first_err);
	}
	cr_assert_eq(conn_events(&P, CEV_DISCONNECTED, pc) + conn_events(&P, CEV_FAILURE, pc), 1,
	             "the end of the dead connection was reported more than once");

	/* the third-party connection keeps working: send/recv round trip */
	struct region *rt = region_new(&T, 4096, RDMX_ACCESS_ALL, 0);
	struct region *rp = region_new(&P, 4096, RDMX_ACCESS_ALL, 0);
	pattern_fill(rp->mem, 300, 141);
	pattern_fill(rt->mem + 2048, 200, 142);
	struct rdmx_buf td = lbuf(rt, 0, 1024), ts = lbuf(rt, 2048, 200);
	struct rdmx_buf pd = lbuf(rp, 1024, 1024), ps = lbuf(rp, 0, 300);
	struct tinfo ttr = {0}, tts = {0}, tpr = {0}, tps = {0};
	struct rdmx_task *t;
	post_recv(&T, &td, &ttr);
	post_recv(&P, &pd, &tpr);
	ASSERT_OK(rdmx_task_send_alloc(P.ctx, p2, &ps, &tps, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&P, &T, TI_DONE(&ttr) && TI_DONE(&tps));
	ASSERT_DONE_OK(&tps);
	ASSERT_DONE_OK(&ttr);
	cr_assert_eq(ttr.conn, t2);
	cr_assert(pattern_check(rt->mem, 300, 141));
	ASSERT_OK(rdmx_task_send_alloc(T.ctx, t2, &ts, &tts, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&P, &T, TI_DONE(&tpr) && TI_DONE(&tts));
	ASSERT_DONE_OK(&tts);
	ASSERT_DONE_OK(&tpr);
	cr_assert_eq(tpr.conn, p2);
	cr_assert_eq(tpr.len, 200u);
	cr_assert(pattern_check(rp->mem + 1024, 200, 142));

	pair_close(&P, &T);
	leak_end();
}

/* Peer process frozen (SIGSTOP): nothing tells the parent, its tasks only
 * stop being answered. The transport timeout (RC's ack timeout and retry
 * count; shortened here where the provider honours it, verbs keeps its own)
 * declares the peer lost: every task completes exactly once, the failed ones
 * with CONN_ABORTED, the connection's end is reported once, and a second
 * connection keeps working. Decided on statuses, not on elapsed time.
 * On verbs the peer's NIC (rxe in its kernel, or the hardware) answers for
 * a frozen process, as RC intends: only a provider whose NIC lives in the
 * process (tcp's soft NIC) sees a frozen process as a lost peer. */
Test(peer_death, frozen_peer_fails_outstanding_tasks_once)
{
	enum { N = 64 };
	int st;
	if (strcmp(env_device(0), "tcp") != 0 || strcmp(env_device(1), "tcp") != 0)
		cr_skip_test("a frozen process is a lost peer only where the NIC is in the "
		             "process (tcp); devices %s/%s",
		             env_device(0), env_device(1));
	leak_begin();
	pid_t pid;
	int fd = start_child(&pid);

	side_open(&P, "parent", 0);
	side_open(&T, "third", 1);
	ASSERT_OK(rdmx_ctx_set_transport_timeout(P.ctx, 100));
	ASSERT_OK(rdmx_ctx_set_retry_count(P.ctx, 2));
	side_conf(&P, 128);
	side_conf(&T, 16);
	side_start(&P);
	side_start(&T);

	uint8_t cdesc[RDMX_MR_DESCRIPTOR_SIZE + 1];
	struct rdmx_conn *pc = connect_to_child(fd, pid, cdesc);
	struct rdmx_conn *p2, *t2;
	connect_pair(&P, &T, &p2, &t2);

	/* one write answered while the child runs, then the freeze, then work */
	struct rdmx_mr_remote *m = remote_from_desc(&P, cdesc);
	struct region *src = region_new(&P, 1 << 20, RDMX_ACCESS_LOCAL_WRITE, 0);
	static struct rdmx_buf l[N + 1];
	static struct rdmx_rbuf r[N + 1];
	static struct tinfo ti[N + 1];
	struct rdmx_task *t = NULL;
	l[N] = lbuf(src, 0, 1024);
	r[N] = rbuf(m, 0, 0);
	ASSERT_OK(rdmx_task_write_alloc(P.ctx, pc, &l[N], &r[N], &ti[N], &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&P, NULL, TI_DONE(&ti[N]));
	ASSERT_DONE_OK(&ti[N]);
	cr_assert_eq(kill(pid, SIGSTOP), 0);
	cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
	cr_assert(WIFSTOPPED(st), "child not stopped (status 0x%x)", st);
	for (int i = 0; i < N; i++) {
		ti[i].tag = i;
		l[i] = lbuf(src, (size_t)(i % 16) * 65536, 65536);
		r[i] = rbuf(m, (size_t)(i % 16) * 65536, 0);
		ASSERT_OK(rdmx_task_write_alloc(P.ctx, pc, &l[i], &r[i], &ti[i], &t));
		ASSERT_OK(rdmx_task_submit(t));
	}
	DRIVE_UNTIL3(&P, &T, NULL,
	             TI_DONE(&ti[N - 1]) &&
	                 conn_events(&P, CEV_DISCONNECTED, pc) + conn_events(&P, CEV_FAILURE, pc) >=
	                     1);
	drive_for(&P, &T, NULL, 50);
	int errs = 0;
	for (int i = 0; i < N; i++) {
		cr_assert_eq(TI_DONE(&ti[i]), 1, "task %d completed %d times", i, TI_DONE(&ti[i]));
		cr_assert(!ti[i].bad, "task %d: callback and status disagree", i);
		if (!ti[i].ok) {
			errs++;
			cr_assert_eq(ti[i].status, RDMX_E_CONN_ABORTED, "task %d: %s", i,
			             rdmx_err_name(ti[i].status));
		}
	}
	cr_assert_gt(errs, 0, "no task failed although the peer froze with 4 MiB to take");
	cr_assert_eq(conn_events(&P, CEV_DISCONNECTED, pc) + conn_events(&P, CEV_FAILURE, pc), 1,
	             "the end of the frozen connection was reported more than once");

	/* the third-party connection keeps working */
	struct region *rt = region_new(&T, 4096, RDMX_ACCESS_ALL, 0);
	struct region *rp = region_new(&P, 4096, RDMX_ACCESS_ALL, 0);
	pattern_fill(rp->mem, 300, 151);
	struct rdmx_buf td = lbuf(rt, 0, 1024), ps = lbuf(rp, 0, 300);
	struct tinfo ttr = {0}, tps = {0};
	post_recv(&T, &td, &ttr);
	ASSERT_OK(rdmx_task_send_alloc(P.ctx, p2, &ps, &tps, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&P, &T, TI_DONE(&ttr) && TI_DONE(&tps));
	ASSERT_DONE_OK(&tps);
	ASSERT_DONE_OK(&ttr);
	cr_assert(pattern_check(rt->mem, 300, 151));

	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	close(fd);
	pair_close(&P, &T);
	leak_end();
}
