/* Task setters and getters. A setter validates the task with the new value
 * on a copy and changes nothing when the value is rejected. */
#include "internal.h"

static int settable(const struct rdmx_task *task)
{
	if (!task)
		return RDMX_E_INVAL;
	if (task->state != RDMX__TASK_IDLE)
		return RDMX_E_BAD_STATE;
	return 0;
}

/* Validates `cand` (a modified copy of task) and commits it. */
static int commit(struct rdmx_task *task, struct rdmx_task *cand)
{
	int rc = rdmx__task_validate(cand);

	if (rc)
		return rc;
	*task = *cand;
	return 0;
}

int rdmx_task_set_conn(struct rdmx_task *task, struct rdmx_conn *conn)
{
	struct rdmx_task cand;
	int rc = settable(task);

	if (rc)
		return rc;
	if (task->op == RDMX__OP_RECV)
		return RDMX_E_INVAL;
	cand = *task;
	cand.conn = conn;
	return commit(task, &cand);
}

int rdmx_task_set_local(struct rdmx_task *task, struct rdmx_buf *buf)
{
	struct rdmx_task cand;
	int rc = settable(task);

	if (rc)
		return rc;
	if (task->op == RDMX__OP_ATOMIC_WRITE || task->op == RDMX__OP_FLUSH)
		return RDMX_E_INVAL;
	cand = *task;
	cand.local = buf;
	return commit(task, &cand);
}

int rdmx_task_set_remote(struct rdmx_task *task, const struct rdmx_rbuf *rbuf)
{
	struct rdmx_task cand;
	int rc = settable(task);

	if (rc)
		return rc;
	if (!rbuf || task->op == RDMX__OP_RECV || task->op == RDMX__OP_SEND ||
	    task->op == RDMX__OP_SEND_IMM)
		return RDMX_E_INVAL;
	cand = *task;
	cand.remote = *rbuf;
	return commit(task, &cand);
}

int rdmx_task_set_imm(struct rdmx_task *task, uint32_t imm)
{
	int rc = settable(task);

	if (rc)
		return rc;
	if (task->op != RDMX__OP_SEND_IMM && task->op != RDMX__OP_WRITE_IMM)
		return RDMX_E_INVAL;
	task->imm = imm;
	return 0;
}

int rdmx_task_set_cmp_swap(struct rdmx_task *task, uint64_t cmp, uint64_t swap)
{
	int rc = settable(task);

	if (rc)
		return rc;
	if (task->op != RDMX__OP_CAS)
		return RDMX_E_INVAL;
	task->op0 = cmp;
	task->op1 = swap;
	return 0;
}

int rdmx_task_set_operand(struct rdmx_task *task, uint64_t value)
{
	int rc = settable(task);

	if (rc)
		return rc;
	if (task->op != RDMX__OP_FADD && task->op != RDMX__OP_ATOMIC_WRITE)
		return RDMX_E_INVAL;
	task->op0 = value;
	return 0;
}

int rdmx_task_set_user_data(struct rdmx_task *task, void *user_data)
{
	int rc = settable(task);

	if (rc)
		return rc;
	task->user_data = user_data;
	return 0;
}

int rdmx_task_get_status(const struct rdmx_task *task)
{
	if (!task)
		return RDMX_E_INVAL;
	return task->state == RDMX__TASK_INFLIGHT ? RDMX_E_AGAIN : task->status;
}

void *rdmx_task_get_user_data(const struct rdmx_task *task)
{
	return task ? task->user_data : NULL;
}

enum rdmx_task_type rdmx_task_get_type(const struct rdmx_task *task)
{
	return task ? task->type : RDMX_TASK_TYPE_COUNT;
}

struct rdmx_conn *rdmx_task_get_conn(const struct rdmx_task *task)
{
	return task ? task->conn : NULL;
}

struct rdmx_buf *rdmx_task_get_local(const struct rdmx_task *task)
{
	return task ? task->local : NULL;
}

uint32_t rdmx_task_get_imm(const struct rdmx_task *task)
{
	return task ? task->imm : 0;
}

enum rdmx_opcode rdmx_task_receive_get_opcode(const struct rdmx_task *task)
{
	return task ? task->res_opcode : RDMX_OPCODE_SEND;
}

uint32_t rdmx_task_receive_get_len(const struct rdmx_task *task)
{
	return task ? task->res_len : 0;
}

uint32_t rdmx_task_receive_get_imm(const struct rdmx_task *task)
{
	return task ? task->res_imm : 0;
}

struct rdmx_conn *rdmx_task_receive_get_conn(const struct rdmx_task *task)
{
	return task ? task->res_conn : NULL;
}

uint32_t rdmx_task_read_get_len(const struct rdmx_task *task)
{
	if (!task || task->op != RDMX__OP_READ || task->status != 0)
		return 0;
	return (uint32_t)task->len;
}
