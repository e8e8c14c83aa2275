/* The plumbing between "a port" / "host:port" and a working RPC endpoint,
 * for the hello example: default device (RDMX_DEVICE overrides), one
 * progress engine, one context with a channel worker, the engine's plain
 * listener (rdma_cm style, no authentication: see rdmx_bootstrap for mutual
 * TLS), one message channel and one RPC endpoint per connection. */
#ifndef HELLO_NET_H
#define HELLO_NET_H

#include <stdbool.h>
#include <stdint.h>

#include <rdmx/rpc.h>

/* Serves `server` on `port` until *stop becomes true, or, with `once`, until
 * the first client has come and gone. 0 or a negative RDMX_E_* code. */
int net_serve(uint16_t port, struct rdmx_rpc_server *server, bool once, volatile bool *stop);

/* What the example servers (hello, route_guide) share around net_serve.
 * net_server_args parses `PROG [-p PORT] [--once]` into *port and *once (left
 * as they are when not given), prints the usage for -h/--help and returns 1,
 * else makes SIGINT and SIGTERM stop net_server_run and returns 0.
 * net_server_run says the plain-flow warning and "PROG: listening on port
 * PORT", serves `server` until a signal (or, with `once`, the first client's
 * end), destroys it, prints "PROG: ERROR" on failure and returns net_serve's
 * result. */
int net_server_args(int argc, char **argv, const char *prog, uint16_t *port, bool *once);
int net_server_run(const char *prog, struct rdmx_rpc_server *server, uint16_t port, bool once);

struct net_client;
/* Connects to host:port; returns when the RPC endpoint is ready. */
int net_connect(const char *host, uint16_t port, struct net_client **client);
struct rdmx_rpc_ep *net_rpc(struct net_client *client);
void net_close(struct net_client **client);

#endif
