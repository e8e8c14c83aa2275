/* Fixture of the secure RPC tests (see rpcsec_fix.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include <rdmx/channel.h>
#include <rdmx/ctx.h>
#include <rdmx/registry.h>
#include <rdmx/pe.h>
#include <rdmx/rpc_stream.h>

#include "ev_thread.h"
#include "rpcsec_fix.h"
#include "test_child.h"

struct tls_test_pki fix_pki;

const char *fix_device(int peer)
{
	const char *d = getenv("RDMX_TEST_DEVICE");

	if (!d || !*d)
		d = "tcp";
	if (peer) {
		const char *p = getenv("RDMX_TEST_PEER_DEVICE");

		if (p && *p)
			d = p;
	}
	return d;
}

const char *fix_addr(void)
{
	const char *a = getenv("RDMX_TEST_ADDR");

	return a && *a ? a : "127.0.0.1";
}

int64_t fix_now_ms(void)
{
	return (int64_t)(rdmx_pe_now_ns() / 1000000u);
}

void fix_setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	cr_assert_eq(tls_test_pki_create(&fix_pki), 0, "test PKI");
	tls_test_log_capture();
}

void fix_teardown(void)
{
	tls_test_pki_destroy(&fix_pki);
}

/* ---- rdmx-bootstrapd ---- */

void fix_bsd_start(struct fix_bsd *d)
{
	const char *prog = getenv("RDMX_BOOTSTRAPD");
	char listen[96], line[256] = "", *argv[12];
	size_t n = 0;
	int pipefd[2], argc = 0, ret;
	int64_t end;
	unsigned port = 0;

	if (!prog || !*prog)
		prog = RDMX_BOOTSTRAPD_PATH;
	snprintf(listen, sizeof(listen), "%s:0", fix_addr());
	argv[argc++] = (char *)prog;
	argv[argc++] = "--listen";
	argv[argc++] = listen;
	argv[argc++] = "--ca";
	argv[argc++] = strdup(tls_test_pki_path(&fix_pki, "ca", ".crt"));
	argv[argc++] = "--cert";
	argv[argc++] = strdup(tls_test_pki_path(&fix_pki, "server", ".crt"));
	argv[argc++] = "--key";
	argv[argc++] = strdup(tls_test_pki_path(&fix_pki, "server", ".key"));
	argv[argc] = NULL;
	cr_assert_eq(pipe2(pipefd, O_CLOEXEC), 0);
	/* its own process group, killed with this test on every exit path */
	ret = test_child_start(argv, pipefd[1], &d->pid);
	close(pipefd[1]);
	for (int i = 4; i < argc; i += 2)
		free(argv[i]);
	cr_assert_eq(ret, 0, "cannot start %s: %s", prog, strerror(-ret));
	/* its first line: "listening HOST PORT" */
	end = fix_now_ms() + 10000;
	while (!strchr(line, '\n') && fix_now_ms() < end && n < sizeof(line) - 1) {
		struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
		ssize_t r;

		if (poll(&p, 1, 100) <= 0)
			continue;
		r = read(pipefd[0], line + n, sizeof(line) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		line[n] = '\0';
	}
	close(pipefd[0]);
	cr_assert(sscanf(line, "listening %*s %u", &port) == 1 && port > 0 && port < 65536,
	          "rdmx-bootstrapd did not say where it listens: '%s'", line);
	d->port = (uint16_t)port;
}

void fix_bsd_stop(struct fix_bsd *d)
{
	test_child_stop(&d->pid, 5000);
}

struct rdmx_tls_config *fix_registry_config(const char *name)
{
	struct rdmx_tls_config *cfg = tls_test_config(&fix_pki, name, "server.test", 0);

	cr_assert_not_null(cfg);
	return cfg;
}

struct rdmx_tls_config *fix_client_config(const char *name, const char *allow)
{
	struct rdmx_tls_config *cfg = tls_test_config(&fix_pki, name, allow, 0);

	cr_assert_not_null(cfg);
	return cfg;
}

void fix_client_opts(struct rdmx_rpc_secure_opts *o)
{
	rdmx_rpc_secure_opts_init(o);
	o->device = fix_device(1);
	o->name = FIX_CLIENT_HELLO;
	o->timeout_ms = 15000;
	o->liveness_ms = 20;
}

/* ---- the server thread ---- */

#define FIX_CONNS 16 /* client connections with a record, per server */

struct fix_conn {    /* one connection's state, "freed" by gone */
	int held;    /* calls held, not yet cancelled */
	int streams; /* streams open, not yet ended */
	int gone;
	struct rdmx_rpc_secure_conn *conn; /* until gone */
};

static struct {
	struct rdmx_test_ev_thread th; /* the loop and its thread */
	struct ev_loop *loop;          /* th.loop */
	ev_async wake;                 /* commands from the test thread */
	struct rdmx_tls_config *cfg, *reg_cfg;
	struct rdmx_rpc_server *server;
	struct rdmx_rpc_secure_server *ss;
	struct rdmx_registry_client *reg;
	uint64_t member;
	char allow[64];
	uint16_t port, bsd_port;
	enum fix_cmd cmd;
	int cmd_done;
	struct fix_server_stats st;
	struct rdmx_rpc_secure_conn *last; /* loop thread only */
	struct fix_conn conns[FIX_CONNS];  /* under lock */
	int n_conns;                       /* records given out */
	fix_gone_hook gone_hook;           /* under lock */
	int busy_fd[2];                    /* a pipe holding one byte nobody reads */
	ev_io busy;
	pthread_mutex_t lock;
	pthread_cond_t cond;
} S;

static void echo(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(req, len);

	(void)arg;
	pthread_mutex_lock(&S.lock);
	S.st.echoes++;
	pthread_mutex_unlock(&S.lock);
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p);
}

/* arg: the call's connection record (NULL past FIX_CONNS connections) */
static void hold_cancelled(struct rdmx_rpc_server_call *call, void *arg)
{
	struct fix_conn *fc = arg;

	pthread_mutex_lock(&S.lock);
	S.st.held--;
	S.st.cancels++;
	if (fc) {
		if (fc->gone)
			S.st.late_cancels++; /* an application would use freed memory */
		fc->held--;
	}
	pthread_mutex_unlock(&S.lock);
	rdmx_rpc_respond(call, RDMX_RPC_CANCELLED, "held call cancelled", NULL);
}

static void hold(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct fix_conn *fc = rdmx_rpc_ep_get_user_data(rdmx_rpc_call_get_conn(call));

	(void)req;
	(void)len;
	(void)arg;
	pthread_mutex_lock(&S.lock);
	S.st.held++;
	if (fc)
		fc->held++;
	pthread_mutex_unlock(&S.lock);
	rdmx_rpc_call_set_cancel_cb(call, hold_cancelled, fc);
}

/* The streams: accepted, then held open until the connection ends them.
 * arg: the stream's connection record (NULL past FIX_CONNS connections). */
static void stream_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	(void)s;
	(void)data;
	(void)len;
	(void)arg;
}

static void stream_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	struct fix_conn *fc = arg;

	(void)s;
	pthread_mutex_lock(&S.lock);
	S.st.streams--;
	S.st.stream_ends++;
	S.st.stream_code = (int)st->code;
	if (fc) {
		if (fc->gone)
			S.st.late_stream_ends++; /* an application would use freed memory */
		fc->streams--;
	}
	pthread_mutex_unlock(&S.lock);
}

static void stream_hold(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_msg = stream_msg,
	                                               .on_done = stream_done};
	struct fix_conn *fc = rdmx_rpc_ep_get_user_data(rdmx_rpc_stream_get_ep(s));

	(void)arg;
	pthread_mutex_lock(&S.lock);
	S.st.streams++;
	if (fc)
		fc->streams++;
	pthread_mutex_unlock(&S.lock);
	rdmx_rpc_stream_set_callbacks(s, &cbs, fc);
}

static int accept_cb(struct rdmx_rpc_secure_server *srv, const char *cert, const char *hello,
                     void *arg)
{
	(void)srv;
	(void)arg;
	pthread_mutex_lock(&S.lock);
	S.st.accepts++;
	snprintf(S.st.cert, sizeof(S.st.cert), "%s", cert);
	snprintf(S.st.hello, sizeof(S.st.hello), "%s", hello);
	pthread_mutex_unlock(&S.lock);
	return strcmp(hello, "refuse-me") ? 0 : RDMX_E_AUTH;
}

static void connected_cb(struct rdmx_rpc_secure_server *srv, struct rdmx_rpc_secure_conn *conn,
                         void *arg)
{
	(void)srv;
	(void)arg;
	S.last = conn;
	pthread_mutex_lock(&S.lock);
	S.st.connected++;
	if (S.n_conns < FIX_CONNS) {
		S.conns[S.n_conns].conn = conn;
		rdmx_rpc_ep_set_user_data(rdmx_rpc_secure_conn_get_ep(conn), &S.conns[S.n_conns++]);
	}
	pthread_mutex_unlock(&S.lock);
}

static void gone_cb(struct rdmx_rpc_secure_server *srv, struct rdmx_rpc_secure_conn *conn,
                    int status, void *arg)
{
	struct rdmx_rpc_ep *ep = rdmx_rpc_secure_conn_get_ep(conn);
	struct fix_conn *fc = rdmx_rpc_ep_get_user_data(ep);
	fix_gone_hook hook;

	(void)arg;
	pthread_mutex_lock(&S.lock);
	hook = S.gone_hook;
	pthread_mutex_unlock(&S.lock);
	if (hook)
		hook(srv, conn);
	if (conn == S.last)
		S.last = NULL;
	pthread_mutex_lock(&S.lock);
	S.st.gone++;
	S.st.gone_status = status;
	if (fc) {
		if (fc->held)
			S.st.gone_holding++;
		if (fc->streams)
			S.st.gone_streaming++;
		fc->gone = 1; /* what an application would free here */
		fc->conn = NULL;
	}
	pthread_mutex_unlock(&S.lock);
	rdmx_rpc_ep_set_user_data(ep, NULL);
}

/* Level-triggered and never read: pending on every loop iteration, as an
 * engine fd with work always queued would be. */
static void busy_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

static void run_cmd(enum fix_cmd cmd)
{
	int fd = -1;

	if (cmd == FIX_CMD_BUSY && !ev_is_active(&S.busy)) {
		if (pipe2(S.busy_fd, O_CLOEXEC) || write(S.busy_fd[1], "x", 1) != 1)
			return;
		ev_io_init(&S.busy, busy_cb, S.busy_fd[0], EV_READ);
		ev_io_start(S.loop, &S.busy);
		return;
	}
	if (cmd == FIX_CMD_CALM) {
		if (ev_is_active(&S.busy)) {
			ev_io_stop(S.loop, &S.busy);
			close(S.busy_fd[0]);
			close(S.busy_fd[1]);
		}
		return;
	}
	if (!S.last)
		return;
	if (cmd == FIX_CMD_KILL_TLS && rdmx_rpc_secure_get_fd(S.last, &fd) == 0) {
		/* our read side only: the peer is not told, our liveness watch
		 * must find it */
		shutdown(fd, SHUT_RD);
	} else if (cmd == FIX_CMD_KILL_RDMA) {
		struct rdmx_chan *chan = rdmx_rpc_ep_get_chan(rdmx_rpc_secure_conn_get_ep(S.last));
		struct rdmx_conn *conn = chan ? rdmx_chan_get_conn(chan) : NULL;

		if (conn)
			rdmx_conn_disconnect(conn);
	}
}

static void wake_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	enum fix_cmd cmd;

	(void)w;
	(void)revents;
	pthread_mutex_lock(&S.lock);
	cmd = S.cmd;
	S.cmd = FIX_CMD_NONE;
	pthread_mutex_unlock(&S.lock);
	if (cmd != FIX_CMD_NONE) {
		run_cmd(cmd);
		pthread_mutex_lock(&S.lock);
		S.cmd_done = 1;
		pthread_cond_broadcast(&S.cond);
		pthread_mutex_unlock(&S.lock);
	}
	(void)loop;
}

static int join_registry(void)
{
	struct rdmx_registry_kv meta[] = {{"proto", "rdmx-rpc"}};
	char endpoint[96];
	int ret;

	S.reg_cfg = fix_registry_config("client2");
	ret = rdmx_registry_client_connect(fix_addr(), S.bsd_port, S.reg_cfg, &S.reg);
	if (ret)
		return ret;
	snprintf(endpoint, sizeof(endpoint), "%s:%u", fix_addr(), S.port);
	return rdmx_registry_client_join(S.reg, FIX_SERVICE, endpoint, meta, 1, 60000, &S.member,
	                                 NULL);
}

/* on the loop thread */
static int server_setup(struct ev_loop *loop, void *arg)
{
	static const struct rdmx_rpc_secure_server_ops ops = {accept_cb, connected_cb, gone_cb, 0};
	struct rdmx_rpc_secure_opts o;
	int rc;

	(void)arg;
	S.loop = loop;
	ev_async_init(&S.wake, wake_cb);
	ev_async_start(loop, &S.wake);
	rdmx_rpc_secure_opts_init(&o);
	o.device = fix_device(0);
	o.name = FIX_SERVER_HELLO;
	rc = rdmx_rpc_server_create(&S.server);
	if (!rc)
		rc = rdmx_rpc_server_register(S.server, rdmx_rpc_method_id(FIX_ECHO), FIX_ECHO,
		                              echo, NULL);
	if (!rc)
		rc = rdmx_rpc_server_register(S.server, rdmx_rpc_method_id(FIX_HOLD), FIX_HOLD,
		                              hold, NULL);
	if (!rc)
		rc = rdmx_rpc_server_register_stream(S.server, rdmx_rpc_method_id(FIX_WATCH),
		                                     FIX_WATCH, RDMX_RPC_SERVER_STREAMING,
		                                     stream_hold, NULL);
	if (!rc)
		rc = rdmx_rpc_server_register_stream(S.server, rdmx_rpc_method_id(FIX_CHAT),
		                                     FIX_CHAT, RDMX_RPC_BIDI_STREAMING, stream_hold,
		                                     NULL);
	if (!rc)
		rc = rdmx_rpc_secure_listen(loop, S.server, S.cfg, fix_addr(), 0, &ops, &o, NULL,
		                            &S.ss);
	if (!rc)
		rc = rdmx_rpc_secure_server_get_port(S.ss, &S.port);
	if (!rc && S.bsd_port)
		rc = join_registry();
	return rc;
}

/* on the loop thread (or the test's, when setup failed) */
static void server_teardown(struct ev_loop *loop, void *arg)
{
	(void)arg;
	run_cmd(FIX_CMD_CALM);
	if (S.ss) {
		rdmx_rpc_secure_server_destroy(&S.ss);
		/* one more loop iteration (nested, in the stop callback): a
		 * watcher the destroyed server left active would run now, on
		 * freed memory, which the sanitizer build reports */
		ev_run(loop, EVRUN_NOWAIT);
	}
	ev_async_stop(loop, &S.wake);
	if (S.reg) {
		rdmx_registry_client_leave(S.reg, S.member);
		rdmx_registry_client_destroy(&S.reg);
	}
	rdmx_tls_config_destroy(&S.reg_cfg);
	rdmx_rpc_server_destroy(&S.server);
}

void fix_server_start(const char *allow, uint16_t bsd_port)
{
	memset(&S, 0, sizeof(S));
	pthread_mutex_init(&S.lock, NULL);
	pthread_cond_init(&S.cond, NULL);
	snprintf(S.allow, sizeof(S.allow), "%s", allow);
	S.bsd_port = bsd_port;
	S.cfg = tls_test_config(&fix_pki, "client2", allow, 0);
	cr_assert_not_null(S.cfg);
	cr_assert_rc(rdmx_test_ev_thread_start(&S.th, server_setup, server_teardown, NULL),
	             RDMX_OK);
}

uint16_t fix_server_port(void)
{
	return S.port;
}

void fix_server_stats(struct fix_server_stats *st)
{
	pthread_mutex_lock(&S.lock);
	*st = S.st;
	pthread_mutex_unlock(&S.lock);
}

void fix_server_cmd(enum fix_cmd cmd)
{
	struct timespec until;
	int done;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&S.lock);
	S.cmd = cmd;
	S.cmd_done = 0;
	ev_async_send(S.loop, &S.wake);
	while (!S.cmd_done)
		if (pthread_cond_timedwait(&S.cond, &S.lock, &until) == ETIMEDOUT)
			break;
	done = S.cmd_done;
	pthread_mutex_unlock(&S.lock);
	cr_assert(done, "the server did not run command %d", cmd);
}

int fix_server_wait(int (*pred)(const struct fix_server_stats *st), int guard_ms)
{
	int64_t end = fix_now_ms() + guard_ms;
	struct fix_server_stats st;

	for (;;) {
		fix_server_stats(&st);
		if (pred(&st))
			return 1;
		if (fix_now_ms() >= end)
			return 0;
		usleep(2000);
	}
}

void fix_server_set_gone_hook(fix_gone_hook hook)
{
	pthread_mutex_lock(&S.lock);
	S.gone_hook = hook;
	pthread_mutex_unlock(&S.lock);
}

struct rdmx_rpc_secure_conn *fix_server_other_conn(const struct rdmx_rpc_secure_conn *conn)
{
	struct rdmx_rpc_secure_conn *other = NULL;

	pthread_mutex_lock(&S.lock);
	for (int i = 0; i < S.n_conns && !other; i++)
		if (S.conns[i].conn && S.conns[i].conn != conn)
			other = S.conns[i].conn;
	pthread_mutex_unlock(&S.lock);
	return other;
}

void fix_server_stop_stats(struct fix_server_stats *st)
{
	rdmx_test_ev_thread_stop(&S.th);
	if (st)
		*st = S.st; /* the loop thread has ended */
	rdmx_tls_config_destroy(&S.cfg);
	pthread_mutex_destroy(&S.lock);
	pthread_cond_destroy(&S.cond);
}

void fix_server_stop(void)
{
	fix_server_stop_stats(NULL);
}
