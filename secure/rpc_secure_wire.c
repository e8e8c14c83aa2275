/* The RPC hello: what the secure RPC layer puts in the bootstrap's app-data
 * slot (see rpc_secure_internal.h). The bytes come from a peer that holds a
 * certificate of the cluster, which is no reason to trust them: they are
 * walked before msgpack-c sees them and every field is range-checked. */
#include <stdio.h>
#include <string.h>

#include <msgpack.h>

#include <rdmx/channel.h>
#include <rdmx/status.h>

#include "registry_proto.h"
#include "rpc_secure_internal.h"

#define KEY_VERSIONS "rdmx-rpc"

static int slot_count_ok(uint64_t v)
{
	return v >= RDMX_CHAN_MIN_SLOT_COUNT && v <= RDMX_CHAN_MAX_SLOT_COUNT;
}

static int slot_size_ok(uint64_t v)
{
	return v >= RDMX_CHAN_MIN_SLOT_SIZE && v <= RDMX_CHAN_MAX_SLOT_SIZE && v % 64 == 0;
}

static int max_msg_ok(uint64_t v)
{
	return v >= 1 && v <= RDMX_CHAN_MAX_MSG_SIZE_LIMIT;
}

int rdmx__rpc_hello_from_opts(const struct rdmx_rpc_secure_opts *opts, uint64_t dev_max_msg,
                              struct rdmx__rpc_hello *h)
{
	memset(h, 0, sizeof(*h));
	h->versions[0] = RDMX_RPC_SECURE_VERSION;
	h->n_versions = 1;
	h->slot_count = opts && opts->slot_count ? opts->slot_count : RDMX_CHAN_DEFAULT_SLOT_COUNT;
	h->slot_size = opts && opts->slot_size ? opts->slot_size : RDMX_CHAN_DEFAULT_SLOT_SIZE;
	if (opts && opts->max_msg_size) {
		h->max_msg = opts->max_msg_size;
	} else {
		h->max_msg = RDMX_CHAN_DEFAULT_MAX_MSG_SIZE;
		if (dev_max_msg && dev_max_msg < h->max_msg)
			h->max_msg = dev_max_msg;
	}
	if (!slot_count_ok(h->slot_count) || !slot_size_ok(h->slot_size) || !max_msg_ok(h->max_msg))
		return RDMX_E_INVAL;
	return RDMX_OK;
}

static void pack_key(msgpack_packer *pk, const char *key)
{
	size_t n = strlen(key);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, key, n);
}

int rdmx__rpc_hello_encode(const struct rdmx__rpc_hello *h, void *buf, size_t cap, size_t *len)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int ret = RDMX_OK;

	if (!h || !buf || !len || !h->n_versions || h->n_versions > RDMX__RPC_HELLO_MAX_VERSIONS ||
	    !slot_count_ok(h->slot_count) || !slot_size_ok(h->slot_size) || !max_msg_ok(h->max_msg))
		return RDMX_E_INVAL;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 4);
	pack_key(&pk, KEY_VERSIONS);
	msgpack_pack_array(&pk, h->n_versions);
	for (uint32_t i = 0; i < h->n_versions; i++)
		msgpack_pack_uint32(&pk, h->versions[i]);
	pack_key(&pk, "slots");
	msgpack_pack_uint32(&pk, h->slot_count);
	pack_key(&pk, "slot_size");
	msgpack_pack_uint32(&pk, h->slot_size);
	pack_key(&pk, "max_msg");
	msgpack_pack_uint64(&pk, h->max_msg);
	if (!sb.data || sb.size > cap) {
		ret = sb.data ? RDMX_E_TOO_BIG : RDMX_E_NOMEM;
	} else {
		memcpy(buf, sb.data, sb.size);
		*len = sb.size;
	}
	msgpack_sbuffer_destroy(&sb);
	return ret;
}

int rdmx__rpc_hello_has_version(const struct rdmx__rpc_hello *h, uint32_t version)
{
	for (uint32_t i = 0; i < h->n_versions; i++)
		if (h->versions[i] == version)
			return 1;
	return 0;
}

static int key_is(const msgpack_object *k, const char *name)
{
	size_t n = strlen(name);

	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
	       memcmp(k->via.str.ptr, name, n) == 0;
}

#define BAD(...) (snprintf(why, why_len, __VA_ARGS__), RDMX_E_PROTOCOL)

static int get_uint(const msgpack_object *v, uint64_t *out)
{
	if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return 0;
	*out = v->via.u64;
	return 1;
}

static int decode_map(const msgpack_object *o, struct rdmx__rpc_hello *h, char *why, size_t why_len)
{
	static const char *const keys[] = {KEY_VERSIONS, "slots", "slot_size", "max_msg"};
	unsigned seen = 0;

	if (o->type != MSGPACK_OBJECT_MAP || o->via.map.size > 16)
		return BAD("rpc hello is not a map of at most 16 keys");
	for (uint32_t i = 0; i < o->via.map.size; i++) {
		const msgpack_object *k = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
		uint64_t u = 0;
		int idx = -1;

		for (int j = 0; j < 4; j++)
			if (key_is(k, keys[j]))
				idx = j;
		if (idx < 0)
			continue;
		if (seen & (1u << idx))
			return BAD("rpc hello repeats key '%s'", keys[idx]);
		seen |= 1u << idx;
		switch (idx) {
		case 0:
			if (v->type != MSGPACK_OBJECT_ARRAY || !v->via.array.size ||
			    v->via.array.size > RDMX__RPC_HELLO_MAX_VERSIONS)
				return BAD("rpc hello: '%s' is not an array of 1 to %u versions",
				           KEY_VERSIONS, RDMX__RPC_HELLO_MAX_VERSIONS);
			for (uint32_t j = 0; j < v->via.array.size; j++) {
				if (!get_uint(&v->via.array.ptr[j], &u) || u > 0xffff)
					return BAD("rpc hello: '%s' holds a non-version",
					           KEY_VERSIONS);
				h->versions[h->n_versions++] = (uint32_t)u;
			}
			break;
		case 1:
			if (!get_uint(v, &u) || !slot_count_ok(u))
				return BAD("rpc hello: slot count out of %u..%u",
				           RDMX_CHAN_MIN_SLOT_COUNT, RDMX_CHAN_MAX_SLOT_COUNT);
			h->slot_count = (uint32_t)u;
			break;
		case 2:
			if (!get_uint(v, &u) || !slot_size_ok(u))
				return BAD("rpc hello: slot size not a multiple of 64 in %u..%u",
				           RDMX_CHAN_MIN_SLOT_SIZE, RDMX_CHAN_MAX_SLOT_SIZE);
			h->slot_size = (uint32_t)u;
			break;
		case 3:
			if (!get_uint(v, &u) || !max_msg_ok(u))
				return BAD("rpc hello: max message size out of 1..%u",
				           RDMX_CHAN_MAX_MSG_SIZE_LIMIT);
			h->max_msg = u;
			break;
		}
	}
	if (seen != 0xfu)
		return BAD("rpc hello lacks a field (versions, slots, slot_size, max_msg)");
	return RDMX_OK;
}

int rdmx__rpc_hello_decode(const void *buf, size_t len, struct rdmx__rpc_hello *h, char *why,
                           size_t why_len)
{
	struct rdmx__rpc_hello tmp;
	msgpack_unpacked u;
	size_t off = 0;
	int ret;

	memset(&tmp, 0, sizeof(tmp));
	if (!buf || !len)
		return BAD("no rpc hello in the bootstrap's app data");
	if (len > RDMX__RPC_HELLO_MAX_LEN)
		return BAD("rpc hello of %zu bytes (at most %u)", len, RDMX__RPC_HELLO_MAX_LEN);
	if (rdmx__msgpack_precheck(buf, len))
		return BAD("rpc hello is malformed msgpack");
	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, buf, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len)
		ret = BAD("rpc hello is malformed msgpack");
	else
		ret = decode_map(&u.data, &tmp, why, why_len);
	msgpack_unpacked_destroy(&u);
	if (!ret)
		*h = tmp;
	return ret;
}
