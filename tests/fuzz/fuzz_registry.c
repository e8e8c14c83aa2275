/* libFuzzer target: the cluster registry's wire decoders
 * (secure/registry_proto.c), as rdmx-bootstrapd (requests) and the registry
 * client (responses and events) run them on bytes from the network.
 * Input: one selector byte (even: request, odd: reply), then the frame.
 * A decoded message is encoded again and decoded once more: what the decoder
 * accepts, the encoders must be able to write, and the result must decode. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "registry_proto.h"

static void request(const uint8_t *data, size_t size)
{
	struct rdmx__reg_request r, again;
	msgpack_sbuffer sb;
	char why[256];

	memset(&r, 0, sizeof(r));
	if (rdmx__reg_decode_request(data, size, &r, why, sizeof(why)))
		return;
	msgpack_sbuffer_init(&sb);
	if (rdmx__reg_encode_request(&r, &sb) == 0) {
		memset(&again, 0, sizeof(again));
		if (rdmx__reg_decode_request(sb.data, sb.size, &again, why, sizeof(why)))
			abort(); /* we wrote what we refuse to read */
		if (again.op != r.op || again.id != r.id)
			abort();
		rdmx__reg_request_fini(&again);
	}
	msgpack_sbuffer_destroy(&sb);
	rdmx__reg_request_fini(&r);
}

static void reply(const uint8_t *data, size_t size)
{
	struct rdmx__reg_reply r;
	msgpack_sbuffer sb;
	char why[256];

	memset(&r, 0, sizeof(r));
	if (rdmx__reg_decode_reply(data, size, &r, why, sizeof(why)))
		return;
	msgpack_sbuffer_init(&sb);
	if (r.is_event && r.event) {
		rdmx__reg_encode_event(r.event->type, &r.event->member, &sb);
	} else if (r.members) {
		const struct rdmx_registry_member **m =
		    calloc(r.members->count ? r.members->count : 1, sizeof(*m));

		if (m) {
			for (size_t i = 0; i < r.members->count; i++)
				m[i] = &r.members->items[i];
			rdmx__reg_encode_response(r.id, r.status, r.error, r.member, r.ttl_ms, m,
			                          r.members->count, 1, &sb);
			free(m);
		}
	}
	if (sb.size) {
		struct rdmx__reg_reply again;

		memset(&again, 0, sizeof(again));
		if (rdmx__reg_decode_reply(sb.data, sb.size, &again, why, sizeof(why)))
			abort();
		rdmx__reg_reply_fini(&again);
	}
	msgpack_sbuffer_destroy(&sb);
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
