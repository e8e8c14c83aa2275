/* post.c's memory windows (connection-bound grants): the bind work request,
 * its completion, revoke before and after it, the connection's end, and the
 * refusals. */
#include "mock.h"

#include <string.h>

static struct fixture F;
static struct rdmx_conn *C;
static uint8_t mem[8192] __attribute__((aligned(64)));
static struct rdmx_mr mr;
static struct ibv_mr fake_ibv_mr;

static void setup(void)
{
	fixture_init(&F, 8);
	F.vdev.attr.orig_attr.max_mw = 64;
	F.vdev.attr.orig_attr.device_cap_flags |= IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	C = fixture_conn(&F);
	mock_mr(&mr, mem, sizeof(mem), 0x99);
	mr.dev = &F.dev;
	mr.grant_only = true;
	memset(&fake_ibv_mr, 0, sizeof(fake_ibv_mr));
	mr.prov = &fake_ibv_mr;
}

static void teardown(void)
{
	fixture_fini(&F);
	cr_assert_eq(M.mw_live, 0, "%d memory windows leaked", M.mw_live);
}

TestSuite(mw, .init = setup, .fini = teardown);

static struct verbs_conn *VC(void)
{
	return C->prov;
}

static void grant_init(struct rdmx_mr_grant *g, uint64_t off, uint64_t len, unsigned access)
{
	memset(g, 0, sizeof(*g));
	g->mr = &mr;
	g->conn = C;
	g->offset = off;
	g->len = len;
	g->access = access;
}

Test(mw, grant_posts_a_signaled_bind_of_the_range)
{
	struct rdmx_mr_grant g;

	grant_init(&g, 4096, 1024, RDMX_ACCESS_REMOTE_READ | RDMX_ACCESS_REMOTE_WRITE);
	cr_assert_eq(rdmx__verbs_mr_grant(&g), 0);
	cr_assert_eq(M.mw_allocs, 1);
	cr_assert_eq(M.nsends, 1);
	const struct ibv_send_wr *wr = &M.sends[0].wr;
	cr_assert_eq(wr->opcode, IBV_WR_BIND_MW);
	cr_assert(wr->send_flags & IBV_SEND_SIGNALED);
	cr_assert_eq(wr->wr_id & 3u, VERBS_WRID_BIND);
	cr_assert_not_null(wr->bind_mw.mw);
	cr_assert_eq(wr->bind_mw.rkey, ibv_inc_rkey(wr->bind_mw.mw->rkey), "a new key byte");
	cr_assert_eq(g.rkey, wr->bind_mw.rkey, "the descriptor's key is the bound one");
	/* part of the region: a window over an MR of exactly that part (rxe
	 * checks requests against the MR's range) */
	const struct ibv_mr *sub = wr->bind_mw.bind_info.mr;
	cr_assert_neq(sub, &fake_ibv_mr, "a partial grant bound to the whole region's MR");
	cr_assert_eq(sub->addr, mem + 4096);
	cr_assert_eq(sub->length, 1024u);
	cr_assert_eq(sub->lkey & 0xffffu, (unsigned)(IBV_ACCESS_MW_BIND | IBV_ACCESS_LOCAL_WRITE),
	             "the range's MR gives local access and binding only");
	cr_assert_eq(wr->bind_mw.bind_info.addr, (uint64_t)(uintptr_t)mem + 4096);
	cr_assert_eq(wr->bind_mw.bind_info.length, 1024u);
	cr_assert_eq(wr->bind_mw.bind_info.mw_access_flags,
	             (unsigned)(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE));
	cr_assert_eq(M.sends[0].qpn, VC()->qpn);
	cr_assert_eq(VC()->posted, 1u, "the bind holds a send queue slot");
	cr_assert_eq(F.vctx->scq_used, 1u, "... and a send CQ entry");

	/* its completion is nobody's task */
	mock_send_wc(wr->wr_id, VC()->qpn, IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	cr_assert_eq(M.ndone, 0);
	cr_assert_eq(VC()->posted, 0u);
	cr_assert_eq(F.vctx->scq_used, 0u);
	cr_assert(!VC()->in_error);

	rdmx__verbs_mr_revoke(&g);
	cr_assert_eq(M.mw_deallocs, 1, "revoke deallocates the window at once");
	cr_assert_null(g.prov);
}

Test(mw, whole_region_grant_binds_to_the_region_mr)
{
	struct rdmx_mr_grant g;

	grant_init(&g, 0, sizeof(mem), RDMX_ACCESS_REMOTE_READ);
	cr_assert_eq(rdmx__verbs_mr_grant(&g), 0);
	cr_assert_eq(M.sends[0].wr.bind_mw.bind_info.mr, &fake_ibv_mr);
	cr_assert_eq(M.sends[0].wr.bind_mw.bind_info.length, sizeof(mem));
	cr_assert_eq(M.sends[0].wr.bind_mw.bind_info.mw_access_flags,
	             (unsigned)IBV_ACCESS_REMOTE_READ);
	mock_send_wc(M.sends[0].wr.wr_id, VC()->qpn, IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	rdmx__verbs_mr_revoke(&g);
	cr_assert_eq(M.mw_deallocs, 1);
}

Test(mw, revoke_before_the_bind_completed_deallocates_at_once)
{
	struct rdmx_mr_grant g;

	grant_init(&g, 0, 64, RDMX_ACCESS_REMOTE_WRITE);
	cr_assert_eq(rdmx__verbs_mr_grant(&g), 0);
	uint64_t wr_id = M.sends[0].wr.wr_id;
	rdmx__verbs_mr_revoke(&g);
	cr_assert_eq(M.mw_deallocs, 1, "the key must die with the revoke");
	/* the device refuses the bind of the deallocated window: the
	 * connection goes to error, the bookkeeping goes away */
	mock_send_wc(wr_id, VC()->qpn, IBV_WC_MW_BIND_ERR);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	cr_assert(VC()->in_error);
	cr_assert_eq(M.set_error_calls, 1);
	cr_assert_eq(VC()->posted, 0u);
	cr_assert_null(VC()->mws);
}

Test(mw, a_failed_bind_fails_the_connection)
{
	struct rdmx_mr_grant g;

	grant_init(&g, 0, 64, RDMX_ACCESS_REMOTE_READ);
	cr_assert_eq(rdmx__verbs_mr_grant(&g), 0);
	mock_send_wc(M.sends[0].wr.wr_id, VC()->qpn, IBV_WC_MW_BIND_ERR);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	cr_assert(VC()->in_error);
	cr_assert_eq(M.set_error_calls, 1);
	rdmx__verbs_mr_revoke(&g);
	cr_assert_eq(M.mw_deallocs, 1);
}

Test(mw, connection_destroyed_before_revoke)
{
	struct rdmx_mr_grant g1, g2;

	grant_init(&g1, 0, 64, RDMX_ACCESS_REMOTE_READ);
	grant_init(&g2, 64, 64, RDMX_ACCESS_REMOTE_READ);
	cr_assert_eq(rdmx__verbs_mr_grant(&g1), 0);
	cr_assert_eq(rdmx__verbs_mr_grant(&g2), 0);
	mock_send_wc(M.sends[0].wr.wr_id, VC()->qpn, IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	/* g2's bind never completes: the QP is destroyed under it (stop) */
	rdmx__verbs_mr_revoke(&g2);
	VC()->posted = 0; /* what the stop's drain would have flushed */
	fixture_conn_free(&F, C);
	C = NULL;
	/* the engine ends the remaining grant after the provider is gone */
	rdmx__verbs_mr_revoke(&g1);
	cr_assert_eq(M.mw_deallocs, 2);
}

Test(mw, refusals)
{
	struct rdmx_mr_grant g;

	/* send queue full (sq_size 8) */
	VC()->posted = 8;
	grant_init(&g, 0, 64, RDMX_ACCESS_REMOTE_READ);
	cr_assert_eq(rdmx__verbs_mr_grant(&g), RDMX_E_FULL);
	VC()->posted = 0;
	/* ending connection */
	VC()->closing = true;
	cr_assert_eq(rdmx__verbs_mr_grant(&g), RDMX_E_BAD_STATE);
	VC()->closing = false;
	/* window allocation fails */
	M.mw_alloc_fail = true;
	cr_assert_eq(rdmx__verbs_mr_grant(&g), RDMX_E_NOMEM);
	/* the QP refuses the work request */
	M.post_send_rc = EINVAL;
	cr_assert_eq(rdmx__verbs_mr_grant(&g), RDMX_E_PROVIDER);
	cr_assert_eq(M.mw_live, 0, "a refused grant kept its window");
	cr_assert_eq(VC()->posted, 0u);
	/* a device without type-2 windows */
	F.vdev.attr.orig_attr.device_cap_flags &=
	    ~(unsigned)(IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	cr_assert_eq(rdmx__verbs_mr_grant(&g), RDMX_E_NOT_SUPPORTED);
	cr_assert_eq(M.nsends, 0);
}
