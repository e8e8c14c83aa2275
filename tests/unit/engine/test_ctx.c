/* Contexts: the IDLE/RUNNING life cycle, defaults, every setter's checks. */
#include <string.h>

#include "helpers.h"

static void ok_cb(struct rdmx_task *t, void *u, void *c)
{
	(void)t;
	(void)u;
	(void)c;
}

struct env {
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_dev_caps caps;
};

static void env_open(struct env *e, const char *devname)
{
	memset(e, 0, sizeof(*e));
	assert_ok(test_dev_open(devname, &e->dev));
	assert_ok(rdmx_dev_query_caps(e->dev, &e->caps));
	assert_ok(rdmx_pe_create(&e->pe));
	assert_ok(rdmx_ctx_create(e->dev, e->pe, &e->ctx));
}

static void env_close(struct env *e)
{
	enum rdmx_ctx_state st;

	assert_ok(rdmx_ctx_get_state(e->ctx, &st));
	if (st == RDMX_CTX_RUNNING)
		assert_ok(rdmx_ctx_stop(e->ctx));
	assert_ok(rdmx_ctx_destroy(&e->ctx));
	cr_assert_null(e->ctx);
	assert_ok(rdmx_pe_destroy(&e->pe));
	assert_ok(rdmx_dev_close(&e->dev));
}

DEVICE_TEST(ctx, life_cycle)
{
	struct env e;
	enum rdmx_ctx_state st;
	struct rdmx_dev *dev;
	struct rdmx_ctx *none = (void *)0x1;

	env_open(&e, devname);
	assert_rc(rdmx_ctx_create(NULL, e.pe, &none), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_create(e.dev, NULL, &none), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_create(e.dev, e.pe, NULL), RDMX_E_INVAL);
	cr_assert_eq(none, (void *)0x1);

	assert_ok(rdmx_ctx_get_state(e.ctx, &st));
	cr_assert_eq(st, RDMX_CTX_IDLE);
	assert_rc(rdmx_pe_destroy(&e.pe), RDMX_E_BAD_STATE); /* an idle ctx holds it too */
	cr_assert_not_null(e.pe);
	assert_ok(rdmx_ctx_get_dev(e.ctx, &dev));
	cr_assert_eq(dev, e.dev);
	assert_rc(rdmx_ctx_stop(e.ctx), RDMX_E_BAD_STATE);

	assert_ok(rdmx_ctx_start(e.ctx));
	assert_ok(rdmx_ctx_get_state(e.ctx, &st));
	cr_assert_eq(st, RDMX_CTX_RUNNING);
	assert_rc(rdmx_ctx_start(e.ctx), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_destroy(&e.ctx), RDMX_E_BAD_STATE);
	cr_assert_not_null(e.ctx);
	/* attached to the pe, holding the device */
	assert_rc(rdmx_pe_destroy(&e.pe), RDMX_E_BAD_STATE);
	assert_rc(rdmx_dev_close(&e.dev), RDMX_E_BAD_STATE);
	assert_ok(rdmx_pe_progress(e.pe));

	assert_ok(rdmx_ctx_stop(e.ctx));
	assert_ok(rdmx_ctx_get_state(e.ctx, &st));
	cr_assert_eq(st, RDMX_CTX_IDLE);
	/* restart after stop */
	assert_ok(rdmx_ctx_start(e.ctx));
	assert_ok(rdmx_ctx_stop(e.ctx));
	assert_rc(rdmx_dev_close(&e.dev), RDMX_E_BAD_STATE); /* ctx still exists */
	env_close(&e);
	assert_ok(rdmx_ctx_destroy(NULL));
}

DEVICE_TEST(ctx, defaults)
{
	struct env e;
	uint32_t v;
	uint8_t b;
	bool g;
	unsigned perm;
	enum rdmx_transport_type tt;
	void *ud = (void *)0x1;

	env_open(&e, devname);
	assert_ok(rdmx_ctx_get_send_queue_size(e.ctx, &v));
	cr_assert(v > 0 && v <= 256 && (v & (v - 1)) == 0 && v <= e.caps.max_send_queue_size);
	assert_ok(rdmx_ctx_get_recv_queue_size(e.ctx, &v));
	cr_assert(v > 0 && v <= 256 && (v & (v - 1)) == 0 && v <= e.caps.max_recv_queue_size);
	assert_ok(rdmx_ctx_get_max_send_buf_list_len(e.ctx, &v));
	cr_assert_eq(v, 1);
	assert_ok(rdmx_ctx_get_max_recv_buf_list_len(e.ctx, &v));
	cr_assert_eq(v, 1);
	assert_ok(rdmx_ctx_get_permissions(e.ctx, &perm));
	cr_assert_eq(perm, RDMX_ACCESS_REMOTE_READ | RDMX_ACCESS_REMOTE_WRITE |
	                       RDMX_ACCESS_REMOTE_ATOMIC);
	assert_ok(rdmx_ctx_get_mtu(e.ctx, &v));
	cr_assert_eq(v, 4096);
	assert_ok(rdmx_ctx_get_gid_index(e.ctx, &v));
	cr_assert_eq(v, 0);
	assert_ok(rdmx_ctx_get_rnr_retry_count(e.ctx, &b));
	cr_assert_eq(b, 7);
	assert_ok(rdmx_ctx_get_transport_timeout(e.ctx, &v));
	cr_assert_eq(v, 1000);
	assert_ok(rdmx_ctx_get_retry_count(e.ctx, &b));
	cr_assert_eq(b, 7, "default: a lost peer after 1000 ms x 8 = 8 s");
	assert_ok(rdmx_ctx_get_sl(e.ctx, &b));
	cr_assert_eq(b, 0);
	assert_ok(rdmx_ctx_get_grh(e.ctx, &g));
	assert_ok(rdmx_ctx_get_conn_request_timeout(e.ctx, &v));
	cr_assert_gt(v, 0);
	assert_ok(rdmx_ctx_get_max_connections(e.ctx, &v));
	cr_assert(v >= 1 && v <= 64);
	assert_ok(rdmx_ctx_get_transport_type(e.ctx, &tt));
	cr_assert_eq(tt, RDMX_TRANSPORT_TYPE_RC);
	assert_ok(rdmx_ctx_get_user_data(e.ctx, &ud));
	cr_assert_null(ud);
	assert_rc(rdmx_ctx_get_mtu(e.ctx, NULL), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_get_mtu(NULL, &v), RDMX_E_INVAL);
	env_close(&e);
}

DEVICE_TEST(ctx, setters_validate_values)
{
	struct env e;
	uint32_t v;

	env_open(&e, devname);
	/* queue sizes: rounded up to a power of two, within caps */
	assert_ok(rdmx_ctx_set_send_queue_size(e.ctx, 3));
	assert_ok(rdmx_ctx_get_send_queue_size(e.ctx, &v));
	cr_assert_eq(v, 4);
	assert_ok(rdmx_ctx_set_recv_queue_size(e.ctx, 17));
	assert_ok(rdmx_ctx_get_recv_queue_size(e.ctx, &v));
	cr_assert_eq(v, 32);
	assert_rc(rdmx_ctx_set_send_queue_size(e.ctx, 0), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_recv_queue_size(e.ctx, 0), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_send_queue_size(e.ctx, e.caps.max_send_queue_size + 1),
	          RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_recv_queue_size(e.ctx, e.caps.max_recv_queue_size + 1),
	          RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_send_queue_size(e.ctx, UINT32_MAX), RDMX_E_INVAL);
	assert_ok(rdmx_ctx_get_send_queue_size(e.ctx, &v));
	cr_assert_eq(v, 4, "a rejected value changed the property");

	assert_ok(rdmx_ctx_set_max_send_buf_list_len(e.ctx, e.caps.max_buf_list_len));
	assert_ok(rdmx_ctx_set_max_recv_buf_list_len(e.ctx, e.caps.max_buf_list_len));
	assert_rc(rdmx_ctx_set_max_send_buf_list_len(e.ctx, 0), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_max_recv_buf_list_len(e.ctx, 0), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_max_send_buf_list_len(e.ctx, e.caps.max_buf_list_len + 1),
	          RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_max_recv_buf_list_len(e.ctx, e.caps.max_buf_list_len + 1),
	          RDMX_E_INVAL);

	assert_ok(rdmx_ctx_set_permissions(e.ctx, RDMX_ACCESS_REMOTE_READ));
	assert_ok(rdmx_ctx_set_permissions(e.ctx, 0));
	assert_rc(rdmx_ctx_set_permissions(e.ctx, 0x100), RDMX_E_INVAL);

	for (uint32_t mtu = 256; mtu <= 4096; mtu *= 2)
		assert_ok(rdmx_ctx_set_mtu(e.ctx, mtu));
	assert_rc(rdmx_ctx_set_mtu(e.ctx, 1500), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_mtu(e.ctx, 8192), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_mtu(e.ctx, 0), RDMX_E_INVAL);

	assert_ok(rdmx_ctx_set_gid_index(e.ctx, e.caps.gid_table_len - 1));
	assert_rc(rdmx_ctx_set_gid_index(e.ctx, e.caps.gid_table_len), RDMX_E_INVAL);
	assert_ok(rdmx_ctx_set_sl(e.ctx, 15));
	assert_rc(rdmx_ctx_set_sl(e.ctx, 16), RDMX_E_INVAL);
	assert_ok(rdmx_ctx_set_grh(e.ctx, true));
	assert_ok(rdmx_ctx_set_conn_request_timeout(e.ctx, 100));
	assert_rc(rdmx_ctx_set_conn_request_timeout(e.ctx, 0), RDMX_E_INVAL);
	assert_ok(rdmx_ctx_set_rnr_retry_count(e.ctx, 0));
	assert_rc(rdmx_ctx_set_rnr_retry_count(e.ctx, 8), RDMX_E_INVAL);
	assert_ok(rdmx_ctx_set_transport_timeout(e.ctx, 0)); /* off */
	assert_ok(rdmx_ctx_set_transport_timeout(e.ctx, RDMX_CTX_TRANSPORT_TIMEOUT_MAX_MS));
	assert_rc(rdmx_ctx_set_transport_timeout(e.ctx, RDMX_CTX_TRANSPORT_TIMEOUT_MAX_MS + 1),
	          RDMX_E_INVAL);
	assert_ok(rdmx_ctx_set_retry_count(e.ctx, 0));
	assert_rc(rdmx_ctx_set_retry_count(e.ctx, 8), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_retry_count(NULL, 1), RDMX_E_INVAL);
	assert_ok(rdmx_ctx_set_max_connections(e.ctx, 1));
	assert_rc(rdmx_ctx_set_max_connections(e.ctx, 0), RDMX_E_INVAL);
	if (e.caps.max_connections)
		assert_rc(rdmx_ctx_set_max_connections(e.ctx, e.caps.max_connections + 1),
		          RDMX_E_INVAL);
	assert_ok(rdmx_ctx_set_transport_type(e.ctx, RDMX_TRANSPORT_TYPE_RC));
	assert_rc(rdmx_ctx_set_transport_type(e.ctx, RDMX_TRANSPORT_TYPE_DC), RDMX_E_NOT_SUPPORTED);
	assert_rc(rdmx_ctx_set_transport_type(e.ctx, (enum rdmx_transport_type)7), RDMX_E_INVAL);

	/* task confs */
	assert_ok(rdmx_ctx_set_task_conf(e.ctx, RDMX_TASK_SEND, ok_cb, ok_cb, 4));
	assert_rc(rdmx_ctx_set_task_conf(e.ctx, RDMX_TASK_SEND, NULL, ok_cb, 4), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_task_conf(e.ctx, RDMX_TASK_SEND, ok_cb, NULL, 4), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_task_conf(e.ctx, RDMX_TASK_SEND, ok_cb, ok_cb, 0), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_task_conf(e.ctx, RDMX_TASK_TYPE_COUNT, ok_cb, ok_cb, 4),
	          RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_task_conf(e.ctx, RDMX_TASK_RECEIVE, ok_cb, ok_cb,
	                                 e.caps.max_recv_queue_size + 1),
	          RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_task_conf(e.ctx, RDMX_TASK_SEND, ok_cb, ok_cb, UINT32_MAX),
	          RDMX_E_INVAL);

	/* NULL context everywhere */
	assert_rc(rdmx_ctx_set_send_queue_size(NULL, 4), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_mtu(NULL, 4096), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_task_conf(NULL, RDMX_TASK_SEND, ok_cb, ok_cb, 4), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_set_conn_callbacks(NULL, NULL, NULL, NULL, NULL), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_start(NULL), RDMX_E_INVAL);
	assert_rc(rdmx_ctx_stop(NULL), RDMX_E_INVAL);

	/* the context still starts with all of the above */
	assert_ok(rdmx_ctx_start(e.ctx));
	env_close(&e);
}

DEVICE_TEST(ctx, setters_refuse_while_running)
{
	struct env e;
	uint32_t v;
	void *ud;

	env_open(&e, devname);
	assert_ok(rdmx_ctx_set_send_queue_size(e.ctx, 8));
	assert_ok(rdmx_ctx_start(e.ctx));
	assert_rc(rdmx_ctx_set_send_queue_size(e.ctx, 16), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_recv_queue_size(e.ctx, 16), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_max_send_buf_list_len(e.ctx, 1), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_max_recv_buf_list_len(e.ctx, 1), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_permissions(e.ctx, 0), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_mtu(e.ctx, 1024), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_gid_index(e.ctx, 0), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_sl(e.ctx, 1), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_grh(e.ctx, true), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_conn_request_timeout(e.ctx, 10), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_rnr_retry_count(e.ctx, 1), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_transport_timeout(e.ctx, 10), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_retry_count(e.ctx, 1), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_max_connections(e.ctx, 2), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_transport_type(e.ctx, RDMX_TRANSPORT_TYPE_RC), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_task_conf(e.ctx, RDMX_TASK_SEND, ok_cb, ok_cb, 1), RDMX_E_BAD_STATE);
	assert_rc(rdmx_ctx_set_conn_callbacks(e.ctx, NULL, NULL, NULL, NULL), RDMX_E_BAD_STATE);
	/* even invalid values answer BAD_STATE first */
	assert_rc(rdmx_ctx_set_mtu(e.ctx, 1), RDMX_E_BAD_STATE);
	/* getters and user data work in any state */
	assert_ok(rdmx_ctx_get_send_queue_size(e.ctx, &v));
	cr_assert_eq(v, 8);
	assert_ok(rdmx_ctx_set_user_data(e.ctx, &e));
	assert_ok(rdmx_ctx_get_user_data(e.ctx, &ud));
	cr_assert_eq(ud, &e);
	/* setters work again once stopped */
	assert_ok(rdmx_ctx_stop(e.ctx));
	assert_ok(rdmx_ctx_set_send_queue_size(e.ctx, 16));
	env_close(&e);
}

Test(pe, create_destroy_and_modes)
{
	struct rdmx_pe *pe = NULL;
	enum rdmx_poll_mode mode;
	uint32_t spin;
	int fd = -1;

	assert_rc(rdmx_pe_create(NULL), RDMX_E_INVAL);
	assert_ok(rdmx_pe_create(&pe));
	assert_ok(rdmx_pe_get_poll_mode(pe, &mode, &spin));
	cr_assert_eq(mode, RDMX_POLL_HYBRID);
	cr_assert_eq(spin, 50);
	assert_ok(rdmx_pe_set_poll_mode(pe, RDMX_POLL_BUSY, 0));
	assert_rc(rdmx_pe_set_poll_mode(pe, (enum rdmx_poll_mode)5, 0), RDMX_E_INVAL);
	assert_ok(rdmx_pe_get_poll_mode(pe, &mode, NULL));
	cr_assert_eq(mode, RDMX_POLL_BUSY);
	assert_ok(rdmx_pe_get_fd(pe, &fd));
	cr_assert_geq(fd, 0);
	assert_ok(rdmx_pe_progress(pe));
	assert_rc(rdmx_pe_progress(NULL), RDMX_E_INVAL);
	/* nothing attached: every mode times out with 0 */
	assert_ok(rdmx_pe_wait(pe, 0));
	assert_ok(rdmx_pe_set_poll_mode(pe, RDMX_POLL_BLOCK, 0));
	assert_ok(rdmx_pe_wait(pe, 1));
	assert_ok(rdmx_pe_set_poll_mode(pe, RDMX_POLL_HYBRID, 10));
	assert_ok(rdmx_pe_wait(pe, 1));
	assert_rc(rdmx_pe_wait(pe, -2), RDMX_E_INVAL);
	assert_ok(rdmx_pe_request_notification(pe));
	assert_ok(rdmx_pe_clear_notification(pe));
	assert_ok(rdmx_pe_destroy(&pe));
	cr_assert_null(pe);
	assert_ok(rdmx_pe_destroy(&pe));
	assert_ok(rdmx_pe_destroy(NULL));
}
