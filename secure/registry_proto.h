/* The registry protocol (version 2), shared by the client
 * (secure/registry.c) and rdmx-bootstrapd (not installed). Its messages are
 * secure/proto/registry.proto, one per TLS frame: a request
 * rdmx__wire.RegRequest {version, id, op, service, endpoint, meta, ttl,
 * member} from the client; a RegReply from the server, holding either the
 * response to one request {id, status (0 or RDMX_E_*), error, member, ttl,
 * members} or, for a watching session, an event {type, member}.
 *
 * This header speaks the public structs (include/rdmx/registry.h): the
 * encoders fill the generated messages and the project's codec writes them;
 * the decoders take the codec's bounded decode (lengths, counts, depth,
 * types, trailing bytes) and then check every field for size and characters
 * (the RDMX_REGISTRY_MAX_* limits), presence per op, and unique metadata
 * keys. A field given twice keeps its last value, proto3's rule: there is
 * one decoder, so no two readings of one frame can differ, and the value
 * kept is the one checked. A refusal returns RDMX_E_PROTOCOL and a reason
 * for the log. */
#ifndef RDMX_SECURE_REGISTRY_PROTO_H
#define RDMX_SECURE_REGISTRY_PROTO_H

#include <stddef.h>
#include <stdint.h>

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
/* A member's owner, a certificate name: printable ASCII without spaces, up
 * to RDMX_REGISTRY_MAX_OWNER bytes. The decoders refuse any other: a
 * server registers no member for a certificate whose name is not one (an
 * allow-list of "*" takes any byte but NUL). */
int rdmx__reg_valid_owner(const char *s);

/* Encoders: one message in a malloc'd buffer (*buf, *len; free() it),
 * written only on success. 0, RDMX_E_INVAL (bad arguments) or RDMX_E_NOMEM.
 * They do not check the strings: the callers give checked ones. */
int rdmx__reg_encode_request(const struct rdmx__reg_request *r, void **buf, size_t *len);
/* with_members: the answer carries a member list (lookup, list), maybe empty */
int rdmx__reg_encode_response(uint64_t id, int status, const char *error, uint64_t member,
                              uint32_t ttl_ms, const struct rdmx_registry_member *const *members,
                              size_t n_members, int with_members, void **buf, size_t *len);
int rdmx__reg_encode_event(enum rdmx_registry_event_type type, const struct rdmx_registry_member *m,
                           void **buf, size_t *len);

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

#endif
