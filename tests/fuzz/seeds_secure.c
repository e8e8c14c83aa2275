/* Writes the seed corpora of fuzz_bootstrap and fuzz_registry (committed in
 * corpus/): valid messages made by the real encoders where they are
 * reachable (registry, RPC hello) or by the documented format (bootstrap
 * hellos, wire version 3), each behind its target's selector byte, plus a few hostile ones.
 * Run: fuzz_secure_seeds DIR   (writes DIR/fuzz_bootstrap, DIR/fuzz_registry) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <msgpack.h>

#include <rdmx/status.h>

#include "registry_proto.h"
#include "rpc_secure_internal.h"

static char dir[4096];
static int count;

static void put(const char *target, int sel, const void *p, size_t n)
{
	char path[4300];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/seed-%d-%02d", dir, target, sel, count++);
	fp = fopen(path, "wb");
	if (!fp) {
		perror(path);
		exit(1);
	}
	fputc(sel, fp);
	if (n)
		fwrite(p, 1, n, fp);
	fclose(fp);
}

static void put_sb(const char *target, int sel, msgpack_sbuffer *sb)
{
	put(target, sel, sb->data, sb->size);
	msgpack_sbuffer_clear(sb);
}

static void str(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str(pk, strlen(s));
	msgpack_pack_str_body(pk, s, strlen(s));
}

static void bin(msgpack_packer *pk, const void *p, size_t n)
{
	msgpack_pack_bin(pk, n);
	msgpack_pack_bin_body(pk, p, n);
}

/* selector 1 takes two frames: a 2-byte big-endian length, the server's
 * hello, then its answer (see fuzz_bootstrap.c) */
static void put_two(const char *target, msgpack_sbuffer *first, msgpack_sbuffer *second)
{
	size_t n = first->size + second->size;
	uint8_t *p = malloc(2 + n);

	if (!p || first->size > 0xffff)
		exit(1);
	p[0] = (uint8_t)(first->size >> 8);
	p[1] = (uint8_t)first->size;
	memcpy(p + 2, first->data, first->size);
	if (second->size)
		memcpy(p + 2 + first->size, second->data, second->size);
	put(target, 1, p, 2 + n);
	free(p);
	msgpack_sbuffer_clear(first);
	msgpack_sbuffer_clear(second);
}

/* Field numbers of secure/proto/bootstrap.proto (wire version 3): the
 * frames are written with msgpack-c from the documented format. */
enum {
	F_RDMX = 1,
	F_VERSIONS,
	F_VERSION,
	F_NAME,
	F_PROVIDER,
	F_DATA,
	F_DETAILS,
	F_APP,
	F_STATUS,
	F_ERROR
};

static void key(msgpack_packer *pk, uint64_t field)
{
	msgpack_pack_uint64(pk, field);
}

/* the server's hello (wire version 3: it speaks first) */
static void greeting(msgpack_packer *pk, uint32_t version, const char *provider)
{
	msgpack_pack_map(pk, 4);
	key(pk, F_RDMX);
	str(pk, "bootstrap");
	key(pk, F_VERSIONS);
	msgpack_pack_array(pk, 1);
	msgpack_pack_uint32(pk, version);
	key(pk, F_NAME);
	str(pk, "kv-server");
	key(pk, F_PROVIDER);
	str(pk, provider);
}

static void refusal(msgpack_packer *pk, int status, const char *text)
{
	msgpack_pack_map(pk, 2);
	key(pk, F_STATUS);
	msgpack_pack_int(pk, status);
	key(pk, F_ERROR);
	str(pk, text);
}

static void bootstrap_seeds(void)
{
	struct rdmx__rpc_hello h;
	uint8_t app[RDMX__RPC_HELLO_MAX_LEN], details[40];
	size_t app_len;
	msgpack_sbuffer sb, sb2;
	msgpack_packer pk, pk2;

	memset(details, 0x5a, sizeof(details));
	rdmx__rpc_hello_from_opts(NULL, 0, &h);
	h.versions[1] = 7;
	h.n_versions = 2;
	if (rdmx__rpc_hello_encode(&h, app, sizeof(app), &app_len))
		exit(1);
	put("fuzz_bootstrap", 2, app, app_len);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_sbuffer_init(&sb2);
	msgpack_packer_init(&pk2, &sb2, msgpack_sbuffer_write);

	/* client hello (after the server's) */
	msgpack_pack_map(&pk, 6);
	key(&pk, F_RDMX);
	str(&pk, "bootstrap");
	key(&pk, F_VERSION);
	msgpack_pack_uint32(&pk, RDMX_BOOTSTRAP_VERSION);
	key(&pk, F_NAME);
	str(&pk, "kv-client");
	key(&pk, F_PROVIDER);
	str(&pk, "tcp");
	key(&pk, F_DETAILS);
	bin(&pk, details, sizeof(details));
	key(&pk, F_APP);
	bin(&pk, app, app_len);
	put_sb("fuzz_bootstrap", 0, &sb);

	/* a client offering versions, speaking first (as version 1 did) */
	msgpack_pack_map(&pk, 5);
	key(&pk, F_RDMX);
	str(&pk, "bootstrap");
	key(&pk, F_VERSIONS);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_uint32(&pk, 1);
	key(&pk, F_PROVIDER);
	str(&pk, "tcp");
	key(&pk, F_DETAILS);
	bin(&pk, details, sizeof(details));
	key(&pk, F_APP);
	bin(&pk, app, app_len);
	put_sb("fuzz_bootstrap", 0, &sb);

	/* the client did not like the server's hello */
	refusal(&pk, RDMX_E_PROTOCOL, "no common bootstrap version (client speaks 3)");
	put_sb("fuzz_bootstrap", 0, &sb);

	/* server hello, then its answer */
	greeting(&pk, RDMX_BOOTSTRAP_VERSION, "tcp");
	msgpack_pack_map(&pk2, 3);
	key(&pk2, F_VERSION);
	msgpack_pack_uint32(&pk2, RDMX_BOOTSTRAP_VERSION);
	key(&pk2, F_DETAILS);
	bin(&pk2, details, sizeof(details));
	key(&pk2, F_APP);
	bin(&pk2, app, app_len);
	put_two("fuzz_bootstrap", &sb, &sb2);

	/* server hello, then a refusal */
	greeting(&pk, RDMX_BOOTSTRAP_VERSION, "tcp");
	refusal(&pk2, RDMX_E_CONN_REFUSED, "refused by the server application");
	put_two("fuzz_bootstrap", &sb, &sb2);

	/* hellos the client must answer without details */
	greeting(&pk, 99, "tcp");
	put_two("fuzz_bootstrap", &sb, &sb2);
	greeting(&pk, RDMX_BOOTSTRAP_VERSION, "verbs");
	put_two("fuzz_bootstrap", &sb, &sb2);
	refusal(&pk, RDMX_E_PROTOCOL, "no common bootstrap version (server speaks 3)");
	put_two("fuzz_bootstrap", &sb, &sb2);

	/* hostile: repeated key, huge declared array, deep nesting */
	msgpack_pack_map(&pk, 2);
	key(&pk, F_RDMX);
	str(&pk, "bootstrap");
	key(&pk, F_RDMX);
	str(&pk, "bootstrap");
	put_sb("fuzz_bootstrap", 0, &sb);
	put("fuzz_bootstrap", 0, "\x81\x02\xdd\xff\xff\xff\xff", 7);
	put("fuzz_bootstrap", 2, "\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x01", 12);
	msgpack_sbuffer_destroy(&sb);
	msgpack_sbuffer_destroy(&sb2);
}

static void put_buf(const char *target, int sel, int ret, void *buf, size_t len)
{
	if (ret)
		exit(1);
	put(target, sel, buf, len);
	free(buf);
}

static void registry_seeds(void)
{
	struct rdmx_registry_kv meta[2] = {{"zone", "a"}, {"note", "two words"}};
	struct rdmx_registry_member m = {42, "kv", "10.0.0.1:7000", "kv1.svc.local", 10000, 9000,
	                                 2,  meta};
	const struct rdmx_registry_member *ms[1] = {&m};
	struct rdmx__reg_request r;
	void *buf = NULL;
	size_t len = 0;
	int ret;

	for (int op = RDMX__REG_JOIN; op <= RDMX__REG_WATCH; op++) {
		memset(&r, 0, sizeof(r));
		r.id = (uint64_t)op;
		r.op = (enum rdmx__reg_op)op;
		r.service = op == RDMX__REG_LIST ? NULL : "kv";
		if (op == RDMX__REG_JOIN) {
			r.endpoint = "10.0.0.1:7000";
			r.meta = meta;
			r.n_meta = 2;
			r.ttl_ms = 5000;
		}
		if (op == RDMX__REG_HEARTBEAT || op == RDMX__REG_LEAVE) {
			r.service = NULL;
			r.member = 42;
		}
		ret = rdmx__reg_encode_request(&r, &buf, &len);
		put_buf("fuzz_registry", 0, ret, buf, len);
	}
	ret = rdmx__reg_encode_response(1, 0, NULL, 42, 10000, NULL, 0, 0, &buf, &len);
	put_buf("fuzz_registry", 1, ret, buf, len);
	ret = rdmx__reg_encode_response(2, -17, "policy refuses this certificate", 0, 0, NULL, 0, 0,
	                                &buf, &len);
	put_buf("fuzz_registry", 1, ret, buf, len);
	ret = rdmx__reg_encode_response(3, 0, NULL, 0, 0, ms, 1, 1, &buf, &len);
	put_buf("fuzz_registry", 1, ret, buf, len);
	ret = rdmx__reg_encode_event(RDMX_REGISTRY_JOINED, &m, &buf, &len);
	put_buf("fuzz_registry", 1, ret, buf, len);
	ret = rdmx__reg_encode_event(RDMX_REGISTRY_EXPIRED, &m, &buf, &len);
	put_buf("fuzz_registry", 1, ret, buf, len);
	/* an array of 2^32-1 elements in 5 bytes; a member list claiming 65535 */
	put("fuzz_registry", 0, "\xdd\xff\xff\xff\xff", 5);
	put("fuzz_registry", 1, "\x81\x01\x81\x06\x81\x01\xdc\xff\xff", 9);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s", argv[1]);
	bootstrap_seeds();
	registry_seeds();
	printf("%d seeds written under %s\n", count, dir);
	return 0;
}
