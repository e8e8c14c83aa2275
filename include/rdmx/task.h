/* rdmx tasks: pooled, typed work items (DOCA-RDMA task model).
 *
 * A task is allocated from its context's pool for its type (sized by
 * rdmx_ctx_set_task_conf before start), submitted, and completed exactly once
 * by the type's ok or error callback from rdmx_pe_progress() (or from
 * rdmx_ctx_stop). After completion the task may be changed with the setters
 * and resubmitted without being freed: the fast path allocates nothing.
 * rdmx_task_free returns it to the pool (never while in flight).
 *
 * Buffers: `struct rdmx_buf` chains are referenced, not copied: they must
 * stay valid until completion. `struct rdmx_rbuf` values are copied.
 *
 * Semantics both providers keep:
 * - Receive tasks belong to the context (a shared receive queue). A completed
 *   receive tells the connection and the opcode: SEND, SEND_WITH_IMM, or
 *   WRITE_WITH_IMM (then the data is in the writer's target region, not in
 *   the receive buffer; the length is the written length).
 * - Send-side tasks of one connection complete in submission order. A write's
 *   success means the data is placed in the peer's memory; a flush completes
 *   after every earlier write on the connection is visible in the target.
 * - Remote tasks are checked against key, bounds (no wrap-around) and the
 *   target region's access flags; a violation fails that task with
 *   RDMX_E_REMOTE_ACCESS and moves the connection to error: later tasks on it
 *   complete with RDMX_E_CONN_ABORTED; other connections are untouched.
 * - A send with no receive posted at the target is retried per the rnr retry
 *   count, then fails with RDMX_E_RNR (connection to error); nothing is
 *   dropped or reordered.
 * - Atomics act on 8-byte aligned 64-bit words in host byte order; a
 *   misaligned target fails with RDMX_E_INVAL at submit. atomic_write and
 *   flush are native where the device has them, otherwise emulated with the
 *   same guarantee (see rdmx_dev_caps). Flush needs RDMX_ACCESS_REMOTE_READ on
 *   the target region.
 *
 * Errors of alloc: RDMX_E_BAD_STATE (context not RUNNING, type not
 * configured), RDMX_E_FULL (pool exhausted), RDMX_E_INVAL (NULL, chain longer
 * than the max buf list length, region of another device, bad lengths).
 * Errors of submit: RDMX_E_BAD_STATE (task in flight, connection not yet
 * connected or already freed), RDMX_E_INVAL (as alloc), RDMX_E_FULL (send or
 * receive queue full); a submit on a connection in error returns 0 and the
 * task completes with RDMX_E_CONN_ABORTED, as RC does. */
#ifndef RDMX_TASK_H
#define RDMX_TASK_H

#include <stddef.h>
#include <stdint.h>

#include <rdmx/mr.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_ctx;
struct rdmx_conn;
struct rdmx_task;

enum rdmx_task_type {
	RDMX_TASK_RECEIVE = 0,
	RDMX_TASK_SEND,
	RDMX_TASK_SEND_IMM,
	RDMX_TASK_READ,
	RDMX_TASK_WRITE,
	RDMX_TASK_WRITE_IMM,
	RDMX_TASK_ATOMIC_CAS,
	RDMX_TASK_ATOMIC_FADD,
	RDMX_TASK_ATOMIC_WRITE,
	RDMX_TASK_FLUSH,
	RDMX_TASK_SYNC_EVENT_GET,
	RDMX_TASK_SYNC_EVENT_NOTIFY_SET,
	RDMX_TASK_SYNC_EVENT_NOTIFY_ADD,
	RDMX_TASK_TYPE_COUNT
};

enum rdmx_opcode {
	RDMX_OPCODE_SEND = 0,
	RDMX_OPCODE_SEND_WITH_IMM = 1,
	RDMX_OPCODE_WRITE_WITH_IMM = 2,
};

typedef void (*rdmx_task_cb)(struct rdmx_task *task, void *task_user_data, void *ctx_user_data);

/* ---- allocation (the task is ready to submit) ---- */
/* dst may be NULL: such a receive only takes zero-length sends and
 * write-with-immediate notifications. */
int rdmx_task_receive_alloc(struct rdmx_ctx *ctx, struct rdmx_buf *dst, void *user_data,
                            struct rdmx_task **task);
int rdmx_task_send_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn, struct rdmx_buf *src,
                         void *user_data, struct rdmx_task **task);
int rdmx_task_send_imm_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn, struct rdmx_buf *src,
                             uint32_t imm, void *user_data, struct rdmx_task **task);
/* Reads src->len bytes of the remote range into the dst chain (whose total
 * length must be >= src->len). */
int rdmx_task_read_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn, const struct rdmx_rbuf *src,
                         struct rdmx_buf *dst, void *user_data, struct rdmx_task **task);
/* Writes the src chain (total T bytes; src required) to
 * [dst->offset, dst->offset + T); dst->len must be 0 (means T) or equal T.
 * write_imm accepts a NULL src: a pure notification (T = 0) that consumes
 * one receive at the peer. */
int rdmx_task_write_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn, struct rdmx_buf *src,
                          const struct rdmx_rbuf *dst, void *user_data, struct rdmx_task **task);
int rdmx_task_write_imm_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn, struct rdmx_buf *src,
                              const struct rdmx_rbuf *dst, uint32_t imm, void *user_data,
                              struct rdmx_task **task);
/* Atomics: dst names one 8-byte aligned word (dst->len 0 or 8); result is an
 * 8-byte local buffer (LOCAL_WRITE) that receives the previous value. */
int rdmx_task_atomic_cas_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn,
                               const struct rdmx_rbuf *dst, struct rdmx_buf *result, uint64_t cmp,
                               uint64_t swap, void *user_data, struct rdmx_task **task);
int rdmx_task_atomic_fadd_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn,
                                const struct rdmx_rbuf *dst, struct rdmx_buf *result, uint64_t add,
                                void *user_data, struct rdmx_task **task);
int rdmx_task_atomic_write_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn,
                                 const struct rdmx_rbuf *dst, uint64_t value, void *user_data,
                                 struct rdmx_task **task);
/* Makes every earlier write on conn visible in the range (durable where the
 * target memory is persistent) before completing. */
int rdmx_task_flush_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn,
                          const struct rdmx_rbuf *range, void *user_data, struct rdmx_task **task);

/* Submit / free. */
int rdmx_task_submit(struct rdmx_task *task);
/* RDMX_E_BAD_STATE while in flight; NULL is a no-op returning 0. */
int rdmx_task_free(struct rdmx_task *task);

/* ---- setters (not while in flight: RDMX_E_BAD_STATE; a field the type does
 * not have: RDMX_E_INVAL) ---- */
int rdmx_task_set_conn(struct rdmx_task *task, struct rdmx_conn *conn);
/* The local chain: src (send, write), dst (receive, read), result (atomics). */
int rdmx_task_set_local(struct rdmx_task *task, struct rdmx_buf *buf);
/* The remote range (read, write, atomics, flush, sync events). */
int rdmx_task_set_remote(struct rdmx_task *task, const struct rdmx_rbuf *rbuf);
int rdmx_task_set_imm(struct rdmx_task *task, uint32_t imm);
int rdmx_task_set_cmp_swap(struct rdmx_task *task, uint64_t cmp, uint64_t swap);
/* fetch-add operand, atomic_write / notify_set value, notify_add operand. */
int rdmx_task_set_operand(struct rdmx_task *task, uint64_t value);
int rdmx_task_set_user_data(struct rdmx_task *task, void *user_data);

/* ---- getters (return values directly) ---- */
/* 0 after success, the RDMX_E_* code after failure, RDMX_E_AGAIN while in
 * flight or never submitted. */
int rdmx_task_get_status(const struct rdmx_task *task);
void *rdmx_task_get_user_data(const struct rdmx_task *task);
enum rdmx_task_type rdmx_task_get_type(const struct rdmx_task *task);
struct rdmx_conn *rdmx_task_get_conn(const struct rdmx_task *task);
struct rdmx_buf *rdmx_task_get_local(const struct rdmx_task *task);
uint32_t rdmx_task_get_imm(const struct rdmx_task *task);

/* Receive results (valid after a successful completion). */
enum rdmx_opcode rdmx_task_receive_get_opcode(const struct rdmx_task *task);
uint32_t rdmx_task_receive_get_len(const struct rdmx_task *task);
uint32_t rdmx_task_receive_get_imm(const struct rdmx_task *task);
struct rdmx_conn *rdmx_task_receive_get_conn(const struct rdmx_task *task);
/* Bytes read (read and sync_event_get; 8 for the latter). */
uint32_t rdmx_task_read_get_len(const struct rdmx_task *task);

#ifdef __cplusplus
}
#endif
#endif
