/* Registry addresses (rdmx_registry_client_open): the forms that pick a
 * backend, the ones refused, an etcd address whose members are all gone
 * answering within the timeout, never hanging, and a gateway's text kept
 * escaped. No etcd needed. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rdmx/registry.h>
#include <rdmx/status.h>

#include "common/clock.h"

static long long now_ms(void)
{
	return (long long)rdmx__now_ms();
}

Test(registry_url, refused_forms)
{
	static const char *const bad[] = {
	    "",
	    "nohost",
	    "host:",
	    "host:0",
	    "host:65536",
	    "host:12x",
	    ":80",
	    "http://host:80",
	    "rdmx://a:1,b:2",
	    "rdmx://a:1/prefix",
	    "etcd://",
	    "etcd://a:1,",
	    "etcd://,a:1",
	    "etcd://a:1,b",
	    "etcd://::1:2379",
	    "etcd://[::1]2379",
	    "etcd://a:1/bad prefix",
	    "etcd://a:1//x",
	    "etcd://a:1,a:2,a:3,a:4,a:5,a:6,a:7,a:8,a:9,a:10,a:11,a:12,a:13,a:14,a:15,a:16,a:17",
	    "etcd://@a:1",
	    "etcd://us er@a:1",
	    "rdmx://user@a:1",
	};
	struct rdmx_registry_client *c = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(rdmx_registry_client_open(bad[i], NULL, 100, &c), RDMX_E_INVAL, "'%s'",
		             bad[i]);
		cr_expect_null(c, "'%s'", bad[i]);
	}
	cr_expect_eq(rdmx_registry_client_open(NULL, NULL, 100, &c), RDMX_E_INVAL);
	cr_expect_eq(rdmx_registry_client_open("etcd://a:1", NULL, -1, &c), RDMX_E_INVAL);
}

Test(registry_url, etcd_forms_open_without_connecting)
{
	static const char *const good[] = {
	    "etcd://127.0.0.1:1",
	    "etcd://127.0.0.1:1,127.0.0.1:2,localhost:3",
	    "etcd://[::1]:2379",
	    "etcd://127.0.0.1:1/",
	    "etcd://127.0.0.1:1/team-a/registry",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct rdmx_registry_client *c = NULL;
		int fd;

		cr_assert_eq(rdmx_registry_client_open(good[i], NULL, 100, &c), RDMX_OK, "'%s'",
		             good[i]);
		cr_expect_eq(rdmx_registry_client_get_fd(c, &fd), RDMX_E_NOT_SUPPORTED);
		cr_expect_eq(rdmx_registry_client_destroy(&c), RDMX_OK);
		cr_expect_null(c);
	}
}

/* Every listed member refuses: each call fails within the timeout. */
Test(registry_url, etcd_all_members_gone_is_bounded)
{
	struct rdmx_registry_client *c = NULL;
	struct rdmx_registry_members *ms = NULL;
	struct rdmx_registry_event *ev = NULL;
	uint64_t id = 0;
	long long t0;
	int ret;

	cr_assert_eq(rdmx_registry_client_open("etcd://127.0.0.1:1,127.0.0.1:2", NULL, 400, &c),
	             RDMX_OK);
	t0 = now_ms();
	ret = rdmx_registry_client_lookup(c, "kv", &ms);
	cr_expect_lt(ret, 0);
	cr_expect_null(ms);
	ret = rdmx_registry_client_join(c, "kv", "127.0.0.1:5", NULL, 0, 2000, &id, NULL);
	cr_expect_lt(ret, 0);
	cr_expect_eq(id, 0u);
	cr_expect_lt(rdmx_registry_client_heartbeat(c, 42), 0);
	cr_expect_lt(rdmx_registry_client_watch(c, "kv"), 0);
	cr_expect_eq(rdmx_registry_client_next_event(c, 10, &ev), RDMX_E_BAD_STATE);
	cr_expect_lt(now_ms() - t0, 4 * 1000, "took %lld ms", now_ms() - t0);
	cr_expect_neq(*rdmx_registry_client_last_error(c), '\0');
	rdmx_registry_client_destroy(&c);
}

/* etcd://USER@...: the password only from the environment */
Test(registry_url, etcd_user_needs_its_password)
{
	struct rdmx_registry_client *c = NULL;

	unsetenv("RDMX_ETCD_PASSWORD");
	cr_expect_eq(rdmx_registry_client_open("etcd://kv1@127.0.0.1:1", NULL, 100, &c),
	             RDMX_E_INVAL);
	cr_expect_null(c);
	setenv("RDMX_ETCD_PASSWORD", "secret", 1);
	cr_assert_eq(
	    rdmx_registry_client_open("etcd://kv1@127.0.0.1:1,127.0.0.1:2/p", NULL, 100, &c),
	    RDMX_OK);
	rdmx_registry_client_destroy(&c);
	unsetenv("RDMX_ETCD_PASSWORD");
}

Test(registry_url, keeper_takes_a_url)
{
	struct rdmx_registry_keeper_opts o;
	struct rdmx_registry_keeper *k = NULL;
	struct rdmx_tls_config *cfg = NULL;

	cr_assert_eq(rdmx_tls_config_create(&cfg), RDMX_OK);
	rdmx_registry_keeper_opts_init(&o);
	o.url = "not a registry";
	o.cfg = cfg;
	o.service = "kv";
	o.endpoint = "127.0.0.1:5";
	o.timeout_ms = 200;
	cr_expect_eq(rdmx_registry_keeper_start(&o, &k), RDMX_E_INVAL);
	o.url = "";
	cr_expect_eq(rdmx_registry_keeper_start(&o, &k), RDMX_E_INVAL);
	cr_expect_null(k);
	rdmx_tls_config_destroy(&cfg);
}

/* ---- a fake etcd gateway: one answer per connection ---- */

struct gateway {
	int fd;
	uint16_t port;
	const char *answer; /* the whole HTTP answer */
	size_t answer_len;
	pthread_t thread;
};

/* Reads one request (headers, then Content-Length bytes) and answers it. */
static void gateway_serve(struct gateway *g, int c)
{
	char req[8192];
	size_t got = 0;
	const char *end = NULL, *cl;
	size_t body = 0;

	while (got < sizeof(req) - 1) {
		ssize_t n = recv(c, req + got, sizeof(req) - 1 - got, 0);

		if (n <= 0)
			return;
		got += (size_t)n;
		req[got] = '\0';
		if (!end && (end = strstr(req, "\r\n\r\n")) != NULL) {
			cl = strcasestr(req, "content-length:");
			body = cl ? strtoul(cl + 15, NULL, 10) : 0;
		}
		if (end && got >= (size_t)(end + 4 - req) + body)
			break;
	}
	(void)!send(c, g->answer, g->answer_len, MSG_NOSIGNAL);
}

static void *gateway_main(void *arg)
{
	struct gateway *g = arg;
	int c;

	while ((c = accept(g->fd, NULL, NULL)) >= 0) {
		gateway_serve(g, c);
		close(c);
	}
	return NULL;
}

static void gateway_start(struct gateway *g, const char *answer, size_t len)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof(a);

	g->answer = answer;
	g->answer_len = len;
	g->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(g->fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(g->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(g->fd, 8), 0);
	cr_assert_eq(getsockname(g->fd, (struct sockaddr *)&a, &alen), 0);
	g->port = ntohs(a.sin_port);
	cr_assert_eq(pthread_create(&g->thread, NULL, gateway_main, g), 0);
}

static void gateway_stop(struct gateway *g)
{
	shutdown(g->fd, SHUT_RDWR); /* ends the accept */
	pthread_join(g->thread, NULL);
	close(g->fd);
}

/* A lookup against a gateway answering 400 with `body`: fails, and the
 * client's last error is `expect` ("%u" for the gateway's port). */
static void expect_last_error(const char *body, const char *expect)
{
	struct rdmx_registry_client *c = NULL;
	struct rdmx_registry_members *ms = NULL;
	char answer[1024], url[64], want[512];
	struct gateway g;
	int n;

	n = snprintf(answer, sizeof(answer),
	             "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n"
	             "Content-Length: %zu\r\n\r\n%s",
	             strlen(body), body);
	cr_assert(n > 0 && (size_t)n < sizeof(answer));
	gateway_start(&g, answer, (size_t)n);
	snprintf(url, sizeof(url), "etcd://127.0.0.1:%u", g.port);
	snprintf(want, sizeof(want), expect, g.port);
	cr_assert_eq(rdmx_registry_client_open(url, NULL, 5000, &c), RDMX_OK);
	cr_expect_lt(rdmx_registry_client_lookup(c, "kv", &ms), 0);
	cr_expect_str_eq(rdmx_registry_client_last_error(c), want);
	rdmx_registry_client_destroy(&c);
	gateway_stop(&g);
}

/* What a gateway (or what answers in its place) says reaches the log and
 * rdmx_registry_client_last_error escaped (rdmx__log_escape): a newline
 * can neither end the line nor forge another, nor an escape sequence
 * restyle a terminal; a long text is cut at 200 characters. */
Test(registry_url, etcd_gateway_text_is_escaped)
{
	char big[301], expect[300];

	/* not JSON: the body, whole lines and all */
	expect_last_error("<html>\r\nrdmx error: forged\x1b[2K\\\n</html>\r\n",
	                  "etcd 127.0.0.1:%u/v3/kv/range: HTTP 400: <html>\\x0d\\x0ardmx error: "
	                  "forged\\x1b[2K\\\\\\x0a</html>\\x0d\\x0a");
	/* etcd's JSON error: its message, decoded */
	expect_last_error("{\"error\":\"x\",\"code\":3,\"message\":\"bad\\nrdmx error: "
	                  "forged\\u001b[2K\\\\\"}",
	                  "etcd: bad\\x0ardmx error: forged\\x1b[2K\\\\");
	/* JSON but no error field: no message (its code and text were read
	 * uninitialized) */
	expect_last_error("{\"code\":3,\"message\":\"bad\"}", "etcd: ");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	snprintf(expect, sizeof(expect), "etcd 127.0.0.1:%%u/v3/kv/range: HTTP 400: %.197s...",
	         big);
	expect_last_error(big, expect);
}
