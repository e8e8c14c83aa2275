/* Channel wire formats: slot headers and control messages (see ring.h).
 * Pure functions, so that unit tests and fuzzers drive them directly. */
#include <string.h>

#include "ring.h"
#include "common/byteorder.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/map.h"

bool rdmx__slot_count_valid(uint64_t count)
{
	return count >= RDMX_CHAN_MIN_SLOT_COUNT && count <= RDMX_CHAN_MAX_SLOT_COUNT;
}

bool rdmx__slot_size_valid(uint64_t size)
{
	return size >= RDMX_CHAN_MIN_SLOT_SIZE && size <= RDMX_CHAN_MAX_SLOT_SIZE &&
	       size % 64u == 0;
}

bool rdmx__max_msg_valid(uint64_t size)
{
	return size >= 1 && size <= RDMX_CHAN_MAX_MSG_SIZE_LIMIT;
}

void rdmx__slot_hdr_encode(const struct rdmx__slot_hdr *h, void *dst)
{
	uint8_t *b = dst;

	rdmx__st16(b, RDMX__CHAN_MAGIC);
	b[2] = RDMX__CHAN_VERSION;
	b[3] = h->flags;
	rdmx__st32(b + 4, h->len);
	rdmx__st32(b + 8, h->seq);
	rdmx__st32(b + 12, h->credit);
}

int rdmx__slot_hdr_decode(const void *src, const struct rdmx__slot_expect *exp,
                          struct rdmx__slot_hdr *h, const char **why)
{
	uint8_t raw[RDMX_CHAN_HDR_SIZE];

	/* one snapshot: the peer may rewrite the slot while we look at it */
	memcpy(raw, src, sizeof(raw));
	if (exp->written < RDMX_CHAN_HDR_SIZE) {
		*why = "write shorter than a slot header";
		return RDMX_E_PROTOCOL;
	}
	if (rdmx__ld16(raw) != RDMX__CHAN_MAGIC || raw[2] != RDMX__CHAN_VERSION) {
		*why = "bad slot header magic or version";
		return RDMX_E_PROTOCOL;
	}
	h->flags = raw[3];
	h->len = rdmx__ld32(raw + 4);
	h->seq = rdmx__ld32(raw + 8);
	h->credit = rdmx__ld32(raw + 12);
	if (h->flags & ~RDMX__SLOT_F_KNOWN) {
		*why = "unknown slot header flags";
		return RDMX_E_PROTOCOL;
	}
	if (h->seq != exp->seq) {
		*why = "sequence number out of order";
		return RDMX_E_PROTOCOL;
	}
	if (h->len > exp->max_msg) {
		*why = "message longer than the maximum message size";
		return RDMX_E_PROTOCOL;
	}
	if (h->flags & RDMX__SLOT_F_RDV) {
		if (exp->written != RDMX_CHAN_HDR_SIZE + RDMX__RDV_PAYLOAD) {
			*why = "rendezvous descriptor of the wrong length";
			return RDMX_E_PROTOCOL;
		}
		if (RDMX__RDV_PAYLOAD > exp->slot_payload) {
			*why = "rendezvous descriptor larger than a slot";
			return RDMX_E_PROTOCOL;
		}
		if (h->len == 0) {
			*why = "empty rendezvous message";
			return RDMX_E_PROTOCOL;
		}
		return 0;
	}
	if (h->len > exp->slot_payload) {
		*why = "eager length larger than the slot payload";
		return RDMX_E_PROTOCOL;
	}
	if ((uint64_t)exp->written != (uint64_t)RDMX_CHAN_HDR_SIZE + h->len) {
		*why = "eager length does not match the written length";
		return RDMX_E_PROTOCOL;
	}
	return 0;
}

static void ctl_head(uint8_t *b, enum rdmx__ctl_type type)
{
	rdmx__st16(b, RDMX__CHAN_MAGIC);
	b[2] = RDMX__CHAN_VERSION;
	b[3] = (uint8_t)type;
}

size_t rdmx__ctl_hello_encode(const struct rdmx__hello *h, void *dst)
{
	uint8_t *b = dst;

	memset(b, 0, RDMX__CTL_HELLO_LEN);
	ctl_head(b, RDMX__CTL_HELLO);
	rdmx__st32(b + 4, h->slot_count);
	rdmx__st32(b + 8, h->slot_size);
	rdmx__st32(b + 12, h->flags);
	rdmx__st64(b + 16, h->max_msg);
	memcpy(b + 24, h->desc, RDMX_MR_DESCRIPTOR_SIZE);
	return RDMX__CTL_HELLO_LEN;
}

size_t rdmx__ctl_credit_encode(uint32_t credit, void *dst)
{
	uint8_t *b = dst;

	memset(b, 0, RDMX__CTL_CREDIT_LEN);
	ctl_head(b, RDMX__CTL_CREDIT);
	rdmx__st32(b + 4, credit);
	return RDMX__CTL_CREDIT_LEN;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

int rdmx__ctl_decode(const void *src, size_t len, struct rdmx__ctl *ctl, const char **why)
{
	const uint8_t *b = src;

	if (len < 4) {
		*why = "control message shorter than its header";
		return RDMX_E_PROTOCOL;
	}
	if (rdmx__ld16(b) != RDMX__CHAN_MAGIC || b[2] != RDMX__CHAN_VERSION) {
		*why = "bad control message magic or version";
		return RDMX_E_PROTOCOL;
	}
	switch (b[3]) {
	case RDMX__CTL_HELLO:
		if (len != RDMX__CTL_HELLO_LEN) {
			*why = "hello of the wrong length";
			return RDMX_E_PROTOCOL;
		}
		ctl->type = RDMX__CTL_HELLO;
		ctl->hello.slot_count = rdmx__ld32(b + 4);
		ctl->hello.slot_size = rdmx__ld32(b + 8);
		ctl->hello.max_msg = rdmx__ld64(b + 16);
		memcpy(ctl->hello.desc, b + 24, RDMX_MR_DESCRIPTOR_SIZE);
		ctl->hello.flags = rdmx__ld32(b + 12);
		if ((ctl->hello.flags & ~RDMX__HELLO_F_MSG) || !all_zero(b + 56, 8)) {
			*why = "hello with reserved fields set";
			return RDMX_E_PROTOCOL;
		}
		if (!rdmx__slot_count_valid(ctl->hello.slot_count)) {
			*why = "hello with a slot count out of range";
			return RDMX_E_PROTOCOL;
		}
		if (!rdmx__slot_size_valid(ctl->hello.slot_size)) {
			*why = "hello with a slot size out of range";
			return RDMX_E_PROTOCOL;
		}
		if (!rdmx__max_msg_valid(ctl->hello.max_msg)) {
			*why = "hello with a maximum message size out of range";
			return RDMX_E_PROTOCOL;
		}
		return 0;
	case RDMX__CTL_CREDIT:
		if (len != RDMX__CTL_CREDIT_LEN) {
			*why = "credit update of the wrong length";
			return RDMX_E_PROTOCOL;
		}
		if (!all_zero(b + 8, 8)) {
			*why = "credit update with reserved fields set";
			return RDMX_E_PROTOCOL;
		}
		ctl->type = RDMX__CTL_CREDIT;
		ctl->credit = rdmx__ld32(b + 4);
		return 0;
	default:
		*why = "unknown control message type";
		return RDMX_E_PROTOCOL;
	}
}
