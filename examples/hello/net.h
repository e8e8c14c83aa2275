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

struct net_client;
/* Connects to host:port; returns when the RPC endpoint is ready. */
int net_connect(const char *host, uint16_t port, struct net_client **client);
struct rdmx_rpc_ep *net_rpc(struct net_client *client);
void net_close(struct net_client **client);

#endif
