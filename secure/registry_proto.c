/* Registry messages: msgpack encoders and defensive decoders (see
 * registry_proto.h for the format). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/status.h>

#include "registry_proto.h"

#define MAX_MAP_KEYS 16
#define MAX_ERROR_TEXT 512
#define MAX_MEMBERS_IN_REPLY 100000u

/* ---- character classes ---- */

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

static int all_chars(const char *s, size_t min, size_t max, int (*ok)(char))
{
	size_t n = 0;

	for (; s[n]; n++)
		if (n >= max || !ok(s[n]))
			return 0;
	return n >= min;
}

static int graph_char(char c)
{
	return c > 0x20 && c < 0x7f;
}

static int print_char(char c)
{
	return c >= 0x20 && c < 0x7f;
}

int rdmx__reg_valid_service(const char *s)
{
	return s && all_chars(s, 1, RDMX_REGISTRY_MAX_SERVICE, name_char);
}

int rdmx__reg_valid_endpoint(const char *s)
{
	return s && all_chars(s, 1, RDMX_REGISTRY_MAX_ENDPOINT, graph_char);
}

int rdmx__reg_valid_meta_key(const char *s)
{
	return s && all_chars(s, 1, RDMX_REGISTRY_MAX_META_KEY, name_char);
}

int rdmx__reg_valid_meta_value(const char *s)
{
	return s && all_chars(s, 0, RDMX_REGISTRY_MAX_META_VALUE, print_char);
}

static int valid_owner(const char *s)
{
	return all_chars(s, 1, RDMX_REGISTRY_MAX_OWNER, graph_char);
}

static int valid_error_text(const char *s)
{
	return all_chars(s, 0, MAX_ERROR_TEXT, print_char);
}

static const char *const op_names[] = {
    [RDMX__REG_JOIN] = "join",     [RDMX__REG_HEARTBEAT] = "heartbeat", [RDMX__REG_LEAVE] = "leave",
    [RDMX__REG_LOOKUP] = "lookup", [RDMX__REG_LIST] = "list",           [RDMX__REG_WATCH] = "watch",
};

static const char *const event_names[] = {
    [RDMX_REGISTRY_JOINED] = "joined",
    [RDMX_REGISTRY_LEFT] = "left",
    [RDMX_REGISTRY_EXPIRED] = "expired",
};

const char *rdmx__reg_op_name(enum rdmx__reg_op op)
{
	return op >= RDMX__REG_JOIN && op <= RDMX__REG_WATCH ? op_names[op] : "unknown";
}

/* ---- encoding ---- */

static void pack_cstr(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

static void pack_meta(msgpack_packer *pk, const struct rdmx_registry_kv *meta, size_t n)
{
	msgpack_pack_map(pk, n);
	for (size_t i = 0; i < n; i++) {
		pack_cstr(pk, meta[i].key);
		pack_cstr(pk, meta[i].value);
	}
}

static void pack_member(msgpack_packer *pk, const struct rdmx_registry_member *m)
{
	msgpack_pack_map(pk, 7);
	pack_cstr(pk, "id");
	msgpack_pack_uint64(pk, m->id);
	pack_cstr(pk, "service");
	pack_cstr(pk, m->service);
	pack_cstr(pk, "endpoint");
	pack_cstr(pk, m->endpoint);
	pack_cstr(pk, "owner");
	pack_cstr(pk, m->owner);
	pack_cstr(pk, "ttl");
	msgpack_pack_uint32(pk, m->ttl_ms);
	pack_cstr(pk, "left");
	msgpack_pack_uint32(pk, m->expires_in_ms);
	pack_cstr(pk, "meta");
	pack_meta(pk, m->meta, m->n_meta);
}

int rdmx__reg_encode_request(const struct rdmx__reg_request *r, msgpack_sbuffer *out)
{
	msgpack_packer pk;
	size_t n = 3;

	if (r->op < RDMX__REG_JOIN || r->op > RDMX__REG_WATCH)
		return RDMX_E_INVAL;
	n += (r->service != NULL) + (r->op == RDMX__REG_JOIN ? 3 : 0) +
	     (r->op == RDMX__REG_HEARTBEAT || r->op == RDMX__REG_LEAVE);
	msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, n);
	pack_cstr(&pk, "v");
	msgpack_pack_uint32(&pk, RDMX_REGISTRY_PROTOCOL_VERSION);
	pack_cstr(&pk, "id");
	msgpack_pack_uint64(&pk, r->id);
	pack_cstr(&pk, "op");
	pack_cstr(&pk, op_names[r->op]);
	if (r->service) {
		pack_cstr(&pk, "service");
		pack_cstr(&pk, r->service);
	}
	if (r->op == RDMX__REG_JOIN) {
		pack_cstr(&pk, "endpoint");
		pack_cstr(&pk, r->endpoint ? r->endpoint : "");
		pack_cstr(&pk, "ttl");
		msgpack_pack_uint32(&pk, r->ttl_ms);
		pack_cstr(&pk, "meta");
		pack_meta(&pk, r->meta, r->n_meta);
	}
	if (r->op == RDMX__REG_HEARTBEAT || r->op == RDMX__REG_LEAVE) {
		pack_cstr(&pk, "member");
		msgpack_pack_uint64(&pk, r->member);
	}
	return RDMX_OK;
}

int rdmx__reg_encode_response(uint64_t id, int status, const char *error, uint64_t member,
                              uint32_t ttl_ms, const struct rdmx_registry_member *const *members,
                              size_t n_members, int with_members, msgpack_sbuffer *out)
{
	msgpack_packer pk;
	size_t n = 2 + (error != NULL) + (member != 0) * 2 + (with_members != 0);

	msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, n);
	pack_cstr(&pk, "id");
	msgpack_pack_uint64(&pk, id);
	pack_cstr(&pk, "status");
	msgpack_pack_int(&pk, status);
	if (error) {
		pack_cstr(&pk, "error");
		pack_cstr(&pk, error);
	}
	if (member) {
		pack_cstr(&pk, "member");
		msgpack_pack_uint64(&pk, member);
		pack_cstr(&pk, "ttl");
		msgpack_pack_uint32(&pk, ttl_ms);
	}
	if (with_members) {
		pack_cstr(&pk, "members");
		msgpack_pack_array(&pk, n_members);
		for (size_t i = 0; i < n_members; i++)
			pack_member(&pk, members[i]);
	}
	return RDMX_OK;
}

int rdmx__reg_encode_event(enum rdmx_registry_event_type type, const struct rdmx_registry_member *m,
                           msgpack_sbuffer *out)
{
	msgpack_packer pk;

	if (type < RDMX_REGISTRY_JOINED || type > RDMX_REGISTRY_EXPIRED)
		return RDMX_E_INVAL;
	msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	pack_cstr(&pk, "event");
	pack_cstr(&pk, event_names[type]);
	pack_cstr(&pk, "member");
	pack_member(&pk, m);
	return RDMX_OK;
}

/* ---- field readers ---- */

#define BAD(...) (snprintf(why, why_len, __VA_ARGS__), RDMX_E_PROTOCOL)

static int key_is(const msgpack_object *k, const char *name)
{
	size_t n = strlen(name);

	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
	       memcmp(k->via.str.ptr, name, n) == 0;
}

static int get_str(const msgpack_object *o, size_t max, int (*valid)(const char *),
                   const char *field, char **out, char *why, size_t why_len)
{
	char *s;

	if (o->type != MSGPACK_OBJECT_STR)
		return BAD("field '%s' is not a string", field);
	if (o->via.str.size > max)
		return BAD("field '%s' longer than %zu bytes", field, max);
	if (memchr(o->via.str.ptr, '\0', o->via.str.size))
		return BAD("field '%s' holds a NUL byte", field);
	s = strndup(o->via.str.ptr, o->via.str.size);
	if (!s) {
		snprintf(why, why_len, "out of memory");
		return RDMX_E_NOMEM;
	}
	if (!valid(s)) {
		free(s);
		return BAD("field '%s' has characters or a length not allowed", field);
	}
	free(*out);
	*out = s;
	return RDMX_OK;
}

static int get_u64(const msgpack_object *o, uint64_t max, const char *field, uint64_t *out,
                   char *why, size_t why_len)
{
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return BAD("field '%s' is not an unsigned integer", field);
	if (o->via.u64 > max)
		return BAD("field '%s' out of range", field);
	*out = o->via.u64;
	return RDMX_OK;
}

static int get_status(const msgpack_object *o, int *out, char *why, size_t why_len)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 == 0) {
		*out = 0;
		return RDMX_OK;
	}
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER && o->via.i64 >= -1000) {
		*out = (int)o->via.i64;
		return RDMX_OK;
	}
	return BAD("field 'status' is not a status code");
}

static void meta_free(struct rdmx_registry_kv *meta, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((void *)meta[i].key);
		free((void *)meta[i].value);
	}
	free(meta);
}

static int get_meta(const msgpack_object *o, struct rdmx_registry_kv **out, size_t *n_out,
                    char *why, size_t why_len)
{
	struct rdmx_registry_kv *meta;
	uint32_t n;
	int ret;

	if (o->type != MSGPACK_OBJECT_MAP)
		return BAD("field 'meta' is not a map");
	n = o->via.map.size;
	if (n > RDMX_REGISTRY_MAX_META)
		return BAD("more than %u metadata entries", RDMX_REGISTRY_MAX_META);
	meta = calloc(n ? n : 1, sizeof(*meta));
	if (!meta) {
		snprintf(why, why_len, "out of memory");
		return RDMX_E_NOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		char *k = NULL, *v = NULL;

		ret = get_str(&o->via.map.ptr[i].key, RDMX_REGISTRY_MAX_META_KEY,
		              rdmx__reg_valid_meta_key, "meta key", &k, why, why_len);
		if (!ret)
			ret = get_str(&o->via.map.ptr[i].val, RDMX_REGISTRY_MAX_META_VALUE,
			              rdmx__reg_valid_meta_value, "meta value", &v, why, why_len);
		for (uint32_t j = 0; !ret && j < i; j++)
			if (strcmp(meta[j].key, k) == 0)
				ret = BAD("duplicate metadata key '%s'", k);
		if (ret) {
			free(k);
			free(v);
			meta_free(meta, i);
			return ret;
		}
		meta[i].key = k;
		meta[i].value = v;
	}
	/* map_keys refused a second "meta": *out is still empty here */
	*out = meta;
	*n_out = n;
	return RDMX_OK;
}

/* Checks a map and that no key repeats: keys[] names the known keys, seen
 * gets bit i for keys[i]; unknown keys are skipped. Returns the index of
 * each entry's key through idx[] (-1 unknown). */
static int map_keys(const msgpack_object *o, const char *const *keys, size_t n_keys, int *idx,
                    const char *what, char *why, size_t why_len)
{
	uint32_t seen = 0;

	if (o->type != MSGPACK_OBJECT_MAP)
		return BAD("%s is not a map", what);
	if (o->via.map.size > MAX_MAP_KEYS)
		return BAD("%s has more than %d keys", what, MAX_MAP_KEYS);
	for (uint32_t i = 0; i < o->via.map.size; i++) {
		const msgpack_object *k = &o->via.map.ptr[i].key;

		if (k->type != MSGPACK_OBJECT_STR)
			return BAD("%s has a key that is not a string", what);
		idx[i] = -1;
		for (size_t j = 0; j < n_keys; j++) {
			if (key_is(k, keys[j])) {
				if (seen & (1u << j))
					return BAD("%s repeats key '%s'", what, keys[j]);
				seen |= 1u << j;
				idx[i] = (int)j;
			}
		}
	}
	return RDMX_OK;
}

/* ---- members ---- */

void rdmx__reg_member_fini(struct rdmx_registry_member *m)
{
	free((void *)m->service);
	free((void *)m->endpoint);
	free((void *)m->owner);
	meta_free((struct rdmx_registry_kv *)m->meta, m->n_meta);
	memset(m, 0, sizeof(*m));
}

static char *dup_or_null(const char *s, int *fail)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*fail = 1;
	return d;
}

int rdmx__reg_member_copy(struct rdmx_registry_member *dst, const struct rdmx_registry_member *src)
{
	struct rdmx_registry_kv *meta = calloc(src->n_meta ? src->n_meta : 1, sizeof(*meta));
	int fail = !meta;

	*dst = *src;
	dst->meta = NULL;
	dst->n_meta = 0;
	dst->service = dup_or_null(src->service, &fail);
	dst->endpoint = dup_or_null(src->endpoint, &fail);
	dst->owner = dup_or_null(src->owner, &fail);
	for (size_t i = 0; meta && i < src->n_meta; i++) {
		meta[i].key = dup_or_null(src->meta[i].key, &fail);
		meta[i].value = dup_or_null(src->meta[i].value, &fail);
	}
	dst->meta = meta;
	dst->n_meta = meta ? src->n_meta : 0;
	if (fail) {
		rdmx__reg_member_fini(dst);
		return RDMX_E_NOMEM;
	}
	return RDMX_OK;
}

static int get_member(const msgpack_object *o, struct rdmx_registry_member *m, char *why,
                      size_t why_len)
{
	static const char *const keys[] = {"id",  "service", "endpoint", "owner",
	                                   "ttl", "left",    "meta"};
	int idx[MAX_MAP_KEYS];
	char *service = NULL, *endpoint = NULL, *owner = NULL;
	struct rdmx_registry_kv *meta = NULL;
	size_t n_meta = 0;
	uint64_t id = 0, ttl = 0, left = 0;
	int ret = map_keys(o, keys, 7, idx, "member", why, why_len);

	for (uint32_t i = 0; !ret && i < o->via.map.size; i++) {
		const msgpack_object *v = &o->via.map.ptr[i].val;

		switch (idx[i]) {
		case 0:
			ret = get_u64(v, UINT64_MAX, "id", &id, why, why_len);
			break;
		case 1:
			ret = get_str(v, RDMX_REGISTRY_MAX_SERVICE, rdmx__reg_valid_service,
			              "service", &service, why, why_len);
			break;
		case 2:
			ret = get_str(v, RDMX_REGISTRY_MAX_ENDPOINT, rdmx__reg_valid_endpoint,
			              "endpoint", &endpoint, why, why_len);
			break;
		case 3:
			ret = get_str(v, RDMX_REGISTRY_MAX_OWNER, valid_owner, "owner", &owner, why,
			              why_len);
			break;
		case 4:
			ret = get_u64(v, UINT32_MAX, "ttl", &ttl, why, why_len);
			break;
		case 5:
			ret = get_u64(v, UINT32_MAX, "left", &left, why, why_len);
			break;
		case 6:
			ret = get_meta(v, &meta, &n_meta, why, why_len);
			break;
		default:
			break;
		}
	}
	if (!ret && (!id || !service || !endpoint || !owner))
		ret = BAD("member lacks id, service, endpoint or owner");
	if (ret) {
		free(service);
		free(endpoint);
		free(owner);
		meta_free(meta, n_meta);
		return ret;
	}
	m->id = id;
	m->service = service;
	m->endpoint = endpoint;
	m->owner = owner;
	m->ttl_ms = (uint32_t)ttl;
	m->expires_in_ms = (uint32_t)left;
	m->meta = meta;
	m->n_meta = meta ? n_meta : 0;
	if (!meta) {
		m->meta = calloc(1, sizeof(*m->meta));
		if (!m->meta) {
			rdmx__reg_member_fini(m);
			snprintf(why, why_len, "out of memory");
			return RDMX_E_NOMEM;
		}
	}
	return RDMX_OK;
}

static int get_members(const msgpack_object *o, struct rdmx_registry_members **out, char *why,
                       size_t why_len)
{
	struct rdmx_registry_members *ms;
	int ret = RDMX_OK;

	if (o->type != MSGPACK_OBJECT_ARRAY)
		return BAD("field 'members' is not an array");
	if (o->via.array.size > MAX_MEMBERS_IN_REPLY)
		return BAD("more than %u members in one answer", MAX_MEMBERS_IN_REPLY);
	ms = calloc(1, sizeof(*ms));
	if (ms)
		ms->items = calloc(o->via.array.size ? o->via.array.size : 1, sizeof(*ms->items));
	if (!ms || !ms->items) {
		free(ms);
		snprintf(why, why_len, "out of memory");
		return RDMX_E_NOMEM;
	}
	for (uint32_t i = 0; !ret && i < o->via.array.size; i++) {
		ret = get_member(&o->via.array.ptr[i], &ms->items[i], why, why_len);
		if (!ret)
			ms->count++;
	}
	if (ret) {
		rdmx_registry_members_free(&ms);
		return ret;
	}
	if (*out)
		rdmx_registry_members_free(out);
	*out = ms;
	return RDMX_OK;
}

int rdmx_registry_members_free(struct rdmx_registry_members **members)
{
	if (!members || !*members)
		return RDMX_OK;
	for (size_t i = 0; i < (*members)->count; i++)
		rdmx__reg_member_fini(&(*members)->items[i]);
	free((*members)->items);
	free(*members);
	*members = NULL;
	return RDMX_OK;
}

int rdmx_registry_event_free(struct rdmx_registry_event **event)
{
	if (!event || !*event)
		return RDMX_OK;
	rdmx__reg_member_fini(&(*event)->member);
	free(*event);
	*event = NULL;
	return RDMX_OK;
}

/* ---- top level ---- */

static int unpack(const void *buf, size_t len, msgpack_unpacked *u, char *why, size_t why_len)
{
	size_t off;

	if (rdmx__msgpack_precheck(buf, len))
		return BAD("malformed msgpack (bad length, depth over 8, or trailing bytes)");
	msgpack_unpacked_init(u);
	off = 0;
	if (msgpack_unpack_next(u, buf, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len) {
		msgpack_unpacked_destroy(u);
		return BAD("malformed msgpack");
	}
	return RDMX_OK;
}

void rdmx__reg_request_fini(struct rdmx__reg_request *r)
{
	free(r->service);
	free(r->endpoint);
	meta_free(r->meta, r->n_meta);
	memset(r, 0, sizeof(*r));
}

static int get_op(const msgpack_object *o, enum rdmx__reg_op *op, char *why, size_t why_len)
{
	if (o->type != MSGPACK_OBJECT_STR)
		return BAD("field 'op' is not a string");
	for (int i = RDMX__REG_JOIN; i <= RDMX__REG_WATCH; i++) {
		if (key_is(o, op_names[i])) {
			*op = (enum rdmx__reg_op)i;
			return RDMX_OK;
		}
	}
	return BAD("unknown op");
}

static int check_request(const struct rdmx__reg_request *r, int have_v, int have_id, char *why,
                         size_t why_len)
{
	if (!have_v)
		return BAD("request without protocol version");
	if (!have_id || !r->op)
		return BAD("request without id or op");
	switch (r->op) {
	case RDMX__REG_JOIN:
		if (!r->service || !r->endpoint)
			return BAD("join without service or endpoint");
		break;
	case RDMX__REG_HEARTBEAT:
	case RDMX__REG_LEAVE:
		if (!r->member)
			return BAD("%s without member", op_names[r->op]);
		break;
	case RDMX__REG_LOOKUP:
		if (!r->service)
			return BAD("lookup without service");
		break;
	default:
		break;
	}
	return RDMX_OK;
}

int rdmx__reg_decode_request(const void *buf, size_t len, struct rdmx__reg_request *out, char *why,
                             size_t why_len)
{
	static const char *const keys[] = {"v",        "id",   "op",  "service",
	                                   "endpoint", "meta", "ttl", "member"};
	struct rdmx__reg_request r = {0};
	int idx[MAX_MAP_KEYS];
	msgpack_unpacked u;
	const msgpack_object *o;
	uint64_t v = 0, ttl = 0;
	int have_v = 0, have_id = 0;
	int ret = unpack(buf, len, &u, why, why_len);

	if (ret)
		return ret;
	o = &u.data;
	ret = map_keys(o, keys, 8, idx, "request", why, why_len);
	for (uint32_t i = 0; !ret && i < o->via.map.size; i++) {
		const msgpack_object *val = &o->via.map.ptr[i].val;

		switch (idx[i]) {
		case 0:
			ret = get_u64(val, UINT32_MAX, "v", &v, why, why_len);
			if (!ret && v != RDMX_REGISTRY_PROTOCOL_VERSION)
				ret = BAD("protocol version %llu not supported (want %u)",
				          (unsigned long long)v, RDMX_REGISTRY_PROTOCOL_VERSION);
			have_v = 1;
			break;
		case 1:
			ret = get_u64(val, UINT64_MAX, "id", &r.id, why, why_len);
			have_id = 1;
			break;
		case 2:
			ret = get_op(val, &r.op, why, why_len);
			break;
		case 3:
			ret = get_str(val, RDMX_REGISTRY_MAX_SERVICE, rdmx__reg_valid_service,
			              "service", &r.service, why, why_len);
			break;
		case 4:
			ret = get_str(val, RDMX_REGISTRY_MAX_ENDPOINT, rdmx__reg_valid_endpoint,
			              "endpoint", &r.endpoint, why, why_len);
			break;
		case 5:
			ret = get_meta(val, &r.meta, &r.n_meta, why, why_len);
			break;
		case 6:
			ret = get_u64(val, UINT32_MAX, "ttl", &ttl, why, why_len);
			break;
		case 7:
			ret = get_u64(val, UINT64_MAX, "member", &r.member, why, why_len);
			break;
		default:
			break;
		}
	}
	msgpack_unpacked_destroy(&u);
	r.ttl_ms = (uint32_t)ttl;
	if (!ret)
		ret = check_request(&r, have_v, have_id, why, why_len);
	if (ret) {
		rdmx__reg_request_fini(&r);
		return ret;
	}
	*out = r;
	return RDMX_OK;
}

void rdmx__reg_reply_fini(struct rdmx__reg_reply *r)
{
	free(r->error);
	rdmx_registry_members_free(&r->members);
	rdmx_registry_event_free(&r->event);
	memset(r, 0, sizeof(*r));
}

static int get_event(const msgpack_object *type, const msgpack_object *member,
                     struct rdmx_registry_event **out, char *why, size_t why_len)
{
	struct rdmx_registry_event *ev;
	int t = 0, ret;

	if (type->type != MSGPACK_OBJECT_STR)
		return BAD("field 'event' is not a string");
	for (int i = RDMX_REGISTRY_JOINED; i <= RDMX_REGISTRY_EXPIRED; i++)
		if (key_is(type, event_names[i]))
			t = i;
	if (!t)
		return BAD("unknown event");
	if (!member || member->type != MSGPACK_OBJECT_MAP)
		return BAD("event without member");
	ev = calloc(1, sizeof(*ev));
	if (!ev) {
		snprintf(why, why_len, "out of memory");
		return RDMX_E_NOMEM;
	}
	ev->type = (enum rdmx_registry_event_type)t;
	ret = get_member(member, &ev->member, why, why_len);
	if (ret) {
		free(ev);
		return ret;
	}
	*out = ev;
	return RDMX_OK;
}

int rdmx__reg_decode_reply(const void *buf, size_t len, struct rdmx__reg_reply *out, char *why,
                           size_t why_len)
{
	static const char *const keys[] = {"id",  "status",  "error", "member",
	                                   "ttl", "members", "event"};
	struct rdmx__reg_reply r = {0};
	int idx[MAX_MAP_KEYS];
	msgpack_unpacked u;
	const msgpack_object *o, *ev_type = NULL, *ev_member = NULL;
	uint64_t ttl = 0;
	int have_id = 0, have_status = 0;
	int ret = unpack(buf, len, &u, why, why_len);

	if (ret)
		return ret;
	o = &u.data;
	ret = map_keys(o, keys, 7, idx, "reply", why, why_len);
	for (uint32_t i = 0; !ret && i < o->via.map.size; i++) {
		const msgpack_object *val = &o->via.map.ptr[i].val;

		switch (idx[i]) {
		case 0:
			ret = get_u64(val, UINT64_MAX, "id", &r.id, why, why_len);
			have_id = 1;
			break;
		case 1:
			ret = get_status(val, &r.status, why, why_len);
			have_status = 1;
			break;
		case 2:
			ret = get_str(val, MAX_ERROR_TEXT, valid_error_text, "error", &r.error, why,
			              why_len);
			break;
		case 3:
			/* an id in responses, a member map in events */
			if (val->type == MSGPACK_OBJECT_MAP)
				ev_member = val;
			else
				ret = get_u64(val, UINT64_MAX, "member", &r.member, why, why_len);
			break;
		case 4:
			ret = get_u64(val, UINT32_MAX, "ttl", &ttl, why, why_len);
			break;
		case 5:
			ret = get_members(val, &r.members, why, why_len);
			break;
		case 6:
			ev_type = val;
			break;
		default:
			break;
		}
	}
	r.ttl_ms = (uint32_t)ttl;
	if (!ret && ev_type) {
		r.is_event = 1;
		ret = get_event(ev_type, ev_member, &r.event, why, why_len);
	} else if (!ret && (!have_id || !have_status)) {
		ret = BAD("response without id or status");
	}
	msgpack_unpacked_destroy(&u);
	if (ret) {
		rdmx__reg_reply_fini(&r);
		return ret;
	}
	*out = r;
	return RDMX_OK;
}
