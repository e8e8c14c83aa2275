/* Sync events: one 64-bit word in its own cache line, registered for remote
 * read, write and atomics, that peers change through tasks and the owner
 * reads with atomic loads. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdmx/sync_event.h>

#include "internal.h"

#define SYNC_EVENT_ALIGN 64u
#define SYNC_EVENT_ACCESS                                                                          \
	(RDMX_ACCESS_LOCAL_WRITE | RDMX_ACCESS_REMOTE_READ | RDMX_ACCESS_REMOTE_WRITE |            \
	 RDMX_ACCESS_REMOTE_ATOMIC)
/* spins between clock reads / yields in wait_ge */
#define SYNC_EVENT_SPINS 256u

struct rdmx_sync_event {
	uint64_t *word; /* SYNC_EVENT_ALIGN-aligned */
	struct rdmx_mr *mr;
};

int rdmx_sync_event_create(struct rdmx_dev *dev, uint64_t initial, struct rdmx_sync_event **ev)
{
	struct rdmx_sync_event *e;
	void *mem = NULL;
	int rc;

	if (!dev || !ev)
		return RDMX_E_INVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return RDMX_E_NOMEM;
	if (posix_memalign(&mem, SYNC_EVENT_ALIGN, SYNC_EVENT_ALIGN)) {
		rc = RDMX_E_NOMEM;
		goto free_event;
	}
	memset(mem, 0, SYNC_EVENT_ALIGN);
	e->word = mem;
	__atomic_store_n(e->word, initial, __ATOMIC_RELEASE);
	/* only the word itself is exposed, not the rest of its line */
	rc = rdmx_mr_reg(dev, e->word, sizeof(*e->word), SYNC_EVENT_ACCESS, &e->mr);
	if (rc)
		goto free_word;
	*ev = e;
	return 0;

free_word:
	free(mem);
free_event:
	free(e);
	return rc;
}

int rdmx_sync_event_destroy(struct rdmx_sync_event **ev)
{
	if (!ev || !*ev)
		return 0;
	rdmx_mr_dereg(&(*ev)->mr);
	free((*ev)->word);
	free(*ev);
	*ev = NULL;
	return 0;
}

int rdmx_sync_event_get_value(const struct rdmx_sync_event *ev, uint64_t *value)
{
	if (!ev || !value)
		return RDMX_E_INVAL;
	*value = __atomic_load_n(ev->word, __ATOMIC_ACQUIRE);
	return 0;
}

int rdmx_sync_event_set_value(struct rdmx_sync_event *ev, uint64_t value)
{
	if (!ev)
		return RDMX_E_INVAL;
	__atomic_store_n(ev->word, value, __ATOMIC_RELEASE);
	return 0;
}

int rdmx_sync_event_get_descriptor(const struct rdmx_sync_event *ev, void *desc)
{
	if (!ev || !desc)
		return RDMX_E_INVAL;
	return rdmx_mr_get_descriptor(ev->mr, desc);
}

int rdmx_sync_event_wait_ge(struct rdmx_sync_event *ev, uint64_t value, struct rdmx_pe *pe,
                            int timeout_ms)
{
	uint64_t deadline = 0;
	unsigned spins = 0;

	if (!ev || timeout_ms < -1)
		return RDMX_E_INVAL;
	if (timeout_ms >= 0)
		deadline = rdmx__now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		if (__atomic_load_n(ev->word, __ATOMIC_ACQUIRE) >= value)
			return 0;
		if (pe) {
			int n = rdmx_pe_progress(pe);

			if (n < 0)
				return n;
		} else {
			rdmx__cpu_relax();
		}
		if (++spins % SYNC_EVENT_SPINS == 0) {
			if (deadline && rdmx__now_ms() >= deadline)
				return __atomic_load_n(ev->word, __ATOMIC_ACQUIRE) >= value
				           ? 0
				           : RDMX_E_TIMEDOUT;
			/* the writer may be a thread of this machine (tcp soft NIC) */
			sched_yield();
		}
	}
}
