/* Registry client: blocking requests over one mutual-TLS connection to
 * rdmx-bootstrapd, watch events queued in a bounded ring while a request
 * waits; or the same calls handed to another backend (etcd) chosen by the
 * URL given to rdmx_registry_client_open. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry_internal.h"
#include "registry_proto.h"
#include "tls_internal.h"
#include "common/clock.h"

struct rdmx_registry_client {
	/* another backend: its ops and state; NULL: rdmx-bootstrapd over conn */
	const struct rdmx__reg_ops *ops;
	void *backend;

	struct rdmx_tls_conn *conn;
	int timeout_ms;
	uint64_t next_id;
	int broken; /* sticky transport or protocol failure */
	char last_error[512];

	struct rdmx_registry_event *queue[RDMX_REGISTRY_MAX_QUEUED_EVENTS];
	size_t q_head;
	size_t q_len;
	uint64_t dropped;
};

static int left_ms(int64_t deadline)
{
	int64_t left = deadline - (int64_t)rdmx__now_ms();

	return left < 0 ? 0 : (int)left;
}

int rdmx_registry_client_connect(const char *host, uint16_t port, struct rdmx_tls_config *cfg,
                                 struct rdmx_registry_client **client)
{
	return rdmx_registry_client_connect_timeout(host, port, cfg, 0, client);
}

int rdmx_registry_client_connect_timeout(const char *host, uint16_t port,
                                         struct rdmx_tls_config *cfg, int timeout_ms,
                                         struct rdmx_registry_client **client)
{
	struct rdmx_registry_client *c;
	int ret;

	if (!host || !cfg || !client || timeout_ms < 0 || timeout_ms > 600000)
		return RDMX_E_INVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return RDMX_E_NOMEM;
	ret = rdmx_tls_connect_timeout(cfg, host, port, timeout_ms, &c->conn);
	if (ret) {
		free(c);
		return ret;
	}
	c->timeout_ms = timeout_ms ? timeout_ms : RDMX_REGISTRY_DEFAULT_TIMEOUT_MS;
	c->next_id = 1;
	*client = c;
	return RDMX_OK;
}

int rdmx_registry_client_open(const char *url, struct rdmx_tls_config *cfg, int timeout_ms,
                              struct rdmx_registry_client **client)
{
	struct rdmx_registry_client *c;
	struct rdmx__reg_url u;
	int ret;

	if (!url || !client || timeout_ms < 0 || timeout_ms > 600000)
		return RDMX_E_INVAL;
	ret = rdmx__reg_url_parse(url, &u);
	if (ret)
		return ret;
	if (u.backend == RDMX__REG_BACKEND_RDMX)
		return rdmx_registry_client_connect_timeout(u.ep[0].host, u.ep[0].port, cfg,
		                                            timeout_ms, client);
	c = calloc(1, sizeof(*c));
	if (!c)
		return RDMX_E_NOMEM;
	c->timeout_ms = timeout_ms ? timeout_ms : RDMX_REGISTRY_DEFAULT_TIMEOUT_MS;
	c->ops = &rdmx__reg_etcd_ops;
	ret = rdmx__reg_etcd_create(&u, cfg, c->timeout_ms, &c->backend);
	if (ret) {
		free(c);
		return ret;
	}
	*client = c;
	return RDMX_OK;
}

int rdmx_registry_client_destroy(struct rdmx_registry_client **client)
{
	struct rdmx_registry_client *c;

	if (!client || !*client)
		return RDMX_OK;
	c = *client;
	while (c->q_len) {
		rdmx_registry_event_free(&c->queue[c->q_head]);
		c->q_head = (c->q_head + 1) % RDMX_REGISTRY_MAX_QUEUED_EVENTS;
		c->q_len--;
	}
	if (c->ops)
		c->ops->destroy(c->backend);
	rdmx_tls_conn_destroy(&c->conn);
	free(c);
	*client = NULL;
	return RDMX_OK;
}

int rdmx_registry_client_set_timeout(struct rdmx_registry_client *client, int timeout_ms)
{
	if (!client || timeout_ms < 1 || timeout_ms > 600000)
		return RDMX_E_INVAL;
	client->timeout_ms = timeout_ms;
	if (client->ops)
		client->ops->set_timeout(client->backend, timeout_ms);
	return RDMX_OK;
}

const char *rdmx_registry_client_last_error(const struct rdmx_registry_client *client)
{
	if (client && client->ops)
		return client->ops->last_error(client->backend);
	return client ? client->last_error : "";
}

int rdmx_registry_client_get_fd(const struct rdmx_registry_client *client, int *fd)
{
	if (!client || !fd)
		return RDMX_E_INVAL;
	if (client->ops)
		return RDMX_E_NOT_SUPPORTED; /* the backend's sockets come and go */
	return rdmx_tls_conn_get_fd(client->conn, fd);
}

uint64_t rdmx_registry_client_dropped_events(const struct rdmx_registry_client *client)
{
	return client ? client->dropped : 0;
}

size_t rdmx__reg_client_pending(const struct rdmx_registry_client *c)
{
	return c->q_len;
}

void rdmx__reg_client_enqueue(struct rdmx_registry_client *c, struct rdmx_registry_event *ev)
{
	if (c->q_len == RDMX_REGISTRY_MAX_QUEUED_EVENTS) {
		rdmx_registry_event_free(&c->queue[c->q_head]);
		c->q_head = (c->q_head + 1) % RDMX_REGISTRY_MAX_QUEUED_EVENTS;
		c->q_len--;
		if (c->dropped++ == 0)
			RDMX_SEC_WARN("registry: watch event queue full (%u): dropping the oldest",
			              RDMX_REGISTRY_MAX_QUEUED_EVENTS);
	}
	c->queue[(c->q_head + c->q_len) % RDMX_REGISTRY_MAX_QUEUED_EVENTS] = ev;
	c->q_len++;
}

static int broken(struct rdmx_registry_client *c, int ret)
{
	c->broken = ret;
	return ret;
}

/* Receives until a response (returned in *r: 0) or, with stop_on_event, an
 * event (queued: 1). */
static int receive(struct rdmx_registry_client *c, int64_t deadline, struct rdmx__reg_reply *r,
                   int stop_on_event)
{
	const void *frame;
	size_t len;
	char why[200];
	int ret;

	for (;;) {
		ret = rdmx_tls_conn_recv_wait(c->conn, &frame, &len, left_ms(deadline));
		if (ret == RDMX_E_TIMEDOUT)
			return ret;
		if (ret)
			return broken(c, ret);
		ret = rdmx__reg_decode_reply(frame, len, r, why, sizeof(why));
		if (ret) {
			RDMX_SEC_ERR("registry: bad message from the server, connection closed: %s",
			             why);
			return broken(c, ret);
		}
		if (!r->is_event)
			return RDMX_OK;
		rdmx__reg_client_enqueue(c, r->event);
		r->event = NULL;
		rdmx__reg_reply_fini(r);
		if (stop_on_event)
			return 1;
	}
}

/* Sends `req` and waits for its response (in *r, to fini). Returns the
 * transport result; the server's status is r->status. */
static int call(struct rdmx_registry_client *c, struct rdmx__reg_request *req,
                struct rdmx__reg_reply *r)
{
	int64_t deadline = (int64_t)rdmx__now_ms() + c->timeout_ms;
	void *buf;
	size_t len;
	int ret;

	if (c->broken)
		return c->broken;
	c->last_error[0] = '\0';
	req->id = c->next_id++;
	ret = rdmx__reg_encode_request(req, &buf, &len);
	if (!ret) {
		ret = rdmx_tls_conn_send_wait(c->conn, buf, len, c->timeout_ms);
		free(buf);
	}
	if (ret)
		return ret == RDMX_E_TOO_BIG || ret == RDMX_E_INVAL ? ret : broken(c, ret);
	ret = receive(c, deadline, r, 0);
	if (ret == RDMX_E_TIMEDOUT) {
		/* a late answer would be taken for the next one's */
		RDMX_SEC_WARN("registry: no answer to %s within %d ms, connection abandoned",
		              rdmx__reg_op_name(req->op), c->timeout_ms);
		return broken(c, ret);
	}
	if (ret)
		return ret;
	if (r->id != req->id) {
		RDMX_SEC_ERR("registry: answer %llu for request %llu, connection closed",
		             (unsigned long long)r->id, (unsigned long long)req->id);
		rdmx__reg_reply_fini(r);
		return broken(c, RDMX_E_PROTOCOL);
	}
	if (r->status && r->error)
		snprintf(c->last_error, sizeof(c->last_error), "%s", r->error);
	return RDMX_OK;
}

int rdmx_registry_client_join(struct rdmx_registry_client *client, const char *service,
                              const char *endpoint, const struct rdmx_registry_kv *meta,
                              size_t n_meta, uint32_t ttl_ms, uint64_t *member_id,
                              uint32_t *granted_ms)
{
	struct rdmx__reg_request req = {.op = RDMX__REG_JOIN, .ttl_ms = ttl_ms};
	struct rdmx__reg_reply r = {0};
	int ret;

	if (!client || !rdmx__reg_valid_service(service) || !rdmx__reg_valid_endpoint(endpoint) ||
	    n_meta > RDMX_REGISTRY_MAX_META || (n_meta && !meta) || !member_id)
		return RDMX_E_INVAL;
	for (size_t i = 0; i < n_meta; i++)
		if (!rdmx__reg_valid_meta_key(meta[i].key) ||
		    !rdmx__reg_valid_meta_value(meta[i].value))
			return RDMX_E_INVAL;
	if (client->ops)
		return client->ops->join(client->backend, service, endpoint, meta, n_meta, ttl_ms,
		                         member_id, granted_ms);
	/* the request only borrows the caller's strings */
	req.service = (char *)service;
	req.endpoint = (char *)endpoint;
	req.meta = (struct rdmx_registry_kv *)meta;
	req.n_meta = n_meta;
	ret = call(client, &req, &r);
	if (ret)
		return ret;
	ret = r.status;
	if (!ret && !r.member)
		ret = broken(client, RDMX_E_PROTOCOL);
	if (!ret) {
		*member_id = r.member;
		if (granted_ms)
			*granted_ms = r.ttl_ms;
	}
	rdmx__reg_reply_fini(&r);
	return ret;
}

static int simple(struct rdmx_registry_client *client, enum rdmx__reg_op op, uint64_t member,
                  const char *service)
{
	struct rdmx__reg_request req = {.op = op, .member = member, .service = (char *)service};
	struct rdmx__reg_reply r = {0};
	int ret = call(client, &req, &r);

	if (ret)
		return ret;
	ret = r.status;
	rdmx__reg_reply_fini(&r);
	return ret;
}

int rdmx_registry_client_heartbeat(struct rdmx_registry_client *client, uint64_t member_id)
{
	if (!client || !member_id)
		return RDMX_E_INVAL;
	if (client->ops)
		return client->ops->heartbeat(client->backend, member_id);
	return simple(client, RDMX__REG_HEARTBEAT, member_id, NULL);
}

int rdmx_registry_client_leave(struct rdmx_registry_client *client, uint64_t member_id)
{
	if (!client || !member_id)
		return RDMX_E_INVAL;
	if (client->ops)
		return client->ops->leave(client->backend, member_id);
	return simple(client, RDMX__REG_LEAVE, member_id, NULL);
}

int rdmx_registry_client_watch(struct rdmx_registry_client *client, const char *service)
{
	if (!client || (service && !rdmx__reg_valid_service(service)))
		return RDMX_E_INVAL;
	if (client->ops)
		return client->ops->watch(client->backend, service);
	return simple(client, RDMX__REG_WATCH, 0, service);
}

static int members_call(struct rdmx_registry_client *client, enum rdmx__reg_op op,
                        const char *service, struct rdmx_registry_members **members)
{
	struct rdmx__reg_request req = {.op = op, .service = (char *)service};
	struct rdmx__reg_reply r = {0};
	int ret = call(client, &req, &r);

	if (ret)
		return ret;
	ret = r.status;
	if (!ret && !r.members)
		ret = broken(client, RDMX_E_PROTOCOL);
	if (!ret) {
		*members = r.members;
		r.members = NULL;
	}
	rdmx__reg_reply_fini(&r);
	return ret;
}

int rdmx_registry_client_lookup(struct rdmx_registry_client *client, const char *service,
                                struct rdmx_registry_members **members)
{
	if (!client || !rdmx__reg_valid_service(service) || !members)
		return RDMX_E_INVAL;
	if (client->ops)
		return client->ops->lookup(client->backend, service, members);
	return members_call(client, RDMX__REG_LOOKUP, service, members);
}

int rdmx_registry_client_list(struct rdmx_registry_client *client,
                              struct rdmx_registry_members **members)
{
	if (!client || !members)
		return RDMX_E_INVAL;
	if (client->ops)
		return client->ops->lookup(client->backend, NULL, members);
	return members_call(client, RDMX__REG_LIST, NULL, members);
}

int rdmx_registry_client_next_event(struct rdmx_registry_client *client, int timeout_ms,
                                    struct rdmx_registry_event **event)
{
	struct rdmx__reg_reply r = {0};
	int ret;

	if (!client || !event || timeout_ms < 0)
		return RDMX_E_INVAL;
	if (!client->q_len && client->ops) {
		ret = client->ops->wait_events(client->backend, client, timeout_ms);
		if (ret)
			return ret;
	}
	if (!client->q_len) {
		if (client->broken)
			return client->broken;
		ret = receive(client, (int64_t)rdmx__now_ms() + timeout_ms, &r, 1);
		if (ret < 0)
			return ret;
		if (ret == 1)
			return rdmx_registry_client_next_event(client, 0, event);
		/* a response nobody asked for */
		RDMX_SEC_ERR("registry: unexpected answer %llu from the server, connection closed",
		             (unsigned long long)r.id);
		rdmx__reg_reply_fini(&r);
		return broken(client, RDMX_E_PROTOCOL);
	}
	*event = client->queue[client->q_head];
	client->queue[client->q_head] = NULL;
	client->q_head = (client->q_head + 1) % RDMX_REGISTRY_MAX_QUEUED_EVENTS;
	client->q_len--;
	return RDMX_OK;
}
