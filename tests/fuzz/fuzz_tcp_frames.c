/* libFuzzer target: the tcp provider's frame decoder and wire engine
 * (engine/providers/tcp/rx.c and what it calls) on bytes a peer sends after
 * a real handshake. One device and context live across inputs (a region
 * with canaries around it, receives posted); each input gets a fresh data
 * connection whose raw end completes the export/connect handshake with the
 * context's token, sends the input's frames, then closes. The context is
 * driven until the connection ended (a protocol violation or the close):
 * any crash, hang, sanitizer report or write outside the region is a bug.
 *
 * Input: byte 0 bit 0 set: the rest goes out as it is. Otherwise the rest
 * is a sequence of frames, each a 48-byte header followed by up to `len`
 * payload bytes, where the harness makes the header plausible first: psn
 * becomes the next expected psn plus the header's psn modulo 4, and an rkey
 * of 1 becomes the region's key (so writes, reads and atomics get placed);
 * a light message's psn becomes 0 unless the header's psn modulo 4 is not
 * (the context takes light messages: engine/msg.h).
 * Byte 0 bit 1 set: the connection is sealed (rdmx_conn_set_data_keys; the
 * harness holds the mirror keys and seals its hello): with bit 0 the rest
 * goes out as it is (hostile records), without it the frames are sealed in
 * records of 1 + byte 1 * 257 bytes (the record layer, then the frame
 * engine behind it). */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdmx/rdmx.h>

#include "internal.h"
#include "msg.h"
#include "providers/tcp/tcp.h"

#include "common/clock.h"

#define REGION 65536u
#define GUARD 4096u
#define NRECV 8
#define PSN0 1000u

static struct {
	bool ready;
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	uint8_t *mem; /* GUARD | REGION | GUARD */
	struct rdmx_mr *mr;
	struct rdmx_task *recv[NRECV];
	bool recv_done[NRECV];
	struct rdmx_buf rbuf[NRECV];
	int established, ended;
} F;

static void on_task(struct rdmx_task *t, void *ud, void *cud)
{
	(void)t;
	(void)cud;
	if (ud)
		*(bool *)ud = true;
}

static void on_est(struct rdmx_conn *c, void *ud, void *cud)
{
	(void)c;
	(void)ud;
	(void)cud;
	F.established++;
}

static void on_end(struct rdmx_conn *c, void *cud, void *xud)
{
	(void)c;
	(void)cud;
	(void)xud;
	F.ended++;
}

/* Sealed mode: the harness's directions (tx seals for the context's rx). */
static const uint8_t key_ctx_tx[32] = {0x51, 0x52, 0x53}, key_ctx_rx[32] = {0x61, 0x62, 0x63};
static const uint8_t iv_ctx_tx[12] = {0x71}, iv_ctx_rx[12] = {0x81};
static struct tcp_seal_dir H_tx, H_rx;
static bool sealed;
static uint8_t *plain; /* frames to seal */
static size_t plain_len, plain_cap;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_tcp_frames: %s\n", what);
	abort();
}

static void fail_errno(const char *what)
{
	fprintf(stderr, "fuzz_tcp_frames: %s: %s\n", what, strerror(errno));
	abort();
}

/* Each run dials from the next loopback source address (127.1.0.0/16): the
 * context closes first on most inputs, and its TIME_WAIT entries would
 * otherwise use up the ephemeral ports of one source within a minute. */
static int bind_next_source(int fd)
{
	static uint32_t next;
	struct sockaddr_in src = {.sin_family = AF_INET};

	src.sin_addr.s_addr = htonl(0x7f010000u | (next++ & 0xffffu));
	return bind(fd, (struct sockaddr *)&src, sizeof(src));
}

/* A non-blocking connect, the context progressed while it completes: a
 * blocking one is interrupted by libFuzzer's timer signal (EINTR) when the
 * handshake waits for a SYN retransmission. Bounded. */
static int dial(const struct sockaddr_in *sin)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), err = 0;
	socklen_t el = sizeof(err);

	if (fd < 0 || bind_next_source(fd))
		fail_errno("dialing the data port");
	if (connect(fd, (const struct sockaddr *)sin, sizeof(*sin)) == 0)
		return fd;
	if (errno != EINPROGRESS && errno != EINTR)
		fail_errno("dialing the data port");
	for (uint64_t end = now_ms() + 5000;;) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};

		if (poll(&p, 1, 10) == 1)
			break;
		if (now_ms() > end)
			fail("dialing the data port: no answer within 5 s");
		rdmx_pe_progress(F.pe);
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
		errno = err;
		fail_errno("dialing the data port");
	}
	return fd;
}

static void on_msg(void *arg, struct rdmx_conn *conn, uint32_t imm, uint32_t len)
{
	(void)arg;
	(void)conn;
	(void)imm;
	if (len > RDMX__MSG_MAX)
		fail("a light message longer than the limit was handed over");
}

static void setup(void)
{
	rdmx_log_set_threshold(RDMX_LOG_DISABLED);
	if (rdmx_dev_open("tcp", &F.dev) || rdmx_pe_create(&F.pe) ||
	    rdmx_ctx_create(F.dev, F.pe, &F.ctx))
		fail("opening the tcp device");
	rdmx_ctx_set_recv_queue_size(F.ctx, 64);
	rdmx_ctx_set_max_recv_buf_list_len(F.ctx, 1);
	rdmx_ctx_set_rnr_retry_count(F.ctx, 0);
	rdmx_ctx_set_conn_callbacks(F.ctx, NULL, on_est, on_end, on_end);
	for (int t = 0; t < RDMX_TASK_TYPE_COUNT; t++)
		if (rdmx_ctx_set_task_conf(F.ctx, (enum rdmx_task_type)t, on_task, on_task, 16))
			fail("configuring tasks");
	if (rdmx__ctx_set_msg_handler(F.ctx, on_msg, NULL))
		fail("setting the light message handler");
	if (rdmx_ctx_start(F.ctx))
		fail("starting the context");
	F.mem = malloc(REGION + 2 * GUARD);
	if (!F.mem)
		fail("out of memory");
	memset(F.mem, 0xcc, REGION + 2 * GUARD);
	if (rdmx_mr_reg(F.dev, F.mem + GUARD, REGION, RDMX_ACCESS_ALL, &F.mr))
		fail("registering the region");
	for (int i = 0; i < NRECV; i++) {
		F.rbuf[i] = (struct rdmx_buf){
		    .mr = F.mr, .addr = F.mem + GUARD + (size_t)i * 1024u, .len = 1024u};
		int rc = rdmx_task_receive_alloc(F.ctx, &F.rbuf[i], &F.recv_done[i], &F.recv[i]);

		if (!rc)
			rc = rdmx_task_submit(F.recv[i]);
		if (rc) {
			fprintf(stderr, "fuzz_tcp_frames: posting receive %d: %s\n", i,
			        rdmx_err_name(rc));
			abort();
		}
	}
	F.ready = true;
}

/* Progresses the context and discards what it sends the raw end. */
static void drive(int fd)
{
	uint8_t sink[65536];

	rdmx_pe_progress(F.pe);
	while (fd >= 0 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
		;
}

static void send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t s = send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (s > 0) {
			b += s;
			n -= (size_t)s;
		} else if (s < 0 && (errno == EAGAIN || errno == EINTR)) {
			drive(fd);
		} else {
			return; /* the context dropped us: fine */
		}
	}
}

/* Export, "connect" to details with an all-zero token (so the context waits
 * to be dialed), dial its data port and present its token. */
static int handshake(struct rdmx_conn **out)
{
	const void *dv;
	size_t dl;
	uint8_t d[RDMX__TCP_DETAILS_SIZE], fake[RDMX__TCP_DETAILS_SIZE];
	uint8_t buf[TCP_SEAL_HELLO_SIZE], rec[TCP_SEAL_HELLO_SIZE];
	size_t want = RDMX__TCP_HDR_SIZE;
	struct rdmx__tcp_hdr h = {.op = RDMX__TCP_OP_HELLO,
	                          .psn = PSN0,
	                          .len = RDMX__TCP_HELLO_LEN,
	                          .op0 = RDMX__TCP_HELLO_WORD,
	                          .op1 = 4};
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct rdmx_conn *conn;
	int fd, est = F.established;
	size_t got = 0;
	uint64_t end;

	if (rdmx_ctx_export(F.ctx, &dv, &dl, &conn) || dl != sizeof(d))
		abort();
	if (sealed) {
		struct rdmx_conn_keys k;

		memcpy(k.tx_key, key_ctx_tx, 32);
		memcpy(k.tx_iv, iv_ctx_tx, 12);
		memcpy(k.rx_key, key_ctx_rx, 32);
		memcpy(k.rx_iv, iv_ctx_rx, 12);
		if (rdmx_conn_set_data_keys(conn, &k) ||
		    rdmx__tcp_seal_dir_init(&H_tx, key_ctx_rx, iv_ctx_rx, true) ||
		    rdmx__tcp_seal_dir_init(&H_rx, key_ctx_tx, iv_ctx_tx, false))
			fail("sealing the connection");
	}
	memcpy(d, dv, sizeof(d));
	memcpy(fake, d, sizeof(d));
	memset(fake + 24, 0, RDMX__TCP_TOKEN_SIZE);
	if (rdmx_ctx_connect(F.ctx, fake, sizeof(fake), conn))
		abort();
	sin.sin_port = htons(rdmx__ld16(d + 6));
	memcpy(&sin.sin_addr, d + 8, 4);
	fd = dial(&sin);
	rdmx__tcp_hdr_encode(&h, buf);
	memcpy(buf + RDMX__TCP_HDR_SIZE, d + 24, RDMX__TCP_TOKEN_SIZE);
	memset(buf + RDMX__TCP_HDR_SIZE + RDMX__TCP_TOKEN_SIZE, 0, RDMX__TCP_TOKEN_SIZE);
	if (sealed) {
		struct iovec iov = {buf, RDMX__TCP_HDR_SIZE + RDMX__TCP_HELLO_LEN};

		if (rdmx__tcp_seal_record(&H_tx, &iov, 1, iov.iov_len, rec) !=
		    (int)TCP_SEAL_HELLO_SIZE)
			fail("sealing the hello");
		send_all(fd, rec, TCP_SEAL_HELLO_SIZE);
		want = TCP_SEAL_HDR + RDMX__TCP_HDR_SIZE + TCP_SEAL_TAG;
	} else {
		send_all(fd, buf, RDMX__TCP_HDR_SIZE + RDMX__TCP_HELLO_LEN);
	}
	/* the HELLO_ACK, then ESTABLISHED */
	for (end = rdmx__now_ms() + 5000; got < want;) {
		ssize_t n = recv(fd, buf + got, want - got, MSG_DONTWAIT);

		if (n > 0)
			got += (size_t)n;
		else if (n == 0 || rdmx__now_ms() > end)
			abort(); /* a correct handshake must succeed */
		rdmx_pe_progress(F.pe);
	}
	if (sealed && rdmx__tcp_seal_open(&H_rx, buf, want))
		abort(); /* the context's answer must open with its keys */
	while (F.established == est) {
		if (rdmx__now_ms() > end)
			abort();
		rdmx_pe_progress(F.pe);
	}
	*out = conn;
	return fd;
}

/* Frame bytes: straight to the socket, or kept to be sealed. */
static void out(int fd, const void *p, size_t n)
{
	if (!sealed) {
		send_all(fd, p, n);
		return;
	}
	if (plain_len + n > plain_cap) {
		plain_cap = (plain_len + n) * 2;
		plain = realloc(plain, plain_cap);
		if (!plain)
			fail("out of memory");
	}
	memcpy(plain + plain_len, p, n);
	plain_len += n;
}

/* Seals the kept frames in records of `piece` bytes and sends them. */
static void seal_out(int fd, size_t piece)
{
	static uint8_t rec[TCP_SEAL_REC];

	for (size_t off = 0; off < plain_len;) {
		size_t take = plain_len - off < piece ? plain_len - off : piece;
		struct iovec iov = {plain + off, take};
		int n = rdmx__tcp_seal_record(&H_tx, &iov, 1, take, rec);

		if (n < 0)
			fail("sealing a record");
		send_all(fd, rec, (size_t)n);
		off += take;
	}
	plain_len = 0;
}

static void frames(int fd, const uint8_t *p, size_t n)
{
	uint32_t next = PSN0;

	while (n >= RDMX__TCP_HDR_SIZE) {
		uint8_t hdr[RDMX__TCP_HDR_SIZE];
		struct rdmx__tcp_hdr h;
		size_t pay;

		rdmx__tcp_hdr_decode(p, &h);
		if (h.op == RDMX__TCP_OP_MSG)
			h.psn = h.psn & 3u;
		else
			h.psn = next + (h.psn & 3u);
		if (h.rkey == 1)
			h.rkey = F.mr->rkey;
		if (rdmx__tcp_op_is_request(h.op))
			next++;
		rdmx__tcp_hdr_encode(&h, hdr);
		out(fd, hdr, sizeof(hdr));
		p += RDMX__TCP_HDR_SIZE;
		n -= RDMX__TCP_HDR_SIZE;
		pay = h.len < n ? (size_t)h.len : n;
		out(fd, p, pay);
		p += pay;
		n -= pay;
	}
	out(fd, p, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdmx_conn *conn;
	bool asked = false;
	int fd, ended;
	uint64_t end;

	if (!F.ready)
		setup();
	ended = F.ended;
	sealed = size && (data[0] & 2);
	fd = handshake(&conn);
	if (size && (data[0] & 1)) {
		send_all(fd, data + 1, size - 1);
	} else if (sealed) {
		size_t piece = size > 1 ? 1u + (size_t)data[1] * 257u : TCP_SEAL_MAX;

		if (size > 2)
			frames(fd, data + 2, size - 2);
		seal_out(fd, piece);
	} else if (size) {
		frames(fd, data + 1, size - 1);
	}
	shutdown(fd, SHUT_WR);
	/* the close ends the connection; one in error (as RC: a violation)
	 * waits for its owner, who disconnects it. Bounded. */
	for (end = rdmx__now_ms() + 8000; F.ended == ended;) {
		enum rdmx_conn_state st = RDMX_CONN_ESTABLISHED;

		if (rdmx__now_ms() > end)
			abort(); /* hang */
		drive(fd);
		if (F.ended == ended && !asked && !rdmx_conn_get_state(conn, &st) &&
		    st == RDMX_CONN_ERROR) {
			asked = true;
			if (rdmx_conn_disconnect(conn))
				abort();
		}
	}
	/* a reset, not a close: no TIME_WAIT, so the ephemeral ports of a
	 * long run never run out */
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &(struct linger){.l_onoff = 1, .l_linger = 0},
	           sizeof(struct linger));
	close(fd);
	if (sealed) {
		rdmx__tcp_seal_dir_fini(&H_tx);
		rdmx__tcp_seal_dir_fini(&H_rx);
	}
	for (size_t i = 0; i < GUARD; i++)
		if (F.mem[i] != 0xcc || F.mem[GUARD + REGION + i] != 0xcc)
			abort(); /* a write outside the region */
	for (int i = 0; i < NRECV; i++) {
		if (F.recv_done[i]) {
			F.recv_done[i] = false;
			if (rdmx_task_submit(F.recv[i]))
				abort();
		}
	}
	return 0;
}
