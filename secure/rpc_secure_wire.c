/* The RPC hello: what the secure RPC layer puts in the bootstrap's app-data
 * slot (see rpc_secure_internal.h). Its format is secure/proto/rpc_hello.proto,
 * carried by the code rdmx-gen generates from it (the project's codec). The
 * bytes come from a peer that holds a certificate of the cluster, which is no
 * reason to trust them: the generated decoder bounds every length, count and
 * depth, and every field is range-checked here. */
#include <stdio.h>
#include <string.h>

#include <rdmx/channel.h>
#include <rdmx/codec.h>
#include <rdmx/status.h>

#include "rpc_hello.rdmx.h"
#include "rpc_secure_internal.h"

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

int rdmx__rpc_hello_encode(const struct rdmx__rpc_hello *h, void *buf, size_t cap, size_t *len)
{
	rdmx__wire_RpcHello m;
	size_t n;
	int ret;

	if (!h || !buf || !len || !h->n_versions || h->n_versions > RDMX__RPC_HELLO_MAX_VERSIONS ||
	    !slot_count_ok(h->slot_count) || !slot_size_ok(h->slot_size) || !max_msg_ok(h->max_msg))
		return RDMX_E_INVAL;
	rdmx__wire_RpcHello_init(&m);
	m.n_versions = h->n_versions;
	m.versions = (uint32_t *)h->versions; /* read only: the encoder takes a const msg */
	m.slots = h->slot_count;
	m.slot_size = h->slot_size;
	m.max_msg = h->max_msg;
	n = rdmx__wire_RpcHello_encoded_size(&m);
	if (n > cap)
		return RDMX_E_TOO_BIG;
	ret = rdmx__wire_RpcHello_encode(&m, buf, n);
	if (!ret)
		*len = n;
	return ret;
}

int rdmx__rpc_hello_has_version(const struct rdmx__rpc_hello *h, uint32_t version)
{
	for (uint32_t i = 0; i < h->n_versions; i++)
		if (h->versions[i] == version)
			return 1;
	return 0;
}

#define BAD(...) (snprintf(why, why_len, __VA_ARGS__), RDMX_E_PROTOCOL)

/* The decoded fields against the channel's ranges (the codec has checked the
 * msgpack and the types; absent fields are 0 and fail here). */
static int check(const rdmx__wire_RpcHello *m, struct rdmx__rpc_hello *h, char *why, size_t why_len)
{
	if (!m->n_versions || m->n_versions > RDMX__RPC_HELLO_MAX_VERSIONS)
		return BAD("rpc hello: field 1 (versions) holds %zu versions, not 1 to %u (this "
		           "side speaks rpc version %u)",
		           m->n_versions, RDMX__RPC_HELLO_MAX_VERSIONS, RDMX_RPC_SECURE_VERSION);
	for (size_t i = 0; i < m->n_versions; i++) {
		if (m->versions[i] > 0xffff)
			return BAD("rpc hello: field 1 (versions) holds a non-version");
		h->versions[i] = m->versions[i];
	}
	h->n_versions = (uint32_t)m->n_versions;
	if (!slot_count_ok(m->slots))
		return BAD("rpc hello: slot count out of %u..%u", RDMX_CHAN_MIN_SLOT_COUNT,
		           RDMX_CHAN_MAX_SLOT_COUNT);
	if (!slot_size_ok(m->slot_size))
		return BAD("rpc hello: slot size not a multiple of 64 in %u..%u",
		           RDMX_CHAN_MIN_SLOT_SIZE, RDMX_CHAN_MAX_SLOT_SIZE);
	if (!max_msg_ok(m->max_msg))
		return BAD("rpc hello: max message size out of 1..%u",
		           RDMX_CHAN_MAX_MSG_SIZE_LIMIT);
	h->slot_count = m->slots;
	h->slot_size = m->slot_size;
	h->max_msg = m->max_msg;
	return RDMX_OK;
}

int rdmx__rpc_hello_decode(const void *buf, size_t len, struct rdmx__rpc_hello *h, char *why,
                           size_t why_len)
{
	/* an input of at most RDMX__RPC_HELLO_MAX_LEN bytes holds fewer versions
	 * than fit here: the arena never reaches the heap */
	_Alignas(8) unsigned char mem[4 * RDMX__RPC_HELLO_MAX_LEN + 64];
	const struct rdmx_decode_opts opts = {.max_depth = 4, .max_alloc = sizeof(mem)};
	struct rdmx__rpc_hello tmp;
	struct rdmx_arena arena;
	rdmx__wire_RpcHello m;
	int ret;

	memset(&tmp, 0, sizeof(tmp));
	if (!buf || !len)
		return BAD("no rpc hello in the bootstrap's app data");
	if (len > RDMX__RPC_HELLO_MAX_LEN)
		return BAD("rpc hello of %zu bytes (at most %u)", len, RDMX__RPC_HELLO_MAX_LEN);
	rdmx_arena_init(&arena, mem, sizeof(mem), sizeof(mem));
	ret = rdmx__wire_RpcHello_decode(&m, buf, len, &arena, &opts);
	if (ret)
		ret = BAD("rpc hello does not decode as rpc version %u (%s)",
		          RDMX_RPC_SECURE_VERSION, rdmx_err_name(ret));
	else
		ret = check(&m, &tmp, why, why_len);
	rdmx_arena_fini(&arena);
	if (!ret)
		*h = tmp;
	return ret;
}
