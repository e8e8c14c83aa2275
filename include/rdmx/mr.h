/* rdmx memory: local registered regions, their descriptors, remote regions,
 * and the buffer types tasks take.
 *
 * Least privilege: a region gets exactly the access flags asked for (local
 * read is always allowed). Remote tasks are checked against the target
 * region's remote key, bounds and flags on every operation.
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
struct rdmx_mr;        /* local registered region */
struct rdmx_mr_remote; /* a peer's region, built from its descriptor */

enum rdmx_access {
	RDMX_ACCESS_LOCAL_WRITE = 1u << 0,  /* receive/read/atomic results land here */
	RDMX_ACCESS_REMOTE_READ = 1u << 1,  /* peers may read (and flush) */
	RDMX_ACCESS_REMOTE_WRITE = 1u << 2, /* peers may write / write_imm */
	RDMX_ACCESS_REMOTE_ATOMIC = 1u << 3 /* peers may cas / fetch-add / atomic write */
};
#define RDMX_ACCESS_ALL 0xfu

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
 * only). *mr is written only on success.
 * Errors: RDMX_E_INVAL (NULL, len 0, unknown flag), RDMX_E_NOMEM, RDMX_E_PROVIDER. */
int rdmx_mr_reg(struct rdmx_dev *dev, void *addr, size_t len, unsigned access, struct rdmx_mr **mr);

/* Deregisters and sets *mr to NULL; from this call on its remote key is
 * invalid: remote tasks naming it fail with RDMX_E_REMOTE_ACCESS.
 * NULL / *mr == NULL is a no-op. The caller must not deregister memory that
 * in-flight local tasks use (rdma-core's rule too). */
int rdmx_mr_dereg(struct rdmx_mr **mr);

int rdmx_mr_get_ptr(const struct rdmx_mr *mr, void **ptr);
int rdmx_mr_get_size(const struct rdmx_mr *mr, size_t *size);
int rdmx_mr_get_access(const struct rdmx_mr *mr, unsigned *access);

/* Writes the descriptor (RDMX_MR_DESCRIPTOR_SIZE bytes) into desc.
 * Errors: RDMX_E_INVAL (NULL), RDMX_E_TOO_BIG never (size is fixed). */
int rdmx_mr_get_descriptor(const struct rdmx_mr *mr, void *desc);
int rdmx_mr_get_descriptor_size(const struct rdmx_mr *mr, size_t *size);

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
