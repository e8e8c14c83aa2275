/* rdmx memory: local registered regions, their descriptors, connection-bound
 * grants, remote regions, and the buffer types tasks take.
 *
 * Least privilege: a region gets exactly the access flags asked for (local
 * read is always allowed). Remote tasks are checked against the target
 * region's remote key, bounds and flags on every operation.
 *
 * Two kinds of descriptor grant remote access (both have the format below):
 * - device-wide (rdmx_mr_get_descriptor): the region's own remote key, as a
 *   DOCA mmap export or a verbs MR rkey. It works through EVERY connection of
 *   every context on the device, for as long as the region is registered.
 *   Use it only where any peer of the device may touch the region.
 * - connection-bound (rdmx_mr_grant): a fresh key for [offset, offset+len) of
 *   the region, with at most the access granted, that works only through one
 *   connection and dies when that connection ends or the grant is revoked
 *   (the memory-window model: a type-2 window bound to the QP on verbs, the
 *   same check in the tcp provider's soft NIC). A remote task naming it
 *   through any other connection, after the end or the revoke, out of its
 *   range or beyond its access fails with RDMX_E_REMOTE_ACCESS at the
 *   initiator (and moves that connection to error, as every remote access
 *   violation does); the target logs the refusal.
 * A region registered with RDMX_ACCESS_GRANT_ONLY has no device-wide remote
 * access at all: its remote flags are the ceiling of what grants may give.
 *
 * Descriptor wire format (RDMX_MR_DESCRIPTOR_SIZE bytes, little-endian, the
 * same for every provider; it is a secret: it grants remote access):
 *   0  u16 magic 0x5852 ("RX")   2 u8 version (1)   3 u8 provider (1 tcp, 2 verbs)
 *   4  u32 access flags          8 u64 address      16 u64 length
 *   24 u32 remote key            28 u32 reserved (0)
 */
#ifndef RDMX_MR_H
#define RDMX_MR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_dev;
struct rdmx_conn;
struct rdmx_mr;        /* local registered region */
struct rdmx_mr_grant;  /* a connection-bound grant of (part of) a region */
struct rdmx_mr_remote; /* a peer's region, built from its descriptor */

enum rdmx_access {
	RDMX_ACCESS_LOCAL_WRITE = 1u << 0,  /* receive/read/atomic results land here */
	RDMX_ACCESS_REMOTE_READ = 1u << 1,  /* peers may read (and flush) */
	RDMX_ACCESS_REMOTE_WRITE = 1u << 2, /* peers may write / write_imm */
	RDMX_ACCESS_REMOTE_ATOMIC = 1u << 3 /* peers may cas / fetch-add / atomic write */
};
#define RDMX_ACCESS_ALL 0xfu
/* Registration flag (rdmx_mr_reg only, never in a descriptor or in
 * rdmx_mr_get_access): the region's remote flags are reachable only through
 * grants; its device-wide descriptor is refused (RDMX_E_BAD_STATE) and its own
 * key grants no remote access. */
#define RDMX_ACCESS_GRANT_ONLY (1u << 16)

#define RDMX_MR_DESCRIPTOR_SIZE 32u

/* A local buffer: a slice [addr, addr+len) of a registered region. `next`
 * chains buffers into a scatter-gather list (at most the context's max buf
 * list length). Caller-owned: must stay valid until the task that uses it
 * completes. */
struct rdmx_buf {
	struct rdmx_mr *mr;
	void *addr;
	size_t len;
	struct rdmx_buf *next;
};

/* A remote buffer: bytes [offset, offset+len) of a peer's region. Offsets are
 * relative to the start of the remote region. Caller-owned like rdmx_buf. */
struct rdmx_rbuf {
	struct rdmx_mr_remote *mr;
	uint64_t offset;
	uint64_t len;
};

/* Registers [addr, addr+len) with `access` (RDMX_ACCESS_* mask, 0 = local read
 * only, optionally | RDMX_ACCESS_GRANT_ONLY). *mr is written only on success.
 * Errors: RDMX_E_INVAL (NULL, len 0, unknown flag), RDMX_E_NOMEM, RDMX_E_PROVIDER,
 * RDMX_E_NOT_SUPPORTED (RDMX_ACCESS_GRANT_ONLY on a device without grants). */
int rdmx_mr_reg(struct rdmx_dev *dev, void *addr, size_t len, unsigned access, struct rdmx_mr **mr);

/* Deregisters and sets *mr to NULL; from this call on its remote key is
 * invalid: remote tasks naming it fail with RDMX_E_REMOTE_ACCESS.
 * NULL / *mr == NULL is a no-op. The caller must not deregister memory that
 * in-flight local tasks use (rdma-core's rule too).
 * Errors: RDMX_E_BAD_STATE while grants of the region exist (revoke them
 * first, as verbs refuses to deregister a region with bound windows);
 * nothing changes then. */
int rdmx_mr_dereg(struct rdmx_mr **mr);

int rdmx_mr_get_ptr(const struct rdmx_mr *mr, void **ptr);
int rdmx_mr_get_size(const struct rdmx_mr *mr, size_t *size);
int rdmx_mr_get_access(const struct rdmx_mr *mr, unsigned *access);

/* Writes the region's DEVICE-WIDE descriptor (RDMX_MR_DESCRIPTOR_SIZE bytes)
 * into desc: it works through any connection of the device (see the top of
 * this file); prefer rdmx_mr_grant for a single peer.
 * Errors: RDMX_E_INVAL (NULL), RDMX_E_BAD_STATE (registered with
 * RDMX_ACCESS_GRANT_ONLY: there is no device-wide descriptor). */
int rdmx_mr_get_descriptor(const struct rdmx_mr *mr, void *desc);
int rdmx_mr_get_descriptor_size(const struct rdmx_mr *mr, size_t *size);

/* ---- connection-bound grants ----
 *
 * States: ACTIVE from rdmx_mr_grant on; ENDED once the connection reached its
 * final event (failure or disconnected, which includes rdmx_ctx_stop): the key
 * is invalid from that moment, before the user's failure / disconnected
 * callback runs. rdmx_mr_grant_revoke invalidates (if still ACTIVE) and frees.
 *
 * Ownership: the caller owns the grant and must revoke it, also once ENDED,
 * and before deregistering the region. The grant does not keep the
 * connection alive; it never touches it after ENDED.
 *
 * Threading: grant, revoke and the getters run on the thread that drives the
 * connection's context (the one that submits its tasks and calls progress).
 *
 * When the key starts to work: on tcp at once. On verbs rdmx_mr_grant posts
 * the window bind (IBV_WR_BIND_MW) on the connection's send queue and returns
 * without waiting: the bind is ordered before every task submitted on that
 * connection afterwards, so a peer that learnt the descriptor from a message
 * sent on the same connection after the grant call finds the key bound. A
 * peer told through another path (out of band) must be told after a task of
 * the connection submitted after the grant completed. A bind the device
 * refuses fails the connection as any send-queue error does (RC semantics:
 * its tasks complete with an error, the grant ends with it).
 * Revoke is synchronous on both providers: when it returns, no remote access
 * through the key happens any more (tcp waits for a copy in progress; verbs
 * deallocates the window). On verbs a revoke that comes before the bind was
 * done (no task submitted after the grant has completed yet) makes the device
 * refuse that bind, which fails the connection like any refused work request:
 * revoke a fresh grant only on a connection you are ending anyway. */

enum rdmx_mr_grant_state {
	RDMX_MR_GRANT_ACTIVE = 0,
	RDMX_MR_GRANT_ENDED = 1, /* the connection ended: the key no longer works */
};

/* Grants [offset, offset+len) of mr to `conn` with `access` (a non-empty mask
 * of RDMX_ACCESS_REMOTE_*, all of them in the region's flags). conn must be
 * ESTABLISHED (not closing) on a running context of mr's device. *grant is
 * written only on success.
 * Errors: RDMX_E_INVAL (NULL, len 0, range outside the region, access empty,
 * not remote or beyond the region's, conn on another device),
 * RDMX_E_BAD_STATE (conn not established or disconnecting),
 * RDMX_E_NOT_SUPPORTED (the device has no memory windows), RDMX_E_NOMEM,
 * RDMX_E_FULL (no free key or the send queue is full: retry after progress),
 * RDMX_E_PROVIDER. */
int rdmx_mr_grant(struct rdmx_mr *mr, struct rdmx_conn *conn, size_t offset, size_t len,
                  unsigned access, struct rdmx_mr_grant **grant);

/* Invalidates the key (if ACTIVE), frees the grant and sets *grant to NULL.
 * NULL / *grant == NULL is a no-op. Returns 0. */
int rdmx_mr_grant_revoke(struct rdmx_mr_grant **grant);

/* Writes the grant's descriptor (RDMX_MR_DESCRIPTOR_SIZE bytes, the format
 * above: address = region start + offset, length = len, access = the granted
 * flags, the grant's key). The peer uses it with rdmx_mr_remote_from_descriptor
 * like any descriptor; offsets in its tasks count from the granted start.
 * Errors: RDMX_E_INVAL (NULL), RDMX_E_BAD_STATE (ENDED). */
int rdmx_mr_grant_get_descriptor(const struct rdmx_mr_grant *grant, void *desc);
int rdmx_mr_grant_get_state(const struct rdmx_mr_grant *grant, enum rdmx_mr_grant_state *state);

/* Builds a remote region from a peer's descriptor. *remote written on success.
 * Errors: RDMX_E_INVAL (NULL, wrong size, bad magic/version/provider). */
int rdmx_mr_remote_from_descriptor(const void *desc, size_t desc_size,
                                   struct rdmx_mr_remote **remote);
int rdmx_mr_remote_delete(struct rdmx_mr_remote **remote);
int rdmx_mr_remote_get_size(const struct rdmx_mr_remote *remote, size_t *size);
int rdmx_mr_remote_get_access(const struct rdmx_mr_remote *remote, unsigned *access);

#ifdef __cplusplus
}
#endif
#endif
