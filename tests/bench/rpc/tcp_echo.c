/* tcp_echo: the raw TCP anchor of the RPC benchmark. The client sends
 * SIZE-byte messages, the server echoes each one back; the client keeps
 * INFLIGHT messages outstanding (1 = ping-pong) and records each message's
 * WHOLE round trip, the same measure rdmx-perf rpc_lat / rpc_bw report.
 * Waiting: blocking (the server and a 1-in-flight client sleep in recv with
 * MSG_WAITALL, a pipelined client sleeps in poll), or --busy (non-blocking,
 * spinning) — the two strategies rdmx-perf's --poll block|busy offers.
 * --stream (both sides): the one-way anchor instead: the client sends ITERS
 * messages of SIZE bytes back to back over blocking sockets, the server
 * reads them all and answers one byte; mib_s is that one-way rate, p50_us
 * the mean time per message (64 MiB over raw TCP: -s 64M -n 4).
 * --work CYCLES (busy; both sides): spin CYCLES TSC cycles between a whole
 * message in and the answer (or the next call) out: what a library's
 * per-message path of that length would add to the ping-pong, no more (no
 * cache or TLB cost of its own). x86-64 only.
 *   tcp_echo [-s SIZE] [-n ITERS] [-t INFLIGHT] [-p PORT] [--busy [--work CYCLES]|--stream]
 *            [SERVER_ADDR]
 * Prints: RESULT test=tcp_echo size=... p50_us=... p99_us=... mib_s=... ops_per_s=...
 * (test=tcp_stream with --stream) */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static bool busy, stream;
static uint64_t work_cycles; /* --work */

/* --work: the modelled library path between a message in and one out */
static void work(void)
{
#if defined(__x86_64__)
	uint64_t t0 = __rdtsc();

	while (work_cycles && __rdtsc() - t0 < work_cycles)
		;
#endif
}

/* Sockets are non-blocking; the waiting strategy is the caller's: busy
 * spins, blocking sleeps in poll() on what it waits for. */
static void wait_fd(int fd, short events)
{
	struct pollfd p = {.fd = fd, .events = events};

	if (!busy)
		poll(&p, 1, -1);
}

/* Moves up to len bytes without waiting; bytes moved, or -1 on EOF/error. */
static ssize_t io_some(int fd, char *buf, size_t len, bool out)
{
	for (;;) {
		ssize_t n = out ? send(fd, buf, len, MSG_NOSIGNAL) : recv(fd, buf, len, 0);

		if (n > 0)
			return n;
		if (n == 0 && !out)
			return -1;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		return -1;
	}
}

static int io_all(int fd, char *buf, size_t len, bool out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = io_some(fd, buf + done, len - done, out);

		if (n < 0)
			return -1;
		if (n == 0)
			wait_fd(fd, out ? POLLOUT : POLLIN);
		done += (size_t)n;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void tune(int fd)
{
	int one = 1, buf = 4 << 20;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

static void nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Blocking ping-pong: one message each way per call, the kernel waking us
 * once per message (MSG_WAITALL), the way a blocking echo is written. */
static int msg_blocking(int fd, char *buf, size_t len, bool out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = out ? send(fd, buf + done, len - done, MSG_NOSIGNAL)
		                : recv(fd, buf + done, len - done, MSG_WAITALL);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		done += (size_t)n;
	}
	return 0;
}

/* The server echoes message by message: blocking, it sleeps until a whole
 * SIZE-byte message is in (MSG_WAITALL) and sends it back; busy, it spins
 * on non-blocking reads and echoes whatever arrived. */
static int serve(uint16_t port, size_t size)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0), fd;
	size_t cap = size < 65536 ? 65536 : size;
	char *buf = malloc(cap);

	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	if (!buf || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1)) {
		perror("tcp_echo: listen");
		return 1;
	}
	printf("tcp_echo: server on port %u\n", port);
	fflush(stdout);
	fd = accept(lfd, NULL, NULL);
	close(lfd);
	if (fd < 0)
		return 1;
	tune(fd);
	if (stream) {
		/* [u64 total bytes] then the bytes; one byte back at the end */
		uint64_t total = 0, got = 0;
		int rc = 1;

		if (msg_blocking(fd, (char *)&total, sizeof(total), false) == 0) {
			while (got < total) {
				ssize_t n = recv(fd, buf, total - got < cap ? total - got : cap, 0);

				if (n <= 0 && !(n < 0 && errno == EINTR))
					break;
				if (n > 0)
					got += (uint64_t)n;
			}
			if (got == total && msg_blocking(fd, buf, 1, true) == 0)
				rc = 0;
		}
		close(fd);
		free(buf);
		return rc;
	}
	if (!busy) {
		while (msg_blocking(fd, buf, size, false) == 0)
			if (msg_blocking(fd, buf, size, true))
				break;
		close(fd);
		free(buf);
		return 0;
	}
	nonblock(fd);
	for (;;) {
		ssize_t n = io_some(fd, buf, cap, false);

		if (n < 0)
			break;
		if (n == 0)
			wait_fd(fd, POLLIN);
		else if ((work(), io_all(fd, buf, (size_t)n, true)))
			break;
	}
	close(fd);
	free(buf);
	return 0;
}

static int client(const char *host, uint16_t port, size_t size, uint64_t iters, uint32_t inflight)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	uint64_t warm = iters / 10 > 1000 ? 1000 : iters / 10, total = iters + warm;
	uint64_t *start = calloc(inflight, sizeof(uint64_t));
	uint64_t *lat = calloc(iters, sizeof(uint64_t));
	char *out = calloc(1, size ? size : 1), *in = calloc(1, size ? size : 1);
	uint64_t sent = 0, got = 0, nlat = 0, t0 = 0;
	size_t out_off = 0, in_off = 0;
	int fd = -1;

	if (!start || !lat || !out || !in || inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return 2;
	for (int attempt = 0; attempt < 100; attempt++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		close(fd);
		fd = -1;
		usleep(100000);
	}
	if (fd < 0) {
		perror("tcp_echo: connect");
		return 1;
	}
	tune(fd);
	if (stream) {
		uint64_t bytes = iters * size, t_start;
		char ack;

		if (msg_blocking(fd, (char *)&bytes, sizeof(bytes), true))
			return 1;
		memset(out, 0x5a, size);
		t_start = rdmx__now_ns();
		for (uint64_t i = 0; i < iters; i++)
			if (msg_blocking(fd, out, size, true))
				return 1;
		if (msg_blocking(fd, &ack, 1, false))
			return 1;
		double secs = (double)(rdmx__now_ns() - t_start) / 1e9,
		       per = secs * 1e6 / (double)iters;
		printf("RESULT test=tcp_stream size=%zu p50_us=%.2f p99_us=%.2f mib_s=%.2f "
		       "ops_per_s=%.0f\n",
		       size, per, per, (double)bytes / secs / 1048576.0, (double)iters / secs);
		close(fd);
		return 0;
	}
	if (!busy && inflight == 1) {
		/* the plain blocking ping-pong */
		for (got = 0; got < total; got++) {
			uint64_t s0;

			if (got == warm)
				t0 = rdmx__now_ns();
			s0 = rdmx__now_ns();
			if (msg_blocking(fd, out, size, true) || msg_blocking(fd, in, size, false))
				return 1;
			if (got >= warm)
				lat[nlat++] = rdmx__now_ns() - s0;
		}
	}
	nonblock(fd);
	/* pipelined: keep `inflight` messages between sent and received; with
	 * 1 in flight (busy) this is a ping-pong too */
	while (got < total) {
		bool progress = false;

		if (got == warm && !t0)
			t0 = rdmx__now_ns();
		if (sent < total && sent - got < inflight) {
			if (out_off == 0)
				start[sent % inflight] = rdmx__now_ns();
			ssize_t n = io_some(fd, out + out_off, size - out_off, true);

			if (n < 0)
				return 1;
			progress |= n > 0;
			out_off += (size_t)n;
			if (out_off == size) {
				out_off = 0;
				sent++;
			}
		}
		ssize_t n = io_some(fd, in + in_off, size - in_off, false);

		if (n < 0)
			return 1;
		progress |= n > 0;
		in_off += (size_t)n;
		if (in_off == size) {
			work();
			in_off = 0;
			if (got >= warm && nlat < iters)
				lat[nlat++] = rdmx__now_ns() - start[got % inflight];
			got++;
		}
		if (!progress)
			wait_fd(fd, (short)(POLLIN |
			                    (sent < total && sent - got < inflight ? POLLOUT : 0)));
	}
	double secs = (double)(rdmx__now_ns() - t0) / 1e9;
	qsort(lat, nlat, sizeof(uint64_t), cmp_u64);
	double p50 = (double)lat[nlat / 2] / 1000.0,
	       p99 = (double)lat[(nlat - 1) * 99 / 100] / 1000.0;
	printf("RESULT test=tcp_echo size=%zu p50_us=%.2f p99_us=%.2f mib_s=%.2f ops_per_s=%.0f\n",
	       size, p50, p99, (double)iters * (double)size / secs / 1048576.0,
	       (double)iters / secs);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"busy", no_argument, NULL, 'b'},
	                                   {"stream", no_argument, NULL, 'S'},
	                                   {"work", required_argument, NULL, 'w'},
	                                   {0}};
	size_t size = 64;
	uint64_t iters = 10000;
	uint32_t inflight = 1;
	uint16_t port = 18600;
	int c;

	while ((c = getopt_long(argc, argv, "s:n:t:p:", lo, NULL)) != -1) {
		switch (c) {
		case 's': {
			char *end = NULL;

			size = strtoull(optarg, &end, 0);
			if (end && (*end == 'M' || *end == 'm'))
				size <<= 20;
			else if (end && (*end == 'K' || *end == 'k'))
				size <<= 10;
			break;
		}
		case 'n':
			iters = strtoull(optarg, NULL, 0);
			break;
		case 't':
			inflight = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			port = (uint16_t)strtoul(optarg, NULL, 0);
			break;
		case 'b':
			busy = true;
			break;
		case 'S':
			stream = true;
			break;
		case 'w':
			work_cycles = strtoull(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: tcp_echo [-s SIZE] [-n ITERS] [-t INFLIGHT] [-p "
			                "PORT] [--busy [--work CYCLES]|--stream] [SERVER]\n");
			return 2;
		}
	}
	if (!size || !iters || !inflight || (work_cycles && (!busy || stream)))
		return 2;
	if (optind < argc)
		return client(argv[optind], port, size, iters, inflight);
	return serve(port, size);
}
