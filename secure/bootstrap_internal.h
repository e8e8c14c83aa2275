/* Between secure/bootstrap.c (core library) and secure/bootstrap_server.c
 * (rdmx_secure_ev). Not installed. */
#ifndef RDMX_SECURE_BOOTSTRAP_INTERNAL_H
#define RDMX_SECURE_BOOTSTRAP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <rdmx/bootstrap.h>

/* Wraps an established TLS connection: taken over on success, left to the
 * caller on failure. */
int rdmx__bootstrap_create(struct rdmx_ctx *ctx, struct rdmx_tls_conn *tls,
                           struct rdmx_bootstrap **bootstrap);
/* Called first thing by rdmx_bootstrap_destroy (the server unlinks it). */
void rdmx__bootstrap_set_hook(struct rdmx_bootstrap *b,
                              void (*hook)(struct rdmx_bootstrap *b, void *arg), void *arg);
struct rdmx_tls_conn *rdmx__bootstrap_tls(const struct rdmx_bootstrap *b);
/* Server side, first frame: queues the server's hello (versions, name,
 * provider; nothing secret) on the TLS connection. Call once the TLS
 * handshake is done, i.e. once the client's certificate has been accepted.
 * 0 or the send error. */
int rdmx__bootstrap_greet(struct rdmx_bootstrap *b, const char *my_name);
/* Server side, second frame: decodes the client hello in frame[len], asks
 * `decide`, exports, connects and queues the answer on the TLS connection.
 * 0, or the refusal (an error answer is queued; the caller flushes then
 * destroys), or the client's own refusal of our hello (nothing queued). */
int rdmx__bootstrap_accept(struct rdmx_bootstrap *b, const void *frame, size_t len,
                           int (*decide)(struct rdmx_bootstrap *, const void **, size_t *, void *),
                           void *decide_arg);
/* Marks the channel lost and disconnects the engine connection (unless
 * gone); returns the sticky reason. */
int rdmx__bootstrap_lost(struct rdmx_bootstrap *b, int reason);

/* bootstrap_server.c: a server fed with accepted sockets instead of a
 * listening socket of its own (rdmx__tls_listener_create_unbound). */
struct ev_loop;
struct sockaddr_storage;
int rdmx__bootstrap_server_create_unbound(struct ev_loop *loop, struct rdmx_ctx *ctx,
                                          struct rdmx_tls_config *cfg, const char *name,
                                          const struct rdmx_bootstrap_server_ops *ops, void *arg,
                                          struct rdmx_bootstrap_server **out);
struct rdmx_tls_listener *rdmx__bootstrap_server_listener(const struct rdmx_bootstrap_server *srv);
void rdmx__bootstrap_server_adopt(struct rdmx_bootstrap_server *srv, int fd,
                                  const struct sockaddr_storage *src);
/* How long a session may wait for its peer to read before it is ended
 * (10 s; 0: that default). A session waiting at the call is ended `ms`
 * after it. For the tests (far above their run, or tiny once a flood is in
 * place); on the loop's thread. */
void rdmx__bootstrap_server_set_write_timeout(struct rdmx_bootstrap_server *srv, uint32_t ms);

#endif
