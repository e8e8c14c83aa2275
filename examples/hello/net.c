/* See net.h. Everything runs on the calling thread: the engine's callbacks,
 * the channel's and the RPC handlers run from rdmx_chan_worker_wait. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/rdmx.h>
#include <rdmx/channel.h>
#include <rdmx/codec.h>

#include "net.h"

#define MAX_PEERS 64
#define CONNECT_TIMEOUT_MS 10000

struct node {
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_chan_worker *worker;
};

struct peer {
	struct rdmx_chan *chan;
	struct rdmx_rpc_ep *rpc;
	bool closed;
};

struct server {
	struct node n;
	struct rdmx_rpc_server *rpc;
	struct peer peers[MAX_PEERS];
	int served;
};

struct net_client {
	struct node n;
	struct rdmx_conn *conn;
	struct peer p;
	bool established, failed;
};

static int node_open(struct node *n, const struct rdmx_chan_worker_attr *attr)
{
	int rc = rdmx_dev_open(NULL, &n->dev);
	if (!rc)
		rc = rdmx_pe_create(&n->pe);
	if (!rc)
		rc = rdmx_ctx_create(n->dev, n->pe, &n->ctx);
	if (!rc)
		rc = rdmx_chan_worker_create(n->ctx, n->pe, attr, &n->worker);
	if (!rc)
		rc = rdmx_ctx_start(n->ctx);
	return rc;
}

static void node_close(struct node *n)
{
	if (n->ctx)
		rdmx_ctx_stop(n->ctx);
	rdmx_chan_worker_destroy(&n->worker);
	rdmx_ctx_destroy(&n->ctx);
	rdmx_pe_destroy(&n->pe);
	rdmx_dev_close(&n->dev);
}

static void peer_closed(struct rdmx_rpc_ep *ep, int status, void *arg)
{
	(void)ep;
	(void)status;
	((struct peer *)arg)->closed = true;
}

/* a channel and an RPC endpoint on an established connection */
static int peer_open(struct peer *p, struct rdmx_chan_worker *worker, struct rdmx_conn *conn,
                     struct rdmx_rpc_server *server)
{
	int rc = rdmx_chan_create(worker, conn, &p->chan);
	if (rc) {
		rdmx_conn_disconnect(conn);
		return rc;
	}
	rc = rdmx_chan_start(p->chan);
	if (!rc)
		rc = rdmx_rpc_ep_create(p->chan, server, &p->rpc);
	if (!rc)
		rc = rdmx_rpc_ep_set_closed_cb(p->rpc, peer_closed, p);
	return rc;
}

static void peer_close(struct peer *p)
{
	rdmx_rpc_ep_destroy(&p->rpc);
	rdmx_chan_destroy(&p->chan);
	p->closed = false;
}

/* ---- server ---- */

static void on_request(struct rdmx_conn *conn, void *ud)
{
	(void)ud;
	rdmx_conn_accept(conn, NULL, 0);
}

static void on_established(struct rdmx_conn *conn, void *cud, void *ud)
{
	struct server *s = ud;
	int i;
	(void)cud;
	for (i = 0; i < MAX_PEERS && s->peers[i].chan; i++)
		;
	if (i == MAX_PEERS || peer_open(&s->peers[i], s->n.worker, conn, s->rpc) != 0) {
		fprintf(stderr, "hello: cannot serve one more client\n");
		if (i < MAX_PEERS)
			peer_close(&s->peers[i]);
		return;
	}
	s->served++;
}

int net_serve(uint16_t port, struct rdmx_rpc_server *server, bool once, volatile bool *stop)
{
	struct server *s = calloc(1, sizeof(*s));
	struct rdmx_chan_worker_attr attr;
	int rc, i;
	if (!s)
		return RDMX_E_NOMEM;
	s->rpc = server;
	rdmx_chan_worker_attr_init(&attr);
	attr.request_cb = on_request;
	attr.established_cb = on_established;
	attr.user_data = s;
	rc = node_open(&s->n, &attr);
	if (!rc)
		rc = rdmx_ctx_listen(s->n.ctx, port);
	while (!rc && !*stop) {
		bool live = false;
		rdmx_chan_worker_wait(s->n.worker, 100);
		for (i = 0; i < MAX_PEERS; i++) {
			if (s->peers[i].closed)
				peer_close(&s->peers[i]);
			live |= s->peers[i].chan != NULL;
		}
		if (once && s->served && !live)
			break;
	}
	for (i = 0; i < MAX_PEERS; i++)
		if (s->peers[i].chan)
			peer_close(&s->peers[i]);
	node_close(&s->n);
	free(s);
	return rc;
}

/* ---- client ---- */

static void on_up(struct rdmx_conn *conn, void *cud, void *ud)
{
	(void)conn;
	(void)ud;
	((struct net_client *)cud)->established = true;
}

static void on_fail(struct rdmx_conn *conn, void *cud, void *ud)
{
	(void)conn;
	(void)ud;
	((struct net_client *)cud)->failed = true;
}

static int wait_until(struct net_client *c, bool *flag)
{
	int waited;
	for (waited = 0; !*flag; waited += 10) {
		if (c->failed || c->p.closed)
			return RDMX_E_CONN_REFUSED;
		if (waited > CONNECT_TIMEOUT_MS)
			return RDMX_E_TIMEDOUT;
		rdmx_chan_worker_wait(c->n.worker, 10);
	}
	return 0;
}

int net_connect(const char *host, uint16_t port, struct net_client **out)
{
	struct net_client *c = calloc(1, sizeof(*c));
	struct rdmx_chan_worker_attr attr;
	struct rdmx_addr *addr = NULL;
	bool ready = false;
	int rc;
	if (!c)
		return RDMX_E_NOMEM;
	rdmx_chan_worker_attr_init(&attr);
	attr.established_cb = on_up;
	attr.failure_cb = on_fail;
	rc = node_open(&c->n, &attr);
	if (!rc)
		rc = rdmx_addr_create(RDMX_ADDR_IPV4, host, port, &addr);
	if (!rc)
		rc = rdmx_ctx_connect_to_addr(c->n.ctx, addr, NULL, 0, c, &c->conn);
	rdmx_addr_destroy(&addr);
	if (!rc)
		rc = wait_until(c, &c->established);
	if (!rc)
		rc = peer_open(&c->p, c->n.worker, c->conn, NULL);
	while (!rc && !ready) {
		rc = wait_until(c, &c->established); /* checks failure, bounds the wait */
		ready = rdmx_chan_get_state(c->p.chan) == RDMX_CHAN_READY;
		if (!ready)
			rdmx_chan_worker_wait(c->n.worker, 10);
	}
	if (rc) {
		net_close(&c);
		return rc;
	}
	*out = c;
	return 0;
}

struct rdmx_rpc_ep *net_rpc(struct net_client *c)
{
	return c->p.rpc;
}

void net_close(struct net_client **cp)
{
	struct net_client *c = *cp;
	if (!c)
		return;
	if (c->p.chan)
		peer_close(&c->p);
	node_close(&c->n);
	free(c);
	*cp = NULL;
}

static volatile bool server_stop;

static void on_signal(int sig)
{
	(void)sig;
	server_stop = true;
}

int net_server_args(int argc, char **argv, const char *prog, uint16_t *port, bool *once)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf("usage: %s [-p PORT] [--once]\n"
			       "The plain cm flow it uses (no TLS) is unauthenticated and "
			       "unencrypted:\n"
			       "use it only on a trusted network.\n",
			       prog);
			return 1;
		}
		if (strcmp(argv[i], "-p") == 0 && i + 1 < argc)
			*port = (uint16_t)atoi(argv[++i]);
		else if (strcmp(argv[i], "--once") == 0)
			*once = true;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	return 0;
}

int net_server_run(const char *prog, struct rdmx_rpc_server *server, uint16_t port, bool once)
{
	int rc;

	fprintf(stderr,
	        "%s: warning: the plain cm flow is unauthenticated and unencrypted; use it only on "
	        "a trusted network\n",
	        prog);
	printf("%s: listening on port %u\n", prog, port);
	fflush(stdout);
	rc = net_serve(port, server, once, &server_stop);
	rdmx_rpc_server_destroy(&server);
	rdmx_codec_release_bindings(server);
	if (rc)
		fprintf(stderr, "%s: %s\n", prog, rdmx_strerror(rc));
	return rc;
}
