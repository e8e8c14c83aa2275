/* Schema-driven JSON <-> msgpack (pbjson.h). */
#include "pbjson.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

/* ---- schema ---- */

int pbschema_load(struct pbschema *s, const char *path, const char *const *include_dirs,
                  size_t n_include, FILE *diag)
{
	memset(s, 0, sizeof(*s));
	gen_ctx_init(&s->ctx, diag);
	s->loaded = true;
	for (size_t i = 0; i < n_include; i++)
		gen_vec_push(&s->ctx.pool, &s->ctx.include_dirs, (void *)include_dirs[i]);
	if (!gen_load(&s->ctx, path, true) || s->ctx.errors || !gen_resolve(&s->ctx)) {
		gen_flush(&s->ctx);
		return -1;
	}
	return 0;
}

void pbschema_fini(struct pbschema *s)
{
	if (s && s->loaded) {
		gen_ctx_fini(&s->ctx);
		s->loaded = false;
	}
}

const struct gen_method *pbschema_method(const struct pbschema *s, const char *full_name)
{
	const char *sep = strrchr(full_name, '/');
	size_t svc_len;

	if (!sep)
		sep = strrchr(full_name, '.');
	if (!sep)
		return NULL;
	svc_len = (size_t)(sep - full_name);
	for (int i = 0; i < s->ctx.files.n; i++) {
		const struct gen_file *f = s->ctx.files.items[i];

		for (int j = 0; j < f->services.n; j++) {
			const struct gen_service *sv = f->services.items[j];

			if (strlen(sv->full_name) != svc_len ||
			    strncmp(sv->full_name, full_name, svc_len) != 0)
				continue;
			for (int k = 0; k < sv->methods.n; k++) {
				const struct gen_method *m = sv->methods.items[k];

				if (strcmp(m->name, sep + 1) == 0)
					return m;
			}
		}
	}
	return NULL;
}

/* ---- base64 ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void base64_encode(struct jbuf *out, const unsigned char *p, size_t n)
{
	char q[4];

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		q[0] = b64[(v >> 18) & 63];
		q[1] = b64[(v >> 12) & 63];
		q[2] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		q[3] = i + 2 < n ? b64[v & 63] : '=';
		jbuf_put(out, q, 4);
	}
}

static int b64_val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

int base64_decode(const char *s, size_t n, struct jbuf *out)
{
	uint32_t acc = 0;
	int bits = 0;
	size_t pad = 0;

	while (n > 0 && s[n - 1] == '=' && pad < 2) {
		n--;
		pad++;
	}
	if ((n + pad) % 4 == 1 || (pad && (n + pad) % 4 != 0))
		return -1;
	for (size_t i = 0; i < n; i++) {
		int v = b64_val(s[i]);
		char c;

		if (v < 0)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			c = (char)((acc >> bits) & 0xff);
			jbuf_put(out, &c, 1);
		}
	}
	if (bits >= 6 || (acc & ((1u << bits) - 1)))
		return -1; /* leftover bits must be zero padding */
	if (!out->data)
		jbuf_put(out, "", 0);
	return out->oom ? -1 : 0;
}

/* ---- shared ---- */

struct conv {
	char *err;
	size_t err_len;
	char path[512];
	bool failed;
};

static int fail(struct conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct conv *c, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	if (c->failed)
		return -1;
	c->failed = true;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (c->err && c->err_len)
		snprintf(c->err, c->err_len, "%s: %s", *c->path ? c->path : "(top)", why);
	return -1;
}

static size_t path_push(struct conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t path_push(struct conv *c, const char *fmt, ...)
{
	size_t len = strlen(c->path);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->path + len, sizeof(c->path) - len, fmt, ap);
	va_end(ap);
	return len;
}

static void path_pop(struct conv *c, size_t len)
{
	c->path[len] = '\0';
}

static bool is_64(enum gen_type t)
{
	return t == GT_INT64 || t == GT_UINT64 || t == GT_SINT64 || t == GT_FIXED64 ||
	       t == GT_SFIXED64;
}

static bool is_unsigned(enum gen_type t)
{
	return t == GT_UINT32 || t == GT_UINT64 || t == GT_FIXED32 || t == GT_FIXED64;
}

static const struct gen_field *field_by_number(const struct gen_message *m, uint64_t n)
{
	for (int i = 0; i < m->fields.n; i++) {
		const struct gen_field *f = m->fields.items[i];

		if ((uint64_t)f->number == n)
			return f;
	}
	return NULL;
}

/* the proto3 JSON name: lowerCamelCase of the field name */
static void json_name(const char *name, char *out, size_t len)
{
	size_t o = 0;
	bool up = false;

	for (const char *p = name; *p && o + 1 < len; p++) {
		if (*p == '_') {
			up = true;
			continue;
		}
		out[o++] = (up && *p >= 'a' && *p <= 'z') ? (char)(*p - 32) : *p;
		up = false;
	}
	out[o] = '\0';
}

static const struct gen_field *field_by_json(const struct gen_message *m, const char *key)
{
	char camel[256];

	for (int i = 0; i < m->fields.n; i++) {
		const struct gen_field *f = m->fields.items[i];

		if (strcmp(f->name, key) == 0)
			return f;
	}
	for (int i = 0; i < m->fields.n; i++) {
		const struct gen_field *f = m->fields.items[i];

		json_name(f->name, camel, sizeof(camel));
		if (strcmp(camel, key) == 0)
			return f;
	}
	return NULL;
}

/* ---- JSON -> msgpack ---- */

static int jbuf_write(void *data, const char *buf, size_t len)
{
	struct jbuf *b = data;

	jbuf_put(b, buf, len);
	return b->oom ? -1 : 0;
}

/* integer text (JSON number or string) -> value within the type's range */
static int parse_int(struct conv *c, const struct json *j, enum gen_type t, int64_t *iv,
                     uint64_t *uv)
{
	const char *s;
	char *end;
	bool neg;

	if (j->type == JSON_STRING && !is_64(t) && t != GT_ENUM)
		return fail(c, "expected a number, got a string");
	if (j->type != JSON_NUMBER && j->type != JSON_STRING)
		return fail(c, "expected an integer, got %s", json_type_name(j->type));
	s = j->s;
	neg = s[0] == '-';
	errno = 0;
	if (strpbrk(s, ".eE")) {
		double d = strtod(s, &end);

		if (*end || !isfinite(d) || d != floor(d) || fabs(d) > 9007199254740992.0)
			return fail(c, "\"%s\" is not an integer (or not exactly one)", s);
		*iv = (int64_t)d;
		*uv = (uint64_t)(neg ? 0 : (uint64_t)d);
		neg = d < 0;
	} else if (neg) {
		*iv = strtoll(s, &end, 10);
		*uv = 0;
	} else {
		*uv = strtoull(s, &end, 10);
		*iv = (int64_t)*uv;
	}
	if (errno || *end || !*s || (s[0] == '-' && !s[1]) || s[0] == '+' || s[0] == ' ')
		return fail(c, "\"%s\" is not an integer in range", s);
	if (is_unsigned(t) && neg && *iv != 0)
		return fail(c, "%s is negative for an unsigned field", s);
	switch (t) {
	case GT_INT32:
	case GT_SINT32:
	case GT_SFIXED32:
	case GT_ENUM:
		if (neg ? *iv < INT32_MIN : *uv > INT32_MAX)
			return fail(c, "%s is out of the int32 range", s);
		break;
	case GT_UINT32:
	case GT_FIXED32:
		if (*uv > UINT32_MAX)
			return fail(c, "%s is out of the uint32 range", s);
		break;
	case GT_INT64:
	case GT_SINT64:
	case GT_SFIXED64:
		if (!neg && *uv > INT64_MAX)
			return fail(c, "%s is out of the int64 range", s);
		break;
	default:
		break;
	}
	return 0;
}

static int enc_value(struct conv *c, const struct gen_field *f, const struct json *j,
                     msgpack_packer *pk);
static int enc_message(struct conv *c, const struct gen_message *m, const struct json *j,
                       msgpack_packer *pk);

static int enc_scalar(struct conv *c, enum gen_type t, const struct gen_field *f,
                      const struct json *j, msgpack_packer *pk)
{
	int64_t iv;
	uint64_t uv;
	double d;
	char *end;

	switch (t) {
	case GT_BOOL:
		if (j->type != JSON_BOOL)
			return fail(c, "expected true or false, got %s", json_type_name(j->type));
		return j->b ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
	case GT_STRING:
		if (j->type != JSON_STRING)
			return fail(c, "expected a string, got %s", json_type_name(j->type));
		if (msgpack_pack_str(pk, j->len) || msgpack_pack_str_body(pk, j->s, j->len))
			return fail(c, "out of memory");
		return 0;
	case GT_BYTES: {
		struct jbuf raw = {0};
		int rc;

		if (j->type != JSON_STRING)
			return fail(c, "expected a base64 string, got %s", json_type_name(j->type));
		if (base64_decode(j->s, j->len, &raw)) {
			jbuf_free(&raw);
			return fail(c, "not valid base64");
		}
		rc = msgpack_pack_bin(pk, raw.len) || msgpack_pack_bin_body(pk, raw.data, raw.len);
		jbuf_free(&raw);
		return rc ? fail(c, "out of memory") : 0;
	}
	case GT_FLOAT:
	case GT_DOUBLE:
		if (j->type == JSON_STRING) {
			if (!strcmp(j->s, "NaN"))
				d = NAN;
			else if (!strcmp(j->s, "Infinity"))
				d = INFINITY;
			else if (!strcmp(j->s, "-Infinity"))
				d = -INFINITY;
			else
				return fail(c, "\"%s\" is not a number", j->s);
		} else if (j->type == JSON_NUMBER) {
			errno = 0;
			d = strtod(j->s, &end);
			if (*end || (errno == ERANGE && isinf(d)))
				return fail(c, "%s is out of range", j->s);
		} else {
			return fail(c, "expected a number, got %s", json_type_name(j->type));
		}
		if (t == GT_FLOAT) {
			if (isfinite(d) && fabs(d) > 3.4028234663852886e38)
				return fail(c, "%s is out of the float range", j->s);
			return msgpack_pack_float(pk, (float)d);
		}
		return msgpack_pack_double(pk, d);
	case GT_ENUM:
		if (j->type == JSON_STRING) {
			for (int i = 0; i < f->en->values.n; i++) {
				const struct gen_enum_value *v = f->en->values.items[i];

				if (strcmp(v->name, j->s) == 0)
					return msgpack_pack_int64(pk, v->number);
			}
			return fail(c, "\"%s\" is not a value of enum %s", j->s, f->en->full_name);
		}
		if (parse_int(c, j, GT_ENUM, &iv, &uv))
			return -1;
		return msgpack_pack_int64(pk, iv);
	default:
		if (parse_int(c, j, t, &iv, &uv))
			return -1;
		if (is_unsigned(t))
			return msgpack_pack_uint64(pk, uv);
		return msgpack_pack_int64(pk, iv);
	}
}

/* a map key, from its JSON member name */
static int enc_map_key(struct conv *c, const struct gen_field *kf, const char *key,
                       msgpack_packer *pk)
{
	struct json k = {0};

	if (kf->type == GT_STRING) {
		if (msgpack_pack_str(pk, strlen(key)) ||
		    msgpack_pack_str_body(pk, key, strlen(key)))
			return fail(c, "out of memory");
		return 0;
	}
	if (kf->type == GT_BOOL) {
		if (strcmp(key, "true") && strcmp(key, "false"))
			return fail(c, "map key \"%s\" is not true or false", key);
		return key[0] == 't' ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
	}
	k.type = JSON_STRING;
	k.s = (char *)key;
	k.len = strlen(key);
	{
		int64_t iv;
		uint64_t uv;

		k.type = JSON_NUMBER; /* keys are integer text */
		if (parse_int(c, &k, kf->type, &iv, &uv))
			return -1;
		return is_unsigned(kf->type) ? msgpack_pack_uint64(pk, uv)
		                             : msgpack_pack_int64(pk, iv);
	}
}

static int enc_value(struct conv *c, const struct gen_field *f, const struct json *j,
                     msgpack_packer *pk)
{
	if (f->is_map) {
		const struct gen_field *kf = field_by_number(f->msg, 1);
		const struct gen_field *vf = field_by_number(f->msg, 2);

		if (j->type != JSON_OBJECT)
			return fail(c, "expected an object (a map), got %s",
			            json_type_name(j->type));
		if (!kf || !vf)
			return fail(c, "malformed map entry in the schema");
		if (msgpack_pack_map(pk, j->n))
			return fail(c, "out of memory");
		for (size_t i = 0; i < j->n; i++) {
			size_t mark = path_push(c, "[\"%s\"]", j->keys[i]);

			if (j->items[i]->type == JSON_NULL)
				return fail(c, "null is not a map value");
			if (enc_map_key(c, kf, j->keys[i], pk) ||
			    (vf->type == GT_MESSAGE ? enc_message(c, vf->msg, j->items[i], pk)
			                            : enc_scalar(c, vf->type, vf, j->items[i], pk)))
				return -1;
			path_pop(c, mark);
		}
		return 0;
	}
	if (f->label == GL_REPEATED) {
		if (j->type != JSON_ARRAY)
			return fail(c, "expected an array, got %s", json_type_name(j->type));
		if (msgpack_pack_array(pk, j->n))
			return fail(c, "out of memory");
		for (size_t i = 0; i < j->n; i++) {
			size_t mark = path_push(c, "[%zu]", i);

			if (j->items[i]->type == JSON_NULL)
				return fail(c, "null is not an array element");
			if (f->type == GT_MESSAGE ? enc_message(c, f->msg, j->items[i], pk)
			                          : enc_scalar(c, f->type, f, j->items[i], pk))
				return -1;
			path_pop(c, mark);
		}
		return 0;
	}
	if (f->type == GT_MESSAGE)
		return enc_message(c, f->msg, j, pk);
	return enc_scalar(c, f->type, f, j, pk);
}

static int enc_message(struct conv *c, const struct gen_message *m, const struct json *j,
                       msgpack_packer *pk)
{
	size_t present = 0;
	int oneof_seen[64];

	if (j->type == JSON_NULL)
		return msgpack_pack_map(pk, 0) ? fail(c, "out of memory") : 0;
	if (j->type != JSON_OBJECT)
		return fail(c, "expected an object (message %s), got %s", m->full_name,
		            json_type_name(j->type));
	memset(oneof_seen, -1, sizeof(oneof_seen));
	for (size_t i = 0; i < j->n; i++) {
		const struct gen_field *f = field_by_json(m, j->keys[i]);
		size_t mark = path_push(c, "%s%s", *c->path ? "." : "", j->keys[i]);

		if (!f)
			return fail(c, "message %s has no field \"%s\"", m->full_name, j->keys[i]);
		for (size_t k = 0; k < i; k++)
			if (field_by_json(m, j->keys[k]) == f)
				return fail(c, "field given twice (as \"%s\" and \"%s\")",
				            j->keys[k], j->keys[i]);
		if (j->items[i]->type == JSON_NULL) {
			path_pop(c, mark);
			continue;
		}
		if (f->oneof >= 0 && f->oneof < 64) {
			if (oneof_seen[f->oneof] >= 0)
				return fail(c, "a second member of a oneof (\"%s\" is set)",
				            j->keys[oneof_seen[f->oneof]]);
			oneof_seen[f->oneof] = (int)i;
		}
		present++;
		path_pop(c, mark);
	}
	if (msgpack_pack_map(pk, present))
		return fail(c, "out of memory");
	for (size_t i = 0; i < j->n; i++) {
		const struct gen_field *f = field_by_json(m, j->keys[i]);
		size_t mark;

		if (j->items[i]->type == JSON_NULL)
			continue;
		mark = path_push(c, "%s%s", *c->path ? "." : "", j->keys[i]);
		if (msgpack_pack_uint64(pk, (uint64_t)f->number) ||
		    enc_value(c, f, j->items[i], pk))
			return fail(c, "out of memory");
		path_pop(c, mark);
	}
	return 0;
}

int pbjson_encode(const struct gen_message *m, const struct json *j, struct jbuf *out, char *err,
                  size_t err_len)
{
	struct conv c = {err, err_len, "", false};
	msgpack_packer pk;
	struct json empty = {0};

	msgpack_packer_init(&pk, out, jbuf_write);
	if (!j) {
		empty.type = JSON_OBJECT;
		j = &empty;
	}
	if (enc_message(&c, m, j, &pk) || out->oom)
		return fail(&c, "out of memory");
	return 0;
}

/* ---- msgpack -> JSON ---- */

static const char *mp_type(const msgpack_object *o)
{
	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		return "nil";
	case MSGPACK_OBJECT_BOOLEAN:
		return "a boolean";
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return "an integer";
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return "a float";
	case MSGPACK_OBJECT_STR:
		return "a string";
	case MSGPACK_OBJECT_BIN:
		return "bytes";
	case MSGPACK_OBJECT_ARRAY:
		return "an array";
	case MSGPACK_OBJECT_MAP:
		return "a map";
	default:
		return "an extension";
	}
}

/* the shortest text that reads back as the same value */
static void put_float(struct jwriter *w, double d, bool single)
{
	char text[40];

	if (isnan(d)) {
		jw_raw(w, "\"NaN\"");
		return;
	}
	if (isinf(d)) {
		jw_raw(w, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(text, sizeof(text), "%.*g", prec, d);
		if (single ? (float)strtod(text, NULL) == (float)d : strtod(text, NULL) == d)
			break;
	}
	jw_raw(w, text);
}

static int dec_message(struct conv *c, const struct gen_message *m, const msgpack_object *o,
                       struct jwriter *w);

static int dec_scalar(struct conv *c, enum gen_type t, const struct gen_field *f,
                      const msgpack_object *o, struct jwriter *w)
{
	char text[48];
	bool pos = o->type == MSGPACK_OBJECT_POSITIVE_INTEGER;
	bool integer = pos || o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER;

	switch (t) {
	case GT_BOOL:
		if (o->type != MSGPACK_OBJECT_BOOLEAN)
			return fail(c, "expected a boolean on the wire, got %s", mp_type(o));
		jw_raw(w, o->via.boolean ? "true" : "false");
		return 0;
	case GT_STRING:
		if (o->type != MSGPACK_OBJECT_STR)
			return fail(c, "expected a string on the wire, got %s", mp_type(o));
		jw_string(w, o->via.str.ptr, o->via.str.size);
		return 0;
	case GT_BYTES: {
		struct jbuf enc = {0};

		if (o->type != MSGPACK_OBJECT_BIN)
			return fail(c, "expected bytes on the wire, got %s", mp_type(o));
		base64_encode(&enc, (const unsigned char *)o->via.bin.ptr, o->via.bin.size);
		jw_string(w, enc.data ? enc.data : "", enc.len);
		jbuf_free(&enc);
		return 0;
	}
	case GT_FLOAT:
	case GT_DOUBLE:
		if (o->type != MSGPACK_OBJECT_FLOAT32 && o->type != MSGPACK_OBJECT_FLOAT64)
			return fail(c, "expected a float on the wire, got %s", mp_type(o));
		put_float(w, o->via.f64, t == GT_FLOAT);
		return 0;
	case GT_ENUM:
		if (!integer)
			return fail(c, "expected an integer on the wire, got %s", mp_type(o));
		for (int i = 0; i < f->en->values.n; i++) {
			const struct gen_enum_value *v = f->en->values.items[i];

			if (pos ? (v->number >= 0 && (uint64_t)v->number == o->via.u64)
			        : v->number == o->via.i64) {
				jw_string(w, v->name, strlen(v->name));
				return 0;
			}
		}
		snprintf(text, sizeof(text), pos ? "%" PRIu64 : "%" PRId64,
		         pos ? o->via.u64 : (uint64_t)o->via.i64);
		jw_raw(w, text);
		return 0;
	default:
		if (!integer)
			return fail(c, "expected an integer on the wire, got %s", mp_type(o));
		if (pos)
			snprintf(text, sizeof(text), is_64(t) ? "\"%" PRIu64 "\"" : "%" PRIu64,
			         o->via.u64);
		else
			snprintf(text, sizeof(text), is_64(t) ? "\"%" PRId64 "\"" : "%" PRId64,
			         o->via.i64);
		jw_raw(w, text);
		return 0;
	}
}

static int dec_map_key(struct conv *c, const msgpack_object *k, struct jwriter *w)
{
	char text[48];

	switch (k->type) {
	case MSGPACK_OBJECT_STR:
		jw_key(w, k->via.str.ptr, k->via.str.size);
		return 0;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		snprintf(text, sizeof(text), "%" PRIu64, k->via.u64);
		break;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		snprintf(text, sizeof(text), "%" PRId64, k->via.i64);
		break;
	case MSGPACK_OBJECT_BOOLEAN:
		snprintf(text, sizeof(text), "%s", k->via.boolean ? "true" : "false");
		break;
	default:
		return fail(c, "a map key that is %s", mp_type(k));
	}
	jw_key(w, text, strlen(text));
	return 0;
}

static int dec_value(struct conv *c, const struct gen_field *f, const msgpack_object *o,
                     struct jwriter *w)
{
	if (f->is_map) {
		const struct gen_field *vf = field_by_number(f->msg, 2);

		if (o->type != MSGPACK_OBJECT_MAP)
			return fail(c, "expected a map on the wire, got %s", mp_type(o));
		if (!vf)
			return fail(c, "malformed map entry in the schema");
		jw_begin_object(w);
		for (uint32_t i = 0; i < o->via.map.size; i++) {
			const msgpack_object_kv *kv = &o->via.map.ptr[i];

			if (dec_map_key(c, &kv->key, w) ||
			    (vf->type == GT_MESSAGE ? dec_message(c, vf->msg, &kv->val, w)
			                            : dec_scalar(c, vf->type, vf, &kv->val, w)))
				return -1;
		}
		jw_end_object(w);
		return 0;
	}
	if (f->label == GL_REPEATED) {
		if (o->type != MSGPACK_OBJECT_ARRAY)
			return fail(c, "expected an array on the wire, got %s", mp_type(o));
		jw_begin_array(w);
		for (uint32_t i = 0; i < o->via.array.size; i++) {
			const msgpack_object *e = &o->via.array.ptr[i];

			if (f->type == GT_MESSAGE ? dec_message(c, f->msg, e, w)
			                          : dec_scalar(c, f->type, f, e, w))
				return -1;
		}
		jw_end_array(w);
		return 0;
	}
	if (f->type == GT_MESSAGE)
		return dec_message(c, f->msg, o, w);
	return dec_scalar(c, f->type, f, o, w);
}

static int dec_message(struct conv *c, const struct gen_message *m, const msgpack_object *o,
                       struct jwriter *w)
{
	if (o->type == MSGPACK_OBJECT_NIL) {
		jw_begin_object(w);
		jw_end_object(w);
		return 0;
	}
	if (o->type != MSGPACK_OBJECT_MAP)
		return fail(c, "expected a map (message %s) on the wire, got %s", m->full_name,
		            mp_type(o));
	jw_begin_object(w);
	/* in declaration order; unknown keys (newer peers) and nil values are skipped */
	for (int i = 0; i < m->fields.n; i++) {
		const struct gen_field *f = m->fields.items[i];

		for (uint32_t k = 0; k < o->via.map.size; k++) {
			const msgpack_object_kv *kv = &o->via.map.ptr[k];
			size_t mark;

			if (kv->key.type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
			    kv->key.via.u64 != (uint64_t)f->number ||
			    kv->val.type == MSGPACK_OBJECT_NIL)
				continue;
			mark = path_push(c, "%s%s", *c->path ? "." : "", f->name);
			jw_key(w, f->name, strlen(f->name));
			if (dec_value(c, f, &kv->val, w))
				return -1;
			path_pop(c, mark);
			break;
		}
	}
	jw_end_object(w);
	return 0;
}

int pbjson_decode(const struct gen_message *m, const void *data, size_t len, struct jbuf *out,
                  char *err, size_t err_len)
{
	struct conv c = {err, err_len, "", false};
	msgpack_unpacked u;
	struct jwriter w;
	size_t off = 0;
	int rc;

	jw_init(&w, out);
	if (len == 0) { /* an empty body is the default message */
		jw_begin_object(&w);
		jw_end_object(&w);
		return 0;
	}
	msgpack_unpacked_init(&u);
	rc = msgpack_unpack_next(&u, data, len, &off);
	if (rc != MSGPACK_UNPACK_SUCCESS || off != len)
		rc = fail(&c, "the reply is not one msgpack object (%zu bytes)", len);
	else
		rc = dec_message(&c, m, &u.data, &w);
	msgpack_unpacked_destroy(&u);
	if (!rc && out->oom)
		rc = fail(&c, "out of memory");
	return rc;
}
