/* Between the secure RPC files (not installed):
 *   rpc_secure_wire.c      the RPC hello carried in the bootstrap's app data
 *   rpc_secure_endpoint.c  struct rdmx_rpc_secure_conn and its getters
 *   rpc_secure.c           the client (core library)
 *   rpc_secure_server.c    the libev server (rdmx_secure_ev) */
#ifndef RDMX_SECURE_RPC_SECURE_INTERNAL_H
#define RDMX_SECURE_RPC_SECURE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <rdmx/bootstrap.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/tls.h>

/* ---- rpc_secure_wire.c ----
 * One message in the bootstrap's app-data slot, each way (rpc version 2):
 * rdmx__wire.RpcHello of secure/proto/rpc_hello.proto, encoded by the codec
 * rdmx-gen generates from it (a msgpack map keyed by field number):
 *   1 versions  repeated u16   client: versions it speaks;
 *                              server: the one it chose (one element)
 *   2 slots, 3 slot_size (u32), 4 max_msg (u64)   the sender's ring
 * Unknown fields are skipped (later versions may add some), values out of
 * the channel's ranges (or absent) are refused. Version 1 (msgpack with
 * string keys "rdmx-rpc", "slots", ...) is no longer spoken. */

#define RDMX__RPC_HELLO_MAX_VERSIONS 8u
#define RDMX__RPC_HELLO_MAX_LEN 256u

struct rdmx__rpc_hello {
	uint32_t versions[RDMX__RPC_HELLO_MAX_VERSIONS];
	uint32_t n_versions;
	uint32_t slot_count;
	uint32_t slot_size;
	uint64_t max_msg;
};

/* Writes the hello into buf[cap] and its length to *len. RDMX_E_INVAL when
 * a field is out of range or no version given, RDMX_E_TOO_BIG past cap. */
int rdmx__rpc_hello_encode(const struct rdmx__rpc_hello *h, void *buf, size_t cap, size_t *len);
/* Decodes untrusted bytes. 0, or RDMX_E_PROTOCOL with a reason in why[]. */
int rdmx__rpc_hello_decode(const void *buf, size_t len, struct rdmx__rpc_hello *h, char *why,
                           size_t why_len);
/* 1 when the hello lists `version`. */
int rdmx__rpc_hello_has_version(const struct rdmx__rpc_hello *h, uint32_t version);
/* Geometry of opts with the defaults filled, checked against the channel's
 * ranges (RDMX_E_INVAL). The default message limit is the channel's: at most
 * the device's largest message, dev_max_msg (0: unknown). */
int rdmx__rpc_hello_from_opts(const struct rdmx_rpc_secure_opts *opts, uint64_t dev_max_msg,
                              struct rdmx__rpc_hello *h);

/* ---- rpc_secure_endpoint.c ---- */

/* from_opts with the limit of `dev`, then encode: the hello this side sends.
 * RDMX_E_INVAL when opts are out of range for the device. */
struct rdmx_dev;
int rdmx__rpc_hello_for_dev(const struct rdmx_rpc_secure_opts *opts, const struct rdmx_dev *dev,
                            struct rdmx__rpc_hello *h, void *buf, size_t cap, size_t *len);

/* A secure connection (hiredis's async-context model): it owns its RPC
 * endpoint, the channel under it and the TLS session, and is what the
 * secure API hands out; no lookup table: the caller holds it. The client
 * (rpc_secure.c) and the server's sessions (rpc_secure_server.c) embed it
 * first in their own state. */
enum rdmx__rpc_secure_side {
	RDMX__RPC_SECURE_CLIENT = 0,
	RDMX__RPC_SECURE_SERVER = 1,
};

struct rdmx_rpc_secure_conn {
	struct rdmx_rpc_ep *ep;   /* owned */
	struct rdmx_chan *chan;   /* owned, under ep */
	struct rdmx_bootstrap *b; /* NULL once the TLS session is closed */
	enum rdmx__rpc_secure_side side;
	int lost; /* sticky: why the TLS session or the engine connection ended */
	char cert_name[RDMX_TLS_NAME_MAX + 1];
	char hello_name[RDMX_BOOTSTRAP_MAX_NAME + 1];
};

/* Copies the peer's names out of conn->b (so they outlive the session). */
void rdmx__rpc_secure_conn_names(struct rdmx_rpc_secure_conn *conn);

/* rpc_secure_server.c: a secure server without a listening socket, fed
 * with accepted sockets (the multi-worker server, rpc_secure_workers.c). */
struct ev_loop;
struct sockaddr_storage;
struct rdmx_rpc_secure_server_ops;
int rdmx__rpc_secure_listen_unbound(struct ev_loop *loop, struct rdmx_rpc_server *server,
                                    struct rdmx_tls_config *tls,
                                    const struct rdmx_rpc_secure_server_ops *ops,
                                    const struct rdmx_rpc_secure_opts *opts, void *arg,
                                    struct rdmx_rpc_secure_server **out);
struct rdmx_tls_listener *
rdmx__rpc_secure_server_listener(const struct rdmx_rpc_secure_server *srv);
/* On the server's loop thread; the server owns fd from now on. */
void rdmx__rpc_secure_server_adopt(struct rdmx_rpc_secure_server *srv, int fd,
                                   const struct sockaddr_storage *src);

#endif
