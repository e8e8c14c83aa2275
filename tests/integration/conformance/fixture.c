/* Conformance battery fixture: devices, contexts, regions, connections and
 * the drive loop. Only the public API is used. */
#include "conformance.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdmx/pe.h>

/* ---- callbacks ---- */

static void record(struct rdmx_task *t, void *ud, void *cud, bool ok)
{
	struct side *s = cud;
	struct tinfo *ti = ud;
	int st = rdmx_task_get_status(t);

	s->completions++;
	if (ok)
		s->oks++;
	else
		s->errs++;
	if (ti) {
		if (ok)
			ti->ok++;
		else
			ti->err++;
		ti->status = st;
		if ((ok && st != 0) || (!ok && st == 0))
			ti->bad = true;
		ti->seq = s->completions;
		if (ok) {
			enum rdmx_task_type ty = rdmx_task_get_type(t);
			if (ty == RDMX_TASK_RECEIVE) {
				ti->opcode = rdmx_task_receive_get_opcode(t);
				ti->len = rdmx_task_receive_get_len(t);
				ti->imm = rdmx_task_receive_get_imm(t);
				ti->conn = rdmx_task_receive_get_conn(t);
			} else if (ty == RDMX_TASK_READ || ty == RDMX_TASK_SYNC_EVENT_GET) {
				ti->read_len = rdmx_task_read_get_len(t);
			}
		}
	}
	if (s->norder < SIDE_MAX_ORDER)
		s->order[s->norder++] = ti;
	if (s->hook)
		s->hook(s, t, ti, ok);
}

static void cb_ok(struct rdmx_task *t, void *ud, void *cud)
{
	record(t, ud, cud, true);
}

static void cb_err(struct rdmx_task *t, void *ud, void *cud)
{
	record(t, ud, cud, false);
}

static void add_event(struct side *s, enum conn_ev_kind kind, struct rdmx_conn *c, void *ud)
{
	if (s->nevents >= SIDE_MAX_CONN_EVENTS)
		return;
	struct conn_ev *e = &s->events[s->nevents++];
	e->kind = kind;
	e->conn = c;
	e->conn_ud = ud;
	e->id = UINT32_MAX;
	rdmx_conn_get_id(c, &e->id);
	e->completions = s->completions;
}

static void copy_pd(struct rdmx_conn *c, uint8_t *dst, size_t *len, int *rc)
{
	const void *d = NULL;
	size_t n = 0;
	*rc = rdmx_conn_get_private_data(c, &d, &n);
	*len = 0;
	if (*rc == 0) {
		*len = n;
		if (n > RDMX_PRIVATE_DATA_MAX + 8)
			n = RDMX_PRIVATE_DATA_MAX + 8;
		if (n && d)
			memcpy(dst, d, n);
	}
}

static void on_request(struct rdmx_conn *c, void *cud)
{
	struct side *s = cud;
	s->requests++;
	add_event(s, CEV_REQUEST, c, NULL);
	copy_pd(c, s->req_pd, &s->req_pd_len, &s->req_pd_rc);
	switch (s->policy) {
	case REQ_ACCEPT:
		rdmx_conn_set_user_data(c, s->accept_ud);
		s->accept_rc =
		    rdmx_conn_accept(c, s->accept_pd_len ? s->accept_pd : NULL, s->accept_pd_len);
		break;
	case REQ_REJECT:
		s->accept_rc = rdmx_conn_reject(c);
		break;
	case REQ_HOLD:
		s->held = c;
		break;
	}
}

static void on_established(struct rdmx_conn *c, void *ud, void *cud)
{
	struct side *s = cud;
	s->established++;
	add_event(s, CEV_ESTABLISHED, c, ud);
	copy_pd(c, s->est_pd, &s->est_pd_len, &s->est_pd_rc);
}

static void on_failure(struct rdmx_conn *c, void *ud, void *cud)
{
	struct side *s = cud;
	s->failures++;
	add_event(s, CEV_FAILURE, c, ud);
}

static void on_disconnected(struct rdmx_conn *c, void *ud, void *cud)
{
	struct side *s = cud;
	s->disconnects++;
	add_event(s, CEV_DISCONNECTED, c, ud);
}

int conn_events(const struct side *s, enum conn_ev_kind kind, const struct rdmx_conn *conn)
{
	int n = 0;
	for (int i = 0; i < s->nevents; i++)
		if (s->events[i].kind == kind && (!conn || s->events[i].conn == conn))
			n++;
	return n;
}

struct rdmx_conn *latest_conn(const struct side *s, enum conn_ev_kind kind)
{
	for (int i = s->nevents - 1; i >= 0; i--)
		if (s->events[i].kind == kind)
			return s->events[i].conn;
	return NULL;
}

/* ---- sides ---- */

int side_open_dev(int which, struct rdmx_dev **dev)
{
	const char *name = env_device(which);
	const char *addr = env_addr_raw(which);
	if (strcmp(name, "tcp") == 0 && addr)
		return rdmx_dev_open_by_addr(addr, dev);
	return rdmx_dev_open(name, dev);
}

void side_open(struct side *s, const char *name, int which)
{
	memset(s, 0, sizeof(*s));
	s->name = name;
	s->devname = env_device(which);
	s->addr = env_addr(which);
	int rc = side_open_dev(which, &s->dev);
	cr_assert_eq(rc, 0, "opening device %s (addr %s) -> %s", s->devname, s->addr,
	             rdmx_err_name(rc));
	const char *prov = rdmx_dev_provider(s->dev);
	cr_assert(prov != NULL, "rdmx_dev_provider returned NULL");
	s->tcp = strcmp(prov, "tcp") == 0;
	ASSERT_OK(rdmx_dev_query_caps(s->dev, &s->caps));
	s->own_dev = true;
	s->own_pe = true;
	ASSERT_OK(rdmx_pe_create(&s->pe));
	ASSERT_OK(rdmx_ctx_create(s->dev, s->pe, &s->ctx));
	ASSERT_OK(rdmx_ctx_set_user_data(s->ctx, s));
	ASSERT_OK(rdmx_ctx_set_conn_callbacks(s->ctx, on_request, on_established, on_failure,
	                                      on_disconnected));
}

void side_attach(struct side *s, const char *name, struct side *dev_owner, struct rdmx_pe *pe)
{
	memset(s, 0, sizeof(*s));
	s->name = name;
	s->devname = dev_owner->devname;
	s->addr = dev_owner->addr;
	s->tcp = dev_owner->tcp;
	s->dev = dev_owner->dev;
	s->caps = dev_owner->caps;
	s->own_dev = false;
	s->own_pe = pe == NULL;
	if (pe)
		s->pe = pe;
	else
		ASSERT_OK(rdmx_pe_create(&s->pe));
	ASSERT_OK(rdmx_ctx_create(s->dev, s->pe, &s->ctx));
	ASSERT_OK(rdmx_ctx_set_user_data(s->ctx, s));
	ASSERT_OK(rdmx_ctx_set_conn_callbacks(s->ctx, on_request, on_established, on_failure,
	                                      on_disconnected));
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

void side_conf(struct side *s, uint32_t num_tasks)
{
	ASSERT_OK(rdmx_ctx_set_send_queue_size(s->ctx, min_u32(1024, s->caps.max_send_queue_size)));
	ASSERT_OK(rdmx_ctx_set_recv_queue_size(s->ctx, min_u32(256, s->caps.max_recv_queue_size)));
	if (s->caps.max_connections)
		ASSERT_OK(
		    rdmx_ctx_set_max_connections(s->ctx, min_u32(16, s->caps.max_connections)));
	for (int t = 0; t < RDMX_TASK_TYPE_COUNT; t++) {
		uint32_t n = num_tasks;
		if (t == RDMX_TASK_RECEIVE)
			n = min_u32(n, min_u32(256, s->caps.max_recv_queue_size));
		int rc = rdmx_ctx_set_task_conf(s->ctx, (enum rdmx_task_type)t, cb_ok, cb_err, n);
		cr_assert_eq(rc, 0, "rdmx_ctx_set_task_conf(type %d, %u tasks) -> %s", t, n,
		             rdmx_err_name(rc));
	}
}

void side_start(struct side *s)
{
	ASSERT_OK(rdmx_ctx_start(s->ctx));
}

static void side_stop(struct side *s)
{
	enum rdmx_ctx_state st;
	if (!s->ctx)
		return;
	ASSERT_OK(rdmx_ctx_get_state(s->ctx, &st));
	if (st == RDMX_CTX_RUNNING)
		ASSERT_OK(rdmx_ctx_stop(s->ctx));
	ASSERT_OK(rdmx_ctx_get_state(s->ctx, &st));
	cr_assert_eq(st, RDMX_CTX_IDLE, "context of side %s not IDLE after stop (%d)", s->name,
	             (int)st);
}

void side_close(struct side *s)
{
	side_stop(s);
	for (int i = 0; i < s->nremotes; i++) {
		ASSERT_OK(rdmx_mr_remote_delete(&s->remotes[i]));
		cr_assert_null(s->remotes[i]);
	}
	s->nremotes = 0;
	for (int i = 0; i < s->nregions; i++) {
		struct region *r = s->regions[i];
		if (r->mr) {
			ASSERT_OK(rdmx_mr_dereg(&r->mr));
			cr_assert_null(r->mr);
		}
		free(r->mem);
		free(r);
	}
	s->nregions = 0;
	if (s->ctx) {
		ASSERT_OK(rdmx_ctx_destroy(&s->ctx));
		cr_assert_null(s->ctx);
	}
	if (s->pe && s->own_pe) {
		ASSERT_OK(rdmx_pe_destroy(&s->pe));
		cr_assert_null(s->pe);
	}
	s->pe = NULL;
	if (s->dev && s->own_dev) {
		ASSERT_OK(rdmx_dev_close(&s->dev));
		cr_assert_null(s->dev);
	}
	s->dev = NULL;
}

void pair_open(struct side *a, struct side *b, uint32_t num_tasks)
{
	side_open(a, "a", 0);
	side_open(b, "b", 1);
	side_conf(a, num_tasks);
	side_conf(b, num_tasks);
	side_start(a);
	side_start(b);
}

void trio_open(struct side *a, struct side *a2, struct side *b, uint32_t num_tasks)
{
	side_open(a, "a", 0);
	side_attach(a2, "a2", a, a->pe);
	side_open(b, "b", 1);
	side_conf(a, num_tasks);
	side_conf(a2, num_tasks);
	side_conf(b, num_tasks);
}

void pair_close(struct side *a, struct side *b)
{
	side_stop(a);
	side_stop(b);
	side_close(a);
	side_close(b);
}

void require_atomics(const struct side *s)
{
	if (!s->caps.atomics)
		cr_skip_test("device %s has no atomics", s->devname);
}

/* ---- memory ---- */

struct region *region_new(struct side *s, size_t len, unsigned access, uint8_t fill)
{
	cr_assert(s->nregions < SIDE_MAX_REGIONS, "too many regions in one test");
	struct region *r = calloc(1, sizeof(*r));
	cr_assert_not_null(r);
	size_t alloc = (len + 63) & ~(size_t)63;
	r->mem = aligned_alloc(64, alloc ? alloc : 64);
	cr_assert_not_null(r->mem);
	memset(r->mem, fill, alloc ? alloc : 64);
	r->owner = s;
	r->len = len;
	r->access = access;
	int rc = rdmx_mr_reg(s->dev, r->mem, len, access, &r->mr);
	cr_assert_eq(rc, 0, "rdmx_mr_reg(%zu bytes, access 0x%x) -> %s", len, access,
	             rdmx_err_name(rc));
	if (access & RDMX_ACCESS_GRANT_ONLY) /* no device-wide descriptor (mr.h) */
		ASSERT_RC(rdmx_mr_get_descriptor(r->mr, r->desc), RDMX_E_BAD_STATE);
	else
		ASSERT_OK(rdmx_mr_get_descriptor(r->mr, r->desc));
	s->regions[s->nregions++] = r;
	return r;
}

void region_dereg(struct region *r)
{
	ASSERT_OK(rdmx_mr_dereg(&r->mr));
	cr_assert_null(r->mr);
}

struct rdmx_mr_remote *remote_from_desc(struct side *user, const void *desc)
{
	cr_assert(user->nremotes < SIDE_MAX_REMOTES, "too many remotes in one test");
	struct rdmx_mr_remote *m = NULL;
	ASSERT_OK(rdmx_mr_remote_from_descriptor(desc, RDMX_MR_DESCRIPTOR_SIZE, &m));
	cr_assert_not_null(m);
	user->remotes[user->nremotes++] = m;
	return m;
}

struct rdmx_mr_remote *remote_of(struct side *user, const struct region *r)
{
	return remote_from_desc(user, r->desc);
}

/* ---- connections ---- */

enum rdmx_conn_state conn_state(const struct rdmx_conn *c)
{
	enum rdmx_conn_state st = (enum rdmx_conn_state) - 1;
	if (rdmx_conn_get_state(c, &st) != 0)
		return (enum rdmx_conn_state) - 1;
	return st;
}

void connect_pair(struct side *a, struct side *b, struct rdmx_conn **ca, struct rdmx_conn **cb)
{
	const void *da = NULL, *db = NULL;
	size_t la = 0, lb = 0;
	struct rdmx_conn *x = NULL, *y = NULL;
	ASSERT_OK(rdmx_ctx_export(a->ctx, &da, &la, &x));
	ASSERT_OK(rdmx_ctx_export(b->ctx, &db, &lb, &y));
	cr_assert(x && y && da && db && la > 0 && lb > 0, "export returned empty details");
	ASSERT_OK(rdmx_ctx_connect(a->ctx, db, lb, x));
	ASSERT_OK(rdmx_ctx_connect(b->ctx, da, la, y));
	DRIVE_UNTIL(
	    a, b, conn_state(x) == RDMX_CONN_ESTABLISHED && conn_state(y) == RDMX_CONN_ESTABLISHED);
	*ca = x;
	*cb = y;
}

void write_checked(struct side *a, struct side *b, struct rdmx_conn *cb, size_t len, uint32_t seed)
{
	struct region *ra = region_new(a, 4096, RDMX_ACCESS_ALL, 0);
	struct region *rb = region_new(b, 4096, RDMX_ACCESS_ALL, 0);
	pattern_fill(rb->mem, len, seed);
	struct rdmx_mr_remote *m = remote_of(b, ra);
	struct rdmx_buf s = lbuf(rb, 0, len);
	struct rdmx_rbuf r = rbuf(m, 0, 0);
	struct tinfo ti = {0};
	struct rdmx_task *t;
	ASSERT_OK(rdmx_task_write_alloc(b->ctx, cb, &s, &r, &ti, &t));
	submit_wait(a, b, t, &ti);
	ASSERT_DONE_OK(&ti);
	cr_assert(pattern_check(ra->mem, len, seed));
}

struct rdmx_mr_remote *pair_one_sided(struct side *a, struct side *b, uint32_t num_tasks,
                                      struct rdmx_conn **ca, struct rdmx_conn **cb,
                                      struct region **ra, struct region **rb)
{
	pair_open(a, b, num_tasks);
	connect_pair(a, b, ca, cb);
	*ra = region_new(a, 4096, RDMX_ACCESS_ALL, 0);
	*rb = region_new(b, 4096, RDMX_ACCESS_LOCAL_WRITE, 0);
	return remote_of(b, *ra);
}

struct rdmx_addr *addr_of(struct side *s, uint16_t port)
{
	struct rdmx_addr *ad = NULL;
	enum rdmx_addr_type ty = strchr(s->addr, ':') ? RDMX_ADDR_IPV6 : RDMX_ADDR_IPV4;
	ASSERT_OK(rdmx_addr_create(ty, s->addr, port, &ad));
	return ad;
}

uint16_t listen_any(struct side *srv)
{
	static unsigned salt;
	int rc = RDMX_E_INVAL;
	for (int i = 0; i < 50; i++) {
		unsigned v = (unsigned)getpid() * 7919u + (unsigned)time(NULL) + salt++ * 104729u;
		uint16_t port = (uint16_t)(20000 + v % 30000);
		rc = rdmx_ctx_listen(srv->ctx, port);
		if (rc == 0)
			return port;
	}
	cr_assert_fail("rdmx_ctx_listen on 50 ports failed, last: %s", rdmx_err_name(rc));
	return 0;
}

void cm_pair(struct side *srv, struct side *cli, const void *pd, size_t pd_len, void *ud,
             struct rdmx_conn **sconn, struct rdmx_conn **cconn)
{
	uint16_t port = listen_any(srv);
	struct rdmx_addr *ad = addr_of(srv, port);
	struct rdmx_conn *c = NULL;
	int se = srv->established, ce = cli->established;
	srv->policy = REQ_ACCEPT;
	ASSERT_OK(rdmx_ctx_connect_to_addr(cli->ctx, ad, pd, pd_len, ud, &c));
	ASSERT_OK(rdmx_addr_destroy(&ad));
	DRIVE_UNTIL(srv, cli, srv->established > se && cli->established > ce);
	ASSERT_OK(srv->accept_rc);
	*cconn = c;
	*sconn = latest_conn(srv, CEV_ESTABLISHED);
}

/* ---- driving ---- */

uint64_t now_ms(void)
{
	return (uint64_t)(rdmx_pe_now_ns() / 1000000u);
}

static int progress(struct side *s)
{
	if (!s || !s->pe)
		return 0;
	int n = rdmx_pe_progress(s->pe);
	cr_assert(n >= 0, "rdmx_pe_progress(side %s) -> %s", s->name, rdmx_err_name(n));
	return n;
}

void drive_once(struct side *a, struct side *b, struct side *c)
{
	int n = progress(a) + progress(b) + progress(c);
	if (n == 0)
		usleep(50); /* leave the cpu to the provider threads */
}

bool drive(struct side *a, struct side *b, bool (*pred)(void *), void *arg, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	while (!pred(arg)) {
		if (now_ms() >= deadline)
			return false;
		drive_once(a, b, NULL);
	}
	return true;
}

void drive_for(struct side *a, struct side *b, struct side *c, int ms)
{
	uint64_t deadline = now_ms() + (uint64_t)ms;
	while (now_ms() < deadline)
		drive_once(a, b, c);
}

/* ---- tasks ---- */

void submit_wait(struct side *a, struct side *b, struct rdmx_task *t, struct tinfo *ti)
{
	int before = TI_DONE(ti);
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(a, b, TI_DONE(ti) > before);
}

struct rdmx_task *post_recv(struct side *s, struct rdmx_buf *dst, struct tinfo *ti)
{
	struct rdmx_task *t = NULL;
	ASSERT_OK(rdmx_task_receive_alloc(s->ctx, dst, ti, &t));
	cr_assert_not_null(t);
	ASSERT_OK(rdmx_task_submit(t));
	return t;
}
