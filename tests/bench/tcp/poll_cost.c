/* poll_cost — what one empty busy poll of the tcp provider costs, beside a
 * bare non-blocking recv() on an idle loopback TCP socket (what raw TCP's
 * busy loop does instead).
 *
 * Two contexts of one tcp device, on two engines, connected to each other;
 * nothing is sent. It times, in TSC cycles per pass:
 *   - rdmx_pe_progress on the first engine (one context, one idle
 *     connection);
 *   - rdmx_pe_wait(BUSY, 200 ms) on it, counted by rdmx_pe_get_pass;
 *   - recv(MSG_DONTWAIT) on an idle connected loopback socket.
 * The difference is the library's own work per empty poll: half of it, on
 * average, lies between a message's arrival and the poll that finds it.
 *   poll_cost [-n PASSES]   (x86-64 only: rdtsc)
 * Prints one RESULT line per measure, three rounds each. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <x86intrin.h>

#include <rdmx/rdmx.h>

#define BENCH_PROG "poll_cost"
#include "bench_try.h"

static int up;

static void on_up(struct rdmx_conn *c, void *u, void *cu)
{
	(void)c;
	(void)u;
	(void)cu;
	up++;
}

static void report(const char *name, double cycles)
{
	printf("RESULT test=%s cycles_per_pass=%.0f\n", name, cycles);
}

/* Two contexts, each on its engine, connected; *pe is the first engine. */
static void pair(struct rdmx_dev *dev, struct rdmx_pe **pe)
{
	struct rdmx_pe *pe2;
	struct rdmx_ctx *a, *b;
	struct rdmx_conn *ca, *cb;
	const void *da, *db;
	size_t la, lb;

	TRY(rdmx_pe_create(pe));
	TRY(rdmx_pe_create(&pe2));
	TRY(rdmx_ctx_create(dev, *pe, &a));
	TRY(rdmx_ctx_create(dev, pe2, &b));
	TRY(rdmx_ctx_set_conn_callbacks(a, NULL, on_up, NULL, NULL));
	TRY(rdmx_ctx_set_conn_callbacks(b, NULL, on_up, NULL, NULL));
	TRY(rdmx_ctx_start(a));
	TRY(rdmx_ctx_start(b));
	TRY(rdmx_ctx_export(a, &da, &la, &ca));
	TRY(rdmx_ctx_export(b, &db, &lb, &cb));
	TRY(rdmx_ctx_connect(a, db, lb, ca));
	TRY(rdmx_ctx_connect(b, da, la, cb));
	for (unsigned i = 0; up < 2; i++) {
		if (i > 100000000u)
			die("connect", RDMX_E_TIMEDOUT);
		rdmx_pe_progress(*pe);
		rdmx_pe_progress(pe2);
	}
}

/* An idle connected loopback TCP socket (the accepted end). */
static int idle_socket(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0), s;

	if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&sa, &sl) ||
	    connect(c, (struct sockaddr *)&sa, sizeof(sa)) || (s = accept(l, NULL, NULL)) < 0) {
		perror("poll_cost: loopback socket");
		exit(1);
	}
	close(l);
	return s;
}

int main(int argc, char **argv)
{
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	unsigned long passes = 200000;
	char buf[64];
	int opt, s;

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n' || !(passes = strtoul(optarg, NULL, 0))) {
			fprintf(stderr, "usage: poll_cost [-n PASSES]\n");
			return 2;
		}
	}
	TRY(rdmx_dev_open("tcp", &dev));
	pair(dev, &pe);
	for (int r = 0; r < 3; r++) {
		unsigned long long t = __rdtsc();

		for (unsigned long i = 0; i < passes; i++)
			rdmx_pe_progress(pe);
		report("pe_progress_idle", (double)(__rdtsc() - t) / (double)passes);
	}
	TRY(rdmx_pe_set_poll_mode(pe, RDMX_POLL_BUSY, 0));
	for (int r = 0; r < 3; r++) {
		uint64_t p0, p1;
		unsigned long long t;

		TRY(rdmx_pe_get_pass(pe, &p0));
		t = __rdtsc();
		rdmx_pe_wait(pe, 200);
		t = __rdtsc() - t;
		TRY(rdmx_pe_get_pass(pe, &p1));
		report("pe_wait_busy_idle", (double)t / (double)(p1 - p0 ? p1 - p0 : 1));
	}
	s = idle_socket();
	for (int r = 0; r < 3; r++) {
		unsigned long long t = __rdtsc();

		for (unsigned long i = 0; i < passes; i++)
			if (recv(s, buf, sizeof(buf), MSG_DONTWAIT) > 0)
				die("recv found bytes", RDMX_E_PROTOCOL);
		report("recv_idle", (double)(__rdtsc() - t) / (double)passes);
	}
	return 0;
}
