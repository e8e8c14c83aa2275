/* libFuzzer target: the bootstrap hellos (secure/bootstrap.c, wire version
 * 2: server speaks first) and the RPC hello carried in their app data
 * (secure/rpc_secure_wire.c), through the real code paths that read them
 * from a peer:
 *   selector 0: the server side: rdmx__bootstrap_greet, then
 *               rdmx__bootstrap_accept on a client hello, whose decide
 *               callback decodes the RPC hello as the secure RPC server does;
 *   selector 1: the client side: rdmx_bootstrap_connect reading the server's
 *               hello, then (when it liked it) its answer, then the RPC hello
 *               in it. Input after the selector: a 2-byte big-endian length,
 *               the server's hello, the rest is the answer (without a valid
 *               length the whole input is the hello and no answer comes);
 *   selector 2: the RPC hello decoder alone (+ encode/decode round trip).
 * Input: one selector byte (mod 3), then the frame(s).
 *
 * The engine and TLS calls bootstrap.c makes are replaced below by stubs
 * (nothing here opens a device or a socket): export hands out fixed
 * details, send checks and swallows the frame, recv hands the fuzz input.
 * The stubs also check the property the order exists for: the client
 * exports nothing and sends no details before a server hello that names
 * its version and provider has arrived; the server's hello carries none. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include <rdmx/bootstrap.h>
#include <rdmx/ctx.h>
#include <rdmx/dev.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "bootstrap_internal.h"
#include "rpc_secure_internal.h"
#include "tls_internal.h"

/* ---- stubs: engine ---- */

static int fake_conn_obj, fake_ctx_obj, fake_dev_obj, fake_tls_obj, fake_cfg_obj;
#define FAKE_CONN ((struct rdmx_conn *)&fake_conn_obj)
#define FAKE_CTX ((struct rdmx_ctx *)&fake_ctx_obj)
#define FAKE_TLS ((struct rdmx_tls_conn *)&fake_tls_obj)
#define FAKE_CFG ((struct rdmx_tls_config *)&fake_cfg_obj)
static void *conn_ud;
/* frames the stub peer hands out, in order */
static const uint8_t *in_frames[2];
static size_t in_lens[2], n_in, delivered;
/* what the code under test did */
static int client_mode, exported, sent_details, sends;
static const uint8_t fake_details[48] = {0xd5, 0xe7, 0x41, 0x1e, 0xd5, 0xe7, 0x41, 0x1e};

int rdmx_ctx_get_dev(const struct rdmx_ctx *ctx, struct rdmx_dev **dev)
{
	(void)ctx;
	*dev = (struct rdmx_dev *)&fake_dev_obj;
	return 0;
}

const char *rdmx_dev_provider(const struct rdmx_dev *dev)
{
	return dev ? "tcp" : NULL;
}

static int str_is(const msgpack_object *o, const char *lit)
{
	size_t n = strlen(lit);

	return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n &&
	       memcmp(o->via.str.ptr, lit, n) == 0;
}

/* 1 when the first frame handed to the client is a server hello it may
 * trust with its details: 1 (rdmx) "bootstrap", 2 (versions) holding ours,
 * 5 (provider) "tcp". Written against the documented wire
 * (secure/proto/bootstrap.proto on the codec) with msgpack-c, not bootstrap.c. */
static int greeting_ok(void)
{
	msgpack_unpacked u;
	size_t off = 0;
	int rdmx = 0, version = 0, provider = 0;

	if (delivered < 1)
		return 0;
	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, (const char *)in_frames[0], in_lens[0], &off) ==
	        MSGPACK_UNPACK_SUCCESS &&
	    u.data.type == MSGPACK_OBJECT_MAP) {
		for (uint32_t i = 0; i < u.data.via.map.size; i++) {
			const msgpack_object *k = &u.data.via.map.ptr[i].key;
			const msgpack_object *v = &u.data.via.map.ptr[i].val;

			/* keys are field numbers; a nil value is an absent field;
			 * a repeated key: the last one counts */
			if (k->type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
			    v->type == MSGPACK_OBJECT_NIL)
				continue;
			if (k->via.u64 == 1)
				rdmx = str_is(v, "bootstrap");
			if (k->via.u64 == 5)
				provider = str_is(v, "tcp");
			if (k->via.u64 == 2)
				version = 0;
			if (k->via.u64 == 2 && v->type == MSGPACK_OBJECT_ARRAY)
				for (uint32_t j = 0; j < v->via.array.size; j++)
					if (v->via.array.ptr[j].type ==
					        MSGPACK_OBJECT_POSITIVE_INTEGER &&
					    v->via.array.ptr[j].via.u64 == RDMX_BOOTSTRAP_VERSION)
						version = 1;
		}
	}
	msgpack_unpacked_destroy(&u);
	return rdmx && version && provider;
}

int rdmx_ctx_export(struct rdmx_ctx *ctx, const void **details, size_t *len,
                    struct rdmx_conn **conn)
{
	(void)ctx;
	/* the client exports only once a good server hello is in */
	if (client_mode && !greeting_ok())
		abort();
	exported++;
	*details = fake_details;
	*len = sizeof(fake_details);
	*conn = FAKE_CONN;
	conn_ud = NULL;
	return 0;
}

int rdmx_ctx_connect(struct rdmx_ctx *ctx, const void *details, size_t len, struct rdmx_conn *conn)
{
	(void)ctx;
	(void)conn;
	/* the peer's details are opaque to the bootstrap: touch every byte */
	volatile uint8_t sum = 0;
	for (size_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + ((const uint8_t *)details)[i]);
	return len > 1000 ? RDMX_E_INVAL : 0;
}

int rdmx_conn_get_user_data(const struct rdmx_conn *conn, void **ud)
{
	(void)conn;
	*ud = conn_ud;
	return 0;
}

int rdmx_conn_set_user_data(struct rdmx_conn *conn, void *ud)
{
	(void)conn;
	conn_ud = ud;
	return 0;
}

int rdmx_conn_disconnect(struct rdmx_conn *conn)
{
	(void)conn;
	return 0;
}

/* the data-plane keys: sealed (the default), exporter bytes made up */
int rdmx_conn_set_data_keys(struct rdmx_conn *conn, const struct rdmx_conn_keys *keys)
{
	(void)keys;
	return conn == FAKE_CONN ? 0 : RDMX_E_INVAL;
}

/* ---- stubs: TLS ---- */

struct rdmx_tls_config *rdmx__tls_conn_config(const struct rdmx_tls_conn *conn)
{
	(void)conn;
	return FAKE_CFG;
}

enum rdmx_tls_role rdmx__tls_conn_role(const struct rdmx_tls_conn *conn)
{
	(void)conn;
	return client_mode ? RDMX_TLS_CLIENT : RDMX_TLS_SERVER;
}

int rdmx__tls_conn_export_keying(struct rdmx_tls_conn *conn, const char *label, uint8_t *out,
                                 size_t len)
{
	(void)conn;
	(void)label;
	memset(out, 0x5a, len);
	return 0;
}

int rdmx_tls_config_get_data_plaintext(const struct rdmx_tls_config *cfg, bool *plaintext)
{
	(void)cfg;
	*plaintext = false;
	return 0;
}

bool rdmx__tls_config_once(struct rdmx_tls_config *cfg, unsigned bit)
{
	(void)cfg;
	(void)bit;
	return false;
}

int rdmx_tls_connect_timeout(struct rdmx_tls_config *cfg, const char *host, uint16_t port,
                             int timeout_ms, struct rdmx_tls_conn **conn)
{
	(void)cfg;
	(void)host;
	(void)port;
	(void)timeout_ms;
	*conn = FAKE_TLS;
	return 0;
}

int rdmx_tls_conn_destroy(struct rdmx_tls_conn **conn)
{
	*conn = NULL;
	return 0;
}

int rdmx_tls_conn_get_fd(const struct rdmx_tls_conn *conn, int *fd)
{
	(void)conn;
	*fd = -1;
	return 0;
}

int rdmx_tls_conn_get_peer_addr(const struct rdmx_tls_conn *conn, const char **addr)
{
	(void)conn;
	*addr = "fuzz:0";
	return 0;
}

int rdmx_tls_conn_get_peer_name(const struct rdmx_tls_conn *conn, const char **name)
{
	(void)conn;
	*name = "client.test";
	return 0;
}

int rdmx_tls_conn_send(struct rdmx_tls_conn *conn, const void *buf, size_t len)
{
	int has_details;

	(void)conn;
	if (!buf || !len)
		return RDMX_E_INVAL;
	has_details = memmem(buf, len, fake_details, sizeof(fake_details)) != NULL;
	sends++;
	if (has_details) {
		/* client: never before a good server hello; server: never in
		 * its first frame (the hello), and only after exporting */
		if (client_mode ? !greeting_ok() : sends == 1 || !exported)
			abort();
		sent_details++;
	}
	return 0;
}

int rdmx_tls_conn_send_wait(struct rdmx_tls_conn *conn, const void *buf, size_t len, int timeout_ms)
{
	(void)timeout_ms;
	return rdmx_tls_conn_send(conn, buf, len);
}

int rdmx_tls_conn_recv(struct rdmx_tls_conn *conn, const void **frame, size_t *len)
{
	(void)conn;
	(void)frame;
	(void)len;
	return RDMX_TLS_WANT_READ;
}

int rdmx__tls_conn_step(struct rdmx_tls_conn *conn, const void **frame, size_t *len)
{
	return rdmx_tls_conn_recv(conn, frame, len);
}

int rdmx_tls_conn_recv_wait(struct rdmx_tls_conn *conn, const void **frame, size_t *len,
                            int timeout_ms)
{
	(void)conn;
	(void)timeout_ms;
	if (delivered >= n_in)
		return RDMX_E_DISCONNECTED;
	*frame = in_frames[delivered];
	*len = in_lens[delivered];
	delivered++;
	return 0;
}

int rdmx_tls_conn_want_write(const struct rdmx_tls_conn *conn)
{
	(void)conn;
	return 0;
}

int rdmx_tls_conn_flush(struct rdmx_tls_conn *conn)
{
	(void)conn;
	return RDMX_TLS_DONE;
}

/* ---- the paths under test ---- */

static int decide(struct rdmx_bootstrap *b, const void **reply, size_t *reply_len, void *arg)
{
	static uint8_t answer[RDMX__RPC_HELLO_MAX_LEN];
	struct rdmx__rpc_hello h, mine;
	const char *cert, *hello;
	const void *data;
	size_t len;
	char why[160];

	(void)arg;
	rdmx_bootstrap_get_peer_names(b, &cert, &hello);
	rdmx_bootstrap_get_peer_data(b, &data, &len);
	if (rdmx__rpc_hello_decode(data, len, &h, why, sizeof(why)))
		return RDMX_E_PROTOCOL;
	if (!rdmx__rpc_hello_has_version(&h, RDMX_RPC_SECURE_VERSION))
		return RDMX_E_PROTOCOL;
	rdmx__rpc_hello_from_opts(NULL, 0, &mine);
	if (rdmx__rpc_hello_encode(&mine, answer, sizeof(answer), &len))
		abort();
	*reply = answer;
	*reply_len = len;
	return 0;
}

static void reset(int as_client)
{
	client_mode = as_client;
	exported = sent_details = sends = 0;
	n_in = delivered = 0;
}

static void server_side(const uint8_t *data, size_t size)
{
	struct rdmx_bootstrap *b = NULL;
	int ret;

	reset(0);
	if (rdmx__bootstrap_create(FAKE_CTX, FAKE_TLS, &b))
		return;
	if (rdmx__bootstrap_greet(b, "fuzz-server") || sends != 1 || exported)
		abort();
	ret = rdmx__bootstrap_accept(b, data, size, decide, NULL);
	/* details leave only with a yes */
	if (ret ? sent_details != 0 : sent_details != 1)
		abort();
	rdmx_bootstrap_destroy(&b);
}

static void client_side(const uint8_t *data, size_t size)
{
	static const uint8_t app[] = {0x81, 0xa8, 'r', 'd', 'm',  'x',
	                              '-',  'r',  'p', 'c', 0x91, 0x01};
	struct rdmx_bootstrap *b = NULL;
	struct rdmx__rpc_hello h;
	const void *peer;
	size_t peer_len;
	char why[160];

	reset(1);
	if (size >= 2 && (size_t)((data[0] << 8) | data[1]) <= size - 2) {
		size_t first = (size_t)((data[0] << 8) | data[1]);

		in_frames[0] = data + 2;
		in_lens[0] = first;
		in_frames[1] = data + 2 + first;
		in_lens[1] = size - 2 - first;
		n_in = 2;
	} else {
		in_frames[0] = data;
		in_lens[0] = size;
		n_in = 1;
	}
	if (rdmx_bootstrap_connect(FAKE_CTX, FAKE_CFG, "fuzz", 1, "fuzz-client", app, sizeof(app),
	                           1000, &b))
		return;
	rdmx_bootstrap_get_peer_data(b, &peer, &peer_len);
	rdmx__rpc_hello_decode(peer, peer_len, &h, why, sizeof(why));
	rdmx_bootstrap_destroy(&b);
}

static void rpc_hello(const uint8_t *data, size_t size)
{
	struct rdmx__rpc_hello h, again;
	uint8_t buf[RDMX__RPC_HELLO_MAX_LEN];
	size_t len;
	char why[160];

	if (rdmx__rpc_hello_decode(data, size, &h, why, sizeof(why)))
		return;
	/* what we accept we can write, and read back the same */
	if (rdmx__rpc_hello_encode(&h, buf, sizeof(buf), &len) ||
	    rdmx__rpc_hello_decode(buf, len, &again, why, sizeof(why)))
		abort();
	if (again.n_versions != h.n_versions || again.slot_count != h.slot_count ||
	    again.slot_size != h.slot_size || again.max_msg != h.max_msg ||
	    memcmp(again.versions, h.versions, sizeof(h.versions[0]) * h.n_versions) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		server_side(data + 1, size - 1);
		break;
	case 1:
		client_side(data + 1, size - 1);
		break;
	default:
		rpc_hello(data + 1, size - 1);
		break;
	}
	return 0;
}
