/* Registry backend on etcd v3, through its JSON gateway (/v3/...) over
 * libcurl, JSON by jansson.
 *
 * Why the gateway: it is etcd's own, maintained HTTP/JSON face of the v3 API
 * (the same server code as gRPC), and libcurl is a maintained client with
 * OpenSSL mutual TLS; a C library then needs no gRPC C++ runtime.
 *
 * Layout: a member is one key PREFIX SERVICE "/" LEASE (16 hex digits) put
 * with a lease of its TTL; the member id is the lease id. The value is a JSON
 * record {"endpoint", "owner", "ttl_ms", "meta":{}, "state":"up"}. Leave puts
 * the record again with "state":"leaving", then revokes the lease, so that a
 * watcher (which asks for the previous value of deleted keys) tells a member
 * that left from one whose lease ran out.
 *
 * Failover: every request goes to the endpoint in use and, on a transport
 * failure or an "unavailable" answer (no leader, leader changed), moves to
 * the next one, all within the client's timeout. The watch stream resumes
 * from the revision after the last one it saw, on the next endpoint, after a
 * back-off with jitter. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "registry_internal.h"
#include "registry_proto.h"
#include "tls_internal.h"
#include "common/clock.h"
#include "common/grow.h"
#include "common/log.h"

#define MAX_REPLY (16u << 20)    /* one answer */
#define MAX_WATCH_BUF (4u << 20) /* one unparsed watch message */
#define WATCH_BACKOFF_MIN_MS 50
#define WATCH_BACKOFF_MAX_MS 2000
#define DEFAULT_TTL_MS 10000u

struct buf {
	char *data;
	size_t len, cap, max;
	bool overflow;
};

struct joined {
	uint64_t lease;
	char *key;
	char *leaving; /* the record with "state":"leaving" */
};

struct etcd {
	struct rdmx__reg_url url;
	size_t cur;                  /* endpoint in use */
	struct rdmx_tls_config *cfg; /* referenced */
	SSL_CTX *tls;                /* the config's client context */
	char owner[RDMX_REGISTRY_MAX_OWNER + 1];
	int timeout_ms;
	char last_error[512];

	CURL *req;
	struct buf rbuf;
	char password[RDMX__REG_URL_MAX_PASSWORD + 1]; /* from the environment */
	char token[512];
	struct curl_slist *headers;  /* of req */
	struct curl_slist *wheaders; /* of the watch stream */

	struct joined *joined;
	size_t n_joined;

	/* watch */
	bool watching;
	char *watch_key, *watch_end;
	CURLM *multi;
	CURL *wh;
	struct buf wbuf;
	int64_t last_rev;
	int64_t retry_at;
	int backoff_ms;
	bool said_lost;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int jitter(int ms)
{
	uint32_t r = 0;

	if (ms < 2 || RAND_bytes((unsigned char *)&r, sizeof(r)) != 1)
		return ms;
	return ms / 2 + (int)(r % (uint32_t)(ms / 2 + 1));
}

/* ---- buffers, base64, JSON helpers ---- */

static size_t buf_write(char *ptr, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;
	size_t add = size * n;

	if (b->len + add + 1 > b->max) {
		b->overflow = true;
		return 0; /* curl ends the transfer */
	}
	if (!rdmx__grow(&b->data, &b->cap, b->len + add + 1, 4096))
		return 0;
	memcpy(b->data + b->len, ptr, add);
	b->len += add;
	b->data[b->len] = '\0';
	return add;
}

static void buf_reset(struct buf *b)
{
	b->len = 0;
	b->overflow = false;
	if (b->data)
		b->data[0] = '\0';
}

static char *b64_encode(const char *s, size_t len)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1);

	if (out)
		EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)len);
	return out;
}

/* NUL-terminated copy of the decoded bytes; NULL when not base64. */
static char *b64_decode(const char *s, size_t *out_len)
{
	size_t len = strlen(s), pad = 0;
	char *out;
	int n;

	if (len % 4)
		return NULL;
	out = malloc(len / 4 * 3 + 1);
	if (!out)
		return NULL;
	n = len ? EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)s, (int)len) : 0;
	if (n < 0) {
		free(out);
		return NULL;
	}
	if (len && s[len - 1] == '=')
		pad++;
	if (len > 1 && s[len - 2] == '=')
		pad++;
	n -= (int)pad;
	out[n] = '\0';
	if (out_len)
		*out_len = (size_t)n;
	return out;
}

/* An int64 of the gateway: a string of digits, or a number. */
static int64_t json_i64(const json_t *v)
{
	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return 0;
}

static int set_b64(json_t *o, const char *field, const char *s)
{
	char *b = b64_encode(s, strlen(s));
	int rc;

	if (!b)
		return RDMX_E_NOMEM;
	rc = json_object_set_new(o, field, json_string(b));
	free(b);
	return rc ? RDMX_E_NOMEM : RDMX_OK;
}

/* The end of the range of keys starting with `key`: the key with its last
 * byte plus one (our prefixes end in '/', never 0xff). */
static char *range_end(const char *key)
{
	char *end = strdup(key);

	if (end && *end)
		end[strlen(end) - 1]++;
	return end;
}

/* ---- TLS: the config's own client identity and trust ---- */

static CURLcode ssl_ctx_cb(CURL *curl, void *ctx, void *arg)
{
	SSL_CTX *dst = ctx, *src = arg;
	X509 *cert = SSL_CTX_get0_certificate(src);
	EVP_PKEY *key = SSL_CTX_get0_privatekey(src);
	STACK_OF(X509) *chain = NULL;

	(void)curl;
	SSL_CTX_get0_chain_certs(src, &chain);
	if (!SSL_CTX_set_min_proto_version(dst, TLS1_3_VERSION) ||
	    !SSL_CTX_set1_param(dst, SSL_CTX_get0_param(src)) ||
	    (cert && SSL_CTX_use_certificate(dst, cert) != 1) ||
	    (key && SSL_CTX_use_PrivateKey(dst, key) != 1) ||
	    (chain && SSL_CTX_set1_chain(dst, chain) != 1))
		return CURLE_SSL_CERTPROBLEM;
	SSL_CTX_set1_cert_store(dst, SSL_CTX_get_cert_store(src));
	return CURLE_OK;
}

/* Our certificate's first DNS name: the owner written into records. */
static void read_owner(SSL_CTX *ctx, char *out, size_t len)
{
	X509 *cert = ctx ? SSL_CTX_get0_certificate(ctx) : NULL;
	GENERAL_NAMES *names =
	    cert ? X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL) : NULL;

	snprintf(out, len, "-");
	for (int i = 0; names && i < sk_GENERAL_NAME_num(names); i++) {
		GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);

		if (g->type == GEN_DNS) {
			const unsigned char *s = ASN1_STRING_get0_data(g->d.dNSName);
			int n = ASN1_STRING_length(g->d.dNSName);

			if (n > 0 && (size_t)n < len && !memchr(s, 0, (size_t)n)) {
				memcpy(out, s, (size_t)n);
				out[n] = '\0';
				break;
			}
		}
	}
	GENERAL_NAMES_free(names);
}

static void setup_handle(struct etcd *e, CURL *h)
{
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, e->tls ? "https" : "http");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	if (e->tls) {
		curl_easy_setopt(h, CURLOPT_CAINFO, NULL);
		curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
		curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, ssl_ctx_cb);
		curl_easy_setopt(h, CURLOPT_SSL_CTX_DATA, e->tls);
	}
}

static void endpoint_url(const struct etcd *e, size_t i, const char *path, char *out, size_t len)
{
	const struct rdmx__reg_url_endpoint *ep = &e->url.ep[i];
	bool v6 = strchr(ep->host, ':') != NULL;

	snprintf(out, len, "%s://%s%s%s:%u%s", e->tls ? "https" : "http", v6 ? "[" : "", ep->host,
	         v6 ? "]" : "", ep->port, path);
}

/* ---- requests ---- */

/* gRPC status of a gateway error -> our code; 0: try another endpoint. */
static int grpc_code_to_rdmx(int64_t code)
{
	switch (code) {
	case 3:
	case 11:
		return RDMX_E_INVAL;
	case 5:
		return RDMX_E_NOT_FOUND;
	case 6:
		return RDMX_E_EXISTS;
	case 7:
	case 16:
		return RDMX_E_AUTH;
	case 8:
		return RDMX_E_FULL;
	case 1:
	case 4:
	case 10:
	case 13:
	case 14:
		return 0;
	default:
		return RDMX_E_REMOTE_OP;
	}
}

static int curl_to_rdmx(CURLcode cc)
{
	switch (cc) {
	case CURLE_OPERATION_TIMEDOUT:
		return RDMX_E_TIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return RDMX_E_CONN_REFUSED;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
		return RDMX_E_AUTH;
	case CURLE_OUT_OF_MEMORY:
		return RDMX_E_NOMEM;
	default:
		return RDMX_E_DISCONNECTED;
	}
}

/* An answer's error, as the gateway writes it: {"error":..,"code":N,..} or,
 * in a stream, {"error":{"grpc_code":N,"message":..}}. 1 when it is one. */
static int reply_error(json_t *r, int64_t *code, const char **msg)
{
	json_t *err = json_object_get(r, "error");

	if (!err)
		return 0;
	if (json_is_object(err)) {
		*code = json_i64(json_object_get(err, "grpc_code"));
		if (!*code)
			*code = json_i64(json_object_get(err, "code"));
		*msg = json_string_value(json_object_get(err, "message"));
	} else {
		*code = json_i64(json_object_get(r, "code"));
		*msg = json_string_value(json_object_get(r, "message"));
		if (!*msg)
			*msg = json_string_value(err);
	}
	if (!*msg)
		*msg = "";
	return 1;
}

/* POSTs body to path on a live endpoint; the parsed answer in *reply (a
 * stream's first message is unwrapped from {"result":..}). */
static int post_once(struct etcd *e, const char *path, json_t *body, json_t **reply)
{
	int64_t deadline = (int64_t)rdmx__now_ms() + e->timeout_ms;
	char *text = json_dumps(body, JSON_COMPACT);
	int ret = RDMX_E_TIMEDOUT;
	size_t tried = 0;

	e->last_error[0] = '\0';
	if (!text)
		return RDMX_E_NOMEM;
	for (;;) {
		int64_t left = deadline - (int64_t)rdmx__now_ms(), attempt;
		char url[RDMX__REG_URL_MAX_HOST + 64];
		char peer[201]; /* etcd's text, escaped: at most 200 characters */
		json_error_t jerr;
		long http = 0;
		int64_t code = 0; /* unless reply_error finds them */
		const char *msg = "";
		json_t *r, *res;
		CURLcode cc;

		if (left <= 0)
			break;
		if (tried && tried % e->url.n == 0) {
			/* a whole round failed: pause a little before the next */
			struct timespec ts = {0, 50 * 1000000L};

			if (left <= 50)
				break;
			nanosleep(&ts, NULL);
			left -= 50;
		}
		attempt = e->url.n > 1 ? (left / 2 > 500 ? left / 2 : 500) : left;
		if (attempt > left)
			attempt = left;
		endpoint_url(e, e->cur, path, url, sizeof(url));
		buf_reset(&e->rbuf);
		curl_easy_setopt(e->req, CURLOPT_URL, url);
		curl_easy_setopt(e->req, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(e->req, CURLOPT_TIMEOUT_MS, (long)attempt);
		curl_easy_setopt(e->req, CURLOPT_CONNECTTIMEOUT_MS,
		                 (long)(attempt < 1000 ? attempt : 1000));
		cc = curl_easy_perform(e->req);
		tried++;
		if (cc != CURLE_OK || e->rbuf.overflow) {
			ret = e->rbuf.overflow ? RDMX_E_TOO_BIG : curl_to_rdmx(cc);
			RDMX_SEC_DBG("registry: etcd %s:%u%s: %s", e->url.ep[e->cur].host,
			             e->url.ep[e->cur].port, path, curl_easy_strerror(cc));
			snprintf(e->last_error, sizeof(e->last_error), "etcd %s:%u: %s",
			         e->url.ep[e->cur].host, e->url.ep[e->cur].port,
			         curl_easy_strerror(cc));
			e->cur = (e->cur + 1) % e->url.n;
			continue;
		}
		curl_easy_getinfo(e->req, CURLINFO_RESPONSE_CODE, &http);
		r = json_loadb(e->rbuf.data ? e->rbuf.data : "", e->rbuf.len,
		               JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &jerr);
		if (!r || !json_is_object(r)) {
			json_decref(r);
			snprintf(e->last_error, sizeof(e->last_error), "etcd %s:%u%s: HTTP %ld: %s",
			         e->url.ep[e->cur].host, e->url.ep[e->cur].port, path, http,
			         rdmx__log_escape(e->rbuf.data, e->rbuf.len, peer, sizeof(peer)));
			RDMX_SEC_WARN("registry: %s", e->last_error);
			ret = RDMX_E_PROTOCOL;
			if (http >= 400 && http < 500)
				break; /* every member would say the same */
			e->cur = (e->cur + 1) % e->url.n;
			continue;
		}
		if (reply_error(r, &code, &msg) || http != 200) {
			int mapped = grpc_code_to_rdmx(code);

			rdmx__log_escape(msg, strlen(msg), peer, sizeof(peer));
			json_decref(r);
			snprintf(e->last_error, sizeof(e->last_error), "etcd: %s", peer);
			if (!mapped && (code || http >= 500)) {
				RDMX_SEC_DBG("registry: etcd %s:%u%s: %s; trying the next member",
				             e->url.ep[e->cur].host, e->url.ep[e->cur].port, path,
				             peer);
				ret = RDMX_E_AGAIN;
				e->cur = (e->cur + 1) % e->url.n;
				continue;
			}
			free(text);
			return mapped ? mapped : RDMX_E_REMOTE_OP;
		}
		free(text);
		res = json_object_get(r, "result");
		if (json_is_object(res)) {
			json_incref(res);
			json_decref(r);
			r = res;
		}
		*reply = r;
		return RDMX_OK;
	}
	free(text);
	if (ret == RDMX_E_AGAIN)
		ret = RDMX_E_TIMEDOUT;
	return ret;
}

/* ---- etcd users: the gateway ignores the certificate's name, so RBAC
 * through it takes a user and password, traded for a token ---- */

static void set_token_header(struct etcd *e)
{
	char line[600];

	curl_slist_free_all(e->headers);
	e->headers = NULL;
	if (*e->token) {
		snprintf(line, sizeof(line), "Authorization: %s", e->token);
		e->headers = curl_slist_append(NULL, line);
		OPENSSL_cleanse(line, sizeof(line));
	}
	curl_easy_setopt(e->req, CURLOPT_HTTPHEADER, e->headers);
}

static int authenticate(struct etcd *e)
{
	json_t *body = json_object(), *r = NULL;
	const char *token;
	int ret;

	if (!body)
		return RDMX_E_NOMEM;
	e->token[0] = '\0';
	set_token_header(e);
	json_object_set_new(body, "name", json_string(e->url.user));
	json_object_set_new(body, "password", json_string(e->password));
	ret = post_once(e, "/v3/auth/authenticate", body, &r);
	json_object_clear(body);
	json_decref(body);
	if (ret) {
		RDMX_SEC_WARN("registry: etcd refused user %s: %s", e->url.user,
		              *e->last_error ? e->last_error : rdmx_strerror(ret));
		return ret;
	}
	token = json_string_value(json_object_get(r, "token"));
	if (!token || strlen(token) >= sizeof(e->token)) {
		json_decref(r);
		return RDMX_E_PROTOCOL;
	}
	snprintf(e->token, sizeof(e->token), "%s", token);
	json_decref(r);
	set_token_header(e);
	return RDMX_OK;
}

/* A request, with a token when the address names a user (made at the
 * first request, made again once when etcd says it expired). */
static int post(struct etcd *e, const char *path, json_t *body, json_t **reply)
{
	int ret;

	if (*e->url.user && !*e->token) {
		ret = authenticate(e);
		if (ret)
			return ret;
	}
	ret = post_once(e, path, body, reply);
	if (ret == RDMX_E_AUTH && *e->url.user && strstr(e->last_error, "token")) {
		ret = authenticate(e);
		if (!ret)
			ret = post_once(e, path, body, reply);
	}
	return ret;
}

/* ---- records ---- */

static char *member_key(const struct etcd *e, const char *service, uint64_t lease)
{
	char *key = NULL;

	if (asprintf(&key, "%s%s/%016" PRIx64, e->url.prefix, service, lease) < 0)
		return NULL;
	return key;
}

static char *record_text(const struct etcd *e, const char *endpoint,
                         const struct rdmx_registry_kv *meta, size_t n_meta, uint32_t ttl_ms,
                         const char *state)
{
	json_t *o = json_object(), *m = json_object();
	char *text = NULL;

	if (o && m) {
		for (size_t i = 0; i < n_meta; i++)
			json_object_set_new(m, meta[i].key, json_string(meta[i].value));
		json_object_set_new(o, "endpoint", json_string(endpoint));
		json_object_set_new(o, "owner", json_string(e->owner));
		json_object_set_new(o, "ttl_ms", json_integer(ttl_ms));
		json_object_set(o, "meta", m);
		json_object_set_new(o, "state", json_string(state));
		text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	}
	json_decref(m);
	json_decref(o);
	return text;
}

/* A member from its key and record; RDMX_E_PROTOCOL for a record that is
 * not ours or not valid. *leaving tells the record's state. */
static int parse_member(const struct etcd *e, const char *key, const char *value,
                        struct rdmx_registry_member *m, bool *leaving)
{
	size_t plen = strlen(e->url.prefix);
	const char *rest = key + plen, *slash;
	struct rdmx_registry_member tmp = {0};
	struct rdmx_registry_kv kv[RDMX_REGISTRY_MAX_META];
	char service[RDMX_REGISTRY_MAX_SERVICE + 1];
	json_t *r, *meta;
	const char *mk, *state;
	json_t *mv;
	char *end;
	size_t n = 0;
	int ret;

	if (strncmp(key, e->url.prefix, plen) || !(slash = strchr(rest, '/')) ||
	    (size_t)(slash - rest) > RDMX_REGISTRY_MAX_SERVICE)
		return RDMX_E_PROTOCOL;
	memcpy(service, rest, (size_t)(slash - rest));
	service[slash - rest] = '\0';
	tmp.id = strtoull(slash + 1, &end, 16);
	if (!rdmx__reg_valid_service(service) || *end || !tmp.id)
		return RDMX_E_PROTOCOL;
	tmp.service = service;
	r = value ? json_loads(value, JSON_REJECT_DUPLICATES, NULL) : NULL;
	if (!json_is_object(r)) {
		json_decref(r);
		return RDMX_E_PROTOCOL;
	}
	tmp.endpoint = json_string_value(json_object_get(r, "endpoint"));
	tmp.owner = json_string_value(json_object_get(r, "owner"));
	tmp.ttl_ms = (uint32_t)json_integer_value(json_object_get(r, "ttl_ms"));
	tmp.expires_in_ms = tmp.ttl_ms;
	state = json_string_value(json_object_get(r, "state"));
	meta = json_object_get(r, "meta");
	ret = rdmx__reg_valid_endpoint(tmp.endpoint) ? RDMX_OK : RDMX_E_PROTOCOL;
	json_object_foreach(meta, mk, mv)
	{
		if (n == RDMX_REGISTRY_MAX_META || !rdmx__reg_valid_meta_key(mk) ||
		    !rdmx__reg_valid_meta_value(json_string_value(mv))) {
			ret = RDMX_E_PROTOCOL;
			break;
		}
		kv[n].key = mk;
		kv[n].value = json_string_value(mv);
		n++;
	}
	tmp.meta = kv;
	tmp.n_meta = n;
	if (!tmp.owner)
		tmp.owner = "-";
	if (!ret)
		ret = rdmx__reg_member_copy(m, &tmp);
	if (leaving)
		*leaving = state && strcmp(state, "leaving") == 0;
	json_decref(r);
	return ret;
}

/* A kv of the gateway ({"key":b64,"value":b64,...}) as a member. */
static int kv_member(const struct etcd *e, json_t *kv, struct rdmx_registry_member *m,
                     bool *leaving)
{
	const char *k64 = json_string_value(json_object_get(kv, "key"));
	const char *v64 = json_string_value(json_object_get(kv, "value"));
	char *key = k64 ? b64_decode(k64, NULL) : NULL;
	char *value = v64 ? b64_decode(v64, NULL) : NULL;
	int ret = key ? parse_member(e, key, value, m, leaving) : RDMX_E_PROTOCOL;

	free(key);
	free(value);
	return ret;
}

/* ---- ops ---- */

static int remember(struct etcd *e, uint64_t lease, char *key, char *leaving)
{
	struct joined *j = realloc(e->joined, (e->n_joined + 1) * sizeof(*j));

	if (!j)
		return RDMX_E_NOMEM;
	e->joined = j;
	j[e->n_joined].lease = lease;
	j[e->n_joined].key = key;
	j[e->n_joined].leaving = leaving;
	e->n_joined++;
	return RDMX_OK;
}

static void forget(struct etcd *e, size_t i)
{
	free(e->joined[i].key);
	free(e->joined[i].leaving);
	e->joined[i] = e->joined[--e->n_joined];
}

static int put_record(struct etcd *e, const char *key, const char *value, uint64_t lease)
{
	json_t *body = json_object(), *r = NULL;
	char id[24];
	int ret;

	if (!body)
		return RDMX_E_NOMEM;
	snprintf(id, sizeof(id), "%" PRId64, (int64_t)lease);
	ret = set_b64(body, "key", key);
	if (!ret)
		ret = set_b64(body, "value", value);
	if (!ret)
		json_object_set_new(body, "lease", json_string(id));
	if (!ret)
		ret = post(e, "/v3/kv/put", body, &r);
	json_decref(body);
	json_decref(r);
	return ret;
}

static int lease_call(struct etcd *e, const char *path, uint64_t lease, json_t **reply)
{
	json_t *body = json_object();
	char id[24];
	int ret;

	if (!body)
		return RDMX_E_NOMEM;
	snprintf(id, sizeof(id), "%" PRId64, (int64_t)lease);
	json_object_set_new(body, "ID", json_string(id));
	ret = post(e, path, body, reply);
	json_decref(body);
	return ret;
}

static int etcd_join(void *b, const char *service, const char *endpoint,
                     const struct rdmx_registry_kv *meta, size_t n_meta, uint32_t ttl_ms,
                     uint64_t *member_id, uint32_t *granted_ms)
{
	struct etcd *e = b;
	json_t *body = json_object(), *r = NULL;
	char *key = NULL, *up = NULL, *leaving = NULL;
	int64_t lease, ttl_s;
	uint32_t granted;
	int ret;

	if (!body)
		return RDMX_E_NOMEM;
	if (!ttl_ms)
		ttl_ms = DEFAULT_TTL_MS;
	json_object_set_new(body, "TTL", json_integer((ttl_ms + 999) / 1000));
	ret = post(e, "/v3/lease/grant", body, &r);
	json_decref(body);
	if (ret)
		return ret;
	lease = json_i64(json_object_get(r, "ID"));
	ttl_s = json_i64(json_object_get(r, "TTL"));
	json_decref(r);
	if (lease <= 0 || ttl_s <= 0) {
		RDMX_SEC_ERR("registry: etcd granted lease %" PRId64 " of %" PRId64 " s", lease,
		             ttl_s);
		return RDMX_E_PROTOCOL;
	}
	granted = ttl_s > UINT32_MAX / 1000 ? UINT32_MAX : (uint32_t)ttl_s * 1000;
	key = member_key(e, service, (uint64_t)lease);
	up = record_text(e, endpoint, meta, n_meta, granted, "up");
	leaving = record_text(e, endpoint, meta, n_meta, granted, "leaving");
	ret = key && up && leaving ? put_record(e, key, up, (uint64_t)lease) : RDMX_E_NOMEM;
	if (!ret)
		ret = remember(e, (uint64_t)lease, key, leaving);
	free(up);
	if (ret) {
		free(key);
		free(leaving);
		lease_call(e, "/v3/lease/revoke", (uint64_t)lease, &r);
		json_decref(r);
		return ret;
	}
	*member_id = (uint64_t)lease;
	if (granted_ms)
		*granted_ms = granted;
	return RDMX_OK;
}

static int etcd_heartbeat(void *b, uint64_t member_id)
{
	struct etcd *e = b;
	json_t *r = NULL;
	int ret = lease_call(e, "/v3/lease/keepalive", member_id, &r);

	if (!ret && json_i64(json_object_get(r, "TTL")) <= 0)
		ret = RDMX_E_NOT_FOUND;
	json_decref(r);
	if (ret == RDMX_E_NOT_FOUND) {
		for (size_t i = 0; i < e->n_joined; i++)
			if (e->joined[i].lease == member_id) {
				forget(e, i);
				break;
			}
	}
	return ret;
}

static int etcd_leave(void *b, uint64_t member_id)
{
	struct etcd *e = b;
	json_t *r = NULL;
	int ret;

	for (size_t i = 0; i < e->n_joined; i++)
		if (e->joined[i].lease == member_id) {
			/* best effort: without it the watchers see an expiry */
			put_record(e, e->joined[i].key, e->joined[i].leaving, member_id);
			forget(e, i);
			break;
		}
	ret = lease_call(e, "/v3/lease/revoke", member_id, &r);
	json_decref(r);
	return ret;
}

static int etcd_lookup(void *b, const char *service, struct rdmx_registry_members **out)
{
	struct etcd *e = b;
	json_t *body = json_object(), *r = NULL, *kvs;
	struct rdmx_registry_members *ms;
	char *key = NULL, *end;
	size_t i;
	int ret;

	if (!body)
		return RDMX_E_NOMEM;
	if (asprintf(&key, "%s%s%s", e->url.prefix, service ? service : "", service ? "/" : "") <
	    0) {
		json_decref(body);
		return RDMX_E_NOMEM;
	}
	end = range_end(key);
	ret = end ? set_b64(body, "key", key) : RDMX_E_NOMEM;
	if (!ret)
		ret = set_b64(body, "range_end", end);
	free(key);
	free(end);
	if (!ret)
		ret = post(e, "/v3/kv/range", body, &r);
	json_decref(body);
	if (ret)
		return ret;
	kvs = json_object_get(r, "kvs");
	ms = calloc(1, sizeof(*ms));
	if (ms)
		ms->items = calloc(json_array_size(kvs) + 1, sizeof(*ms->items));
	if (!ms || !ms->items) {
		free(ms);
		json_decref(r);
		return RDMX_E_NOMEM;
	}
	json_array_foreach(kvs, i, body)
	{
		ret = kv_member(e, body, &ms->items[ms->count], NULL);
		if (ret == RDMX_E_NOMEM)
			break;
		if (ret) {
			RDMX_SEC_WARN(
			    "registry: etcd holds a record under %s that is not a member; "
			    "skipped",
			    e->url.prefix);
			ret = RDMX_OK;
			continue;
		}
		ms->count++;
	}
	json_decref(r);
	if (ret) {
		rdmx_registry_members_free(&ms);
		return ret;
	}
	*out = ms;
	return RDMX_OK;
}

/* ---- watch ---- */

static void watch_drop(struct etcd *e)
{
	if (e->wh) {
		curl_multi_remove_handle(e->multi, e->wh);
		curl_easy_cleanup(e->wh);
		e->wh = NULL;
	}
	curl_slist_free_all(e->wheaders);
	e->wheaders = NULL;
	buf_reset(&e->wbuf);
}

static int watch_start(struct etcd *e)
{
	json_t *body = json_object(), *create = json_object();
	char url[RDMX__REG_URL_MAX_HOST + 64];
	char *text = NULL;
	int ret = body && create ? RDMX_OK : RDMX_E_NOMEM;

	if (!ret)
		ret = set_b64(create, "key", e->watch_key);
	if (!ret)
		ret = set_b64(create, "range_end", e->watch_end);
	if (!ret) {
		char rev[24];

		json_object_set_new(create, "prev_kv", json_true());
		if (e->last_rev) {
			snprintf(rev, sizeof(rev), "%" PRId64, e->last_rev + 1);
			json_object_set_new(create, "start_revision", json_string(rev));
		}
		json_object_set(body, "create_request", create);
		text = json_dumps(body, JSON_COMPACT);
	}
	json_decref(create);
	json_decref(body);
	if (ret || !text) {
		free(text);
		return RDMX_E_NOMEM;
	}
	e->wh = curl_easy_init();
	if (!e->wh) {
		free(text);
		return RDMX_E_NOMEM;
	}
	setup_handle(e, e->wh);
	endpoint_url(e, e->cur, "/v3/watch", url, sizeof(url));
	curl_easy_setopt(e->wh, CURLOPT_URL, url);
	curl_easy_setopt(e->wh, CURLOPT_COPYPOSTFIELDS, text);
	curl_easy_setopt(e->wh, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
	curl_easy_setopt(e->wh, CURLOPT_WRITEFUNCTION, buf_write);
	curl_easy_setopt(e->wh, CURLOPT_WRITEDATA, &e->wbuf);
	if (*e->token) {
		/* its own copy: a new token must not free the list of a running
		 * transfer */
		char line[600];

		snprintf(line, sizeof(line), "Authorization: %s", e->token);
		e->wheaders = curl_slist_append(NULL, line);
		OPENSSL_cleanse(line, sizeof(line));
		curl_easy_setopt(e->wh, CURLOPT_HTTPHEADER, e->wheaders);
	}
	free(text);
	buf_reset(&e->wbuf);
	if (curl_multi_add_handle(e->multi, e->wh) != CURLM_OK) {
		curl_easy_cleanup(e->wh);
		e->wh = NULL;
		return RDMX_E_NOMEM;
	}
	return RDMX_OK;
}

static void queue_event(struct etcd *e, struct rdmx_registry_client *c,
                        enum rdmx_registry_event_type type, struct rdmx_registry_member *m)
{
	struct rdmx_registry_event *ev = calloc(1, sizeof(*ev));

	(void)e;
	if (!ev) {
		rdmx__reg_member_fini(m);
		return;
	}
	ev->type = type;
	ev->member = *m;
	rdmx__reg_client_enqueue(c, ev);
}

static void watch_event(struct etcd *e, struct rdmx_registry_client *c, json_t *ev)
{
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_t *kv = json_object_get(ev, "kv"), *prev = json_object_get(ev, "prev_kv");
	struct rdmx_registry_member m = {0};
	int64_t rev = json_i64(json_object_get(kv, "mod_revision"));
	bool leaving = false;

	if (rev > e->last_rev)
		e->last_rev = rev;
	if (!type || strcmp(type, "PUT") == 0) {
		if (prev || kv_member(e, kv, &m, &leaving))
			return; /* a record rewritten (leaving), or not a member */
		if (leaving) {
			rdmx__reg_member_fini(&m);
			return;
		}
		queue_event(e, c, RDMX_REGISTRY_JOINED, &m);
		return;
	}
	if (strcmp(type, "DELETE") == 0 && prev && !kv_member(e, prev, &m, &leaving))
		queue_event(e, c, leaving ? RDMX_REGISTRY_LEFT : RDMX_REGISTRY_EXPIRED, &m);
}

/* One message of the stream. */
static void watch_message(struct etcd *e, struct rdmx_registry_client *c, json_t *msg)
{
	json_t *res = json_object_get(msg, "result"), *events, *ev;
	int64_t code;
	const char *text;
	size_t i;

	if (reply_error(msg, &code, &text)) {
		char peer[201];

		RDMX_SEC_WARN("registry: etcd watch: %s",
		              rdmx__log_escape(text, strlen(text), peer, sizeof(peer)));
		return;
	}
	if (!json_is_object(res))
		return;
	if (json_is_true(json_object_get(res, "canceled"))) {
		int64_t compact = json_i64(json_object_get(res, "compact_revision"));

		RDMX_SEC_WARN("registry: etcd canceled the watch (compacted at revision %" PRId64
		              "): events since %" PRId64 " are lost, watching from now on",
		              compact, e->last_rev);
		e->last_rev = 0;
		watch_drop(e);
		return;
	}
	if (json_is_true(json_object_get(res, "created")) && !e->last_rev)
		e->last_rev = json_i64(json_object_get(json_object_get(res, "header"), "revision"));
	events = json_object_get(res, "events");
	json_array_foreach(events, i, ev) watch_event(e, c, ev);
}

static void watch_parse(struct etcd *e, struct rdmx_registry_client *c)
{
	size_t off = 0;

	while (e->wh && off < e->wbuf.len) {
		json_error_t jerr;
		json_t *msg;

		while (off < e->wbuf.len && (e->wbuf.data[off] == '\n' ||
		                             e->wbuf.data[off] == '\r' || e->wbuf.data[off] == ' '))
			off++;
		if (off == e->wbuf.len)
			break;
		msg = json_loadb(e->wbuf.data + off, e->wbuf.len - off, JSON_DISABLE_EOF_CHECK,
		                 &jerr);
		if (!msg)
			break; /* not whole yet */
		off += (size_t)jerr.position;
		watch_message(e, c, msg);
		json_decref(msg);
	}
	if (e->wh && off) {
		memmove(e->wbuf.data, e->wbuf.data + off, e->wbuf.len - off);
		e->wbuf.len -= off;
		e->wbuf.data[e->wbuf.len] = '\0';
	}
}

static void watch_lost(struct etcd *e, const char *why)
{
	const struct rdmx__reg_url_endpoint *ep = &e->url.ep[e->cur];

	if (!e->said_lost)
		RDMX_SEC_WARN("registry: etcd watch on %s:%u ended (%s); resuming from revision "
		              "%" PRId64 " on the next member",
		              ep->host, ep->port, why, e->last_rev + 1);
	e->said_lost = true;
	watch_drop(e);
	e->cur = (e->cur + 1) % e->url.n;
	e->retry_at = (int64_t)rdmx__now_ms() + jitter(e->backoff_ms);
	e->backoff_ms =
	    e->backoff_ms >= WATCH_BACKOFF_MAX_MS / 2 ? WATCH_BACKOFF_MAX_MS : e->backoff_ms * 2;
}

static int etcd_watch(void *b, const char *service)
{
	struct etcd *e = b;
	json_t *body, *r = NULL;
	char *key = NULL;
	int ret;

	watch_drop(e);
	e->watching = false;
	free(e->watch_key);
	free(e->watch_end);
	e->watch_key = e->watch_end = NULL;
	if (asprintf(&key, "%s%s%s", e->url.prefix, service ? service : "", service ? "/" : "") < 0)
		return RDMX_E_NOMEM;
	e->watch_key = key;
	e->watch_end = range_end(key);
	if (!e->watch_end)
		return RDMX_E_NOMEM;
	if (!e->multi) {
		e->multi = curl_multi_init();
		if (!e->multi)
			return RDMX_E_NOMEM;
	}
	e->watching = false;
	e->backoff_ms = WATCH_BACKOFF_MIN_MS;
	e->retry_at = 0;
	/* the current revision, so that a stream (re)made later misses nothing
	 * from the moment watch returned */
	body = json_object();
	ret = body ? set_b64(body, "key", e->watch_key) : RDMX_E_NOMEM;
	if (!ret) {
		json_object_set_new(body, "limit", json_integer(1));
		json_object_set_new(body, "keys_only", json_true());
		ret = post(e, "/v3/kv/range", body, &r);
	}
	json_decref(body);
	if (ret)
		return ret;
	e->last_rev = json_i64(json_object_get(json_object_get(r, "header"), "revision"));
	json_decref(r);
	e->watching = true;
	return watch_start(e);
}

static int etcd_wait_events(void *b, struct rdmx_registry_client *c, int timeout_ms)
{
	struct etcd *e = b;
	int64_t deadline = (int64_t)rdmx__now_ms() + timeout_ms;

	if (!e->watching)
		return RDMX_E_BAD_STATE;
	for (;;) {
		int running = 0, left, wait;
		size_t before = e->wbuf.len;
		CURLMsg *msg;
		int n;

		if (!e->wh && (int64_t)rdmx__now_ms() >= e->retry_at && watch_start(e))
			return RDMX_E_NOMEM;
		if (e->wh) {
			curl_multi_perform(e->multi, &running);
			if (e->wbuf.len != before || e->wbuf.len) {
				bool had = e->said_lost;

				watch_parse(e, c);
				if (e->wbuf.len < before || e->wbuf.len == 0) {
					e->backoff_ms = WATCH_BACKOFF_MIN_MS;
					e->said_lost = false;
					if (had)
						RDMX_SEC_WARN(
						    "registry: etcd watch resumed on %s:%u",
						    e->url.ep[e->cur].host, e->url.ep[e->cur].port);
				}
			}
			while ((msg = curl_multi_info_read(e->multi, &n)))
				if (msg->msg == CURLMSG_DONE && msg->easy_handle == e->wh) {
					watch_lost(e, e->wbuf.overflow
					                  ? "message too large"
					                  : curl_easy_strerror(msg->data.result));
					break;
				}
		}
		if (rdmx__reg_client_pending(c))
			return RDMX_OK;
		left = (int)(deadline - (int64_t)rdmx__now_ms());
		if (left <= 0)
			return RDMX_E_TIMEDOUT;
		wait = left;
		if (!e->wh) {
			int64_t until = e->retry_at - (int64_t)rdmx__now_ms();

			if (until < wait)
				wait = until < 1 ? 1 : (int)until;
		}
		if (wait > 100)
			wait = 100;
		curl_multi_poll(e->multi, NULL, 0, wait, NULL);
	}
}

static void etcd_set_timeout(void *b, int timeout_ms)
{
	((struct etcd *)b)->timeout_ms = timeout_ms;
}

static const char *etcd_last_error(const void *b)
{
	return ((const struct etcd *)b)->last_error;
}

static void etcd_destroy(void *b)
{
	struct etcd *e = b;

	if (!e)
		return;
	watch_drop(e);
	if (e->cfg)
		rdmx__tls_config_unref(e->cfg);
	if (e->multi)
		curl_multi_cleanup(e->multi);
	if (e->req)
		curl_easy_cleanup(e->req);
	while (e->n_joined)
		forget(e, 0);
	curl_slist_free_all(e->headers);
	OPENSSL_cleanse(e->password, sizeof(e->password));
	OPENSSL_cleanse(e->token, sizeof(e->token));
	free(e->joined);
	free(e->rbuf.data);
	free(e->wbuf.data);
	free(e->watch_key);
	free(e->watch_end);
	free(e);
}

const struct rdmx__reg_ops rdmx__reg_etcd_ops = {
    .join = etcd_join,
    .heartbeat = etcd_heartbeat,
    .leave = etcd_leave,
    .lookup = etcd_lookup,
    .watch = etcd_watch,
    .wait_events = etcd_wait_events,
    .set_timeout = etcd_set_timeout,
    .last_error = etcd_last_error,
    .destroy = etcd_destroy,
};

int rdmx__reg_etcd_create(const struct rdmx__reg_url *url, struct rdmx_tls_config *cfg,
                          int timeout_ms, void **out)
{
	struct etcd *e;
	int ret;

	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK) {
		RDMX_SEC_ERR("registry: libcurl did not start: %s",
		             curl_easy_strerror(curl_init_rc));
		return RDMX_E_PROVIDER;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return RDMX_E_NOMEM;
	e->url = *url;
	e->timeout_ms = timeout_ms;
	if (*url->user) {
		const char *pw = getenv("RDMX_ETCD_PASSWORD");

		if (!pw || strlen(pw) > RDMX__REG_URL_MAX_PASSWORD) {
			RDMX_SEC_ERR(
			    "registry: etcd user %s: set its password in RDMX_ETCD_PASSWORD "
			    "(at most %u bytes)",
			    url->user, RDMX__REG_URL_MAX_PASSWORD);
			free(e);
			return RDMX_E_INVAL;
		}
		snprintf(e->password, sizeof(e->password), "%s", pw);
	}
	e->rbuf.max = MAX_REPLY;
	e->wbuf.max = MAX_WATCH_BUF;
	if (cfg) {
		ret = rdmx__tls_config_ssl_ctx(cfg, RDMX_TLS_CLIENT, &e->tls);
		if (ret) {
			free(e);
			return ret;
		}
		rdmx__tls_config_ref(cfg);
		e->cfg = cfg;
	}
	read_owner(e->tls, e->owner, sizeof(e->owner));
	e->req = curl_easy_init();
	if (!e->req) {
		etcd_destroy(e);
		return RDMX_E_NOMEM;
	}
	setup_handle(e, e->req);
	curl_easy_setopt(e->req, CURLOPT_WRITEFUNCTION, buf_write);
	curl_easy_setopt(e->req, CURLOPT_WRITEDATA, &e->rbuf);
	*out = e;
	return RDMX_OK;
}
