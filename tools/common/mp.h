/* Any msgpack value, for the programs that handle messages without their
 * generated types (rdmx-call's JSON conversion): a writer over a byte sink
 * on the codec's encoders (rdmx/codec.h), and a reader into a tree.
 * Integers are written in their smallest form, as the codec writes them. */
#ifndef RDMX_TOOLS_MP_H
#define RDMX_TOOLS_MP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- writing ---- */

struct rdmx_mp_writer {
	/* 0, or non-zero to stop: what the pack functions then return */
	int (*write)(void *sink, const char *buf, size_t len);
	void *sink;
};

void rdmx_mp_writer_init(struct rdmx_mp_writer *w, void *sink,
                         int (*write)(void *sink, const char *buf, size_t len));
/* Each: 0, or the sink's non-zero answer (-1 when out of memory). */
int rdmx_mp_pack_nil(struct rdmx_mp_writer *w);
int rdmx_mp_pack_bool(struct rdmx_mp_writer *w, bool v);
int rdmx_mp_pack_uint(struct rdmx_mp_writer *w, uint64_t v);
int rdmx_mp_pack_int(struct rdmx_mp_writer *w, int64_t v);
int rdmx_mp_pack_f32(struct rdmx_mp_writer *w, float v);
int rdmx_mp_pack_f64(struct rdmx_mp_writer *w, double v);
int rdmx_mp_pack_str(struct rdmx_mp_writer *w, const char *s, size_t len);
int rdmx_mp_pack_bin(struct rdmx_mp_writer *w, const void *p, size_t len);
/* Headers: n elements (a map: n key/value pairs) follow. */
int rdmx_mp_pack_array(struct rdmx_mp_writer *w, size_t n);
int rdmx_mp_pack_map(struct rdmx_mp_writer *w, size_t n);

/* ---- reading ---- */

enum rdmx_mp_type {
	RDMX_MP_NIL,
	RDMX_MP_BOOL,
	RDMX_MP_UINT, /* u64: 0 and up */
	RDMX_MP_INT,  /* i64: below 0 */
	RDMX_MP_F32,  /* f64 */
	RDMX_MP_F64,  /* f64 */
	RDMX_MP_STR,  /* str */
	RDMX_MP_BIN,  /* bin */
	RDMX_MP_ARRAY,
	RDMX_MP_MAP,
	RDMX_MP_EXT, /* bin: the data after the type byte */
};

struct rdmx_mp_kv;

struct rdmx_mp_obj {
	enum rdmx_mp_type type;
	union {
		bool boolean;
		uint64_t u64;
		int64_t i64;
		double f64;
		struct {
			uint32_t size;
			const char *ptr; /* into the parsed bytes */
		} str, bin;
		struct {
			uint32_t size;
			struct rdmx_mp_obj *ptr;
		} array;
		struct {
			uint32_t size;
			struct rdmx_mp_kv *ptr;
		} map;
	} via;
};

struct rdmx_mp_kv {
	struct rdmx_mp_obj key, val;
};

/* One parsed value; strings point into the bytes given, which must outlive it. */
struct rdmx_mp_doc {
	struct rdmx_mp_obj data;
};

#define RDMX_MP_MAX_DEPTH 64

void rdmx_mp_doc_init(struct rdmx_mp_doc *d);
/* Parses the value at data + *off (replacing what d held), *off moved past
 * it: 0, or -1 on truncated or malformed bytes, nesting deeper than
 * RDMX_MP_MAX_DEPTH or no memory (d then holds nil). */
int rdmx_mp_parse(struct rdmx_mp_doc *d, const void *data, size_t len, size_t *off);
void rdmx_mp_doc_fini(struct rdmx_mp_doc *d);

#endif
