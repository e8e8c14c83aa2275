/* syscall_cycles.so — an LD_PRELOAD module for tests/bench/tcp/wait-path.sh
 * --cycles: the cycles (TSC) a process spends inside each recv, send and
 * sendmsg, and in user space between a recv that found nothing and the next
 * recv (one turn of a busy poll loop, less its recv).
 *
 * At exit it prints one line to stderr, medians over the whole run:
 *   CYCLES recv_data=N recv_empty=N send=N loop_gap=N calls=N
 * recv_data: a recv that returned bytes; recv_empty: one that answered
 * EAGAIN; send: send or sendmsg (on loopback the sender's call also runs the
 * receiver's TCP input, so it holds what the receiving socket costs per
 * segment too); loop_gap: user time of an empty poll turn. x86-64 only. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <x86intrin.h>

#define SAMPLES (1u << 20)

enum { RECV_DATA, RECV_EMPTY, SEND, LOOP_GAP, KINDS };

static const char *const names[KINDS] = {"recv_data", "recv_empty", "send", "loop_gap"};
static unsigned samples[KINDS][SAMPLES], counts[KINDS];
static __thread unsigned long long last_empty_exit; /* 0: the last recv had data */

static ssize_t (*real_recv)(int, void *, size_t, int);
static ssize_t (*real_send)(int, const void *, size_t, int);
static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);

static void note(int kind, unsigned long long cycles)
{
	unsigned i = __atomic_fetch_add(&counts[kind], 1, __ATOMIC_RELAXED);

	if (i < SAMPLES)
		samples[kind][i] = (unsigned)cycles;
}

static int cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

__attribute__((destructor)) static void report(void)
{
	unsigned total = 0;

	fprintf(stderr, "CYCLES");
	for (int k = 0; k < KINDS; k++) {
		unsigned n = counts[k] < SAMPLES ? counts[k] : SAMPLES;

		qsort(samples[k], n, sizeof(unsigned), cmp);
		fprintf(stderr, " %s=%u", names[k], n ? samples[k][n / 2] : 0);
		total += counts[k];
	}
	fprintf(stderr, " calls=%u\n", total);
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	unsigned long long t0, t1;
	ssize_t n;
	int err;

	if (!real_recv)
		real_recv = (ssize_t(*)(int, void *, size_t, int))dlsym(RTLD_NEXT, "recv");
	t0 = __rdtsc();
	if (last_empty_exit)
		note(LOOP_GAP, t0 - last_empty_exit);
	n = real_recv(fd, buf, len, flags);
	err = errno;
	t1 = __rdtsc();
	last_empty_exit = 0;
	if (n > 0)
		note(RECV_DATA, t1 - t0);
	else if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK)) {
		note(RECV_EMPTY, t1 - t0);
		last_empty_exit = t1;
	}
	errno = err;
	return n;
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	unsigned long long t0;
	ssize_t n;
	int err;

	if (!real_send)
		real_send = (ssize_t(*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "send");
	t0 = __rdtsc();
	n = real_send(fd, buf, len, flags);
	err = errno;
	note(SEND, __rdtsc() - t0);
	errno = err;
	return n;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	unsigned long long t0;
	ssize_t n;
	int err;

	if (!real_sendmsg)
		real_sendmsg =
		    (ssize_t(*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
	t0 = __rdtsc();
	n = real_sendmsg(fd, msg, flags);
	err = errno;
	note(SEND, __rdtsc() - t0);
	errno = err;
	return n;
}
