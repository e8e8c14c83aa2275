/* Registry messages (see registry_proto.h): the field checks and the
 * conversions between the public structs and the rdmx__wire.Reg* messages of
 * secure/proto/registry.proto, which the code rdmx-gen generates from it
 * encodes and decodes (the project's codec). The bytes come from a peer with
 * a certificate of the cluster, which is no reason to trust them: the
 * generated decoder bounds every length, count and depth and refuses wrong
 * types and trailing bytes; every field is then checked here. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/codec.h>
#include <rdmx/status.h>

#include "registry.rdmx.h"
#include "registry_proto.h"

#define MAX_ERROR_TEXT 512
#define MAX_MEMBERS_IN_REPLY 100000u
/* message levels below a RegReply: response, members list, member, meta */
#define MAX_DEPTH 5

/* the public enums are the wire's numbers */
_Static_assert((int)RDMX__REG_JOIN == (int)rdmx__wire_RegOp_REG_JOIN &&
                   (int)RDMX__REG_WATCH == (int)rdmx__wire_RegOp_REG_WATCH,
               "op numbers");
_Static_assert((int)RDMX_REGISTRY_JOINED == (int)rdmx__wire_RegEventType_REG_JOINED &&
                   (int)RDMX_REGISTRY_EXPIRED == (int)rdmx__wire_RegEventType_REG_EXPIRED,
               "event numbers");

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

int rdmx__reg_valid_owner(const char *s)
{
	return s && all_chars(s, 1, RDMX_REGISTRY_MAX_OWNER, graph_char);
}

static int valid_error_text(const char *s)
{
	return all_chars(s, 0, MAX_ERROR_TEXT, print_char);
}

static const char *const op_names[] = {
    [RDMX__REG_JOIN] = "join",     [RDMX__REG_HEARTBEAT] = "heartbeat", [RDMX__REG_LEAVE] = "leave",
    [RDMX__REG_LOOKUP] = "lookup", [RDMX__REG_LIST] = "list",           [RDMX__REG_WATCH] = "watch",
};

const char *rdmx__reg_op_name(enum rdmx__reg_op op)
{
	return op >= RDMX__REG_JOIN && op <= RDMX__REG_WATCH ? op_names[op] : "unknown";
}

static void meta_free(struct rdmx_registry_kv *meta, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((void *)meta[i].key);
		free((void *)meta[i].value);
	}
	free(meta);
}

/* ---- encoding ---- */

/* Encodes into a malloc'd buffer, *buf and *len written on success. */
#define ENCODE(type, msg, buf, len)                                                                \
	do {                                                                                       \
		size_t n_ = rdmx__wire_##type##_encoded_size(msg);                                 \
		void *p_ = malloc(n_ ? n_ : 1);                                                    \
		if (!p_)                                                                           \
			return RDMX_E_NOMEM;                                                       \
		if (rdmx__wire_##type##_encode(msg, p_, n_)) {                                     \
			free(p_);                                                                  \
			return RDMX_E_INVAL;                                                       \
		}                                                                                  \
		*(buf) = p_;                                                                       \
		*(len) = n_;                                                                       \
	} while (0)

/* The entries point at the caller's strings; kv[] holds n entries. */
static void meta_to_wire(const struct rdmx_registry_kv *meta, size_t n,
                         rdmx__wire_RegMember_MetaEntry *kv)
{
	for (size_t i = 0; i < n; i++) {
		kv[i].key = rdmx_str_c(meta[i].key);
		kv[i].value = rdmx_str_c(meta[i].value);
	}
}

static void member_to_wire(const struct rdmx_registry_member *m, rdmx__wire_RegMember *w,
                           rdmx__wire_RegMember_MetaEntry *kv)
{
	rdmx__wire_RegMember_init(w);
	w->id = m->id;
	w->service = rdmx_str_c(m->service);
	w->endpoint = rdmx_str_c(m->endpoint);
	w->owner = rdmx_str_c(m->owner);
	w->ttl = m->ttl_ms;
	w->left = m->expires_in_ms;
	meta_to_wire(m->meta, m->n_meta, kv);
	w->meta = kv;
	w->n_meta = m->n_meta;
}

int rdmx__reg_encode_request(const struct rdmx__reg_request *r, void **buf, size_t *len)
{
	rdmx__wire_RegRequest_MetaEntry kv[RDMX_REGISTRY_MAX_META];
	rdmx__wire_RegRequest w;

	if (!r || !buf || !len || r->op < RDMX__REG_JOIN || r->op > RDMX__REG_WATCH ||
	    r->n_meta > RDMX_REGISTRY_MAX_META || (r->n_meta && !r->meta))
		return RDMX_E_INVAL;
	rdmx__wire_RegRequest_init(&w);
	w.version = RDMX_REGISTRY_PROTOCOL_VERSION;
	w.id = r->id;
	w.op = (rdmx__wire_RegOp)r->op;
	if (r->service) {
		w.has_service = true;
		w.service = rdmx_str_c(r->service);
	}
	if (r->op == RDMX__REG_JOIN) {
		w.endpoint = rdmx_str_c(r->endpoint);
		w.ttl = r->ttl_ms;
		for (size_t i = 0; i < r->n_meta; i++) {
			kv[i].key = rdmx_str_c(r->meta[i].key);
			kv[i].value = rdmx_str_c(r->meta[i].value);
		}
		w.meta = kv;
		w.n_meta = r->n_meta;
	}
	if (r->op == RDMX__REG_HEARTBEAT || r->op == RDMX__REG_LEAVE)
		w.member = r->member;
	ENCODE(RegRequest, &w, buf, len);
	return RDMX_OK;
}

int rdmx__reg_encode_response(uint64_t id, int status, const char *error, uint64_t member,
                              uint32_t ttl_ms, const struct rdmx_registry_member *const *members,
                              size_t n_members, int with_members, void **buf, size_t *len)
{
	rdmx__wire_RegMember_MetaEntry *kv = NULL;
	rdmx__wire_RegMember *items = NULL;
	rdmx__wire_RegMembers list;
	rdmx__wire_RegResponse resp;
	rdmx__wire_RegReply w;
	size_t n_kv = 0, at = 0;
	int ret = RDMX_OK;

	if (!buf || !len || (n_members && !members))
		return RDMX_E_INVAL;
	rdmx__wire_RegResponse_init(&resp);
	resp.id = id;
	resp.status = status;
	if (error) {
		resp.has_error = true;
		resp.error = rdmx_str_c(error);
	}
	resp.member = member;
	resp.ttl = ttl_ms;
	if (with_members) {
		for (size_t i = 0; i < n_members; i++)
			n_kv += members[i]->n_meta;
		items = calloc(n_members ? n_members : 1, sizeof(*items));
		kv = calloc(n_kv ? n_kv : 1, sizeof(*kv));
		if (!items || !kv) {
			ret = RDMX_E_NOMEM;
			goto out;
		}
		for (size_t i = 0; i < n_members; i++) {
			member_to_wire(members[i], &items[i], kv + at);
			at += members[i]->n_meta;
		}
		rdmx__wire_RegMembers_init(&list);
		list.items = items;
		list.n_items = n_members;
		resp.members = &list;
	}
	rdmx__wire_RegReply_init(&w);
	w.kind_case = rdmx__wire_RegReply_kind_response;
	w.response = &resp;
	ENCODE(RegReply, &w, buf, len);
out:
	free(items);
	free(kv);
	return ret;
}

int rdmx__reg_encode_event(enum rdmx_registry_event_type type, const struct rdmx_registry_member *m,
                           void **buf, size_t *len)
{
	rdmx__wire_RegMember_MetaEntry kv[RDMX_REGISTRY_MAX_META];
	rdmx__wire_RegMember member;
	rdmx__wire_RegEvent ev;
	rdmx__wire_RegReply w;

	if (type < RDMX_REGISTRY_JOINED || type > RDMX_REGISTRY_EXPIRED || !m || !buf || !len ||
	    m->n_meta > RDMX_REGISTRY_MAX_META)
		return RDMX_E_INVAL;
	member_to_wire(m, &member, kv);
	rdmx__wire_RegEvent_init(&ev);
	ev.type = (rdmx__wire_RegEventType)type;
	ev.member = &member;
	rdmx__wire_RegReply_init(&w);
	w.kind_case = rdmx__wire_RegReply_kind_event;
	w.event = &ev;
	ENCODE(RegReply, &w, buf, len);
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

/* ---- field checks ---- */

#define BAD(...) (snprintf(why, why_len, __VA_ARGS__), RDMX_E_PROTOCOL)
#define NOMEM() (snprintf(why, why_len, "out of memory"), RDMX_E_NOMEM)

/* A copy of a decoded string that passes valid(), into *out (freed first). */
static int get_str(struct rdmx_str s, size_t max, int (*valid)(const char *), const char *field,
                   char **out, char *why, size_t why_len)
{
	char *c;

	if (s.len > max)
		return BAD("field '%s' longer than %zu bytes", field, max);
	if (s.len && memchr(s.data, '\0', s.len))
		return BAD("field '%s' holds a NUL byte", field);
	c = strndup(s.len ? s.data : "", s.len);
	if (!c)
		return NOMEM();
	if (!valid(c)) {
		free(c);
		return BAD("field '%s' has characters or a length not allowed", field);
	}
	free(*out);
	*out = c;
	return RDMX_OK;
}

/* The meta entries of a request or a member: the two entry types have the
 * same layout (key 1, value 2), read through key()/value(). */
static int get_meta(const void *entries, size_t n, size_t entry_size,
                    struct rdmx_str (*key)(const void *), struct rdmx_str (*value)(const void *),
                    struct rdmx_registry_kv **out, size_t *n_out, char *why, size_t why_len)
{
	struct rdmx_registry_kv *meta;
	int ret;

	if (n > RDMX_REGISTRY_MAX_META)
		return BAD("more than %u metadata entries", RDMX_REGISTRY_MAX_META);
	meta = calloc(n ? n : 1, sizeof(*meta));
	if (!meta)
		return NOMEM();
	for (size_t i = 0; i < n; i++) {
		const void *e = (const char *)entries + i * entry_size;
		char *k = NULL, *v = NULL;

		ret = get_str(key(e), RDMX_REGISTRY_MAX_META_KEY, rdmx__reg_valid_meta_key,
		              "meta key", &k, why, why_len);
		if (!ret)
			ret = get_str(value(e), RDMX_REGISTRY_MAX_META_VALUE,
			              rdmx__reg_valid_meta_value, "meta value", &v, why, why_len);
		/* the codec keeps map entries in wire order: a key given twice
		 * would be two entries of one member */
		for (size_t j = 0; !ret && j < i; j++)
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
	*out = meta;
	*n_out = n;
	return RDMX_OK;
}

static struct rdmx_str req_key(const void *e)
{
	return ((const rdmx__wire_RegRequest_MetaEntry *)e)->key;
}

static struct rdmx_str req_value(const void *e)
{
	return ((const rdmx__wire_RegRequest_MetaEntry *)e)->value;
}

static struct rdmx_str member_key(const void *e)
{
	return ((const rdmx__wire_RegMember_MetaEntry *)e)->key;
}

static struct rdmx_str member_value(const void *e)
{
	return ((const rdmx__wire_RegMember_MetaEntry *)e)->value;
}

static int get_member(const rdmx__wire_RegMember *w, struct rdmx_registry_member *m, char *why,
                      size_t why_len)
{
	struct rdmx_registry_member tmp = {0};
	struct rdmx_registry_kv *meta = NULL;
	int ret = RDMX_OK;

	if (!w->id || !w->service.len || !w->endpoint.len || !w->owner.len)
		return BAD("member lacks id, service, endpoint or owner");
	tmp.id = w->id;
	tmp.ttl_ms = w->ttl;
	tmp.expires_in_ms = w->left;
	ret = get_str(w->service, RDMX_REGISTRY_MAX_SERVICE, rdmx__reg_valid_service, "service",
	              (char **)&tmp.service, why, why_len);
	if (!ret)
		ret = get_str(w->endpoint, RDMX_REGISTRY_MAX_ENDPOINT, rdmx__reg_valid_endpoint,
		              "endpoint", (char **)&tmp.endpoint, why, why_len);
	if (!ret)
		ret = get_str(w->owner, RDMX_REGISTRY_MAX_OWNER, rdmx__reg_valid_owner, "owner",
		              (char **)&tmp.owner, why, why_len);
	if (!ret)
		ret = get_meta(w->meta, w->n_meta, sizeof(*w->meta), member_key, member_value,
		               &meta, &tmp.n_meta, why, why_len);
	tmp.meta = meta;
	if (ret) {
		rdmx__reg_member_fini(&tmp);
		return ret;
	}
	*m = tmp;
	return RDMX_OK;
}

static int get_members(const rdmx__wire_RegMembers *w, struct rdmx_registry_members **out,
                       char *why, size_t why_len)
{
	struct rdmx_registry_members *ms;
	int ret = RDMX_OK;

	if (w->n_items > MAX_MEMBERS_IN_REPLY)
		return BAD("more than %u members in one answer", MAX_MEMBERS_IN_REPLY);
	ms = calloc(1, sizeof(*ms));
	if (ms)
		ms->items = calloc(w->n_items ? w->n_items : 1, sizeof(*ms->items));
	if (!ms || !ms->items) {
		free(ms);
		return NOMEM();
	}
	for (size_t i = 0; !ret && i < w->n_items; i++) {
		ret = get_member(&w->items[i], &ms->items[i], why, why_len);
		if (!ret)
			ms->count++;
	}
	if (ret) {
		rdmx_registry_members_free(&ms);
		return ret;
	}
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

void rdmx__reg_request_fini(struct rdmx__reg_request *r)
{
	free(r->service);
	free(r->endpoint);
	meta_free(r->meta, r->n_meta);
	memset(r, 0, sizeof(*r));
}

static int check_request(const rdmx__wire_RegRequest *w, char *why, size_t why_len)
{
	if (!w->version)
		return BAD("request without protocol version");
	if (w->version != RDMX_REGISTRY_PROTOCOL_VERSION)
		return BAD("protocol version %u not supported (want %u)", w->version,
		           RDMX_REGISTRY_PROTOCOL_VERSION);
	if (!w->id || w->op == rdmx__wire_RegOp_REG_OP_NONE)
		return BAD("request without id or op");
	if (w->op < rdmx__wire_RegOp_REG_JOIN || w->op > rdmx__wire_RegOp_REG_WATCH)
		return BAD("unknown op %d", (int)w->op);
	switch (w->op) {
	case rdmx__wire_RegOp_REG_JOIN:
		if (!w->has_service || !w->endpoint.len)
			return BAD("join without service or endpoint");
		break;
	case rdmx__wire_RegOp_REG_HEARTBEAT:
	case rdmx__wire_RegOp_REG_LEAVE:
		if (!w->member)
			return BAD("%s without member", op_names[w->op]);
		break;
	case rdmx__wire_RegOp_REG_LOOKUP:
		if (!w->has_service)
			return BAD("lookup without service");
		break;
	default:
		break;
	}
	return RDMX_OK;
}

static int request_from_wire(const rdmx__wire_RegRequest *w, struct rdmx__reg_request *r, char *why,
                             size_t why_len)
{
	int ret = check_request(w, why, why_len);

	if (ret)
		return ret;
	r->id = w->id;
	r->op = (enum rdmx__reg_op)w->op;
	r->ttl_ms = w->ttl;
	r->member = w->member;
	if (w->has_service)
		ret = get_str(w->service, RDMX_REGISTRY_MAX_SERVICE, rdmx__reg_valid_service,
		              "service", &r->service, why, why_len);
	if (!ret && w->endpoint.len)
		ret = get_str(w->endpoint, RDMX_REGISTRY_MAX_ENDPOINT, rdmx__reg_valid_endpoint,
		              "endpoint", &r->endpoint, why, why_len);
	if (!ret)
		ret = get_meta(w->meta, w->n_meta, sizeof(*w->meta), req_key, req_value, &r->meta,
		               &r->n_meta, why, why_len);
	return ret;
}

/* The decode's arena: a first block on the stack, the rest on the heap, at
 * most ALLOC_PER_BYTE times the input plus ALLOC_SLACK. A real message needs
 * far less (its smallest metadata entry, 3 bytes, takes 32 of arena; a
 * member, 20 bytes or more, 80), so a frame of empty sub-messages crafted to
 * make the decoder allocate is refused (RDMX_E_TOO_BIG) instead of taking
 * 80 times its size. */
#define ARENA_STACK 2048
#define ALLOC_PER_BYTE 16
#define ALLOC_SLACK 16384

static struct rdmx_decode_opts decode_opts(size_t len)
{
	struct rdmx_decode_opts o = {.max_depth = MAX_DEPTH};

	o.max_alloc = len < (SIZE_MAX - ALLOC_SLACK) / ALLOC_PER_BYTE
	                  ? len * ALLOC_PER_BYTE + ALLOC_SLACK
	                  : SIZE_MAX;
	return o;
}

int rdmx__reg_decode_request(const void *buf, size_t len, struct rdmx__reg_request *out, char *why,
                             size_t why_len)
{
	_Alignas(8) unsigned char mem[ARENA_STACK];
	const struct rdmx_decode_opts opts = decode_opts(len);
	struct rdmx__reg_request r = {0};
	struct rdmx_arena arena;
	rdmx__wire_RegRequest w;
	int ret;

	if (!buf || !len || !out)
		return BAD("empty request");
	rdmx_arena_init(&arena, mem, sizeof(mem), 0);
	ret = rdmx__wire_RegRequest_decode(&w, buf, len, &arena, &opts);
	if (ret)
		ret = BAD("malformed request: does not decode as registry protocol version %u (%s)",
		          RDMX_REGISTRY_PROTOCOL_VERSION, rdmx_err_name(ret));
	else
		ret = request_from_wire(&w, &r, why, why_len);
	rdmx_arena_fini(&arena);
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

static int response_from_wire(const rdmx__wire_RegResponse *w, struct rdmx__reg_reply *r, char *why,
                              size_t why_len)
{
	int ret = RDMX_OK;

	if (!w->id)
		return BAD("response without id");
	if (w->status > 0 || w->status < -1000)
		return BAD("field 'status' is not a status code");
	r->id = w->id;
	r->status = w->status;
	r->member = w->member;
	r->ttl_ms = w->ttl;
	if (w->has_error)
		ret = get_str(w->error, MAX_ERROR_TEXT, valid_error_text, "error", &r->error, why,
		              why_len);
	if (!ret && w->members)
		ret = get_members(w->members, &r->members, why, why_len);
	return ret;
}

static int event_from_wire(const rdmx__wire_RegEvent *w, struct rdmx__reg_reply *r, char *why,
                           size_t why_len)
{
	struct rdmx_registry_event *ev;
	int ret;

	if (w->type < rdmx__wire_RegEventType_REG_JOINED ||
	    w->type > rdmx__wire_RegEventType_REG_EXPIRED)
		return BAD("unknown event %d", (int)w->type);
	if (!w->member)
		return BAD("event without member");
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return NOMEM();
	ev->type = (enum rdmx_registry_event_type)w->type;
	ret = get_member(w->member, &ev->member, why, why_len);
	if (ret) {
		free(ev);
		return ret;
	}
	r->is_event = 1;
	r->event = ev;
	return RDMX_OK;
}

int rdmx__reg_decode_reply(const void *buf, size_t len, struct rdmx__reg_reply *out, char *why,
                           size_t why_len)
{
	_Alignas(8) unsigned char mem[ARENA_STACK];
	const struct rdmx_decode_opts opts = decode_opts(len);
	struct rdmx__reg_reply r = {0};
	struct rdmx_arena arena;
	rdmx__wire_RegReply w;
	int ret;

	if (!buf || !len || !out)
		return BAD("empty message");
	rdmx_arena_init(&arena, mem, sizeof(mem), 0);
	ret = rdmx__wire_RegReply_decode(&w, buf, len, &arena, &opts);
	if (ret)
		ret = BAD("malformed message: does not decode as registry protocol version %u (%s)",
		          RDMX_REGISTRY_PROTOCOL_VERSION, rdmx_err_name(ret));
	else if (w.kind_case == rdmx__wire_RegReply_kind_response)
		ret = response_from_wire(w.response, &r, why, why_len);
	else if (w.kind_case == rdmx__wire_RegReply_kind_event)
		ret = event_from_wire(w.event, &r, why, why_len);
	else
		ret = BAD("message is neither a response nor an event");
	rdmx_arena_fini(&arena);
	if (ret) {
		rdmx__reg_reply_fini(&r);
		return ret;
	}
	*out = r;
	return RDMX_OK;
}
