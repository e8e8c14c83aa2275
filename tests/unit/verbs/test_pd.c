/* cm.c: the private data framing (exact lengths through rdma_cm, which
 * pads REQ private data to 56 bytes and REP private data to 196). */
#include "mock.h"

#include <string.h>

/* What the peer sees: the encoded bytes zero-padded to the cm's size. */
static size_t through_cm(const uint8_t *pd, size_t len, size_t room, uint8_t *out)
{
	uint8_t wire[256] = {0};
	size_t n = rdmx__verbs_pd_encode(pd, len, room, wire);

	cr_assert_leq(n, room, "%zu bytes encoded into a %zu-byte field", n, room);
	return rdmx__verbs_pd_decode(wire, room, out);
}

Test(pd, every_length_round_trips_in_a_rep)
{
	uint8_t pd[RDMX_PRIVATE_DATA_MAX], out[RDMX_PRIVATE_DATA_MAX];

	for (size_t len = 0; len <= RDMX_PRIVATE_DATA_MAX; len++) {
		for (size_t i = 0; i < len; i++)
			pd[i] = (uint8_t)(i * 7 + len);
		memset(out, 0xee, sizeof(out));
		cr_assert_eq(through_cm(pd, len, 196, out), len, "length %zu", len);
		cr_assert_arr_eq(out, pd, len);
	}
}

Test(pd, every_length_round_trips_in_a_req)
{
	uint8_t pd[RDMX_PRIVATE_DATA_MAX], out[RDMX_PRIVATE_DATA_MAX];

	for (size_t len = 0; len <= RDMX_PRIVATE_DATA_MAX; len++) {
		for (size_t i = 0; i < len; i++)
			pd[i] = (uint8_t)(0x80 | (i + len)); /* non-zero, first byte > 55 */
		cr_assert_eq(through_cm(pd, len, 56, out), len, "length %zu", len);
		cr_assert_arr_eq(out, pd, len);
	}
	/* trailing zeros of the user's own data survive */
	uint8_t z[10] = {1, 2, 0, 0, 0, 0, 0, 0, 0, 0};
	cr_assert_eq(through_cm(z, sizeof(z), 56, out), sizeof(z));
	cr_assert_arr_eq(out, z, sizeof(z));
	/* the documented ambiguity: 56 raw bytes shaped like a framed message */
	uint8_t amb[56] = {3, 'a', 'b', 'c'};
	cr_assert_eq(through_cm(amb, sizeof(amb), 56, out), 3u);
}

Test(pd, empty_and_null)
{
	uint8_t out[RDMX_PRIVATE_DATA_MAX];

	cr_assert_eq(rdmx__verbs_pd_decode(NULL, 0, out), 0u);
	cr_assert_eq(through_cm(NULL, 0, 56, out), 0u);
}
