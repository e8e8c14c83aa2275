/* rdmx devices: an RDMA NIC (verbs provider) or the software "tcp" device.
 *
 * Naming: verbs device names (rxe0, mlx5_0) open the verbs provider; "tcp"
 * opens the software provider. rdmx_dev_open(NULL) honours the environment
 * variable RDMX_DEVICE, else prefers the first verbs device, else "tcp".
 * The tcp device binds its data listener to RDMX_TCP_ADDR (default 127.0.0.1)
 * unless opened with rdmx_dev_open_by_addr().
 *
 * Threading: a device may be shared by contexts on different threads; open and
 * close are not thread-safe against each other on the same device. */
#ifndef RDMX_DEV_H
#define RDMX_DEV_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_dev;

#define RDMX_DEV_NAME_MAX 64

struct rdmx_dev_info {
	char name[RDMX_DEV_NAME_MAX]; /* e.g. "rxe0", "tcp" */
	char provider[16];            /* "verbs" or "tcp" */
};

/* Transport types (bit mask in caps.transport_types). */
#define RDMX_TRANSPORT_RC 0x1u
#define RDMX_TRANSPORT_DC 0x2u

struct rdmx_dev_caps {
	uint32_t max_send_queue_size;
	uint32_t max_recv_queue_size;
	uint32_t max_buf_list_len; /* scatter-gather entries per task */
	uint64_t max_message_size; /* bytes per send/write/read task */
	uint32_t gid_table_len;
	uint32_t transport_types; /* RDMX_TRANSPORT_* mask */
	uint32_t max_connections; /* per context */
	uint32_t max_inline;      /* bytes of inline data per send/write (0: none) */
	bool atomics;             /* cas / fetch-add */
	bool atomic_write_native; /* false: atomic_write is emulated (same guarantee) */
	bool flush_native;        /* false: flush is emulated (same guarantee) */
	bool odp;                 /* on-demand paging */
};

/* Lists the devices that can be opened. Writes at most `max` entries to
 * `infos` (may be NULL when max is 0) and the total number available to
 * `*count`. The tcp device is always listed last. Errors: RDMX_E_INVAL. */
int rdmx_dev_list(struct rdmx_dev_info *infos, size_t max, size_t *count);

/* Opens a device by name (NULL: see above). *dev is written only on success.
 * Errors: RDMX_E_INVAL, RDMX_E_NO_DEVICE, RDMX_E_NOMEM, RDMX_E_PROVIDER. */
int rdmx_dev_open(const char *name, struct rdmx_dev **dev);

/* Opens the device that owns IPv4/IPv6 address `ip` (a verbs device whose GID
 * table holds it; otherwise the tcp device bound to that local address).
 * Errors: RDMX_E_INVAL (not an address), RDMX_E_NO_DEVICE (address not local). */
int rdmx_dev_open_by_addr(const char *ip, struct rdmx_dev **dev);

/* Closes the device and sets *dev to NULL; NULL or *dev == NULL is a no-op.
 * Errors: RDMX_E_BAD_STATE while memory regions or contexts still use it
 * (the device stays open). */
int rdmx_dev_close(struct rdmx_dev **dev);

int rdmx_dev_query_caps(const struct rdmx_dev *dev, struct rdmx_dev_caps *caps);

/* GID `index` of the device's port. tcp: index 0 is the IPv4-mapped IPv6
 * address of its listener. Errors: RDMX_E_INVAL (index out of the table). */
int rdmx_dev_get_gid(const struct rdmx_dev *dev, uint32_t index, uint8_t gid[16]);

/* "verbs" or "tcp" (never NULL for a valid device; NULL for NULL). */
const char *rdmx_dev_provider(const struct rdmx_dev *dev);

/* The device's name, e.g. "rxe0" or "tcp" (NULL for NULL). */
const char *rdmx_dev_name(const struct rdmx_dev *dev);

#ifdef __cplusplus
}
#endif
#endif
