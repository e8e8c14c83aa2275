/* The secure wire formats through the code rdmx-gen generates from
 * secure/proto/: the bytes against msgpack-c (the oracle: a map keyed by
 * field number), round trips, and hostile input (truncated at every length,
 * garbage, lying counts, out-of-range values), each refused with
 * RDMX_E_PROTOCOL and a reason. */
#include <string.h>

#include <criterion/criterion.h>
#include <msgpack.h>

#include <rdmx/channel.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/status.h>

#include "rpc_secure_internal.h"

static struct rdmx__rpc_hello sample(void)
{
	struct rdmx__rpc_hello h;

	memset(&h, 0, sizeof(h));
	h.versions[0] = RDMX_RPC_SECURE_VERSION;
	h.versions[1] = 7;
	h.n_versions = 2;
	h.slot_count = 256;
	h.slot_size = 8192;
	h.max_msg = 1u << 20;
	return h;
}

/* msgpack-c writes the same message as {1: [versions], 2: slots, 3: slot
 * size, 4: max message}: the bytes must be identical. */
Test(rpc_hello, bytes_match_msgpack_c)
{
	struct rdmx__rpc_hello h = sample();
	uint8_t buf[RDMX__RPC_HELLO_MAX_LEN];
	msgpack_sbuffer sb;
	msgpack_packer pk;
	size_t len = 0;

	cr_assert_eq(rdmx__rpc_hello_encode(&h, buf, sizeof(buf), &len), RDMX_OK);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 4);
	msgpack_pack_uint64(&pk, 1);
	msgpack_pack_array(&pk, 2);
	msgpack_pack_uint64(&pk, RDMX_RPC_SECURE_VERSION);
	msgpack_pack_uint64(&pk, 7);
	msgpack_pack_uint64(&pk, 2);
	msgpack_pack_uint64(&pk, 256);
	msgpack_pack_uint64(&pk, 3);
	msgpack_pack_uint64(&pk, 8192);
	msgpack_pack_uint64(&pk, 4);
	msgpack_pack_uint64(&pk, 1u << 20);
	cr_assert_eq(len, sb.size, "codec wrote %zu bytes, msgpack-c %zu", len, sb.size);
	cr_assert_eq(memcmp(buf, sb.data, len), 0);
	msgpack_sbuffer_destroy(&sb);
}

Test(rpc_hello, round_trip)
{
	struct rdmx__rpc_hello h = sample(), out;
	uint8_t buf[RDMX__RPC_HELLO_MAX_LEN];
	char why[160] = "";
	size_t len = 0;

	cr_assert_eq(rdmx__rpc_hello_encode(&h, buf, sizeof(buf), &len), RDMX_OK);
	cr_assert_eq(rdmx__rpc_hello_decode(buf, len, &out, why, sizeof(why)), RDMX_OK, "%s", why);
	cr_assert_eq(out.n_versions, 2);
	cr_assert_eq(out.versions[0], RDMX_RPC_SECURE_VERSION);
	cr_assert_eq(out.versions[1], 7);
	cr_assert_eq(out.slot_count, 256);
	cr_assert_eq(out.slot_size, 8192);
	cr_assert_eq(out.max_msg, 1u << 20);
	cr_assert(rdmx__rpc_hello_has_version(&out, RDMX_RPC_SECURE_VERSION));
	cr_assert_not(rdmx__rpc_hello_has_version(&out, 3));
}

Test(rpc_hello, encode_refuses_bad_fields_and_small_buffers)
{
	struct rdmx__rpc_hello h = sample();
	uint8_t buf[RDMX__RPC_HELLO_MAX_LEN];
	size_t len = 0;

	cr_assert_eq(rdmx__rpc_hello_encode(&h, buf, 4, &len), RDMX_E_TOO_BIG);
	h.slot_size = 100;
	cr_assert_eq(rdmx__rpc_hello_encode(&h, buf, sizeof(buf), &len), RDMX_E_INVAL);
	h = sample();
	h.n_versions = 0;
	cr_assert_eq(rdmx__rpc_hello_encode(&h, buf, sizeof(buf), &len), RDMX_E_INVAL);
}

static void expect_refused(const void *buf, size_t len, const char *reason)
{
	struct rdmx__rpc_hello out;
	char why[160] = "";

	memset(&out, 0xa5, sizeof(out));
	cr_assert_eq(rdmx__rpc_hello_decode(buf, len, &out, why, sizeof(why)), RDMX_E_PROTOCOL,
	             "%zu bytes accepted", len);
	cr_assert(why[0], "no reason given");
	if (reason)
		cr_assert(strstr(why, reason), "reason '%s' lacks '%s'", why, reason);
}

/* Every prefix of a valid hello is refused, never read past its end. */
Test(rpc_hello, truncated_at_every_length)
{
	struct rdmx__rpc_hello h = sample();
	uint8_t buf[RDMX__RPC_HELLO_MAX_LEN];
	size_t len = 0;

	cr_assert_eq(rdmx__rpc_hello_encode(&h, buf, sizeof(buf), &len), RDMX_OK);
	for (size_t n = 0; n < len; n++) {
		uint8_t *cut = malloc(n ? n : 1);

		memcpy(cut, buf, n);
		expect_refused(n ? cut : NULL, n, NULL);
		free(cut);
	}
}

Test(rpc_hello, garbage_and_lying_counts)
{
	uint8_t big[RDMX__RPC_HELLO_MAX_LEN + 1];

	expect_refused("\xc1\xc1\xc1", 3, "does not decode");
	/* a map, an array of 4 billion elements: nothing is allocated for it */
	expect_refused("\x81\x01\xdd\xff\xff\xff\xff", 7, "does not decode");
	expect_refused("\xdf\xff\xff\xff\xff", 5, "does not decode");
	/* not a map at all */
	expect_refused("\x93\x01\x02\x03", 4, "does not decode");
	/* trailing bytes */
	expect_refused("\x80\x80", 2, "does not decode");
	memset(big, 0x80, sizeof(big));
	expect_refused(big, sizeof(big), "at most");
}

Test(rpc_hello, values_out_of_range)
{
	/* {1:[2], 2:256, 3:8192, 4:65536} with one field changed each time */
	static const uint8_t ok[] = {0x84, 0x01, 0x91, 0x02, 0x02, 0xcd, 0x01, 0x00, 0x03,
	                             0xcd, 0x20, 0x00, 0x04, 0xce, 0x00, 0x01, 0x00, 0x00};
	struct rdmx__rpc_hello out;
	uint8_t b[sizeof(ok)];
	char why[160];

	cr_assert_eq(rdmx__rpc_hello_decode(ok, sizeof(ok), &out, why, sizeof(why)), RDMX_OK, "%s",
	             why);
	{
		static const uint8_t nov[] = {0x83, 0x02, 0xcd, 0x01, 0x00, 0x03, 0xcd, 0x20,
		                              0x00, 0x04, 0xce, 0x00, 0x01, 0x00, 0x00};
		expect_refused(nov, sizeof(nov), "versions");
	}
	memcpy(b, ok, sizeof(b));
	b[6] = 0x00;
	b[7] = 0x01; /* 1 slot: below the channel's 2 */
	expect_refused(b, sizeof(b), "slot count");
	memcpy(b, ok, sizeof(b));
	b[14] = 0x00;
	b[15] = 0x00; /* max message 0 */
	expect_refused(b, sizeof(b), "max message");
	memcpy(b, ok, sizeof(b));
	b[10] = 0x20;
	b[11] = 0x01; /* slot size 8193: not a multiple of 64 */
	expect_refused(b, sizeof(b), "slot size");
	memcpy(b, ok, sizeof(b));
	b[3] = 0xa1; /* version as a string: wrong type */
	expect_refused(b, sizeof(b), "does not decode");
	{
		/* a version 1 hello (string keys) is refused */
		static const uint8_t v1[] = {0x81, 0xa8, 'r', 'd', 'm',  'x',
		                             '-',  'r',  'p', 'c', 0x91, 0x01};
		expect_refused(v1, sizeof(v1), "does not decode as rpc version 2");
	}
}
