/* The registry wire format, shared by the client (secure/registry.c) and
 * rdmx-bootstrapd (not installed). One msgpack map per TLS frame:
 *
 *   request   {"v":1, "id":u64, "op":str, ...op fields}
 *     op "join":      "service":str "endpoint":str "meta":{str:str} "ttl":u32
 *     op "heartbeat": "member":u64          op "leave": "member":u64
 *     op "lookup":    "service":str         op "list": -
 *     op "watch":     "service":str (optional: all services)
 *   response  {"id":u64, "status":int (0 or RDMX_E_*), "error":str?,
 *              "member":u64?, "ttl":u32?, "members":[member]?}
 *   event     {"event":"joined"|"left"|"expired", "member":member}
 *   member    {"id":u64, "service":str, "endpoint":str, "owner":str,
 *              "ttl":u32, "left":u32, "meta":{str:str}}
 *
 * Decoding is defensive: the bytes are walked first (depth <= 8, every
 * declared length or count fits in what is left), then every field is checked
 * for type, size and characters; duplicate keys are refused, unknown keys
 * ignored. A refusal returns RDMX_E_PROTOCOL and a reason for the log. */
#ifndef RDMX_SECURE_REGISTRY_PROTO_H
#define RDMX_SECURE_REGISTRY_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include <rdmx/registry.h>

enum rdmx__reg_op {
	RDMX__REG_JOIN = 1,
	RDMX__REG_HEARTBEAT,
	RDMX__REG_LEAVE,
	RDMX__REG_LOOKUP,
	RDMX__REG_LIST,
	RDMX__REG_WATCH,
};

struct rdmx__reg_request {
	uint64_t id;
	enum rdmx__reg_op op;
	char *service; /* NULL when absent */
	char *endpoint;
	struct rdmx_registry_kv *meta;
	size_t n_meta;
	uint32_t ttl_ms;
	uint64_t member;
};

/* A response or an event (is_event). */
struct rdmx__reg_reply {
	int is_event;
	uint64_t id;
	int status;
	char *error;
	uint64_t member;
	uint32_t ttl_ms;
	struct rdmx_registry_members *members; /* response to lookup / list */
	struct rdmx_registry_event *event;
};

/* Character classes of the public limits (1 valid / 0 not). */
int rdmx__reg_valid_service(const char *s);
int rdmx__reg_valid_endpoint(const char *s);
int rdmx__reg_valid_meta_key(const char *s);
int rdmx__reg_valid_meta_value(const char *s);

/* Encoders append one message to `out` (initialised by the caller). */
int rdmx__reg_encode_request(const struct rdmx__reg_request *r, msgpack_sbuffer *out);
int rdmx__reg_encode_response(uint64_t id, int status, const char *error, uint64_t member,
                              uint32_t ttl_ms, const struct rdmx_registry_member *const *members,
                              size_t n_members, int with_members, msgpack_sbuffer *out);
int rdmx__reg_encode_event(enum rdmx_registry_event_type type, const struct rdmx_registry_member *m,
                           msgpack_sbuffer *out);

/* Decoders: 0 with *out filled (fini it), or RDMX_E_PROTOCOL / RDMX_E_NOMEM
 * with the reason in why[]. */
int rdmx__reg_decode_request(const void *buf, size_t len, struct rdmx__reg_request *out, char *why,
                             size_t why_len);
void rdmx__reg_request_fini(struct rdmx__reg_request *r);
int rdmx__reg_decode_reply(const void *buf, size_t len, struct rdmx__reg_reply *out, char *why,
                           size_t why_len);
void rdmx__reg_reply_fini(struct rdmx__reg_reply *r);

/* Frees the strings and meta a decoded member owns (not the struct). */
void rdmx__reg_member_fini(struct rdmx_registry_member *m);
/* Deep copy into *dst; 0 or RDMX_E_NOMEM. */
int rdmx__reg_member_copy(struct rdmx_registry_member *dst, const struct rdmx_registry_member *src);

const char *rdmx__reg_op_name(enum rdmx__reg_op op);

/* The pre-walk alone: exactly one msgpack object in buf[len], depth <= 8,
 * no declared length or count larger than the bytes left. 0 or
 * RDMX_E_PROTOCOL. Run it before msgpack_unpack_next on untrusted bytes. */
int rdmx__msgpack_precheck(const void *buf, size_t len);

#endif
