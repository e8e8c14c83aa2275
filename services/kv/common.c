/* Helpers both halves of rdmx-kv use: addresses, TLS configs, sizes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/dev.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "cli.h"
#include "kv.h"

int kv_split_addr(const char *s, char *host, size_t host_len, uint16_t *port)
{
	/* the programs' one host:port parser (tools/common/cli.c); kv needs a host */
	if (rdmx_cli_split_addr(s, host, host_len, port) || !*host)
		return -1;
	return 0;
}

struct rdmx_tls_config *kv_tls_config(const struct kv_tls *t, const char *const *peers, int n_peers,
                                      const char *who)
{
	struct rdmx_tls_config *cfg = NULL;
	int rc;

	if (!t->ca || !t->cert || !t->key) {
		fprintf(stderr,
		        "%s: mutual TLS needs --ca, --cert and --key "
		        "(or $RDMX_CA, $RDMX_CERT, $RDMX_KEY)\n",
		        who);
		return NULL;
	}
	rc = rdmx_tls_config_create(&cfg);
	if (!rc)
		rc = rdmx_tls_config_set_ca_file(cfg, t->ca);
	if (!rc)
		rc = rdmx_tls_config_set_cert_key(cfg, t->cert, t->key);
	if (!rc && t->crl)
		rc = rdmx_tls_config_set_crl_file(cfg, t->crl);
	if (!rc)
		rc = rdmx_tls_config_set_allow_insecure_key(cfg, t->allow_insecure_key);
	for (int i = 0; !rc && i < n_peers; i++)
		rc = rdmx_tls_config_add_allowed_peer(cfg, peers[i] ? peers[i] : "*");
	if (!rc && n_peers == 0)
		rc = rdmx_tls_config_add_allowed_peer(cfg, "*"); /* any certificate of the CA */
	if (!rc)
		rc = rdmx_tls_config_load(cfg); /* bad files fail here, not at first use */
	if (rc) {
		if (!rdmx_cli_key_refused("rdmx-kv", t->key, rc))
			fprintf(stderr, "%s: TLS setup (ca %s, cert %s, key %s): %s\n", who, t->ca,
			        t->cert, t->key, rdmx_strerror(rc));
		rdmx_tls_config_destroy(&cfg);
	}
	return cfg;
}

int64_t kv_parse_size(const char *s)
{
	uint64_t v;

	if (rdmx_cli_size(s, &v) || v > (1ull << 40))
		return -1;
	return (int64_t)v;
}

int kv_open_device(struct rdmx_dev **dev, uint64_t *max_msg, uint64_t *max_value, const char *who)
{
	struct rdmx_dev_caps caps;
	int rc = rdmx_dev_open(NULL, dev);

	if (rc) {
		fprintf(stderr, "%s: no device (RDMX_DEVICE=%s): %s\n", who,
		        getenv("RDMX_DEVICE") ? getenv("RDMX_DEVICE") : "", rdmx_strerror(rc));
		return rc;
	}
	*max_msg = KV_MAX_MSG;
	if (rdmx_dev_query_caps(*dev, &caps) == 0 && caps.max_message_size &&
	    caps.max_message_size < *max_msg)
		*max_msg = caps.max_message_size;
	/* room for the request around the value */
	*max_value =
	    *max_msg - KV_MSG_OVERHEAD < KV_MAX_VALUE ? *max_msg - KV_MSG_OVERHEAD : KV_MAX_VALUE;
	return 0;
}
