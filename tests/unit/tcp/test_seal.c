/* tcp provider: sealed records (engine/providers/tcp/seal.c). No network:
 * records made by one direction opened by its mirror; every tampering, a
 * replay, a skipped record and counter exhaustion refused; the seal pipe
 * makes the bytes the inline path makes. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "providers/tcp/tcp.h"

TestSuite(tcp_seal);

static const uint8_t key_a[TCP_SEAL_KEY] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
static const uint8_t key_b[TCP_SEAL_KEY] = {11, 12, 13, 14, 15, 16};
static const uint8_t iv_a[TCP_SEAL_IV] = {21, 22, 23};
static const uint8_t iv_b[TCP_SEAL_IV] = {31, 32, 33};

static uint8_t rec[TCP_SEAL_REC], plain[TCP_SEAL_MAX];

static void pair(struct tcp_seal_dir *tx, struct tcp_seal_dir *rx)
{
	cr_assert_eq(rdmx__tcp_seal_dir_init(tx, key_a, iv_a, true), 0);
	cr_assert_eq(rdmx__tcp_seal_dir_init(rx, key_a, iv_a, false), 0);
}

static int seal(struct tcp_seal_dir *tx, size_t len)
{
	struct iovec iov[3];
	size_t a = len / 3, b = len / 3;

	for (size_t i = 0; i < len; i++)
		plain[i] = (uint8_t)(i * 7 + tx->seq);
	/* three pieces: the cipher reads straight from a scatter list */
	iov[0] = (struct iovec){plain, a};
	iov[1] = (struct iovec){plain + a, b};
	iov[2] = (struct iovec){plain + a + b, len - a - b};
	return rdmx__tcp_seal_record(tx, iov, 3, len, rec);
}

Test(tcp_seal, round_trip_in_place_up_to_the_record_limit)
{
	struct tcp_seal_dir tx, rx;
	size_t sizes[] = {1, 48, 1000, TCP_SEAL_MAX};

	pair(&tx, &rx);
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int n = seal(&tx, sizes[i]);

		cr_assert_eq(n, (int)(TCP_SEAL_HDR + sizes[i] + TCP_SEAL_TAG));
		cr_assert_eq(rdmx__ld32(rec), sizes[i]);
		cr_assert(sizes[i] < 16 || memcmp(rec + TCP_SEAL_HDR, plain, 16) != 0,
		          "ciphertext equals the plaintext");
		cr_assert_eq(rdmx__tcp_seal_open(&rx, rec, (size_t)n), 0);
		cr_assert(memcmp(rec + TCP_SEAL_HDR, plain, sizes[i]) == 0);
	}
	cr_assert_eq(tx.seq, 4);
	cr_assert_eq(rx.seq, 4);
	rdmx__tcp_seal_dir_fini(&tx);
	rdmx__tcp_seal_dir_fini(&rx);
}

/* The record format and nonce rule, fixed: records 0 and 1 of key_a / iv_a
 * over one plaintext, computed outside rdmx (Python's cryptography AESGCM:
 * nonce = IV with the big-endian record number XORed into its last 8 bytes,
 * associated data = the 4-byte length). A change of cipher calls in seal.c
 * must keep these bytes. */
static const uint8_t kat_plain[] = "rdmx sealed record";
static const uint8_t kat_rec[2][TCP_SEAL_HDR + 18 + TCP_SEAL_TAG] = {
    {0x12, 0x00, 0x00, 0x00, 0xb9, 0x02, 0x9c, 0xe6, 0xce, 0xa3, 0xb7, 0x5b, 0xfd,
     0x16, 0xb3, 0xed, 0xd6, 0x80, 0xa4, 0xc6, 0x63, 0x3c, 0xd2, 0x8a, 0x5d, 0x26,
     0xe2, 0xdd, 0x7f, 0x26, 0x2e, 0x6e, 0x57, 0xb4, 0x5d, 0x75, 0x18, 0x20},
    {0x12, 0x00, 0x00, 0x00, 0xaf, 0x7c, 0x00, 0x0b, 0x1d, 0x64, 0x55, 0xbc, 0x3c,
     0x04, 0xbb, 0x0c, 0xeb, 0x1e, 0xc5, 0xe1, 0x99, 0xae, 0xd6, 0x41, 0x3e, 0x73,
     0xc8, 0xde, 0x24, 0xf0, 0x19, 0x65, 0x31, 0xd9, 0x3d, 0xa3, 0xce, 0x7c},
};

Test(tcp_seal, records_match_known_answers)
{
	struct tcp_seal_dir tx, rx;

	pair(&tx, &rx);
	for (unsigned r = 0; r < 2; r++) {
		struct iovec iov = {(void *)kat_plain, 18};
		uint8_t mine[sizeof(kat_rec[0])];

		cr_assert_eq(rdmx__tcp_seal_record(&tx, &iov, 1, 18, rec), (int)sizeof(kat_rec[r]));
		cr_assert(memcmp(rec, kat_rec[r], sizeof(kat_rec[r])) == 0,
		          "record %u differs from the known answer", r);
		memcpy(mine, kat_rec[r], sizeof(mine));
		cr_assert_eq(rdmx__tcp_seal_open(&rx, mine, sizeof(mine)), 0);
		cr_assert(memcmp(mine + TCP_SEAL_HDR, kat_plain, 18) == 0);
	}
	rdmx__tcp_seal_dir_fini(&tx);
	rdmx__tcp_seal_dir_fini(&rx);
}

Test(tcp_seal, refuses_bad_lengths)
{
	struct tcp_seal_dir tx, rx;
	struct iovec iov = {plain, TCP_SEAL_MAX + 1};

	pair(&tx, &rx);
	cr_assert_eq(rdmx__tcp_seal_record(&tx, &iov, 1, 0, rec), RDMX_E_INVAL);
	cr_assert_eq(rdmx__tcp_seal_record(&tx, &iov, 1, TCP_SEAL_MAX + 1, rec), RDMX_E_INVAL);
	rdmx__st32(rec, TCP_SEAL_MAX + 1);
	cr_assert_eq(rdmx__tcp_seal_open(&rx, rec, sizeof(rec)), RDMX_E_PROTOCOL);
	rdmx__st32(rec, 0);
	cr_assert_eq(rdmx__tcp_seal_open(&rx, rec, TCP_SEAL_HDR + TCP_SEAL_TAG), RDMX_E_PROTOCOL);
	cr_assert_eq(rdmx__tcp_seal_open(&rx, rec, 3), RDMX_E_PROTOCOL);
	cr_assert_eq(rx.seq, 0, "a refused record moved the counter");
	rdmx__tcp_seal_dir_fini(&tx);
	rdmx__tcp_seal_dir_fini(&rx);
}

Test(tcp_seal, every_flipped_bit_is_refused)
{
	struct tcp_seal_dir tx, rx;
	static uint8_t copy[TCP_SEAL_REC];
	int n;

	pair(&tx, &rx);
	n = seal(&tx, 64);
	for (int byte = 0; byte < n; byte++) {
		for (int bit = 0; bit < 8; bit++) {
			memcpy(copy, rec, (size_t)n);
			copy[byte] ^= (uint8_t)(1u << bit);
			cr_assert_neq(rdmx__tcp_seal_open(&rx, copy, (size_t)n), 0,
			              "byte %d bit %d flipped and accepted", byte, bit);
		}
	}
	cr_assert_eq(rx.seq, 0);
	cr_assert_eq(rdmx__tcp_seal_open(&rx, rec, (size_t)n), 0, "the genuine one");
	rdmx__tcp_seal_dir_fini(&tx);
	rdmx__tcp_seal_dir_fini(&rx);
}

Test(tcp_seal, replay_skip_wrong_key_and_direction_refused)
{
	struct tcp_seal_dir tx, rx, other, back;
	static uint8_t first[TCP_SEAL_REC], second[TCP_SEAL_REC];
	int n1, n2;

	pair(&tx, &rx);
	n1 = seal(&tx, 100);
	memcpy(first, rec, (size_t)n1);
	n2 = seal(&tx, 100);
	memcpy(second, rec, (size_t)n2);
	/* skipped (dropped) record: the second does not open as the first */
	memcpy(rec, second, (size_t)n2);
	cr_assert_eq(rdmx__tcp_seal_open(&rx, rec, (size_t)n2), RDMX_E_AUTH);
	memcpy(rec, first, (size_t)n1);
	cr_assert_eq(rdmx__tcp_seal_open(&rx, rec, (size_t)n1), 0);
	/* replayed */
	memcpy(rec, first, (size_t)n1);
	cr_assert_eq(rdmx__tcp_seal_open(&rx, rec, (size_t)n1), RDMX_E_AUTH);
	memcpy(rec, second, (size_t)n2);
	cr_assert_eq(rdmx__tcp_seal_open(&rx, rec, (size_t)n2), 0);
	/* the other direction's key, or the same key with another IV */
	cr_assert_eq(rdmx__tcp_seal_dir_init(&other, key_b, iv_a, false), 0);
	cr_assert_eq(rdmx__tcp_seal_dir_init(&back, key_a, iv_b, false), 0);
	memcpy(rec, first, (size_t)n1);
	cr_assert_eq(rdmx__tcp_seal_open(&other, rec, (size_t)n1), RDMX_E_AUTH);
	memcpy(rec, first, (size_t)n1);
	cr_assert_eq(rdmx__tcp_seal_open(&back, rec, (size_t)n1), RDMX_E_AUTH);
	rdmx__tcp_seal_dir_fini(&tx);
	rdmx__tcp_seal_dir_fini(&rx);
	rdmx__tcp_seal_dir_fini(&other);
	rdmx__tcp_seal_dir_fini(&back);
}

/* The nonce never repeats: both directions stop before the counter wraps. */
Test(tcp_seal, counter_exhaustion_stops_both_directions)
{
	struct tcp_seal_dir tx, rx;
	int n;

	pair(&tx, &rx);
	tx.seq = rx.seq = UINT64_MAX - 1;
	n = seal(&tx, 10);
	cr_assert_gt(n, 0);
	cr_assert_eq(rdmx__tcp_seal_open(&rx, rec, (size_t)n), 0);
	cr_assert_eq(tx.seq, UINT64_MAX);
	cr_assert_eq(seal(&tx, 10), RDMX_E_FULL);
	cr_assert_eq(rdmx__tcp_seal_open(&rx, rec, (size_t)n), RDMX_E_FULL);
	rdmx__tcp_seal_dir_fini(&tx);
	rdmx__tcp_seal_dir_fini(&rx);
}

/* ---- the seal pipe (seal_pipe.c): records sealed by another thread ---- */

static uint8_t pipe_plain[TCP_PIPE_RECS][3000];
static uint8_t pipe_out[TCP_PIPE_RECS][TCP_SEAL_REC];

/* Fills the claimed pipe with TCP_PIPE_RECS records numbered from seq. */
static void pipe_fill(struct tcp_seal_pipe *p, uint64_t seq)
{
	for (unsigned i = 0; i < TCP_PIPE_RECS; i++) {
		struct tcp_seal_pipe_rec *r = rdmx__tcp_seal_pipe_next(p);

		cr_assert_not_null(r);
		for (size_t b = 0; b < sizeof(pipe_plain[i]); b++)
			pipe_plain[i][b] = (uint8_t)(b * 13 + seq + i);
		r->seq = seq + i;
		r->out = pipe_out[i];
		r->take = sizeof(pipe_plain[i]);
		/* two pieces: the scatter list travels with the record */
		r->niov = 2;
		r->iov[0] = (struct iovec){pipe_plain[i], 1000};
		r->iov[1] = (struct iovec){pipe_plain[i] + 1000, sizeof(pipe_plain[i]) - 1000};
		p->nrec++;
	}
	cr_assert_null(rdmx__tcp_seal_pipe_next(p));
}

/* The pipe's records are the bytes the inline path makes for the same
 * record numbers, and open in order on the receiver. */
static void pipe_expect_inline(struct tcp_seal_dir *tx, struct tcp_seal_dir *rx)
{
	for (unsigned i = 0; i < TCP_PIPE_RECS; i++) {
		struct iovec iov = {pipe_plain[i], sizeof(pipe_plain[i])};
		int n = rdmx__tcp_seal_record(tx, &iov, 1, sizeof(pipe_plain[i]), rec);

		cr_assert_eq(n, (int)(TCP_SEAL_HDR + sizeof(pipe_plain[i]) + TCP_SEAL_TAG));
		cr_assert(memcmp(rec, pipe_out[i], (size_t)n) == 0, "record %u differs", i);
		cr_assert_eq(rdmx__tcp_seal_open(rx, pipe_out[i], (size_t)n), 0);
		cr_assert(
		    memcmp(pipe_out[i] + TCP_SEAL_HDR, pipe_plain[i], sizeof(pipe_plain[i])) == 0);
	}
}

Test(tcp_seal, pipe_records_equal_inline_ones_sealed_or_taken_back)
{
	struct tcp_seal_pipe p;
	struct tcp_seal_dir tx, rx, pd;

	memset(&p, 0, sizeof(p));
	pair(&tx, &rx);
	cr_assert_eq(rdmx__tcp_seal_dir_init(&pd, key_a, iv_a, true), 0);
	/* sealed by the "NIC" (serve, here on this thread) */
	cr_assert(rdmx__tcp_seal_pipe_claim(&p, &pd));
	cr_assert(!rdmx__tcp_seal_pipe_claim(&p, &pd), "claimed twice");
	pipe_fill(&p, 0);
	rdmx__tcp_seal_pipe_serve(&p); /* not posted yet: nothing */
	cr_assert_eq(atomic_load(&p.nic_records), 0);
	rdmx__tcp_seal_pipe_post(&p);
	rdmx__tcp_seal_pipe_serve(&p);
	cr_assert_eq(atomic_load(&p.nic_records), TCP_PIPE_RECS);
	cr_assert_eq(rdmx__tcp_seal_pipe_join(&p, true), 0);
	pipe_expect_inline(&tx, &rx);
	/* taken back by the joiner: the NIC never woke */
	cr_assert(rdmx__tcp_seal_pipe_claim(&p, &pd));
	pipe_fill(&p, TCP_PIPE_RECS);
	rdmx__tcp_seal_pipe_post(&p);
	cr_assert_eq(rdmx__tcp_seal_pipe_join(&p, true), 0);
	rdmx__tcp_seal_pipe_serve(&p); /* joined: nothing left to seal */
	cr_assert_eq(atomic_load(&p.nic_records), TCP_PIPE_RECS);
	pipe_expect_inline(&tx, &rx);
	/* a join of a pipe filled but never posted seals it too */
	cr_assert(rdmx__tcp_seal_pipe_claim(&p, &pd));
	pipe_fill(&p, 2 * TCP_PIPE_RECS);
	cr_assert_eq(rdmx__tcp_seal_pipe_join(&p, true), 0);
	pipe_expect_inline(&tx, &rx);
	cr_assert_eq(tx.seq, 3 * TCP_PIPE_RECS);
	cr_assert_eq(rx.seq, 3 * TCP_PIPE_RECS);
	rdmx__tcp_seal_dir_fini(&tx);
	rdmx__tcp_seal_dir_fini(&rx);
	rdmx__tcp_seal_dir_fini(&pd);
}

Test(tcp_seal, pipe_join_reports_a_failed_record_and_frees_the_pipe)
{
	struct tcp_seal_pipe p;
	struct tcp_seal_dir pd;

	memset(&p, 0, sizeof(p));
	cr_assert_eq(rdmx__tcp_seal_dir_init(&pd, key_a, iv_a, true), 0);
	cr_assert(rdmx__tcp_seal_pipe_claim(&p, &pd));
	pipe_fill(&p, 0);
	p.rec[1].take = TCP_SEAL_MAX + 1;
	rdmx__tcp_seal_pipe_post(&p);
	rdmx__tcp_seal_pipe_serve(&p);
	cr_assert_eq(rdmx__tcp_seal_pipe_join(&p, true), RDMX_E_INVAL);
	cr_assert(rdmx__tcp_seal_pipe_claim(&p, &pd), "the pipe stayed taken after an error");
	pipe_fill(&p, UINT64_MAX - 1); /* the second record would reuse the last nonce */
	cr_assert_eq(rdmx__tcp_seal_pipe_join(&p, true), RDMX_E_FULL);
	rdmx__tcp_seal_dir_fini(&pd);
}

/* The joiner waits for records the NIC thread took (wait_for_nic: it never
 * takes them back), whatever the scheduling: no sleep, the "NIC" thread
 * serves until it sealed once. */
static void *pipe_nic(void *arg)
{
	struct tcp_seal_pipe *p = arg;

	while (atomic_load(&p->nic_records) == 0)
		rdmx__tcp_seal_pipe_serve(p);
	return NULL;
}

Test(tcp_seal, pipe_joiner_waits_for_the_nic_thread)
{
	struct tcp_seal_pipe p;
	struct tcp_seal_dir tx, rx, pd;
	pthread_t nic;

	memset(&p, 0, sizeof(p));
	pair(&tx, &rx);
	cr_assert_eq(rdmx__tcp_seal_dir_init(&pd, key_a, iv_a, true), 0);
	atomic_store(&p.wait_for_nic, true);
	cr_assert_eq(pthread_create(&nic, NULL, pipe_nic, &p), 0);
	cr_assert(rdmx__tcp_seal_pipe_claim(&p, &pd));
	pipe_fill(&p, 0);
	rdmx__tcp_seal_pipe_post(&p);
	cr_assert_eq(rdmx__tcp_seal_pipe_join(&p, true), 0);
	cr_assert_eq(pthread_join(nic, NULL), 0);
	cr_assert_eq(atomic_load(&p.nic_records), TCP_PIPE_RECS);
	pipe_expect_inline(&tx, &rx);
	rdmx__tcp_seal_dir_fini(&tx);
	rdmx__tcp_seal_dir_fini(&rx);
	rdmx__tcp_seal_dir_fini(&pd);
}
