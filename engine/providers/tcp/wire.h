/* tcp provider: the wire format.
 *
 * One TCP connection carries both directions of an RC connection: each side's
 * requests (with a packet sequence number, PSN) and its responses to the
 * peer's requests, in order. Every frame is a fixed 48-byte header followed by
 * `len` payload bytes; `len` is the payload length for every opcode, so a
 * receiver can always skip (drain) a frame it refuses.
 *
 * Header (little-endian):
 *   0 u8  op        1 u8 flags         2 u16 status (NAK / ERROR: RDMX__TCP_ST_*)
 *   4 u32 psn       8 u32 rkey        12 u32 imm
 *  16 u64 offset   24 u64 len (payload bytes)
 *  32 u64 op0      40 u64 op1
 *
 * Requests (initiator -> target, psn = the initiator's sequence):
 *   SEND, SEND_IMM          payload = message
 *   WRITE, WRITE_IMM        rkey, offset; payload = data
 *   READ_REQ                rkey, offset, op0 = length to read; no payload
 *   CAS (op0 cmp, op1 swap), FADD (op0 add), AWRITE (op0 value): rkey, offset
 *   FLUSH                   rkey, offset, op0 = range length
 *   MSG                     rkey, offset, imm; payload = data (<= 512 bytes):
 *                           a light message (engine/msg.h), placed as a
 *                           WRITE_IMM's but with no psn (0), no receive
 *                           consumed and no response; sent only when every
 *                           request before it was answered
 * Responses (target -> initiator, psn = the request's, strictly in order):
 *   ACK, NAK (status), ATOMIC_RESP (op0 = previous value), READ_RESP (payload)
 * Flags: 0, except RDMX__TCP_F_ACK on a request other than CAS: op1 = the
 *   psn of an ACK the sender owes, carried in this header instead of an ACK
 *   frame of its own just before it (same meaning, same order: the receiver
 *   takes the ACK first). A sender uses it for the last response it owes
 *   when a request of its own goes right after (a call's answer carries the
 *   call's acknowledgement).
 * Connection:
 *   ERROR (status)          the sender moved the connection to error
 *   HELLO                   export/connect initiator: psn = its initial psn,
 *                           op0 = magic|version, op1 = its send queue depth,
 *                           payload = the acceptor's token, then its own
 *   HELLO_ACK               acceptor: psn, op0, op1 as above, no payload
 *   CM_REQ, CM_ACCEPT       rdma_cm style: psn, op0, op1 as above, payload =
 *                           private data (<= 56 bytes)
 *   CM_REJECT               no payload
 *
 * Exported connection details (RDMX__TCP_DETAILS_SIZE bytes, little-endian):
 *   0 u16 magic 0x5854 ("TX")  2 u8 version  3 u8 provider id (1)
 *   4 u8 family (4 or 6)       5 u8 reserved (0)  6 u16 listener port
 *   8 u8[16] listener address (IPv4 in the first 4 bytes)
 *  24 u8[16] token (secret: grants the data connection)
 *  40 u64 nonce (the exporter's initial psn)
 */
#ifndef RDMX_TCP_WIRE_H
#define RDMX_TCP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/byteorder.h"

#define RDMX__TCP_HDR_SIZE 48u
#define RDMX__TCP_TOKEN_SIZE 16u
#define RDMX__TCP_MAGIC 0x52444d58u /* "RDMX" */
#define RDMX__TCP_VERSION 2u        /* 2: RDMX__TCP_F_ACK */
#define RDMX__TCP_HELLO_WORD (((uint64_t)RDMX__TCP_VERSION << 32) | RDMX__TCP_MAGIC)
#define RDMX__TCP_HELLO_LEN (2u * RDMX__TCP_TOKEN_SIZE)
#define RDMX__TCP_PD_MAX 56u

#define RDMX__TCP_DETAILS_MAGIC 0x5854u
#define RDMX__TCP_DETAILS_VERSION 1u
#define RDMX__TCP_DETAILS_SIZE 48u

#define RDMX__TCP_MSG_MAX 512u /* payload of a MSG frame (RDMX__MSG_MAX) */
#define RDMX__TCP_F_ACK 0x01u  /* flags: op1 carries an ACK (see above) */

enum rdmx__tcp_op {
	RDMX__TCP_OP_SEND = 1,
	RDMX__TCP_OP_SEND_IMM = 2,
	RDMX__TCP_OP_WRITE = 3,
	RDMX__TCP_OP_WRITE_IMM = 4,
	RDMX__TCP_OP_READ_REQ = 5,
	RDMX__TCP_OP_CAS = 6,
	RDMX__TCP_OP_FADD = 7,
	RDMX__TCP_OP_AWRITE = 8,
	RDMX__TCP_OP_FLUSH = 9,
	RDMX__TCP_OP_MSG = 10,
	RDMX__TCP_OP_ACK = 16,
	RDMX__TCP_OP_NAK = 17,
	RDMX__TCP_OP_READ_RESP = 18,
	RDMX__TCP_OP_ATOMIC_RESP = 19,
	RDMX__TCP_OP_ERROR = 32,
	RDMX__TCP_OP_HELLO = 40,
	RDMX__TCP_OP_HELLO_ACK = 41,
	RDMX__TCP_OP_CM_REQ = 42,
	RDMX__TCP_OP_CM_ACCEPT = 43,
	RDMX__TCP_OP_CM_REJECT = 44,
};

/* NAK / ERROR status codes on the wire. */
enum rdmx__tcp_status {
	RDMX__TCP_ST_OK = 0,
	RDMX__TCP_ST_RNR = 1,           /* no receive posted: retry the psn later */
	RDMX__TCP_ST_REMOTE_ACCESS = 2, /* key, bounds or permission */
	RDMX__TCP_ST_REMOTE_OP = 3,     /* receive too small, invalid request */
	RDMX__TCP_ST_PROTOCOL = 4,      /* the peer broke the protocol */
	RDMX__TCP_ST_RNR_EXCEEDED = 5,  /* initiator gave up after rnr retries */
	RDMX__TCP_ST_STATUS_MAX = 5,
};

struct rdmx__tcp_hdr {
	uint8_t op;
	uint8_t flags;
	uint16_t status;
	uint32_t psn;
	uint32_t rkey;
	uint32_t imm;
	uint64_t offset;
	uint64_t len;
	uint64_t op0;
	uint64_t op1;
};

static inline void rdmx__tcp_hdr_encode(const struct rdmx__tcp_hdr *h, uint8_t *p)
{
	p[0] = h->op;
	p[1] = h->flags;
	rdmx__st16(p + 2, h->status);
	rdmx__st32(p + 4, h->psn);
	rdmx__st32(p + 8, h->rkey);
	rdmx__st32(p + 12, h->imm);
	rdmx__st64(p + 16, h->offset);
	rdmx__st64(p + 24, h->len);
	rdmx__st64(p + 32, h->op0);
	rdmx__st64(p + 40, h->op1);
}

static inline void rdmx__tcp_hdr_decode(const uint8_t *p, struct rdmx__tcp_hdr *h)
{
	h->op = p[0];
	h->flags = p[1];
	h->status = rdmx__ld16(p + 2);
	h->psn = rdmx__ld32(p + 4);
	h->rkey = rdmx__ld32(p + 8);
	h->imm = rdmx__ld32(p + 12);
	h->offset = rdmx__ld64(p + 16);
	h->len = rdmx__ld64(p + 24);
	h->op0 = rdmx__ld64(p + 32);
	h->op1 = rdmx__ld64(p + 40);
}

static inline bool rdmx__tcp_op_is_request(uint8_t op)
{
	return op >= RDMX__TCP_OP_SEND && op <= RDMX__TCP_OP_FLUSH;
}

static inline bool rdmx__tcp_op_is_response(uint8_t op)
{
	return op >= RDMX__TCP_OP_ACK && op <= RDMX__TCP_OP_ATOMIC_RESP;
}

static inline bool rdmx__tcp_op_is_handshake(uint8_t op)
{
	return op >= RDMX__TCP_OP_HELLO && op <= RDMX__TCP_OP_CM_REJECT;
}

/* Context-free checks of a decoded header: NULL when well formed, else what
 * is wrong (for the log line). max_msg bounds data payloads and reads. */
static inline const char *rdmx__tcp_hdr_check(const struct rdmx__tcp_hdr *h, uint64_t max_msg)
{
	if (h->flags & ~RDMX__TCP_F_ACK)
		return "unknown flags";
	if (h->flags) {
		if (!rdmx__tcp_op_is_request(h->op) || h->op == RDMX__TCP_OP_CAS)
			return "acknowledgement flag on a frame that cannot carry it";
		if (h->op1 > UINT32_MAX)
			return "carried acknowledgement psn out of range";
	}
	switch (h->op) {
	case RDMX__TCP_OP_MSG:
		if (h->len > RDMX__TCP_MSG_MAX)
			return "light message longer than its limit";
		return h->status || h->psn ? "status or psn on a light message" : NULL;
	case RDMX__TCP_OP_SEND:
	case RDMX__TCP_OP_SEND_IMM:
	case RDMX__TCP_OP_WRITE:
	case RDMX__TCP_OP_WRITE_IMM:
	case RDMX__TCP_OP_READ_RESP:
		if (h->len > max_msg)
			return "payload length beyond the message size limit";
		return h->status ? "status on a data frame" : NULL;
	case RDMX__TCP_OP_READ_REQ:
		if (h->op0 > max_msg)
			return "read length beyond the message size limit";
		/* fall through */
	case RDMX__TCP_OP_CAS:
	case RDMX__TCP_OP_FADD:
	case RDMX__TCP_OP_AWRITE:
	case RDMX__TCP_OP_FLUSH:
	case RDMX__TCP_OP_ACK:
	case RDMX__TCP_OP_ATOMIC_RESP:
	case RDMX__TCP_OP_HELLO_ACK:
	case RDMX__TCP_OP_CM_REJECT:
		if (h->len)
			return "payload on a frame that has none";
		return h->status ? "status on a frame that has none" : NULL;
	case RDMX__TCP_OP_NAK:
	case RDMX__TCP_OP_ERROR:
		if (h->len)
			return "payload on a frame that has none";
		if (h->status == 0 || h->status > RDMX__TCP_ST_STATUS_MAX)
			return "unknown status";
		return NULL;
	case RDMX__TCP_OP_HELLO:
		return h->len != RDMX__TCP_HELLO_LEN ? "bad hello length" : NULL;
	case RDMX__TCP_OP_CM_REQ:
	case RDMX__TCP_OP_CM_ACCEPT:
		return h->len > RDMX__TCP_PD_MAX ? "private data too long" : NULL;
	default:
		return "unknown opcode";
	}
}

/* Exported connection details. */
struct rdmx__tcp_details {
	uint8_t provider;
	uint8_t family; /* 4 or 6 */
	uint16_t port;
	uint8_t addr[16];
	uint8_t token[RDMX__TCP_TOKEN_SIZE];
	uint64_t nonce;
};

static inline void rdmx__tcp_details_encode(const struct rdmx__tcp_details *d, uint8_t *p)
{
	rdmx__st16(p, RDMX__TCP_DETAILS_MAGIC);
	p[2] = RDMX__TCP_DETAILS_VERSION;
	p[3] = d->provider;
	p[4] = d->family;
	p[5] = 0;
	rdmx__st16(p + 6, d->port);
	memcpy(p + 8, d->addr, 16);
	memcpy(p + 24, d->token, RDMX__TCP_TOKEN_SIZE);
	rdmx__st64(p + 40, d->nonce);
}

/* 0, or -1 for anything malformed (size, magic, version, provider, family,
 * reserved byte, port 0, nonzero tail of an IPv4 address). */
static inline int rdmx__tcp_details_decode(const void *buf, size_t len, uint8_t provider,
                                           struct rdmx__tcp_details *d)
{
	const uint8_t *p = buf;

	if (!buf || len != RDMX__TCP_DETAILS_SIZE)
		return -1;
	if (rdmx__ld16(p) != RDMX__TCP_DETAILS_MAGIC || p[2] != RDMX__TCP_DETAILS_VERSION ||
	    p[3] != provider || (p[4] != 4 && p[4] != 6) || p[5] != 0)
		return -1;
	d->provider = p[3];
	d->family = p[4];
	d->port = rdmx__ld16(p + 6);
	if (d->port == 0)
		return -1;
	memcpy(d->addr, p + 8, 16);
	if (d->family == 4) {
		for (int i = 4; i < 16; i++)
			if (d->addr[i])
				return -1;
	}
	memcpy(d->token, p + 24, RDMX__TCP_TOKEN_SIZE);
	d->nonce = rdmx__ld64(p + 40);
	return 0;
}

#endif
