/* The test relay (relay.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif

#include <criterion/criterion.h>

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "providers/tcp/tcp.h"
#include "relay.h"

static void send_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t s = send(fd, p, n, MSG_NOSIGNAL);

		if (s < 0 && errno == EINTR)
			continue;
		if (s <= 0)
			return;
		p += s;
		n -= (size_t)s;
	}
}

static void record(struct relay *r, const uint8_t *p, size_t n)
{
	pthread_mutex_lock(&r->lock);
	if (r->rec_len + n > r->rec_cap) {
		r->rec_cap = (r->rec_len + n) * 2;
		r->rec = realloc(r->rec, r->rec_cap);
	}
	memcpy(r->rec + r->rec_len, p, n);
	r->rec_len += n;
	pthread_mutex_unlock(&r->lock);
}

static void pair_close(struct relay_pair *pr)
{
	for (int i = 0; i < 2; i++) {
		if (pr->fd[i] >= 0)
			close(pr->fd[i]);
		pr->fd[i] = -1;
		free(pr->d[i].buf);
		pr->d[i].buf = NULL;
		pr->d[i].len = pr->d[i].cap = 0;
	}
	free(pr->held);
	pr->held = NULL;
}

/* One whole record going to fd `to`: forwarded, or the mode's treatment
 * once armed. False when the pair was closed. */
static bool relay_record(struct relay *r, struct relay_pair *pr, int to, uint8_t *rec, size_t n)
{
	int fd = pr->fd[to];

	if (!__atomic_load_n(&r->armed, __ATOMIC_SEQ_CST) ||
	    __atomic_load_n(&r->done, __ATOMIC_SEQ_CST) || (r->only_to >= 0 && r->only_to != to)) {
		send_all(fd, rec, n);
		return true;
	}
	if (r->skip > 0) { /* set before arming; only this thread reads it then */
		r->skip--;
		send_all(fd, rec, n);
		return true;
	}
	switch (r->mode) {
	case R_FLIP:
		rec[TCP_SEAL_HDR + (n - TCP_SEAL_HDR) / 2] ^= 0x08;
		send_all(fd, rec, n);
		break;
	case R_REPLAY:
		send_all(fd, rec, n);
		send_all(fd, rec, n);
		break;
	case R_DROP:
		break;
	case R_REORDER:
		if (!pr->held) {
			pr->held = malloc(n);
			memcpy(pr->held, rec, n);
			pr->held_len = n;
			pr->held_to = to;
			return true; /* sent after the next one */
		}
		send_all(fd, rec, n);
		send_all(pr->fd[pr->held_to], pr->held, pr->held_len);
		break;
	case R_TRUNCATE:
		send_all(fd, rec, n / 2);
		__atomic_store_n(&r->done, 1, __ATOMIC_SEQ_CST);
		pair_close(pr);
		return false;
	default:
		send_all(fd, rec, n);
		return true;
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_SEQ_CST);
	return true;
}

/* Bytes from fd[from]; false once the pair is closed. */
static bool relay_bytes(struct relay *r, struct relay_pair *pr, int from, const uint8_t *p,
                        size_t n)
{
	struct relay_dir *d = &pr->d[from];
	int to = 1 - from;

	record(r, p, n);
	if (r->mode == R_FORWARD) {
		send_all(pr->fd[to], p, n);
		return true;
	}
	if (d->len + n > d->cap) {
		d->cap = (d->len + n) * 2;
		d->buf = realloc(d->buf, d->cap);
	}
	memcpy(d->buf + d->len, p, n);
	d->len += n;
	for (;;) {
		size_t size;

		if (d->len < TCP_SEAL_HDR)
			return true;
		size = TCP_SEAL_HDR + rdmx__ld32(d->buf) + TCP_SEAL_TAG;
		if (d->len < size)
			return true;
		if (!relay_record(r, pr, to, d->buf, size))
			return false;
		memmove(d->buf, d->buf + size, d->len - size);
		d->len -= size;
	}
}

static void *relay_main(void *arg)
{
	struct relay *r = arg;
	static uint8_t tmp[65536];

	for (;;) {
		struct pollfd pfd[2 + 2 * RELAY_MAX_PAIRS];
		int n = 0;

		pfd[n++] = (struct pollfd){.fd = r->wake[0], .events = POLLIN};
		pfd[n++] = (struct pollfd){.fd = r->lfd, .events = POLLIN};
		for (int i = 0; i < r->np; i++)
			for (int j = 0; j < 2; j++)
				pfd[n++] = (struct pollfd){.fd = r->p[i].fd[j], .events = POLLIN};
		if (poll(pfd, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[0].revents)
			break;
		if ((pfd[1].revents & POLLIN) && r->np < RELAY_MAX_PAIRS) {
			int a = accept(r->lfd, NULL, NULL), b;

			b = socket(r->target.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (a >= 0 && b >= 0 &&
			    connect(b, (struct sockaddr *)&r->target, r->target_len) == 0) {
				struct relay_pair *pr = &r->p[r->np++];

				memset(pr, 0, sizeof(*pr));
				pr->fd[0] = a;
				pr->fd[1] = b;
			} else {
				if (a >= 0)
					close(a);
				if (b >= 0)
					close(b);
			}
		}
		for (int k = 2; k < n; k++) {
			int i = (k - 2) / 2, j = (k - 2) % 2;
			struct relay_pair *pr = &r->p[i];
			ssize_t got;

			if (!pfd[k].revents || pr->fd[j] != pfd[k].fd || pr->fd[j] < 0)
				continue;
			got = recv(pr->fd[j], tmp, sizeof(tmp), 0);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				pair_close(pr);
				continue;
			}
			relay_bytes(r, pr, j, tmp, (size_t)got);
		}
		/* closed pairs leave the table */
		for (int i = 0; i < r->np;) {
			if (r->p[i].fd[0] < 0) {
				r->p[i] = r->p[--r->np];
				continue;
			}
			i++;
		}
	}
	for (int i = 0; i < r->np; i++)
		pair_close(&r->p[i]);
	return NULL;
}

/* Starts a relay in front of device `dev`: its exports advertise the
 * relay's port from now on. */
void relay_start(struct relay *r, struct rdmx_dev *dev, enum relay_mode mode)
{
	struct sockaddr_storage me;
	socklen_t len;
	struct tcp_dev *td = TCP_DEV(dev);

	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	r->mode = mode;
	r->only_to = -1;
	/* the relay listens on the device's address (exports name that
	 * address with the relay's port) and forwards to the device */
	r->target = td->addr;
	r->target_len = td->addr_len;
	me = td->addr;
	if (me.ss_family == AF_INET)
		((struct sockaddr_in *)&me)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&me)->sin6_port = 0;
	r->lfd = socket(me.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(r->lfd >= 0);
	cr_assert_eq(bind(r->lfd, (struct sockaddr *)&me, td->addr_len), 0);
	cr_assert_eq(listen(r->lfd, 8), 0);
	len = sizeof(me);
	cr_assert_eq(getsockname(r->lfd, (struct sockaddr *)&me, &len), 0);
	r->port = ntohs(me.ss_family == AF_INET ? ((struct sockaddr_in *)&me)->sin_port
	                                        : ((struct sockaddr_in6 *)&me)->sin6_port);
	cr_assert_eq(pipe(r->wake), 0);
	pthread_mutex_lock(&td->lock);
	td->port = r->port;
	pthread_mutex_unlock(&td->lock);
	cr_assert_eq(pthread_create(&r->thread, NULL, relay_main, r), 0);
}

void relay_stop(struct relay *r)
{
	(void)!write(r->wake[1], "x", 1);
	pthread_join(r->thread, NULL);
	close(r->wake[0]);
	close(r->wake[1]);
	close(r->lfd);
}

void relay_free(struct relay *r)
{
	free(r->rec);
	r->rec = NULL;
	pthread_mutex_destroy(&r->lock);
}

bool relay_seen(const struct relay *r, const void *needle, size_t len)
{
	return r->rec_len >= len && memmem(r->rec, r->rec_len, needle, len) != NULL;
}
