/* The channel's ring and rendezvous sources are granted to the channel's
 * connection (mr.h, rdmx_mr_grant): their descriptors work through it and
 * fail with RDMX_E_REMOTE_ACCESS through any other connection to the same
 * device; the regions have no device-wide descriptor. */
#include "rpcfix.h"

#include <stdlib.h>
#include <string.h>

#include "chan_internal.h"

/* A bare context on a node's device with its own progress engine: the
 * "other connection" a hostile peer of the same device would use. */
struct bare {
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	int established, ok, err, status;
};

/* Channels on Soft-RoCE use device-wide descriptors (chan/channel.c: the
 * kernel's window teardown defect); the engine's grants are checked there by
 * the conformance battery (its grant suite). */
static void skip_on_rxe(void)
{
	const char *dev = getenv("RDMX_TEST_DEVICE");

	if (dev && strncmp(dev, "rxe", 3) == 0)
		cr_skip_test("channels on Soft-RoCE use device-wide descriptors (chan/channel.c)");
}

static void bare_ok(struct rdmx_task *t, void *task_ud, void *ctx_ud)
{
	struct bare *b = ctx_ud;

	(void)task_ud;
	b->ok++;
	b->status = rdmx_task_get_status(t);
	rdmx_task_free(t);
}

static void bare_err(struct rdmx_task *t, void *task_ud, void *ctx_ud)
{
	struct bare *b = ctx_ud;

	(void)task_ud;
	b->err++;
	b->status = rdmx_task_get_status(t);
	rdmx_task_free(t);
}

static void bare_established(struct rdmx_conn *conn, void *ud, void *cud)
{
	struct bare *b = cud;

	(void)conn;
	(void)ud;
	b->established++;
}

static void bare_open(struct bare *b, struct rdmx_dev *dev)
{
	memset(b, 0, sizeof(*b));
	ASSERT_OK(rdmx_pe_create(&b->pe));
	ASSERT_OK(rdmx_ctx_create(dev, b->pe, &b->ctx));
	ASSERT_OK(rdmx_ctx_set_user_data(b->ctx, b));
	ASSERT_OK(rdmx_ctx_set_task_conf(b->ctx, RDMX_TASK_WRITE, bare_ok, bare_err, 4));
	ASSERT_OK(rdmx_ctx_set_task_conf(b->ctx, RDMX_TASK_READ, bare_ok, bare_err, 4));
	ASSERT_OK(rdmx_ctx_set_conn_callbacks(b->ctx, NULL, bare_established, NULL, NULL));
	ASSERT_OK(rdmx_ctx_start(b->ctx));
}

static void bare_close(struct bare *b)
{
	ASSERT_OK(rdmx_ctx_stop(b->ctx));
	ASSERT_OK(rdmx_ctx_destroy(&b->ctx));
	ASSERT_OK(rdmx_pe_destroy(&b->pe));
}

static void bare_drive(struct bare *x, struct bare *y, struct node *a, struct node *b)
{
	rdmx_pe_progress(x->pe);
	rdmx_pe_progress(y->pe);
	drive_once(a, b);
}

/* x on a's device, y on b's device, connected to each other. */
static void bare_pair(struct bare *x, struct bare *y, struct node *a, struct node *b,
                      struct rdmx_conn **cy)
{
	const void *dx = NULL, *dy = NULL;
	size_t lx = 0, ly = 0;
	struct rdmx_conn *px = NULL, *py = NULL;

	bare_open(x, a->dev);
	bare_open(y, b->dev);
	ASSERT_OK(rdmx_ctx_export(x->ctx, &dx, &lx, &px));
	ASSERT_OK(rdmx_ctx_export(y->ctx, &dy, &ly, &py));
	ASSERT_OK(rdmx_ctx_connect(x->ctx, dy, ly, px));
	ASSERT_OK(rdmx_ctx_connect(y->ctx, dx, lx, py));
	DRIVE_UNTIL(a, b, (bare_drive(x, y, a, b), x->established == 1 && y->established == 1));
	*cy = py;
}

static bool all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

Test(chan, ring_descriptor_works_only_through_the_channel_connection)
{
	struct node a, b;
	struct rdmx_chan *x, *y;
	struct bare bx, by;
	struct rdmx_conn *other;
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
	uint8_t *src = aligned_alloc(64, 4096);
	struct rdmx_mr *src_mr = NULL;
	struct rdmx_task *t;

	skip_on_rxe();
	cr_assert_not_null(src);
	memset(src, 0xe7, 4096);
	leak_begin();
	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	chan_pair(&a, &b, NULL, NULL, &x, &y, true);
	cr_assert_not_null(x->ring_grant, "the ring was not granted to the connection");
	ASSERT_RC(rdmx_mr_get_descriptor(x->ring_mr, desc), RDMX_E_BAD_STATE);
	cr_assert_not_null(y->peer_ring);

	/* b's device, another connection to a's device: the peer ring's
	 * descriptor (what y holds) is refused there */
	bare_pair(&bx, &by, &a, &b, &other);
	ASSERT_OK(rdmx_mr_reg(b.dev, src, 4096, 0, &src_mr));
	struct rdmx_buf s = {.mr = src_mr, .addr = src, .len = 64, .next = NULL};
	struct rdmx_rbuf r = {.mr = y->peer_ring, .offset = 0, .len = 0};
	uint8_t before[64];
	memcpy(before, x->ring, sizeof(before));
	ASSERT_OK(rdmx_task_write_alloc(by.ctx, other, &s, &r, NULL, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&a, &b, (bare_drive(&bx, &by, &a, &b), by.ok + by.err == 1));
	cr_assert_eq(by.err, 1, "a write into the ring through another connection succeeded");
	ASSERT_RC(by.status, RDMX_E_REMOTE_ACCESS);
	cr_assert_arr_eq(x->ring, before, sizeof(before), "the ring changed");
	cr_assert_eq(rdmx_chan_get_state(x), RDMX_CHAN_READY);
	cr_assert_eq(rdmx_chan_get_state(y), RDMX_CHAN_READY);

	bare_close(&bx);
	bare_close(&by);
	ASSERT_OK(rdmx_mr_dereg(&src_mr));
	chan_pair_close(&x, &y, &a, &b);
	free(src);
	leak_end();
}

Test(chan, rendezvous_source_is_granted_to_the_channel_connection)
{
	struct node a, b;
	struct rdmx_chan *x, *y;
	struct bare bx, by;
	struct rdmx_conn *other;
	const size_t big = 256 * 1024;
	uint8_t *msg = malloc(big);
	uint8_t *dst = aligned_alloc(64, 4096);
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
	struct rdmx_mr *dst_mr = NULL;
	struct rdmx_mr_remote *remote = NULL;
	struct rdmx_task *t;

	skip_on_rxe();
	cr_assert(msg && dst);
	memset(msg, 0x3c, big);
	memset(dst, 0, 4096);
	leak_begin();
	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	chan_pair(&a, &b, NULL, NULL, &x, &y, true);
	bare_pair(&bx, &by, &a, &b, &other);

	/* the rendezvous descriptor goes out at once; the source stays
	 * registered until y read it, which needs y's progress */
	ASSERT_OK(rdmx_chan_send(x, msg, big, NULL, NULL));
	cr_assert_not_null(x->rdv_head, "no rendezvous in flight");
	cr_assert_not_null(x->rdv_head->rdv_grant, "the rendezvous source was not granted");
	ASSERT_RC(rdmx_mr_get_descriptor(x->rdv_head->rdv_mr, desc), RDMX_E_BAD_STATE);
	ASSERT_OK(rdmx_mr_grant_get_descriptor(x->rdv_head->rdv_grant, desc));
	ASSERT_OK(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &remote));

	ASSERT_OK(rdmx_mr_reg(b.dev, dst, 4096, RDMX_ACCESS_LOCAL_WRITE, &dst_mr));
	struct rdmx_buf d = {.mr = dst_mr, .addr = dst, .len = 4096, .next = NULL};
	struct rdmx_rbuf r = {.mr = remote, .offset = 0, .len = 4096};
	ASSERT_OK(rdmx_task_read_alloc(by.ctx, other, &r, &d, NULL, &t));
	ASSERT_OK(rdmx_task_submit(t));
	uint64_t deadline = now_ms() + GUARD_MS;
	while (by.ok + by.err == 0) {
		/* only the bare pair and x's side: y must not consume yet */
		cr_assert(now_ms() < deadline, "timed out (failure guard) waiting for the read");
		rdmx_pe_progress(bx.pe);
		rdmx_pe_progress(by.pe);
		rdmx_pe_progress(a.pe);
	}
	cr_assert_eq(by.err, 1,
	             "a read of the rendezvous source through another connection "
	             "succeeded");
	ASSERT_RC(by.status, RDMX_E_REMOTE_ACCESS);
	cr_assert(all_bytes(dst, 4096, 0), "a refused read delivered data");

	bare_close(&bx);
	bare_close(&by);
	ASSERT_OK(rdmx_mr_remote_delete(&remote));
	ASSERT_OK(rdmx_mr_dereg(&dst_mr));
	chan_pair_close(&x, &y, &a, &b);
	free(msg);
	free(dst);
	leak_end();
}
