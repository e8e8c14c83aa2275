/* tests/bench/rpc/syscall_cost.c — what one system call costs on this
 * machine, in TSC cycles (the unit of tests/bench/rpc/critical-path.sh):
 * getppid (a null call), a recv that finds nothing (a busy poll's empty
 * look) and epoll_wait with a zero timeout, each the mean of 200000 calls;
 * and a 152 B send on a loopback TCP connection (what a 64 B call's frame
 * is) by send() from one buffer beside sendmsg() of two iovecs (the tcp
 * provider's header and payload), the median of 20000 of each, interleaved,
 * the peer's end drained untimed in between (tx.c's TX_GATHER).
 * Prints one line per call: `SYSCALL <name> <cycles>`. x86-64 only. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#define CALLS 200000
#define SENDS 20000
#define FRAME 152
#define FRAME_HDR 48

static int cmp_cycles(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

/* A connected loopback TCP pair (no delay on the sending end). */
static int tcp_pair(int *tx, int *rx)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &alen))
		return -1;
	*tx = socket(AF_INET, SOCK_STREAM, 0);
	if (*tx < 0 || connect(*tx, (struct sockaddr *)&a, sizeof(a)) ||
	    setsockopt(*tx, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		return -1;
	*rx = accept(l, NULL, NULL);
	close(l);
	return *rx < 0 ? -1 : 0;
}

static int send_costs(void)
{
	static unsigned one[SENDS], two[SENDS];
	static char hdr[4096], body[4096], sink[65536];
	struct iovec iov[2] = {{hdr, FRAME_HDR}, {body, FRAME - FRAME_HDR}};
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
	int tx, rx;

	if (tcp_pair(&tx, &rx)) {
		perror("syscall_cost: loopback pair");
		return 1;
	}
	for (int i = 0; i < SENDS; i++) {
		unsigned long long t = __rdtsc();

		if (send(tx, body, FRAME, MSG_NOSIGNAL | MSG_DONTWAIT) != FRAME)
			return 1;
		one[i] = (unsigned)(__rdtsc() - t);
		while (recv(rx, sink, sizeof(sink), MSG_DONTWAIT) > 0)
			;
		t = __rdtsc();
		if (sendmsg(tx, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) != FRAME)
			return 1;
		two[i] = (unsigned)(__rdtsc() - t);
		while (recv(rx, sink, sizeof(sink), MSG_DONTWAIT) > 0)
			;
	}
	qsort(one, SENDS, sizeof(one[0]), cmp_cycles);
	qsort(two, SENDS, sizeof(two[0]), cmp_cycles);
	printf("SYSCALL send_152 %u\n", one[SENDS / 2]);
	printf("SYSCALL sendmsg_2iov_152 %u\n", two[SENDS / 2]);
	close(tx);
	close(rx);
	return 0;
}

int main(void)
{
	struct epoll_event ev = {.events = EPOLLIN}, out[8];
	unsigned long long t;
	char buf[8];
	int sv[2], ep;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || (ep = epoll_create1(0)) < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev)) {
		perror("syscall_cost: set-up");
		return 1;
	}
	t = __rdtsc();
	for (int i = 0; i < CALLS; i++)
		syscall(SYS_getppid);
	printf("SYSCALL getppid %llu\n", (__rdtsc() - t) / CALLS);
	t = __rdtsc();
	for (int i = 0; i < CALLS; i++)
		if (recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT) >= 0)
			return 1;
	printf("SYSCALL recv_empty %llu\n", (__rdtsc() - t) / CALLS);
	t = __rdtsc();
	for (int i = 0; i < CALLS; i++)
		if (epoll_wait(ep, out, 8, 0) != 0)
			return 1;
	printf("SYSCALL epoll_wait_0 %llu\n", (__rdtsc() - t) / CALLS);
	return send_costs();
}
