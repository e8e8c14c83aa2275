/* libFuzzer target: the bootstrap hello (secure/bootstrap.c) and the RPC
 * hello carried in its app data (secure/rpc_secure_wire.c), through the
 * real code paths that read them from a peer:
 *   selector 0: the server side, rdmx__bootstrap_accept on a client hello,
 *               whose decide callback decodes the RPC hello as the secure
 *               RPC server does;
 *   selector 1: the client side, rdmx_bootstrap_connect reading the
 *               server's answer, then the RPC hello in it;
 *   selector 2: the RPC hello decoder alone (+ encode/decode round trip).
 * Input: one selector byte (mod 3), then the frame.
 *
 * The engine and TLS calls bootstrap.c makes are replaced below by stubs
 * (nothing here opens a device or a socket): export hands out fixed
 * details, send swallows the frame, recv hands the fuzz input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/bootstrap.h>
#include <rdmx/ctx.h>
#include <rdmx/dev.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "bootstrap_internal.h"
#include "rpc_secure_internal.h"

/* ---- stubs: engine ---- */

static int fake_conn_obj, fake_ctx_obj, fake_dev_obj, fake_tls_obj, fake_cfg_obj;
#define FAKE_CONN ((struct rdmx_conn *)&fake_conn_obj)
#define FAKE_CTX ((struct rdmx_ctx *)&fake_ctx_obj)
#define FAKE_TLS ((struct rdmx_tls_conn *)&fake_tls_obj)
#define FAKE_CFG ((struct rdmx_tls_config *)&fake_cfg_obj)
static void *conn_ud;
static const uint8_t *in_frame;
static size_t in_len;

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

int rdmx_ctx_export(struct rdmx_ctx *ctx, const void **details, size_t *len,
                    struct rdmx_conn **conn)
{
	static const uint8_t d[48] = {1, 2, 3};

	(void)ctx;
	*details = d;
	*len = sizeof(d);
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

/* ---- stubs: TLS ---- */

int rdmx_tls_connect(struct rdmx_tls_config *cfg, const char *host, uint16_t port,
                     struct rdmx_tls_conn **conn)
{
	(void)cfg;
	(void)host;
	(void)port;
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
	(void)conn;
	return buf && len ? 0 : RDMX_E_INVAL;
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

int rdmx_tls_conn_recv_wait(struct rdmx_tls_conn *conn, const void **frame, size_t *len,
                            int timeout_ms)
{
	(void)conn;
	(void)timeout_ms;
	*frame = in_frame;
	*len = in_len;
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

static void server_side(const uint8_t *data, size_t size)
{
	struct rdmx_bootstrap *b = NULL;

	if (rdmx__bootstrap_create(FAKE_CTX, FAKE_TLS, &b))
		return;
	rdmx__bootstrap_accept(b, data, size, "fuzz-server", decide, NULL);
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

	in_frame = data;
	in_len = size;
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
