/* rdmx sync events: a 64-bit word in registered memory that peers read, set
 * or add to through tasks, and the owner waits on locally. The owner shares
 * it with rdmx_sync_event_get_descriptor(); a peer turns the descriptor into
 * a struct rdmx_mr_remote (rdmx_mr_remote_from_descriptor) and uses the
 * sync_event tasks, built on read / atomic write / fetch-add. */
#ifndef RDMX_SYNC_EVENT_H
#define RDMX_SYNC_EVENT_H

#include <stdint.h>

#include <rdmx/mr.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_dev;
struct rdmx_pe;
struct rdmx_ctx;
struct rdmx_conn;
struct rdmx_task;
struct rdmx_sync_event;

/* Allocates an aligned word set to `initial`, registered with remote read,
 * write and atomic access. */
int rdmx_sync_event_create(struct rdmx_dev *dev, uint64_t initial, struct rdmx_sync_event **ev);
int rdmx_sync_event_destroy(struct rdmx_sync_event **ev);
int rdmx_sync_event_get_value(const struct rdmx_sync_event *ev, uint64_t *value);
int rdmx_sync_event_set_value(struct rdmx_sync_event *ev, uint64_t value);
/* Writes RDMX_MR_DESCRIPTOR_SIZE bytes. Secret: share over a secure channel. */
int rdmx_sync_event_get_descriptor(const struct rdmx_sync_event *ev, void *desc);

/* Waits until the word is >= value. Drives `pe` meanwhile when not NULL.
 * timeout_ms -1 waits forever. Errors: RDMX_E_TIMEDOUT. */
int rdmx_sync_event_wait_ge(struct rdmx_sync_event *ev, uint64_t value, struct rdmx_pe *pe,
                            int timeout_ms);

/* Remote tasks on a peer's event (task types RDMX_TASK_SYNC_EVENT_*). */
int rdmx_task_sync_event_get_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn,
                                   struct rdmx_mr_remote *event, struct rdmx_buf *result,
                                   void *user_data, struct rdmx_task **task);
int rdmx_task_sync_event_notify_set_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn,
                                          struct rdmx_mr_remote *event, uint64_t value,
                                          void *user_data, struct rdmx_task **task);
/* result receives the previous value (8-byte local buffer, LOCAL_WRITE). */
int rdmx_task_sync_event_notify_add_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn,
                                          struct rdmx_mr_remote *event, uint64_t add,
                                          struct rdmx_buf *result, void *user_data,
                                          struct rdmx_task **task);

#ifdef __cplusplus
}
#endif
#endif
