/* The programs' /metrics endpoint (tools/common/metrics_http.c) against a
 * peer that opens every connection it can and sends a request it never
 * ends: it holds at most its address's share, and a scraper from another
 * address is answered. The server runs on a libev thread; the checks
 * count closed sockets and answers, no clock (timeouts are failure guards
 * only). */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ev_thread.h"
#include "metrics_http.h"

#define HOLD 64 /* what the endpoint takes at once */
#define SHARE 8 /* ... from one address */

static struct {
	struct rdmx_test_ev_thread th;
	struct rdmx_metrics_http *h;
	uint16_t port;
} S;

static int fill(FILE *f, void *arg)
{
	(void)arg;
	fputs("up 1\n", f);
	return 0;
}

static int setup(struct ev_loop *loop, void *arg)
{
	(void)arg;
	if (rdmx_metrics_http_create(loop, "127.0.0.1", 0, fill, NULL, "test", &S.h))
		return -1;
	S.port = rdmx_metrics_http_port(S.h);
	return 0;
}

static void teardown(struct ev_loop *loop, void *arg)
{
	(void)loop;
	(void)arg;
	rdmx_metrics_http_destroy(&S.h);
}

static int connect_from(const char *src)
{
	struct sockaddr_in a = {.sin_family = AF_INET}, d = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	inet_pton(AF_INET, src, &a.sin_addr);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0, "bind %s: %s", src,
	             strerror(errno));
	inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
	d.sin_port = htons(S.port);
	cr_assert_eq(connect(fd, (struct sockaddr *)&d, sizeof(d)), 0, "connect: %s",
	             strerror(errno));
	return fd;
}

/* Whether the server has closed fd: its FIN (or RST) is already here. */
static int closed_now(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char c;

	if (poll(&p, 1, 0) != 1)
		return 0;
	return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

Test(metrics_http, a_peer_holding_connections_gets_its_share_and_the_scraper_is_answered)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
	const char *partial = "GET /metrics HTTP/1.1\r\nHost: t\r\n"; /* never ended */
	int fds[HOLD], fd, closed = 0, got = 0;
	char buf[4096];
	ssize_t n;

	cr_assert_eq(rdmx_test_ev_thread_start(&S.th, setup, teardown, NULL), 0);
	for (int i = 0; i < HOLD; i++) {
		fds[i] = connect_from("127.0.0.1");
		cr_assert_eq(write(fds[i], partial, strlen(partial)), (ssize_t)strlen(partial));
	}
	/* a scraper from another address: answered (it waited for the peer's
	 * connections to time out before, holding all 64) */
	fd = connect_from("127.0.0.2");
	cr_assert_eq(write(fd, req, sizeof(req) - 1), (ssize_t)(sizeof(req) - 1));
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		cr_assert_eq(poll(&p, 1, 30000), 1, "no answer to the scraper (guard)");
		n = read(fd, buf + got, sizeof(buf) - 1 - (size_t)got);
		if (n <= 0)
			break;
		got += (int)n;
	}
	buf[got] = '\0';
	cr_assert(strstr(buf, "HTTP/1.1 200") && strstr(buf, "up 1"), "scraper got '%s'", buf);
	close(fd);
	/* the endpoint took the peer's connections in order before the
	 * scraper's: those over its share are closed already, the others held */
	for (int i = 0; i < HOLD; i++)
		closed += closed_now(fds[i]);
	cr_assert_eq(closed, HOLD - SHARE, "%d of the peer's %d connections closed, want %d",
	             closed, HOLD, HOLD - SHARE);
	for (int i = 0; i < HOLD; i++)
		close(fds[i]);
	rdmx_test_ev_thread_stop(&S.th);
}
