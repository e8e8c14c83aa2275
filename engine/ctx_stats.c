/* A context's counters (rdmx_ctx_get_stats) and the names of task types.
 * The counting itself is a plain increment where a task is submitted and
 * where it completes (engine/task.c) and where a connection event is
 * reported (engine/conn.c): one thread runs a context, so no atomics. */
#include <string.h>

#include "internal.h"

int rdmx_ctx_get_stats(const struct rdmx_ctx *ctx, struct rdmx_ctx_stats *stats)
{
	if (!ctx || !stats)
		return RDMX_E_INVAL;
	memcpy(stats, &ctx->stats, sizeof(*stats));
	return 0;
}

static const char *const type_names[RDMX_TASK_TYPE_COUNT] = {
    [RDMX_TASK_RECEIVE] = "receive",
    [RDMX_TASK_SEND] = "send",
    [RDMX_TASK_SEND_IMM] = "send_imm",
    [RDMX_TASK_READ] = "read",
    [RDMX_TASK_WRITE] = "write",
    [RDMX_TASK_WRITE_IMM] = "write_imm",
    [RDMX_TASK_ATOMIC_CAS] = "atomic_cas",
    [RDMX_TASK_ATOMIC_FADD] = "atomic_fadd",
    [RDMX_TASK_ATOMIC_WRITE] = "atomic_write",
    [RDMX_TASK_FLUSH] = "flush",
    [RDMX_TASK_SYNC_EVENT_GET] = "sync_event_get",
    [RDMX_TASK_SYNC_EVENT_NOTIFY_SET] = "sync_event_notify_set",
    [RDMX_TASK_SYNC_EVENT_NOTIFY_ADD] = "sync_event_notify_add",
};

const char *rdmx_task_type_name(enum rdmx_task_type type)
{
	if ((unsigned)type >= RDMX_TASK_TYPE_COUNT)
		return "unknown";
	return type_names[type];
}
