/* libFuzzer target: the cluster registry's wire decoders
 * (secure/registry_proto.c), as rdmx-bootstrapd (requests) and the registry
 * client (responses and events) run them on bytes from the network.
 * Input: one selector byte (even: request, odd: reply), then the frame.
 * A decoded message is encoded again and decoded once more: what the decoder
 * accepts, the encoders must be able to write, and the result must decode. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/status.h>

#include "registry_proto.h"

static void request(const uint8_t *data, size_t size)
{
	struct rdmx__reg_request r, again;
	void *buf;
	size_t len;
	char why[256];
	int ret;

	memset(&r, 0, sizeof(r));
	if (rdmx__reg_decode_request(data, size, &r, why, sizeof(why)))
		return;
	ret = rdmx__reg_encode_request(&r, &buf, &len);
	if (ret && ret != RDMX_E_NOMEM)
		abort(); /* a decoded request the encoder refuses */
	if (!ret) {
		memset(&again, 0, sizeof(again));
		if (rdmx__reg_decode_request(buf, len, &again, why, sizeof(why)))
			abort(); /* we wrote what we refuse to read */
		if (again.op != r.op || again.id != r.id)
			abort();
		rdmx__reg_request_fini(&again);
		free(buf);
	}
	rdmx__reg_request_fini(&r);
}

static void reply(const uint8_t *data, size_t size)
{
	const struct rdmx_registry_member **m = NULL;
	struct rdmx__reg_reply r;
	void *buf = NULL;
	size_t len = 0;
	char why[256];
	int ret;

	memset(&r, 0, sizeof(r));
	if (rdmx__reg_decode_reply(data, size, &r, why, sizeof(why)))
		return;
	if (r.is_event) {
		ret = rdmx__reg_encode_event(r.event->type, &r.event->member, &buf, &len);
	} else if (r.members) {
		m = calloc(r.members->count ? r.members->count : 1, sizeof(*m));
		for (size_t i = 0; m && i < r.members->count; i++)
			m[i] = &r.members->items[i];
		ret = m ? rdmx__reg_encode_response(r.id, r.status, r.error, r.member, r.ttl_ms, m,
		                                    r.members->count, 1, &buf, &len)
		        : RDMX_E_NOMEM;
		free(m);
	} else {
		ret = rdmx__reg_encode_response(r.id, r.status, r.error, r.member, r.ttl_ms, NULL,
		                                0, 0, &buf, &len);
	}
	if (ret && ret != RDMX_E_NOMEM)
		abort(); /* a decoded message the encoders refuse */
	if (!ret) {
		struct rdmx__reg_reply again;

		memset(&again, 0, sizeof(again));
		if (rdmx__reg_decode_reply(buf, len, &again, why, sizeof(why)))
			abort(); /* we wrote what we refuse to read */
		if (again.is_event != r.is_event || again.id != r.id || again.status != r.status ||
		    !again.members != !r.members)
			abort();
		rdmx__reg_reply_fini(&again);
		free(buf);
	}
	rdmx__reg_reply_fini(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		reply(data + 1, size - 1);
	else
		request(data + 1, size - 1);
	return 0;
}
