/* TLS configuration: files, allow-list, limits, and the two SSL_CTXs
 * (server and client role) built from them on first use. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "tls_internal.h"

struct rdmx_tls_config {
	atomic_int refs;
	pthread_mutex_t lock; /* guards the build of the SSL_CTXs */
	int frozen;

	char *ca_file;
	char *ca_dir;
	char *cert_file;
	char *key_file;
	char *crl_file;
	char **names;
	size_t n_names;

	bool allow_insecure_key;
	bool data_plaintext;
	atomic_uint logged; /* rdmx__tls_config_once bits */

	uint32_t handshake_timeout_ms;
	uint32_t max_frame;
	uint32_t max_handshakes;
	uint32_t max_handshakes_per_source;

	SSL_CTX *ssl_ctx[2]; /* indexed by enum rdmx_tls_role */
	int load_err;        /* sticky result of a failed build */
};

int rdmx_tls_config_create(struct rdmx_tls_config **cfg)
{
	struct rdmx_tls_config *c;

	if (!cfg)
		return RDMX_E_INVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return RDMX_E_NOMEM;
	atomic_init(&c->refs, 1);
	if (pthread_mutex_init(&c->lock, NULL) != 0) {
		free(c);
		return RDMX_E_NOMEM;
	}
	c->handshake_timeout_ms = RDMX_TLS_DEFAULT_HANDSHAKE_TIMEOUT_MS;
	c->max_frame = RDMX_TLS_DEFAULT_MAX_FRAME;
	c->max_handshakes = RDMX_TLS_DEFAULT_MAX_HANDSHAKES;
	c->max_handshakes_per_source = RDMX_TLS_DEFAULT_MAX_HANDSHAKES_PER_SOURCE;
	*cfg = c;
	return RDMX_OK;
}

static void config_free(struct rdmx_tls_config *c)
{
	SSL_CTX_free(c->ssl_ctx[0]);
	SSL_CTX_free(c->ssl_ctx[1]);
	for (size_t i = 0; i < c->n_names; i++)
		free(c->names[i]);
	free(c->names);
	free(c->ca_file);
	free(c->ca_dir);
	free(c->cert_file);
	free(c->key_file);
	free(c->crl_file);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void rdmx__tls_config_ref(struct rdmx_tls_config *cfg)
{
	atomic_fetch_add(&cfg->refs, 1);
}

void rdmx__tls_config_unref(struct rdmx_tls_config *cfg)
{
	if (cfg && atomic_fetch_sub(&cfg->refs, 1) == 1)
		config_free(cfg);
}

int rdmx_tls_config_destroy(struct rdmx_tls_config **cfg)
{
	if (!cfg || !*cfg)
		return RDMX_OK;
	rdmx__tls_config_unref(*cfg);
	*cfg = NULL;
	return RDMX_OK;
}

static int check_mutable(struct rdmx_tls_config *cfg)
{
	int frozen;

	if (!cfg)
		return RDMX_E_INVAL;
	pthread_mutex_lock(&cfg->lock);
	frozen = cfg->frozen;
	pthread_mutex_unlock(&cfg->lock);
	return frozen ? RDMX_E_BAD_STATE : RDMX_OK;
}

static int set_path(struct rdmx_tls_config *cfg, char **slot, const char *path)
{
	int ret = check_mutable(cfg);
	char *copy;

	if (ret)
		return ret;
	if (!path || !*path)
		return RDMX_E_INVAL;
	copy = strdup(path);
	if (!copy)
		return RDMX_E_NOMEM;
	free(*slot);
	*slot = copy;
	return RDMX_OK;
}

int rdmx_tls_config_set_ca_file(struct rdmx_tls_config *cfg, const char *path)
{
	return set_path(cfg, cfg ? &cfg->ca_file : NULL, path);
}

int rdmx_tls_config_set_ca_dir(struct rdmx_tls_config *cfg, const char *path)
{
	return set_path(cfg, cfg ? &cfg->ca_dir : NULL, path);
}

int rdmx_tls_config_set_crl_file(struct rdmx_tls_config *cfg, const char *path)
{
	return set_path(cfg, cfg ? &cfg->crl_file : NULL, path);
}

int rdmx_tls_config_set_cert_key(struct rdmx_tls_config *cfg, const char *cert_path,
                                 const char *key_path)
{
	int ret;

	if (!cert_path || !*cert_path || !key_path || !*key_path)
		return RDMX_E_INVAL;
	ret = set_path(cfg, cfg ? &cfg->cert_file : NULL, cert_path);
	return ret ? ret : set_path(cfg, &cfg->key_file, key_path);
}

int rdmx_tls_config_set_allow_insecure_key(struct rdmx_tls_config *cfg, bool allow)
{
	int ret = check_mutable(cfg);

	if (!ret)
		cfg->allow_insecure_key = allow;
	return ret;
}

int rdmx_tls_config_set_data_plaintext(struct rdmx_tls_config *cfg, bool plaintext)
{
	int ret = check_mutable(cfg);

	if (!ret)
		cfg->data_plaintext = plaintext;
	return ret;
}

int rdmx_tls_config_get_data_plaintext(const struct rdmx_tls_config *cfg, bool *plaintext)
{
	if (!cfg || !plaintext)
		return RDMX_E_INVAL;
	*plaintext = cfg->data_plaintext;
	return 0;
}

bool rdmx__tls_config_once(struct rdmx_tls_config *cfg, unsigned bit)
{
	return !(atomic_fetch_or(&cfg->logged, 1u << bit) & (1u << bit));
}

/* '*' is allowed alone or as the whole first label; the rest must be DNS
 * characters, so that a pattern can never match more than it says. */
int rdmx_tls_check_peer_pattern(const char *pattern)
{
	const char *p = pattern;
	size_t n = p ? strlen(p) : 0;

	if (n == 0 || n > RDMX_TLS_NAME_MAX)
		return RDMX_E_INVAL;
	if (strcmp(p, "*") == 0)
		return RDMX_OK;
	if (p[0] == '*') {
		if (p[1] != '.' || p[2] == '\0')
			return RDMX_E_INVAL;
		p += 2;
	}
	if (*p == '.' || p[strlen(p) - 1] == '.' || strstr(p, ".."))
		return RDMX_E_INVAL;
	for (; *p; p++) {
		char c = *p;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '.' || c == '_'))
			return RDMX_E_INVAL;
	}
	return RDMX_OK;
}

int rdmx_tls_config_add_allowed_peer(struct rdmx_tls_config *cfg, const char *pattern)
{
	int ret = check_mutable(cfg);
	char **names;
	char *copy;

	if (ret)
		return ret;
	if (rdmx_tls_check_peer_pattern(pattern))
		return RDMX_E_INVAL;
	if (cfg->n_names >= RDMX_TLS_MAX_ALLOWED_NAMES)
		return RDMX_E_FULL;
	copy = strdup(pattern);
	names = realloc(cfg->names, (cfg->n_names + 1) * sizeof(*names));
	if (!copy || !names) {
		free(copy);
		if (names)
			cfg->names = names;
		return RDMX_E_NOMEM;
	}
	names[cfg->n_names++] = copy;
	cfg->names = names;
	return RDMX_OK;
}

int rdmx_tls_config_set_handshake_timeout(struct rdmx_tls_config *cfg, uint32_t ms)
{
	int ret = check_mutable(cfg);

	if (ret)
		return ret;
	if (ms < 1 || ms > 600000)
		return RDMX_E_INVAL;
	cfg->handshake_timeout_ms = ms;
	return RDMX_OK;
}

int rdmx_tls_config_get_handshake_timeout(const struct rdmx_tls_config *cfg, uint32_t *ms)
{
	if (!cfg || !ms)
		return RDMX_E_INVAL;
	*ms = cfg->handshake_timeout_ms;
	return RDMX_OK;
}

int rdmx_tls_config_set_max_frame(struct rdmx_tls_config *cfg, uint32_t bytes)
{
	int ret = check_mutable(cfg);

	if (ret)
		return ret;
	if (bytes < 1 || bytes > RDMX_TLS_MAX_FRAME_LIMIT)
		return RDMX_E_INVAL;
	cfg->max_frame = bytes;
	return RDMX_OK;
}

int rdmx_tls_config_get_max_frame(const struct rdmx_tls_config *cfg, uint32_t *bytes)
{
	if (!cfg || !bytes)
		return RDMX_E_INVAL;
	*bytes = cfg->max_frame;
	return RDMX_OK;
}

int rdmx_tls_config_set_handshake_limits(struct rdmx_tls_config *cfg, uint32_t max_total,
                                         uint32_t max_per_source)
{
	int ret = check_mutable(cfg);

	if (ret)
		return ret;
	if (max_total < 1 || max_total > 65536 || max_per_source < 1 || max_per_source > max_total)
		return RDMX_E_INVAL;
	cfg->max_handshakes = max_total;
	cfg->max_handshakes_per_source = max_per_source;
	return RDMX_OK;
}

int rdmx_tls_config_get_handshake_limits(const struct rdmx_tls_config *cfg, uint32_t *max_total,
                                         uint32_t *max_per_source)
{
	if (!cfg || !max_total || !max_per_source)
		return RDMX_E_INVAL;
	*max_total = cfg->max_handshakes;
	*max_per_source = cfg->max_handshakes_per_source;
	return RDMX_OK;
}

uint32_t rdmx__tls_config_max_frame(const struct rdmx_tls_config *cfg)
{
	return cfg->max_frame;
}

uint32_t rdmx__tls_config_handshake_timeout(const struct rdmx_tls_config *cfg)
{
	return cfg->handshake_timeout_ms;
}

/* ---- name matching ---- */

int rdmx_tls_name_match(const char *pattern, const char *name)
{
	const char *dot;

	if (!pattern || !name || !*name)
		return 0;
	if (strcmp(pattern, "*") == 0)
		return 1;
	if (pattern[0] != '*')
		return strcasecmp(pattern, name) == 0;
	/* "*.suffix": exactly one non-empty label before the suffix */
	dot = strchr(name, '.');
	if (!dot || dot == name)
		return 0;
	return strcasecmp(pattern + 1, dot) == 0;
}

int rdmx__tls_config_match_peer(const struct rdmx_tls_config *cfg, X509 *cert, char *match,
                                size_t match_len, char *first, size_t first_len)
{
	GENERAL_NAMES *gens = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	char name[RDMX_TLS_NAME_MAX + 1];
	int ret = -1;

	if (first_len)
		first[0] = '\0';
	for (int i = 0; gens && i < sk_GENERAL_NAME_num(gens) && ret != 1; i++) {
		const GENERAL_NAME *gen = sk_GENERAL_NAME_value(gens, i);
		const unsigned char *data;
		int len;

		if (gen->type != GEN_DNS)
			continue;
		data = ASN1_STRING_get0_data(gen->d.dNSName);
		len = ASN1_STRING_length(gen->d.dNSName);
		/* an embedded NUL or an over-long name never matches */
		if (len <= 0 || len > (int)RDMX_TLS_NAME_MAX ||
		    memchr(data, '\0', (size_t)len) != NULL)
			continue;
		memcpy(name, data, (size_t)len);
		name[len] = '\0';
		if (ret == -1 && first_len)
			snprintf(first, first_len, "%s", name);
		ret = 0;
		/* a wildcard inside a certificate is never honoured */
		if (strchr(name, '*'))
			continue;
		for (size_t j = 0; j < cfg->n_names; j++) {
			if (rdmx_tls_name_match(cfg->names[j], name)) {
				snprintf(match, match_len, "%s", name);
				ret = 1;
				break;
			}
		}
	}
	GENERAL_NAMES_free(gens);
	return ret;
}

/* ---- SSL_CTX construction ---- */

static void log_ssl_error(const char *what, const char *path)
{
	unsigned long e = ERR_get_error();
	char buf[200] = "no detail";

	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	RDMX_SEC_ERR("tls: %s %s: %s", what, path ? path : "", buf);
	ERR_clear_error();
}

static int load_trust(struct rdmx_tls_config *c, SSL_CTX *ctx, enum rdmx_tls_role role)
{
	X509_STORE *store = SSL_CTX_get_cert_store(ctx);

	if (!c->ca_file && !c->ca_dir) {
		RDMX_SEC_ERR("tls: no CA configured (set a CA file or directory)");
		return RDMX_E_INVAL;
	}
	if (c->ca_file && !SSL_CTX_load_verify_file(ctx, c->ca_file)) {
		log_ssl_error("cannot load CA file", c->ca_file);
		return RDMX_E_INVAL;
	}
	if (c->ca_dir && !SSL_CTX_load_verify_dir(ctx, c->ca_dir)) {
		log_ssl_error("cannot use CA directory", c->ca_dir);
		return RDMX_E_INVAL;
	}
	if (role == RDMX_TLS_SERVER && c->ca_file) {
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(c->ca_file);

		if (names)
			SSL_CTX_set_client_CA_list(ctx, names);
		ERR_clear_error();
	}
	if (c->crl_file) {
		X509_LOOKUP *lookup = X509_STORE_add_lookup(store, X509_LOOKUP_file());

		if (!lookup || X509_load_crl_file(lookup, c->crl_file, X509_FILETYPE_PEM) <= 0) {
			log_ssl_error("cannot load CRL file", c->crl_file);
			return RDMX_E_INVAL;
		}
		/* on the store and on the SSL_CTX parameters, as either may be
		 * the one copied into each verification */
		X509_STORE_set_flags(store, X509_V_FLAG_CRL_CHECK);
		X509_VERIFY_PARAM_set_flags(SSL_CTX_get0_param(ctx), X509_V_FLAG_CRL_CHECK);
	}
	return RDMX_OK;
}

/* The key is read from the descriptor its mode was checked on, so that the
 * file checked is the file loaded. The path and mode are logged, never the
 * content. */
static int load_key(struct rdmx_tls_config *c, SSL_CTX *ctx)
{
	int fd = open(c->key_file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	EVP_PKEY *key;
	FILE *f;
	int ok;

	if (fd < 0) {
		RDMX_SEC_ERR("tls: cannot open private key %s: %s", c->key_file, strerror(errno));
		return RDMX_E_INVAL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		RDMX_SEC_ERR("tls: private key %s is not a regular file", c->key_file);
		close(fd);
		return RDMX_E_INVAL;
	}
	if (st.st_mode & 077) {
		if (!c->allow_insecure_key) {
			RDMX_SEC_ERR(
			    "tls: private key %s is readable by group or others (mode %04o); "
			    "chmod 600 it, or allow it explicitly",
			    c->key_file, (unsigned)(st.st_mode & 07777));
			close(fd);
			return RDMX_E_INSECURE_KEY;
		}
		RDMX_SEC_WARN("tls: private key %s is readable by group or others (mode %04o), "
		              "accepted as asked",
		              c->key_file, (unsigned)(st.st_mode & 07777));
	}
	f = fdopen(fd, "r");
	if (!f) {
		RDMX_SEC_ERR("tls: cannot read private key %s: %s", c->key_file, strerror(errno));
		close(fd);
		return RDMX_E_NOMEM;
	}
	key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	ok = key && SSL_CTX_use_PrivateKey(ctx, key) == 1;
	EVP_PKEY_free(key);
	if (!ok) {
		log_ssl_error("cannot load private key", c->key_file);
		return RDMX_E_INVAL;
	}
	return RDMX_OK;
}

static int load_identity(struct rdmx_tls_config *c, SSL_CTX *ctx)
{
	int ret;

	if (!c->cert_file || !c->key_file) {
		RDMX_SEC_ERR("tls: no certificate and key configured (mutual TLS needs both)");
		return RDMX_E_INVAL;
	}
	if (SSL_CTX_use_certificate_chain_file(ctx, c->cert_file) != 1) {
		log_ssl_error("cannot load certificate", c->cert_file);
		return RDMX_E_INVAL;
	}
	ret = load_key(c, ctx);
	if (ret)
		return ret;
	if (SSL_CTX_check_private_key(ctx) != 1) {
		log_ssl_error("private key does not match certificate", c->cert_file);
		return RDMX_E_INVAL;
	}
	return RDMX_OK;
}

static int build_ctx(struct rdmx_tls_config *c, enum rdmx_tls_role role, SSL_CTX **out)
{
	SSL_CTX *ctx =
	    SSL_CTX_new(role == RDMX_TLS_SERVER ? TLS_server_method() : TLS_client_method());
	int ret;

	if (!ctx) {
		log_ssl_error("cannot create an SSL context", NULL);
		return RDMX_E_PROVIDER;
	}
	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION)) {
		log_ssl_error("cannot restrict the protocol to TLS 1.3", NULL);
		ret = RDMX_E_PROVIDER;
		goto err;
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_COMPRESSION |
	                             SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_set_max_early_data(ctx, 0);
	SSL_CTX_set_recv_max_early_data(ctx, 0);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_verify_depth(ctx, 8);
	/* a server checks that the client's certificate allows clientAuth, a
	 * client that the server's allows serverAuth */
	if (!SSL_CTX_set_purpose(ctx, role == RDMX_TLS_SERVER ? X509_PURPOSE_SSL_CLIENT
	                                                      : X509_PURPOSE_SSL_SERVER)) {
		log_ssl_error("cannot set the certificate purpose", NULL);
		ret = RDMX_E_PROVIDER;
		goto err;
	}
	SSL_CTX_set_verify(ctx,
	                   role == RDMX_TLS_SERVER
	                       ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
	                       : SSL_VERIFY_PEER,
	                   rdmx__tls_verify_cb);
	ret = load_trust(c, ctx, role);
	if (!ret)
		ret = load_identity(c, ctx);
	if (ret)
		goto err;
	*out = ctx;
	return RDMX_OK;
err:
	SSL_CTX_free(ctx);
	return ret;
}

static int build_all(struct rdmx_tls_config *c)
{
	int ret;

	if (c->ssl_ctx[0] && c->ssl_ctx[1])
		return RDMX_OK;
	if (c->load_err)
		return c->load_err;
	if (c->n_names == 0)
		RDMX_SEC_WARN("tls: no allowed peer names configured: every peer will be refused");
	ret = build_ctx(c, RDMX_TLS_SERVER, &c->ssl_ctx[RDMX_TLS_SERVER]);
	if (!ret)
		ret = build_ctx(c, RDMX_TLS_CLIENT, &c->ssl_ctx[RDMX_TLS_CLIENT]);
	if (ret) {
		SSL_CTX_free(c->ssl_ctx[0]);
		SSL_CTX_free(c->ssl_ctx[1]);
		c->ssl_ctx[0] = c->ssl_ctx[1] = NULL;
		c->load_err = ret;
	}
	return ret;
}

int rdmx__tls_config_ssl_ctx(struct rdmx_tls_config *cfg, enum rdmx_tls_role role, SSL_CTX **ctx)
{
	int ret;

	pthread_mutex_lock(&cfg->lock);
	cfg->frozen = 1;
	ret = build_all(cfg);
	if (!ret)
		*ctx = cfg->ssl_ctx[role];
	pthread_mutex_unlock(&cfg->lock);
	return ret;
}

int rdmx_tls_config_load(struct rdmx_tls_config *cfg)
{
	SSL_CTX *ctx;

	if (!cfg)
		return RDMX_E_INVAL;
	return rdmx__tls_config_ssl_ctx(cfg, RDMX_TLS_SERVER, &ctx);
}
