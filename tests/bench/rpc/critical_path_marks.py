#!/usr/bin/env python3
"""tests/bench/rpc/critical_path_marks.py SRC_COPY — puts the timestamp marks
of tests/bench/rpc/critical-path.sh into a COPY of the source tree (never the
checkout: the script passes its own copy).

Each mark reads the TSC (rdtsc, ~25 cycles) and keeps the cycles since the
last recv that returned bytes on the tcp provider's staged path, once per
message; mark 14 (the sendmsg that follows) ends the path, and a recv that
finds nothing ends it uncounted. At exit each mark prints its median:
`CPMARK <mark> <cycles> <count>`, after `CPMARK tsc_ghz <GHz>`. A mark site
that moved makes this script fail with the anchor it could not find: refresh
the anchor here, next to the code it names."""
import sys

src = sys.argv[1]

HEADER = r'''#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>
#define RDMX_CP_MARKS 24
#define RDMX_CP_SAMPLES 65536
extern unsigned long long rdmx_cp_t0, rdmx_cp_seen[RDMX_CP_MARKS];
extern unsigned rdmx_cp_d[RDMX_CP_MARKS][RDMX_CP_SAMPLES], rdmx_cp_n[RDMX_CP_MARKS];
static inline void rdmx_cp_mark(int i)
{
	if (!rdmx_cp_t0 || rdmx_cp_seen[i] == rdmx_cp_t0)
		return; /* the first pass of each message only */
	rdmx_cp_seen[i] = rdmx_cp_t0;
	if (rdmx_cp_n[i] < RDMX_CP_SAMPLES)
		rdmx_cp_d[i][rdmx_cp_n[i]++] = (unsigned)(__rdtsc() - rdmx_cp_t0);
}
'''

DUMP = r'''
unsigned long long rdmx_cp_t0, rdmx_cp_seen[RDMX_CP_MARKS];
unsigned rdmx_cp_d[RDMX_CP_MARKS][RDMX_CP_SAMPLES], rdmx_cp_n[RDMX_CP_MARKS];
static unsigned long long rdmx_cp_tsc0, rdmx_cp_ns0;
static unsigned long long rdmx_cp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}
static int rdmx_cp_cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}
static void __attribute__((constructor)) rdmx_cp_start(void)
{
	rdmx_cp_ns0 = rdmx_cp_now();
	rdmx_cp_tsc0 = __rdtsc();
}
static void __attribute__((destructor)) rdmx_cp_dump(void)
{
	double ghz = (double)(__rdtsc() - rdmx_cp_tsc0) / (double)(rdmx_cp_now() - rdmx_cp_ns0);

	fprintf(stderr, "CPMARK tsc_ghz %.3f\n", ghz);
	for (int i = 0; i < RDMX_CP_MARKS; i++) {
		if (!rdmx_cp_n[i])
			continue;
		qsort(rdmx_cp_d[i], rdmx_cp_n[i], sizeof(unsigned), rdmx_cp_cmp);
		fprintf(stderr, "CPMARK %d %u %u\n", i, rdmx_cp_d[i][rdmx_cp_n[i] / 2], rdmx_cp_n[i]);
	}
}
'''


def edit(path, old, new):
    p = f"{src}/{path}"
    s = open(p).read()
    if old not in s:
        sys.exit(f"critical_path_marks.py: anchor not found in {path}:\n{old}")
    open(p, "w").write(s.replace(old, new, 1))


def after_brace(path, signature, text):
    p = f"{src}/{path}"
    s = open(p).read()
    i = s.find(signature)
    if i < 0:
        sys.exit(f"critical_path_marks.py: function not found in {path}: {signature}")
    j = s.index("{", i)
    open(p, "w").write(s[: j + 1] + "\n\t" + text + s[j + 1 :])


def header(path):
    p = f"{src}/{path}"
    text = open(p).read()
    open(p, "w").write(HEADER + text)


for f in ["engine/providers/tcp/rx.c", "engine/providers/tcp/tx.c",
          "engine/providers/tcp/ctx.c", "engine/providers/tcp/ops.c",
          "rpc/rpc.c", "rpc/call.c", "rpc/rpc_server.c", "chan/chan_tx.c"]:
    header(f)

# tcp provider: bytes in, frames parsed, completions delivered, frame out
edit("engine/providers/tcp/rx.c", '#include "tcp.h"\n', '#include "tcp.h"\n' + DUMP)
edit("engine/providers/tcp/rx.c",  # a blocking wait's read (ctx_wait_read)
     "\tn = recv(c->fd, rx->stage, TCP_STAGE_SIZE, 0);\n\tif (n > 0) {\n",
     "\tn = recv(c->fd, rx->stage, TCP_STAGE_SIZE, 0);\n\tif (n > 0) {\n\t\trdmx_cp_t0 = __rdtsc();\n")
edit("engine/providers/tcp/rx.c",  # a poll's read
     "\t\t\tn = recv(c->fd, rx->stage, TCP_STAGE_SIZE, MSG_DONTWAIT);\n",
     "\t\t\tn = recv(c->fd, rx->stage, TCP_STAGE_SIZE, MSG_DONTWAIT);\n"
     "\t\t\trdmx_cp_t0 = n > 0 ? __rdtsc() : 0; /* a path that did not end in the poll\n"
     "\t\t\t\t\t\t\t     * that read its message is not counted */\n")
edit("engine/providers/tcp/rx.c", "done:\n\tif (got)\n", "done:\n\trdmx_cp_mark(1);\n\tif (got)\n")
edit("engine/providers/tcp/ctx.c",
     "\t\tpthread_mutex_unlock(&tc->lock);\n\t\tfor (unsigned i = 0; i < k; i++) {",
     "\t\tpthread_mutex_unlock(&tc->lock);\n\t\trdmx_cp_mark(2);\n"
     "\t\tfor (unsigned i = 0; i < k; i++) {")
after_brace("engine/providers/tcp/ctx.c", "static void deliver_task(struct rdmx_task *t, int status)",
            "rdmx_cp_mark(t->op == RDMX__OP_RECV ? 3 : 20);")
after_brace("engine/providers/tcp/ops.c", "int rdmx__tcp_post_send(struct rdmx_conn *conn",
            "rdmx_cp_mark(12);")
after_brace("engine/providers/tcp/ops.c", "int rdmx__tcp_post_msg(struct rdmx_conn *conn",
            "rdmx_cp_mark(12);")
edit("engine/providers/tcp/ctx.c", "\t\trdmx__msg_arrived(c->conn, e->imm, e->len);",
     "\t\trdmx_cp_mark(3);\n\t\trdmx__msg_arrived(c->conn, e->imm, e->len);")
after_brace("engine/providers/tcp/tx.c", "void rdmx__tcp_tx_flush(struct tcp_conn *c)",
            "rdmx_cp_mark(13);")
edit("engine/providers/tcp/tx.c", "\tmemset(&msg, 0, sizeof(msg));\n\tmsg.msg_iov = iov;",
     "\trdmx_cp_mark(14);\n\trdmx_cp_t0 = 0;\n\tmemset(&msg, 0, sizeof(msg));\n\tmsg.msg_iov = iov;")
edit("engine/providers/tcp/tx.c",  # a light message sent at once (tx_msg_now)
     "\tdo\n\t\ts = send(c->fd, frame, total, MSG_NOSIGNAL | MSG_DONTWAIT);",
     "\trdmx_cp_mark(14);\n\trdmx_cp_t0 = 0;\n\tdo\n\t\ts = send(c->fd, frame, total, MSG_NOSIGNAL | MSG_DONTWAIT);")

# RPC: the message in, the server's handler and answer, the client's completion and next call
after_brace("rpc/rpc.c", "static void on_msg(struct rdmx_chan *chan", "rdmx_cp_mark(4);")
after_brace("rpc/call.c", "void rdmx__rpc_on_response(struct rdmx_rpc_ep *ep", "rdmx_cp_mark(15);")
edit("rpc/call.c", "\tif (c->cb) {\n\t\tep->busy++;\n\t\tc->cb(&res, c->arg);",
     "\tif (c->cb) {\n\t\tep->busy++;\n\t\trdmx_cp_mark(16);\n\t\tc->cb(&res, c->arg);")
after_brace("rpc/call.c", "int rdmx_rpc_call_async_md(struct rdmx_rpc_ep *ep", "rdmx_cp_mark(17);")
after_brace("rpc/rpc_server.c", "void rdmx__rpc_on_request(struct rdmx_rpc_ep *ep", "rdmx_cp_mark(5);")
edit("rpc/rpc_server.c", "\tc->req = body;\n\tep->cur_call = c;\n",
     "\tc->req = body;\n\tep->cur_call = c;\n\trdmx_cp_mark(6);\n")
after_brace("rpc/rpc_server.c", "int rdmx_rpc_respond(struct rdmx_rpc_server_call *call",
            "rdmx_cp_mark(7);")
edit("rpc/rpc_server.c", "\t\tret = send_response(ep, call->id, code, message, resp, x, &how);",
     "\t\trdmx_cp_mark(8);\n\t\tret = send_response(ep, call->id, code, message, resp, x, &how);")

# channel: the slot filled, the engine task made and submitted
after_brace("chan/chan_tx.c", "static int write_eager_staged(struct rdmx_chan *chan", "rdmx_cp_mark(9);")
after_brace("chan/chan_tx.c", "static int post_write(struct rdmx_chan *chan", "rdmx_cp_mark(10);")
edit("chan/chan_tx.c", "\tif (!light_write(chan, ts, wait) ||\n",
     "\trdmx_cp_mark(11);\n\tif (!light_write(chan, ts, wait) ||\n")
