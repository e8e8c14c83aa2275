/* Light messages: a small write with immediate data into the peer's
 * registered memory that needs no task on either side, for providers that
 * can do it without emulating RDMA's completions (tcp; not verbs, where a
 * ring write is the NIC's own work). The channel layer (chan/) uses it for
 * its small eager ring writes; nothing else does.
 *
 * - Sender: rdmx__conn_post_msg copies the bytes out before it returns, so
 *   the buffer is free again at once, and produces no completion. It goes
 *   only when every request posted on the connection before it has been
 *   answered (then no retry of an earlier request can reorder it); else it
 *   answers RDMX_E_AGAIN and the caller posts a task as usual. Once it
 *   returned 0 the message is on the connection's wire, ordered with the
 *   requests posted after it.
 * - Receiver: the bytes are placed as a write's are (the key, bounds and
 *   access of the target memory are checked before the first byte lands; a
 *   bad one ends the connection with a protocol error; a message with no
 *   bytes names no memory, as a zero-length write does, and its key is not
 *   checked), then the context's handler runs from a later
 *   poll with the connection, immediate data and length, in wire order with
 *   the connection's other completions. No receive is consumed and no
 *   acknowledgement goes back: the user's own protocol (the channel's
 *   credits) is the flow control. A peer with more than
 *   RDMX__MSG_BACKLOG_MAX messages not yet handed to the handler, or one
 *   sending to a context without a handler, loses its connection.
 * - Handlers run on the progress thread with no provider lock held, like
 *   completion callbacks; not at a context stop (undelivered messages are
 *   dropped with their connection).
 * - The context's statistics count them as the ring write they stand for:
 *   a write_imm task submitted and completed on the sender, a receive
 *   submitted and completed on the receiver, with their bytes (so neither
 *   side ever counts more completed than submitted). */
#ifndef RDMX_ENGINE_MSG_H
#define RDMX_ENGINE_MSG_H

#include <stdint.h>

#include <rdmx/ctx.h>
#include <rdmx/task.h>

#define RDMX__MSG_MAX 512u          /* bytes in one light message */
#define RDMX__MSG_BACKLOG_MAX 4096u /* per connection, not yet handed over */

typedef void (*rdmx__msg_fn)(void *arg, struct rdmx_conn *conn, uint32_t imm, uint32_t len);

/* Sets ctx's handler for light messages (before rdmx_ctx_start).
 * RDMX_E_INVAL (NULL), RDMX_E_BAD_STATE (started), RDMX_E_NOT_SUPPORTED
 * (the provider has none: its peers never send them). */
int rdmx__ctx_set_msg_handler(struct rdmx_ctx *ctx, rdmx__msg_fn fn, void *arg);

/* Writes the bytes of the chain src (at most RDMX__MSG_MAX in all) at dst
 * in the peer's memory, with immediate data imm. 0 (sent or queued, src
 * free again), RDMX_E_AGAIN (not now: post a task), RDMX_E_NOT_SUPPORTED,
 * RDMX_E_INVAL, RDMX_E_BAD_STATE (not established). */
int rdmx__conn_post_msg(struct rdmx_conn *conn, const struct rdmx_buf *src,
                        const struct rdmx_rbuf *dst, uint32_t imm);

#endif
