/* rdmx-call --registry --service: a member picked by the library's balancer */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rdmx/pe.h>
#include <rdmx/registry.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "cli.h"
#include "service.h"

static int member_connect(const struct rdmx_registry_member *m, void *arg, void **conn)
{
	const struct callopts *o = ((struct calltarget *)arg)->o;
	struct rpcnet_tls tls = o->tls;
	struct rpcnet_client *c = NULL;
	char host[256], err[512];
	uint16_t port;
	int rc;

	if (rdmx_cli_split_addr(m->endpoint, host, sizeof(host), &port) || port == 0)
		return RDMX_E_INVAL;
	if (!tls.peer)
		tls.peer = m->owner; /* the certificate that registered it */
	rc = rpcnet_client_connect(host, port, o->secure ? &tls : NULL, "rdmx-call", o->timeout_ms,
	                           &c, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "rdmx-call: %s: %s\n", m->endpoint, err);
		return rc;
	}
	if (o->verbose)
		fprintf(stderr, "rdmx-call: %s member %s (%s) on device %s\n", o->service,
		        m->endpoint, m->owner, rpcnet_client_device(c));
	*conn = c;
	return 0;
}

/* the device is copied: the connection may be gone when the call returns */
static struct rdmx_rpc_ep *member_ep(void *conn, void *arg)
{
	struct calltarget *t = arg;

	snprintf(t->device, sizeof(t->device), "%s", rpcnet_client_device(conn));
	return rpcnet_client_rpc(conn);
}

static void member_disconnect(void *conn, void *arg)
{
	struct rpcnet_client *c = conn;

	(void)arg;
	rpcnet_client_close(&c);
}

/* t->b on o's registry and service, its TLS config in t->cfg (any server
 * name: the registry's and each member's own are checked apart). Returns
 * 0 or the exit status (said). */
static int balancer_create(struct calltarget *t, const struct callopts *o)
{
	struct rdmx_registry_balancer_opts bo;
	struct rpcnet_tls reg_tls = o->tls;
	char err[512];
	int rc;

	reg_tls.peer = "*";
	t->cfg = rpcnet_tls_config(&reg_tls, err, sizeof(err));
	if (!t->cfg) {
		fprintf(stderr, "rdmx-call: %s\n", err);
		return 1;
	}
	rdmx_registry_balancer_opts_init(&bo);
	bo.url = o->registry;
	bo.cfg = t->cfg;
	bo.service = o->service;
	bo.timeout_ms = o->timeout_ms;
	bo.pick = RDMX_REGISTRY_PICK_TWO_CHOICES;
	bo.connect = member_connect;
	bo.disconnect = member_disconnect;
	bo.ep = member_ep;
	bo.arg = t;
	rc = rdmx_registry_balancer_create(&bo, &t->b);
	if (rc) {
		fprintf(stderr, "rdmx-call: registry %s: %s\n", o->registry, rdmx_strerror(rc));
		return 1;
	}
	return 0;
}

/* Picks a member, skipping those that cannot be reached (their requests
 * never went out: always retried), within --timeout-ms; the picked member
 * is given back at once: each call picks its own. */
static int first_member(struct rdmx_registry_balancer *b, const struct callopts *o)
{
	uint64_t deadline = rdmx_pe_now_ns() / 1000000u + (uint64_t)o->timeout_ms, member = 0;
	void *conn = NULL;
	int rc;

	for (;;) {
		uint32_t wait_ms = 0;
		struct timespec ts;

		rc = rdmx_registry_balancer_pick(b, &conn, &member, &wait_ms);
		if (rc != RDMX_E_AGAIN || rdmx_pe_now_ns() / 1000000u + wait_ms >= deadline ||
		    !rdmx_registry_balancer_may_retry(b, RDMX_E_CONN_REFUSED, 0, 0))
			break;
		/* every member is backing off: wait for the first (bounded) */
		ts.tv_sec = wait_ms / 1000;
		ts.tv_nsec = (long)(wait_ms % 1000) * 1000000L;
		nanosleep(&ts, NULL);
	}
	if (rc) {
		fprintf(stderr, "rdmx-call: no member of %s %s: %s\n", o->service,
		        rc == RDMX_E_NOT_FOUND ? "is registered" : "can be reached",
		        rdmx_strerror(rc));
		return 1;
	}
	rdmx_registry_balancer_done(b, member, 0);
	return 0;
}

int calltarget_open_service(struct calltarget *t, const struct callopts *o)
{
	int ret;

	if (!o->secure) {
		fprintf(stderr, "rdmx-call: --registry needs --ca, --cert and --key\n");
		return 2;
	}
	t->o = o;
	ret = balancer_create(t, o);
	return ret ? ret : first_member(t->b, o);
}
