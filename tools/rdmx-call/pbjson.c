/* Schema-driven JSON <-> msgpack (pbjson.h). */
#include "mp.h"
#include "pbjson.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- schema ---- */

/* the schema Any's embedded types are looked up in (the last one loaded) */
static const struct pbschema *any_schema;

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
	any_schema = s;
	return 0;
}

void pbschema_fini(struct pbschema *s)
{
	if (any_schema == s)
		any_schema = NULL;
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

/* j's JSON type, an integer past int64 (json.h) as the number it is */
static json_type jkind(const json_t *j)
{
	return json_big_int(j, NULL) ? JSON_INTEGER : json_typeof(j);
}

/* a JSON string, not an integer past int64 */
static bool is_text(const json_t *j)
{
	return json_is_string(j) && !json_big_int(j, NULL);
}

static const char *jtype(const json_t *j)
{
	switch (jkind(j)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/* a string with "\u0000" inside: text only a string field may hold */
static bool has_nul(const json_t *j)
{
	return is_text(j) && strlen(json_string_value(j)) != json_string_length(j);
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

/* the proto3 JSON name: json_name, else lowerCamelCase of the field name */
static const char *json_name(const struct gen_field *f, char *out, size_t len)
{
	size_t o = 0;
	bool up = false;

	if (f->json_name)
		return f->json_name;
	for (const char *p = f->name; *p && o + 1 < len; p++) {
		if (*p == '_') {
			up = true;
			continue;
		}
		out[o++] = (up && *p >= 'a' && *p <= 'z') ? (char)(*p - 32) : *p;
		up = false;
	}
	out[o] = '\0';
	return out;
}

/* input takes the proto name and the JSON name */
static const struct gen_field *field_by_json(const struct gen_message *m, const char *key)
{
	char camel[256];

	for (int i = 0; i < m->fields.n; i++) {
		const struct gen_field *f = m->fields.items[i];

		if (strcmp(f->name, key) == 0 ||
		    strcmp(json_name(f, camel, sizeof(camel)), key) == 0)
			return f;
	}
	return NULL;
}

static bool is_wkt(const struct gen_message *m, const char *name)
{
	return strncmp(m->full_name, "google.protobuf.", 16) == 0 &&
	       strcmp(m->full_name + 16, name) == 0;
}

static bool is_wrapper(const struct gen_message *m)
{
	static const char *const w[] = {"DoubleValue", "FloatValue",  "Int64Value",
	                                "UInt64Value", "Int32Value",  "UInt32Value",
	                                "BoolValue",   "StringValue", "BytesValue"};
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (is_wkt(m, w[i]))
			return true;
	return false;
}

/* a type whose JSON is not an object of its fields: inside an Any it is
 * {"@type": URL, "value": its JSON} (Empty is not one: {"@type": URL}) */
static bool has_json_form(const struct gen_message *m)
{
	return is_wkt(m, "Timestamp") || is_wkt(m, "Duration") || is_wkt(m, "FieldMask") ||
	       is_wkt(m, "Struct") || is_wkt(m, "Value") || is_wkt(m, "ListValue") ||
	       is_wkt(m, "Any") || is_wrapper(m);
}

static const struct gen_message *find_msg_in(const struct gen_vec *v, const char *full)
{
	for (int i = 0; i < v->n; i++) {
		const struct gen_message *m = v->items[i], *r;

		if (strcmp(m->full_name, full) == 0)
			return m;
		r = find_msg_in(&m->messages, full);
		if (r)
			return r;
	}
	return NULL;
}

const struct gen_message *pbschema_message(const struct pbschema *s, const char *full_name)
{
	for (int i = 0; s && i < s->ctx.files.n; i++) {
		const struct gen_file *f = s->ctx.files.items[i];
		const struct gen_message *m = find_msg_in(&f->messages, full_name);

		if (m)
			return m;
	}
	return NULL;
}

static const struct gen_message *find_message(const char *type_url)
{
	const char *slash = strrchr(type_url, '/');

	return pbschema_message(any_schema, slash ? slash + 1 : type_url);
}

/* ---- JSON -> msgpack ---- */

static int jbuf_write(void *data, const char *buf, size_t len)
{
	struct jbuf *b = data;

	jbuf_put(b, buf, len);
	return b->oom ? -1 : 0;
}

/* an integer from a JSON number or a decimal string, within t's range */
static int get_int(struct conv *c, const json_t *j, enum gen_type t, int64_t *iv, uint64_t *uv)
{
	const char *big;
	bool neg;

	if (json_is_integer(j)) {
		json_int_t v = json_integer_value(j);

		*iv = v;
		*uv = v < 0 ? 0 : (uint64_t)v;
		neg = v < 0;
	} else if (json_is_real(j)) {
		double d = json_real_value(j);

		/* protobuf takes any number that is exactly an integer (1e18) */
		if (!isfinite(d) || d != floor(d))
			return fail(c, "%g is not an integer", d);
		if (d < -9223372036854775808.0 || d >= 18446744073709551616.0)
			return fail(c, "%g is out of the 64-bit range", d);
		neg = d < 0;
		*uv = neg ? 0 : (uint64_t)d;
		*iv = neg ? (int64_t)d : (int64_t)(*uv & INT64_MAX);
	} else if (json_big_int(j, &big)) {
		/* past int64: only a uint64 holds it, if it is not past that too */
		errno = 0;
		neg = big[0] == '-';
		*uv = neg ? 0 : strtoull(big, NULL, 10);
		*iv = (int64_t)*uv;
		if (neg || errno)
			return fail(c, "%s is out of the 64-bit range", big);
	} else if (json_is_string(j)) {
		const char *s = json_string_value(j);
		char *end;

		errno = 0;
		neg = s[0] == '-';
		if (neg) {
			*iv = strtoll(s, &end, 10);
			*uv = 0;
		} else {
			*uv = strtoull(s, &end, 10);
			*iv = (int64_t)*uv;
		}
		if (errno || *end || !*s || s[neg] < '0' || s[neg] > '9')
			return fail(c, "\"%s\" is not an integer in range", s);
	} else {
		return fail(c, "expected an integer, got %s", jtype(j));
	}
	if (is_unsigned(t) && neg && *iv != 0)
		return fail(c, "%" PRId64 " is negative for an unsigned field", *iv);
	switch (t) {
	case GT_INT32:
	case GT_SINT32:
	case GT_SFIXED32:
	case GT_ENUM:
		if (neg ? *iv < INT32_MIN : *uv > INT32_MAX)
			return fail(c, "%s is out of the int32 range",
			            json_big_int(j, &big) ? big
			            : json_is_string(j)   ? json_string_value(j)
			                                  : "the value");
		break;
	case GT_UINT32:
	case GT_FIXED32:
		if (*uv > UINT32_MAX)
			return fail(c, "%" PRIu64 " is out of the uint32 range", *uv);
		break;
	case GT_INT64:
	case GT_SINT64:
	case GT_SFIXED64:
		if (!neg && *uv > INT64_MAX)
			return fail(c, "%" PRIu64 " is out of the int64 range", *uv);
		break;
	default:
		break;
	}
	return 0;
}

/* a quoted real: "NaN", "Infinity", "-Infinity" or a JSON number in
 * quotes (strtod's "nan", "inf", hex and blanks are not numbers to
 * protobuf); past the double range it is an infinity, as protobuf's python
 * reads "1e400" */
static int get_quoted_real(struct conv *c, const char *s, double *d)
{
	char *end;

	if (!strcmp(s, "NaN") || !strcmp(s, "Infinity") || !strcmp(s, "-Infinity")) {
		*d = s[0] == 'N' ? NAN : s[0] == '-' ? -INFINITY : INFINITY;
		return 0;
	}
	if (*s && strspn(s, "0123456789+-.eE") == strlen(s)) {
		*d = strtod(s, &end);
		if (!*end)
			return 0;
	}
	return fail(c, "\"%s\" is not a number", s);
}

/* a double or float field's value from a JSON number or a quoted one. A
 * number must be within a float's range (what rounds to FLT_MAX is:
 * FLT_MAX's shortest text, 3.4028235e+38, is above it); a quoted one
 * rounds to the float, an infinity past FLT_MAX, as protobuf's python
 * takes "1e39" */
static int get_real(struct conv *c, const json_t *j, enum gen_type t, double *d)
{
	const char *big;

	if (json_big_int(j, &big)) {
		*d = strtod(big, NULL);
		if (!isfinite(*d))
			return fail(c, "%s is out of the double range", big);
	} else if (json_is_string(j)) {
		return get_quoted_real(c, json_string_value(j), d);
	} else if (!json_is_number(j)) {
		return fail(c, "expected a number, got %s", jtype(j));
	} else {
		*d = json_number_value(j);
	}
	if (t == GT_FLOAT && fabs(*d) >= 3.4028235677973366e38)
		return fail(c, "%g is out of the float range", *d);
	return 0;
}

static int pack_str(struct rdmx_mp_writer *pk, const char *s, size_t n)
{
	return rdmx_mp_pack_str(pk, s, n);
}

static int enc_value(struct conv *c, const struct gen_field *f, const json_t *j,
                     struct rdmx_mp_writer *pk);
static int enc_message(struct conv *c, const struct gen_message *m, const json_t *j,
                       struct rdmx_mp_writer *pk);

static int enc_scalar(struct conv *c, enum gen_type t, const struct gen_field *f, const json_t *j,
                      struct rdmx_mp_writer *pk)
{
	int64_t iv;
	uint64_t uv;
	double d = 0;

	if (t != GT_STRING && has_nul(j))
		return fail(c, "a NUL character in %s", t == GT_ENUM ? "an enum name" : "a value");
	switch (t) {
	case GT_BOOL:
		if (!json_is_boolean(j))
			return fail(c, "expected true or false, got %s", jtype(j));
		return json_is_true(j) ? rdmx_mp_pack_bool(pk, true) : rdmx_mp_pack_bool(pk, false);
	case GT_STRING:
		if (!is_text(j))
			return fail(c, "expected a string, got %s", jtype(j));
		return pack_str(pk, json_string_value(j), json_string_length(j))
		           ? fail(c, "out of memory")
		           : 0;
	case GT_BYTES: {
		struct jbuf raw = {0};
		int rc;

		if (!is_text(j))
			return fail(c, "expected a base64 string, got %s", jtype(j));
		if (base64_decode(json_string_value(j), json_string_length(j), &raw)) {
			jbuf_free(&raw);
			return fail(c, "not valid base64");
		}
		rc = rdmx_mp_pack_bin(pk, raw.data, raw.len);
		jbuf_free(&raw);
		return rc ? fail(c, "out of memory") : 0;
	}
	case GT_FLOAT:
	case GT_DOUBLE:
		if (get_real(c, j, t, &d))
			return -1;
		return t == GT_FLOAT ? rdmx_mp_pack_f32(pk, (float)d) : rdmx_mp_pack_f64(pk, d);
	case GT_ENUM:
		if (is_text(j)) {
			const char *s = json_string_value(j);

			for (int i = 0; i < f->en->values.n; i++) {
				const struct gen_enum_value *v = f->en->values.items[i];

				if (strcmp(v->name, s) == 0)
					return rdmx_mp_pack_int(pk, v->number);
			}
			return fail(c, "\"%s\" is not a value of enum %s", s, f->en->full_name);
		}
		if (json_is_null(j) && strcmp(f->en->full_name, "google.protobuf.NullValue") == 0)
			return rdmx_mp_pack_int(pk, 0);
		if (get_int(c, j, GT_ENUM, &iv, &uv))
			return -1;
		return rdmx_mp_pack_int(pk, iv);
	default:
		if (get_int(c, j, t, &iv, &uv))
			return -1;
		if (is_unsigned(t))
			return rdmx_mp_pack_uint(pk, uv);
		return rdmx_mp_pack_int(pk, iv);
	}
}

/* a map key, from its JSON member name */
static int enc_map_key(struct conv *c, const struct gen_field *kf, const char *key,
                       struct rdmx_mp_writer *pk)
{
	int64_t iv;
	uint64_t uv;
	json_t *k;
	int rc;

	if (kf->type == GT_STRING)
		return pack_str(pk, key, strlen(key)) ? fail(c, "out of memory") : 0;
	if (kf->type == GT_BOOL) {
		if (strcmp(key, "true") && strcmp(key, "false"))
			return fail(c, "map key \"%s\" is not true or false", key);
		return key[0] == 't' ? rdmx_mp_pack_bool(pk, true) : rdmx_mp_pack_bool(pk, false);
	}
	k = json_string(key);
	if (!k)
		return fail(c, "out of memory");
	rc = get_int(c, k, kf->type, &iv, &uv);
	json_decref(k);
	if (rc)
		return -1;
	return is_unsigned(kf->type) ? rdmx_mp_pack_uint(pk, uv) : rdmx_mp_pack_int(pk, iv);
}

/* seconds + nanos as a 2-field message (proto3 defaults left out) */
static int pack_secs_nanos(struct conv *c, int64_t secs, int32_t nanos, struct rdmx_mp_writer *pk)
{
	if (rdmx_mp_pack_map(pk, (size_t)(secs != 0) + (size_t)(nanos != 0)) ||
	    (secs && (rdmx_mp_pack_uint(pk, 1) || rdmx_mp_pack_int(pk, secs))) ||
	    (nanos && (rdmx_mp_pack_uint(pk, 2) || rdmx_mp_pack_int(pk, nanos))))
		return fail(c, "out of memory");
	return 0;
}

/* "[-]S[.fffffffff]s" */
static int enc_duration(struct conv *c, const json_t *j, struct rdmx_mp_writer *pk)
{
	const char *s;
	char *end;
	bool neg;
	int64_t secs;
	int32_t nanos = 0;
	int digits = 0;

	if (!is_text(j))
		return fail(c, "a Duration is a string like \"1.5s\", got %s", jtype(j));
	s = json_string_value(j);
	neg = s[0] == '-';
	errno = 0;
	secs = strtoll(s, &end, 10);
	if (errno || s[neg] < '0' || s[neg] > '9' || (*end != '.' && *end != 's'))
		return fail(c, "\"%s\" is not a duration like \"1.5s\"", s);
	if (*end == '.') {
		for (end++; *end >= '0' && *end <= '9'; end++, digits++)
			if (digits < 9)
				nanos = nanos * 10 + (*end - '0');
		if (digits == 0 || digits > 9)
			return fail(c, "\"%s\" needs 1 to 9 fraction digits", s);
		for (; digits < 9; digits++)
			nanos *= 10;
	}
	if (strcmp(end, "s") != 0 || secs > 315576000000 || secs < -315576000000)
		return fail(c, "\"%s\" is not a duration like \"1.5s\" (within 10000 years)", s);
	return pack_secs_nanos(c, secs, neg ? -nanos : nanos, pk);
}

static int days_in_month(int y, int mo)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (mo == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
		return 29;
	return days[mo - 1];
}

/* RFC 3339: "2024-05-01T12:00:00[.fffffffff](Z|+hh:mm|-hh:mm)" */
static int enc_timestamp(struct conv *c, const json_t *j, struct rdmx_mp_writer *pk)
{
	const char *s;
	struct tm tm;
	int y, mo, d, h, mi, se, n = 0, oh = 0, om = 0;
	int32_t nanos = 0;
	int digits = 0;
	int64_t secs;
	const char *p;

	if (!is_text(j))
		return fail(c, "a Timestamp is an RFC 3339 string, got %s", jtype(j));
	s = json_string_value(j);
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &n) != 6 || n != 19)
		return fail(c, "\"%s\" is not an RFC 3339 time (2024-05-01T12:00:00Z)", s);
	p = s + n;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, digits++)
			if (digits < 9)
				nanos = nanos * 10 + (*p - '0');
		if (digits == 0 || digits > 9)
			return fail(c, "\"%s\" needs 1 to 9 fraction digits", s);
		for (; digits < 9; digits++)
			nanos *= 10;
	}
	if (*p == 'Z' && !p[1]) {
		;
	} else if ((*p == '+' || *p == '-') && sscanf(p + 1, "%2d:%2d%n", &oh, &om, &n) == 2 &&
	           n == 5 && !p[6]) {
		if (*p == '-') {
			oh = -oh;
			om = -om;
		}
	} else {
		return fail(c, "\"%s\": the time zone must be Z or +hh:mm", s);
	}
	/* as protobuf: the day within its month, no leap second (":60") */
	if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 ||
	    se > 59)
		return fail(c, "\"%s\" is not a valid time", s);
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = se;
	secs = (int64_t)timegm(&tm) - (int64_t)oh * 3600 - (int64_t)om * 60;
	return pack_secs_nanos(c, secs, nanos, pk);
}

/* google.protobuf.Value from any JSON value */
static int enc_struct_value(struct conv *c, const struct gen_message *m, const json_t *j,
                            struct rdmx_mp_writer *pk)
{
	const struct gen_field *f;
	int num;

	switch (jkind(j)) {
	case JSON_NULL:
		num = 1;
		break;
	case JSON_INTEGER:
	case JSON_REAL:
		num = 2;
		break;
	case JSON_STRING:
		num = 3;
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		num = 4;
		break;
	case JSON_OBJECT:
		num = 5;
		break;
	default:
		num = 6;
		break;
	}
	f = field_by_number(m, (uint64_t)num);
	if (!f)
		return fail(c, "google.protobuf.Value in the schema lacks field %d", num);
	if (rdmx_mp_pack_map(pk, 1) || rdmx_mp_pack_uint(pk, (uint8_t)num))
		return fail(c, "out of memory");
	if (num == 1)
		return rdmx_mp_pack_int(pk, 0);
	return enc_value(c, f, j, pk);
}

static int enc_any(struct conv *c, const json_t *j, struct rdmx_mp_writer *pk)
{
	const json_t *t = json_is_object(j) ? json_object_get(j, "@type") : NULL;
	const struct gen_message *inner;
	struct jbuf body = {0};
	struct rdmx_mp_writer ipk;
	const char *url;
	int rc;

	if (json_is_object(j) && json_object_size(j) == 0) /* the empty Any */
		return rdmx_mp_pack_map(pk, 0) ? fail(c, "out of memory") : 0;
	if (!t || !is_text(t))
		return fail(c, "an Any is an object with a \"@type\" string");
	url = json_string_value(t);
	inner = find_message(url);
	if (!inner)
		return fail(c, "\"@type\": %s is not a message of the schema", url);
	rdmx_mp_writer_init(&ipk, &body, jbuf_write);
	if (has_json_form(inner)) {
		const json_t *v = json_object_get(j, "value");
		size_t mark;

		if (!v)
			return fail(c, "an Any of %s needs its \"value\"", inner->full_name);
		mark = path_push(c, "%svalue", *c->path ? "." : "");
		rc = enc_message(c, inner, v, &ipk);
		if (!rc)
			path_pop(c, mark);
	} else {
		json_t *copy = json_copy((json_t *)j);

		if (!copy)
			return fail(c, "out of memory");
		json_object_del(copy, "@type");
		rc = enc_message(c, inner, copy, &ipk);
		json_decref(copy);
	}
	if (rc || body.oom) {
		jbuf_free(&body);
		return rc ? -1 : fail(c, "out of memory");
	}
	rc = rdmx_mp_pack_map(pk, 2) || rdmx_mp_pack_uint(pk, 1) ||
	     pack_str(pk, url, strlen(url)) || rdmx_mp_pack_uint(pk, 2) ||
	     rdmx_mp_pack_bin(pk, body.data, body.len);
	jbuf_free(&body);
	return rc ? fail(c, "out of memory") : 0;
}

/* "a.b,cD" -> ["a.b", "c_d"] */
static int enc_field_mask(struct conv *c, const json_t *j, struct rdmx_mp_writer *pk)
{
	const char *s, *p;
	size_t n = 0;
	struct jbuf one = {0};

	if (!is_text(j))
		return fail(c, "a FieldMask is a string of comma-separated paths, got %s",
		            jtype(j));
	s = json_string_value(j);
	if (*s)
		for (n = 1, p = s; *p; p++)
			n += *p == ',';
	if (rdmx_mp_pack_map(pk, n ? 1 : 0) ||
	    (n && (rdmx_mp_pack_uint(pk, 1) || rdmx_mp_pack_array(pk, n))))
		return fail(c, "out of memory");
	for (p = s; n && *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		one.len = 0;
		for (size_t i = 0; i < len; i++) {
			char ch = p[i];

			if (ch == '_') { /* the JSON form is camelCase only */
				jbuf_free(&one);
				return fail(c, "FieldMask path \"%.*s\" has a \"_\"", (int)len, p);
			}

			if (ch >= 'A' && ch <= 'Z') {
				char lo[2] = {'_', (char)(ch + 32)};

				jbuf_put(&one, lo, 2);
			} else {
				jbuf_put(&one, &ch, 1);
			}
		}
		if (one.oom || pack_str(pk, one.data ? one.data : "", one.len)) {
			jbuf_free(&one);
			return fail(c, "out of memory");
		}
		p += len + (e ? 1 : 0);
	}
	jbuf_free(&one);
	return 0;
}

/* whether null is a value of f (a Value's null, a NullValue's NULL_VALUE),
 * not "absent" */
static bool null_is_value(const struct gen_field *f)
{
	return (f->type == GT_MESSAGE && is_wkt(f->msg, "Value")) ||
	       (f->type == GT_ENUM && strcmp(f->en->full_name, "google.protobuf.NullValue") == 0);
}

static int enc_value(struct conv *c, const struct gen_field *f, const json_t *j,
                     struct rdmx_mp_writer *pk)
{
	if (f->is_map) {
		const struct gen_field *kf = field_by_number(f->msg, 1);
		const struct gen_field *vf = field_by_number(f->msg, 2);
		const char *key;
		json_t *v;

		if (!json_is_object(j))
			return fail(c, "expected an object (a map), got %s", jtype(j));
		if (!kf || !vf)
			return fail(c, "malformed map entry in the schema");
		if (rdmx_mp_pack_map(pk, json_object_size(j)))
			return fail(c, "out of memory");
		json_object_foreach((json_t *)j, key, v)
		{
			size_t mark = path_push(c, "[\"%s\"]", key);

			if (json_is_null(v) && !null_is_value(vf))
				return fail(c, "null is not a map value");
			if (enc_map_key(c, kf, key, pk) ||
			    (vf->type == GT_MESSAGE ? enc_message(c, vf->msg, v, pk)
			                            : enc_scalar(c, vf->type, vf, v, pk)))
				return -1;
			path_pop(c, mark);
		}
		return 0;
	}
	if (f->label == GL_REPEATED) {
		size_t i;
		json_t *v;

		if (!json_is_array(j))
			return fail(c, "expected an array, got %s", jtype(j));
		if (rdmx_mp_pack_array(pk, json_array_size(j)))
			return fail(c, "out of memory");
		json_array_foreach((json_t *)j, i, v)
		{
			size_t mark = path_push(c, "[%zu]", i);

			if (json_is_null(v) && !null_is_value(f))
				return fail(c, "null is not an array element");
			if (f->type == GT_MESSAGE ? enc_message(c, f->msg, v, pk)
			                          : enc_scalar(c, f->type, f, v, pk))
				return -1;
			path_pop(c, mark);
		}
		return 0;
	}
	if (f->type == GT_MESSAGE)
		return enc_message(c, f->msg, j, pk);
	return enc_scalar(c, f->type, f, j, pk);
}

/* the string a well-known type reads as C text (strtoll, sscanf, strcmp):
 * a Timestamp's, a Duration's, a FieldMask's, an Any's "@type"; else NULL */
static const json_t *wkt_text(const struct gen_message *m, const json_t *j)
{
	if (is_wkt(m, "Timestamp") || is_wkt(m, "Duration") || is_wkt(m, "FieldMask"))
		return j;
	if (is_wkt(m, "Any") && json_is_object(j))
		return json_object_get(j, "@type");
	return NULL;
}

/* the JSON forms of the well-known types; 1 when m is not one */
static int enc_wkt(struct conv *c, const struct gen_message *m, const json_t *j,
                   struct rdmx_mp_writer *pk)
{
	/* a NUL inside would cut that text short */
	if (has_nul(wkt_text(m, j)))
		return fail(c, "a NUL character in the text");
	if (is_wkt(m, "Timestamp"))
		return enc_timestamp(c, j, pk);
	if (is_wkt(m, "Duration"))
		return enc_duration(c, j, pk);
	if (is_wkt(m, "FieldMask"))
		return enc_field_mask(c, j, pk);
	if (is_wkt(m, "Any"))
		return enc_any(c, j, pk);
	if (is_wkt(m, "Value"))
		return enc_struct_value(c, m, j, pk);
	/* a Struct, a ListValue or a wrapper has only its JSON form: not
	 * {"fields": ...}, {"values": ...} or {"value": ...} */
	if (is_wkt(m, "Struct") && !json_is_object(j))
		return fail(c, "a Struct is a JSON object, got %s", jtype(j));
	if (is_wkt(m, "ListValue") && !json_is_array(j))
		return fail(c, "a ListValue is a JSON array, got %s", jtype(j));
	if (is_wrapper(m) && (json_is_object(j) || json_is_array(j)))
		return fail(c, "a %s is its bare value, got %s", m->full_name + 16, jtype(j));
	if (is_wkt(m, "Struct") || is_wkt(m, "ListValue")) {
		const struct gen_field *f = field_by_number(m, 1);

		if (!f)
			return fail(c, "%s in the schema lacks field 1", m->full_name);
		if (rdmx_mp_pack_map(pk, 1) || rdmx_mp_pack_uint(pk, 1))
			return fail(c, "out of memory");
		return enc_value(c, f, j, pk);
	}
	if (is_wrapper(m)) {
		const struct gen_field *f = field_by_number(m, 1);

		if (!f)
			return fail(c, "%s in the schema lacks field 1", m->full_name);
		if (rdmx_mp_pack_map(pk, 1) || rdmx_mp_pack_uint(pk, 1))
			return fail(c, "out of memory");
		return enc_scalar(c, f->type, f, j, pk);
	}
	return 1;
}

static int enc_message(struct conv *c, const struct gen_message *m, const json_t *j,
                       struct rdmx_mp_writer *pk)
{
	size_t present = 0;
	int oneof_seen[64];
	const char *oneof_key[64];
	const char *key;
	json_t *v;
	int rc;

	if (json_is_null(j) && !is_wkt(m, "Value"))
		return rdmx_mp_pack_map(pk, 0) ? fail(c, "out of memory") : 0;
	rc = enc_wkt(c, m, j, pk);
	if (rc <= 0)
		return rc;
	if (!json_is_object(j))
		return fail(c, "expected an object (message %s), got %s", m->full_name, jtype(j));
	memset(oneof_seen, -1, sizeof(oneof_seen));
	json_object_foreach((json_t *)j, key, v)
	{
		const struct gen_field *f = field_by_json(m, key);
		size_t mark = path_push(c, "%s%s", *c->path ? "." : "", key);
		const char *k2;
		json_t *v2;

		if (!f)
			return fail(c, "message %s has no field \"%s\"", m->full_name, key);
		json_object_foreach((json_t *)j, k2, v2)
		{
			if (k2 == key)
				break;
			if (field_by_json(m, k2) == f)
				return fail(c, "field given twice (as \"%s\" and \"%s\")", k2, key);
		}
		if (json_is_null(v) && !null_is_value(f)) {
			path_pop(c, mark);
			continue;
		}
		if (f->oneof >= 0 && f->oneof < 64) {
			if (oneof_seen[f->oneof] >= 0)
				return fail(c, "a second member of a oneof (\"%s\" is set)",
				            oneof_key[f->oneof]);
			oneof_seen[f->oneof] = 1;
			oneof_key[f->oneof] = key;
		}
		present++;
		path_pop(c, mark);
	}
	if (rdmx_mp_pack_map(pk, present))
		return fail(c, "out of memory");
	json_object_foreach((json_t *)j, key, v)
	{
		const struct gen_field *f = field_by_json(m, key);
		size_t mark;

		if (json_is_null(v) && !null_is_value(f))
			continue;
		mark = path_push(c, "%s%s", *c->path ? "." : "", key);
		if (rdmx_mp_pack_uint(pk, (uint64_t)f->number))
			return fail(c, "out of memory");
		if (enc_value(c, f, v, pk))
			return -1;
		path_pop(c, mark);
	}
	return 0;
}

int pbjson_encode(const struct gen_message *m, const json_t *j, struct jbuf *out, char *err,
                  size_t err_len)
{
	struct conv c = {err, err_len, "", false};
	struct rdmx_mp_writer pk;
	json_t *empty = NULL;
	int rc;

	rdmx_mp_writer_init(&pk, out, jbuf_write);
	if (!j)
		j = empty = json_object();
	if (!j)
		return fail(&c, "out of memory");
	rc = enc_message(&c, m, j, &pk);
	json_decref(empty);
	if (rc)
		return -1;
	if (out->oom)
		return fail(&c, "out of memory");
	return 0;
}

/* ---- msgpack -> JSON ---- */

static const char *mp_type(const struct rdmx_mp_obj *o)
{
	switch (o->type) {
	case RDMX_MP_NIL:
		return "nil";
	case RDMX_MP_BOOL:
		return "a boolean";
	case RDMX_MP_UINT:
	case RDMX_MP_INT:
		return "an integer";
	case RDMX_MP_F32:
	case RDMX_MP_F64:
		return "a float";
	case RDMX_MP_STR:
		return "a string";
	case RDMX_MP_BIN:
		return "bytes";
	case RDMX_MP_ARRAY:
		return "an array";
	case RDMX_MP_MAP:
		return "a map";
	default:
		return "an extension";
	}
}

/* a float as the double protobuf's python prints for it
 * (type_checkers.ToShortestFloat): 0.1f prints 0.1 and the smallest
 * denormal 1.4013e-45, not 1e-45 */
static double shortest_float(double d)
{
	char text[40];

	json_shortest_text(d, true, text, sizeof(text));
	return strtod(text, NULL);
}

/* a real as a JSON number (NaN and infinities as proto3's strings); the
 * printer (json_print) gives each its shortest round-trip text */
static json_t *real(double d, bool single)
{
	if (isnan(d))
		return json_string("NaN");
	if (isinf(d))
		return json_string(d > 0 ? "Infinity" : "-Infinity");
	return json_real(single ? shortest_float(d) : d);
}

static json_t *jstrn(const char *s, size_t n)
{
	/* invalid UTF-8 from the wire is shown, not refused */
	json_t *j = json_stringn(s, n);
	char *fixed;
	size_t i, o = 0;

	if (j)
		return j;
	fixed = malloc(n * 3 + 1);
	if (!fixed)
		return NULL;
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch < 0x80) {
			fixed[o++] = (char)ch;
		} else {
			memcpy(fixed + o, "\xef\xbf\xbd", 3); /* U+FFFD */
			o += 3;
		}
	}
	j = json_stringn(fixed, o);
	free(fixed);
	return j;
}

static json_t *dec_message(struct conv *c, const struct gen_message *m,
                           const struct rdmx_mp_obj *o);

static json_t *dec_scalar(struct conv *c, enum gen_type t, const struct gen_field *f,
                          const struct rdmx_mp_obj *o)
{
	char text[48];
	bool pos = o->type == RDMX_MP_UINT;
	bool integer = pos || o->type == RDMX_MP_INT;

	switch (t) {
	case GT_BOOL:
		if (o->type != RDMX_MP_BOOL)
			return fail(c, "expected a boolean on the wire, got %s", mp_type(o)), NULL;
		return json_boolean(o->via.boolean);
	case GT_STRING:
		if (o->type != RDMX_MP_STR)
			return fail(c, "expected a string on the wire, got %s", mp_type(o)), NULL;
		return jstrn(o->via.str.ptr, o->via.str.size);
	case GT_BYTES: {
		struct jbuf enc = {0};
		json_t *j;

		if (o->type != RDMX_MP_BIN)
			return fail(c, "expected bytes on the wire, got %s", mp_type(o)), NULL;
		base64_encode(&enc, (const unsigned char *)o->via.bin.ptr, o->via.bin.size);
		j = json_stringn(enc.data ? enc.data : "", enc.len);
		jbuf_free(&enc);
		return j;
	}
	case GT_FLOAT:
	case GT_DOUBLE:
		if (o->type != RDMX_MP_F32 && o->type != RDMX_MP_F64)
			return fail(c, "expected a float on the wire, got %s", mp_type(o)), NULL;
		return real(o->via.f64, t == GT_FLOAT);
	case GT_ENUM:
		if (!integer)
			return fail(c, "expected an integer on the wire, got %s", mp_type(o)), NULL;
		if (strcmp(f->en->full_name, "google.protobuf.NullValue") == 0)
			return json_null();
		for (int i = 0; i < f->en->values.n; i++) {
			const struct gen_enum_value *v = f->en->values.items[i];

			if (pos ? (v->number >= 0 && (uint64_t)v->number == o->via.u64)
			        : v->number == o->via.i64)
				return json_string(v->name);
		}
		return json_integer(pos ? (json_int_t)o->via.u64 : o->via.i64);
	default:
		if (!integer)
			return fail(c, "expected an integer on the wire, got %s", mp_type(o)), NULL;
		if (!is_64(t))
			return json_integer(pos ? (json_int_t)o->via.u64 : o->via.i64);
		/* proto3 JSON: 64-bit integers are strings */
		if (pos)
			snprintf(text, sizeof(text), "%" PRIu64, o->via.u64);
		else
			snprintf(text, sizeof(text), "%" PRId64, o->via.i64);
		return json_string(text);
	}
}

static int map_key(struct conv *c, const struct rdmx_mp_obj *k, char *text, size_t len)
{
	switch (k->type) {
	case RDMX_MP_STR:
		if (k->via.str.size >= len || memchr(k->via.str.ptr, 0, k->via.str.size))
			return fail(c, "a map key longer than %zu bytes or with NUL", len - 1);
		memcpy(text, k->via.str.ptr, k->via.str.size);
		text[k->via.str.size] = '\0';
		return 0;
	case RDMX_MP_UINT:
		snprintf(text, len, "%" PRIu64, k->via.u64);
		return 0;
	case RDMX_MP_INT:
		snprintf(text, len, "%" PRId64, k->via.i64);
		return 0;
	case RDMX_MP_BOOL:
		snprintf(text, len, "%s", k->via.boolean ? "true" : "false");
		return 0;
	default:
		return fail(c, "a map key that is %s", mp_type(k));
	}
}

static json_t *dec_value(struct conv *c, const struct gen_field *f, const struct rdmx_mp_obj *o)
{
	json_t *r, *e;

	if (f->is_map) {
		const struct gen_field *vf = field_by_number(f->msg, 2);
		char key[1024];

		if (o->type != RDMX_MP_MAP)
			return fail(c, "expected a map on the wire, got %s", mp_type(o)), NULL;
		if (!vf)
			return fail(c, "malformed map entry in the schema"), NULL;
		r = json_object();
		for (uint32_t i = 0; r && i < o->via.map.size; i++) {
			const struct rdmx_mp_kv *kv = &o->via.map.ptr[i];

			if (map_key(c, &kv->key, key, sizeof(key)))
				break;
			e = vf->type == GT_MESSAGE ? dec_message(c, vf->msg, &kv->val)
			                           : dec_scalar(c, vf->type, vf, &kv->val);
			if (!e || json_object_set_new(r, key, e))
				break;
			if (i + 1 == o->via.map.size)
				return r;
		}
		if (r && o->via.map.size == 0)
			return r;
		json_decref(r);
		return NULL;
	}
	if (f->label == GL_REPEATED) {
		if (o->type != RDMX_MP_ARRAY)
			return fail(c, "expected an array on the wire, got %s", mp_type(o)), NULL;
		r = json_array();
		for (uint32_t i = 0; r && i < o->via.array.size; i++) {
			const struct rdmx_mp_obj *x = &o->via.array.ptr[i];

			e = f->type == GT_MESSAGE ? dec_message(c, f->msg, x)
			                          : dec_scalar(c, f->type, f, x);
			if (!e || json_array_append_new(r, e)) {
				json_decref(r);
				return NULL;
			}
		}
		return r;
	}
	if (f->type == GT_MESSAGE)
		return dec_message(c, f->msg, o);
	return dec_scalar(c, f->type, f, o);
}

static const struct rdmx_mp_obj *member(const struct rdmx_mp_obj *o, uint64_t n)
{
	for (uint32_t k = 0; k < o->via.map.size; k++) {
		const struct rdmx_mp_kv *kv = &o->via.map.ptr[k];

		if (kv->key.type == RDMX_MP_UINT && kv->key.via.u64 == n &&
		    kv->val.type != RDMX_MP_NIL)
			return &kv->val;
	}
	return NULL;
}

static int64_t member_int(const struct rdmx_mp_obj *o, uint64_t n)
{
	const struct rdmx_mp_obj *v = member(o, n);

	if (!v)
		return 0;
	if (v->type == RDMX_MP_UINT)
		return v->via.u64 > INT64_MAX ? INT64_MAX : (int64_t)v->via.u64;
	if (v->type == RDMX_MP_INT)
		return v->via.i64;
	return 0;
}

static void put_fraction(char *text, size_t len, int64_t nanos)
{
	if (nanos == 0)
		text[0] = '\0';
	else if (nanos % 1000000 == 0)
		snprintf(text, len, ".%03d", (int)(nanos / 1000000));
	else if (nanos % 1000 == 0)
		snprintf(text, len, ".%06d", (int)(nanos / 1000));
	else
		snprintf(text, len, ".%09d", (int)nanos);
}

/* a FieldMask path in its JSON form (a_b.c_d -> aB.cD). One that would
 * not read back fails, as protobuf refuses to print it: an upper-case
 * letter, or a "_" not before a lower-case letter. */
static int put_camel_path(struct conv *c, const char *p, size_t n, struct jbuf *b)
{
	bool up = false;

	for (size_t k = 0; k < n; k++) {
		char ch = p[k];

		if ((ch >= 'A' && ch <= 'Z') || (up && (ch < 'a' || ch > 'z')))
			return fail(c, "FieldMask path \"%.*s\" has no JSON form (\"%c\")", (int)n,
			            p, ch);
		if (ch == '_') {
			up = true;
			continue;
		}
		if (up)
			ch = (char)(ch - 32);
		up = false;
		jbuf_put(b, &ch, 1);
	}
	if (up)
		return fail(c, "FieldMask path \"%.*s\" ends in \"_\"", (int)n, p);
	return 0;
}

/* "a.b,cD" from ["a.b", "c_d"] */
static json_t *dec_field_mask(struct conv *c, const struct rdmx_mp_obj *o)
{
	const struct rdmx_mp_obj *p = member(o, 1);
	struct jbuf b = {0};
	json_t *r;

	for (uint32_t i = 0; p && p->type == RDMX_MP_ARRAY && i < p->via.array.size; i++) {
		const struct rdmx_mp_obj *s = &p->via.array.ptr[i];

		if (s->type != RDMX_MP_STR)
			continue;
		if (i)
			jbuf_put(&b, ",", 1);
		if (put_camel_path(c, s->via.str.ptr, s->via.str.size, &b)) {
			jbuf_free(&b);
			return NULL;
		}
	}
	r = json_stringn(b.data ? b.data : "", b.len);
	jbuf_free(&b);
	return r;
}

/* the JSON forms of the well-known types; *done false when m is not one */
static json_t *dec_wkt(struct conv *c, const struct gen_message *m, const struct rdmx_mp_obj *o,
                       bool *done)
{
	char text[96], frac[16];

	*done = true;
	if (is_wkt(m, "Timestamp")) {
		int64_t secs = member_int(o, 1), nanos = member_int(o, 2);
		time_t t = (time_t)secs;
		struct tm tm;

		if (nanos < 0 || nanos > 999999999 || secs < -62135596800 || secs > 253402300799 ||
		    !gmtime_r(&t, &tm))
			return fail(c, "Timestamp %" PRId64 ".%09" PRId64 " is out of range", secs,
			            nanos),
			       NULL;
		put_fraction(frac, sizeof(frac), nanos);
		snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d%sZ", tm.tm_year + 1900,
		         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
		return json_string(text);
	}
	if (is_wkt(m, "Duration")) {
		int64_t secs = member_int(o, 1), nanos = member_int(o, 2);
		bool neg = secs < 0 || nanos < 0;

		if (nanos > 999999999 || nanos < -999999999 || (secs > 0 && nanos < 0) ||
		    (secs < 0 && nanos > 0))
			return fail(c, "Duration %" PRId64 "s %" PRId64 "ns is malformed", secs,
			            nanos),
			       NULL;
		put_fraction(frac, sizeof(frac), nanos < 0 ? -nanos : nanos);
		snprintf(text, sizeof(text), "%s%" PRIu64 "%ss", neg ? "-" : "",
		         secs < 0 ? (uint64_t)(-(secs + 1)) + 1 : (uint64_t)secs, frac);
		return json_string(text);
	}
	if (is_wkt(m, "FieldMask"))
		return dec_field_mask(c, o);
	if (is_wkt(m, "Value")) {
		for (int i = 0; i < m->fields.n; i++) {
			const struct gen_field *f = m->fields.items[i];
			const struct rdmx_mp_obj *v = member(o, (uint64_t)f->number);

			if (v)
				return dec_value(c, f, v);
		}
		return json_null();
	}
	if (is_wkt(m, "Struct") || is_wkt(m, "ListValue") || is_wrapper(m)) {
		const struct gen_field *f = field_by_number(m, 1);
		const struct rdmx_mp_obj *v = f ? member(o, 1) : NULL;

		if (!f)
			return fail(c, "%s in the schema lacks field 1", m->full_name), NULL;
		if (v)
			return dec_value(c, f, v);
		if (is_wkt(m, "Struct"))
			return json_object();
		if (is_wkt(m, "ListValue"))
			return json_array();
		switch (f->type) { /* the default value */
		case GT_BOOL:
			return json_false();
		case GT_STRING:
		case GT_BYTES:
			return json_string("");
		case GT_INT64:
		case GT_UINT64:
			return json_string("0");
		case GT_FLOAT:
		case GT_DOUBLE:
			return json_real(0.0); /* 0.0, as protobuf prints it */
		default:
			return json_integer(0);
		}
	}
	if (is_wkt(m, "Any")) {
		const struct rdmx_mp_obj *u = member(o, 1), *b = member(o, 2);
		const struct gen_message *inner;
		char url[512];
		struct rdmx_mp_doc up;
		size_t off = 0;
		json_t *r, *body;

		if (!u && !b) /* the empty Any */
			return json_object();
		if (!u || u->type != RDMX_MP_STR || u->via.str.size >= sizeof(url))
			return fail(c, "an Any without a type URL"), NULL;
		memcpy(url, u->via.str.ptr, u->via.str.size);
		url[u->via.str.size] = '\0';
		inner = find_message(url);
		r = json_object();
		if (!r || json_object_set_new(r, "@type", json_string(url))) {
			json_decref(r);
			return NULL;
		}
		if (!inner) { /* unknown to the schema: the bytes as they are */
			struct jbuf enc = {0};

			if (b && b->type == RDMX_MP_BIN)
				base64_encode(&enc, (const unsigned char *)b->via.bin.ptr,
				              b->via.bin.size);
			json_object_set_new(r, "value",
			                    json_stringn(enc.data ? enc.data : "", enc.len));
			jbuf_free(&enc);
			return r;
		}
		rdmx_mp_doc_init(&up);
		if (b && b->type == RDMX_MP_BIN && b->via.bin.size &&
		    (rdmx_mp_parse(&up, b->via.bin.ptr, b->via.bin.size, &off) != 0 ||
		     off != b->via.bin.size)) {
			rdmx_mp_doc_fini(&up);
			json_decref(r);
			return fail(c, "the Any's value is not one msgpack object"), NULL;
		}
		if (!b || b->type != RDMX_MP_BIN || !b->via.bin.size)
			up.data.type = RDMX_MP_NIL;
		body = dec_message(c, inner, &up.data);
		rdmx_mp_doc_fini(&up);
		if (!body) {
			json_decref(r);
			return NULL;
		}
		if (has_json_form(inner)) {
			json_object_set_new(r, "value", body);
		} else {
			json_object_update(r, body);
			json_decref(body);
		}
		return r;
	}
	*done = false;
	return NULL;
}

static json_t *dec_message(struct conv *c, const struct gen_message *m, const struct rdmx_mp_obj *o)
{
	struct rdmx_mp_obj empty;
	json_t *r;
	bool done;

	if (o->type == RDMX_MP_NIL) {
		empty.type = RDMX_MP_MAP;
		empty.via.map.size = 0;
		empty.via.map.ptr = NULL;
		o = &empty;
	}
	if (o->type != RDMX_MP_MAP)
		return fail(c, "expected a map (message %s) on the wire, got %s", m->full_name,
		            mp_type(o)),
		       NULL;
	r = dec_wkt(c, m, o, &done);
	if (done)
		return r;
	r = json_object();
	/* in declaration order; unknown keys (newer peers) and nil values are skipped */
	for (int i = 0; r && i < m->fields.n; i++) {
		const struct gen_field *f = m->fields.items[i];
		const struct rdmx_mp_obj *v = member(o, (uint64_t)f->number);
		char camel[256];
		const char *name;
		size_t mark;
		json_t *e;

		if (!v)
			continue;
		name = json_name(f, camel, sizeof(camel));
		mark = path_push(c, "%s%s", *c->path ? "." : "", name);
		e = dec_value(c, f, v);
		if (!e || json_object_set_new(r, name, e)) {
			json_decref(r);
			return NULL;
		}
		path_pop(c, mark);
	}
	return r;
}

int pbjson_decode(const struct gen_message *m, const void *data, size_t len, struct jbuf *out,
                  char *err, size_t err_len)
{
	struct conv c = {err, err_len, "", false};
	struct rdmx_mp_doc u;
	struct rdmx_mp_obj nil;
	json_t *j = NULL;
	size_t off = 0;
	int rc;

	rdmx_mp_doc_init(&u);
	if (len == 0) { /* an empty body is the default message */
		nil.type = RDMX_MP_NIL;
		j = dec_message(&c, m, &nil);
	} else if (rdmx_mp_parse(&u, data, len, &off) != 0 || off != len) {
		fail(&c, "the reply is not one msgpack object (%zu bytes)", len);
	} else {
		j = dec_message(&c, m, &u.data);
	}
	rdmx_mp_doc_fini(&u);
	if (!j)
		return c.failed ? -1 : fail(&c, "out of memory");
	rc = json_print(j, out);
	json_decref(j);
	return rc ? fail(&c, "out of memory") : 0;
}

int pbjson_encode_text(const struct gen_message *m, const char *text, struct jbuf *out, char *err,
                       size_t err_len)
{
	json_t *j = NULL;
	int rc;

	if (json_parse(text, strlen(text), &j, err, err_len))
		return -1;
	rc = pbjson_encode(m, j, out, err, err_len);
	json_free(j);
	return rc;
}
