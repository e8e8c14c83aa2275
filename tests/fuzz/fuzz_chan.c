/* libFuzzer target: the channel's wire decoders (rpc/ring.c) as the
 * receiver runs them on a peer's bytes: the slot header of a ring write and
 * the control messages (HELLO, CREDIT).
 * Input: one selector byte (even: slot header, odd: control message); for a
 * slot header 16 bytes of receiver expectations (next sequence number,
 * slot payload size, maximum message size, length the engine reported for
 * the write) come first, then the slot bytes. What a decoder accepts is
 * encoded again and must decode to the same fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "common/byteorder.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/map.h"

#define EXPECT_LEN 20u

static void slot(const uint8_t *data, size_t size)
{
	uint8_t raw[RDMX_CHAN_HDR_SIZE], again_raw[RDMX_CHAN_HDR_SIZE];
	struct rdmx__slot_expect exp;
	struct rdmx__slot_hdr h, again;
	const char *why = NULL;

	if (size < EXPECT_LEN)
		return;
	exp.seq = rdmx__ld32(data);
	exp.slot_payload = rdmx__ld32(data + 4);
	exp.max_msg = rdmx__ld64(data + 8);
	exp.written = rdmx__ld32(data + 16);
	data += EXPECT_LEN;
	size -= EXPECT_LEN;
	/* the slot is ring memory: always a full header's worth readable */
	memset(raw, 0, sizeof(raw));
	memcpy(raw, data, size < sizeof(raw) ? size : sizeof(raw));
	if (rdmx__slot_hdr_decode(raw, &exp, &h, &why)) {
		if (!why)
			abort(); /* a refusal names its reason */
		return;
	}
	if (h.seq != exp.seq || (h.flags & ~RDMX__SLOT_F_KNOWN))
		abort();
	if (!(h.flags & RDMX__SLOT_F_RDV) &&
	    (h.len > exp.slot_payload || h.len > exp.written - RDMX_CHAN_HDR_SIZE))
		abort(); /* an eager payload must fit the slot and the write */
	rdmx__slot_hdr_encode(&h, again_raw);
	if (rdmx__slot_hdr_decode(again_raw, &exp, &again, &why) || again.flags != h.flags ||
	    again.len != h.len || again.seq != h.seq || again.credit != h.credit)
		abort();
}

static void ctl(const uint8_t *data, size_t size)
{
	uint8_t buf[RDMX__CTL_MAX_LEN];
	struct rdmx__ctl c, again;
	const char *why = NULL;
	size_t n;

	if (rdmx__ctl_decode(data, size, &c, &why)) {
		if (!why)
			abort();
		return;
	}
	if (c.type == RDMX__CTL_HELLO) {
		if (size != RDMX__CTL_HELLO_LEN || !rdmx__slot_count_valid(c.hello.slot_count) ||
		    !rdmx__slot_size_valid(c.hello.slot_size) ||
		    !rdmx__max_msg_valid(c.hello.max_msg))
			abort();
		n = rdmx__ctl_hello_encode(&c.hello, buf);
	} else if (c.type == RDMX__CTL_CREDIT) {
		n = rdmx__ctl_credit_encode(c.credit, buf);
	} else {
		abort(); /* accepted an unknown type */
	}
	if (rdmx__ctl_decode(buf, n, &again, &why) || again.type != c.type)
		abort();
	if (c.type == RDMX__CTL_HELLO &&
	    (again.hello.slot_count != c.hello.slot_count ||
	     again.hello.slot_size != c.hello.slot_size || again.hello.max_msg != c.hello.max_msg ||
	     memcmp(again.hello.desc, c.hello.desc, sizeof(c.hello.desc))))
		abort();
	if (c.type == RDMX__CTL_CREDIT && again.credit != c.credit)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		ctl(data + 1, size - 1);
	else
		slot(data + 1, size - 1);
	return 0;
}
