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

#include "registry_proto.h"
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

/* ---- the registry protocol (secure/proto/registry.proto) ---- */

static struct rdmx_registry_kv reg_meta[2] = {{"zone", "a"}, {"note", "two words"}};

static struct rdmx__reg_request reg_join(void)
{
	struct rdmx__reg_request r;

	memset(&r, 0, sizeof(r));
	r.id = 7;
	r.op = RDMX__REG_JOIN;
	r.service = "kv";
	r.endpoint = "10.0.0.1:7000";
	r.meta = reg_meta;
	r.n_meta = 2;
	r.ttl_ms = 5000;
	return r;
}

static struct rdmx_registry_member reg_member(void)
{
	struct rdmx_registry_member m;

	memset(&m, 0, sizeof(m));
	m.id = 42;
	m.service = "kv";
	m.endpoint = "10.0.0.1:7000";
	m.owner = "kv1.svc.local";
	m.ttl_ms = 10000;
	m.expires_in_ms = 9000;
	m.meta = reg_meta;
	m.n_meta = 2;
	return m;
}

static void pack_cstr(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str_with_body(pk, s, strlen(s));
}

static void pack_meta(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 2);
	pack_cstr(pk, "zone");
	pack_cstr(pk, "a");
	pack_cstr(pk, "note");
	pack_cstr(pk, "two words");
}

/* msgpack-c writes the join as {1: version, 2: id, 3: op, 4: service,
 * 5: endpoint, 6: {meta}, 7: ttl} (member 0 is the default: not written). */
Test(registry_wire, join_bytes_match_msgpack_c)
{
	struct rdmx__reg_request r = reg_join();
	msgpack_sbuffer sb;
	msgpack_packer pk;
	void *buf = NULL;
	size_t len = 0;

	cr_assert_eq(rdmx__reg_encode_request(&r, &buf, &len), RDMX_OK);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 7);
	msgpack_pack_uint64(&pk, 1);
	msgpack_pack_uint64(&pk, RDMX_REGISTRY_PROTOCOL_VERSION);
	msgpack_pack_uint64(&pk, 2);
	msgpack_pack_uint64(&pk, 7);
	msgpack_pack_uint64(&pk, 3);
	msgpack_pack_uint64(&pk, RDMX__REG_JOIN);
	msgpack_pack_uint64(&pk, 4);
	pack_cstr(&pk, "kv");
	msgpack_pack_uint64(&pk, 5);
	pack_cstr(&pk, "10.0.0.1:7000");
	msgpack_pack_uint64(&pk, 6);
	pack_meta(&pk);
	msgpack_pack_uint64(&pk, 7);
	msgpack_pack_uint64(&pk, 5000);
	cr_assert_eq(len, sb.size, "codec wrote %zu bytes, msgpack-c %zu", len, sb.size);
	cr_assert_eq(memcmp(buf, sb.data, len), 0);
	msgpack_sbuffer_destroy(&sb);
	free(buf);
}

/* A refused lookup answer and an event: {1: {1: id, 2: status, 3: error}},
 * {2: {1: type, 2: {member}}}; an empty member list is still there: {6: {}}. */
Test(registry_wire, replies_match_msgpack_c)
{
	struct rdmx_registry_member m = reg_member();
	msgpack_sbuffer sb;
	msgpack_packer pk;
	void *buf = NULL;
	size_t len = 0;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	cr_assert_eq(rdmx__reg_encode_response(3, RDMX_E_AUTH, "no", 0, 0, NULL, 0, 0, &buf, &len),
	             RDMX_OK);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_uint64(&pk, 1);
	msgpack_pack_map(&pk, 3);
	msgpack_pack_uint64(&pk, 1);
	msgpack_pack_uint64(&pk, 3);
	msgpack_pack_uint64(&pk, 2);
	msgpack_pack_int(&pk, RDMX_E_AUTH);
	msgpack_pack_uint64(&pk, 3);
	pack_cstr(&pk, "no");
	cr_assert_eq(len, sb.size);
	cr_assert_eq(memcmp(buf, sb.data, len), 0);
	free(buf);
	msgpack_sbuffer_clear(&sb);

	cr_assert_eq(rdmx__reg_encode_response(4, 0, NULL, 0, 0, NULL, 0, 1, &buf, &len), RDMX_OK);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_uint64(&pk, 1);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_uint64(&pk, 1);
	msgpack_pack_uint64(&pk, 4);
	msgpack_pack_uint64(&pk, 6);
	msgpack_pack_map(&pk, 0);
	cr_assert_eq(len, sb.size);
	cr_assert_eq(memcmp(buf, sb.data, len), 0);
	free(buf);
	msgpack_sbuffer_clear(&sb);

	cr_assert_eq(rdmx__reg_encode_event(RDMX_REGISTRY_LEFT, &m, &buf, &len), RDMX_OK);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_uint64(&pk, 2);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_uint64(&pk, 1);
	msgpack_pack_uint64(&pk, RDMX_REGISTRY_LEFT);
	msgpack_pack_uint64(&pk, 2);
	msgpack_pack_map(&pk, 7);
	msgpack_pack_uint64(&pk, 1);
	msgpack_pack_uint64(&pk, 42);
	msgpack_pack_uint64(&pk, 2);
	pack_cstr(&pk, "kv");
	msgpack_pack_uint64(&pk, 3);
	pack_cstr(&pk, "10.0.0.1:7000");
	msgpack_pack_uint64(&pk, 4);
	pack_cstr(&pk, "kv1.svc.local");
	msgpack_pack_uint64(&pk, 5);
	msgpack_pack_uint64(&pk, 10000);
	msgpack_pack_uint64(&pk, 6);
	msgpack_pack_uint64(&pk, 9000);
	msgpack_pack_uint64(&pk, 7);
	pack_meta(&pk);
	cr_assert_eq(len, sb.size, "codec wrote %zu bytes, msgpack-c %zu", len, sb.size);
	cr_assert_eq(memcmp(buf, sb.data, len), 0);
	free(buf);
	msgpack_sbuffer_destroy(&sb);
}

Test(registry_wire, round_trips)
{
	struct rdmx_registry_member m = reg_member();
	const struct rdmx_registry_member *ms[2] = {&m, &m};
	struct rdmx__reg_request r = reg_join(), out;
	struct rdmx__reg_reply rep;
	char why[200] = "";
	void *buf = NULL;
	size_t len = 0;

	cr_assert_eq(rdmx__reg_encode_request(&r, &buf, &len), RDMX_OK);
	cr_assert_eq(rdmx__reg_decode_request(buf, len, &out, why, sizeof(why)), RDMX_OK, "%s",
	             why);
	free(buf);
	cr_assert_eq(out.id, 7);
	cr_assert_eq(out.op, RDMX__REG_JOIN);
	cr_assert_str_eq(out.service, "kv");
	cr_assert_str_eq(out.endpoint, "10.0.0.1:7000");
	cr_assert_eq(out.n_meta, 2);
	cr_assert_str_eq(out.meta[1].key, "note");
	cr_assert_str_eq(out.meta[1].value, "two words");
	cr_assert_eq(out.ttl_ms, 5000);
	rdmx__reg_request_fini(&out);

	/* watch without a service: all services, service stays absent */
	memset(&r, 0, sizeof(r));
	r.id = 9;
	r.op = RDMX__REG_WATCH;
	cr_assert_eq(rdmx__reg_encode_request(&r, &buf, &len), RDMX_OK);
	cr_assert_eq(rdmx__reg_decode_request(buf, len, &out, why, sizeof(why)), RDMX_OK, "%s",
	             why);
	free(buf);
	cr_assert_eq(out.op, RDMX__REG_WATCH);
	cr_assert_null(out.service);
	rdmx__reg_request_fini(&out);

	cr_assert_eq(rdmx__reg_encode_response(5, 0, NULL, 0, 0, ms, 2, 1, &buf, &len), RDMX_OK);
	cr_assert_eq(rdmx__reg_decode_reply(buf, len, &rep, why, sizeof(why)), RDMX_OK, "%s", why);
	free(buf);
	cr_assert_not(rep.is_event);
	cr_assert_eq(rep.id, 5);
	cr_assert_not_null(rep.members);
	cr_assert_eq(rep.members->count, 2);
	cr_assert_str_eq(rep.members->items[1].owner, "kv1.svc.local");
	cr_assert_eq(rep.members->items[1].expires_in_ms, 9000);
	cr_assert_eq(rep.members->items[1].n_meta, 2);
	rdmx__reg_reply_fini(&rep);

	cr_assert_eq(rdmx__reg_encode_response(6, 0, NULL, 0, 0, NULL, 0, 1, &buf, &len), RDMX_OK);
	cr_assert_eq(rdmx__reg_decode_reply(buf, len, &rep, why, sizeof(why)), RDMX_OK, "%s", why);
	free(buf);
	cr_assert_not_null(rep.members, "an empty list is a list");
	cr_assert_eq(rep.members->count, 0);
	rdmx__reg_reply_fini(&rep);

	cr_assert_eq(rdmx__reg_encode_event(RDMX_REGISTRY_EXPIRED, &m, &buf, &len), RDMX_OK);
	cr_assert_eq(rdmx__reg_decode_reply(buf, len, &rep, why, sizeof(why)), RDMX_OK, "%s", why);
	free(buf);
	cr_assert(rep.is_event);
	cr_assert_eq(rep.event->type, RDMX_REGISTRY_EXPIRED);
	cr_assert_eq(rep.event->member.id, 42);
	rdmx__reg_reply_fini(&rep);
}

static void reg_refused(int reply, const void *buf, size_t len, const char *reason)
{
	struct rdmx__reg_request r;
	struct rdmx__reg_reply rep;
	char why[200] = "";
	int ret;

	memset(&r, 0xa5, sizeof(r));
	memset(&rep, 0xa5, sizeof(rep));
	ret = reply ? rdmx__reg_decode_reply(buf, len, &rep, why, sizeof(why))
	            : rdmx__reg_decode_request(buf, len, &r, why, sizeof(why));
	cr_assert_eq(ret, RDMX_E_PROTOCOL, "%zu bytes: %s", len, rdmx_err_name(ret));
	cr_assert(why[0], "no reason given");
	if (reason)
		cr_assert(strstr(why, reason), "reason '%s' lacks '%s'", why, reason);
}

/* Every prefix of a valid request, answer and event is refused, never read
 * past its end (ASan's run of this suite checks the reads). */
Test(registry_wire, truncated_at_every_length)
{
	struct rdmx_registry_member m = reg_member();
	const struct rdmx_registry_member *ms[1] = {&m};
	struct rdmx__reg_request r = reg_join();
	void *bufs[3];
	size_t lens[3];

	cr_assert_eq(rdmx__reg_encode_request(&r, &bufs[0], &lens[0]), RDMX_OK);
	cr_assert_eq(rdmx__reg_encode_response(5, 0, NULL, 0, 0, ms, 1, 1, &bufs[1], &lens[1]),
	             RDMX_OK);
	cr_assert_eq(rdmx__reg_encode_event(RDMX_REGISTRY_JOINED, &m, &bufs[2], &lens[2]), RDMX_OK);
	for (int k = 0; k < 3; k++) {
		for (size_t n = 0; n < lens[k]; n++) {
			uint8_t *cut = malloc(n ? n : 1);

			memcpy(cut, bufs[k], n);
			reg_refused(k > 0, n ? cut : NULL, n, NULL);
			free(cut);
		}
		free(bufs[k]);
	}
}

Test(registry_wire, garbage_and_lying_counts)
{
	for (int reply = 0; reply < 2; reply++) {
		reg_refused(reply, "\xc1\xc1\xc1", 3, "malformed");
		/* an array of 4 billion elements in 5 bytes: nothing allocated */
		reg_refused(reply, "\xdd\xff\xff\xff\xff", 5, "malformed");
		reg_refused(reply, "\xdf\xff\xff\xff\xff", 5, "malformed");
		/* deeper than allowed */
		reg_refused(reply, "\x81\x01\x81\x01\x81\x01\x81\x01\x81\x01\x81\x01\x81\x01\x80",
		            15, "malformed");
		/* trailing bytes */
		reg_refused(reply, "\x80\x80", 2, reply ? "malformed" : NULL);
		/* string keys (version 1) */
		reg_refused(reply, "\x81\xa2id\x01", 5, "malformed");
	}
	/* a member list claiming 4 billion members, then 65535 */
	reg_refused(1, "\x81\x01\x81\x06\x81\x01\xdd\xff\xff\xff\xff", 11, "malformed");
	reg_refused(1, "\x81\x01\x81\x06\x81\x01\xdc\xff\xff", 9, "malformed");
	/* id (field 2) as a string */
	reg_refused(0, "\x83\x01\x02\x02\xa1x\x03\x05", 8, "malformed");
	/* neither a response nor an event */
	reg_refused(1, "\x80", 1, "neither a response nor an event");
}

/* A deterministic stream of random frames, half of them flipped bytes of
 * valid ones: each is refused with a reason or decodes, none crashes. */
Test(registry_wire, random_bytes)
{
	struct rdmx_registry_member m = reg_member();
	const struct rdmx_registry_member *ms[1] = {&m};
	uint8_t frame[256], *valid;
	uint32_t x = 12345;
	char why[200];
	size_t vlen;

	cr_assert_eq(rdmx__reg_encode_response(5, 0, NULL, 0, 0, ms, 1, 1, (void **)&valid, &vlen),
	             RDMX_OK);
	for (int i = 0; i < 20000; i++) {
		struct rdmx__reg_request r;
		struct rdmx__reg_reply rep;
		size_t n;
		int ret;

		x = x * 1103515245u + 12345u;
		if (i & 1) {
			n = vlen < sizeof(frame) ? vlen : sizeof(frame);
			memcpy(frame, valid, n);
			frame[(x >> 8) % n] ^= (uint8_t)(1u << ((x >> 4) & 7));
		} else {
			n = 1 + (x >> 16) % sizeof(frame);
			for (size_t j = 0; j < n; j++) {
				x = x * 1103515245u + 12345u;
				frame[j] = (uint8_t)(x >> 16);
			}
		}
		why[0] = '\0';
		ret = rdmx__reg_decode_reply(frame, n, &rep, why, sizeof(why));
		cr_assert(ret == RDMX_OK || (ret == RDMX_E_PROTOCOL && why[0]), "%s", why);
		if (!ret)
			rdmx__reg_reply_fini(&rep);
		why[0] = '\0';
		ret = rdmx__reg_decode_request(frame, n, &r, why, sizeof(why));
		cr_assert(ret == RDMX_OK || (ret == RDMX_E_PROTOCOL && why[0]), "%s", why);
		if (!ret)
			rdmx__reg_request_fini(&r);
	}
	free(valid);
}

/* The field checks after the codec: the RDMX_REGISTRY_MAX_* limits,
 * characters, presence, ranges. */
Test(registry_wire, fields_out_of_range)
{
	struct rdmx_registry_kv many[RDMX_REGISTRY_MAX_META + 1];
	struct rdmx_registry_member m = reg_member();
	const struct rdmx_registry_member *ms[1] = {&m};
	struct rdmx__reg_request r = reg_join();
	char longname[RDMX_REGISTRY_MAX_SERVICE + 2];
	void *buf;
	size_t len;

	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	r.service = longname;
	cr_assert_eq(rdmx__reg_encode_request(&r, &buf, &len), RDMX_OK);
	reg_refused(0, buf, len, "field 'service' longer than 128 bytes");
	free(buf);
	r = reg_join();
	r.service = "k v";
	cr_assert_eq(rdmx__reg_encode_request(&r, &buf, &len), RDMX_OK);
	reg_refused(0, buf, len, "field 'service' has characters");
	free(buf);
	r = reg_join();
	r.endpoint = NULL;
	cr_assert_eq(rdmx__reg_encode_request(&r, &buf, &len), RDMX_OK);
	reg_refused(0, buf, len, "join without service or endpoint");
	free(buf);
	r = reg_join();
	r.op = RDMX__REG_HEARTBEAT;
	r.member = 0;
	cr_assert_eq(rdmx__reg_encode_request(&r, &buf, &len), RDMX_OK);
	reg_refused(0, buf, len, "heartbeat without member");
	free(buf);
	r = reg_join();
	r.id = 0;
	cr_assert_eq(rdmx__reg_encode_request(&r, &buf, &len), RDMX_OK);
	reg_refused(0, buf, len, "without id or op");
	free(buf);
	/* 17 metadata entries: the encoder refuses, and so does the decoder */
	for (size_t i = 0; i <= RDMX_REGISTRY_MAX_META; i++)
		many[i] = reg_meta[0];
	r = reg_join();
	r.meta = many;
	r.n_meta = RDMX_REGISTRY_MAX_META + 1;
	cr_assert_eq(rdmx__reg_encode_request(&r, &buf, &len), RDMX_E_INVAL);
	m.meta = many;
	m.n_meta = RDMX_REGISTRY_MAX_META + 1;
	cr_assert_eq(rdmx__reg_encode_response(5, 0, NULL, 0, 0, ms, 1, 1, &buf, &len), RDMX_OK);
	reg_refused(1, buf, len, "more than 16 metadata entries");
	free(buf);
	m = reg_member();
	m.owner = NULL;
	cr_assert_eq(rdmx__reg_encode_response(5, 0, NULL, 0, 0, ms, 1, 1, &buf, &len), RDMX_OK);
	reg_refused(1, buf, len, "member lacks id, service, endpoint or owner");
	free(buf);
	m = reg_member();
	cr_assert_eq(rdmx__reg_encode_response(5, 7, NULL, 0, 0, NULL, 0, 0, &buf, &len), RDMX_OK);
	reg_refused(1, buf, len, "not a status code");
	free(buf);
	cr_assert_eq(rdmx__reg_encode_response(5, -1, "bell\a", 0, 0, NULL, 0, 0, &buf, &len),
	             RDMX_OK);
	reg_refused(1, buf, len, "field 'error' has characters");
	free(buf);
	cr_assert_eq(rdmx__reg_encode_response(0, 0, NULL, 0, 0, NULL, 0, 0, &buf, &len), RDMX_OK);
	reg_refused(1, buf, len, "response without id");
	free(buf);
	/* an event of an unknown type, an event without its member */
	reg_refused(1, "\x81\x02\x82\x01\x07\x02\x80", 7, "unknown event 7");
	reg_refused(1, "\x81\x02\x81\x01\x01", 5, "event without member");
	cr_assert_eq(rdmx__reg_encode_event(0, &m, &buf, &len), RDMX_E_INVAL);
}

/* The decode's arena is bounded by the input: a list of 2000 empty
 * members (1 byte each, 80 of arena each) is refused; 300 real members,
 * each with its metadata, decode. */
Test(registry_wire, arena_bounded_by_the_input)
{
	struct rdmx_registry_member m = reg_member();
	const struct rdmx_registry_member **ms = calloc(300, sizeof(*ms));
	struct rdmx__reg_reply rep;
	uint8_t *frame = malloc(2000 + 9);
	char why[200] = "";
	void *buf;
	size_t len;

	cr_assert(ms && frame);
	memcpy(frame, "\x81\x01\x81\x06\x81\x01\xdc\x07\xd0", 9);
	memset(frame + 9, 0x80, 2000);
	reg_refused(1, frame, 2000 + 9, "(E_TOO_BIG)");
	for (int i = 0; i < 300; i++)
		ms[i] = &m;
	cr_assert_eq(rdmx__reg_encode_response(5, 0, NULL, 0, 0, ms, 300, 1, &buf, &len), RDMX_OK);
	cr_assert_eq(rdmx__reg_decode_reply(buf, len, &rep, why, sizeof(why)), RDMX_OK, "%s", why);
	cr_assert_eq(rep.members->count, 300);
	rdmx__reg_reply_fini(&rep);
	free(buf);
	free(frame);
	free(ms);
}
