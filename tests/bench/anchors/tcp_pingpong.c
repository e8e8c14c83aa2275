/* tcp_pingpong: the raw TCP anchor for rdmx's latency numbers. Same shape as
 * rdmx-perf send_lat: a SIZE-byte message bounced ITERS times, latency = half
 * the round trip (perftest's convention), waiting either blocking (recv) or
 * busy (non-blocking recv in a loop).
 *   tcp_pingpong [-s SIZE] [-n ITERS] [-p PORT] [--busy] [SERVER_ADDR]
 * Prints: RESULT test=tcp_pingpong size=... p50_us=... p99_us=... mib_s=... ops_per_s=... */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

static bool busy;

static int xfer(int fd, char *buf, size_t len, bool send_side)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = send_side ? send(fd, buf + done, len - done, MSG_NOSIGNAL)
		                      : recv(fd, buf + done, len - done, 0);
		if (n > 0)
			done += (size_t)n;
		else if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		else
			return -1;
	}
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	size_t size = 64;
	unsigned long iters = 10000;
	int port = 18700, c;
	const char *server = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--busy"))
			busy = true;
		else if (!strcmp(argv[i], "-s") && i + 1 < argc)
			size = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			iters = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-p") && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (argv[i][0] != '-')
			server = argv[i];
		else {
			fprintf(stderr, "usage: tcp_pingpong [-s SIZE] [-n ITERS] [-p PORT] "
			                "[--busy] [SERVER]\n");
			return 2;
		}
	}
	char *buf = calloc(1, size ? size : 1);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd, one = 1;
	if (!server) {
		int l = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		sa.sin_addr.s_addr = htonl(INADDR_ANY);
		if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1)) {
			perror("bind");
			return 1;
		}
		fd = accept(l, NULL, NULL);
		close(l);
	} else {
		inet_pton(AF_INET, server, &sa.sin_addr);
		for (c = 0; c < 100; c++) {
			fd = socket(AF_INET, SOCK_STREAM, 0);
			if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
				break;
			close(fd);
			fd = -1;
			usleep(50000);
		}
		if (fd < 0) {
			perror("connect");
			return 1;
		}
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (busy)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	unsigned long warm = iters / 10 > 1000 ? 1000 : iters / 10, total = iters + warm;
	double *lat = calloc(iters, sizeof(double));
	uint64_t start = 0;
	for (unsigned long i = 0; i < total; i++) {
		uint64_t t0 = rdmx__now_ns();
		if (i == warm)
			start = t0;
		if (server) {
			if (xfer(fd, buf, size, true) || xfer(fd, buf, size, false))
				return 1;
			if (i >= warm)
				lat[i - warm] = (double)(rdmx__now_ns() - t0) / 2000.0;
		} else if (xfer(fd, buf, size, false) || xfer(fd, buf, size, true)) {
			return 1;
		}
	}
	if (server) {
		double secs = (double)(rdmx__now_ns() - start) / 1e9;
		qsort(lat, iters, sizeof(double), cmp);
		printf("RESULT test=tcp_pingpong size=%zu p50_us=%.2f p99_us=%.2f mib_s=%.2f "
		       "ops_per_s=%.0f\n",
		       size, lat[iters / 2], lat[(iters - 1) * 99 / 100],
		       (double)(iters * size) / secs / 1048576.0, (double)iters / secs);
	}
	close(fd);
	free(lat);
	free(buf);
	return 0;
}
