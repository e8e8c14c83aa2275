/* tests/bench/rpc/syscall_cost.c — what one system call costs on this
 * machine, in TSC cycles (the unit of tests/bench/rpc/critical-path.sh):
 * getppid (a null call), a recv that finds nothing (a busy poll's empty
 * look) and epoll_wait with a zero timeout, each the mean of 200000 calls.
 * Prints one line per call: `SYSCALL <name> <cycles>`. x86-64 only. */
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#define CALLS 200000

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
	return 0;
}
