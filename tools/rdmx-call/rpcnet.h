/* rpcnet: from "a server's address" to a working struct rdmx_rpc_ep, for
 * rdmx-call.
 *
 * Two ways to reach a server (docs/guide-rpc.md):
 *   plain   the engine's rdma_cm-style listener (rdmx_ctx_listen on a fixed
 *           port; clients rdmx_ctx_connect_to_addr). No authentication:
 *           for development, examples and trusted networks.
 *   secure  the server's secure bootstrap endpoint (mutual TLS 1.3): the
 *           engine connection details only travel inside TLS. This is
 *           rdmx_rpc_secure_connect / rdmx_rpc_secure_listen
 *           (rdmx/rpc_secure.h), so rdmx-call talks to any server built on it.
 * Either way the connection then carries one message channel
 * (rdmx/channel.h) and one RPC endpoint (rdmx/rpc.h).
 *
 * The device is the default one (rdmx_dev_open(NULL): the first RDMA NIC,
 * else tcp; RDMX_DEVICE overrides). Messages up to RPCNET_MAX_MSG bytes. */
#ifndef RDMX_RPCNET_H
#define RDMX_RPCNET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rdmx_rpc_ep;
struct rdmx_tls_config;

/* 64 MiB of payload plus room for the message around it */
#define RPCNET_MAX_MSG ((64u << 20) + (1u << 20))
#define RPCNET_DEFAULT_TIMEOUT_MS 10000

struct rpcnet_tls {
	const char *ca, *cert, *key; /* PEM files: all three, or no TLS */
	const char *crl;             /* optional */
	const char *peer;            /* allow-list pattern for the peer's name; NULL: "*" */
	bool allow_insecure_key;     /* accept a key file group or others can read */
};

/* A TLS config from the options (loaded, so that bad files fail now).
 * NULL on error (the reason in err). */
struct rdmx_tls_config *rpcnet_tls_config(const struct rpcnet_tls *tls, char *err, size_t err_len);

/* ---- client ---- */

struct rpcnet_client;

/* Connects to host:port (tls NULL: plain) and waits, at most timeout_ms,
 * until the RPC endpoint is ready. `name` is the bootstrap hello name (may
 * be NULL). On failure returns a negative RDMX_E_* code with the reason in
 * err. */
int rpcnet_client_connect(const char *host, uint16_t port, const struct rpcnet_tls *tls,
                          const char *name, int timeout_ms, struct rpcnet_client **client,
                          char *err, size_t err_len);
struct rdmx_rpc_ep *rpcnet_client_rpc(const struct rpcnet_client *client);
/* the device's name ("tcp", "mlx5_0", ...) */
const char *rpcnet_client_device(const struct rpcnet_client *client);
/* Drains the endpoint (bounded), then frees everything. NULL: no-op. */
void rpcnet_client_close(struct rpcnet_client **client);

#endif
