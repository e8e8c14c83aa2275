/* tcp provider: sealed records (engine/providers/tcp/seal.c). No network:
 * records made by one direction opened by its mirror; every tampering, a
 * replay, a skipped record and counter exhaustion refused. */
#include <criterion/criterion.h>
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
