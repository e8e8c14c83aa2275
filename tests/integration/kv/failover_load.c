/* Load through the generated stubs' service channel (kv_KV_connect_service,
 * kv_KV_<M>_balanced): N blocking calls of one method to every kv instance
 * the registry lists; right after call KILL_AT it kills (SIGKILL) the
 * process VICTIM_PID (a kv instance, or an etcd member), then goes on.
 * get-once: a get on a member the balancer picks, never retried (the
 * figure without retries). One line on stdout:
 *   calls N ok O answered A unavailable U other X retries R
 * (ok: RDMX_RPC_OK; answered: another status from a server, NOT_FOUND for a
 * missing key; unavailable: UNAVAILABLE; other: anything else).
 *   failover_load REGISTRY SERVICE CA CERT KEY get|put|get-once N KILL_AT VICTIM_PID */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/registry.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "kv.rdmx.h"

static struct rdmx_tls_config *tls_config(const char *ca, const char *cert, const char *key)
{
	struct rdmx_tls_config *cfg = NULL;
	int rc = rdmx_tls_config_create(&cfg);

	if (!rc)
		rc = rdmx_tls_config_set_ca_file(cfg, ca);
	if (!rc)
		rc = rdmx_tls_config_set_cert_key(cfg, cert, key);
	if (!rc)
		rc = rdmx_tls_config_add_allowed_peer(cfg, "*");
	if (!rc)
		rc = rdmx_tls_config_load(cfg);
	if (rc) {
		fprintf(stderr, "failover_load: tls: %s\n", rdmx_strerror(rc));
		rdmx_tls_config_destroy(&cfg);
	}
	return cfg;
}

/* A get without retries: the balancer's pick, the plain stub, done. */
static int get_once(struct rdmx_registry_balancer *b, const kv_GetRequest *req,
                    kv_GetResponse *resp, struct rdmx_arena *arena,
                    const struct rdmx_rpc_call_opts *co, struct rdmx_rpc_status *st)
{
	struct rdmx_rpc_secure_conn *conn = NULL;
	uint64_t member = 0;
	void *c = NULL;
	int rc = rdmx_registry_balancer_pick(b, &c, &member, NULL);

	if (rc)
		return rc == RDMX_E_AGAIN ? RDMX_RPC_UNAVAILABLE : rc;
	conn = c;
	rc = kv_KV_Get(rdmx_rpc_secure_conn_get_ep(conn), req, resp, arena, co, st);
	if (rc < 0 || rc == RDMX_RPC_UNAVAILABLE) {
		rdmx_registry_balancer_done(b, member, RDMX_E_DISCONNECTED);
		return RDMX_RPC_UNAVAILABLE;
	}
	rdmx_registry_balancer_done(b, member, rc);
	return rc;
}

static int one_call(struct rdmx_registry_balancer *b, int mode, int i, char *msg, size_t len)
{
	struct rdmx_rpc_call_opts co = {10u * 1000000u, false};
	struct rdmx_rpc_status st = {0, NULL};
	struct rdmx_arena arena;
	char key[32];
	int rc;

	snprintf(key, sizeof(key), "k%d", i);
	rdmx_arena_init(&arena, NULL, 0, 0);
	if (mode == 1) {
		kv_PutRequest req;
		kv_PutResponse resp;

		kv_PutRequest_init(&req);
		kv_PutResponse_init(&resp);
		req.key = rdmx_str_c(key);
		req.value = rdmx_bytes_n("v", 1);
		rc = kv_KV_Put_balanced(b, &req, &resp, &arena, &co, &st);
	} else {
		kv_GetRequest req;
		kv_GetResponse resp;

		kv_GetRequest_init(&req);
		kv_GetResponse_init(&resp);
		req.key = rdmx_str_c(key);
		rc = mode == 2 ? get_once(b, &req, &resp, &arena, &co, &st)
		               : kv_KV_Get_balanced(b, &req, &resp, &arena, &co, &st);
	}
	snprintf(msg, len, "%s", st.message ? st.message : "");
	rdmx_arena_fini(&arena);
	return rc;
}

int main(int argc, char **argv)
{
	struct rdmx_registry_balancer *b = NULL;
	struct rdmx_tls_config *cfg;
	unsigned ok = 0, answered = 0, unavailable = 0, other = 0;
	char msg[256];
	int mode, n, kill_at, rc;
	long victim;

	if (argc != 10) {
		fprintf(stderr,
		        "usage: failover_load REGISTRY SERVICE CA CERT KEY get|put|get-once N "
		        "KILL_AT VICTIM_PID\n");
		return 2;
	}
	mode = !strcmp(argv[6], "put") ? 1 : !strcmp(argv[6], "get-once") ? 2 : 0;
	n = atoi(argv[7]);
	kill_at = atoi(argv[8]);
	victim = atol(argv[9]);
	cfg = tls_config(argv[3], argv[4], argv[5]);
	if (!cfg)
		return 1;
	rc = kv_KV_connect_service(argv[1], argv[2], cfg, &b);
	if (rc) {
		fprintf(stderr, "failover_load: registry %s: %s\n", argv[1], rdmx_strerror(rc));
		rdmx_tls_config_destroy(&cfg);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		rc = one_call(b, mode, i, msg, sizeof(msg));
		if (rc == RDMX_RPC_OK)
			ok++;
		else if (rc == RDMX_RPC_UNAVAILABLE) {
			unavailable++;
			fprintf(stderr, "failover_load: call %d: UNAVAILABLE: %s\n", i, msg);
		} else if (rc > 0)
			answered++;
		else {
			other++;
			fprintf(stderr, "failover_load: call %d: %s\n", i, rdmx_strerror(rc));
		}
		if (i + 1 == kill_at && victim > 0 && kill((pid_t)victim, SIGKILL) != 0)
			perror("failover_load: kill");
	}
	printf("calls %d ok %u answered %u unavailable %u other %u retries %llu\n", n, ok, answered,
	       unavailable, other, (unsigned long long)rdmx_registry_balancer_get_retries(b));
	rdmx_registry_balancer_destroy(&b);
	rdmx_tls_config_destroy(&cfg);
	return 0;
}
