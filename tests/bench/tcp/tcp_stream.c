/* Raw TCP stream anchor for the tcp provider's bandwidth tests: the client
 * sends `iters` messages of `size` bytes with blocking send, the server
 * receives them into one buffer of `size` bytes with blocking recv and
 * answers one byte at the end; the client's time runs from its first send to
 * that byte (as rdmx-perf's bandwidth time runs to the last completion).
 *   tcp_stream [-s SIZE] [-n ITERS] [-p PORT] [--zerocopy] [SERVER_ADDR]
 * Without SERVER_ADDR it is the server (one connection, then it exits).
 * Prints "RESULT test=tcp_stream size=S mib_s=X" on the client.
 * --zerocopy (client): sends with MSG_ZEROCOPY (SO_ZEROCOPY), reaping the
 * kernel's completion notifications from the error queue as they come and
 * all of them before the clock stops; the RESULT line adds zc_sends and
 * zc_copied, the sends the kernel reported it copied after all (what a
 * local receiver makes it do). Whether MSG_ZEROCOPY pays for the tcp
 * provider's bulk writes is this measurement (docs/BENCHMARKS.md). */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#ifndef SO_EE_ORIGIN_ZEROCOPY
#define SO_EE_ORIGIN_ZEROCOPY 5
#endif
#ifndef SO_EE_CODE_ZEROCOPY_COPIED
#define SO_EE_CODE_ZEROCOPY_COPIED 1
#endif

static int zc_flag;                                /* MSG_ZEROCOPY or 0 */
static unsigned long zc_sends, zc_done, zc_copied; /* send calls, notified, copied */

/* Takes the zerocopy notifications waiting in fd's error queue. */
static void zc_reap(int fd)
{
	for (;;) {
		char ctrl[256];
		struct msghdr m = {.msg_control = ctrl, .msg_controllen = sizeof(ctrl)};

		if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			struct sock_extended_err ee;
			unsigned long n;

			if (!((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
			      (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR)))
				continue;
			memcpy(&ee, CMSG_DATA(c), sizeof(ee));
			if (ee.ee_origin != SO_EE_ORIGIN_ZEROCOPY)
				continue;
			n = (unsigned long)(ee.ee_data - ee.ee_info) + 1; /* a range of send ids */
			zc_done += n;
			if (ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
				zc_copied += n;
		}
	}
}

/* Every notification in (the buffer is free again), at most 10 s. */
static int zc_drain(int fd)
{
	for (int waits = 0; zc_done < zc_sends && waits < 1000; waits++) {
		struct pollfd p = {.fd = fd, .events = 0};

		poll(&p, 1, 10);
		zc_reap(fd);
	}
	return zc_done == zc_sends ? 0 : -1;
}

static int xfer(int fd, char *buf, size_t len, int send_side)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send_side ? send(fd, buf + done, len - done, MSG_NOSIGNAL | zc_flag)
		                      : recv(fd, buf + done, len - done, 0);

		if (n > 0) {
			done += (size_t)n;
			zc_sends += send_side && zc_flag;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && errno == ENOBUFS && send_side && zc_flag) {
			zc_drain(fd); /* too many notifications outstanding */
		} else {
			return -1;
		}
	}
	if (send_side && zc_flag)
		zc_reap(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	size_t size = 1u << 20;
	unsigned long iters = 2000;
	const char *server = NULL;
	int port = 18800, fd, one = 1;
	char *buf, ack = 1;
	double t0, t1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-s") && i + 1 < argc)
			size = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			iters = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-p") && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--zerocopy"))
			zc_flag = MSG_ZEROCOPY;
		else if (argv[i][0] != '-')
			server = argv[i];
		else {
			fprintf(stderr, "usage: tcp_stream [-s SIZE] [-n ITERS] [-p PORT] "
			                "[--zerocopy] [SERVER]\n");
			return 2;
		}
	}
	if (!size || !iters) {
		fprintf(stderr, "tcp_stream: size and iterations must be positive\n");
		return 2;
	}
	buf = calloc(1, size);
	if (!buf)
		return 1;
	sa.sin_port = htons((uint16_t)port);
	if (!server) {
		int l = socket(AF_INET, SOCK_STREAM, 0);

		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		sa.sin_addr.s_addr = htonl(INADDR_ANY);
		if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1)) {
			perror("tcp_stream: bind");
			return 1;
		}
		fd = accept(l, NULL, NULL);
		close(l);
		if (fd < 0) {
			perror("tcp_stream: accept");
			return 1;
		}
		for (unsigned long i = 0; i < iters; i++)
			if (xfer(fd, buf, size, 0)) {
				fprintf(stderr, "tcp_stream: receive failed\n");
				return 1;
			}
		if (xfer(fd, &ack, 1, 1))
			return 1;
		close(fd);
		free(buf);
		return 0;
	}
	if (inet_pton(AF_INET, server, &sa.sin_addr) != 1) {
		fprintf(stderr, "tcp_stream: bad address %s\n", server);
		return 2;
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	for (int tries = 0; connect(fd, (struct sockaddr *)&sa, sizeof(sa)); tries++) {
		if (tries > 100) {
			perror("tcp_stream: connect");
			return 1;
		}
		usleep(20000);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (zc_flag && setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one))) {
		perror("tcp_stream: SO_ZEROCOPY");
		return 1;
	}
	t0 = now_s();
	for (unsigned long i = 0; i < iters; i++)
		if (xfer(fd, buf, size, 1)) {
			fprintf(stderr, "tcp_stream: send failed\n");
			return 1;
		}
	if (xfer(fd, &ack, 1, 0))
		return 1;
	if (zc_flag && zc_drain(fd)) {
		fprintf(stderr, "tcp_stream: %lu of %lu zerocopy notifications missing\n",
		        zc_sends - zc_done, zc_sends);
		return 1;
	}
	t1 = now_s();
	printf("RESULT test=tcp_stream size=%zu mib_s=%.2f", size,
	       (double)size * (double)iters / (1024.0 * 1024.0) / (t1 - t0));
	if (zc_flag)
		printf(" zc_sends=%lu zc_copied=%lu", zc_sends, zc_copied);
	printf("\n");
	close(fd);
	free(buf);
	return 0;
}
