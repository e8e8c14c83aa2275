/* protoc-gen-rdmx: the request's bytes made readable by protobuf-c.
 * protoc sends options as set, custom ones included: a custom option is an
 * extension of a *Options message, an unknown field to protobuf-c, and an
 * option of a group type (`optional group G = 50000 {...}` in an `extend`)
 * or an aggregate value holding a group is written with the group wire
 * types, which protobuf-c refuses ("unsupported group tag"): the whole
 * request would not decode. The plugin reads no custom option (protoc has
 * checked them all), so every field the message's protobuf-c descriptor
 * does not know is dropped, at every depth, and the lengths of the
 * messages around are written again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "google/protobuf/compiler/plugin.pb-c.h"
#include "plugin.h"

/* deeper than any descriptor protoc sends (messages nest to 100 levels) */
#define STRIP_MAX_DEPTH 512

/* FieldDescriptorProto.default_value */
#define FIELD_DEFAULT_VALUE 7

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

static bool get_varint(const uint8_t *in, size_t len, size_t *pos, uint64_t *v)
{
	int shift;
	*v = 0;
	for (shift = 0; shift < 64 && *pos < len; shift += 7) {
		uint8_t b = in[(*pos)++];
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* v as a varint at out (NULL: only counted); its size */
static size_t put_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;
	do {
		uint8_t b = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (out)
			out[n] = (uint8_t)(b | (v ? 0x80 : 0));
		n++;
	} while (v);
	return n;
}

/* past the value of a field of wire type wt at *pos (a group: past its
 * end tag, for field number) */
static bool skip_value(const uint8_t *in, size_t len, size_t *pos, unsigned wt, uint64_t field,
                       int depth)
{
	uint64_t v;
	switch (wt) {
	case WT_VARINT:
		return get_varint(in, len, pos, &v);
	case WT_I64:
	case WT_I32: {
		size_t n = wt == WT_I64 ? 8 : 4;
		if (len - *pos < n)
			return false;
		*pos += n;
		return true;
	}
	case WT_LEN:
		if (!get_varint(in, len, pos, &v) || v > len - *pos)
			return false;
		*pos += (size_t)v;
		return true;
	case WT_SGROUP:
		if (depth >= STRIP_MAX_DEPTH)
			return false;
		for (;;) {
			uint64_t tag;
			if (!get_varint(in, len, pos, &tag))
				return false;
			if ((tag & 7) == WT_EGROUP)
				return (tag >> 3) == field;
			if (!skip_value(in, len, pos, (unsigned)(tag & 7), tag >> 3, depth + 1))
				return false;
		}
	default:
		return false;
	}
}

/* the fields of a message of type d in in[0..len) that d knows, its
 * messages stripped the same way, written at out (NULL: only counted); the
 * size written, or -1 when the bytes are not a message */
static long strip(const uint8_t *in, size_t len, const ProtobufCMessageDescriptor *d, uint8_t *out,
                  int depth)
{
	size_t pos = 0, n = 0;
	if (depth >= STRIP_MAX_DEPTH)
		return -1;
	while (pos < len) {
		size_t start = pos;
		uint64_t tag, v;
		unsigned wt;
		const ProtobufCFieldDescriptor *fd;
		if (!get_varint(in, len, &pos, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
			return -1;
		wt = (unsigned)(tag & 7);
		fd = protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3));
		if (fd && wt == WT_LEN && fd->type == PROTOBUF_C_TYPE_MESSAGE) {
			size_t body;
			long inner;
			if (!get_varint(in, len, &pos, &v) || v > len - pos)
				return -1;
			body = pos;
			pos += (size_t)v;
			inner = strip(in + body, (size_t)v, fd->descriptor, NULL, depth + 1);
			if (inner < 0)
				return -1;
			n += put_varint(out ? out + n : NULL, tag);
			n += put_varint(out ? out + n : NULL, (uint64_t)inner);
			if (out)
				strip(in + body, (size_t)v, fd->descriptor, out + n, depth + 1);
			n += (size_t)inner;
			continue;
		}
		if (!skip_value(in, len, &pos, wt, tag >> 3, depth + 1))
			return -1;
		if (!fd || wt == WT_SGROUP)
			continue; /* unknown to protobuf-c: dropped */
		if (out)
			memcpy(out + n, in + start, pos - start);
		n += pos - start;
		if (d == &google__protobuf__field_descriptor_proto__descriptor &&
		    fd->id == FIELD_DEFAULT_VALUE && wt == WT_LEN) {
			/* protobuf-c gives a string as a C string: one holding a NUL
			 * goes again as an unknown field, which keeps its length */
			size_t body = start;
			uint64_t tag2, vlen;
			get_varint(in, len, &body, &tag2);
			get_varint(in, len, &body, &vlen);
			if (memchr(in + body, 0, (size_t)vlen)) {
				n += put_varint(out ? out + n : NULL,
				                (uint64_t)RDMX_PLUGIN_DEFAULT_BYTES << 3 | WT_LEN);
				n += put_varint(out ? out + n : NULL, vlen);
				if (out)
					memcpy(out + n, in + body, (size_t)vlen);
				n += (size_t)vlen;
			}
		}
	}
	return (long)n;
}

Google__Protobuf__Compiler__CodeGeneratorRequest *rdmx_plugin_unpack(const uint8_t *in, size_t len)
{
	const ProtobufCMessageDescriptor *d =
	    &google__protobuf__compiler__code_generator_request__descriptor;
	Google__Protobuf__Compiler__CodeGeneratorRequest *req;
	long n = strip(in, len, d, NULL, 0);
	uint8_t *out;
	if (n < 0)
		return NULL;
	out = malloc(n ? (size_t)n : 1);
	if (!out)
		return NULL;
	strip(in, len, d, out, 0);
	req = google__protobuf__compiler__code_generator_request__unpack(NULL, (size_t)n, out);
	free(out);
	return req;
}
