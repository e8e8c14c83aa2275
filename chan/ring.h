/* Channel wire formats (little-endian), shared by the channel files and the
 * unit/fuzz tests. Decoders never trust a peer's value: every length, slot
 * and flag is checked against what the receiver expects.
 *
 * Immediate of a ring write:  bits 0..15 slot index, bits 16..31 the low 16
 * bits of the message sequence number. Message k of a channel (counted from
 * 0) goes into slot k mod slot_count: both ends count the slots on, one per
 * message, never from the 32-bit sequence number, whose wrap would send two
 * messages in flight into one slot when the count is not a power of two.
 *
 * Slot header (RDMX_CHAN_HDR_SIZE = 16 bytes at the start of the slot):
 *   0 u16 magic 0x4352 ("RC")   2 u8 version (1)   3 u8 flags (bit 0: RDV)
 *   4 u32 len      eager: payload bytes that follow; RDV: message length
 *   8 u32 seq      the message's sequence number (mod 2^32)
 *  12 u32 credit   cumulative count of slots the writer freed in ITS ring
 * RDV payload: the 32-byte memory descriptor of the source (REMOTE_READ),
 * a region of exactly `len` bytes.
 *
 * Control messages (two-sided SENDs into the worker's receive buffers):
 *   0 u16 magic   2 u8 version   3 u8 type
 *   HELLO  (64 bytes): 4 u32 slot_count  8 u32 slot_size  12 u32 flags
 *                      (bit 0: this side takes its ring writes as light
 *                      messages, engine/msg.h; other bits 0)
 *                      16 u64 max_msg_size  24 desc[32] ring descriptor
 *                      56 u64 reserved (0)
 *   CREDIT (16 bytes): 4 u32 credit (as in the slot header)  8 u64 reserved (0)
 */
#ifndef RDMX_RPC_RING_H
#define RDMX_RPC_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmx/channel.h>
#include <rdmx/mr.h>

#define RDMX__CHAN_MAGIC 0x4352u
#define RDMX__CHAN_VERSION 1u
#define RDMX__SLOT_F_RDV 0x1u
#define RDMX__SLOT_F_KNOWN RDMX__SLOT_F_RDV
#define RDMX__RDV_PAYLOAD RDMX_MR_DESCRIPTOR_SIZE
#define RDMX__HELLO_F_MSG 0x1u

enum rdmx__ctl_type {
	RDMX__CTL_HELLO = 1,
	RDMX__CTL_CREDIT = 2,
};
#define RDMX__CTL_HELLO_LEN 64u
#define RDMX__CTL_CREDIT_LEN 16u
#define RDMX__CTL_MAX_LEN 64u

struct rdmx__slot_hdr {
	uint8_t flags;
	uint32_t len;
	uint32_t seq;
	uint32_t credit;
};

struct rdmx__hello {
	uint32_t slot_count;
	uint32_t slot_size;
	uint64_t max_msg;
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
	uint32_t flags; /* RDMX__HELLO_F_* */
};

struct rdmx__ctl {
	enum rdmx__ctl_type type;
	struct rdmx__hello hello; /* HELLO */
	uint32_t credit;          /* CREDIT */
};

/* The slot after `slot` in a ring of `count`. */
static inline uint32_t rdmx__slot_next(uint32_t slot, uint32_t count)
{
	return slot + 1 == count ? 0 : slot + 1;
}

static inline uint32_t rdmx__imm_make(uint32_t slot, uint32_t seq)
{
	return (slot & 0xffffu) | (seq << 16);
}
static inline uint32_t rdmx__imm_slot(uint32_t imm)
{
	return imm & 0xffffu;
}
static inline uint32_t rdmx__imm_seq16(uint32_t imm)
{
	return imm >> 16;
}

void rdmx__slot_hdr_encode(const struct rdmx__slot_hdr *h, void *dst);

/* What the receiver knows when a ring write arrives. */
struct rdmx__slot_expect {
	uint32_t seq;          /* next expected sequence number */
	uint32_t slot_payload; /* slot size - header */
	uint64_t max_msg;      /* local maximum message size */
	uint32_t written;      /* length the engine reported for the write */
};

/* Decodes and checks a slot header. 0 or RDMX_E_PROTOCOL with *why set to a
 * short reason for the log line. */
int rdmx__slot_hdr_decode(const void *src, const struct rdmx__slot_expect *exp,
                          struct rdmx__slot_hdr *h, const char **why);

/* Credit check: a peer's cumulative credit may move forward by at most the
 * number of messages outstanding. */
static inline bool rdmx__credit_valid(uint32_t credit, uint32_t acked, uint32_t sent)
{
	return (uint32_t)(credit - acked) <= (uint32_t)(sent - acked);
}

/* Control encoders: write exactly the message length; return it. */
size_t rdmx__ctl_hello_encode(const struct rdmx__hello *h, void *dst);
size_t rdmx__ctl_credit_encode(uint32_t credit, void *dst);
/* Decodes and checks a control message (geometry ranges of a hello
 * included; the descriptor itself is checked by the caller). */
int rdmx__ctl_decode(const void *src, size_t len, struct rdmx__ctl *ctl, const char **why);

/* Geometry checks shared by the setters and the hello decoder. */
bool rdmx__slot_count_valid(uint64_t count);
bool rdmx__slot_size_valid(uint64_t size);
bool rdmx__max_msg_valid(uint64_t size);

#endif
