/* Tasks: allocation and setter validation, pools, getters (no connection
 * needs to be up: alloc takes a NULL connection). Runs on the mock and on
 * the real device. */
#include <string.h>

#include "helpers.h"
#include "internal.h"

static void cb(struct rdmx_task *t, void *u, void *c)
{
	(void)t;
	(void)u;
	(void)c;
}

struct env {
	struct rdmx_dev *dev, *other_dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_mr *rw, *ro, *foreign;
	struct rdmx_mr_remote *remote, *remote_other_provider;
	_Alignas(64) uint8_t mem[4096];
	uint8_t ro_mem[256];
	uint8_t foreign_mem[256];
};

static struct env e;

static void env_open(const char *devname, uint32_t per_type)
{
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];

	memset(&e, 0, sizeof(e));
	assert_ok(test_dev_open(devname, &e.dev));
	assert_ok(mock_dev_open(&e.other_dev));
	assert_ok(rdmx_pe_create(&e.pe));
	assert_ok(rdmx_ctx_create(e.dev, e.pe, &e.ctx));
	assert_ok(rdmx_ctx_set_max_send_buf_list_len(e.ctx, 2));
	assert_ok(rdmx_ctx_set_max_recv_buf_list_len(e.ctx, 2));
	for (int t = 0; t < RDMX_TASK_TYPE_COUNT; t++)
		if (t != RDMX_TASK_FLUSH) /* left unconfigured on purpose */
			assert_ok(rdmx_ctx_set_task_conf(e.ctx, (enum rdmx_task_type)t, cb, cb,
			                                 per_type));
	assert_ok(rdmx_mr_reg(e.dev, e.mem, sizeof(e.mem), RDMX_ACCESS_ALL, &e.rw));
	assert_ok(rdmx_mr_reg(e.dev, e.ro_mem, sizeof(e.ro_mem), 0, &e.ro));
	assert_ok(rdmx_mr_reg(e.other_dev, e.foreign_mem, sizeof(e.foreign_mem), RDMX_ACCESS_ALL,
	                      &e.foreign));
	assert_ok(rdmx_mr_get_descriptor(e.rw, desc));
	assert_ok(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &e.remote));
	desc[3] =
	    e.dev->ops->id == RDMX_PROVIDER_ID_TCP ? RDMX_PROVIDER_ID_VERBS : RDMX_PROVIDER_ID_TCP;
	assert_ok(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &e.remote_other_provider));
}

static void env_close(void)
{
	enum rdmx_ctx_state st;

	assert_ok(rdmx_ctx_get_state(e.ctx, &st));
	if (st == RDMX_CTX_RUNNING)
		assert_ok(rdmx_ctx_stop(e.ctx));
	assert_ok(rdmx_ctx_destroy(&e.ctx));
	assert_ok(rdmx_pe_destroy(&e.pe));
	assert_ok(rdmx_mr_remote_delete(&e.remote));
	assert_ok(rdmx_mr_remote_delete(&e.remote_other_provider));
	assert_ok(rdmx_mr_dereg(&e.rw));
	assert_ok(rdmx_mr_dereg(&e.ro));
	assert_ok(rdmx_mr_dereg(&e.foreign));
	assert_ok(rdmx_dev_close(&e.dev));
	assert_ok(rdmx_dev_close(&e.other_dev));
}

static struct rdmx_buf buf(struct rdmx_mr *mr, size_t off, size_t len)
{
	void *base;

	rdmx_mr_get_ptr(mr, &base);
	return (struct rdmx_buf){.mr = mr, .addr = (uint8_t *)base + off, .len = len};
}

#define ALLOC_FAILS(call, want)                                                                    \
	do {                                                                                       \
		struct rdmx_task *t_ = (void *)0x1, **out_ = &t_;                                  \
		(void)out_;                                                                        \
		assert_rc(call, want);                                                             \
		cr_assert_eq(t_, (void *)0x1, "task written on failure");                          \
	} while (0)

DEVICE_TEST(task, alloc_needs_running_context_and_conf)
{
	struct rdmx_task *t = NULL;
	struct rdmx_rbuf r = {.mr = NULL};

	env_open(devname, 2);
	ALLOC_FAILS(rdmx_task_send_alloc(e.ctx, NULL, NULL, NULL, out_), RDMX_E_BAD_STATE);
	assert_ok(rdmx_ctx_start(e.ctx));
	r.mr = e.remote;
	ALLOC_FAILS(rdmx_task_flush_alloc(e.ctx, NULL, &r, NULL, out_), RDMX_E_BAD_STATE);
	ALLOC_FAILS(rdmx_task_send_alloc(NULL, NULL, NULL, NULL, out_), RDMX_E_INVAL);
	assert_rc(rdmx_task_send_alloc(e.ctx, NULL, NULL, NULL, NULL), RDMX_E_INVAL);
	assert_ok(rdmx_task_send_alloc(e.ctx, NULL, NULL, NULL, &t));
	cr_assert_eq(rdmx_task_get_type(t), RDMX_TASK_SEND);
	cr_assert_eq(rdmx_task_get_status(t), RDMX_E_AGAIN);
	assert_ok(rdmx_task_free(t));
	assert_ok(rdmx_ctx_stop(e.ctx));
	ALLOC_FAILS(rdmx_task_send_alloc(e.ctx, NULL, NULL, NULL, out_), RDMX_E_BAD_STATE);
	env_close();
}

DEVICE_TEST(task, pool_exhaustion_and_free)
{
	struct rdmx_task *a, *b, *c;

	env_open(devname, 2);
	assert_ok(rdmx_ctx_start(e.ctx));
	assert_ok(rdmx_task_receive_alloc(e.ctx, NULL, (void *)0x11, &a));
	assert_ok(rdmx_task_receive_alloc(e.ctx, NULL, (void *)0x22, &b));
	ALLOC_FAILS(rdmx_task_receive_alloc(e.ctx, NULL, NULL, out_), RDMX_E_FULL);
	/* other types have their own pools */
	assert_ok(rdmx_task_send_alloc(e.ctx, NULL, NULL, NULL, &c));
	cr_assert_eq(rdmx_task_get_user_data(a), (void *)0x11);
	assert_ok(rdmx_task_free(a));
	assert_rc(rdmx_task_free(a), RDMX_E_BAD_STATE); /* double free */
	assert_ok(rdmx_task_receive_alloc(e.ctx, NULL, NULL, &a));
	cr_assert_null(rdmx_task_get_user_data(a));
	assert_ok(rdmx_task_free(NULL));
	/* stop frees every allocated task */
	env_close();
}

DEVICE_TEST(task, local_chain_checks)
{
	struct rdmx_buf b1, b2, b3;
	struct rdmx_task *t;

	env_open(devname, 4);
	assert_ok(rdmx_ctx_start(e.ctx));
	b1 = buf(e.rw, 0, 100);
	b2 = buf(e.rw, 100, 100);
	b3 = buf(e.rw, 200, 100);
	b1.next = &b2;
	assert_ok(rdmx_task_send_alloc(e.ctx, NULL, &b1, NULL, &t)); /* 2 entries: max */
	assert_ok(rdmx_task_free(t));
	b2.next = &b3;
	ALLOC_FAILS(rdmx_task_send_alloc(e.ctx, NULL, &b1, NULL, out_), RDMX_E_INVAL);
	b2.next = &b1; /* a cycle ends at the length limit */
	ALLOC_FAILS(rdmx_task_send_alloc(e.ctx, NULL, &b1, NULL, out_), RDMX_E_INVAL);
	b1.next = NULL;

	/* bounds: inside, last byte, past the end, before the start, wrapping */
	b1 = buf(e.rw, 0, sizeof(e.mem));
	assert_ok(rdmx_task_send_alloc(e.ctx, NULL, &b1, NULL, &t));
	assert_ok(rdmx_task_free(t));
	b1 = buf(e.rw, sizeof(e.mem) - 1, 2);
	ALLOC_FAILS(rdmx_task_send_alloc(e.ctx, NULL, &b1, NULL, out_), RDMX_E_INVAL);
	b1 = buf(e.rw, 0, 8);
	b1.addr = e.mem - 1;
	ALLOC_FAILS(rdmx_task_send_alloc(e.ctx, NULL, &b1, NULL, out_), RDMX_E_INVAL);
	b1 = buf(e.rw, 16, SIZE_MAX - 8);
	ALLOC_FAILS(rdmx_task_send_alloc(e.ctx, NULL, &b1, NULL, out_), RDMX_E_INVAL);
	b1 = buf(e.rw, 0, 8);
	b1.mr = NULL;
	ALLOC_FAILS(rdmx_task_send_alloc(e.ctx, NULL, &b1, NULL, out_), RDMX_E_INVAL);
	/* region of another device */
	b1 = buf(e.foreign, 0, 8);
	ALLOC_FAILS(rdmx_task_send_alloc(e.ctx, NULL, &b1, NULL, out_), RDMX_E_INVAL);
	ALLOC_FAILS(rdmx_task_receive_alloc(e.ctx, &b1, NULL, out_), RDMX_E_INVAL);
	/* receive needs LOCAL_WRITE; send does not */
	b1 = buf(e.ro, 0, 8);
	ALLOC_FAILS(rdmx_task_receive_alloc(e.ctx, &b1, NULL, out_), RDMX_E_INVAL);
	assert_ok(rdmx_task_send_alloc(e.ctx, NULL, &b1, NULL, &t));
	assert_ok(rdmx_task_free(t));
	b1 = buf(e.rw, 0, 8);
	assert_ok(rdmx_task_receive_alloc(e.ctx, &b1, NULL, &t));
	cr_assert_eq(rdmx_task_get_local(t), &b1);
	assert_ok(rdmx_task_free(t));
	env_close();
}

DEVICE_TEST(task, remote_checks)
{
	struct rdmx_buf src, dst, ro;
	struct rdmx_rbuf r = {.mr = NULL};
	struct rdmx_task *t;

	env_open(devname, 4);
	assert_ok(rdmx_ctx_start(e.ctx));
	src = buf(e.rw, 0, 64);
	dst = buf(e.rw, 64, 64);
	ro = buf(e.ro, 0, 64);
	r.mr = e.remote;

	/* write: rbuf.len 0 (means the chain) or equal to the chain */
	r.len = 0;
	assert_ok(rdmx_task_write_alloc(e.ctx, NULL, &src, &r, NULL, &t));
	cr_assert_eq(t->len, 64);
	assert_ok(rdmx_task_free(t));
	r.len = 64;
	assert_ok(rdmx_task_write_imm_alloc(e.ctx, NULL, &src, &r, 7, NULL, &t));
	cr_assert_eq(rdmx_task_get_imm(t), 7);
	assert_ok(rdmx_task_free(t));
	r.len = 65;
	ALLOC_FAILS(rdmx_task_write_alloc(e.ctx, NULL, &src, &r, NULL, out_), RDMX_E_INVAL);
	ALLOC_FAILS(rdmx_task_write_imm_alloc(e.ctx, NULL, &src, &r, 1, NULL, out_), RDMX_E_INVAL);
	r.len = 0;
	ALLOC_FAILS(rdmx_task_write_alloc(e.ctx, NULL, &src, NULL, NULL, out_), RDMX_E_INVAL);
	/* no data: refused for write, a notification for write_imm */
	ALLOC_FAILS(rdmx_task_write_alloc(e.ctx, NULL, NULL, &r, NULL, out_), RDMX_E_INVAL);
	assert_ok(rdmx_task_write_imm_alloc(e.ctx, NULL, NULL, &r, 3, NULL, &t));
	cr_assert_eq(t->len, 0);
	assert_ok(rdmx_task_free(t));
	r.mr = e.remote_other_provider;
	ALLOC_FAILS(rdmx_task_write_alloc(e.ctx, NULL, &src, &r, NULL, out_), RDMX_E_INVAL);
	r.mr = NULL;
	ALLOC_FAILS(rdmx_task_write_alloc(e.ctx, NULL, &src, &r, NULL, out_), RDMX_E_INVAL);
	r.mr = e.remote;

	/* read: destination large enough and writable */
	r.len = 64;
	assert_ok(rdmx_task_read_alloc(e.ctx, NULL, &r, &dst, NULL, &t));
	cr_assert_eq(t->len, 64);
	assert_ok(rdmx_task_free(t));
	r.len = 65;
	ALLOC_FAILS(rdmx_task_read_alloc(e.ctx, NULL, &r, &dst, NULL, out_), RDMX_E_INVAL);
	r.len = 8;
	ALLOC_FAILS(rdmx_task_read_alloc(e.ctx, NULL, &r, &ro, NULL, out_), RDMX_E_INVAL);
	ALLOC_FAILS(rdmx_task_read_alloc(e.ctx, NULL, NULL, &dst, NULL, out_), RDMX_E_INVAL);

	/* flush: a remote range, type not configured in this env */
	ALLOC_FAILS(rdmx_task_flush_alloc(e.ctx, NULL, NULL, NULL, out_), RDMX_E_INVAL);
	env_close();
}

DEVICE_TEST(task, atomic_checks)
{
	struct rdmx_buf res, res4, res2a, res2b, ro;
	struct rdmx_rbuf r = {.mr = NULL};
	struct rdmx_task *t;

	env_open(devname, 4);
	assert_ok(rdmx_ctx_start(e.ctx));
	res = buf(e.rw, 0, 8);
	res4 = buf(e.rw, 0, 4);
	res2a = buf(e.rw, 0, 4);
	res2b = buf(e.rw, 4, 4);
	res2a.next = &res2b;
	ro = buf(e.ro, 0, 8);
	r.mr = e.remote;
	r.offset = 8;

	assert_ok(rdmx_task_atomic_cas_alloc(e.ctx, NULL, &r, &res, 1, 2, NULL, &t));
	cr_assert_eq(t->op0, 1);
	cr_assert_eq(t->op1, 2);
	cr_assert_eq(t->len, 8);
	assert_ok(rdmx_task_free(t));
	assert_ok(rdmx_task_atomic_fadd_alloc(e.ctx, NULL, &r, &res, 5, NULL, &t));
	assert_ok(rdmx_task_free(t));
	assert_ok(rdmx_task_atomic_write_alloc(e.ctx, NULL, &r, 9, NULL, &t));
	assert_ok(rdmx_task_free(t));

	r.offset = 4; /* misaligned target */
	ALLOC_FAILS(rdmx_task_atomic_cas_alloc(e.ctx, NULL, &r, &res, 1, 2, NULL, out_),
	            RDMX_E_INVAL);
	ALLOC_FAILS(rdmx_task_atomic_fadd_alloc(e.ctx, NULL, &r, &res, 1, NULL, out_),
	            RDMX_E_INVAL);
	ALLOC_FAILS(rdmx_task_atomic_write_alloc(e.ctx, NULL, &r, 1, NULL, out_), RDMX_E_INVAL);
	r.offset = 8;
	r.len = 16; /* more than one word */
	ALLOC_FAILS(rdmx_task_atomic_fadd_alloc(e.ctx, NULL, &r, &res, 1, NULL, out_),
	            RDMX_E_INVAL);
	r.len = 8;
	/* result: exactly one writable 8-byte buffer */
	ALLOC_FAILS(rdmx_task_atomic_fadd_alloc(e.ctx, NULL, &r, NULL, 1, NULL, out_),
	            RDMX_E_INVAL);
	ALLOC_FAILS(rdmx_task_atomic_fadd_alloc(e.ctx, NULL, &r, &res4, 1, NULL, out_),
	            RDMX_E_INVAL);
	ALLOC_FAILS(rdmx_task_atomic_fadd_alloc(e.ctx, NULL, &r, &res2a, 1, NULL, out_),
	            RDMX_E_INVAL);
	ALLOC_FAILS(rdmx_task_atomic_cas_alloc(e.ctx, NULL, &r, &ro, 1, 2, NULL, out_),
	            RDMX_E_INVAL);
	r.mr = e.remote_other_provider;
	ALLOC_FAILS(rdmx_task_atomic_write_alloc(e.ctx, NULL, &r, 1, NULL, out_), RDMX_E_INVAL);
	env_close();
}

DEVICE_TEST(task, sync_event_tasks_map_to_ops)
{
	struct rdmx_buf res, small;
	struct rdmx_task *t;

	env_open(devname, 4);
	assert_ok(rdmx_ctx_start(e.ctx));
	res = buf(e.rw, 0, 8);
	small = buf(e.rw, 0, 4);

	assert_ok(rdmx_task_sync_event_get_alloc(e.ctx, NULL, e.remote, &res, NULL, &t));
	cr_assert_eq(rdmx_task_get_type(t), RDMX_TASK_SYNC_EVENT_GET);
	cr_assert_eq(t->op, RDMX__OP_READ);
	cr_assert_eq(t->remote.offset, 0);
	cr_assert_eq(t->len, 8);
	assert_ok(rdmx_task_free(t));
	assert_ok(rdmx_task_sync_event_notify_set_alloc(e.ctx, NULL, e.remote, 3, NULL, &t));
	cr_assert_eq(t->op, RDMX__OP_ATOMIC_WRITE);
	cr_assert_eq(t->op0, 3);
	assert_ok(rdmx_task_set_operand(t, 4));
	cr_assert_eq(t->op0, 4);
	assert_ok(rdmx_task_free(t));
	assert_ok(rdmx_task_sync_event_notify_add_alloc(e.ctx, NULL, e.remote, 2, &res, NULL, &t));
	cr_assert_eq(t->op, RDMX__OP_FADD);
	assert_ok(rdmx_task_free(t));

	ALLOC_FAILS(rdmx_task_sync_event_get_alloc(e.ctx, NULL, e.remote, NULL, NULL, out_),
	            RDMX_E_INVAL);
	ALLOC_FAILS(rdmx_task_sync_event_get_alloc(e.ctx, NULL, e.remote, &small, NULL, out_),
	            RDMX_E_INVAL);
	ALLOC_FAILS(rdmx_task_sync_event_get_alloc(e.ctx, NULL, NULL, &res, NULL, out_),
	            RDMX_E_INVAL);
	ALLOC_FAILS(rdmx_task_sync_event_notify_set_alloc(e.ctx, NULL, NULL, 1, NULL, out_),
	            RDMX_E_INVAL);
	ALLOC_FAILS(
	    rdmx_task_sync_event_notify_add_alloc(e.ctx, NULL, e.remote, 1, NULL, NULL, out_),
	    RDMX_E_INVAL);
	env_close();
}

DEVICE_TEST(task, setters_validate_and_keep_old_values)
{
	struct rdmx_buf a, b, big, ro;
	struct rdmx_rbuf r = {.mr = NULL};
	struct rdmx_task *w, *rx, *cas;

	env_open(devname, 4);
	assert_ok(rdmx_ctx_start(e.ctx));
	a = buf(e.rw, 0, 32);
	b = buf(e.rw, 32, 16);
	big = buf(e.rw, 0, 64);
	ro = buf(e.ro, 0, 8);
	r.mr = e.remote;
	r.len = 32;
	assert_ok(rdmx_task_write_alloc(e.ctx, NULL, &a, &r, NULL, &w));
	/* a chain that does not match rbuf.len is refused; the old one stays */
	assert_rc(rdmx_task_set_local(w, &b), RDMX_E_INVAL);
	cr_assert_eq(rdmx_task_get_local(w), &a);
	r.len = 0;
	assert_ok(rdmx_task_set_remote(w, &r));
	assert_ok(rdmx_task_set_local(w, &b));
	cr_assert_eq(w->len, 16);
	assert_rc(rdmx_task_set_remote(w, NULL), RDMX_E_INVAL);
	r.mr = e.remote_other_provider;
	assert_rc(rdmx_task_set_remote(w, &r), RDMX_E_INVAL);
	cr_assert_eq(w->remote.mr, e.remote);
	/* fields the type does not have */
	assert_rc(rdmx_task_set_imm(w, 1), RDMX_E_INVAL);
	assert_rc(rdmx_task_set_cmp_swap(w, 1, 2), RDMX_E_INVAL);
	assert_rc(rdmx_task_set_operand(w, 1), RDMX_E_INVAL);
	assert_ok(rdmx_task_set_user_data(w, (void *)0x5));
	cr_assert_eq(rdmx_task_get_user_data(w), (void *)0x5);

	assert_ok(rdmx_task_receive_alloc(e.ctx, NULL, NULL, &rx));
	assert_rc(rdmx_task_set_conn(rx, NULL), RDMX_E_INVAL);
	assert_rc(rdmx_task_set_remote(rx, &r), RDMX_E_INVAL);
	assert_rc(rdmx_task_set_local(rx, &ro), RDMX_E_INVAL);
	assert_ok(rdmx_task_set_local(rx, &big));
	cr_assert_eq(rdmx_task_get_local(rx), &big);

	r.mr = e.remote;
	r.offset = 0;
	r.len = 0;
	a.len = 8;
	assert_ok(rdmx_task_atomic_cas_alloc(e.ctx, NULL, &r, &a, 0, 1, NULL, &cas));
	assert_ok(rdmx_task_set_cmp_swap(cas, 7, 8));
	cr_assert_eq(cas->op0, 7);
	cr_assert_eq(cas->op1, 8);
	r.offset = 12;
	assert_rc(rdmx_task_set_remote(cas, &r), RDMX_E_INVAL);
	cr_assert_eq(cas->remote.offset, 0);
	assert_rc(rdmx_task_set_local(cas, &big), RDMX_E_INVAL);
	assert_rc(rdmx_task_set_imm(cas, 1), RDMX_E_INVAL);

	assert_rc(rdmx_task_set_user_data(NULL, NULL), RDMX_E_INVAL);
	assert_rc(rdmx_task_get_status(NULL), RDMX_E_INVAL);
	cr_assert_null(rdmx_task_get_conn(NULL));
	cr_assert_eq(rdmx_task_get_type(NULL), RDMX_TASK_TYPE_COUNT);
	env_close();
}

DEVICE_TEST(task, submit_needs_a_connected_connection)
{
	struct rdmx_task *t, *rx;
	struct rdmx_conn *conn = NULL;
	const void *details;
	size_t len;

	env_open(devname, 4);
	assert_ok(rdmx_ctx_start(e.ctx));
	assert_ok(rdmx_task_send_alloc(e.ctx, NULL, NULL, NULL, &t));
	assert_rc(rdmx_task_submit(t), RDMX_E_BAD_STATE); /* no connection */
	assert_ok(rdmx_ctx_export(e.ctx, &details, &len, &conn));
	cr_assert_gt(len, 0);
	assert_ok(rdmx_task_set_conn(t, conn));
	cr_assert_eq(rdmx_task_get_conn(t), conn);
	assert_rc(rdmx_task_submit(t), RDMX_E_BAD_STATE); /* exported, not connected */
	assert_rc(rdmx_task_submit(NULL), RDMX_E_INVAL);
	/* a receive needs no connection */
	assert_ok(rdmx_task_receive_alloc(e.ctx, NULL, NULL, &rx));
	assert_ok(rdmx_task_submit(rx));
	assert_rc(rdmx_task_submit(rx), RDMX_E_BAD_STATE); /* in flight */
	assert_rc(rdmx_task_free(rx), RDMX_E_BAD_STATE);
	assert_rc(rdmx_task_set_user_data(rx, NULL), RDMX_E_BAD_STATE);
	cr_assert_eq(rdmx_task_get_status(rx), RDMX_E_AGAIN);
	env_close(); /* stop cancels the receive */
}
