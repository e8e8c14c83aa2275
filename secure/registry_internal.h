/* Registry client internals: the URL that picks a backend, and the ops table
 * a backend fills (not installed). registry.c owns the client object, its
 * validation of arguments and the queue of watch events; a backend owns its
 * connections. */
#ifndef RDMX_SECURE_REGISTRY_INTERNAL_H
#define RDMX_SECURE_REGISTRY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <rdmx/registry.h>

#define RDMX__REG_URL_MAX_HOST 255u
#define RDMX__REG_URL_MAX_PREFIX 200u
#define RDMX__REG_ETCD_DEFAULT_PREFIX "/rdmx/registry/"
#define RDMX__REG_URL_MAX_USER 128u
#define RDMX__REG_URL_MAX_PASSWORD 256u

enum rdmx__reg_backend {
	RDMX__REG_BACKEND_RDMX = 1, /* rdmx-bootstrapd: "HOST:PORT", "rdmx://HOST:PORT" */
	RDMX__REG_BACKEND_ETCD = 2, /* "etcd://[USER@]HOST:PORT[,HOST:PORT...][/PREFIX]" */
};

struct rdmx__reg_url_endpoint {
	char host[RDMX__REG_URL_MAX_HOST + 1]; /* without brackets */
	uint16_t port;
};

struct rdmx__reg_url {
	enum rdmx__reg_backend backend;
	size_t n;
	struct rdmx__reg_url_endpoint ep[RDMX_REGISTRY_MAX_URL_ENDPOINTS];
	/* etcd: where records live, "/" at both ends ("/rdmx/registry/") */
	char prefix[RDMX__REG_URL_MAX_PREFIX + 2];
	/* etcd: the user (password from $RDMX_ETCD_PASSWORD), "" for none */
	char user[RDMX__REG_URL_MAX_USER + 1];
};

/* Parses a registry URL; RDMX_E_INVAL (and one log line naming it) when it is
 * not one. Only etcd takes more than one endpoint and a prefix. */
int rdmx__reg_url_parse(const char *url, struct rdmx__reg_url *out);

struct rdmx_registry_client;

/* What a backend does; `b` is its state. Arguments are already checked. */
struct rdmx__reg_ops {
	int (*join)(void *b, const char *service, const char *endpoint,
	            const struct rdmx_registry_kv *meta, size_t n_meta, uint32_t ttl_ms,
	            uint64_t *member_id, uint32_t *granted_ms);
	int (*heartbeat)(void *b, uint64_t member_id);
	int (*leave)(void *b, uint64_t member_id);
	int (*lookup)(void *b, const char *service, struct rdmx_registry_members **members);
	int (*watch)(void *b, const char *service);
	/* Waits up to timeout_ms for events, queued with rdmx__reg_client_enqueue;
	 * 0 once at least one was queued, RDMX_E_TIMEDOUT, or an error. */
	int (*wait_events)(void *b, struct rdmx_registry_client *c, int timeout_ms);
	void (*set_timeout)(void *b, int timeout_ms);
	const char *(*last_error)(const void *b);
	void (*destroy)(void *b);
};

/* Queues an event for next_event (takes it; the oldest is dropped when full). */
void rdmx__reg_client_enqueue(struct rdmx_registry_client *c, struct rdmx_registry_event *ev);
/* Events queued and not read yet. */
size_t rdmx__reg_client_pending(const struct rdmx_registry_client *c);

/* ---- registry_etcd.c ---- */

extern const struct rdmx__reg_ops rdmx__reg_etcd_ops;
/* Connects to nothing yet (requests pick a live endpoint); cfg NULL: plain
 * http. Errors: RDMX_E_NOMEM, TLS config errors. */
int rdmx__reg_etcd_create(const struct rdmx__reg_url *url, struct rdmx_tls_config *cfg,
                          int timeout_ms, void **b);

#endif
