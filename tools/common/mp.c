#include "mp.h"

#include <stdlib.h>
#include <string.h>

#include <rdmx/codec.h>

/* ---- writing: the codec's encoders into a small buffer, then the sink ---- */

void rdmx_mp_writer_init(struct rdmx_mp_writer *w, void *sink,
                         int (*write)(void *sink, const char *buf, size_t len))
{
	w->write = write;
	w->sink = sink;
}

static int flush(struct rdmx_mp_writer *w, const uint8_t *buf, const struct rdmx_enc *e)
{
	if (e->overflow)
		return -1;
	return w->write(w->sink, (const char *)buf, (size_t)(e->p - buf));
}

int rdmx_mp_pack_nil(struct rdmx_mp_writer *w)
{
	return w->write(w->sink, "\xc0", 1);
}

int rdmx_mp_pack_bool(struct rdmx_mp_writer *w, bool v)
{
	return w->write(w->sink, v ? "\xc3" : "\xc2", 1);
}

/* the fixed-size forms: a number or a header, at most 9 bytes */
enum fixed { F_UINT, F_INT, F_F32, F_F64, F_ARRAY, F_MAP };

static int pack_fixed(struct rdmx_mp_writer *w, enum fixed k, uint64_t u, int64_t i, double d)
{
	uint8_t b[9];
	struct rdmx_enc e;

	rdmx__enc_init(&e, b, sizeof(b));
	switch (k) {
	case F_UINT:
		rdmx__enc_uint(&e, u);
		break;
	case F_INT:
		rdmx__enc_int(&e, i);
		break;
	case F_F32:
		rdmx__enc_f32(&e, (float)d);
		break;
	case F_F64:
		rdmx__enc_f64(&e, d);
		break;
	case F_ARRAY:
		rdmx__enc_array(&e, (size_t)u);
		break;
	case F_MAP:
		rdmx__enc_map(&e, (size_t)u);
		break;
	}
	return flush(w, b, &e);
}

int rdmx_mp_pack_uint(struct rdmx_mp_writer *w, uint64_t v)
{
	return pack_fixed(w, F_UINT, v, 0, 0);
}

int rdmx_mp_pack_int(struct rdmx_mp_writer *w, int64_t v)
{
	return pack_fixed(w, F_INT, 0, v, 0);
}

int rdmx_mp_pack_f32(struct rdmx_mp_writer *w, float v)
{
	return pack_fixed(w, F_F32, 0, 0, v);
}

int rdmx_mp_pack_f64(struct rdmx_mp_writer *w, double v)
{
	return pack_fixed(w, F_F64, 0, 0, v);
}

int rdmx_mp_pack_array(struct rdmx_mp_writer *w, size_t n)
{
	return pack_fixed(w, F_ARRAY, n, 0, 0);
}

int rdmx_mp_pack_map(struct rdmx_mp_writer *w, size_t n)
{
	return pack_fixed(w, F_MAP, n, 0, 0);
}

/* a string or bytes: header and body in one buffer (the codec writes both) */
static int pack_text(struct rdmx_mp_writer *w, const void *p, size_t len, bool str)
{
	uint8_t small[256];
	size_t n = str ? rdmx__size_str(len) : rdmx__size_bin(len);
	uint8_t *b = n <= sizeof(small) ? small : malloc(n);
	struct rdmx_enc e;
	int rc;

	if (!b)
		return -1;
	rdmx__enc_init(&e, b, n);
	if (str)
		rdmx__enc_str(&e, p, len);
	else
		rdmx__enc_bin(&e, p, len);
	rc = flush(w, b, &e);
	if (b != small)
		free(b);
	return rc;
}

int rdmx_mp_pack_str(struct rdmx_mp_writer *w, const char *s, size_t len)
{
	return pack_text(w, s, len, true);
}

int rdmx_mp_pack_bin(struct rdmx_mp_writer *w, const void *p, size_t len)
{
	return pack_text(w, p, len, false);
}

/* ---- reading ---- */

struct rd {
	const uint8_t *p, *end;
};

static bool take(struct rd *r, size_t n, const uint8_t **out)
{
	if ((size_t)(r->end - r->p) < n)
		return false;
	*out = r->p;
	r->p += n;
	return true;
}

/* a big-endian unsigned of n bytes (1, 2, 4, 8) */
static bool be(struct rd *r, size_t n, uint64_t *v)
{
	const uint8_t *q;

	if (!take(r, n, &q))
		return false;
	*v = 0;
	for (size_t i = 0; i < n; i++)
		*v = (*v << 8) | q[i];
	return true;
}

static void obj_free(struct rdmx_mp_obj *o)
{
	if (o->type == RDMX_MP_ARRAY) {
		for (uint32_t i = 0; i < o->via.array.size; i++)
			obj_free(&o->via.array.ptr[i]);
		free(o->via.array.ptr);
	} else if (o->type == RDMX_MP_MAP) {
		for (uint32_t i = 0; i < o->via.map.size; i++) {
			obj_free(&o->via.map.ptr[i].key);
			obj_free(&o->via.map.ptr[i].val);
		}
		free(o->via.map.ptr);
	}
	o->type = RDMX_MP_NIL;
}

static bool parse(struct rd *r, struct rdmx_mp_obj *o, unsigned depth);

static bool text(struct rd *r, struct rdmx_mp_obj *o, enum rdmx_mp_type t, size_t lenlen,
                 uint64_t len)
{
	const uint8_t *q;

	if (lenlen && !be(r, lenlen, &len))
		return false;
	if (!take(r, (size_t)len, &q))
		return false;
	o->type = t;
	o->via.str.size = (uint32_t)len;
	o->via.str.ptr = (const char *)q;
	return true;
}

static bool ext(struct rd *r, struct rdmx_mp_obj *o, size_t lenlen, uint64_t len)
{
	const uint8_t *q;

	if (lenlen && !be(r, lenlen, &len))
		return false;
	if (!take(r, 1, &q)) /* the type byte */
		return false;
	return text(r, o, RDMX_MP_EXT, 0, len);
}

static bool items(struct rd *r, struct rdmx_mp_obj *o, bool map, size_t lenlen, uint64_t n,
                  unsigned depth)
{
	if (lenlen && !be(r, lenlen, &n))
		return false;
	if (depth == 0 || n > (uint64_t)(r->end - r->p)) /* each item takes a byte at least */
		return false;
	if (map) {
		o->type = RDMX_MP_MAP;
		o->via.map.size = 0;
		o->via.map.ptr = n ? calloc((size_t)n, sizeof(*o->via.map.ptr)) : NULL;
		if (n && !o->via.map.ptr)
			return false;
		for (uint64_t i = 0; i < n; i++) {
			o->via.map.size++;
			if (!parse(r, &o->via.map.ptr[i].key, depth - 1) ||
			    !parse(r, &o->via.map.ptr[i].val, depth - 1))
				return false;
		}
	} else {
		o->type = RDMX_MP_ARRAY;
		o->via.array.size = 0;
		o->via.array.ptr = n ? calloc((size_t)n, sizeof(*o->via.array.ptr)) : NULL;
		if (n && !o->via.array.ptr)
			return false;
		for (uint64_t i = 0; i < n; i++) {
			o->via.array.size++;
			if (!parse(r, &o->via.array.ptr[i], depth - 1))
				return false;
		}
	}
	return true;
}

static bool number(struct rd *r, struct rdmx_mp_obj *o, size_t n, bool sign)
{
	uint64_t v;

	if (!be(r, n, &v))
		return false;
	if (sign) {
		int64_t s;

		if (n == 1)
			s = (int8_t)v;
		else if (n == 2)
			s = (int16_t)v;
		else if (n == 4)
			s = (int32_t)v;
		else
			s = (int64_t)v;
		if (s < 0) {
			o->type = RDMX_MP_INT;
			o->via.i64 = s;
			return true;
		}
		v = (uint64_t)s;
	}
	o->type = RDMX_MP_UINT;
	o->via.u64 = v;
	return true;
}

static bool real(struct rd *r, struct rdmx_mp_obj *o, bool f64)
{
	uint64_t v;

	if (!be(r, f64 ? 8 : 4, &v))
		return false;
	if (f64) {
		double d;

		memcpy(&d, &v, sizeof(d));
		o->type = RDMX_MP_F64;
		o->via.f64 = d;
	} else {
		uint32_t u = (uint32_t)v;
		float f;

		memcpy(&f, &u, sizeof(f));
		o->type = RDMX_MP_F32;
		o->via.f64 = f;
	}
	return true;
}

static bool parse(struct rd *r, struct rdmx_mp_obj *o, unsigned depth)
{
	const uint8_t *q;
	uint8_t b;

	o->type = RDMX_MP_NIL;
	if (!take(r, 1, &q))
		return false;
	b = q[0];
	if (b <= 0x7f) {
		o->type = RDMX_MP_UINT;
		o->via.u64 = b;
		return true;
	}
	if (b >= 0xe0) {
		o->type = RDMX_MP_INT;
		o->via.i64 = (int8_t)b;
		return true;
	}
	if (b >= 0xa0 && b <= 0xbf)
		return text(r, o, RDMX_MP_STR, 0, b & 0x1f);
	if (b >= 0x90 && b <= 0x9f)
		return items(r, o, false, 0, b & 0x0f, depth);
	if (b >= 0x80 && b <= 0x8f)
		return items(r, o, true, 0, b & 0x0f, depth);
	switch (b) {
	case 0xc0:
		return true;
	case 0xc2:
	case 0xc3:
		o->type = RDMX_MP_BOOL;
		o->via.boolean = b == 0xc3;
		return true;
	case 0xc4:
	case 0xc5:
	case 0xc6:
		return text(r, o, RDMX_MP_BIN, (size_t)1 << (b - 0xc4), 0);
	case 0xc7:
	case 0xc8:
	case 0xc9:
		return ext(r, o, (size_t)1 << (b - 0xc7), 0);
	case 0xca:
	case 0xcb:
		return real(r, o, b == 0xcb);
	case 0xcc:
	case 0xcd:
	case 0xce:
	case 0xcf:
		return number(r, o, (size_t)1 << (b - 0xcc), false);
	case 0xd0:
	case 0xd1:
	case 0xd2:
	case 0xd3:
		return number(r, o, (size_t)1 << (b - 0xd0), true);
	case 0xd4:
	case 0xd5:
	case 0xd6:
	case 0xd7:
	case 0xd8:
		return ext(r, o, 0, (uint64_t)1 << (b - 0xd4));
	case 0xd9:
	case 0xda:
	case 0xdb:
		return text(r, o, RDMX_MP_STR, (size_t)1 << (b - 0xd9), 0);
	case 0xdc:
	case 0xdd:
		return items(r, o, false, b == 0xdc ? 2 : 4, 0, depth);
	case 0xde:
	case 0xdf:
		return items(r, o, true, b == 0xde ? 2 : 4, 0, depth);
	default: /* 0xc1: never used */
		return false;
	}
}

void rdmx_mp_doc_init(struct rdmx_mp_doc *d)
{
	memset(d, 0, sizeof(*d));
	d->data.type = RDMX_MP_NIL;
}

int rdmx_mp_parse(struct rdmx_mp_doc *d, const void *data, size_t len, size_t *off)
{
	struct rd r;

	obj_free(&d->data);
	if (*off > len)
		return -1;
	r.p = (const uint8_t *)data + *off;
	r.end = (const uint8_t *)data + len;
	if (!parse(&r, &d->data, RDMX_MP_MAX_DEPTH)) {
		obj_free(&d->data);
		return -1;
	}
	*off = (size_t)(r.p - (const uint8_t *)data);
	return 0;
}

void rdmx_mp_doc_fini(struct rdmx_mp_doc *d)
{
	obj_free(&d->data);
}
