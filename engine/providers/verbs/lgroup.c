/* verbs provider: one cm listener shared by several contexts
 * (rdmx_ctx_listen_join), as a multi-worker server's workers share a port.
 *
 * rdma_cm has one listening id per address and port, and its connection
 * requests arrive on the event channel of the context that listens. That
 * context deals each request in turn to the members of its group (itself
 * first). A request for another member moves to the member's event channel
 * (rdma_migrate_id, once the event is acked: the id's later events, such as
 * ESTABLISHED, go there) and waits in the member's dealt list; the member's
 * eventfd wakes it if it sleeps, and its next ctx_poll takes the request as
 * if it had come on its own channel (the QP is made on the member's CQs).
 *
 * One lock guards every group, and each member's lgroup pointer and dealt
 * list: it is taken once per connection request and at join and leave,
 * never on the data path (ctx_poll reads only dealt_due). A member leaves
 * at ctx_stop; requests dealt to it and not yet taken are rejected. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "verbs.h"

static pthread_mutex_t groups_lock = PTHREAD_MUTEX_INITIALIZER;

int rdmx__verbs_listen_join(struct rdmx_ctx *ctx, struct rdmx_ctx *listener)
{
	struct verbs_ctx *vc = verbs_ctx_of(ctx), *lc = verbs_ctx_of(listener);
	struct verbs_lgroup *g;
	int rc;

	if (!vc || !lc)
		return RDMX_E_BAD_STATE;
	rc = rdmx__verbs_ctx_cm_channel(vc); /* where its requests will move to */
	if (rc)
		return rc;
	pthread_mutex_lock(&groups_lock);
	if (vc->lgroup) {
		rc = RDMX_E_BAD_STATE;
		goto unlock;
	}
	if (!lc->lgroup) {
		g = calloc(1, sizeof(*g));
		if (!g) {
			rc = RDMX_E_NOMEM;
			goto unlock;
		}
		g->m[g->n++] = lc;
		lc->lgroup = g;
	}
	g = lc->lgroup;
	if (g->n == RDMX_CTX_MAX_LISTEN_GROUP) {
		rc = RDMX_E_FULL;
		goto unlock;
	}
	g->m[g->n++] = vc;
	vc->lgroup = g;
unlock:
	pthread_mutex_unlock(&groups_lock);
	return rc;
}

/* Under groups_lock: the request's id goes to `to`'s channel and list. */
static bool hand_over(struct verbs_ctx *to, const struct verbs_cm_ev *e)
{
	struct verbs_dealt *d = malloc(sizeof(*d));

	if (!d) {
		RDMX_WARN("verbs: no memory to deal a connection request: served by the listener");
		return false;
	}
	if (rdma_migrate_id(e->id, to->cm)) {
		RDMX_ERR("verbs: rdma_migrate_id failed: %s (the listener serves the request)",
		         strerror(errno));
		free(d);
		return false;
	}
	d->e = *e;
	d->next = NULL;
	*to->dealt_tail = d;
	to->dealt_tail = &d->next;
	atomic_store_explicit(&to->dealt_due, true, memory_order_release);
	rdmx__verbs_ctx_kick(to);
	return true;
}

bool rdmx__verbs_lgroup_deal(struct verbs_ctx *lc, const struct verbs_cm_ev *e)
{
	struct verbs_lgroup *g;
	struct verbs_ctx *to;
	bool dealt = false;

	pthread_mutex_lock(&groups_lock);
	g = lc->lgroup;
	if (g && g->n) {
		to = g->m[g->next % g->n];
		g->next = (g->next + 1) % g->n;
		if (to != lc)
			dealt = hand_over(to, e);
	}
	pthread_mutex_unlock(&groups_lock);
	return dealt;
}

/* Takes vc's dealt list (under groups_lock). */
static struct verbs_dealt *take_list(struct verbs_ctx *vc)
{
	struct verbs_dealt *d;

	pthread_mutex_lock(&groups_lock);
	d = vc->dealt;
	vc->dealt = NULL;
	vc->dealt_tail = &vc->dealt;
	atomic_store_explicit(&vc->dealt_due, false, memory_order_relaxed);
	pthread_mutex_unlock(&groups_lock);
	return d;
}

int rdmx__verbs_lgroup_take(struct verbs_ctx *vc)
{
	struct verbs_dealt *d = take_list(vc);
	int n = 0;

	while (d) {
		struct verbs_dealt *next = d->next;

		n += rdmx__verbs_cm_request(vc, &d->e);
		free(d);
		d = next;
	}
	return n;
}

void rdmx__verbs_lgroup_leave(struct verbs_ctx *vc)
{
	struct verbs_lgroup *g;
	struct verbs_dealt *d;

	pthread_mutex_lock(&groups_lock);
	g = vc->lgroup;
	if (g) {
		rdmx__lgroup_remove(g->m, sizeof(g->m[0]), &g->n, &g->next, &vc);
		if (!g->n)
			free(g);
		vc->lgroup = NULL;
	}
	pthread_mutex_unlock(&groups_lock);
	/* out of the group: nothing is dealt to vc any more */
	d = take_list(vc);
	while (d) {
		struct verbs_dealt *next = d->next;

		RDMX_DBG("verbs: a connection request dealt to a stopping context: rejected");
		rdmx__verbs_cm_refuse(d->e.id);
		free(d);
		d = next;
	}
}
