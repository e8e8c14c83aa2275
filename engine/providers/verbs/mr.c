/* verbs memory regions: ibv_reg_mr on the device's PD with the access asked
 * for, nothing more (least privilege), except where verbs itself demands it.
 * A region with remote flags on a device with type-2 memory windows is also
 * registered with IBV_ACCESS_MW_BIND, so that it can be granted to one
 * connection (post.c); a grant-only region keeps its remote flags out of
 * the MR (its own rkey reaches nothing) and gives them through windows. */
#include <errno.h>
#include <string.h>

#include "verbs.h"

/* RDMX_ACCESS_* -> IBV_ACCESS_*. Verbs refuses REMOTE_WRITE or
 * REMOTE_ATOMIC without LOCAL_WRITE (ibv_reg_mr fails with EINVAL), so those
 * two bring LOCAL_WRITE along: the NIC writes the region for the peer.
 * Local writes into the region by this side's own tasks are still refused
 * by the engine, which checks the RDMX flags. */
static int ibv_access(unsigned access)
{
	int f = 0;

	if (access & RDMX_ACCESS_LOCAL_WRITE)
		f |= IBV_ACCESS_LOCAL_WRITE;
	if (access & RDMX_ACCESS_REMOTE_READ)
		f |= IBV_ACCESS_REMOTE_READ;
	if (access & RDMX_ACCESS_REMOTE_WRITE)
		f |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	if (access & RDMX_ACCESS_REMOTE_ATOMIC)
		f |= IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE;
	return f;
}

int rdmx__verbs_mr_reg(struct rdmx_mr *mr)
{
	struct verbs_dev *vd = mr->dev->prov;
	struct ibv_mr *m;
	int flags = ibv_access(mr->access);
	bool remote = (mr->access & ~(unsigned)RDMX_ACCESS_LOCAL_WRITE) != 0;

	if (mr->grant_only) {
		if (!rdmx__verbs_dev_has_mw(vd)) {
			RDMX_DBG("verbs: %s has no type-2 memory windows: no grant-only region",
			         vd->name);
			return RDMX_E_NOT_SUPPORTED;
		}
		/* a window granting write or atomics needs LOCAL_WRITE on the MR */
		flags &=
		    ~(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	}
	if (remote && rdmx__verbs_dev_has_mw(vd))
		flags |= IBV_ACCESS_MW_BIND;

	m = ibv_reg_mr(vd->pd, mr->addr, mr->len, flags);
	if (!m) {
		int e = errno;

		RDMX_ERR("verbs: ibv_reg_mr(%s, %zu bytes, access 0x%x) failed: %s", vd->name,
		         mr->len, (unsigned)flags, strerror(e));
		return e == ENOMEM ? RDMX_E_NOMEM : RDMX_E_PROVIDER;
	}
	mr->lkey = m->lkey;
	mr->rkey = m->rkey;
	mr->prov = m;
	return 0;
}

void rdmx__verbs_mr_dereg(struct rdmx_mr *mr)
{
	struct ibv_mr *m = mr->prov;

	if (!m)
		return;
	if (ibv_dereg_mr(m))
		RDMX_ERR("verbs: ibv_dereg_mr(%zu bytes) failed: %s", mr->len, strerror(errno));
	mr->prov = NULL;
}
