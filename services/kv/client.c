/* rdmx-kv client commands: find the kv server through rdmx-bootstrapd (or
 * take --server), connect over the mutual-TLS bootstrap, call, print.
 *
 *   rdmx-kv [options] put KEY VALUE | put KEY --file PATH|-
 *   rdmx-kv [options] get KEY [--out PATH]
 *   rdmx-kv [options] del KEY
 *   rdmx-kv [options] scan PREFIX [--limit N] [--keys]
 *   rdmx-kv [options] session [FILE|-]      a script over one connection
 *
 * Exit status: 0 done; 1 failure or NOT_FOUND (reason on stderr); 2 usage;
 * session: 0 only when every call succeeded and every expectation held. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdmx/channel.h>
#include <rdmx/dev.h>
#include <rdmx/registry.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "cli.h"
#include "get.h"
#include "kv.h"
#include "kv.rdmx.h"
#include "pool.h"
#include "progress.h"
#include "common/clock.h"

struct copts {
	const char *registry, *registry_name, *server, *server_name, *service;
	struct kv_tls tls;
	int timeout_ms;
	bool time, verbose, quiet, keys;
	const char *file, *out; /* put --file, get --out */
	uint32_t limit;         /* scan --limit */
};

void kv_usage(FILE *f)
{
	fprintf(f,
	        "usage: rdmx-kv [options] put KEY VALUE | put KEY --file PATH|-\n"
	        "       rdmx-kv [options] get KEY [--out PATH]\n"
	        "       rdmx-kv [options] del KEY\n"
	        "       rdmx-kv [options] scan PREFIX [--limit N] [--keys]\n"
	        "       rdmx-kv [options] session [FILE|-]\n"
	        "       rdmx-kv serve [serve options]\n"
	        "client options:\n"
	        "      --registry ADDRESS      where the servers are found ($RDMX_REGISTRY):\n"
	        "                              HOST:PORT or rdmx://HOST:PORT (rdmx-bootstrapd),\n"
	        "                              etcd://HOST:PORT[,HOST:PORT...][/PREFIX] (etcd)\n"
	        "      --registry-name PATTERN the name its certificate must carry (default '*')\n"
	        "      --server HOST:PORT      the kv server's bootstrap endpoint (skips the "
	        "registry)\n"
	        "      --server-name PATTERN   with --server: its certificate name (default '*')\n"
	        "      --service NAME          the registered service (default kv)\n"
	        "      --ca FILE               CA certificate (PEM, $RDMX_CA)\n"
	        "      --cert FILE             this node's certificate (PEM, $RDMX_CERT)\n"
	        "      --key FILE              its private key (PEM, $RDMX_KEY)\n"
	        "      --crl FILE              certificate revocation list (PEM)\n"
	        "      --allow-insecure-key    accept a private key file group or others can "
	        "read\n"
	        "  -d, --device NAME           the device ($RDMX_DEVICE; default: first verbs "
	        "device, else tcp)\n"
	        "      --timeout-ms N          connection and call deadline (default 30000)\n"
	        "      --time                  each call's latency on stderr\n"
	        "      --file PATH|-           put: the value from a file (- for stdin)\n"
	        "      --out PATH              get: the value to a file\n"
	        "      --limit N               scan: at most N keys per page (1..1000)\n"
	        "      --keys                  scan: keys only\n"
	        "  -q, --quiet                 no progress meter\n"
	        "  -v, --verbose               say which server is used\n"
	        "serve options:\n"
	        "      --listen HOST:PORT      the bootstrap endpoint to listen on (required)\n"
	        "      --advertise HOST:PORT   the endpoint to register (default: the bound one)\n"
	        "      --allow PATTERN         client certificate names accepted (repeatable; "
	        "default '*')\n"
	        "      --ttl-ms N              registration lease (default 10000)\n"
	        "      --max-bytes SIZE        the store's limit, e.g. 1G (default 1G)\n"
	        "      --data DIR              keep the data in LMDB in DIR (default: in memory)\n"
	        "      --data-max-bytes SIZE   with --data: the LMDB map size (default 1G)\n"
	        "      --metrics HOST:PORT     Prometheus metrics at http://HOST:PORT/metrics\n"
	        "      --workers N             serve from N threads, clients dealt out in turn "
	        "(1..64, default 1)\n"
	        "      (and --registry, --registry-name, --service, --ca, --cert, --key, --crl,\n"
	        "       --allow-insecure-key, --device, --verbose as above)\n" RDMX_CLI_HELP_COMMON
	        "Exit status: 0 done; 1 failure or not found; 2 usage error.\n");
}

static void fmt_latency(uint64_t ns, char *out, size_t len)
{
	if (ns < 1000000u)
		snprintf(out, len, "%.0f us", (double)ns / 1e3);
	else if (ns < 1000000000u)
		snprintf(out, len, "%.1f ms", (double)ns / 1e6);
	else
		snprintf(out, len, "%.2f s", (double)ns / 1e9);
}

static void fmt_size(uint64_t n, char *out, size_t len)
{
	if (n >= (1u << 20) && n % (1u << 20) == 0)
		snprintf(out, len, "%" PRIu64 " MiB", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(out, len, "%" PRIu64 " KiB", n >> 10);
	else
		snprintf(out, len, "%" PRIu64 " bytes", n);
}

/* ---- finding and reaching the servers ---- */

/* the device of the connection, and the largest value that fits its messages */
static struct rdmx_dev *kv_dev;
static uint64_t max_value = KV_MAX_VALUE;

static bool value_fits(size_t len, const char *key)
{
	if (len <= max_value)
		return true;
	fprintf(stderr, "rdmx-kv: %s: a value is at most %llu bytes on device %s\n", key,
	        (unsigned long long)max_value, rdmx_dev_name(kv_dev));
	return false;
}

/* The instances of the service (pool.h); their connections are made when a
 * call first needs one. kv_dev must outlive the pool. */
static struct kv_pool *kv_pool;

static int kv_connect(const struct copts *o)
{
	struct kv_pool_opts po = {0};
	uint64_t max_msg;
	int ret;

	if (kv_open_device(&kv_dev, &max_msg, &max_value, "rdmx-kv"))
		return RDMX_E_NO_DEVICE;
	po.registry = o->registry;
	po.registry_name = o->registry_name;
	po.server = o->server;
	po.server_name = o->server_name;
	po.service = o->service;
	po.tls = &o->tls;
	po.timeout_ms = o->timeout_ms;
	po.verbose = o->verbose;
	po.dev = kv_dev;
	po.max_msg = max_msg;
	ret = kv_pool_open(&po, &kv_pool);
	if (ret)
		rdmx_dev_close(&kv_dev);
	return ret;
}

/* ---- calls ---- */

struct result {
	int rc;            /* 0 OK, > 0 RPC status, < 0 RDMX_E_* */
	char message[256]; /* status message */
	uint64_t ns;       /* latency */
};

static void result_set(struct result *r, int rc, const struct rdmx_rpc_status *st, uint64_t t0)
{
	r->ns = rdmx__now_ns() - t0;
	r->rc = rc;
	r->message[0] = '\0';
	if (rc > 0 && st->message)
		snprintf(r->message, sizeof(r->message), "%s", st->message);
	else if (rc < 0)
		snprintf(r->message, sizeof(r->message), "%s", rdmx_strerror(rc));
}

static const char *result_name(const struct result *r)
{
	return r->rc >= 0 ? rdmx_rpc_code_name((enum rdmx_rpc_code)r->rc) : "ERROR";
}

/* Member i's connection, or NULL with r set to UNAVAILABLE naming it. */
static struct rdmx_rpc_ep *member_conn(size_t i, struct result *r)
{
	struct rdmx_rpc_ep *rpc = kv_pool_ep(kv_pool, i, r->message, sizeof(r->message));

	if (!rpc) {
		r->ns = 0;
		r->rc = kv_pool_size(kv_pool) > 1 ? RDMX_RPC_UNAVAILABLE : RDMX_E_DISCONNECTED;
	}
	return rpc;
}

/* The connection of the instance that owns key (rendezvous hashing). */
static struct rdmx_rpc_ep *route(const char *key, size_t *at, struct result *r)
{
	*at = kv_pool_pick(kv_pool, key, strlen(key));
	return member_conn(*at, r);
}

/* After a call to member i: a lost connection marks it down (true), and
 * with several instances the error names the one whose keys are
 * unavailable. */
static bool after(size_t i, struct result *r)
{
	char msg[sizeof(r->message)];

	if ((r->rc >= 0 && r->rc != RDMX_RPC_UNAVAILABLE) || kv_pool_alive(kv_pool, i))
		return false;
	kv_pool_lost(kv_pool, i, r->rc < 0 ? r->rc : RDMX_E_DISCONNECTED);
	if (kv_pool_size(kv_pool) == 1)
		return true;
	snprintf(msg, sizeof(msg), "%s", r->message);
	snprintf(r->message, sizeof(r->message), "kv instance %s is unavailable: %.180s",
	         kv_pool_endpoint(kv_pool, i), msg);
	r->rc = RDMX_RPC_UNAVAILABLE;
	return true;
}

/* Retries (kv.proto, docs/guide-cluster.md). A call whose connection was
 * lost goes again on a new connection to the same instance (the key's
 * owner: rendezvous hashing never sends it elsewhere) when it never reached
 * the server (the stub could not start it: the connection was already
 * gone) or the method is idempotent (get, del, scan); at most
 * KV_MAX_RETRIES times per call, within the call's deadline (--timeout-ms
 * from the first attempt), while the budget lasts (10 retries plus 20 % of
 * the calls made). A put that may have been applied is reported
 * UNAVAILABLE, never resent. A reconnect that fails makes the instance back
 * off: its keys answer UNAVAILABLE at once until then. */
#define KV_MAX_RETRIES 2
static uint64_t kv_calls, kv_retries;

#ifdef KV_KV_GET_IDEMPOTENT
#define GET_IDEMPOTENT true
#else
#define GET_IDEMPOTENT false
#endif
#ifdef KV_KV_PUT_IDEMPOTENT
#define PUT_IDEMPOTENT true
#else
#define PUT_IDEMPOTENT false
#endif
#ifdef KV_KV_DELETE_IDEMPOTENT
#define DELETE_IDEMPOTENT true
#else
#define DELETE_IDEMPOTENT false
#endif
#ifdef KV_KV_SCAN_IDEMPOTENT
#define SCAN_IDEMPOTENT true
#else
#define SCAN_IDEMPOTENT false
#endif

static bool retry(const struct copts *o, bool lost, int rc, bool idempotent, uint64_t t0,
                  int *tries)
{
	bool reached = rc >= 0; /* a negative code: the call was never started */

	if (!lost || (reached && !idempotent) || *tries >= KV_MAX_RETRIES)
		return false;
	if (rdmx__now_ns() - t0 >= (uint64_t)o->timeout_ms * 1000000u)
		return false;
	if (kv_retries >= 10 + kv_calls / 5)
		return false;
	kv_retries++;
	(*tries)++;
	if (o->verbose)
		fprintf(stderr, "rdmx-kv: retrying on a new connection (%s)\n",
		        reached ? "idempotent" : "never sent");
	return true;
}

/* The deadline left of a call that started at t0 (1 us at least). */
static struct rdmx_rpc_call_opts call_opts_from(const struct copts *o, uint64_t t0)
{
	uint64_t total = (uint64_t)o->timeout_ms * 1000u, used = (rdmx__now_ns() - t0) / 1000u;
	struct rdmx_rpc_call_opts co = {used < total ? total - used : 1, false};

	kv_calls++;
	return co;
}

static struct rdmx_rpc_call_opts call_opts(const struct copts *o)
{
	return call_opts_from(o, rdmx__now_ns());
}

/* One attempt of a keyed call on rpc within the deadline co: makes the call
 * (its response in arena) and returns its code, its status in *st. */
typedef int (*attempt_fn)(struct rdmx_rpc_ep *rpc, const struct rdmx_rpc_call_opts *co,
                          struct rdmx_arena *arena, struct rdmx_rpc_status *st, void *arg);

/* A call on the instance that owns key, with the retries above; r holds
 * the outcome of the last attempt. */
static void keyed_call(const struct copts *o, const char *key, bool idempotent, attempt_fn attempt,
                       void *arg, struct result *r)
{
	uint64_t first = rdmx__now_ns();
	int tries = 0;
	bool again;

	do {
		struct rdmx_rpc_call_opts co = call_opts_from(o, first);
		struct rdmx_rpc_status st = {0, NULL};
		struct rdmx_arena arena;
		uint64_t t0;
		size_t at;
		struct rdmx_rpc_ep *rpc = route(key, &at, r);
		int rc;

		if (!rpc)
			return;
		rdmx_arena_init(&arena, NULL, 0, 0);
		t0 = rdmx__now_ns();
		rc = attempt(rpc, &co, &arena, &st, arg);
		result_set(r, rc, &st, t0);
		rdmx_arena_fini(&arena);
		again = retry(o, after(at, r), rc, idempotent, first, &tries);
	} while (again);
}

struct put_call {
	const char *key;
	const void *val;
	size_t len;
	bool *replaced;
};

static int put_attempt(struct rdmx_rpc_ep *rpc, const struct rdmx_rpc_call_opts *co,
                       struct rdmx_arena *arena, struct rdmx_rpc_status *st, void *arg)
{
	struct put_call *pc = arg;
	kv_PutRequest req;
	kv_PutResponse resp;
	int rc;

	kv_PutRequest_init(&req);
	kv_PutResponse_init(&resp);
	req.key = rdmx_str_c(pc->key);
	req.value = rdmx_bytes_n(pc->val, pc->len);
	rc = kv_KV_Put(rpc, &req, &resp, arena, co, st);
	if (pc->replaced)
		*pc->replaced = resp.replaced;
	return rc;
}

static void do_put(const struct copts *o, const char *key, const void *val, size_t len,
                   bool *replaced, struct result *r)
{
	struct put_call pc = {key, val, len, replaced};

	keyed_call(o, key, PUT_IDEMPOTENT, put_attempt, &pc, r);
}

struct get_call {
	const char *key;
	struct kv_get *g;
};

/* the value is decoded in place (get.c), not into the arena */
static int get_attempt(struct rdmx_rpc_ep *rpc, const struct rdmx_rpc_call_opts *co,
                       struct rdmx_arena *arena, struct rdmx_rpc_status *st, void *arg)
{
	struct get_call *gc = arg;
	int rc;

	(void)arena;
	kv_get_fini(gc->g);
	rc = kv_get_call(rpc, gc->key, strlen(gc->key), co, gc->g);
	if (rc == 0)
		rc = gc->g->rc;
	st->code = rc;
	st->message = gc->g->message[0] ? gc->g->message : NULL;
	return rc;
}

/* g holds the value on success (kv_get_fini it): decoded in place, a
 * large one in the buffer its response was read into (get.c) */
static void do_get(const struct copts *o, const char *key, struct kv_get *g, struct result *r)
{
	struct get_call gc = {key, g};

	memset(g, 0, sizeof(*g));
	keyed_call(o, key, GET_IDEMPOTENT, get_attempt, &gc, r);
}

struct del_call {
	const char *key;
	bool *deleted;
};

static int del_attempt(struct rdmx_rpc_ep *rpc, const struct rdmx_rpc_call_opts *co,
                       struct rdmx_arena *arena, struct rdmx_rpc_status *st, void *arg)
{
	struct del_call *dc = arg;
	kv_DeleteRequest req;
	kv_DeleteResponse resp;
	int rc;

	kv_DeleteRequest_init(&req);
	kv_DeleteResponse_init(&resp);
	req.key = rdmx_str_c(dc->key);
	rc = kv_KV_Delete(rpc, &req, &resp, arena, co, st);
	*dc->deleted = resp.deleted;
	return rc;
}

static void do_del(const struct copts *o, const char *key, bool *deleted, struct result *r)
{
	struct del_call dc = {key, deleted};

	keyed_call(o, key, DELETE_IDEMPOTENT, del_attempt, &dc, r);
}

/* Every page of a scan; calls `each` per entry. Latency: all pages. */
typedef void (*scan_fn)(const kv_Entry *e, void *arg);

static void scan_one(struct rdmx_rpc_ep *rpc, const struct copts *o, const char *prefix,
                     uint32_t limit, bool keys_only, scan_fn each, void *arg, size_t *count,
                     struct result *r)
{
	struct rdmx_rpc_call_opts co = call_opts(o);
	struct rdmx_rpc_status st = {0, NULL};
	struct rdmx_arena arena;
	kv_ScanRequest req;
	kv_ScanResponse resp;
	char *token = NULL; /* the next page's token: bytes (a key may hold a NUL) */
	size_t token_len = 0;
	uint64_t t0 = rdmx__now_ns();
	int rc;

	*count = 0;
	rdmx_arena_init(&arena, NULL, 0, 0);
	for (;;) {
		kv_ScanRequest_init(&req);
		kv_ScanResponse_init(&resp);
		req.prefix = rdmx_str_c(prefix);
		req.limit = limit;
		req.keys_only = keys_only;
		req.page_token = rdmx_str_n(token, token_len);
		rc = kv_KV_Scan(rpc, &req, &resp, &arena, &co, &st);
		if (rc)
			break;
		for (size_t i = 0; i < resp.n_entries; i++) {
			if (each)
				each(&resp.entries[i], arg);
			(*count)++;
		}
		free(token);
		token = NULL;
		token_len = 0;
		if (!resp.next_page_token.len)
			break;
		token = malloc(resp.next_page_token.len);
		if (!token) {
			rc = RDMX_E_NOMEM;
			break;
		}
		token_len = resp.next_page_token.len;
		memcpy(token, resp.next_page_token.data, token_len);
		rdmx_arena_reset(&arena);
	}
	result_set(r, rc, &st, t0);
	free(token);
	rdmx_arena_fini(&arena);
}

/* ---- scan across instances: each one's keys, merged in key order ---- */

struct held {
	char *key;
	uint8_t *value;
	size_t klen, vlen;
	uint64_t size;
};

struct held_list {
	struct held *items;
	size_t n, cap;
	bool nomem;
};

static void hold(const kv_Entry *e, void *arg)
{
	struct held_list *l = arg;
	struct held *h;

	if (l->nomem)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct held *grown = realloc(l->items, cap * sizeof(*grown));

		if (!grown) {
			l->nomem = true;
			return;
		}
		l->items = grown;
		l->cap = cap;
	}
	h = &l->items[l->n];
	h->key = malloc(e->key.len + 1);
	h->value = malloc(e->value.len + 1);
	if (!h->key || !h->value) {
		free(h->key);
		free(h->value);
		l->nomem = true;
		return;
	}
	memcpy(h->key, e->key.data, e->key.len);
	if (e->value.len)
		memcpy(h->value, e->value.data, e->value.len);
	h->klen = e->key.len;
	h->vlen = e->value.len;
	h->size = e->size;
	l->n++;
}

/* bytewise key order, as each server scans */
static int held_cmp(const void *a, const void *b)
{
	const struct held *x = a, *y = b;
	size_t n = x->klen < y->klen ? x->klen : y->klen;
	int c = memcmp(x->key, y->key, n);

	return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

static void do_scan(const struct copts *o, const char *prefix, uint32_t limit, bool keys_only,
                    scan_fn each, void *arg, size_t *count, struct result *r)
{
	struct held_list l = {NULL, 0, 0, false};
	uint64_t t0 = rdmx__now_ns();
	size_t part;

	*count = 0;
	if (kv_pool_size(kv_pool) == 1) {
		int tries = 0, rc;
		bool lost;

		do {
			struct rdmx_rpc_ep *rpc = member_conn(0, r);

			if (!rpc)
				return;
			scan_one(rpc, o, prefix, limit, keys_only, each, arg, count, r);
			rc = r->rc;
			lost = after(0, r);
			/* entries already handed out are not handed out again */
		} while (*count == 0 && retry(o, lost, rc, SCAN_IDEMPOTENT, t0, &tries));
		return;
	}
	r->rc = 0;
	r->message[0] = '\0';
	for (size_t i = 0; i < kv_pool_size(kv_pool) && !r->rc; i++) {
		size_t kept = l.n;
		int tries = 0, rc;
		bool lost;

		do {
			struct rdmx_rpc_ep *rpc = member_conn(i, r);

			while (l.n > kept) { /* a failed attempt's entries */
				l.n--;
				free(l.items[l.n].key);
				free(l.items[l.n].value);
			}
			if (!rpc)
				break;
			scan_one(rpc, o, prefix, limit, keys_only, hold, &l, &part, r);
			rc = r->rc;
			lost = after(i, r);
		} while (retry(o, lost, rc, SCAN_IDEMPOTENT, t0, &tries));
		if (!r->rc && l.nomem) {
			r->rc = RDMX_E_NOMEM;
			snprintf(r->message, sizeof(r->message), "%s", rdmx_strerror(RDMX_E_NOMEM));
		}
	}
	if (!r->rc) {
		if (l.n)
			qsort(l.items, l.n, sizeof(*l.items), held_cmp);
		for (size_t i = 0; i < l.n; i++) {
			kv_Entry e;

			kv_Entry_init(&e);
			e.key.data = l.items[i].key;
			e.key.len = l.items[i].klen;
			e.value.data = l.items[i].value;
			e.value.len = l.items[i].vlen;
			e.size = l.items[i].size;
			if (each)
				each(&e, arg);
		}
		*count = l.n;
	}
	for (size_t i = 0; i < l.n; i++) {
		free(l.items[i].key);
		free(l.items[i].value);
	}
	free(l.items);
	r->ns = rdmx__now_ns() - t0;
}

/* ---- showing values ---- */

static bool printable(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] == 0x7f)
			return false;
	return true;
}

/* "text" when short and printable, else "<N bytes>" */
static void show_value(const uint8_t *p, size_t n, char *out, size_t len)
{
	char size[32];

	if (n <= 40 && printable(p, n)) {
		snprintf(out, len, "\"%.*s\"", (int)n, (const char *)p);
		return;
	}
	fmt_size(n, size, sizeof(size));
	snprintf(out, len, "<%s>", size);
}

/* deterministic contents of a generated value: xorshift seeded by the key */
/* The bytes of `put KEY --random SIZE` (and what `get KEY = --random SIZE`
 * expects): a xorshift64 stream seeded by the key, eight bytes per step
 * (a 64 MiB value is 8 Mi steps, not 64 Mi). */
static void pattern(const char *key, uint8_t *p, size_t n)
{
	uint64_t x = 1469598103934665603ull;
	size_t i = 0;

	for (const char *k = key; *k; k++)
		x = (x ^ (uint8_t)*k) * 1099511628211ull;
	for (; i < n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, n - i < 8 ? n - i : 8);
	}
}

static void scan_print(const kv_Entry *e, void *arg)
{
	bool keys_only = *(bool *)arg;
	char shown[96];

	if (keys_only) {
		printf("%.*s\n", (int)e->key.len, e->key.data);
		return;
	}
	if (e->value.len <= 200 && printable(e->value.data, e->value.len))
		printf("%.*s %.*s\n", (int)e->key.len, e->key.data, (int)e->value.len,
		       (const char *)e->value.data);
	else {
		show_value(e->value.data, e->value.len, shown, sizeof(shown));
		printf("%.*s %s\n", (int)e->key.len, e->key.data, shown);
	}
}

/* ---- one-shot commands ---- */

static int report(const char *what, const char *key, const struct result *r, const struct copts *o)
{
	char lat[32];

	fmt_latency(r->ns, lat, sizeof(lat));
	if (o->time)
		fprintf(stderr, "rdmx-kv: %s %s: %s in %s\n", what, key, result_name(r), lat);
	if (r->rc == 0)
		return 0;
	if (r->rc == RDMX_RPC_NOT_FOUND)
		fprintf(stderr, "rdmx-kv: %s %s: not found\n", what, key);
	else
		fprintf(stderr, "rdmx-kv: %s %s: %s%s%s\n", what, key, result_name(r),
		        *r->message ? ": " : "", r->message);
	return 1;
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	uint8_t *buf = NULL, *grown;
	size_t cap = 0, n = 0, got;

	if (!f) {
		fprintf(stderr, "rdmx-kv: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			if (cap > (size_t)KV_MAX_VALUE + 1)
				cap = (size_t)KV_MAX_VALUE + 1;
			grown = realloc(buf, cap);
			if (!grown) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0 || n > KV_MAX_VALUE)
			break;
	}
	if (buf && (ferror(f) || n > KV_MAX_VALUE)) {
		fprintf(stderr, "rdmx-kv: %s: %s\n", path,
		        n > KV_MAX_VALUE ? "larger than 64 MiB" : strerror(errno));
		free(buf);
		buf = NULL;
	}
	if (f != stdin)
		fclose(f);
	*len = n;
	return buf;
}

/* the meter for one large value (quiet below 1 MiB: it would only flash) */
static void meter_start(struct rdmx_progress *m, const char *what, size_t len,
                        const struct copts *o)
{
	rdmx_progress_init(m, what, len, o->quiet || len < (1u << 20));
	rdmx_progress_update(m, 0);
}

static int cmd_put(const struct copts *o, int argc, char **argv)
{
	struct rdmx_progress meter;
	struct result r;
	uint8_t *file = NULL;
	const void *val;
	size_t len;
	bool replaced = false;
	int ret;

	(void)argc;
	if (o->file) {
		file = read_file(o->file, &len);
		if (!file)
			return 1;
		val = file;
	} else {
		val = argv[2];
		len = strlen(argv[2]);
	}
	if (!value_fits(len, argv[1])) {
		free(file);
		return 1;
	}
	meter_start(&meter, "put", len, o);
	do_put(o, argv[1], val, len, &replaced, &r);
	rdmx_progress_finish(&meter, r.rc ? 0 : len);
	ret = report("put", argv[1], &r, o);
	if (!ret)
		printf("OK%s\n", replaced ? " (replaced)" : "");
	free(file);
	return ret;
}

static int cmd_get(const struct copts *o, int argc, char **argv)
{
	struct rdmx_progress meter;
	struct kv_get g;
	struct result r;
	const uint8_t *val;
	size_t len;
	int ret;

	(void)argc;
	/* the size is known once the reply is in: the meter counts time */
	rdmx_progress_init(&meter, "get", 0, o->quiet);
	do_get(o, argv[1], &g, &r);
	val = g.value;
	len = g.len;
	if (len >= (1u << 20))
		rdmx_progress_finish(&meter, len);
	ret = report("get", argv[1], &r, o);
	if (!ret) {
		FILE *f = o->out ? fopen(o->out, "wb") : stdout;

		if (!f || fwrite(val, 1, len, f) != len || (!o->out && putchar('\n') == EOF) ||
		    (o->out ? fclose(f) : fflush(f))) {
			fprintf(stderr, "rdmx-kv: writing %s: %s\n", o->out ? o->out : "stdout",
			        strerror(errno));
			ret = 1;
		}
	}
	kv_get_fini(&g);
	return ret;
}

static int cmd_del(const struct copts *o, int argc, char **argv)
{
	struct result r;
	bool deleted = false;
	int ret;

	(void)argc;
	do_del(o, argv[1], &deleted, &r);
	ret = report("del", argv[1], &r, o);
	if (ret)
		return ret;
	if (!deleted) {
		fprintf(stderr, "rdmx-kv: del %s: not found\n", argv[1]);
		return 1;
	}
	printf("deleted\n");
	return 0;
}

static int cmd_scan(const struct copts *o, int argc, char **argv)
{
	bool keys_only = o->keys;
	struct result r;
	size_t count;

	(void)argc;
	do_scan(o, argv[1], o->limit, keys_only, scan_print, &keys_only, &count, &r);
	return report("scan", argv[1], &r, o);
}

/* ---- session: a script of calls over one connection ---- */

struct session {
	const struct copts *o;
	unsigned calls, failed;
};

/* splits a line into words; "double quotes" group, \" and \\ escape */
static int split(char *line, char **w, int max)
{
	int n = 0;
	char *p = line, *o;

	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '\n' || *p == '#')
			break;
		if (n == max)
			return -1;
		w[n++] = o = p;
		if (*p == '"') {
			p++;
			while (*p && *p != '"') {
				if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
					p++;
				*o++ = *p++;
			}
			if (*p != '"')
				return -1;
			p++;
		} else {
			while (*p && *p != ' ' && *p != '\t' && *p != '\n')
				*o++ = *p++;
		}
		if (*p && *p != '\n')
			p++;
		else if (*p == '\n')
			*p = '\0';
		*o = '\0';
	}
	return n;
}

static void line_out(const char *op, const char *what, const char *result, const char *check,
                     uint64_t ns)
{
	char lat[32];

	fmt_latency(ns, lat, sizeof(lat));
	printf("  %-5s %-34s %-30s %10s%s%s\n", op, what, result, lat, *check ? "  " : "", check);
	fflush(stdout);
}

static bool big(size_t n)
{
	return n >= (4u << 20);
}

static void progress(const char *what, size_t n)
{
	char size[32];

	fmt_size(n, size, sizeof(size));
	printf("  ...   %s %s by rendezvous (one RDMA read of the whole value)\n", what, size);
	fflush(stdout);
}

static void s_put(struct session *s, char **w, int n)
{
	char what[160], shown[64], size_text[32];
	struct result r;
	uint8_t *gen = NULL;
	const void *val = NULL;
	size_t len = 0;
	int64_t size;

	if (n == 3) {
		val = w[2];
		len = strlen(w[2]);
		show_value(val, len, shown, sizeof(shown));
	} else if (n == 4 && !strcmp(w[2], "--random") && (size = kv_parse_size(w[3])) >= 0 &&
	           value_fits((size_t)size, w[1])) {
		len = (size_t)size;
		gen = malloc(len ? len : 1);
		if (!gen) {
			printf("  put   %s: out of memory\n", w[1]);
			s->failed++;
			return;
		}
		pattern(w[1], gen, len);
		val = gen;
		fmt_size(len, size_text, sizeof(size_text));
		snprintf(shown, sizeof(shown), "<%s generated>", size_text);
		if (big(len))
			progress("putting", len);
	} else {
		printf("  put: want 'put KEY VALUE' or 'put KEY --random SIZE'\n");
		s->failed++;
		return;
	}
	snprintf(what, sizeof(what), "%.80s = %s", w[1], shown);
	do_put(s->o, w[1], val, len, NULL, &r);
	s->calls++;
	if (r.rc)
		s->failed++;
	line_out("put", what, r.rc ? r.message : "OK", r.rc ? "FAILED" : "", r.ns);
	free(gen);
}

/* get KEY [= VALUE | = --random SIZE | = --missing] */
static void s_get(struct session *s, char **w, int n)
{
	char shown[96], check[64] = "";
	struct kv_get g;
	struct result r;
	const uint8_t *val;
	uint8_t *want = NULL;
	size_t len, want_len = 0;
	bool expect = n >= 4 && !strcmp(w[2], "="), missing = false, ok = true;
	int64_t size = 0;

	if (expect && n == 4 && !strcmp(w[3], "--missing")) {
		missing = true;
	} else if (expect && n == 5 && !strcmp(w[3], "--random") &&
	           (size = kv_parse_size(w[4])) >= 0 && value_fits((size_t)size, w[1])) {
		want_len = (size_t)size;
		want = malloc(want_len ? want_len : 1);
		if (!want) {
			s->failed++;
			return;
		}
		pattern(w[1], want, want_len);
		if (big(want_len))
			progress("getting", want_len);
	} else if (expect && n == 4) {
		want = (uint8_t *)strdup(w[3]);
		want_len = strlen(w[3]);
	} else if (n != 2) {
		printf("  get: want 'get KEY [= VALUE | = --random SIZE | = --missing]'\n");
		s->failed++;
		return;
	}
	do_get(s->o, w[1], &g, &r);
	val = g.value;
	len = g.len;
	s->calls++;
	if (r.rc == 0) {
		show_value(val, len, shown, sizeof(shown));
		if (missing)
			ok = false;
		else if (want)
			ok = len == want_len && (len == 0 || memcmp(val, want, len) == 0);
	} else {
		snprintf(shown, sizeof(shown), "%s", result_name(&r));
		ok = missing && r.rc == RDMX_RPC_NOT_FOUND;
	}
	if (expect || !ok)
		snprintf(check, sizeof(check), "%s", ok ? "ok" : "WRONG");
	if (!ok)
		s->failed++;
	line_out("get", w[1], shown, check, r.ns);
	kv_get_fini(&g);
	free(want);
}

static void s_del(struct session *s, char **w, int n)
{
	struct result r;
	bool deleted = false;

	if (n != 2) {
		printf("  del: want 'del KEY'\n");
		s->failed++;
		return;
	}
	do_del(s->o, w[1], &deleted, &r);
	s->calls++;
	if (r.rc)
		s->failed++;
	line_out("del", w[1],
	         r.rc      ? r.message
	         : deleted ? "deleted"
	                   : "was absent",
	         r.rc ? "FAILED" : "", r.ns);
}

struct scan_list {
	char text[200];
	size_t len;
};

static void scan_collect(const kv_Entry *e, void *arg)
{
	struct scan_list *l = arg;
	int n = snprintf(l->text + l->len, sizeof(l->text) - l->len, "%s%.*s", l->len ? " " : "",
	                 (int)e->key.len, e->key.data);

	if (n > 0 && l->len + (size_t)n < sizeof(l->text))
		l->len += (size_t)n;
}

/* scan PREFIX [= COUNT] */
static void s_scan(struct session *s, char **w, int n)
{
	struct scan_list l = {"", 0};
	char shown[256], check[32] = "";
	struct result r;
	size_t count;
	bool ok = true;

	if (n != 2 && !(n == 4 && !strcmp(w[2], "="))) {
		printf("  scan: want 'scan PREFIX [= COUNT]'\n");
		s->failed++;
		return;
	}
	do_scan(s->o, w[1], 2, true, scan_collect, &l, &count, &r);
	s->calls++;
	if (r.rc) {
		snprintf(shown, sizeof(shown), "%s", r.message);
		ok = false;
	} else {
		snprintf(shown, sizeof(shown), "%zu key%s: %s", count, count == 1 ? "" : "s",
		         l.text);
		if (n == 4)
			ok = count == (size_t)strtoul(w[3], NULL, 10);
	}
	if (n == 4 || !ok)
		snprintf(check, sizeof(check), "%s", ok ? "ok" : "WRONG");
	if (!ok)
		s->failed++;
	line_out("scan", w[1], shown, check, r.ns);
}

/* With one server: whether its connection is gone (its TLS session or its
 * channel): then one line on stderr, and the session stops. With several
 * instances a lost one only makes its keys unavailable (after()). */
static bool session_lost(struct session *s)
{
	char why[256];
	struct rdmx_rpc_ep *rpc;
	struct rdmx_chan *chan;
	int rc;

	if (kv_pool_size(kv_pool) > 1)
		return false;
	rpc = kv_pool_ep(kv_pool, 0, why, sizeof(why));
	if (!rpc) {
		fprintf(stderr, "rdmx-kv: session: %s after %u calls; stopping\n", why, s->calls);
		s->failed++;
		return true;
	}
	chan = rdmx_rpc_ep_get_chan(rpc);
	rc = kv_pool_check(kv_pool, 0);
	if (rc == 0 && chan && rdmx_chan_get_state(chan) == RDMX_CHAN_READY)
		return false;
	fprintf(stderr,
	        "rdmx-kv: session: connection to the server lost (%s) after %u calls; "
	        "stopping\n",
	        rc ? rdmx_strerror(rc) : "channel closed", s->calls);
	s->failed++;
	return true;
}

static int cmd_session(const struct copts *o, int argc, char **argv)
{
	struct session s = {o, 0, 0};
	FILE *f = argc < 2 || !strcmp(argv[1], "-") ? stdin : fopen(argv[1], "r");
	char line[8192];
	char *w[8];
	int n;

	if (!f) {
		fprintf(stderr, "rdmx-kv: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		n = split(line, w, 8);
		if (n == 0)
			continue;
		if (n > 0 && strcmp(w[0], "echo") && session_lost(&s))
			break; /* said once; no call goes out on a dead connection */
		if (n < 0) {
			printf("  bad line (quotes, or more than 8 words): %s", line);
			s.failed++;
		} else if (!strcmp(w[0], "put")) {
			s_put(&s, w, n);
		} else if (!strcmp(w[0], "get")) {
			s_get(&s, w, n);
		} else if (!strcmp(w[0], "del")) {
			s_del(&s, w, n);
		} else if (!strcmp(w[0], "scan")) {
			s_scan(&s, w, n);
		} else if (!strcmp(w[0], "echo")) {
			for (int i = 1; i < n; i++)
				printf("%s%s", i > 1 ? " " : "", w[i]);
			printf("\n");
			fflush(stdout);
		} else {
			printf("  unknown command %s\n", w[0]);
			s.failed++;
		}
	}
	if (f != stdin)
		fclose(f);
	printf("session: %u calls, %s\n", s.calls,
	       s.failed ? "SOME FAILED (see above)" : "every value read back is right");
	return s.failed ? 1 : 0;
}

/* ---- entry ---- */

void kv_usage_error(void)
{
	fprintf(stderr, "usage: rdmx-kv [options] put|get|del|scan|session ... "
	                "(rdmx-kv --help lists them)\n");
}

enum {
	O_REGISTRY = RDMX_CLI_OPT_VERSION + 1,
	O_REGISTRY_NAME,
	O_SERVER,
	O_SERVER_NAME,
	O_SERVICE,
	O_TIMEOUT,
	O_TIME,
	O_FILE,
	O_OUT,
	O_LIMIT,
	O_KEYS,
};

static const struct option client_options[] = {
    RDMX_CLI_LONGOPTS_STD,
    {"registry", required_argument, NULL, O_REGISTRY},
    {"registry-name", required_argument, NULL, O_REGISTRY_NAME},
    {"server", required_argument, NULL, O_SERVER},
    {"server-name", required_argument, NULL, O_SERVER_NAME},
    {"service", required_argument, NULL, O_SERVICE},
    RDMX_CLI_LONGOPTS_TLS,
    {"device", required_argument, NULL, 'd'},
    {"timeout-ms", required_argument, NULL, O_TIMEOUT},
    {"time", no_argument, NULL, O_TIME},
    {"file", required_argument, NULL, O_FILE},
    {"out", required_argument, NULL, O_OUT},
    {"limit", required_argument, NULL, O_LIMIT},
    {"keys", no_argument, NULL, O_KEYS},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0},
};

/* 0 parsed, 1 done (help / version printed), 2 usage error */
static int parse_client(int argc, char **argv, struct copts *o)
{
	struct rdmx_cli_tls tls = {NULL, NULL, NULL, NULL, false};
	long v;
	int c;

	o->service = KV_DEFAULT_SERVICE;
	o->timeout_ms = 30000;
	o->registry = rdmx_cli_registry_env();
	rdmx_cli_reset();
	while ((c = rdmx_cli_getopt("rdmx-kv", argc, argv, "hd:qv", client_options, true)) != -1) {
		if (rdmx_cli_tls_opt(&tls, c, optarg))
			continue;
		if (rdmx_cli_std_opt("rdmx-kv", c, kv_usage))
			return 1;
		switch (c) {
		case O_REGISTRY:
			o->registry = optarg;
			break;
		case O_REGISTRY_NAME:
			o->registry_name = optarg;
			break;
		case O_SERVER:
			o->server = optarg;
			break;
		case O_SERVER_NAME:
			o->server_name = optarg;
			break;
		case O_SERVICE:
			o->service = optarg;
			break;
		case 'd':
			rdmx_cli_set_device(optarg);
			break;
		case O_TIMEOUT:
			if (rdmx_cli_parse_long("rdmx-kv", "--timeout-ms", optarg, 1, 600000, &v))
				return 2;
			o->timeout_ms = (int)v;
			break;
		case O_TIME:
			o->time = true;
			break;
		case O_FILE:
			o->file = optarg;
			break;
		case O_OUT:
			o->out = optarg;
			break;
		case O_LIMIT:
			if (rdmx_cli_parse_long("rdmx-kv", "--limit", optarg, 1, KV_SCAN_MAX_LIMIT,
			                        &v))
				return 2;
			o->limit = (uint32_t)v;
			break;
		case O_KEYS:
			o->keys = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		default:
			return 2;
		}
	}
	rdmx_cli_tls_env(&tls);
	o->tls.ca = tls.ca;
	o->tls.cert = tls.cert;
	o->tls.key = tls.key;
	o->tls.crl = tls.crl;
	o->tls.allow_insecure_key = tls.allow_insecure_key;
	return 0;
}

/* Options that belong to one command only. */
static bool options_fit(const struct copts *o, const char *cmd)
{
	const char *wrong = NULL;

	if (o->file && strcmp(cmd, "put"))
		wrong = "--file";
	else if (o->out && strcmp(cmd, "get"))
		wrong = "--out";
	else if ((o->limit || o->keys) && strcmp(cmd, "scan"))
		wrong = o->limit ? "--limit" : "--keys";
	if (wrong)
		fprintf(stderr, "rdmx-kv: %s does not apply to %s\n", wrong, cmd);
	return !wrong;
}

int kv_client_main(int argc, char **argv)
{
	struct copts o = {0};
	int ret;

	ret = parse_client(argc, argv, &o);
	if (ret)
		return ret == 1 ? 0 : 2;
	argc -= optind;
	argv += optind;
	if (argc < 1 ||
	    (strcmp(argv[0], "put") && strcmp(argv[0], "get") && strcmp(argv[0], "del") &&
	     strcmp(argv[0], "scan") && strcmp(argv[0], "session"))) {
		if (argc >= 1)
			fprintf(stderr, "rdmx-kv: unknown command '%s'\n", argv[0]);
		kv_usage_error();
		return 2;
	}
	if (!options_fit(&o, argv[0]))
		return 2;
	if (!strcmp(argv[0], "put") && argc != (o.file ? 2 : 3))
		ret = 2;
	else if ((!strcmp(argv[0], "get") || !strcmp(argv[0], "del") || !strcmp(argv[0], "scan")) &&
	         argc != 2)
		ret = 2;
	else if (!strcmp(argv[0], "session") && argc > 2)
		ret = 2;
	if (ret) {
		kv_usage_error();
		return 2;
	}
	if (kv_connect(&o))
		return 1;
	if (!strcmp(argv[0], "put"))
		ret = cmd_put(&o, argc, argv);
	else if (!strcmp(argv[0], "get"))
		ret = cmd_get(&o, argc, argv);
	else if (!strcmp(argv[0], "del"))
		ret = cmd_del(&o, argc, argv);
	else if (!strcmp(argv[0], "scan"))
		ret = cmd_scan(&o, argc, argv);
	else
		ret = cmd_session(&o, argc, argv);
	kv_pool_close(&kv_pool);
	rdmx_dev_close(&kv_dev);
	return ret;
}
