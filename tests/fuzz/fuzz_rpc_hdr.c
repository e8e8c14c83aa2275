/* libFuzzer target: the RPC message header decoder (rpc/rpc_wire.c) as an
 * endpoint runs it on every message a channel delivers. Input: the message.
 * What it accepts must respect the message length and encode back to the
 * same header bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpc_priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t raw[RDMX_RPC_HDR_SIZE];
	struct rpc_hdr h, again;
	const char *why = NULL;

	if (rdmx__rpc_hdr_decode(data, size, &h, &why)) {
		if (!why)
			abort(); /* a refusal names its reason */
		return 0;
	}
	if (size < RDMX_RPC_HDR_SIZE)
		abort();
	if (h.type == RPC_T_RESPONSE &&
	    (h.word > size - RDMX_RPC_HDR_SIZE || h.word > RDMX_RPC_MAX_STATUS_MESSAGE))
		abort(); /* the status message must lie inside the message */
	if (h.type != RPC_T_GOAWAY && h.call_id == 0)
		abort();
	rdmx__rpc_hdr_encode(&h, raw);
	if (memcmp(raw, data, sizeof(raw)))
		abort(); /* accepted bytes the encoder would not write */
	if (rdmx__rpc_hdr_decode(raw, size, &again, &why) || again.type != h.type ||
	    again.call_id != h.call_id || again.word != h.word)
		abort();
	return 0;
}
