/* Connection-bound grants (mr.h, rdmx_mr_grant): a key granted to one
 * connection works through it with the granted range and access, and fails
 * with RDMX_E_REMOTE_ACCESS through another connection, after the
 * connection's end, after a revoke, out of the granted range and beyond the
 * granted access; a failure touches only the connection that used the key.
 * On verbs the grant is a type-2 memory window bound to the QP. */
#include "conformance.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static struct side A, B;

TestSuite(grant, .timeout = 180);

/* Region flags: remote access only through grants. */
#define GRANTED (RDMX_ACCESS_REMOTE_READ | RDMX_ACCESS_REMOTE_WRITE | RDMX_ACCESS_GRANT_ONLY)

/* The peer's remote region from a grant's descriptor. */
static struct rdmx_mr_remote *remote_of_grant(struct side *user, const struct rdmx_mr_grant *g)
{
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];

	ASSERT_OK(rdmx_mr_grant_get_descriptor(g, desc));
	return remote_from_desc(user, desc);
}

/* A send from A on `a` that B receives: proves a task of the connection
 * submitted after the grant completed, which is when a peer told out of band
 * may use the key (mr.h: on verbs the bind is ordered on the send queue). */
static void settle(struct rdmx_conn *a)
{
	struct region *sa = region_new(&A, 64, 0, 0x5a);
	struct region *rb = region_new(&B, 64, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct rdmx_buf *bufs = calloc(2, sizeof(*bufs));
	struct tinfo ts = {0}, tr = {0};
	struct rdmx_task *t;

	cr_assert_not_null(bufs);
	bufs[0] = lbuf(sa, 0, 64);
	bufs[1] = lbuf(rb, 0, 64);
	post_recv(&B, &bufs[1], &tr);
	ASSERT_OK(rdmx_task_send_alloc(A.ctx, a, &bufs[0], &ts, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&A, &B, TI_DONE(&ts) && TI_DONE(&tr));
	ASSERT_DONE_OK(&ts);
	ASSERT_DONE_OK(&tr);
	free(bufs);
}

/* A write of src into [off, off+len) of m through b; waits for it. */
static void write_through(struct rdmx_conn *b, struct region *src, struct rdmx_mr_remote *m,
                          uint64_t off, size_t len, struct tinfo *ti)
{
	struct rdmx_buf s = lbuf(src, 0, len);
	struct rdmx_rbuf r = rbuf(m, off, 0);
	struct rdmx_task *t;

	ASSERT_OK(rdmx_task_write_alloc(B.ctx, b, &s, &r, ti, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&A, &B, TI_DONE(ti));
	drive_for(&A, &B, NULL, 20); /* a second completion would show up here */
}

static void read_through(struct rdmx_conn *b, struct region *dst, struct rdmx_mr_remote *m,
                         uint64_t off, size_t len, struct tinfo *ti)
{
	struct rdmx_buf d = lbuf(dst, 0, len);
	struct rdmx_rbuf r = rbuf(m, off, len);
	struct rdmx_task *t;

	ASSERT_OK(rdmx_task_read_alloc(B.ctx, b, &r, &d, ti, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&A, &B, TI_DONE(ti));
	drive_for(&A, &B, NULL, 20);
}

static bool all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* Target-side log lines about refused keys (tcp's soft NIC logs them; the
 * sink runs on whichever thread logs). */
static atomic_int refused_lines;

static void count_refusals(enum rdmx_log_level level, const char *file, int line, const char *func,
                           const char *message)
{
	(void)level;
	(void)file;
	(void)line;
	(void)func;
	if (strstr(message, "refused"))
		atomic_fetch_add(&refused_lines, 1);
}

/* The set-up most tests share: the leak check begun, the pair open with
 * `conns` connections (a1-b1, then a2-b2), a 4 KiB grant-only region of A
 * filled with `fill`, a 4 KiB region of B (`b_access`, filled with `b_fill`),
 * all of A's region granted to a1 with `access`, settled, and B's remote view
 * of the grant. The test revokes g and ends with grant_fix_close. */
struct grant_fix {
	struct rdmx_conn *a1, *b1, *a2, *b2;
	struct region *ra, *rb;
	struct rdmx_mr_grant *g;
	struct rdmx_mr_remote *m;
};

static void grant_fix_open(struct grant_fix *f, int conns, uint8_t fill, unsigned b_access,
                           uint8_t b_fill, unsigned access)
{
	memset(f, 0, sizeof(*f));
	leak_begin();
	pair_open(&A, &B, 32);
	connect_pair(&A, &B, &f->a1, &f->b1);
	if (conns > 1)
		connect_pair(&A, &B, &f->a2, &f->b2);
	f->ra = region_new(&A, 4096, GRANTED, fill);
	f->rb = region_new(&B, 4096, b_access, b_fill);
	ASSERT_OK(rdmx_mr_grant(f->ra->mr, f->a1, 0, 4096, access, &f->g));
	settle(f->a1);
	f->m = remote_of_grant(&B, f->g);
}

static void grant_fix_close(void)
{
	pair_close(&A, &B);
	leak_end();
}

Test(grant, key_of_connection_a_fails_through_connection_b)
{
	struct grant_fix f;

	grant_fix_open(&f, 2, 0x11, 0, 0x77, RDMX_ACCESS_REMOTE_WRITE);
	struct rdmx_conn *b1 = f.b1, *b2 = f.b2;
	struct region *ra = f.ra, *src = f.rb;
	struct rdmx_mr_remote *m = f.m;
	struct tinfo tok = {0}, tbad = {0}, tafter = {0};

	atomic_store(&refused_lines, 0);
	ASSERT_OK(rdmx_log_set_function(count_refusals));
	/* through connection B: refused, nothing placed, only b2 in error */
	write_through(b2, src, m, 1024, 64, &tbad);
	ASSERT_DONE_ERR(&tbad, RDMX_E_REMOTE_ACCESS);
	cr_assert(all_bytes(ra->mem, 4096, 0x11), "a write through another connection placed data");
	cr_assert_eq(conn_state(b2), RDMX_CONN_ERROR);
	ASSERT_OK(rdmx_log_set_function(NULL));
	if (A.tcp)
		cr_assert_geq(atomic_load(&refused_lines), 1,
		              "the target logged nothing about the refused key");

	/* through connection A: works, before and after B's failure */
	write_through(b1, src, m, 0, 64, &tok);
	ASSERT_DONE_OK(&tok);
	cr_assert(all_bytes(ra->mem, 64, 0x77), "the write through the granted connection");
	cr_assert_eq(conn_state(b1), RDMX_CONN_ESTABLISHED);
	write_through(b1, src, m, 2048, 128, &tafter);
	ASSERT_DONE_OK(&tafter);
	cr_assert(all_bytes(ra->mem + 2048, 128, 0x77));

	ASSERT_OK(rdmx_mr_grant_revoke(&f.g));
	cr_assert_null(f.g);
	grant_fix_close();
}

Test(grant, read_through_another_connection_fails)
{
	struct grant_fix f;

	grant_fix_open(&f, 2, 0x42, RDMX_ACCESS_LOCAL_WRITE, 0, RDMX_ACCESS_REMOTE_READ);
	struct rdmx_conn *b1 = f.b1, *b2 = f.b2;
	struct region *dst = f.rb;
	struct rdmx_mr_remote *m = f.m;
	struct tinfo tbad = {0}, tok = {0};

	read_through(b2, dst, m, 0, 256, &tbad);
	ASSERT_DONE_ERR(&tbad, RDMX_E_REMOTE_ACCESS);
	cr_assert(all_bytes(dst->mem, 256, 0), "a refused read delivered data");
	read_through(b1, dst, m, 0, 256, &tok);
	ASSERT_DONE_OK(&tok);
	cr_assert(all_bytes(dst->mem, 256, 0x42));
	ASSERT_OK(rdmx_mr_grant_revoke(&f.g));
	grant_fix_close();
}

Test(grant, key_dies_with_its_connection)
{
	struct rdmx_conn *a2, *b2;
	enum rdmx_mr_grant_state st;
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
	struct grant_fix f;

	grant_fix_open(&f, 1, 0x11, 0, 0x77, RDMX_ACCESS_REMOTE_WRITE);
	struct rdmx_conn *a1 = f.a1, *b1 = f.b1;
	struct region *ra = f.ra, *src = f.rb;
	struct rdmx_mr_grant *g = f.g;
	struct rdmx_mr_remote *m = f.m;
	ASSERT_OK(rdmx_mr_grant_get_state(g, &st));
	cr_assert_eq(st, RDMX_MR_GRANT_ACTIVE);

	/* connection A ends (A's side hangs up; B sees it too) */
	ASSERT_OK(rdmx_conn_disconnect(a1));
	DRIVE_UNTIL(&A, &B,
	            conn_events(&A, CEV_DISCONNECTED, a1) == 1 &&
	                conn_events(&B, CEV_DISCONNECTED, b1) == 1);
	ASSERT_OK(rdmx_mr_grant_get_state(g, &st));
	cr_assert_eq(st, RDMX_MR_GRANT_ENDED, "the grant outlived its connection");
	ASSERT_RC(rdmx_mr_grant_get_descriptor(g, desc), RDMX_E_BAD_STATE);

	/* a new connection between the same contexts cannot use the old key */
	connect_pair(&A, &B, &a2, &b2);
	struct tinfo tbad = {0};
	write_through(b2, src, m, 0, 64, &tbad);
	ASSERT_DONE_ERR(&tbad, RDMX_E_REMOTE_ACCESS);
	cr_assert(all_bytes(ra->mem, 4096, 0x11), "a dead grant's key placed data");

	/* ENDED grants are still the caller's to revoke; the region waits */
	ASSERT_RC(rdmx_mr_dereg(&ra->mr), RDMX_E_BAD_STATE);
	cr_assert_not_null(ra->mr);
	ASSERT_OK(rdmx_mr_grant_revoke(&g));
	grant_fix_close();
}

Test(grant, key_dies_at_revoke)
{
	struct grant_fix f;

	grant_fix_open(&f, 2, 0x11, 0, 0x77, RDMX_ACCESS_REMOTE_WRITE);
	struct rdmx_conn *a2 = f.a2, *b1 = f.b1, *b2 = f.b2;
	struct region *ra = f.ra, *src = f.rb;
	struct rdmx_mr_grant *g = f.g;
	struct rdmx_mr_remote *m = f.m;
	struct tinfo tok = {0}, tbad = {0};

	write_through(b1, src, m, 0, 64, &tok);
	ASSERT_DONE_OK(&tok);
	ASSERT_OK(rdmx_mr_grant_revoke(&g));
	cr_assert_null(g);
	memset(ra->mem, 0x11, 64);
	write_through(b1, src, m, 0, 64, &tbad);
	ASSERT_DONE_ERR(&tbad, RDMX_E_REMOTE_ACCESS);
	cr_assert(all_bytes(ra->mem, 4096, 0x11), "a revoked key placed data");
	/* the other connection is untouched by a1's failure */
	struct rdmx_mr_grant *g2 = NULL;
	struct tinfo t2 = {0};
	ASSERT_OK(rdmx_mr_grant(ra->mr, a2, 0, 4096, RDMX_ACCESS_REMOTE_WRITE, &g2));
	settle(a2);
	struct rdmx_mr_remote *m2 = remote_of_grant(&B, g2);
	write_through(b2, src, m2, 100, 64, &t2);
	ASSERT_DONE_OK(&t2);
	cr_assert(all_bytes(ra->mem + 100, 64, 0x77));
	ASSERT_OK(rdmx_mr_grant_revoke(&g2));
	ASSERT_OK(rdmx_mr_grant_revoke(&g2)); /* NULL: no-op */
	ASSERT_OK(rdmx_mr_grant_revoke(NULL));
	grant_fix_close();
}

/* A grant of [4096, 5120) of an 8 KiB region. */
Test(grant, part_of_a_region_rejects_out_of_range_access)
{
	struct rdmx_conn *a[3], *b[3];
	struct rdmx_mr_grant *g[3] = {0};
	struct rdmx_mr_remote *m[3];
	size_t size = 0;
	leak_begin();
	pair_open(&A, &B, 32);
	struct region *ra = region_new(&A, 8192, GRANTED, 0x11);
	struct region *src = region_new(&B, 4096, 0, 0x77);
	struct region *dst = region_new(&B, 4096, RDMX_ACCESS_LOCAL_WRITE, 0);
	for (int i = 0; i < 3; i++) {
		connect_pair(&A, &B, &a[i], &b[i]);
		ASSERT_OK(rdmx_mr_grant(ra->mr, a[i], 4096, 1024,
		                        RDMX_ACCESS_REMOTE_READ | RDMX_ACCESS_REMOTE_WRITE, &g[i]));
		settle(a[i]);
		m[i] = remote_of_grant(&B, g[i]);
	}
	ASSERT_OK(rdmx_mr_remote_get_size(m[0], &size));
	cr_assert_eq(size, 1024u, "the descriptor of a partial grant spans %zu bytes", size);

	/* inside: offsets count from the granted start */
	struct tinfo tin = {0}, tend = {0}, tcross = {0}, tpast = {0};
	write_through(b[0], src, m[0], 0, 64, &tin);
	ASSERT_DONE_OK(&tin);
	cr_assert(all_bytes(ra->mem + 4096, 64, 0x77), "offset 0 of the grant is byte 4096");
	cr_assert(all_bytes(ra->mem, 4096, 0x11), "bytes before the grant changed");
	write_through(b[0], src, m[0], 1024 - 64, 64, &tend);
	ASSERT_DONE_OK(&tend);

	/* a write crossing the end, a read past it: refused, nothing outside */
	write_through(b[1], src, m[1], 1000, 64, &tcross);
	ASSERT_DONE_ERR(&tcross, RDMX_E_REMOTE_ACCESS);
	read_through(b[2], dst, m[2], 1024, 16, &tpast);
	ASSERT_DONE_ERR(&tpast, RDMX_E_REMOTE_ACCESS);
	cr_assert(all_bytes(ra->mem + 5120, 8192 - 5120, 0x11), "bytes after the grant changed");
	cr_assert(all_bytes(dst->mem, 16, 0), "a refused read delivered data");
	cr_assert_eq(conn_state(b[0]), RDMX_CONN_ESTABLISHED);

	for (int i = 0; i < 3; i++)
		ASSERT_OK(rdmx_mr_grant_revoke(&g[i]));
	pair_close(&A, &B);
	leak_end();
}

Test(grant, read_only_grant_rejects_writes)
{
	struct rdmx_conn *a1, *b1, *a2, *b2;
	struct rdmx_mr_grant *g1 = NULL, *g2 = NULL;
	unsigned access = 0;
	leak_begin();
	pair_open(&A, &B, 32);
	connect_pair(&A, &B, &a1, &b1);
	connect_pair(&A, &B, &a2, &b2);
	/* the region itself allows writes; the grant gives only reads */
	struct region *ra = region_new(&A, 4096, GRANTED, 0x33);
	struct region *src = region_new(&B, 4096, 0, 0x77);
	struct region *dst = region_new(&B, 4096, RDMX_ACCESS_LOCAL_WRITE, 0);
	ASSERT_OK(rdmx_mr_grant(ra->mr, a1, 0, 4096, RDMX_ACCESS_REMOTE_READ, &g1));
	ASSERT_OK(rdmx_mr_grant(ra->mr, a2, 0, 4096, RDMX_ACCESS_REMOTE_READ, &g2));
	settle(a1);
	settle(a2);
	struct rdmx_mr_remote *m1 = remote_of_grant(&B, g1);
	uint8_t forged[RDMX_MR_DESCRIPTOR_SIZE];
	ASSERT_OK(rdmx_mr_grant_get_descriptor(g2, forged));
	forged[4] |= RDMX_ACCESS_REMOTE_WRITE; /* the access field (mr.h layout) */
	struct rdmx_mr_remote *m2 = remote_from_desc(&B, forged);
	ASSERT_OK(rdmx_mr_remote_get_access(m1, &access));
	cr_assert_eq(access, (unsigned)RDMX_ACCESS_REMOTE_READ);
	struct tinfo tr = {0}, tw = {0};

	read_through(b1, dst, m1, 0, 512, &tr);
	ASSERT_DONE_OK(&tr);
	cr_assert(all_bytes(dst->mem, 512, 0x33));
	/* the descriptor's access field is the peer's claim; a forged one that
	 * says "write" is still refused by the target */
	write_through(b2, src, m2, 0, 64, &tw);
	ASSERT_DONE_ERR(&tw, RDMX_E_REMOTE_ACCESS);
	cr_assert(all_bytes(ra->mem, 4096, 0x33), "a read-only grant took a write");
	ASSERT_OK(rdmx_mr_grant_revoke(&g1));
	ASSERT_OK(rdmx_mr_grant_revoke(&g2));
	pair_close(&A, &B);
	leak_end();
}

Test(grant, contract_errors)
{
	struct rdmx_conn *a1, *b1;
	struct rdmx_mr_grant *g = NULL;
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
	leak_begin();
	pair_open(&A, &B, 32);
	struct region *ra = region_new(&A, 4096, GRANTED, 0);
	struct region *rd = region_new(&A, 4096, RDMX_ACCESS_REMOTE_READ, 0);
	/* a grant-only region has no device-wide descriptor */
	ASSERT_RC(rdmx_mr_get_descriptor(ra->mr, desc), RDMX_E_BAD_STATE);
	/* not connected yet: an exported connection is not established */
	const void *det = NULL;
	size_t dlen = 0;
	struct rdmx_conn *pending = NULL;
	ASSERT_OK(rdmx_ctx_export(A.ctx, &det, &dlen, &pending));
	ASSERT_RC(rdmx_mr_grant(ra->mr, pending, 0, 64, RDMX_ACCESS_REMOTE_READ, &g),
	          RDMX_E_BAD_STATE);
	connect_pair(&A, &B, &a1, &b1);
	ASSERT_RC(rdmx_mr_grant(NULL, a1, 0, 64, RDMX_ACCESS_REMOTE_READ, &g), RDMX_E_INVAL);
	ASSERT_RC(rdmx_mr_grant(ra->mr, NULL, 0, 64, RDMX_ACCESS_REMOTE_READ, &g), RDMX_E_INVAL);
	ASSERT_RC(rdmx_mr_grant(ra->mr, a1, 0, 64, RDMX_ACCESS_REMOTE_READ, NULL), RDMX_E_INVAL);
	ASSERT_RC(rdmx_mr_grant(ra->mr, a1, 0, 0, RDMX_ACCESS_REMOTE_READ, &g), RDMX_E_INVAL);
	ASSERT_RC(rdmx_mr_grant(ra->mr, a1, 4000, 97, RDMX_ACCESS_REMOTE_READ, &g), RDMX_E_INVAL);
	ASSERT_RC(rdmx_mr_grant(ra->mr, a1, 4097, 1, RDMX_ACCESS_REMOTE_READ, &g), RDMX_E_INVAL);
	ASSERT_RC(rdmx_mr_grant(ra->mr, a1, 0, 64, 0, &g), RDMX_E_INVAL);
	ASSERT_RC(rdmx_mr_grant(ra->mr, a1, 0, 64, RDMX_ACCESS_LOCAL_WRITE, &g), RDMX_E_INVAL);
	/* more than the region's flags */
	ASSERT_RC(rdmx_mr_grant(rd->mr, a1, 0, 64, RDMX_ACCESS_REMOTE_WRITE, &g), RDMX_E_INVAL);
	ASSERT_RC(rdmx_mr_grant(ra->mr, a1, 0, 64, RDMX_ACCESS_REMOTE_ATOMIC, &g), RDMX_E_INVAL);
	cr_assert_null(g, "a failed grant wrote its output");
	/* a region that is not grant-only can be granted too (its device-wide
	 * descriptor stays valid beside the grant) */
	ASSERT_OK(rdmx_mr_grant(rd->mr, a1, 0, 64, RDMX_ACCESS_REMOTE_READ, &g));
	ASSERT_OK(rdmx_mr_get_descriptor(rd->mr, desc));
	ASSERT_RC(rdmx_mr_dereg(&rd->mr), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_mr_grant_get_descriptor(NULL, desc), RDMX_E_INVAL);
	ASSERT_RC(rdmx_mr_grant_get_state(g, NULL), RDMX_E_INVAL);
	ASSERT_OK(rdmx_mr_grant_revoke(&g));
	/* a disconnecting connection takes no new grant */
	ASSERT_OK(rdmx_conn_disconnect(a1));
	ASSERT_RC(rdmx_mr_grant(ra->mr, a1, 0, 64, RDMX_ACCESS_REMOTE_READ, &g), RDMX_E_BAD_STATE);
	DRIVE_UNTIL(&A, &B, conn_events(&A, CEV_DISCONNECTED, a1) == 1);
	pair_close(&A, &B);
	leak_end();
}

/* A grant still ACTIVE when the context stops ends with it. */
Test(grant, context_stop_ends_grants)
{
	struct rdmx_conn *a1, *b1;
	struct rdmx_mr_grant *g = NULL;
	enum rdmx_mr_grant_state st;
	leak_begin();
	pair_open(&A, &B, 32);
	connect_pair(&A, &B, &a1, &b1);
	struct region *ra = region_new(&A, 4096, GRANTED, 0);
	ASSERT_OK(rdmx_mr_grant(ra->mr, a1, 0, 4096, RDMX_ACCESS_REMOTE_WRITE, &g));
	ASSERT_OK(rdmx_ctx_stop(A.ctx));
	ASSERT_OK(rdmx_mr_grant_get_state(g, &st));
	cr_assert_eq(st, RDMX_MR_GRANT_ENDED);
	ASSERT_OK(rdmx_mr_grant_revoke(&g));
	pair_close(&A, &B);
	leak_end();
}

/* The cm flow's connections bind grants the same way. */
Test(grant, cm_connection_key_fails_through_another_connection)
{
	struct rdmx_conn *sa, *cb, *a2, *b2;
	struct rdmx_mr_grant *g = NULL;
	leak_begin();
	pair_open(&A, &B, 32);
	cm_pair(&A, &B, NULL, 0, NULL, &sa, &cb);
	connect_pair(&A, &B, &a2, &b2);
	struct region *ra = region_new(&A, 4096, GRANTED, 0x11);
	struct region *src = region_new(&B, 4096, 0, 0x77);
	ASSERT_OK(rdmx_mr_grant(ra->mr, sa, 0, 4096, RDMX_ACCESS_REMOTE_WRITE, &g));
	settle(sa);
	struct rdmx_mr_remote *m = remote_of_grant(&B, g);
	struct tinfo tok = {0}, tbad = {0};

	write_through(cb, src, m, 0, 64, &tok);
	ASSERT_DONE_OK(&tok);
	cr_assert(all_bytes(ra->mem, 64, 0x77));
	write_through(b2, src, m, 128, 64, &tbad);
	ASSERT_DONE_ERR(&tbad, RDMX_E_REMOTE_ACCESS);
	cr_assert(all_bytes(ra->mem + 128, 64, 0x11),
	          "a write through another connection placed data");
	ASSERT_OK(rdmx_mr_grant_revoke(&g));
	pair_close(&A, &B);
	leak_end();
}
