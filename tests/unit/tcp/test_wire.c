/* tcp provider: the wire format (engine/providers/tcp/wire.h) and the
 * exported details, decoded from hostile bytes. No network. */
#include <criterion/criterion.h>
#include <string.h>

#include "providers/tcp/tcp.h"

TestSuite(tcp_wire);

static struct rdmx__tcp_hdr hdr(uint8_t op)
{
	struct rdmx__tcp_hdr h;

	memset(&h, 0, sizeof(h));
	h.op = op;
	return h;
}

Test(tcp_wire, header_round_trip_is_little_endian)
{
	struct rdmx__tcp_hdr h = {.op = RDMX__TCP_OP_WRITE_IMM,
	                          .flags = 0,
	                          .status = 0x0102,
	                          .psn = 0x03040506u,
	                          .rkey = 0xdeadbeefu,
	                          .imm = 0x11223344u,
	                          .offset = 0x0102030405060708ull,
	                          .len = 4096,
	                          .op0 = UINT64_MAX,
	                          .op1 = 1};
	uint8_t buf[RDMX__TCP_HDR_SIZE];
	struct rdmx__tcp_hdr d;

	rdmx__tcp_hdr_encode(&h, buf);
	cr_assert_eq(buf[0], RDMX__TCP_OP_WRITE_IMM);
	cr_assert_eq(buf[2], 0x02);
	cr_assert_eq(buf[4], 0x06);
	cr_assert_eq(buf[8], 0xef);
	cr_assert_eq(buf[16], 0x08);
	rdmx__tcp_hdr_decode(buf, &d);
	cr_assert(memcmp(&h, &d, sizeof(h)) == 0, "decode(encode(h)) != h");
}

Test(tcp_wire, well_formed_frames_pass)
{
	static const uint8_t ops[] = {
	    RDMX__TCP_OP_SEND,      RDMX__TCP_OP_SEND_IMM,  RDMX__TCP_OP_WRITE,
	    RDMX__TCP_OP_WRITE_IMM, RDMX__TCP_OP_READ_REQ,  RDMX__TCP_OP_CAS,
	    RDMX__TCP_OP_FADD,      RDMX__TCP_OP_AWRITE,    RDMX__TCP_OP_FLUSH,
	    RDMX__TCP_OP_ACK,       RDMX__TCP_OP_READ_RESP, RDMX__TCP_OP_ATOMIC_RESP,
	    RDMX__TCP_OP_HELLO_ACK, RDMX__TCP_OP_CM_REJECT, RDMX__TCP_OP_MSG};

	for (size_t i = 0; i < sizeof(ops); i++) {
		struct rdmx__tcp_hdr h = hdr(ops[i]);
		const char *why = rdmx__tcp_hdr_check(&h, TCP_MAX_MSG);

		cr_assert_null(why, "op %u refused: %s", ops[i], why);
	}
	struct rdmx__tcp_hdr h = hdr(RDMX__TCP_OP_NAK);
	h.status = RDMX__TCP_ST_RNR;
	cr_assert_null(rdmx__tcp_hdr_check(&h, TCP_MAX_MSG));
	h = hdr(RDMX__TCP_OP_HELLO);
	h.len = RDMX__TCP_HELLO_LEN;
	cr_assert_null(rdmx__tcp_hdr_check(&h, TCP_MAX_MSG));
	h = hdr(RDMX__TCP_OP_CM_REQ);
	h.len = RDMX__TCP_PD_MAX;
	cr_assert_null(rdmx__tcp_hdr_check(&h, TCP_MAX_MSG));
	h = hdr(RDMX__TCP_OP_SEND);
	h.len = TCP_MAX_MSG;
	cr_assert_null(rdmx__tcp_hdr_check(&h, TCP_MAX_MSG));
	h = hdr(RDMX__TCP_OP_MSG);
	h.len = RDMX__TCP_MSG_MAX;
	h.imm = UINT32_MAX;
	cr_assert_null(rdmx__tcp_hdr_check(&h, TCP_MAX_MSG));
}

struct bad_case {
	const char *what;
	struct rdmx__tcp_hdr h;
};

Test(tcp_wire, malformed_frames_are_named)
{
	const struct bad_case cases[] = {
	    {"opcode 0", {.op = 0}},
	    {"unknown opcode", {.op = 0xee}},
	    {"opcode between ranges", {.op = 11}},
	    {"unknown flags", {.op = RDMX__TCP_OP_SEND, .flags = 2}},
	    {"ack flag on a response", {.op = RDMX__TCP_OP_ACK, .flags = RDMX__TCP_F_ACK}},
	    {"ack flag on a compare-and-swap", {.op = RDMX__TCP_OP_CAS, .flags = RDMX__TCP_F_ACK}},
	    {"ack flag on a handshake", {.op = RDMX__TCP_OP_CM_REJECT, .flags = RDMX__TCP_F_ACK}},
	    {"carried ack psn beyond 32 bits",
	     {.op = RDMX__TCP_OP_WRITE, .flags = RDMX__TCP_F_ACK, .op1 = 1ull << 32}},
	    {"send beyond the size limit", {.op = RDMX__TCP_OP_SEND, .len = TCP_MAX_MSG + 1}},
	    {"write of 2^64-1 bytes", {.op = RDMX__TCP_OP_WRITE, .len = UINT64_MAX}},
	    {"read response beyond the limit",
	     {.op = RDMX__TCP_OP_READ_RESP, .len = TCP_MAX_MSG + 1}},
	    {"read of more than the limit", {.op = RDMX__TCP_OP_READ_REQ, .op0 = TCP_MAX_MSG + 1}},
	    {"read request with payload", {.op = RDMX__TCP_OP_READ_REQ, .len = 1}},
	    {"atomic with payload", {.op = RDMX__TCP_OP_CAS, .len = 8}},
	    {"ack with payload", {.op = RDMX__TCP_OP_ACK, .len = 1}},
	    {"status on a write", {.op = RDMX__TCP_OP_WRITE, .status = 1}},
	    {"status on an ack", {.op = RDMX__TCP_OP_ACK, .status = 2}},
	    {"light message too long", {.op = RDMX__TCP_OP_MSG, .len = RDMX__TCP_MSG_MAX + 1}},
	    {"light message with a psn", {.op = RDMX__TCP_OP_MSG, .psn = 1}},
	    {"light message with a status", {.op = RDMX__TCP_OP_MSG, .status = 1}},
	    {"ack flag on a light message", {.op = RDMX__TCP_OP_MSG, .flags = RDMX__TCP_F_ACK}},
	    {"nak without status", {.op = RDMX__TCP_OP_NAK}},
	    {"nak with unknown status", {.op = RDMX__TCP_OP_NAK, .status = 99}},
	    {"error with payload", {.op = RDMX__TCP_OP_ERROR, .status = 4, .len = 8}},
	    {"hello too short", {.op = RDMX__TCP_OP_HELLO, .len = RDMX__TCP_HELLO_LEN - 1}},
	    {"hello too long", {.op = RDMX__TCP_OP_HELLO, .len = 1u << 20}},
	    {"cm request private data too long", {.op = RDMX__TCP_OP_CM_REQ, .len = 57}},
	    {"cm accept private data huge", {.op = RDMX__TCP_OP_CM_ACCEPT, .len = UINT64_MAX}},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *why = rdmx__tcp_hdr_check(&cases[i].h, TCP_MAX_MSG);

		cr_assert_not_null(why, "%s: accepted", cases[i].what);
		cr_assert(strlen(why) > 0);
	}
}

Test(tcp_wire, every_byte_pattern_is_judged_without_crashing)
{
	uint8_t buf[RDMX__TCP_HDR_SIZE];
	uint32_t x = 12345;
	int accepted = 0;

	for (int i = 0; i < 100000; i++) {
		struct rdmx__tcp_hdr h;

		for (size_t k = 0; k < sizeof(buf); k++) {
			x = x * 1103515245u + 12345u;
			buf[k] = (uint8_t)(x >> 16);
		}
		if (i & 1)
			buf[1] = 0; /* let some reach the per-op checks */
		rdmx__tcp_hdr_decode(buf, &h);
		if (!rdmx__tcp_hdr_check(&h, TCP_MAX_MSG)) {
			accepted++;
			cr_assert(h.flags == 0 ||
			          (h.flags == RDMX__TCP_F_ACK && rdmx__tcp_op_is_request(h.op) &&
			           h.op != RDMX__TCP_OP_CAS && h.op1 <= UINT32_MAX));
			cr_assert(h.len <= TCP_MAX_MSG || h.op == RDMX__TCP_OP_HELLO);
		}
	}
	cr_assert(accepted < 100000);
}

static void details_sample(uint8_t *d)
{
	struct rdmx__tcp_details x = {.provider = RDMX_PROVIDER_ID_TCP, .family = 4, .port = 4791};

	x.addr[0] = 127;
	x.addr[3] = 1;
	for (int i = 0; i < 16; i++)
		x.token[i] = (uint8_t)(0xa0 + i);
	x.nonce = 0x1122334455667788ull;
	rdmx__tcp_details_encode(&x, d);
}

Test(tcp_wire, details_round_trip)
{
	uint8_t d[RDMX__TCP_DETAILS_SIZE];
	struct rdmx__tcp_details x;

	details_sample(d);
	cr_assert_eq(rdmx__tcp_details_decode(d, sizeof(d), RDMX_PROVIDER_ID_TCP, &x), 0);
	cr_assert_eq(x.family, 4);
	cr_assert_eq(x.port, 4791);
	cr_assert_eq(x.addr[0], 127);
	cr_assert_eq(x.token[15], 0xaf);
	cr_assert_eq(x.nonce, 0x1122334455667788ull);
}

Test(tcp_wire, malformed_details_are_refused)
{
	uint8_t d[RDMX__TCP_DETAILS_SIZE], bad[RDMX__TCP_DETAILS_SIZE + 1];
	struct rdmx__tcp_details x;
	static const struct {
		size_t off;
		uint8_t val;
		const char *what;
	} flips[] = {
	    {0, 0x00, "magic"},   {2, 9, "version"},  {3, 2, "provider (verbs)"},
	    {4, 5, "family"},     {5, 1, "reserved"}, {6, 0, "port low (port 0 with high 0)"},
	    {12, 1, "ipv4 tail"},
	};

	details_sample(d);
	cr_assert_neq(rdmx__tcp_details_decode(NULL, sizeof(d), 1, &x), 0);
	cr_assert_neq(rdmx__tcp_details_decode(d, sizeof(d) - 1, 1, &x), 0);
	cr_assert_neq(rdmx__tcp_details_decode(d, 24, 1, &x), 0);
	memcpy(bad, d, sizeof(d));
	cr_assert_neq(rdmx__tcp_details_decode(bad, sizeof(bad), 1, &x), 0);
	for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
		memcpy(bad, d, sizeof(d));
		bad[flips[i].off] = flips[i].val;
		if (flips[i].off == 6)
			bad[7] = 0;
		cr_assert_neq(rdmx__tcp_details_decode(bad, sizeof(d), RDMX_PROVIDER_ID_TCP, &x), 0,
		              "bad %s accepted", flips[i].what);
	}
}
