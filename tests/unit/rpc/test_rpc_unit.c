/* rpc/ internals without a network: wire decoders (slot headers, control
 * messages, RPC headers) against every malformation they must refuse and
 * random bytes, the hash map against a reference, the timer heap, the
 * latency histogram, method ids and code names. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "common/byteorder.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/map.h"
#include "rpc_priv.h"

/* ---- slot header ---- */

static struct rdmx__slot_expect expect(uint32_t seq, uint32_t written)
{
	struct rdmx__slot_expect e = {
	    .seq = seq, .slot_payload = 1024 - 16, .max_msg = 1 << 20, .written = written};
	return e;
}

Test(ring, slot_header_round_trip)
{
	struct rdmx__slot_hdr h = {.flags = 0, .len = 100, .seq = 0xfffffff0u, .credit = 77}, g;
	uint8_t b[16];
	const char *why = NULL;
	struct rdmx__slot_expect e = expect(0xfffffff0u, 116);

	rdmx__slot_hdr_encode(&h, b);
	cr_assert_eq(b[0], 0x52);
	cr_assert_eq(b[1], 0x43);
	cr_assert_eq(rdmx__slot_hdr_decode(b, &e, &g, &why), 0, "%s", why);
	cr_assert_eq(g.len, 100);
	cr_assert_eq(g.seq, 0xfffffff0u);
	cr_assert_eq(g.credit, 77);
}

static int decode_with(uint8_t flags, uint32_t len, uint32_t seq, struct rdmx__slot_expect e,
                       const char **why)
{
	struct rdmx__slot_hdr h = {.flags = flags, .len = len, .seq = seq, .credit = 0}, g;
	uint8_t b[16];

	rdmx__slot_hdr_encode(&h, b);
	return rdmx__slot_hdr_decode(b, &e, &g, why);
}

Test(ring, slot_header_refusals)
{
	const char *why;
	uint8_t b[16] = {0};
	struct rdmx__slot_hdr g;
	struct rdmx__slot_expect e = expect(5, 116);

	cr_assert_eq(rdmx__slot_hdr_decode(b, &e, &g, &why), RDMX_E_PROTOCOL); /* magic */
	cr_assert_eq(decode_with(0x2, 100, 5, expect(5, 116), &why), RDMX_E_PROTOCOL);
	cr_assert_str_eq(why, "unknown slot header flags");
	cr_assert_eq(decode_with(0, 100, 6, expect(5, 116), &why), RDMX_E_PROTOCOL);
	cr_assert_str_eq(why, "sequence number out of order");
	cr_assert_eq(decode_with(0, 1009, 5, expect(5, 1025), &why), RDMX_E_PROTOCOL);
	cr_assert_str_eq(why, "eager length larger than the slot payload");
	cr_assert_eq(decode_with(0, 100, 5, expect(5, 117), &why), RDMX_E_PROTOCOL);
	cr_assert_str_eq(why, "eager length does not match the written length");
	cr_assert_eq(decode_with(0, 0, 5, expect(5, 10), &why), RDMX_E_PROTOCOL);
	cr_assert_str_eq(why, "write shorter than a slot header");
	cr_assert_eq(decode_with(0, (1 << 20) + 1, 5, expect(5, 116), &why), RDMX_E_PROTOCOL);
	cr_assert_str_eq(why, "message longer than the maximum message size");
	/* rendezvous */
	cr_assert_eq(decode_with(1, 5000, 5, expect(5, 48), &why), 0);
	cr_assert_eq(decode_with(1, 5000, 5, expect(5, 47), &why), RDMX_E_PROTOCOL);
	cr_assert_eq(decode_with(1, 0, 5, expect(5, 48), &why), RDMX_E_PROTOCOL);
	cr_assert_eq(decode_with(0, 1008, 5, expect(5, 1024), &why), 0); /* exactly a slot */
}

Test(ring, credits_and_immediates)
{
	cr_assert(rdmx__credit_valid(10, 10, 10));
	cr_assert(rdmx__credit_valid(12, 10, 15));
	cr_assert(!rdmx__credit_valid(16, 10, 15));
	cr_assert(!rdmx__credit_valid(9, 10, 15)); /* backwards */
	/* across the 2^32 wrap */
	cr_assert(rdmx__credit_valid(3, 0xfffffffeu, 5));
	cr_assert(!rdmx__credit_valid(6, 0xfffffffeu, 5));
	uint32_t imm = rdmx__imm_make(65535, 0x12345);
	cr_assert_eq(rdmx__imm_slot(imm), 65535);
	cr_assert_eq(rdmx__imm_seq16(imm), 0x2345);
}

Test(ring, control_messages)
{
	struct rdmx__hello h = {.slot_count = 256, .slot_size = 8192, .max_msg = 1 << 26};
	struct rdmx__ctl c;
	uint8_t b[64];
	const char *why;

	memset(h.desc, 0xab, sizeof(h.desc));
	cr_assert_eq(rdmx__ctl_hello_encode(&h, b), 64);
	cr_assert_eq(rdmx__ctl_decode(b, 64, &c, &why), 0);
	cr_assert_eq(c.type, RDMX__CTL_HELLO);
	cr_assert_eq(c.hello.slot_count, 256);
	cr_assert_eq(c.hello.max_msg, 1u << 26);
	cr_assert_eq(memcmp(c.hello.desc, h.desc, 32), 0);
	cr_assert_eq(c.hello.flags, 0);
	h.flags = RDMX__HELLO_F_MSG;
	rdmx__ctl_hello_encode(&h, b);
	cr_assert_eq(rdmx__ctl_decode(b, 64, &c, &why), 0);
	cr_assert_eq(c.hello.flags, RDMX__HELLO_F_MSG);
	h.flags = 2; /* unknown flag */
	rdmx__ctl_hello_encode(&h, b);
	cr_assert_eq(rdmx__ctl_decode(b, 64, &c, &why), RDMX_E_PROTOCOL);
	h.flags = 0;
	rdmx__ctl_hello_encode(&h, b);
	cr_assert_eq(rdmx__ctl_decode(b, 63, &c, &why), RDMX_E_PROTOCOL);
	b[60] = 1;
	cr_assert_eq(rdmx__ctl_decode(b, 64, &c, &why), RDMX_E_PROTOCOL); /* reserved */
	h.slot_size = 100;
	rdmx__ctl_hello_encode(&h, b);
	cr_assert_eq(rdmx__ctl_decode(b, 64, &c, &why), RDMX_E_PROTOCOL);
	h.slot_size = 8192;
	h.slot_count = 1;
	rdmx__ctl_hello_encode(&h, b);
	cr_assert_eq(rdmx__ctl_decode(b, 64, &c, &why), RDMX_E_PROTOCOL);
	h.slot_count = 2;
	h.max_msg = 0;
	rdmx__ctl_hello_encode(&h, b);
	cr_assert_eq(rdmx__ctl_decode(b, 64, &c, &why), RDMX_E_PROTOCOL);
	cr_assert_eq(rdmx__ctl_credit_encode(99, b), 16);
	cr_assert_eq(rdmx__ctl_decode(b, 16, &c, &why), 0);
	cr_assert_eq(c.type, RDMX__CTL_CREDIT);
	cr_assert_eq(c.credit, 99);
	cr_assert_eq(rdmx__ctl_decode(b, 17, &c, &why), RDMX_E_PROTOCOL);
	b[3] = 7;
	cr_assert_eq(rdmx__ctl_decode(b, 16, &c, &why), RDMX_E_PROTOCOL);
	cr_assert_eq(rdmx__ctl_decode(b, 3, &c, &why), RDMX_E_PROTOCOL);
}

/* ---- RPC header ---- */

Test(rpc_wire, header_round_trip_and_refusals)
{
	struct rpc_hdr h = {.type = RPC_T_REQUEST,
	                    .flags = RPC_F_ONEWAY,
	                    .word = 0xdeadbeef,
	                    .call_id = 42,
	                    .timeout_us = 5000},
	               g;
	uint8_t b[64] = {0};
	const char *why;

	rdmx__rpc_hdr_encode(&h, b);
	cr_assert_eq(rdmx__rpc_hdr_decode(b, 24, &g, &why), 0);
	cr_assert_eq(g.word, 0xdeadbeef);
	cr_assert_eq(g.call_id, 42);
	cr_assert_eq(g.timeout_us, 5000);
	cr_assert_eq(rdmx__rpc_hdr_decode(b, 23, &g, &why), RDMX_E_PROTOCOL);
	b[3] = 1;
	cr_assert_eq(rdmx__rpc_hdr_decode(b, 24, &g, &why), RDMX_E_PROTOCOL);
	/* response: status message must fit, code in range */
	struct rpc_hdr r = {.type = RPC_T_RESPONSE, .code = 5, .word = 10, .call_id = 1};
	rdmx__rpc_hdr_encode(&r, b);
	cr_assert_eq(rdmx__rpc_hdr_decode(b, 34, &g, &why), 0);
	cr_assert_eq(rdmx__rpc_hdr_decode(b, 33, &g, &why), RDMX_E_PROTOCOL);
	r.code = 17;
	rdmx__rpc_hdr_encode(&r, b);
	cr_assert_eq(rdmx__rpc_hdr_decode(b, 34, &g, &why), RDMX_E_PROTOCOL);
	/* cancel: no body; id 0 refused */
	struct rpc_hdr c = {.type = RPC_T_CANCEL, .call_id = 3};
	rdmx__rpc_hdr_encode(&c, b);
	cr_assert_eq(rdmx__rpc_hdr_decode(b, 24, &g, &why), 0);
	cr_assert_eq(rdmx__rpc_hdr_decode(b, 25, &g, &why), RDMX_E_PROTOCOL);
	c.call_id = 0;
	rdmx__rpc_hdr_encode(&c, b);
	cr_assert_eq(rdmx__rpc_hdr_decode(b, 24, &g, &why), RDMX_E_PROTOCOL);
	b[0] = 9;
	cr_assert_eq(rdmx__rpc_hdr_decode(b, 24, &g, &why), RDMX_E_PROTOCOL);
	/* batch of answers: word = call_id = N >= 2, room for N entries */
	uint8_t bb[24 + 2 * 28];
	struct rpc_hdr t = {.type = RPC_T_BATCH, .word = 2, .call_id = 2};
	rdmx__rpc_hdr_encode(&t, bb);
	cr_assert_eq(rdmx__rpc_hdr_decode(bb, sizeof(bb), &g, &why), 0);
	cr_assert_eq(g.word, 2);
	cr_assert_eq(rdmx__rpc_hdr_decode(bb, sizeof(bb) - 1, &g, &why), RDMX_E_PROTOCOL);
	t.call_id = 3; /* must repeat the count */
	rdmx__rpc_hdr_encode(&t, bb);
	cr_assert_eq(rdmx__rpc_hdr_decode(bb, sizeof(bb), &g, &why), RDMX_E_PROTOCOL);
	t.word = t.call_id = 1; /* a batch of one is the plain message */
	rdmx__rpc_hdr_encode(&t, bb);
	cr_assert_eq(rdmx__rpc_hdr_decode(bb, sizeof(bb), &g, &why), RDMX_E_PROTOCOL);
	t.word = t.call_id = 2;
	t.code = 1;
	rdmx__rpc_hdr_encode(&t, bb);
	cr_assert_eq(rdmx__rpc_hdr_decode(bb, sizeof(bb), &g, &why), RDMX_E_PROTOCOL);
}

/* Random bytes never crash a decoder and what it accepts is consistent. */
Test(fuzzish, decoders_on_random_bytes)
{
	uint8_t b[128];
	const char *why;
	struct rdmx__slot_hdr h;
	struct rdmx__ctl c;
	struct rpc_hdr r;

	srand(1234);
	for (int i = 0; i < 200000; i++) {
		size_t len = (size_t)(rand() % 129);

		for (size_t k = 0; k < sizeof(b); k++)
			b[k] = (uint8_t)rand();
		if (i & 1) { /* make the magic right half the time */
			b[0] = 0x52;
			b[1] = 0x43;
			b[2] = 1;
			b[3] = (uint8_t)(rand() % 4);
		}
		struct rdmx__slot_expect e = expect((uint32_t)rand(), (uint32_t)len);
		if (rdmx__slot_hdr_decode(b, &e, &h, &why) == 0) {
			cr_assert(h.len <= e.max_msg);
			if (!(h.flags & RDMX__SLOT_F_RDV))
				cr_assert_eq(16 + h.len, len);
		}
		if (rdmx__ctl_decode(b, len, &c, &why) == 0)
			cr_assert(len == 64 || len == 16);
		if (rdmx__rpc_hdr_decode(b, len, &r, &why) == 0 && r.type == RPC_T_RESPONSE)
			cr_assert(24 + r.word <= len);
	}
}

/* ---- map ---- */

Test(map, against_a_reference)
{
	struct rdmx__map m;
	enum { N = 20000 };
	static uint64_t keys[N];
	static bool present[N];

	rdmx__map_init(&m);
	srand(5);
	for (int i = 0; i < N; i++)
		keys[i] = ((uint64_t)rand() << 32) ^ (uint64_t)rand() ^ (uint64_t)i << 48;
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < N; i++) {
			int op = rand() % 3;

			if (op == 0 && !present[i]) {
				cr_assert_eq(rdmx__map_put(&m, keys[i], &keys[i]), 0);
				present[i] = true;
			} else if (op == 0) {
				cr_assert_eq(rdmx__map_put(&m, keys[i], &keys[i]), RDMX_E_EXISTS);
			} else if (op == 1) {
				void *v = rdmx__map_del(&m, keys[i]);

				cr_assert_eq(v, present[i] ? &keys[i] : NULL);
				present[i] = false;
			}
		}
		uint32_t n = 0;
		for (int i = 0; i < N; i++) {
			cr_assert_eq(rdmx__map_get(&m, keys[i]), present[i] ? &keys[i] : NULL,
			             "key %d", i);
			n += present[i];
		}
		cr_assert_eq(m.len, n);
		uint32_t pos = 0, it = 0;
		while (rdmx__map_next(&m, &pos, NULL))
			it++;
		cr_assert_eq(it, n);
	}
	cr_assert_eq(rdmx__map_put(&m, 1, NULL), RDMX_E_INVAL);
	rdmx__map_fini(&m);
	cr_assert_null(rdmx__map_get(&m, keys[0]));
}

/* ---- histogram, ids, names ---- */

Test(hist, buckets_and_percentiles)
{
	struct rdmx_rpc_hist h;

	memset(&h, 0, sizeof(h));
	for (unsigned i = 1; i < RDMX_RPC_HIST_BUCKETS; i++)
		cr_assert(rdmx_rpc_hist_bucket_low(i) > rdmx_rpc_hist_bucket_low(i - 1));
	cr_assert_eq(rdmx_rpc_hist_percentile(&h, 50), 0);
	for (uint64_t v = 1; v <= 1000; v++)
		rdmx__hist_add(&h, v * 1000); /* 1..1000 us */
	cr_assert_eq(h.count, 1000);
	cr_assert_eq(h.min_ns, 1000);
	cr_assert_eq(h.max_ns, 1000000);
	uint64_t p50 = rdmx_rpc_hist_percentile(&h, 50);
	uint64_t p99 = rdmx_rpc_hist_percentile(&h, 99);
	cr_assert(p50 >= 500000 && p50 <= 500000 * 5 / 4, "p50 %llu", (unsigned long long)p50);
	cr_assert(p99 >= 990000 && p99 <= 1000000, "p99 %llu", (unsigned long long)p99);
	cr_assert_eq(rdmx_rpc_hist_percentile(&h, 100), 1000000);
	rdmx__hist_add(&h, UINT64_MAX); /* clamped into the last bucket */
	cr_assert_eq(h.buckets[RDMX_RPC_HIST_BUCKETS - 1], 1);
}

Test(names, method_ids_and_codes)
{
	cr_assert_eq(rdmx_rpc_method_id(""), 0x811c9dc5u);
	cr_assert_eq(rdmx_rpc_method_id("a"), 0xe40c292cu);
	cr_assert_eq(rdmx_rpc_method_id("foobar"), 0xbf9cf968u);
	cr_assert_str_eq(rdmx_rpc_code_name(RDMX_RPC_OK), "OK");
	cr_assert_str_eq(rdmx_rpc_code_name(RDMX_RPC_DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
	cr_assert_str_eq(rdmx_rpc_code_name(RDMX_RPC_UNAUTHENTICATED), "UNAUTHENTICATED");
	cr_assert_str_eq(rdmx_rpc_code_name((enum rdmx_rpc_code)17), "UNKNOWN");
}
