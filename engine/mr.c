/* Memory regions: registration through the provider, connection-bound
 * grants (the engine keeps each connection's list so that the connection's
 * end kills them), the descriptor wire format of mr.h (explicit
 * little-endian packing, no struct overlay), and remote regions decoded
 * from a peer's descriptor. */
#include <stdlib.h>
#include <string.h>

#include "provider.h"

#define OFF_MAGIC 0
#define OFF_VERSION 2
#define OFF_PROVIDER 3
#define OFF_ACCESS 4
#define OFF_ADDR 8
#define OFF_LEN 16
#define OFF_RKEY 24
#define OFF_RESERVED 28

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static atomic_uint_fast64_t mr_serials;

int rdmx_mr_reg(struct rdmx_dev *dev, void *addr, size_t len, unsigned access, struct rdmx_mr **mr)
{
	struct rdmx_mr *m;
	int rc;

	if (!dev || !addr || !len || !mr || (access & ~(RDMX_ACCESS_ALL | RDMX_ACCESS_GRANT_ONLY)))
		return RDMX_E_INVAL;
	if ((uintptr_t)addr + len < (uintptr_t)addr)
		return RDMX_E_INVAL;
	if ((access & RDMX_ACCESS_GRANT_ONLY) && !dev->ops->mr_grant) {
		RDMX_DBG("grant-only region on %s: the provider has no grants", dev->name);
		return RDMX_E_NOT_SUPPORTED;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return RDMX_E_NOMEM;
	m->dev = dev;
	m->addr = addr;
	m->len = len;
	m->access = access & RDMX_ACCESS_ALL;
	m->grant_only = (access & RDMX_ACCESS_GRANT_ONLY) != 0;
	m->serial = atomic_fetch_add(&mr_serials, 1) + 1;
	rc = dev->ops->mr_reg(m);
	if (rc) {
		RDMX_DBG("registering %zu bytes on %s failed: %s", len, dev->name,
		         rdmx_err_name(rc));
		free(m);
		return rc;
	}
	atomic_fetch_add(&dev->users, 1);
	*mr = m;
	return 0;
}

int rdmx_mr_dereg(struct rdmx_mr **mr)
{
	struct rdmx_dev *dev;

	if (!mr || !*mr)
		return 0;
	if (atomic_load(&(*mr)->grants)) {
		RDMX_ERR("deregistering a region with %u grants not revoked: refused",
		         atomic_load(&(*mr)->grants));
		return RDMX_E_BAD_STATE;
	}
	dev = (*mr)->dev;
	dev->ops->mr_dereg(*mr);
	atomic_fetch_sub(&dev->users, 1);
	free(*mr);
	*mr = NULL;
	return 0;
}

int rdmx_mr_get_ptr(const struct rdmx_mr *mr, void **ptr)
{
	if (!mr || !ptr)
		return RDMX_E_INVAL;
	*ptr = mr->addr;
	return 0;
}

int rdmx_mr_get_size(const struct rdmx_mr *mr, size_t *size)
{
	if (!mr || !size)
		return RDMX_E_INVAL;
	*size = mr->len;
	return 0;
}

int rdmx_mr_get_access(const struct rdmx_mr *mr, unsigned *access)
{
	if (!mr || !access)
		return RDMX_E_INVAL;
	*access = mr->access;
	return 0;
}

static void encode(uint8_t *p, uint8_t provider_id, unsigned access, uint64_t addr, uint64_t len,
                   uint32_t rkey);

void rdmx__mr_descriptor_encode(const struct rdmx_mr *mr, uint8_t provider_id, void *desc)
{
	encode(desc, provider_id, mr->access, (uint64_t)(uintptr_t)mr->addr, (uint64_t)mr->len,
	       mr->rkey);
}

int rdmx__mr_descriptor_decode(const void *desc, size_t size, struct rdmx_mr_remote *remote)
{
	const uint8_t *p = desc;
	struct rdmx_mr_remote r;

	if (!desc || !remote || size != RDMX_MR_DESCRIPTOR_SIZE)
		return RDMX_E_INVAL;
	if (get_u16(p + OFF_MAGIC) != RDMX_DESC_MAGIC || p[OFF_VERSION] != RDMX_DESC_VERSION)
		return RDMX_E_INVAL;
	if (p[OFF_PROVIDER] != RDMX_PROVIDER_ID_TCP && p[OFF_PROVIDER] != RDMX_PROVIDER_ID_VERBS)
		return RDMX_E_INVAL;
	memset(&r, 0, sizeof(r));
	r.provider = p[OFF_PROVIDER];
	r.access = get_u32(p + OFF_ACCESS);
	r.addr = get_u64(p + OFF_ADDR);
	r.len = get_u64(p + OFF_LEN);
	r.rkey = get_u32(p + OFF_RKEY);
	if ((r.access & ~RDMX_ACCESS_ALL) || get_u32(p + OFF_RESERVED) != 0)
		return RDMX_E_INVAL;
	if (r.len == 0 || r.addr + r.len < r.addr)
		return RDMX_E_INVAL;
	*remote = r;
	return 0;
}

static void encode(uint8_t *p, uint8_t provider_id, unsigned access, uint64_t addr, uint64_t len,
                   uint32_t rkey)
{
	put_u16(p + OFF_MAGIC, RDMX_DESC_MAGIC);
	p[OFF_VERSION] = RDMX_DESC_VERSION;
	p[OFF_PROVIDER] = provider_id;
	put_u32(p + OFF_ACCESS, access);
	put_u64(p + OFF_ADDR, addr);
	put_u64(p + OFF_LEN, len);
	put_u32(p + OFF_RKEY, rkey);
	put_u32(p + OFF_RESERVED, 0);
}

int rdmx_mr_get_descriptor(const struct rdmx_mr *mr, void *desc)
{
	if (!mr || !desc)
		return RDMX_E_INVAL;
	if (mr->grant_only)
		return RDMX_E_BAD_STATE;
	rdmx__mr_descriptor_encode(mr, mr->dev->ops->id, desc);
	return 0;
}

/* ---- connection-bound grants ---- */

#define GRANT_ACCESS                                                                               \
	(RDMX_ACCESS_REMOTE_READ | RDMX_ACCESS_REMOTE_WRITE | RDMX_ACCESS_REMOTE_ATOMIC)

int rdmx_mr_grant(struct rdmx_mr *mr, struct rdmx_conn *conn, size_t offset, size_t len,
                  unsigned access, struct rdmx_mr_grant **grant)
{
	const struct rdmx_provider_ops *ops;
	struct rdmx_mr_grant *g;
	int rc;

	if (!mr || !conn || !grant || !len || !access || (access & ~GRANT_ACCESS))
		return RDMX_E_INVAL;
	if (offset > mr->len || len > mr->len - offset || (access & mr->access) != access)
		return RDMX_E_INVAL;
	if (conn->ctx->dev != mr->dev)
		return RDMX_E_INVAL;
	ops = mr->dev->ops;
	if (!ops->mr_grant || !ops->mr_revoke)
		return RDMX_E_NOT_SUPPORTED;
	if (conn->ctx->state != RDMX_CTX_RUNNING || conn->state != RDMX_CONN_ESTABLISHED ||
	    !conn->can_post || conn->closing)
		return RDMX_E_BAD_STATE;
	g = calloc(1, sizeof(*g));
	if (!g)
		return RDMX_E_NOMEM;
	g->mr = mr;
	g->conn = conn;
	g->offset = offset;
	g->len = len;
	g->access = access;
	rc = ops->mr_grant(g);
	if (rc) {
		RDMX_DBG("granting %zu bytes to connection %u failed: %s", len, conn->id,
		         rdmx_err_name(rc));
		free(g);
		return rc;
	}
	g->active = true;
	g->next_in_conn = conn->grants;
	conn->grants = g;
	atomic_fetch_add(&mr->grants, 1);
	*grant = g;
	return 0;
}

static void unlink_grant(struct rdmx_mr_grant *g)
{
	for (struct rdmx_mr_grant **pp = &g->conn->grants; *pp; pp = &(*pp)->next_in_conn) {
		if (*pp == g) {
			*pp = g->next_in_conn;
			break;
		}
	}
	g->next_in_conn = NULL;
}

/* The key stops working; the grant object stays the caller's. */
static void grant_kill(struct rdmx_mr_grant *g)
{
	if (!g->active)
		return;
	g->mr->dev->ops->mr_revoke(g);
	g->active = false;
	g->prov = NULL;
}

void rdmx__conn_end_grants(struct rdmx_conn *conn)
{
	while (conn->grants) {
		struct rdmx_mr_grant *g = conn->grants;

		conn->grants = g->next_in_conn;
		g->next_in_conn = NULL;
		grant_kill(g);
		g->conn = NULL;
	}
}

int rdmx_mr_grant_revoke(struct rdmx_mr_grant **grant)
{
	struct rdmx_mr_grant *g;

	if (!grant || !*grant)
		return 0;
	g = *grant;
	if (g->conn)
		unlink_grant(g);
	grant_kill(g);
	atomic_fetch_sub(&g->mr->grants, 1);
	free(g);
	*grant = NULL;
	return 0;
}

int rdmx_mr_grant_get_descriptor(const struct rdmx_mr_grant *grant, void *desc)
{
	if (!grant || !desc)
		return RDMX_E_INVAL;
	if (!grant->active)
		return RDMX_E_BAD_STATE;
	encode(desc, grant->mr->dev->ops->id, grant->access,
	       (uint64_t)(uintptr_t)grant->mr->addr + grant->offset, grant->len, grant->rkey);
	return 0;
}

int rdmx_mr_grant_get_state(const struct rdmx_mr_grant *grant, enum rdmx_mr_grant_state *state)
{
	if (!grant || !state)
		return RDMX_E_INVAL;
	*state = grant->active ? RDMX_MR_GRANT_ACTIVE : RDMX_MR_GRANT_ENDED;
	return 0;
}

int rdmx_mr_get_descriptor_size(const struct rdmx_mr *mr, size_t *size)
{
	if (!mr || !size)
		return RDMX_E_INVAL;
	*size = RDMX_MR_DESCRIPTOR_SIZE;
	return 0;
}

int rdmx_mr_remote_from_descriptor(const void *desc, size_t desc_size,
                                   struct rdmx_mr_remote **remote)
{
	struct rdmx_mr_remote r, *out;
	int rc;

	if (!remote)
		return RDMX_E_INVAL;
	rc = rdmx__mr_descriptor_decode(desc, desc_size, &r);
	if (rc)
		return rc;
	out = malloc(sizeof(*out));
	if (!out)
		return RDMX_E_NOMEM;
	*out = r;
	*remote = out;
	return 0;
}

int rdmx_mr_remote_delete(struct rdmx_mr_remote **remote)
{
	if (!remote || !*remote)
		return 0;
	free(*remote);
	*remote = NULL;
	return 0;
}

int rdmx_mr_remote_get_size(const struct rdmx_mr_remote *remote, size_t *size)
{
	if (!remote || !size)
		return RDMX_E_INVAL;
	*size = (size_t)remote->len;
	return 0;
}

int rdmx_mr_remote_get_access(const struct rdmx_mr_remote *remote, unsigned *access)
{
	if (!remote || !access)
		return RDMX_E_INVAL;
	*access = remote->access;
	return 0;
}
