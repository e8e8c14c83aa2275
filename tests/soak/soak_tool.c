/* rdmx-soak: the hostile and measuring peers of the soak suite (run).
 *
 *   rdmx-soak halfopen HOST:PORT N [SRC_IP...]   N half-open TLS handshakes
 *       (a partial ClientHello, then silence), spread over the source
 *       addresses (default 127.0.0.1); prints "held N" and holds them until
 *       stdin closes.
 *   rdmx-soak stall HOST:PORT N                  N TCP connections that say
 *       nothing (stalled data-port peers); "held N", holds until stdin
 *       closes.
 *   rdmx-soak silent                             a TCP listener that accepts
 *       and never answers; prints "listening PORT", until stdin closes.
 *   rdmx-soak unknown HOST:PORT N --ca F --cert F --key F
 *       N calls to distinct unknown method ids over one secure connection;
 *       each must answer UNIMPLEMENTED. Prints "unknown N ok".
 *
 * Every loop is bounded; every failure is a line on stderr and exit 1. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdmx/channel.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>
#include <rdmx/pe.h>

#define MAX_HELD 4096

static int split(const char *s, char *host, size_t hl, uint16_t *port)
{
	const char *c = strrchr(s, ':');
	long p;

	if (!c || (size_t)(c - s) >= hl)
		return -1;
	memcpy(host, s, (size_t)(c - s));
	host[c - s] = '\0';
	p = strtol(c + 1, NULL, 10);
	if (p <= 0 || p > 65535)
		return -1;
	*port = (uint16_t)p;
	return 0;
}

static int tcp_to(const char *host, uint16_t port, const char *src)
{
	struct sockaddr_in a = {.sin_family = AF_INET}, b = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (src) {
		inet_pton(AF_INET, src, &b.sin_addr);
		if (bind(fd, (struct sockaddr *)&b, sizeof(b))) {
			close(fd);
			return -1;
		}
	}
	a.sin_port = htons(port);
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
	    connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

static void raise_fd_limit(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

/* Until stdin closes (the suite holds its other end). */
static void hold(void)
{
	char buf[64];

	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
}

static int cmd_hold(int argc, char **argv, int hello)
{
	/* record header (handshake, TLS 1.0 legacy), length 512, then the start
	 * of a ClientHello: type 1, length, version; the rest never comes */
	static const unsigned char part[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01,
	                                     0x00, 0x01, 0xfc, 0x03, 0x03};
	static int fds[MAX_HELD];
	char host[64];
	uint16_t port;
	long n = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
	int held = 0;

	if (argc < 4 || split(argv[2], host, sizeof(host), &port) || n < 1 || n > MAX_HELD) {
		fprintf(stderr, "rdmx-soak: want %s HOST:PORT N [SRC...]\n", argv[1]);
		return 2;
	}
	raise_fd_limit();
	for (long i = 0; i < n; i++) {
		const char *src = argc > 4 ? argv[4 + i % (argc - 4)] : NULL;
		int fd = tcp_to(host, port, src);

		if (fd < 0) {
			fprintf(stderr, "rdmx-soak: connection %ld to %s: %s\n", i, argv[2],
			        strerror(errno));
			continue;
		}
		if (hello && write(fd, part, sizeof(part)) != (ssize_t)sizeof(part)) {
			close(fd);
			continue;
		}
		fds[held++] = fd;
	}
	printf("held %d\n", held);
	fflush(stdout);
	hold();
	for (int i = 0; i < held; i++)
		close(fds[i]);
	return held == n ? 0 : 1;
}

static int cmd_silent(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&a, &al)) {
		fprintf(stderr, "rdmx-soak: silent listener: %s\n", strerror(errno));
		return 1;
	}
	printf("listening %u\n", ntohs(a.sin_port));
	fflush(stdout);
	hold();
	close(fd);
	return 0;
}

struct slot {
	int done;
	enum rdmx_rpc_code code;
};

static void on_done(const struct rdmx_rpc_result *r, void *arg)
{
	struct slot *s = arg;

	s->code = r->code;
	s->done = 1;
}

static int64_t mono_ms(void)
{
	return (int64_t)(rdmx_pe_now_ns() / 1000000u);
}

static int cmd_unknown(int argc, char **argv)
{
	enum { WINDOW = 64 };
	static struct slot slots[WINDOW];
	const char *ca = NULL, *cert = NULL, *key = NULL;
	struct rdmx_tls_config *cfg = NULL;
	struct rdmx_rpc_secure_opts o;
	struct rdmx_rpc_secure_conn *sc = NULL;
	struct rdmx_rpc_ep *ep = NULL;
	struct rdmx_chan_worker *worker_;
	char host[64];
	uint16_t port;
	long n = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
	long sent = 0, done = 0, bad = 0;
	int64_t end;
	int ret;

	for (int i = 4; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--ca"))
			ca = argv[i + 1];
		else if (!strcmp(argv[i], "--cert"))
			cert = argv[i + 1];
		else if (!strcmp(argv[i], "--key"))
			key = argv[i + 1];
	}
	if (argc < 4 || split(argv[2], host, sizeof(host), &port) || n < 1 || n > 10000000 || !ca ||
	    !cert || !key) {
		fprintf(stderr, "rdmx-soak: want unknown HOST:PORT N --ca F --cert F --key F\n");
		return 2;
	}
	ret = rdmx_tls_config_create(&cfg);
	if (!ret)
		ret = rdmx_tls_config_set_ca_file(cfg, ca);
	if (!ret)
		ret = rdmx_tls_config_set_cert_key(cfg, cert, key);
	if (!ret)
		ret = rdmx_tls_config_add_allowed_peer(cfg, "*");
	rdmx_rpc_secure_opts_init(&o);
	o.name = "rdmx-soak";
	o.timeout_ms = 10000;
	if (!ret)
		ret = rdmx_rpc_secure_connect(host, port, cfg, NULL, &o, &sc);
	if (ret) {
		fprintf(stderr, "rdmx-soak: connecting to %s: %s\n", argv[2], rdmx_strerror(ret));
		rdmx_tls_config_destroy(&cfg);
		return 1;
	}
	ep = rdmx_rpc_secure_conn_get_ep(sc);
	worker_ = rdmx_chan_get_worker(rdmx_rpc_ep_get_chan(ep));
	end = mono_ms() + 120000; /* failure guard */
	while (done < n && mono_ms() < end) {
		while (sent < n && sent - done < WINDOW) {
			struct slot *s = &slots[sent % WINDOW];
			struct rdmx_rpc_payload p = rdmx_rpc_bytes(NULL, 0);
			struct rdmx_rpc_call_opts co = {5000000u, false};

			s->done = 0;
			/* distinct ids, odd so that none is a kv or builtin id by luck
			 * of the low bits alone (the server answers UNIMPLEMENTED
			 * for every id it does not know either way) */
			ret = rdmx_rpc_call_async(ep, 0x5a000001u + (uint32_t)sent * 2u, &p, &co,
			                          on_done, s, NULL);
			if (ret) {
				fprintf(stderr, "rdmx-soak: call %ld: %s\n", sent,
				        rdmx_strerror(ret));
				goto out;
			}
			sent++;
		}
		while (!slots[done % WINDOW].done && mono_ms() < end)
			rdmx_chan_worker_wait(worker_, 10);
		if (!slots[done % WINDOW].done)
			break;
		if (slots[done % WINDOW].code != RDMX_RPC_UNIMPLEMENTED)
			bad++;
		done++;
	}
out:
	rdmx_rpc_secure_close(&sc);
	rdmx_tls_config_destroy(&cfg);
	if (done != n || bad) {
		fprintf(stderr,
		        "rdmx-soak: unknown ids: %ld of %ld answered, %ld not UNIMPLEMENTED\n",
		        done, n, bad);
		return 1;
	}
	printf("unknown %ld ok\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "halfopen"))
		return cmd_hold(argc, argv, 1);
	if (argc >= 2 && !strcmp(argv[1], "stall"))
		return cmd_hold(argc, argv, 0);
	if (argc >= 2 && !strcmp(argv[1], "silent"))
		return cmd_silent();
	if (argc >= 2 && !strcmp(argv[1], "unknown"))
		return cmd_unknown(argc, argv);
	fprintf(stderr, "usage: rdmx-soak halfopen|stall|silent|unknown ... (see the source)\n");
	return 2;
}
