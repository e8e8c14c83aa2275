/* tcp provider: the seal pipe (tcp.h). Payload records of a sealed
 * connection's bulk write are sealed on the device's NIC thread while the
 * flushing application thread sends the records before them: the cipher pass
 * and the socket's copy overlap instead of adding up.
 *
 * States: IDLE -> FILLING (a flush claimed it) -> POSTED -> SEALING (the NIC
 * took it) -> DONE -> IDLE (joined; who joins when: tcp.h). The joiner
 * takes a POSTED pipe back (POSTED -> SEALING by compare-and-swap) and seals
 * it itself, so a NIC that is busy or asleep never delays a flush by more
 * than the cipher work; it waits only while the NIC seals, which takes no
 * lock. Records keep the numbers the flush gave them (their nonces), so the
 * byte stream is the one the inline path makes. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "tcp.h"

enum { PIPE_IDLE, PIPE_FILLING, PIPE_POSTED, PIPE_SEALING, PIPE_DONE };

static pthread_once_t enabled_once = PTHREAD_ONCE_INIT;
static bool enabled;

static void read_enabled(void)
{
	const char *v = getenv("RDMX_TCP_SEAL_PIPE");

	enabled = !v || strcmp(v, "0") != 0;
	if (!enabled)
		RDMX_INFO("tcp: seal pipe off (RDMX_TCP_SEAL_PIPE=0): records sealed inline");
}

bool rdmx__tcp_seal_pipe_enabled(void)
{
	pthread_once(&enabled_once, read_enabled);
	return enabled;
}

bool rdmx__tcp_seal_pipe_claim(struct tcp_seal_pipe *p, struct tcp_seal_dir *dir)
{
	int idle = PIPE_IDLE;

	if (!atomic_compare_exchange_strong_explicit(&p->state, &idle, PIPE_FILLING,
	                                             memory_order_acquire, memory_order_relaxed))
		return false;
	p->dir = dir;
	p->nrec = 0;
	return true;
}

struct tcp_seal_pipe_rec *rdmx__tcp_seal_pipe_next(struct tcp_seal_pipe *p)
{
	return p->nrec < TCP_PIPE_RECS ? &p->rec[p->nrec] : NULL;
}

void rdmx__tcp_seal_pipe_post(struct tcp_seal_pipe *p)
{
	atomic_store_explicit(&p->state, PIPE_POSTED, memory_order_release);
}

/* Seals the records of a pipe its caller holds in SEALING. */
static void seal_all(struct tcp_seal_pipe *p)
{
	for (unsigned i = 0; i < p->nrec; i++) {
		struct tcp_seal_pipe_rec *r = &p->rec[i];

		p->dir->seq = r->seq;
		r->rc = rdmx__tcp_seal_record(p->dir, r->iov, r->niov, r->take, r->out);
	}
}

void rdmx__tcp_seal_pipe_serve(struct tcp_seal_pipe *p)
{
	int posted = PIPE_POSTED;

	if (atomic_load_explicit(&p->state, memory_order_relaxed) != PIPE_POSTED ||
	    !atomic_compare_exchange_strong_explicit(&p->state, &posted, PIPE_SEALING,
	                                             memory_order_acquire, memory_order_relaxed))
		return;
	seal_all(p);
	atomic_fetch_add_explicit(&p->nic_records, p->nrec, memory_order_relaxed);
	atomic_store_explicit(&p->state, PIPE_DONE, memory_order_release);
}

int rdmx__tcp_seal_pipe_join(struct tcp_seal_pipe *p, bool may_wait)
{
	int st = PIPE_POSTED;

	if (may_wait && atomic_load_explicit(&p->wait_for_nic, memory_order_relaxed)) {
		/* tests: the records are the NIC's (it was kicked at the post) */
		while (atomic_load_explicit(&p->state, memory_order_acquire) == PIPE_POSTED)
			sched_yield();
	}
	if (atomic_compare_exchange_strong_explicit(&p->state, &st, PIPE_SEALING,
	                                            memory_order_acquire, memory_order_acquire) ||
	    st == PIPE_FILLING) {
		/* the NIC had not started (or nothing was posted): sealed here,
		 * no wake-up on the critical path */
		seal_all(p);
	} else if (st == PIPE_SEALING) {
		/* bounded: TCP_PIPE_RECS records of cipher work on the NIC */
		while (atomic_load_explicit(&p->state, memory_order_acquire) != PIPE_DONE)
			sched_yield();
	}
	/* sealed here, or DONE */
	for (unsigned i = 0; i < p->nrec; i++) {
		if (p->rec[i].rc < 0) {
			int rc = p->rec[i].rc;

			atomic_store_explicit(&p->state, PIPE_IDLE, memory_order_release);
			return rc;
		}
	}
	atomic_store_explicit(&p->state, PIPE_IDLE, memory_order_release);
	return 0;
}

int rdmx__tcp_seal_pipe_settle(struct tcp_seal *s, bool may_wait)
{
	struct tcp_seal_pipe *p = s->posted;
	int rc;

	if (!p)
		return 0;
	s->posted = NULL;
	rc = rdmx__tcp_seal_pipe_join(p, may_wait);
	for (unsigned i = 0; i < p->nrec; i++) {
		unsigned slot = (unsigned)((p->rec[i].out - s->txbuf) / TCP_SEAL_REC);

		if (p->rec[i].rc < 0) {
			/* this record's place in the ring: it and the later ones go */
			s->slot_count =
			    (uint8_t)((slot + TCP_SEAL_SLOTS - s->slot_head) % TCP_SEAL_SLOTS);
			break;
		}
		s->slot_len[slot] = (uint32_t)p->rec[i].rc;
	}
	return rc;
}
