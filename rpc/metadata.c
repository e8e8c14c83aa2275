/* Call metadata: the ordered key/value list of rdmx/rpc_stream.h and its
 * wire form (private, rpc_priv.h): u16 count, then per entry u8 key length,
 * the key, u32 value length, the value; little-endian. The decoder checks
 * every key and value as rdmx_rpc_md_add does. */
#include <stdlib.h>
#include <string.h>

#include "rpc_priv.h"

void rdmx_rpc_md_init(struct rdmx_rpc_md *md)
{
	if (md)
		memset(md, 0, sizeof(*md));
}

void rdmx_rpc_md_fini(struct rdmx_rpc_md *md)
{
	if (!md)
		return;
	for (size_t i = 0; i < md->n; i++) {
		free(md->v[i].key);
		free(md->v[i].value);
	}
	free(md->v);
	memset(md, 0, sizeof(*md));
}

static bool key_valid_n(const char *key, size_t n)
{
	if (n == 0 || n > RDMX_RPC_MD_MAX_KEY)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = key[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		      c == '.'))
			return false;
	}
	return true;
}

bool rdmx_rpc_md_key_valid(const char *key)
{
	return key && key_valid_n(key, strlen(key));
}

static bool is_bin(const char *key, size_t n)
{
	return n >= 4 && memcmp(key + n - 4, "-bin", 4) == 0;
}

static bool value_valid(const char *key, size_t klen, const void *value, size_t len)
{
	const unsigned char *p = value;

	if (is_bin(key, klen))
		return true;
	for (size_t i = 0; i < len; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return false;
	return true;
}

static int md_add_n(struct rdmx_rpc_md *md, const char *key, size_t klen, const void *value,
                    size_t len)
{
	struct rdmx_rpc_md_entry *e;

	if (md->n == md->cap) {
		size_t cap = md->cap ? md->cap * 2 : 4;
		struct rdmx_rpc_md_entry *v = realloc(md->v, cap * sizeof(*v));

		if (!v)
			return RDMX_E_NOMEM;
		md->v = v;
		md->cap = cap;
	}
	e = &md->v[md->n];
	e->key = malloc(klen + 1);
	e->value = malloc(len ? len : 1);
	if (!e->key || !e->value) {
		free(e->key);
		free(e->value);
		return RDMX_E_NOMEM;
	}
	memcpy(e->key, key, klen);
	e->key[klen] = '\0';
	if (len)
		memcpy(e->value, value, len);
	e->len = len;
	md->n++;
	md->bytes += klen + len + RDMX_RPC_MD_ENTRY_OVERHEAD;
	return 0;
}

int rdmx_rpc_md_add(struct rdmx_rpc_md *md, const char *key, const void *value, size_t len)
{
	size_t klen;

	if (!md || !key || (len && !value) || len > UINT32_MAX)
		return RDMX_E_INVAL;
	klen = strlen(key);
	if (!key_valid_n(key, klen) || !value_valid(key, klen, value, len))
		return RDMX_E_INVAL;
	return md_add_n(md, key, klen, value, len);
}

int rdmx_rpc_md_get(const struct rdmx_rpc_md *md, const char *key, const void **value, size_t *len)
{
	if (!md || !key)
		return RDMX_E_NOT_FOUND;
	for (size_t i = 0; i < md->n; i++) {
		if (strcmp(md->v[i].key, key) == 0) {
			if (value)
				*value = md->v[i].value;
			if (len)
				*len = md->v[i].len;
			return 0;
		}
	}
	return RDMX_E_NOT_FOUND;
}

size_t rdmx_rpc_md_count(const struct rdmx_rpc_md *md)
{
	return md ? md->n : 0;
}

void rdmx__md_truncate(struct rdmx_rpc_md *md, size_t n)
{
	while (md->n > n) {
		struct rdmx_rpc_md_entry *e = &md->v[--md->n];

		md->bytes -= strlen(e->key) + e->len + RDMX_RPC_MD_ENTRY_OVERHEAD;
		free(e->key);
		free(e->value);
	}
}

int rdmx_rpc_md_append(struct rdmx_rpc_md *dst, const struct rdmx_rpc_md *src)
{
	size_t n0;

	if (!dst)
		return RDMX_E_INVAL;
	n0 = dst->n;
	for (size_t i = 0; src && i < src->n; i++) {
		int rc = md_add_n(dst, src->v[i].key, strlen(src->v[i].key), src->v[i].value,
		                  src->v[i].len);

		if (rc) {
			rdmx__md_truncate(dst, n0); /* all of src, or nothing */
			return rc;
		}
	}
	return 0;
}

/* ---- wire ---- */

size_t rdmx__md_wire_size(const struct rdmx_rpc_md *md)
{
	size_t n = 2;

	for (size_t i = 0; md && i < md->n; i++)
		n += 1 + strlen(md->v[i].key) + 4 + md->v[i].len;
	return n;
}

size_t rdmx__md_encode(const struct rdmx_rpc_md *md, uint8_t *dst)
{
	size_t off = 2;

	rdmx__st16(dst, (uint16_t)(md ? md->n : 0));
	for (size_t i = 0; md && i < md->n; i++) {
		size_t klen = strlen(md->v[i].key);

		dst[off++] = (uint8_t)klen;
		memcpy(dst + off, md->v[i].key, klen);
		off += klen;
		rdmx__st32(dst + off, (uint32_t)md->v[i].len);
		off += 4;
		if (md->v[i].len)
			memcpy(dst + off, md->v[i].value, md->v[i].len);
		off += md->v[i].len;
	}
	return off;
}

int rdmx__md_decode(const uint8_t *p, size_t len, struct rdmx_rpc_md *md, size_t *used,
                    const char **why)
{
	size_t off = 2, count;

	if (len < 2) {
		*why = "rpc metadata block truncated";
		return RDMX_E_PROTOCOL;
	}
	count = rdmx__ld16(p);
	for (size_t i = 0; i < count; i++) {
		size_t klen, vlen;
		const char *key;

		if (len - off < 1) {
			*why = "rpc metadata entry truncated";
			return RDMX_E_PROTOCOL;
		}
		klen = p[off++];
		if (len - off < klen + 4) {
			*why = "rpc metadata key truncated";
			return RDMX_E_PROTOCOL;
		}
		key = (const char *)p + off;
		off += klen;
		vlen = rdmx__ld32(p + off);
		off += 4;
		if (len - off < vlen) {
			*why = "rpc metadata value truncated";
			return RDMX_E_PROTOCOL;
		}
		if (!key_valid_n(key, klen) || !value_valid(key, klen, p + off, vlen)) {
			*why = "rpc metadata with an invalid key or value";
			return RDMX_E_PROTOCOL;
		}
		if (md_add_n(md, key, klen, p + off, vlen))
			return RDMX_E_NOMEM;
		off += vlen;
	}
	*used = off;
	return 0;
}
