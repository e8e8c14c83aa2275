/* The provider ops table: what a transport (verbs, tcp) must implement.
 *
 * Rules every provider keeps (see include/rdmx/task.h for the semantics):
 * - Completions (rdmx__task_complete) and connection events (rdmx__conn_event)
 *   are delivered only from ctx_poll or ctx_stop, on the progress thread, with
 *   no provider lock held.
 * - The engine validates arguments before calling post_*: chains are within
 *   the max buf list length and on this device's regions, write lengths are
 *   normalised into task->len, atomics are aligned. Remote key, bounds and
 *   access are the target's business (as on a NIC).
 * - Every task handed to post_* completes exactly once: on success, on a wire
 *   error, on disconnect or peer death (RDMX_E_CONN_ABORTED), or on ctx_stop
 *   (RDMX_E_CANCELED).
 * - Mandatory ops are checked at first use (engine/dev.c): a provider lacking
 *   one is disabled with an error log. Optional: dev_find_by_addr, listen,
 *   stop_listen, connect_to_addr, conn_accept, conn_reject (the engine answers
 *   RDMX_E_NOT_SUPPORTED without them), ctx_wait_read (a blocking wait then
 *   sleeps on the fd alone), post_msg.
 * - conn_export / connect_to_addr that fail leave nothing to release: the
 *   engine frees the conn without calling conn_release.
 * - conn_disconnect (on any connection not in REQUESTED, also one exported
 *   and never connected) ends with RDMX__CONN_EV_DISCONNECTED from a later
 *   ctx_poll; the engine aborts tasks submitted after it.
 * - conn_release may be called after ctx_stop returned (for connections that
 *   ctx_stop did not end with an event); it must not need the ctx's state.
 * - ESTABLISHED is reported in both flows (export/connect once the wire is
 *   up, cm once accepted). */
#ifndef RDMX_ENGINE_PROVIDER_H
#define RDMX_ENGINE_PROVIDER_H

#include <string.h>

#include "internal.h"

/* ctx_wait_read returns within this (a socket receive timeout of 1 ms is
 * counted in kernel ticks: up to 10 ms at HZ=100) */
#define RDMX__WAIT_READ_MAX_MS 10

struct rdmx_provider_ops {
	const char *name; /* "verbs", "tcp" */
	uint8_t id;       /* RDMX_PROVIDER_ID_* (descriptor field) */

	/* devices */
	/* Appends this provider's device names (up to max) and adds the number
	 * available to *count. */
	int (*dev_list)(struct rdmx_dev_info *infos, size_t max, size_t *count);
	/* Opens dev->name (ip: local address to bind, NULL for default); sets dev->prov. */
	int (*dev_open)(struct rdmx_dev *dev, const char *ip);
	void (*dev_close)(struct rdmx_dev *dev);
	int (*dev_query_caps)(const struct rdmx_dev *dev, struct rdmx_dev_caps *caps);
	int (*dev_get_gid)(const struct rdmx_dev *dev, uint32_t index, uint8_t gid[16]);
	/* Optional: the name of this provider's device owning `ip`, or RDMX_E_NO_DEVICE. */
	int (*dev_find_by_addr)(const char *ip, char name[RDMX_DEV_NAME_MAX]);

	/* memory: mr->dev/addr/len/access/grant_only are set; fill lkey, rkey,
	 * prov. grant_only: the region's own key must give no remote access (its
	 * flags are what grants may give); a provider without mr_grant refuses it
	 * before this (the engine answers RDMX_E_NOT_SUPPORTED). */
	int (*mr_reg)(struct rdmx_mr *mr);
	void (*mr_dereg)(struct rdmx_mr *mr);
	/* Optional (RDMX_E_NOT_SUPPORTED without them): connection-bound grants.
	 * mr_grant: grant->mr/conn/offset/len/access are checked and set, the
	 * conn is established on a running context; make a fresh key for the
	 * range that works only through grant->conn with at most grant->access,
	 * fill grant->rkey (and prov). May answer RDMX_E_NOT_SUPPORTED (device
	 * without memory windows). mr_revoke: invalidates the key before it
	 * returns (no remote access through it afterwards) and frees prov;
	 * called once per successful mr_grant, on the progress thread, at revoke
	 * or at the connection's end (conn->prov still valid, the context maybe
	 * stopped: it must not need the ctx's state). */
	int (*mr_grant)(struct rdmx_mr_grant *grant);
	void (*mr_revoke)(struct rdmx_mr_grant *grant);

	/* contexts */
	int (*ctx_start)(struct rdmx_ctx *ctx);
	/* Disconnects everything; completes every outstanding task (posted
	 * receives included) with RDMX_E_CANCELED; frees provider state. */
	void (*ctx_stop)(struct rdmx_ctx *ctx);
	/* The fd the progress engine watches in notification mode. */
	int (*ctx_get_fd)(struct rdmx_ctx *ctx);
	/* Arms notification. Exact: from here on ctx_get_fd's fd is readable
	 * whenever ctx_poll has something to deliver, what arrived before the
	 * call included; or it returns 1, "deliverable now" (the engine then
	 * polls instead of sleeping, and signals its own fd for an outside
	 * loop). 0 armed, 1 ready, or a negative RDMX_E_*. */
	int (*ctx_arm)(struct rdmx_ctx *ctx);
	/* Consumes the notification (e.g. reads an eventfd / acks CQ events). */
	int (*ctx_disarm)(struct rdmx_ctx *ctx);
	/* Delivers up to `budget` completions/events; returns how many. */
	int (*ctx_poll)(struct rdmx_ctx *ctx, unsigned budget);
	/* Optional: the first part of a blocking wait spent in a read of ctx's
	 * only connection, where the provider can (one system call that waits
	 * and reads; a sleep on ctx_get_fd's fd and the read after it take
	 * two). Called on an engine whose only context is ctx, after ctx_arm
	 * found nothing ready, when the sleep may last RDMX__WAIT_READ_MAX_MS or
	 * more; it returns within that time. 1: something came (poll now); 0:
	 * nothing came, or the provider could not wait this way (sleep on the
	 * fd as usual). */
	int (*ctx_wait_read)(struct rdmx_ctx *ctx);

	/* connections (export/connect) */
	int (*conn_export)(struct rdmx_conn *conn, void *details, size_t *len);
	int (*conn_connect)(struct rdmx_conn *conn, const void *details, size_t len);
	/* connections (cm) */
	int (*listen)(struct rdmx_ctx *ctx, uint16_t port);
	void (*stop_listen)(struct rdmx_ctx *ctx);
	/* Optional: deal the listener's cm connections to ctx too
	 * (rdmx_ctx_listen_join); ctx leaves at ctx_stop. */
	int (*listen_join)(struct rdmx_ctx *ctx, struct rdmx_ctx *listener);
	int (*connect_to_addr)(struct rdmx_conn *conn, const struct rdmx_addr *addr, const void *pd,
	                       size_t pd_len);
	int (*conn_accept)(struct rdmx_conn *conn, const void *pd, size_t pd_len);
	int (*conn_reject)(struct rdmx_conn *conn);
	int (*conn_disconnect)(struct rdmx_conn *conn);
	/* Optional (NULL: RDMX_E_NOT_SUPPORTED): seals the data connection of an
	 * exported conn not yet connected (rdmx_conn_set_data_keys). */
	int (*conn_set_keys)(struct rdmx_conn *conn, const struct rdmx_conn_keys *keys);
	/* Frees the provider's connection state; called by the engine after the
	 * final event (FAILURE / DISCONNECTED), after reject, and at ctx_stop for
	 * connections still allocated. */
	void (*conn_release)(struct rdmx_conn *conn);

	/* tasks */
	int (*post_recv)(struct rdmx_ctx *ctx, struct rdmx_task *task);
	/* Every send-side op (task->op != RDMX__OP_RECV). */
	int (*post_send)(struct rdmx_conn *conn, struct rdmx_task *task);
	/* Optional: light messages (engine/msg.h, which holds the contract).
	 * Called on an established conn with src's total length at most
	 * RDMX__MSG_MAX; 0 or RDMX_E_AGAIN. The receiving side calls
	 * ctx->msg_fn from ctx_poll, like a completion. */
	int (*post_msg)(struct rdmx_conn *conn, const struct rdmx_buf *src,
	                const struct rdmx_rbuf *dst, uint32_t imm, uint32_t len);
};

/* A listen group's members as a provider keeps them (listen_join): *n
 * elements of `size` bytes each (pointers to the members' contexts) at
 * `members`, dealt connections in turn, *next the one whose turn it is.
 * Removes the element whose bytes equal *member's, if there is one, moving
 * the later ones down; the member whose turn it was keeps it, and *next
 * stays in range while a member is left. */
static inline void rdmx__lgroup_remove(void *members, size_t size, unsigned *n, unsigned *next,
                                       const void *member)
{
	unsigned char *m = members;

	for (unsigned i = 0; i < *n; i++) {
		if (memcmp(m + i * size, member, size) != 0)
			continue;
		memmove(m + i * size, m + (i + 1) * size, (*n - i - 1) * size);
		(*n)--;
		if (i < *next)
			(*next)--; /* the member whose turn it was keeps it */
		break;
	}
	if (*n)
		*next %= *n;
}

extern const struct rdmx_provider_ops rdmx__tcp_ops;

/* Test seam: opens device `name` of an ops table that is not in the registry
 * (unit tests' mock providers). The ops are checked like a registered
 * provider's. Errors: RDMX_E_INVAL (NULL, missing mandatory op), as dev_open. */
int rdmx__dev_open_ops(const struct rdmx_provider_ops *ops, const char *name,
                       struct rdmx_dev **dev);
#ifdef RDMX_HAVE_VERBS
extern const struct rdmx_provider_ops rdmx__verbs_ops;
#endif

#endif
