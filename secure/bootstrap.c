/* rdmx bootstrap: hello + engine details + app data over mutual TLS, then
 * the TLS session as liveness channel (see rdmx/bootstrap.h).
 *
 * Wire (version 3): one rdmx__wire.BootstrapMsg per TLS frame
 * (secure/proto/bootstrap.proto, carried by the codec rdmx-gen generates
 * from it; fields by name below), server speaks first:
 *   1. server: {rdmx:"bootstrap", versions:[u16], name, provider}
 *      sent once its TLS layer has accepted the client's certificate; no
 *      secret in it.
 *   2. client: {rdmx:"bootstrap", version, name, provider, data: sealed|plaintext,
 *               details, app}
 *      only once 1 arrived and names its version and provider; else
 *      {status, error} and nothing else.
 *   3. server: {version, details, app}
 *          or {status, error}
 * A frame that does not decode (an older version's, or garbage) is refused
 * as "no common bootstrap version ... or a malformed hello".
 * A TLS 1.3 client finishes its handshake before the server has judged its
 * certificate: frame 1 is its proof of acceptance, so nothing secret leaves
 * the client before it. Frames after the exchange are reserved for control
 * messages and ignored.
 *
 * Data plane: unless the config asks for plaintext (both ends must agree:
 * "data" in frame 2, checked by the server), each side derives the engine
 * connection's keys from this TLS session with the TLS 1.3 exporter (label
 * RDMX_DATA_LABEL: client-to-server key and IV, then server-to-client) and
 * installs them between export and connect, so the provider's first frame
 * (its hello, with the connection tokens) is already sealed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <openssl/crypto.h>

#include <rdmx/bootstrap.h>
#include <rdmx/ctx.h>
#include <rdmx/dev.h>

#include <rdmx/codec.h>

#include "bootstrap.rdmx.h"
#include "bootstrap_internal.h"
#include "tls_internal.h"
#include "common/clock.h"

#define MAX_VERSIONS 8
#define MAX_PROVIDER 16
#define MAX_ERROR 256
/* a peer's error text in the log, escaped: plain printable text whole
 * (backslashes double: 150 of them fill it), a hostile one (every byte
 * \xNN) cut */
#define LOGGED_ERROR 300
#define RDMX_DATA_LABEL "EXPORTER-rdmx-data-plane-v1"
#define ONCE_PLAINTEXT 0u
#define ONCE_UNSEALED 1u

struct rdmx_bootstrap {
	struct rdmx_ctx *ctx;
	struct rdmx_tls_conn *tls;
	struct rdmx_conn *conn; /* NULL before export and once gone */
	int lost;               /* sticky reason once the channel is lost */
	void *user_data;

	char hello_name[RDMX_BOOTSTRAP_MAX_NAME + 1];
	void *peer_data;
	size_t peer_len;

	void (*hook)(struct rdmx_bootstrap *b, void *arg);
	void *hook_arg;
};

/* What a frame carries, decoded and checked (pointers into the frame). */
struct hello {
	uint32_t versions[MAX_VERSIONS];
	size_t n_versions;
	uint32_t version;
	int has_version, is_hello; /* is_hello: "rdmx":"bootstrap" */
	const char *name, *provider, *error;
	size_t name_len, provider_len, error_len;
	const void *details, *app;
	size_t details_len, app_len;
	int data_plaintext; /* "data":"plaintext" (absent: sealed) */
	int has_data;
	int status, has_status;
};

/* ---- object ---- */

int rdmx__bootstrap_create(struct rdmx_ctx *ctx, struct rdmx_tls_conn *tls,
                           struct rdmx_bootstrap **out)
{
	struct rdmx_bootstrap *b = calloc(1, sizeof(*b));
	int fd, on = 1, idle = 10, intvl = 5, cnt = 3;

	if (!b)
		return RDMX_E_NOMEM;
	b->ctx = ctx;
	b->tls = tls;
	/* silent peer death: about idle + intvl * cnt = 25 s */
	rdmx_tls_conn_get_fd(tls, &fd);
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	*out = b;
	return RDMX_OK;
}

void rdmx__bootstrap_set_hook(struct rdmx_bootstrap *b,
                              void (*hook)(struct rdmx_bootstrap *, void *), void *arg)
{
	b->hook = hook;
	b->hook_arg = arg;
}

struct rdmx_tls_conn *rdmx__bootstrap_tls(const struct rdmx_bootstrap *b)
{
	return b->tls;
}

/* Lets go of the engine connection. Its user data, when it names this
 * bootstrap, is cleared: the disconnected callback still to come must not
 * see a bootstrap that may be freed by then. */
static void drop_conn(struct rdmx_bootstrap *b)
{
	void *ud = NULL;

	if (!b->conn)
		return;
	if (rdmx_conn_get_user_data(b->conn, &ud) == 0 && ud == b)
		rdmx_conn_set_user_data(b->conn, NULL);
	rdmx_conn_disconnect(b->conn);
	b->conn = NULL;
}

int rdmx_bootstrap_destroy(struct rdmx_bootstrap **bp)
{
	struct rdmx_bootstrap *b;

	if (!bp || !*bp)
		return RDMX_OK;
	b = *bp;
	if (b->hook)
		b->hook(b, b->hook_arg);
	drop_conn(b);
	rdmx_tls_conn_destroy(&b->tls);
	free(b->peer_data);
	free(b);
	*bp = NULL;
	return RDMX_OK;
}

int rdmx_bootstrap_conn_gone(struct rdmx_bootstrap *b)
{
	if (!b)
		return RDMX_E_INVAL;
	b->conn = NULL;
	return RDMX_OK;
}

int rdmx__bootstrap_lost(struct rdmx_bootstrap *b, int reason)
{
	if (!b->lost) {
		const char *peer = "unknown";

		rdmx_tls_conn_get_peer_addr(b->tls, &peer);
		/* a peer that closes its session is an ordinary end, not a fault */
		if (reason == RDMX_E_DISCONNECTED)
			RDMX_SEC_INFO("bootstrap: control channel to %s closed by the peer: "
			              "disconnecting the RDMA connection",
			              peer);
		else
			RDMX_SEC_WARN("bootstrap: control channel to %s lost (%s): disconnecting "
			              "the RDMA connection",
			              peer, rdmx_strerror(reason));
		b->lost = reason;
		drop_conn(b);
	}
	return b->lost;
}

int rdmx_bootstrap_check_wants(struct rdmx_bootstrap *b, int *wants)
{
	const void *frame;
	size_t len;
	int ret;

	if (!b || !wants)
		return RDMX_E_INVAL;
	if (b->lost)
		return b->lost;
	/* bounded: frames are ignored, at most a few per check */
	for (int i = 0; i < 16; i++) {
		ret = rdmx__tls_conn_step(b->tls, &frame, &len);
		if (ret > 0) {
			*wants = ret;
			return RDMX_OK;
		}
		if (ret < 0)
			return rdmx__bootstrap_lost(b, ret);
	}
	/* a full batch: records may wait inside the TLS layer, where no fd
	 * shows them; wanting write too brings a waiter straight back */
	*wants = RDMX_TLS_WANT_READ | RDMX_TLS_WANT_WRITE;
	return RDMX_OK;
}

int rdmx_bootstrap_check(struct rdmx_bootstrap *b)
{
	int wants;

	return rdmx_bootstrap_check_wants(b, &wants);
}

int rdmx_bootstrap_get_conn(const struct rdmx_bootstrap *b, struct rdmx_conn **conn)
{
	if (!b || !conn)
		return RDMX_E_INVAL;
	if (!b->conn)
		return RDMX_E_BAD_STATE;
	*conn = b->conn;
	return RDMX_OK;
}

int rdmx_bootstrap_get_peer_data(const struct rdmx_bootstrap *b, const void **data, size_t *len)
{
	if (!b || !data || !len)
		return RDMX_E_INVAL;
	*data = b->peer_data;
	*len = b->peer_len;
	return RDMX_OK;
}

int rdmx_bootstrap_get_peer_names(const struct rdmx_bootstrap *b, const char **cert_name,
                                  const char **hello_name)
{
	if (!b || !cert_name || !hello_name)
		return RDMX_E_INVAL;
	if (rdmx_tls_conn_get_peer_name(b->tls, cert_name))
		return RDMX_E_BAD_STATE;
	*hello_name = b->hello_name;
	return RDMX_OK;
}

int rdmx_bootstrap_get_fd(const struct rdmx_bootstrap *b, int *fd)
{
	if (!b || !fd)
		return RDMX_E_INVAL;
	return rdmx_tls_conn_get_fd(b->tls, fd);
}

int rdmx_bootstrap_set_user_data(struct rdmx_bootstrap *b, void *user_data)
{
	if (!b)
		return RDMX_E_INVAL;
	b->user_data = user_data;
	return RDMX_OK;
}

int rdmx_bootstrap_get_user_data(const struct rdmx_bootstrap *b, void **user_data)
{
	if (!b || !user_data)
		return RDMX_E_INVAL;
	*user_data = b->user_data;
	return RDMX_OK;
}

/* ---- wire ---- */

/* Encodes m into a malloc'd buffer: 0 or RDMX_E_NOMEM. */
static int encode_msg(const rdmx__wire_BootstrapMsg *m, void **buf, size_t *len)
{
	size_t n = rdmx__wire_BootstrapMsg_encoded_size(m);
	void *p = malloc(n);

	if (!p)
		return RDMX_E_NOMEM;
	if (rdmx__wire_BootstrapMsg_encode(m, p, n)) {
		free(p);
		return RDMX_E_NOMEM;
	}
	*buf = p;
	*len = n;
	return RDMX_OK;
}

/* Queues m on the TLS connection (written as far as the socket takes it),
 * or, with timeout_ms > 0, waits until it is written. */
static int send_msg(struct rdmx_bootstrap *b, const rdmx__wire_BootstrapMsg *m, int timeout_ms)
{
	void *buf;
	size_t len;
	int ret = encode_msg(m, &buf, &len);

	if (ret)
		return ret;
	ret = timeout_ms > 0 ? rdmx_tls_conn_send_wait(b->tls, buf, len, timeout_ms)
	                     : rdmx_tls_conn_send(b->tls, buf, len);
	free(buf);
	return ret;
}

static struct rdmx_bytes bytes_of(const void *p, size_t n)
{
	return rdmx_bytes_n(n ? p : NULL, n);
}

static int valid_name(const char *s, size_t n)
{
	if (n > RDMX_BOOTSTRAP_MAX_NAME)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

#define BAD(...) (snprintf(why, why_len, __VA_ARGS__), RDMX_E_PROTOCOL)

static int get_str(struct rdmx_str v, size_t max, const char **s, size_t *n, char *why,
                   size_t why_len, const char *field)
{
	if (v.len > max || (v.len && memchr(v.data, '\0', v.len)))
		return BAD("field '%s' is not a string of at most %zu bytes", field, max);
	*s = v.len ? v.data : NULL;
	*n = v.len;
	return RDMX_OK;
}

static int get_bin(struct rdmx_bytes v, size_t max, const void **p, size_t *n, char *why,
                   size_t why_len, const char *field)
{
	if (v.len > max)
		return BAD("field '%s' is not binary of at most %zu bytes", field, max);
	*p = v.len ? v.data : NULL;
	*n = v.len;
	return RDMX_OK;
}

/* Decodes frame[len] into *h: the generated decoder bounds the msgpack
 * (lengths and counts against the bytes left, depth, trailing bytes, types;
 * its arena is capped, so a long versions array is refused before it is
 * stored), then each field is checked here. Pointers into frame. */
static int decode_hello(const void *buf, size_t len, struct hello *h, char *why, size_t why_len)
{
	_Alignas(8) unsigned char mem[256];
	const struct rdmx_decode_opts opts = {.max_depth = 4, .max_alloc = sizeof(mem)};
	struct rdmx_arena arena;
	rdmx__wire_BootstrapMsg m;
	int ret;

	memset(h, 0, sizeof(*h));
	rdmx_arena_init(&arena, mem, sizeof(mem), sizeof(mem));
	ret = rdmx__wire_BootstrapMsg_decode(&m, buf, len, &arena, &opts);
	if (ret) {
		ret = BAD("no common bootstrap version (this side speaks %u), or a malformed "
		          "hello (%s)",
		          RDMX_BOOTSTRAP_VERSION, rdmx_err_name(ret));
		goto out;
	}
	if (m.rdmx.len) {
		h->is_hello = rdmx_str_eq(m.rdmx, "bootstrap");
		if (!h->is_hello) {
			ret = BAD("not an rdmx bootstrap hello");
			goto out;
		}
	}
	if (m.n_versions > MAX_VERSIONS) {
		ret = BAD("field 'versions' is not a short array");
		goto out;
	}
	for (size_t j = 0; j < m.n_versions; j++) {
		if (m.versions[j] > 0xffff) {
			ret = BAD("field 'versions' holds a non-version");
			goto out;
		}
		h->versions[h->n_versions++] = m.versions[j];
	}
	if (m.version > 0xffff) {
		ret = BAD("field 'version' is not a version");
		goto out;
	}
	h->version = m.version;
	h->has_version = m.version != 0;
	ret =
	    get_str(m.name, RDMX_BOOTSTRAP_MAX_NAME, &h->name, &h->name_len, why, why_len, "name");
	if (!ret && !valid_name(m.name.data, m.name.len))
		ret = BAD("field 'name' has characters not allowed");
	if (!ret)
		ret = get_str(m.provider, MAX_PROVIDER, &h->provider, &h->provider_len, why,
		              why_len, "provider");
	if (!ret)
		ret = get_bin(m.details, RDMX_BOOTSTRAP_MAX_DETAILS, &h->details, &h->details_len,
		              why, why_len, "details");
	if (!ret)
		ret = get_bin(m.app, RDMX_BOOTSTRAP_MAX_APP_DATA, &h->app, &h->app_len, why,
		              why_len, "app");
	if (!ret)
		ret = get_str(m.error, MAX_ERROR, &h->error, &h->error_len, why, why_len, "error");
	if (!ret && (m.status > 0 || m.status < -1000))
		ret = BAD("field 'status' is not an error code");
	if (!ret && m.data != rdmx__wire_DataPlane_DATA_SEALED &&
	    m.data != rdmx__wire_DataPlane_DATA_PLAINTEXT)
		ret = BAD("field 'data' is neither sealed nor plaintext");
	if (!ret) {
		h->status = m.status;
		h->has_status = m.status != 0;
		h->data_plaintext = m.data == rdmx__wire_DataPlane_DATA_PLAINTEXT;
		h->has_data = 1;
	}
out:
	rdmx_arena_fini(&arena);
	return ret;
}

static const char *my_provider(const struct rdmx_bootstrap *b);

static bool data_plaintext(const struct rdmx_bootstrap *b)
{
	bool plain = false;

	rdmx_tls_config_get_data_plaintext(rdmx__tls_conn_config(b->tls), &plain);
	return plain;
}

/* Derives the engine connection's data-plane keys from the TLS session and
 * installs them (between export and connect), or logs why it does not. */
static int seal_conn(struct rdmx_bootstrap *b)
{
	struct rdmx_tls_config *cfg = rdmx__tls_conn_config(b->tls);
	uint8_t km[2 * (RDMX_CONN_KEY_SIZE + RDMX_CONN_IV_SIZE)];
	const uint8_t *c2s = km, *s2c = km + RDMX_CONN_KEY_SIZE + RDMX_CONN_IV_SIZE, *tx, *rx;
	struct rdmx_conn_keys k;
	int ret;

	if (data_plaintext(b)) {
		if (rdmx__tls_config_once(cfg, ONCE_PLAINTEXT))
			RDMX_SEC_WARN("bootstrap: data plane in plaintext (asked for by the "
			              "config): tokens, ring descriptors, remote keys and payloads "
			              "cross the network in the clear; trusted networks only");
		return 0;
	}
	ret = rdmx__tls_conn_export_keying(b->tls, RDMX_DATA_LABEL, km, sizeof(km));
	if (ret)
		return ret;
	tx = rdmx__tls_conn_role(b->tls) == RDMX_TLS_CLIENT ? c2s : s2c;
	rx = tx == c2s ? s2c : c2s;
	memcpy(k.tx_key, tx, RDMX_CONN_KEY_SIZE);
	memcpy(k.tx_iv, tx + RDMX_CONN_KEY_SIZE, RDMX_CONN_IV_SIZE);
	memcpy(k.rx_key, rx, RDMX_CONN_KEY_SIZE);
	memcpy(k.rx_iv, rx + RDMX_CONN_KEY_SIZE, RDMX_CONN_IV_SIZE);
	ret = rdmx_conn_set_data_keys(b->conn, &k);
	OPENSSL_cleanse(km, sizeof(km));
	OPENSSL_cleanse(&k, sizeof(k));
	if (ret == RDMX_E_NOT_SUPPORTED) {
		if (rdmx__tls_config_once(cfg, ONCE_UNSEALED))
			RDMX_SEC_WARN(
			    "bootstrap: the %s provider does not encrypt its data plane "
			    "(RoCE carries ring descriptors, remote keys and payloads in "
			    "the clear): protect the fabric (IPsec, MACsec) or use the tcp "
			    "provider",
			    my_provider(b) ? my_provider(b) : "?");
		return 0;
	}
	if (ret)
		RDMX_SEC_ERR("bootstrap: cannot seal the data connection: %s", rdmx_strerror(ret));
	return ret;
}

static void copy_name(char *dst, const char *src, size_t n)
{
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static int keep_peer_app(struct rdmx_bootstrap *b, const struct hello *h)
{
	if (h->app_len) {
		b->peer_data = malloc(h->app_len);
		if (!b->peer_data)
			return RDMX_E_NOMEM;
		memcpy(b->peer_data, h->app, h->app_len);
		b->peer_len = h->app_len;
	}
	return RDMX_OK;
}

static const char *my_provider(const struct rdmx_bootstrap *b)
{
	struct rdmx_dev *dev = NULL;

	if (rdmx_ctx_get_dev(b->ctx, &dev) == 0)
		return rdmx_dev_provider(dev);
	return NULL;
}

static int same_provider(const struct rdmx_bootstrap *b, const struct hello *h)
{
	const char *mine = my_provider(b);

	return mine && h->provider && strlen(mine) == h->provider_len &&
	       memcmp(mine, h->provider, h->provider_len) == 0;
}

/* {"status", "error"}: a refusal, either way. Queued (and written as far as
 * the socket takes it): the caller flushes or closes. */
static void send_error(struct rdmx_bootstrap *b, int status, const char *text)
{
	rdmx__wire_BootstrapMsg m;

	rdmx__wire_BootstrapMsg_init(&m);
	m.status = status;
	m.error = rdmx_str_c(text);
	send_msg(b, &m, 0);
}

/* ---- server side of the exchange (called by bootstrap_server.c) ---- */

static int refuse(struct rdmx_bootstrap *b, int status, const char *text)
{
	const char *peer = "unknown";

	rdmx_tls_conn_get_peer_addr(b->tls, &peer);
	RDMX_SEC_WARN("bootstrap: client %s refused: %s", peer, text);
	send_error(b, status, text);
	return status;
}

int rdmx__bootstrap_greet(struct rdmx_bootstrap *b, const char *my_name)
{
	const char *provider = my_provider(b);
	uint32_t version = RDMX_BOOTSTRAP_VERSION;
	rdmx__wire_BootstrapMsg m;

	rdmx__wire_BootstrapMsg_init(&m);
	m.rdmx = rdmx_str_c("bootstrap");
	m.n_versions = 1;
	m.versions = &version;
	m.name = rdmx_str_c(my_name ? my_name : "");
	m.provider = rdmx_str_c(provider ? provider : "?");
	return send_msg(b, &m, 0);
}

int rdmx__bootstrap_accept(struct rdmx_bootstrap *b, const void *frame, size_t len,
                           int (*decide)(struct rdmx_bootstrap *, const void **, size_t *, void *),
                           void *decide_arg)
{
	const char *provider = my_provider(b);
	rdmx__wire_BootstrapMsg m;
	struct hello h;
	const void *details, *reply = NULL;
	size_t details_len, reply_len = 0;
	char why[200];
	int ret;

	ret = decode_hello(frame, len, &h, why, sizeof(why));
	if (!ret && h.has_status) {
		/* the client did not like our hello: it says why, sends
		 * nothing else, and gets nothing */
		const char *peer = "unknown";
		char text[LOGGED_ERROR];

		rdmx_tls_conn_get_peer_addr(b->tls, &peer);
		RDMX_SEC_WARN("bootstrap: client %s gave up: %s (%s)", peer,
		              rdmx__log_escape(h.error, h.error_len, text, sizeof(text)),
		              rdmx_strerror(h.status));
		return h.status;
	}
	if (!ret && h.is_hello && (!h.has_version || h.version != RDMX_BOOTSTRAP_VERSION)) {
		/* (a version 1 client spoke first, offering "versions") */
		snprintf(why, sizeof(why), "no common bootstrap version (server speaks %u)",
		         RDMX_BOOTSTRAP_VERSION);
		return refuse(b, RDMX_E_PROTOCOL, why);
	}
	if (!ret && (!h.is_hello || !h.details_len || !h.provider)) {
		snprintf(why, sizeof(why), "client hello lacks details or provider");
		ret = RDMX_E_PROTOCOL;
	}
	if (ret) {
		return refuse(b, RDMX_E_PROTOCOL, why);
	}
	if (!same_provider(b, &h)) {
		snprintf(why, sizeof(why), "provider mismatch: server uses %s",
		         provider ? provider : "?");
		return refuse(b, RDMX_E_PROTOCOL, why);
	}
	if (h.name)
		copy_name(b->hello_name, h.name, h.name_len);
	ret = keep_peer_app(b, &h);
	if (!ret && decide)
		ret = decide(b, &reply, &reply_len, decide_arg);
	if (ret) {
		return refuse(b, RDMX_E_CONN_REFUSED, "refused by the server application");
	}
	if (reply_len > RDMX_BOOTSTRAP_MAX_APP_DATA) {
		return refuse(b, RDMX_E_TOO_BIG, "server app data too large");
	}
	if ((h.has_data && h.data_plaintext) != data_plaintext(b)) {
		snprintf(why, sizeof(why), "data-plane mode mismatch: the server wants it %s",
		         data_plaintext(b) ? "in plaintext" : "sealed");
		return refuse(b, RDMX_E_PROTOCOL, why);
	}
	ret = rdmx_ctx_export(b->ctx, &details, &details_len, &b->conn);
	if (!ret)
		ret = seal_conn(b);
	if (ret && b->conn)
		drop_conn(b);
	if (!ret) {
		ret = rdmx_ctx_connect(b->ctx, h.details, h.details_len, b->conn);
		if (ret)
			drop_conn(b);
	}
	if (ret)
		return refuse(b, ret, rdmx_strerror(ret));
	rdmx__wire_BootstrapMsg_init(&m);
	m.version = RDMX_BOOTSTRAP_VERSION;
	m.details = bytes_of(details, details_len);
	m.app = bytes_of(reply, reply_len);
	ret = send_msg(b, &m, 0);
	if (ret)
		drop_conn(b);
	return ret;
}

/* ---- client ---- */

/* Milliseconds left before the deadline, or 0 when it has passed. */
static int ms_left(int64_t deadline)
{
	int64_t left = deadline - (int64_t)rdmx__now_ms();

	return left > 0 ? (int)left : 0;
}

static int has_version(const struct hello *h, uint32_t v)
{
	for (size_t i = 0; i < h->n_versions; i++)
		if (h->versions[i] == v)
			return 1;
	return 0;
}

static int server_refused(const struct hello *h)
{
	char text[LOGGED_ERROR];

	RDMX_SEC_WARN("bootstrap: server refused: %s (%s)",
	              rdmx__log_escape(h->error, h->error_len, text, sizeof(text)),
	              rdmx_strerror(h->status));
	return h->status == RDMX_E_PROTOCOL || h->status == RDMX_E_TOO_BIG ? h->status
	                                                                   : RDMX_E_CONN_REFUSED;
}

/* The server's next frame by `deadline`, decoded into *h (pointers into the
 * frame). Returns false when the exchange is over with *ret its outcome:
 * nothing arrived (the deadline or the TLS layer's error; TLS 1.3: a refused
 * certificate shows here, as the server's alert), or the frame is the
 * server's refusal. Else true with *ret the decoding's status, `why` saying
 * what is wrong with a frame that does not decode. */
static bool client_recv_hello(struct rdmx_bootstrap *b, int64_t deadline, struct hello *h,
                              char *why, size_t why_len, int *ret)
{
	const void *frame;
	size_t len;
	int left = ms_left(deadline);

	*ret = left ? rdmx_tls_conn_recv_wait(b->tls, &frame, &len, left) : RDMX_E_TIMEDOUT;
	if (*ret)
		return false;
	*ret = decode_hello(frame, len, h, why, why_len);
	if (!*ret && h->has_status) {
		*ret = server_refused(h);
		return false;
	}
	return true;
}

/* The server's hello: its TLS layer accepted our certificate, it speaks our
 * version and uses our provider. Until it has arrived nothing is exported
 * and nothing is sent. A hello we cannot use is answered with an error
 * frame (the server logs why), never with details. */
static int client_read_greeting(struct rdmx_bootstrap *b, int64_t deadline)
{
	const char *provider = my_provider(b);
	struct hello h;
	char why[200];
	int ret;

	if (!client_recv_hello(b, deadline, &h, why, sizeof(why), &ret))
		return ret;
	if (!ret && (!h.is_hello || !h.n_versions || !h.provider)) {
		snprintf(why, sizeof(why), "server hello lacks versions or provider");
		ret = RDMX_E_PROTOCOL;
	}
	if (!ret && !has_version(&h, RDMX_BOOTSTRAP_VERSION)) {
		snprintf(why, sizeof(why), "no common bootstrap version (client speaks %u)",
		         RDMX_BOOTSTRAP_VERSION);
		ret = RDMX_E_PROTOCOL;
	}
	if (!ret && !same_provider(b, &h)) {
		snprintf(why, sizeof(why), "provider mismatch: client uses %s",
		         provider ? provider : "?");
		ret = RDMX_E_PROTOCOL;
	}
	if (!ret && h.name)
		copy_name(b->hello_name, h.name, h.name_len);
	if (ret) {
		RDMX_SEC_ERR("bootstrap: bad hello from the server: %s", why);
		send_error(b, ret, why);
		rdmx_tls_conn_flush(b->tls);
	}
	return ret;
}

static int client_send_hello(struct rdmx_bootstrap *b, const char *name, const void *app,
                             size_t app_len, int64_t deadline)
{
	const char *provider = my_provider(b);
	const void *details;
	size_t details_len;
	rdmx__wire_BootstrapMsg m;
	int ret, left;

	ret = rdmx_ctx_export(b->ctx, &details, &details_len, &b->conn);
	if (ret)
		return ret;
	ret = seal_conn(b);
	if (ret)
		return ret;
	rdmx__wire_BootstrapMsg_init(&m);
	m.rdmx = rdmx_str_c("bootstrap");
	m.version = RDMX_BOOTSTRAP_VERSION;
	m.name = rdmx_str_c(name ? name : "");
	m.provider = rdmx_str_c(provider ? provider : "?");
	m.data = data_plaintext(b) ? rdmx__wire_DataPlane_DATA_PLAINTEXT
	                           : rdmx__wire_DataPlane_DATA_SEALED;
	m.details = bytes_of(details, details_len);
	m.app = bytes_of(app, app_len);
	left = ms_left(deadline);
	return left ? send_msg(b, &m, left) : RDMX_E_TIMEDOUT;
}

static int client_read_answer(struct rdmx_bootstrap *b, int64_t deadline)
{
	struct hello h;
	char why[200];
	int ret;

	if (!client_recv_hello(b, deadline, &h, why, sizeof(why), &ret))
		return ret;
	if (!ret && (!h.has_version || h.version != RDMX_BOOTSTRAP_VERSION || !h.details_len)) {
		snprintf(why, sizeof(why), "server answer lacks version %u or details",
		         RDMX_BOOTSTRAP_VERSION);
		ret = RDMX_E_PROTOCOL;
	}
	if (ret == RDMX_E_PROTOCOL)
		RDMX_SEC_ERR("bootstrap: bad answer from the server: %s", why);
	if (!ret)
		ret = keep_peer_app(b, &h);
	if (!ret)
		ret = rdmx_ctx_connect(b->ctx, h.details, h.details_len, b->conn);
	return ret;
}

int rdmx_bootstrap_connect(struct rdmx_ctx *ctx, struct rdmx_tls_config *cfg, const char *host,
                           uint16_t port, const char *name, const void *app_data, size_t app_len,
                           int timeout_ms, struct rdmx_bootstrap **out)
{
	struct rdmx_tls_conn *tls = NULL;
	struct rdmx_bootstrap *b = NULL;
	int64_t deadline;
	int ret;

	if (!ctx || !cfg || !host || !out || (app_len && !app_data) ||
	    app_len > RDMX_BOOTSTRAP_MAX_APP_DATA || timeout_ms <= 0 ||
	    (name && !valid_name(name, strlen(name))))
		return RDMX_E_INVAL;
	deadline = (int64_t)rdmx__now_ms() + timeout_ms;
	ret = rdmx_tls_connect_timeout(cfg, host, port, timeout_ms, &tls);
	if (ret)
		return ret;
	ret = rdmx__bootstrap_create(ctx, tls, &b);
	if (ret) {
		rdmx_tls_conn_destroy(&tls);
		return ret;
	}
	ret = client_read_greeting(b, deadline);
	if (!ret)
		ret = client_send_hello(b, name, app_data, app_len, deadline);
	if (!ret)
		ret = client_read_answer(b, deadline);
	if (ret) {
		rdmx_bootstrap_destroy(&b);
		return ret;
	}
	*out = b;
	return RDMX_OK;
}
