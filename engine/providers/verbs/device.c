/* verbs devices: listing, open/close, capabilities and the GID table.
 *
 * The device owns the protection domain: memory is registered on a device
 * (rdmx_mr_reg) before any context exists, and every QP of every context on
 * the device shares that PD. The port is the first ACTIVE one (else 1). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs.h"

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

int rdmx__verbs_dev_list(struct rdmx_dev_info *infos, size_t max, size_t *count)
{
	struct ibv_device **list;
	int n = 0;

	if (!count)
		return RDMX_E_INVAL;
	list = ibv_get_device_list(&n);
	if (!list) {
		/* ENOSYS: no kernel support at all, an ordinary case (tcp only) */
		RDMX_DBG("verbs: ibv_get_device_list failed: %s", strerror(errno));
		return 0;
	}
	for (int i = 0; i < n; i++) {
		if (infos && (size_t)i < max) {
			memset(&infos[i], 0, sizeof(infos[i]));
			snprintf(infos[i].name, sizeof(infos[i].name), "%s",
			         ibv_get_device_name(list[i]));
			snprintf(infos[i].provider, sizeof(infos[i].provider), "verbs");
		}
	}
	*count += (size_t)n;
	ibv_free_device_list(list);
	return 0;
}

/* The first ACTIVE port, else port 1. */
static uint8_t pick_port(struct ibv_context *ibv, uint8_t nports, struct ibv_port_attr *out)
{
	struct ibv_port_attr pa;

	for (uint8_t p = 1; p <= nports; p++) {
		if (ibv_query_port(ibv, p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) {
			*out = pa;
			return p;
		}
	}
	if (ibv_query_port(ibv, 1, out))
		memset(out, 0, sizeof(*out));
	return 1;
}

static int parse_ip(const char *ip, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, ip, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		return 0;
	}
	return RDMX_E_INVAL;
}

int rdmx__verbs_dev_open(struct rdmx_dev *dev, const char *ip)
{
	struct ibv_device **list;
	struct ibv_device *found = NULL;
	struct verbs_dev *vd;
	int n = 0, rc;

	vd = calloc(1, sizeof(*vd));
	if (!vd)
		return RDMX_E_NOMEM;
	if (ip && parse_ip(ip, &vd->ip) == 0)
		vd->has_ip = true;
	list = ibv_get_device_list(&n);
	if (!list) {
		RDMX_ERR("verbs: ibv_get_device_list failed: %s", strerror(errno));
		rc = RDMX_E_NO_DEVICE;
		goto free_vd;
	}
	for (int i = 0; i < n && !found; i++)
		if (strcmp(ibv_get_device_name(list[i]), dev->name) == 0)
			found = list[i];
	if (!found) {
		rc = RDMX_E_NO_DEVICE;
		goto free_list;
	}
	vd->ibv = ibv_open_device(found);
	if (!vd->ibv) {
		RDMX_ERR("verbs: ibv_open_device(%s) failed: %s", dev->name, strerror(errno));
		rc = RDMX_E_PROVIDER;
		goto free_list;
	}
	if (ibv_query_device_ex(vd->ibv, NULL, &vd->attr)) {
		RDMX_ERR("verbs: ibv_query_device_ex(%s) failed: %s", dev->name, strerror(errno));
		rc = RDMX_E_PROVIDER;
		goto close_dev;
	}
	vd->port = pick_port(vd->ibv, vd->attr.orig_attr.phys_port_cnt, &vd->port_attr);
	if (vd->port_attr.state != IBV_PORT_ACTIVE)
		RDMX_WARN("verbs: %s port %u is not active (state %d)", dev->name, vd->port,
		          (int)vd->port_attr.state);
	vd->pd = ibv_alloc_pd(vd->ibv);
	if (!vd->pd) {
		RDMX_ERR("verbs: ibv_alloc_pd(%s) failed: %s", dev->name, strerror(errno));
		rc = RDMX_E_PROVIDER;
		goto close_dev;
	}
	snprintf(vd->name, sizeof(vd->name), "%s", dev->name);
	ibv_free_device_list(list);
	dev->prov = vd;
	return 0;

close_dev:
	ibv_close_device(vd->ibv);
free_list:
	ibv_free_device_list(list);
free_vd:
	free(vd);
	return rc;
}

void rdmx__verbs_dev_close(struct rdmx_dev *dev)
{
	struct verbs_dev *vd = dev->prov;

	if (!vd)
		return;
	if (ibv_dealloc_pd(vd->pd))
		RDMX_ERR("verbs: ibv_dealloc_pd(%s) failed: %s", vd->name, strerror(errno));
	if (ibv_close_device(vd->ibv))
		RDMX_ERR("verbs: ibv_close_device(%s) failed: %s", vd->name, strerror(errno));
	free(vd);
	dev->prov = NULL;
}

int rdmx__verbs_dev_query_caps(const struct rdmx_dev *dev, struct rdmx_dev_caps *caps)
{
	const struct verbs_dev *vd = dev->prov;
	const struct ibv_device_attr *a = &vd->attr.orig_attr;
	uint32_t sge;

	memset(caps, 0, sizeof(*caps));
	caps->max_send_queue_size = (uint32_t)a->max_qp_wr;
	/* the SRQ and the recv CQ that takes its completions */
	caps->max_recv_queue_size = min_u32((uint32_t)a->max_srq_wr, (uint32_t)a->max_cqe);
	sge = min_u32((uint32_t)a->max_sge, (uint32_t)a->max_srq_sge);
	if (a->max_sge_rd > 0) /* reads scatter into the same chains */
		sge = min_u32(sge, (uint32_t)a->max_sge_rd);
	caps->max_buf_list_len = min_u32(sge, VERBS_MAX_SGE);
	caps->max_message_size = vd->port_attr.max_msg_sz;
	caps->gid_table_len = (uint32_t)vd->port_attr.gid_tbl_len;
	caps->transport_types = RDMX_TRANSPORT_RC;
	caps->max_connections = (uint32_t)a->max_qp;
	caps->max_inline = VERBS_MAX_INLINE;
	caps->atomics = a->atomic_cap != IBV_ATOMIC_NONE;
	/* rdma-core 44 (Debian 12) has no device capability bit that says
	 * whether IBV_WR_ATOMIC_WRITE / a flush work request is supported, and
	 * rxe in the 6.1 kernel implements neither: both are emulated (post.c)
	 * with the guarantee task.h promises. */
	caps->atomic_write_native = false;
	caps->flush_native = false;
	caps->odp = (vd->attr.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
	            (vd->attr.odp_caps.per_transport_caps.rc_odp_caps & IBV_ODP_SUPPORT_WRITE);
	return 0;
}

int rdmx__verbs_dev_get_gid(const struct rdmx_dev *dev, uint32_t index, uint8_t gid[16])
{
	const struct verbs_dev *vd = dev->prov;
	union ibv_gid g;

	if (index >= (uint32_t)vd->port_attr.gid_tbl_len)
		return RDMX_E_INVAL;
	if (ibv_query_gid(vd->ibv, vd->port, (int)index, &g)) {
		/* an unpopulated entry (RoCE keeps holes in its table) */
		RDMX_DBG("verbs: ibv_query_gid(%s, index %u) failed: %s", vd->name, index,
		         strerror(errno));
		memset(gid, 0, 16);
		return 0;
	}
	memcpy(gid, g.raw, 16);
	return 0;
}

static bool gid_is_zero(const uint8_t *g)
{
	for (int i = 0; i < 16; i++)
		if (g[i])
			return false;
	return true;
}

static bool gid_is_v4mapped(const uint8_t *g)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return memcmp(g, prefix, sizeof(prefix)) == 0;
}

static bool gid_is_linklocal(const uint8_t *g)
{
	return g[0] == 0xfe && (g[1] & 0xc0) == 0x80;
}

/* The GID as a socket address (port 0); false when it is no IP address. */
static bool gid_to_sockaddr(const uint8_t *g, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (gid_is_zero(g) || gid_is_linklocal(g))
		return false; /* link-local needs a scope id an rdma_cm bind lacks */
	if (gid_is_v4mapped(g)) {
		struct sockaddr_in *in4 = (struct sockaddr_in *)ss;

		in4->sin_family = AF_INET;
		memcpy(&in4->sin_addr, g + 12, 4);
		return true;
	}
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	in6->sin6_family = AF_INET6;
	memcpy(&in6->sin6_addr, g, 16);
	return true;
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
		              &((const struct sockaddr_in *)b)->sin_addr, 4) == 0;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
	              &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
}

unsigned rdmx__verbs_dev_local_addrs(const struct verbs_dev *vd, struct sockaddr_storage *ss,
                                     unsigned max)
{
	unsigned n = 0;

	if (vd->has_ip) {
		if (max)
			ss[n++] = vd->ip;
		return n;
	}
	for (int i = 0; i < vd->port_attr.gid_tbl_len && n < max; i++) {
		union ibv_gid g;
		struct sockaddr_storage cand;
		bool dup = false;

		if (ibv_query_gid(vd->ibv, vd->port, i, &g) || !gid_to_sockaddr(g.raw, &cand))
			continue;
		for (unsigned j = 0; j < n && !dup; j++)
			dup = same_addr(&ss[j], &cand);
		if (!dup)
			ss[n++] = cand;
	}
	return n;
}

/* RoCE: the GID entry of the address the device was opened by, else the
 * first IPv4-mapped RoCEv2 entry, else any routable entry; -1 if none. */
static int routable_gid(const struct verbs_dev *vd)
{
	int best = -1, best_score = 0;

	for (int i = 0; i < vd->port_attr.gid_tbl_len; i++) {
		struct ibv_gid_entry e;
		struct sockaddr_storage ss;
		int score;

		if (ibv_query_gid_ex(vd->ibv, vd->port, (uint32_t)i, &e, 0) ||
		    !gid_to_sockaddr(e.gid.raw, &ss))
			continue;
		score = 1;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2)
			score += 2;
		if (gid_is_v4mapped(e.gid.raw))
			score += 1;
		if (vd->has_ip && same_addr(&ss, &vd->ip))
			score += 8;
		if (score > best_score) {
			best = i;
			best_score = score;
		}
	}
	return best;
}

uint32_t rdmx__verbs_dev_gid_index(const struct verbs_dev *vd, uint32_t want)
{
	union ibv_gid g;
	int r;

	if (want != 0 || vd->port_attr.link_layer != IBV_LINK_LAYER_ETHERNET)
		return want;
	if (!vd->has_ip && ibv_query_gid(vd->ibv, vd->port, 0, &g) == 0 && !gid_is_zero(g.raw) &&
	    !gid_is_linklocal(g.raw))
		return 0;
	r = routable_gid(vd);
	return r < 0 ? 0 : (uint32_t)r;
}

int rdmx__verbs_dev_local_addr(const struct verbs_dev *vd, uint32_t gid_index, int family,
                               struct sockaddr_storage *ss)
{
	struct sockaddr_storage all[16];
	union ibv_gid g;
	unsigned n;

	if (vd->has_ip && (family == AF_UNSPEC || vd->ip.ss_family == family)) {
		*ss = vd->ip;
		return 0;
	}
	if (ibv_query_gid(vd->ibv, vd->port, (int)gid_index, &g) == 0 &&
	    gid_to_sockaddr(g.raw, ss) && (family == AF_UNSPEC || ss->ss_family == family))
		return 0;
	n = rdmx__verbs_dev_local_addrs(vd, all, 16);
	for (unsigned i = 0; i < n; i++) {
		if (family == AF_UNSPEC || all[i].ss_family == family) {
			*ss = all[i];
			return 0;
		}
	}
	return RDMX_E_NOT_FOUND;
}

/* Does a port's GID table hold `want` (16 bytes, IPv4 as v4-mapped)? */
static bool port_has_gid(struct ibv_context *ibv, uint8_t port, const uint8_t *want)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ibv, port, &pa))
		return false;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		union ibv_gid g;

		if (ibv_query_gid(ibv, port, i, &g) || gid_is_zero(g.raw))
			continue;
		if (memcmp(g.raw, want, 16) == 0)
			return true;
	}
	return false;
}

int rdmx__verbs_dev_find_by_addr(const char *ip, char name[RDMX_DEV_NAME_MAX])
{
	struct sockaddr_storage ss;
	struct ibv_device **list;
	uint8_t want[16] = {0};
	int n = 0, rc = RDMX_E_NO_DEVICE;

	if (!ip || parse_ip(ip, &ss))
		return RDMX_E_INVAL;
	if (ss.ss_family == AF_INET) {
		want[10] = 0xff;
		want[11] = 0xff;
		memcpy(want + 12, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	} else {
		memcpy(want, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	}
	list = ibv_get_device_list(&n);
	if (!list)
		return RDMX_E_NO_DEVICE;
	for (int i = 0; i < n && rc; i++) {
		struct ibv_context *ibv = ibv_open_device(list[i]);
		struct ibv_device_attr a;

		if (!ibv) {
			RDMX_WARN("verbs: ibv_open_device(%s) failed: %s",
			          ibv_get_device_name(list[i]), strerror(errno));
			continue;
		}
		if (ibv_query_device(ibv, &a) == 0) {
			for (uint8_t p = 1; p <= a.phys_port_cnt && rc; p++) {
				if (port_has_gid(ibv, p, want)) {
					snprintf(name, RDMX_DEV_NAME_MAX, "%s",
					         ibv_get_device_name(list[i]));
					rc = 0;
				}
			}
		}
		ibv_close_device(ibv);
	}
	ibv_free_device_list(list);
	return rc;
}
