/* RPC message header (see include/rdmx/rpc.h): encode and a decoder that
 * checks every field against the message it came in. */
#include "rpc_priv.h"

void rdmx__rpc_hdr_encode(const struct rpc_hdr *h, void *dst)
{
	uint8_t *b = dst;

	b[0] = h->type;
	b[1] = h->flags;
	b[2] = h->code;
	b[3] = 0;
	rdmx__st32(b + 4, h->word);
	rdmx__st64(b + 8, h->call_id);
	rdmx__st64(b + 16, h->timeout_us);
}

int rdmx__rpc_hdr_decode(const void *msg, size_t len, struct rpc_hdr *h, const char **why)
{
	const uint8_t *b = msg;

	if (len < RDMX_RPC_HDR_SIZE) {
		*why = "rpc message shorter than its header";
		return RDMX_E_PROTOCOL;
	}
	h->type = b[0];
	h->flags = b[1];
	h->code = b[2];
	h->word = rdmx__ld32(b + 4);
	h->call_id = rdmx__ld64(b + 8);
	h->timeout_us = rdmx__ld64(b + 16);
	if (b[3] != 0) {
		*why = "rpc header reserved byte set";
		return RDMX_E_PROTOCOL;
	}
	switch (h->type) {
	case RPC_T_REQUEST:
		if ((h->flags & ~(RPC_F_ONEWAY | RPC_F_MD)) || h->code) {
			*why = "rpc request with unknown flags or a status code";
			return RDMX_E_PROTOCOL;
		}
		break;
	case RPC_T_RESPONSE:
		if ((h->flags & ~RPC_F_MD) || h->timeout_us) {
			*why = "rpc response with flags or a timeout";
			return RDMX_E_PROTOCOL;
		}
		if (h->code >= RDMX_RPC_CODE_COUNT) {
			*why = "rpc response with an unknown status code";
			return RDMX_E_PROTOCOL;
		}
		if (h->word > RDMX_RPC_MAX_STATUS_MESSAGE || h->word > len - RDMX_RPC_HDR_SIZE) {
			*why = "rpc status message longer than the message";
			return RDMX_E_PROTOCOL;
		}
		break;
	case RPC_T_CANCEL:
	case RPC_T_GOAWAY:
		if (len != RDMX_RPC_HDR_SIZE || h->flags || h->code || h->word || h->timeout_us) {
			*why = "rpc cancel/goaway with a body or fields set";
			return RDMX_E_PROTOCOL;
		}
		break;
	case RPC_T_S_OPEN:
		if (h->flags < RDMX_RPC_SERVER_STREAMING || h->flags > RDMX_RPC_BIDI_STREAMING ||
		    h->code) {
			*why = "rpc stream open with a bad kind or a status code";
			return RDMX_E_PROTOCOL;
		}
		break;
	case RPC_T_S_HEADERS:
	case RPC_T_S_STATUS:
		if (h->flags || h->timeout_us || h->code >= RDMX_RPC_CODE_COUNT ||
		    (h->type == RPC_T_S_HEADERS && (h->code || h->word))) {
			*why = "rpc stream headers/status with bad fields";
			return RDMX_E_PROTOCOL;
		}
		if (h->word > RDMX_RPC_MAX_STATUS_MESSAGE || h->word > len - RDMX_RPC_HDR_SIZE) {
			*why = "rpc stream status message longer than the message";
			return RDMX_E_PROTOCOL;
		}
		break;
	case RPC_T_S_MSG:
	case RPC_T_S_END:
	case RPC_T_S_RST:
	case RPC_T_S_WINDOW:
		if ((h->flags & ~RPC_SF_ACC) || (h->timeout_us && h->type != RPC_T_S_WINDOW) ||
		    (h->type == RPC_T_S_WINDOW && h->timeout_us > UINT32_MAX) ||
		    (h->code && (h->type != RPC_T_S_RST || h->code >= RDMX_RPC_CODE_COUNT)) ||
		    (h->type != RPC_T_S_WINDOW && h->type != RPC_T_S_MSG && h->word) ||
		    (h->type == RPC_T_S_MSG && h->word == 1) ||
		    (h->type == RPC_T_S_WINDOW && !h->word && !h->timeout_us) ||
		    (h->type != RPC_T_S_MSG && len != RDMX_RPC_HDR_SIZE) ||
		    (h->type == RPC_T_S_RST && h->flags)) {
			*why = "rpc stream frame with bad fields";
			return RDMX_E_PROTOCOL;
		}
		break;
	case RPC_T_BATCH:
		if (h->flags || h->code || h->timeout_us || h->word < 2 || h->call_id != h->word ||
		    (len - RDMX_RPC_HDR_SIZE) / (4 + RDMX_RPC_HDR_SIZE) < h->word) {
			*why = "rpc batch with bad fields";
			return RDMX_E_PROTOCOL;
		}
		break;
	default:
		*why = "unknown rpc message type";
		return RDMX_E_PROTOCOL;
	}
	if (h->type != RPC_T_GOAWAY && h->call_id == 0) {
		*why = "rpc message with call id 0";
		return RDMX_E_PROTOCOL;
	}
	return 0;
}
