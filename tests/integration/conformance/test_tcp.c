/* tcp provider only (skipped on verbs devices): a data connection needs the
 * secret token of the exported details; raw sockets that send garbage, a
 * forged hello or a forged write are closed without touching memory, while
 * honest connections keep working.
 *
 * These tests know the tcp details layout (engine/providers/tcp/wire.h:
 * family at byte 4, port at 6, address at 8, token at 24..39) by design: they
 * attack the wire. */
#include "conformance.h"

#include "../../../engine/providers/tcp/wire.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static struct side A, B;

TestSuite(tcp, .timeout = 120);

/* Connection request timeout for these tests: a refused dialer learns it
 * through its failure callback at the latest after this long. */
#define CONN_TIMEOUT_MS 1000

static void open_tcp_pair(void)
{
	leak_begin();
	side_open(&A, "a", 0);
	side_open(&B, "b", 1);
	if (!A.tcp || !B.tcp)
		cr_skip_test("tcp provider only (devices %s/%s)", A.devname, B.devname);
	side_conf(&A, 16);
	side_conf(&B, 16);
	ASSERT_OK(rdmx_ctx_set_conn_request_timeout(A.ctx, CONN_TIMEOUT_MS));
	ASSERT_OK(rdmx_ctx_set_conn_request_timeout(B.ctx, CONN_TIMEOUT_MS));
	side_start(&A);
	side_start(&B);
}

static bool any_end(const struct side *s, const struct rdmx_conn *c)
{
	return conn_events(s, CEV_FAILURE, c) + conn_events(s, CEV_DISCONNECTED, c) > 0;
}

static bool established(const struct side *s, const struct rdmx_conn *c)
{
	if (conn_events(s, CEV_ESTABLISHED, c))
		return true;
	return !any_end(s, c) && conn_state(c) == RDMX_CONN_ESTABLISHED;
}

/* B connects with A's details changed by `mutate`; A connects with B's
 * honest details when both_connect. Neither side may establish; B (and A
 * when it connects too) ends with a failure callback. */
static void refused_with(void (*mutate)(uint8_t *d), bool both_connect)
{
	const void *da, *db;
	size_t la, lb;
	struct rdmx_conn *xa = NULL, *yb = NULL;
	uint8_t bad[RDMX__TCP_DETAILS_SIZE];
	ASSERT_OK(rdmx_ctx_export(A.ctx, &da, &la, &xa));
	ASSERT_OK(rdmx_ctx_export(B.ctx, &db, &lb, &yb));
	cr_assert_eq(la, RDMX__TCP_DETAILS_SIZE, "tcp details are %zu bytes", la);
	memcpy(bad, da, la);
	mutate(bad);
	ASSERT_OK(rdmx_ctx_connect(B.ctx, bad, la, yb)); /* well formed, wrong secret */
	if (both_connect)
		ASSERT_OK(rdmx_ctx_connect(A.ctx, db, lb, xa));
	uint64_t deadline = now_ms() + GUARD_MS;
	while (!any_end(&B, yb) || (both_connect && !any_end(&A, xa))) {
		cr_assert(!established(&A, xa),
		          "A established a data connection with a wrong token");
		cr_assert(!established(&B, yb), "B established with a wrong token");
		cr_assert(now_ms() < deadline,
		          "no failure reported within the guard (B %d, A %d failure callbacks; "
		          "connection request timeout %d ms)",
		          conn_events(&B, CEV_FAILURE, yb), conn_events(&A, CEV_FAILURE, xa),
		          CONN_TIMEOUT_MS);
		drive_once(&A, &B, NULL);
	}
	drive_for(&A, &B, NULL, 50);
	cr_assert(!established(&A, xa), "A established a data connection with a wrong token");
	cr_assert(!established(&B, yb), "B established with a wrong token");
	cr_assert_eq(conn_events(&B, CEV_FAILURE, yb), 1,
	             "B: %d failure, %d disconnected callbacks", conn_events(&B, CEV_FAILURE, yb),
	             conn_events(&B, CEV_DISCONNECTED, yb));
	if (both_connect)
		cr_assert_eq(
		    conn_events(&A, CEV_FAILURE, xa), 1, "A: %d failure, %d disconnected callbacks",
		    conn_events(&A, CEV_FAILURE, xa), conn_events(&A, CEV_DISCONNECTED, xa));
}

static void flip_token(uint8_t *d)
{
	d[24 + 15] ^= 0x01; /* one bit of the token */
}

static void zero_token(uint8_t *d)
{
	memset(d + 24, 0, RDMX__TCP_TOKEN_SIZE);
}

static void other_token(uint8_t *d)
{
	for (int i = 0; i < (int)RDMX__TCP_TOKEN_SIZE; i++)
		d[24 + i] ^= 0xff;
}

Test(tcp, wrong_token_is_refused)
{
	struct rdmx_conn *ca, *cb;
	open_tcp_pair();
	refused_with(flip_token, true);
	refused_with(other_token, true);
	refused_with(zero_token, false); /* A only exported: B must be the dialer */
	refused_with(flip_token, false);
	/* an honest connection of the same contexts works */
	connect_pair(&A, &B, &ca, &cb);
	write_checked(&A, &B, cb, 4096, 120);
	pair_close(&A, &B);
	leak_end();
}

Test(tcp, missing_token_is_malformed)
{
	open_tcp_pair();
	const void *da;
	size_t la;
	struct rdmx_conn *xa = NULL, *yb = NULL;
	const void *db;
	size_t lb;
	ASSERT_OK(rdmx_ctx_export(A.ctx, &da, &la, &xa));
	ASSERT_OK(rdmx_ctx_export(B.ctx, &db, &lb, &yb));
	ASSERT_RC(rdmx_ctx_connect(B.ctx, da, 24, yb), RDMX_E_INVAL); /* cut before the token */
	ASSERT_RC(rdmx_ctx_connect(B.ctx, da, la - 1, yb), RDMX_E_INVAL);
	uint8_t bad[RDMX__TCP_DETAILS_SIZE];
	memcpy(bad, da, la);
	bad[6] = bad[7] = 0; /* port 0 */
	ASSERT_RC(rdmx_ctx_connect(B.ctx, bad, la, yb), RDMX_E_INVAL);
	pair_close(&A, &B);
	leak_end();
}

/* ---- raw sockets ---- */

static int raw_connect(const uint8_t *ip4, uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	memcpy(&sin.sin_addr, ip4, 4);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(fd >= 0);
	int rc = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
	cr_assert_eq(rc, 0, "raw connect to port %u: %s", port, strerror(errno));
	return fd;
}

static void raw_send(int fd, const void *p, size_t n)
{
	/* the peer may already have closed: EPIPE / ECONNRESET are fine */
	(void)!send(fd, p, n, MSG_NOSIGNAL);
}

/* True once the peer closed fd (EOF or reset); drives A and B meanwhile. */
static bool closed_by_peer(int fd)
{
	uint64_t deadline = now_ms() + GUARD_MS;
	while (now_ms() < deadline) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 0) > 0) {
			uint8_t buf[4096];
			ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
				return true;
			/* bytes from the peer (e.g. an ERROR frame): keep reading */
		}
		drive_once(&A, &B, NULL);
	}
	return false;
}

Test(tcp, raw_sockets_with_garbage_or_forged_frames_are_closed)
{
	struct rdmx_conn *ca, *cb;
	open_tcp_pair();
	connect_pair(&A, &B, &ca, &cb); /* the honest connection */
	struct region *ra = region_new(&A, 4096, RDMX_ACCESS_ALL, 0x5c);

	/* A's data listener, from an exported connection's details */
	const void *dv;
	size_t dl;
	struct rdmx_conn *xa = NULL;
	ASSERT_OK(rdmx_ctx_export(A.ctx, &dv, &dl, &xa));
	const uint8_t *d = dv;
	if (d[4] != 4)
		cr_skip_test("listener is IPv%u; this test dials IPv4", d[4]);
	uint16_t port = rdmx__ld16(d + 6);
	uint8_t ip[4];
	memcpy(ip, d + 8, 4);

	/* 1. garbage bytes */
	int fd = raw_connect(ip, port);
	uint8_t junk[4096];
	pattern_fill(junk, sizeof(junk), 130);
	junk[0] = 0xee; /* no such opcode */
	raw_send(fd, junk, sizeof(junk));
	cr_assert(closed_by_peer(fd), "a socket sending garbage was not closed");
	close(fd);

	/* 2. a well-formed hello with a wrong token */
	uint8_t frame[RDMX__TCP_HDR_SIZE + RDMX__TCP_HELLO_LEN];
	struct rdmx__tcp_hdr h = {.op = RDMX__TCP_OP_HELLO,
	                          .psn = 1,
	                          .len = RDMX__TCP_HELLO_LEN,
	                          .op0 = RDMX__TCP_HELLO_WORD,
	                          .op1 = 64};
	rdmx__tcp_hdr_encode(&h, frame);
	memcpy(frame + RDMX__TCP_HDR_SIZE, d + 24, RDMX__TCP_TOKEN_SIZE);
	frame[RDMX__TCP_HDR_SIZE] ^= 0x80; /* wrong acceptor token */
	memset(frame + RDMX__TCP_HDR_SIZE + RDMX__TCP_TOKEN_SIZE, 0x42, RDMX__TCP_TOKEN_SIZE);
	fd = raw_connect(ip, port);
	raw_send(fd, frame, sizeof(frame));
	cr_assert(closed_by_peer(fd), "a hello with a wrong token was not refused");
	close(fd);

	/* 3. a write frame with the region's real key but no hello at all */
	uint8_t wr[RDMX__TCP_HDR_SIZE + 64];
	uint32_t rkey = (uint32_t)ra->desc[24] | (uint32_t)ra->desc[25] << 8 |
	                (uint32_t)ra->desc[26] << 16 | (uint32_t)ra->desc[27] << 24;
	struct rdmx__tcp_hdr w = {.op = RDMX__TCP_OP_WRITE, .psn = 1, .rkey = rkey, .len = 64};
	rdmx__tcp_hdr_encode(&w, wr);
	memset(wr + RDMX__TCP_HDR_SIZE, 0xab, 64);
	fd = raw_connect(ip, port);
	raw_send(fd, wr, sizeof(wr));
	cr_assert(closed_by_peer(fd), "a write without a hello was not refused");
	close(fd);
	for (int i = 0; i < 4096; i++)
		cr_assert_eq(ra->mem[i], 0x5c, "a forged write placed data at byte %d", i);

	/* 4. garbage to the cm listener */
	uint16_t cmport = listen_any(&A);
	struct rdmx_addr *ad = addr_of(&A, cmport);
	uint8_t lip[4];
	cr_assert_eq(inet_pton(AF_INET, A.addr, lip), 1, "RDMX_TEST_ADDR %s is not IPv4", A.addr);
	fd = raw_connect(lip, cmport);
	raw_send(fd, junk, sizeof(junk));
	cr_assert(closed_by_peer(fd), "the cm listener kept a socket sending garbage");
	close(fd);
	/* and it still serves honest requests */
	struct rdmx_conn *c2 = NULL;
	ASSERT_OK(rdmx_ctx_connect_to_addr(B.ctx, ad, NULL, 0, NULL, &c2));
	DRIVE_UNTIL(&A, &B,
	            A.established >= 1 && B.established >= 1 &&
	                conn_state(c2) == RDMX_CONN_ESTABLISHED);
	ASSERT_OK(rdmx_addr_destroy(&ad));

	/* the honest connection still works */
	cr_assert_eq(conn_state(ca), RDMX_CONN_ESTABLISHED);
	write_checked(&A, &B, cb, 4096, 131);
	write_checked(&A, &B, c2, 4096, 132);
	pair_close(&A, &B);
	leak_end();
}

/* tcp keys are random and die with their registration: re-registering the
 * same memory never revives an old descriptor. */
Test(tcp, keys_are_fresh_per_registration)
{
	struct rdmx_conn *ca, *cb;
	open_tcp_pair();
	static uint8_t mem[4096] __attribute__((aligned(64)));
	static uint32_t keys[200];
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE], old[RDMX_MR_DESCRIPTOR_SIZE];
	struct rdmx_mr *mr = NULL;
	for (int i = 0; i < 200; i++) {
		ASSERT_OK(rdmx_mr_reg(A.dev, mem, sizeof(mem), RDMX_ACCESS_REMOTE_WRITE, &mr));
		ASSERT_OK(rdmx_mr_get_descriptor(mr, desc));
		memcpy(&keys[i], desc + 24, 4);
		for (int j = 0; j < i; j++)
			cr_assert_neq(keys[i], keys[j], "registration %d reuses the key of %d", i,
			              j);
		if (i == 0)
			memcpy(old, desc, sizeof(old));
		if (i < 199)
			ASSERT_OK(rdmx_mr_dereg(&mr));
	}
	/* the first descriptor names the same memory but a dead key */
	connect_pair(&A, &B, &ca, &cb);
	struct region *rb = region_new(&B, 4096, 0, 0x17);
	struct rdmx_mr_remote *dead = remote_from_desc(&B, old), *live = remote_from_desc(&B, desc);
	struct rdmx_buf s = lbuf(rb, 0, 64);
	struct rdmx_rbuf rd = rbuf(dead, 0, 0), rl = rbuf(live, 64, 0);
	struct tinfo t1 = {0}, t2 = {0};
	struct rdmx_task *t;
	ASSERT_OK(rdmx_task_write_alloc(B.ctx, cb, &s, &rl, &t1, &t));
	submit_wait(&A, &B, t, &t1);
	ASSERT_DONE_OK(&t1);
	cr_assert_eq(mem[64], 0x17);
	ASSERT_OK(rdmx_task_write_alloc(B.ctx, cb, &s, &rd, &t2, &t));
	submit_wait(&A, &B, t, &t2);
	ASSERT_DONE_ERR(&t2, RDMX_E_REMOTE_ACCESS);
	cr_assert_eq(mem[0], 0, "a dead key wrote into re-registered memory");
	ASSERT_OK(rdmx_mr_dereg(&mr));
	pair_close(&A, &B);
	leak_end();
}

/* ---- a listener out of descriptors ---- */

static int held[4096], n_held, rest_lfd = -1;
static atomic_int accept_lines, rest_lines, rest_sets, rest_watching, rest_done;

/* The listening socket on port (this process). */
static int listener_fd(uint16_t port)
{
	for (int fd = 0; fd < 4096; fd++) {
		struct sockaddr_storage a;
		socklen_t len = sizeof(a), alen = sizeof(int);
		int acc = 0;

		if (getsockname(fd, (struct sockaddr *)&a, &len) == 0 && a.ss_family == AF_INET &&
		    ntohs(((struct sockaddr_in *)&a)->sin_port) == port &&
		    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &alen) == 0 && acc)
			return fd;
	}
	return -1;
}

/* How many of this process's epoll sets hold fd, and how many of them wait
 * for it to be readable (/proc/self/fdinfo of each set: "tfd: N events: X"). */
static void epoll_interest(int fd, int *sets, int *watching)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	*sets = *watching = 0;
	while (d && (e = readdir(d))) {
		char path[300], link[64], line[256];
		ssize_t k;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		k = readlink(path, link, sizeof(link) - 1);
		if (k <= 0 || (link[k] = '\0', strcmp(link, "anon_inode:[eventpoll]")))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s", e->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f)) {
			int tfd;
			unsigned ev;

			if (sscanf(line, "tfd: %d events: %x", &tfd, &ev) == 2 && tfd == fd) {
				(*sets)++;
				*watching += (ev & EPOLLIN) != 0;
			}
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
}

/* Logged from the accepting thread (the application's poll for the cm
 * listener, the NIC thread for the data listener) right after the failure:
 * the listener's interest is read there (two held descriptors given back to
 * read /proc); rest_done says the reading is complete. */
static void on_accept_line(enum rdmx_log_level level, const char *file, int line, const char *func,
                           const char *message)
{
	int sets, watching;

	(void)level, (void)file, (void)line, (void)func;
	if (!strstr(message, "accept failed") || atomic_fetch_add(&accept_lines, 1) != 0)
		return;
	if (strstr(message, "Too many open files, not accepting for"))
		atomic_store(&rest_lines, 1);
	close(held[--n_held]);
	close(held[--n_held]);
	epoll_interest(rest_lfd, &sets, &watching);
	atomic_store(&rest_sets, sets);
	atomic_store(&rest_watching, watching);
	atomic_store(&rest_done, 1);
}

static void rest_watch_begin(uint16_t port)
{
	atomic_store(&accept_lines, 0);
	atomic_store(&rest_lines, 0);
	atomic_store(&rest_done, 0);
	rest_lfd = listener_fd(port);
	cr_assert_geq(rest_lfd, 0, "setup: the listening socket is not in this process");
	ASSERT_OK(rdmx_log_set_function(on_accept_line));
}

/* The listener rests: out of every set's interest at the failure, and the
 * failure's line says so. */
static void assert_rested(void)
{
	DRIVE_UNTIL(&A, &B, atomic_load(&rest_done) == 1);
	cr_assert_geq(atomic_load(&rest_sets), 1, "setup: the listener is in no epoll set");
	cr_assert_eq(atomic_load(&rest_watching), 0,
	             "%d of %d epoll sets still wait for the failing listener: it spins",
	             atomic_load(&rest_watching), atomic_load(&rest_sets));
	cr_assert_eq(atomic_load(&rest_lines), 1, "the failure's line does not say it rests");
}

/* Takes every free descriptor number: the soft limit drops to four past
 * the highest open descriptor and every number below it is filled with a
 * dup (three of them to give back later). */
static void exhaust_descriptors(struct rlimit *saved)
{
	struct rlimit lim;
	int top = 0;

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, saved), 0);
	for (int fd = 0; fd < 65536 && fd < (int)saved->rlim_cur; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			top = fd;
	lim = *saved;
	lim.rlim_cur = (rlim_t)top + 4;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &lim), 0);
	n_held = 0;
	while (n_held < 4096 && (held[n_held] = dup(0)) >= 0)
		n_held++;
	cr_assert_eq(errno, EMFILE, "setup: dup stopped with %s", strerror(errno));
	cr_assert_geq(n_held, 3, "setup: too few descriptor numbers below the limit");
}

static void release_descriptors(const struct rlimit *saved)
{
	while (n_held > 0)
		close(held[--n_held]);
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, saved), 0);
}

/* accept() failing with EMFILE leaves the client in the backlog and the
 * listener readable: a provider that retried at every look would spin and
 * log a line each time. The cm listener rests instead: out of its epoll
 * sets' interest when the failure is logged (one line that says so, read
 * from the log callback, in the failing thread: no timing), and the waiting
 * client is served once descriptors are free again. */
Test(tcp, cm_listener_out_of_descriptors_rests_then_serves)
{
	struct rlimit saved;
	struct rdmx_conn *cc = NULL;

	leak_begin();
	pair_open(&A, &B, 16);
	if (!A.tcp || !B.tcp)
		cr_skip_test("tcp provider only (devices %s/%s)", A.devname, B.devname);
	uint16_t port = listen_any(&A);
	struct rdmx_addr *ad = addr_of(&A, port);
	A.policy = REQ_ACCEPT;
	rest_watch_begin(port);

	exhaust_descriptors(&saved);
	/* one number for the client's socket: its handshake completes in the
	 * kernel, and the listener has none left to take it */
	close(held[--n_held]);
	ASSERT_OK(rdmx_ctx_connect_to_addr(B.ctx, ad, NULL, 0, NULL, &cc));
	assert_rested();
	cr_assert_eq(A.requests, 0);

	release_descriptors(&saved);
	DRIVE_UNTIL(&A, &B, A.established == 1 && B.established == 1);
	ASSERT_OK(rdmx_log_set_function(NULL));
	ASSERT_OK(rdmx_addr_destroy(&ad));
	pair_close(&A, &B);
	leak_end();
}

/* The same for the data listener of the export/connect flow, served by the
 * NIC thread: it rests, then takes the waiting socket once descriptors are
 * free (here a raw one sending garbage, which it then closes). */
Test(tcp, data_listener_out_of_descriptors_rests_then_serves)
{
	struct rlimit saved;
	struct rdmx_conn *xa = NULL;
	const void *dv;
	size_t dl;
	uint8_t ip[4], junk[256];
	int fd;

	open_tcp_pair();
	ASSERT_OK(rdmx_ctx_export(A.ctx, &dv, &dl, &xa));
	const uint8_t *d = dv;
	if (d[4] != 4)
		cr_skip_test("listener is IPv%u; this test dials IPv4", d[4]);
	memcpy(ip, d + 8, 4);
	rest_watch_begin(rdmx__ld16(d + 6));

	exhaust_descriptors(&saved);
	close(held[--n_held]); /* the raw client's socket */
	fd = raw_connect(ip, rdmx__ld16(d + 6));
	assert_rested();

	release_descriptors(&saved);
	memset(junk, 0xee, sizeof(junk)); /* no such opcode */
	raw_send(fd, junk, sizeof(junk));
	cr_assert(closed_by_peer(fd), "the socket that waited was never served");
	close(fd);
	ASSERT_OK(rdmx_log_set_function(NULL));
	pair_close(&A, &B);
	leak_end();
}
