/* rdmx cluster registry client: the built-in rdmx-bootstrapd, or etcd v3.
 *
 * Backends, picked by the address given to rdmx_registry_client_open:
 *   "HOST:PORT", "rdmx://HOST:PORT"    rdmx-bootstrapd (the default)
 *   "etcd://[USER@]HOST:PORT[,HOST:PORT...][/PREFIX]"
 *                                      an etcd v3 cluster through its JSON
 *                                      gateway (https with the config's client
 *                                      certificate; members under PREFIX,
 *                                      default /rdmx/registry/). A request
 *                                      moves on to the next listed member when
 *                                      one is gone or has no leader; a watch
 *                                      resumes where it stopped. USER: an
 *                                      etcd user (auth on), its password in
 *                                      $RDMX_ETCD_PASSWORD.
 * The calls below behave the same on both, with these etcd differences: the
 * member id is the etcd lease id; the lease is whole seconds (rounded up; etcd
 * enforces its own minimum); expires_in_ms in lookups is the lease granted;
 * the owner is the first DNS name of the certificate that joined, written by
 * that member (which certificate may write which service is etcd's RBAC, see
 * docs/guide-cluster.md); get_fd answers RDMX_E_NOT_SUPPORTED.
 *
 * Members join with a service name, an endpoint ("host:port" or any text
 * without spaces) and metadata (key/value strings), and hold a lease that
 * they renew by heartbeat; a member whose lease runs out is dropped and the
 * watchers are told. Everything travels over mutual TLS 1.3 (rdmx/tls.h):
 * the server knows each client by its certificate name, and its policy says
 * which names may register which services. Only the certificate that made a
 * member may renew it or make it leave.
 *
 * The client is blocking: each call sends one request and waits for its
 * answer (default 5 s, see set_timeout). Watch events that arrive meanwhile
 * are queued (up to RDMX_REGISTRY_MAX_QUEUED_EVENTS; past that the oldest
 * are dropped and counted) and read with next_event. One thread at a time.
 *
 * Wire: one message of secure/proto/registry.proto per TLS frame (registry
 * protocol version 2); see docs/SECURITY.md. */
#ifndef RDMX_REGISTRY_H
#define RDMX_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmx/tls.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RDMX_REGISTRY_MAX_SERVICE 128u  /* [A-Za-z0-9._-]+ */
#define RDMX_REGISTRY_MAX_ENDPOINT 256u /* printable ASCII, no spaces */
#define RDMX_REGISTRY_MAX_OWNER 253u
#define RDMX_REGISTRY_MAX_META 16u
#define RDMX_REGISTRY_MAX_META_KEY 64u    /* [A-Za-z0-9._-]+ */
#define RDMX_REGISTRY_MAX_META_VALUE 256u /* printable ASCII (spaces allowed) */
#define RDMX_REGISTRY_MAX_QUEUED_EVENTS 1024u
#define RDMX_REGISTRY_DEFAULT_TIMEOUT_MS 5000
#define RDMX_REGISTRY_PROTOCOL_VERSION 2u
#define RDMX_REGISTRY_MAX_URL_ENDPOINTS 16u /* etcd:// members in one address */

struct rdmx_registry_client;

struct rdmx_registry_kv {
	const char *key;
	const char *value;
};

struct rdmx_registry_member {
	uint64_t id;
	const char *service;
	const char *endpoint;
	const char *owner;      /* certificate name of the member that joined */
	uint32_t ttl_ms;        /* the lease granted */
	uint32_t expires_in_ms; /* lease left when the server answered */
	size_t n_meta;
	const struct rdmx_registry_kv *meta;
};

/* Result of lookup and list; free with rdmx_registry_members_free. */
struct rdmx_registry_members {
	size_t count;
	struct rdmx_registry_member *items;
};

enum rdmx_registry_event_type {
	RDMX_REGISTRY_JOINED = 1,
	RDMX_REGISTRY_LEFT = 2,    /* the member said leave */
	RDMX_REGISTRY_EXPIRED = 3, /* its lease ran out */
};

struct rdmx_registry_event {
	enum rdmx_registry_event_type type;
	struct rdmx_registry_member member;
};

/* Opens the registry at `url` (see the top of this file). rdmx://: connects
 * now, as rdmx_registry_client_connect_timeout. etcd://: checks the address
 * and the TLS files now and connects at the first request (cfg NULL: plain
 * http, for tests); timeout_ms bounds each request across all the listed
 * members (0: RDMX_REGISTRY_DEFAULT_TIMEOUT_MS). Errors: RDMX_E_INVAL (not a
 * registry address), TLS config errors, those of rdmx_tls_connect. */
int rdmx_registry_client_open(const char *url, struct rdmx_tls_config *cfg, int timeout_ms,
                              struct rdmx_registry_client **client);
/* Connects over mutual TLS (the config's allow-list names the server's
 * certificate). Errors: those of rdmx_tls_connect. */
int rdmx_registry_client_connect(const char *host, uint16_t port, struct rdmx_tls_config *cfg,
                                 struct rdmx_registry_client **client);
/* The same, the connect (TCP + TLS handshake) bounded by timeout_ms (0: the
 * config's handshake timeout), which also becomes the per-request timeout
 * (0: RDMX_REGISTRY_DEFAULT_TIMEOUT_MS). RDMX_E_TIMEDOUT against a server
 * that accepts and never answers. */
int rdmx_registry_client_connect_timeout(const char *host, uint16_t port,
                                         struct rdmx_tls_config *cfg, int timeout_ms,
                                         struct rdmx_registry_client **client);
/* NULL / *client == NULL is a no-op. Members joined through this client stay
 * until they leave or their lease runs out. */
int rdmx_registry_client_destroy(struct rdmx_registry_client **client);
/* Per-request wait, 1 ms .. 10 min. */
int rdmx_registry_client_set_timeout(struct rdmx_registry_client *client, int timeout_ms);
/* The server's text for the last refused request ("" if none). */
const char *rdmx_registry_client_last_error(const struct rdmx_registry_client *client);
/* The TLS socket, to wait for watch events in a poll loop. */
int rdmx_registry_client_get_fd(const struct rdmx_registry_client *client, int *fd);

/* Joins `service` at `endpoint` with a lease of ttl_ms (the server clamps it
 * into its bounds; *granted_ms tells, may be NULL). Errors: RDMX_E_INVAL
 * (names or sizes out of bounds), RDMX_E_AUTH (policy refuses this
 * certificate for this service), RDMX_E_FULL (registry full), transport
 * errors (RDMX_E_TIMEDOUT, RDMX_E_DISCONNECTED, ...). */
int rdmx_registry_client_join(struct rdmx_registry_client *client, const char *service,
                              const char *endpoint, const struct rdmx_registry_kv *meta,
                              size_t n_meta, uint32_t ttl_ms, uint64_t *member_id,
                              uint32_t *granted_ms);
/* Renews the lease. RDMX_E_NOT_FOUND once it has expired (join again);
 * RDMX_E_AUTH for a member of another certificate. */
int rdmx_registry_client_heartbeat(struct rdmx_registry_client *client, uint64_t member_id);
int rdmx_registry_client_leave(struct rdmx_registry_client *client, uint64_t member_id);

/* Live members of one service / of all services. */
int rdmx_registry_client_lookup(struct rdmx_registry_client *client, const char *service,
                                struct rdmx_registry_members **members);
int rdmx_registry_client_list(struct rdmx_registry_client *client,
                              struct rdmx_registry_members **members);
int rdmx_registry_members_free(struct rdmx_registry_members **members);

/* Subscribes to joins, leaves and expiries of `service` (NULL: all). */
int rdmx_registry_client_watch(struct rdmx_registry_client *client, const char *service);
/* The next event, waiting up to timeout_ms (0: only what is there).
 * RDMX_E_TIMEDOUT when none came. */
int rdmx_registry_client_next_event(struct rdmx_registry_client *client, int timeout_ms,
                                    struct rdmx_registry_event **event);
int rdmx_registry_event_free(struct rdmx_registry_event **event);
/* Events dropped because the queue was full. */
uint64_t rdmx_registry_client_dropped_events(const struct rdmx_registry_client *client);

/* ---- keeper: one membership held from a thread of its own ----
 *
 * For servers that register themselves: the keeper joins, renews the lease
 * by heartbeat (every third of the granted lease), joins again when the
 * lease was lost, and reconnects after a lost connection, all on its own
 * thread with its own registry connection, so a slow, frozen or gone
 * registry never blocks the caller's loop. Each connect (TCP + TLS) and
 * request is bounded by timeout_ms; failures are retried after an
 * exponential back-off from backoff_min_ms to backoff_max_ms, reset by the
 * next success. `cfg` must be frozen-safe to share (rdmx/tls.h: a config
 * serves connections on several threads) and outlive the keeper. */

#define RDMX_REGISTRY_KEEPER_DEFAULT_TIMEOUT_MS 2000

struct rdmx_registry_keeper;

/* Told, from the keeper's thread (or from start for the first join), when
 * the membership changes: member_id != 0 and status 0 once (re)joined,
 * member_id 0 and the error when it was lost or a retry failed (once per
 * outage, not per retry). Must not call rdmx_registry_keeper_stop. */
typedef void (*rdmx_registry_keeper_cb)(struct rdmx_registry_keeper *k, uint64_t member_id,
                                        int status, void *arg);

struct rdmx_registry_keeper_opts {
	const char *url;  /* the registry, as rdmx_registry_client_open; or: */
	const char *host; /* rdmx-bootstrapd at host:port (when url is NULL) */
	uint16_t port;
	struct rdmx_tls_config *cfg;
	const char *service, *endpoint; /* as rdmx_registry_client_join */
	const struct rdmx_registry_kv *meta;
	size_t n_meta;
	uint32_t ttl_ms;            /* lease asked for (0: the server's default) */
	int timeout_ms;             /* each connect / request; 0: the default */
	uint32_t backoff_min_ms;    /* 0: 250 */
	uint32_t backoff_max_ms;    /* 0: 10000 */
	rdmx_registry_keeper_cb cb; /* may be NULL */
	void *arg;
};

void rdmx_registry_keeper_opts_init(struct rdmx_registry_keeper_opts *opts);
/* Copies the options, joins once from the calling thread (its error is
 * returned: RDMX_E_INVAL, RDMX_E_AUTH, transport errors, so that a program
 * can fail at start-up), then keeps the membership from a new thread. */
int rdmx_registry_keeper_start(const struct rdmx_registry_keeper_opts *opts,
                               struct rdmx_registry_keeper **keeper);
/* The current member id, 0 while not registered. Any thread. */
uint64_t rdmx_registry_keeper_get_member(struct rdmx_registry_keeper *keeper);
/* Failed connects, joins and heartbeats so far. Any thread. */
uint64_t rdmx_registry_keeper_get_failures(struct rdmx_registry_keeper *keeper);
/* Stops the thread (waiting at most for its request in flight, bounded by
 * timeout_ms), leaves the registry when registered, and frees the keeper.
 * NULL / *keeper == NULL is a no-op. */
int rdmx_registry_keeper_stop(struct rdmx_registry_keeper **keeper);

/* ---- balancer: the live members of a service, one picked per call ----
 *
 * Client side of discovery: looks the service up, watches it, and keeps a
 * connection (made by the caller's connect callback, on first use) to each
 * live member. pick chooses one per call: round robin, or the one with fewer
 * calls in flight of two chosen at random. A member whose connect or call
 * failed at the transport is closed and skipped for an exponential back-off
 * with jitter (backoff_min_ms doubling to backoff_max_ms, reset by a
 * success); left or expired members are dropped when refresh reads the
 * watch events (pick does it first). may_retry says whether a failed call
 * may go again: only for a transport failure or UNAVAILABLE, when the
 * request never reached the server (e.g. its connect failed) or the method
 * is idempotent, while the retry budget lasts (retries at most
 * retry_budget_min + retry_budget_percent % of the calls so far). One thread
 * at a time; the callbacks run on it. */

enum rdmx_registry_pick {
	RDMX_REGISTRY_PICK_ROUND_ROBIN = 0,
	RDMX_REGISTRY_PICK_TWO_CHOICES = 1, /* least in flight of two random members */
};

/* Makes *conn for member m (0), or an error (the member backs off). */
typedef int (*rdmx_registry_connect_cb)(const struct rdmx_registry_member *m, void *arg,
                                        void **conn);
typedef void (*rdmx_registry_disconnect_cb)(void *conn, void *arg);
/* The RPC endpoint of a connection made by connect (for
 * rdmx_registry_balancer_call); NULL when it has none any more. */
typedef struct rdmx_rpc_ep *(*rdmx_registry_ep_cb)(void *conn, void *arg);

struct rdmx_registry_balancer;

struct rdmx_registry_balancer_opts {
	const char *url; /* the registry, as rdmx_registry_client_open */
	struct rdmx_tls_config *cfg;
	const char *service;
	int timeout_ms; /* each registry request; 0: the default */
	enum rdmx_registry_pick pick;
	rdmx_registry_connect_cb connect; /* required */
	rdmx_registry_disconnect_cb disconnect;
	rdmx_registry_ep_cb ep; /* required by rdmx_registry_balancer_call */
	void *arg;
	uint32_t backoff_min_ms;       /* 0: 100 */
	uint32_t backoff_max_ms;       /* 0: 5000 */
	uint32_t retry_budget_percent; /* 0: 20 */
	uint32_t retry_budget_min;     /* 0: 10 */
};

void rdmx_registry_balancer_opts_init(struct rdmx_registry_balancer_opts *opts);
/* Opens the registry, looks the service up and watches it. Errors: those of
 * rdmx_registry_client_open, _lookup and _watch; RDMX_E_INVAL. */
int rdmx_registry_balancer_create(const struct rdmx_registry_balancer_opts *opts,
                                  struct rdmx_registry_balancer **balancer);
/* Disconnects every member. NULL / *balancer == NULL is a no-op. */
int rdmx_registry_balancer_destroy(struct rdmx_registry_balancer **balancer);
/* Applies the watch events that came (never waits). */
int rdmx_registry_balancer_refresh(struct rdmx_registry_balancer *b);
/* A member for the next call and its connection (connected now when
 * needed; members that fail to connect back off and the next is tried).
 * *member identifies it for done. RDMX_E_NOT_FOUND: no member registered;
 * RDMX_E_AGAIN: every member is backing off (*wait_ms, may be NULL, says
 * how long until the first may be tried). */
int rdmx_registry_balancer_pick(struct rdmx_registry_balancer *b, void **conn, uint64_t *member,
                                uint32_t *wait_ms);
/* The call on member ended: status 0 (or an RPC status > 0: the member
 * answered), or a transport error < 0 (the connection is closed, the member
 * backs off). */
int rdmx_registry_balancer_done(struct rdmx_registry_balancer *b, uint64_t member, int status);
/* 1 when a call that failed with `status` (< 0, or RDMX_RPC_UNAVAILABLE 14)
 * may be retried (and counts the retry), else 0. */
int rdmx_registry_balancer_may_retry(struct rdmx_registry_balancer *b, int status, int reached,
                                     int idempotent);
/* Members known (live or backing off). */
size_t rdmx_registry_balancer_count(const struct rdmx_registry_balancer *b);
/* Retries granted by may_retry so far. */
uint64_t rdmx_registry_balancer_get_retries(const struct rdmx_registry_balancer *b);

/* ---- a blocking call to the service (a channel to a service) ----
 *
 * rdmx_rpc_call (rdmx/rpc.h) on a member picked by the balancer, through
 * opts.ep, with failover: an attempt that ends UNAVAILABLE at the transport
 * (the connection was lost: the member is closed and backs off) or could
 * not start (the endpoint was closed), or whose member could not be
 * connected, goes again on the next pick when may_retry allows it: always
 * when the request never reached the server (rdmx_rpc_result.reached),
 * only for an idempotent method (the IDL's idempotency_level; rdmx-gen's
 * S_M_IDEMPOTENT) when it may have; never past the retry budget nor the
 * call's deadline (opts->timeout_us covers every attempt and the waits for
 * members backing off: each attempt gets what is left). An UNAVAILABLE the
 * server itself answered is a reply, not retried. When every member backs
 * off, the call waits (bounded by the deadline) for the first to be tried
 * again. Returns 0 with *reply holding the last attempt's outcome (a
 * status; no member registered or reachable is UNAVAILABLE with a message
 * naming the service, reached false), or a negative RDMX_E_* code when the
 * call cannot be made at all: RDMX_E_INVAL (no opts.ep, bad arguments),
 * RDMX_E_TOO_BIG, RDMX_E_NOMEM. Not from an RPC callback. */
struct rdmx_rpc_payload;
struct rdmx_rpc_call_opts;
struct rdmx_rpc_reply;
struct rdmx_rpc_secure_opts;
int rdmx_registry_balancer_call(struct rdmx_registry_balancer *b, uint32_t method_id,
                                const struct rdmx_rpc_payload *req,
                                const struct rdmx_rpc_call_opts *opts, bool idempotent,
                                struct rdmx_rpc_reply *reply);
/* A balancer whose members are connected with rdmx_rpc_secure_connect
 * (rdmx/rpc_secure.h): the member's registered endpoint (HOST:PORT or
 * [V6]:PORT), opts->cfg (also the registry's: the members' certificates are
 * checked against its allow-list) and a copy of `secure` (NULL: defaults;
 * the strings and device it points to must outlive the balancer), each
 * connection with its own progress engine. opts' connect, disconnect, ep
 * and arg are ignored. This is what generated stubs' S_connect_service
 * uses. Errors: as rdmx_registry_balancer_create; RDMX_E_INVAL (no cfg). */
int rdmx_registry_balancer_create_secure(const struct rdmx_registry_balancer_opts *opts,
                                         const struct rdmx_rpc_secure_opts *secure,
                                         struct rdmx_registry_balancer **balancer);

#ifdef __cplusplus
}
#endif
#endif
