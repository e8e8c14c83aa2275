/* Test PKI generated at run time with certgen (see tls_test_pki.h). */
#include "tls_test_pki.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "certgen.h"

#define DAY 86400L

struct leaf {
	const char *name;
	const char *cn;
	const char *san;
	long nb, na;
	unsigned eku;
	int issuer; /* 0 ca, 1 otherca, 2 self */
};

static const struct leaf leaves[] = {
    {"server", "server.test", "DNS:server.test", -DAY, 30 * DAY, 3, 0},
    {"client", "client.test", "DNS:client.test", -DAY, 30 * DAY, 3, 0},
    {"client2", "client2.test", "DNS:client2.test", -DAY, 30 * DAY, 3, 0},
    {"expired", "client.test", "DNS:client.test", -30 * DAY, -DAY, 3, 0},
    {"notyet", "client.test", "DNS:client.test", DAY, 30 * DAY, 3, 0},
    {"wrongsan", "client.test", "DNS:evil.example", -DAY, 30 * DAY, 3, 0},
    {"ctlsan", "client.test", "DNS:evil\x1b[2K\nrdmx: forged.example", -DAY, 30 * DAY, 3, 0},
    {"cnonly", "client.test", NULL, -DAY, 30 * DAY, 3, 0},
    {"selfsigned", "client.test", "DNS:client.test", -DAY, 30 * DAY, 3, 2},
    {"revoked", "client.test", "DNS:client.test", -DAY, 30 * DAY, 3, 0},
    {"codesign", "client.test", "DNS:client.test", -DAY, 30 * DAY, RDMX_CERTGEN_EKU_CODESIGN, 0},
    {"foreign", "client.test", "DNS:client.test", -DAY, 30 * DAY, 3, 1},
    {"srvexpired", "server.test", "DNS:server.test", -30 * DAY, -DAY, 3, 0},
    {"srvwrongsan", "server.test", "DNS:evil.example", -DAY, 30 * DAY, 3, 0},
};

const char *tls_test_pki_path(const struct tls_test_pki *pki, const char *name, const char *suffix)
{
	static __thread char bufs[8][400];
	static __thread unsigned slot;
	char *b = bufs[slot++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s%s", pki->dir, name, suffix);
	return b;
}

static int write_pair(const struct tls_test_pki *pki, const char *name, EVP_PKEY *key, X509 *x)
{
	return rdmx__certgen_write_key(tls_test_pki_path(pki, name, ".key"), key) ||
	       rdmx__certgen_write_cert(tls_test_pki_path(pki, name, ".crt"), x);
}

int tls_test_pki_create(struct tls_test_pki *pki)
{
	struct rdmx_certgen_opts ca_o = {
	    .cn = "test cluster CA", .not_before_s = -DAY, .not_after_s = 365 * DAY, .is_ca = 1};
	struct rdmx_certgen_opts other_o = ca_o;
	EVP_PKEY *ca_key = NULL, *other_key = NULL;
	X509 *ca = NULL, *other = NULL, *revoked = NULL;
	X509_CRL *crl = NULL;
	int ret = -1;

	snprintf(pki->dir, sizeof(pki->dir), "/tmp/rdmx-tls-test-XXXXXX");
	if (!mkdtemp(pki->dir))
		return -1;
	other_o.cn = "some other CA";
	ca_key = rdmx__certgen_key();
	other_key = rdmx__certgen_key();
	if (!ca_key || !other_key)
		goto out;
	ca = rdmx__certgen_cert(&ca_o, ca_key, NULL, NULL);
	other = rdmx__certgen_cert(&other_o, other_key, NULL, NULL);
	if (!ca || !other || write_pair(pki, "ca", ca_key, ca) ||
	    write_pair(pki, "otherca", other_key, other))
		goto out;
	for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		const struct leaf *lf = &leaves[i];
		const char *sans[1] = {lf->san};
		struct rdmx_certgen_opts o = {
		    .cn = lf->cn,
		    .sans = sans,
		    .n_sans = lf->san ? 1 : 0,
		    .not_before_s = lf->nb,
		    .not_after_s = lf->na,
		    .eku = lf->eku,
		};
		EVP_PKEY *key = rdmx__certgen_key();
		X509 *x = NULL;

		if (key)
			x = lf->issuer == 2 ? rdmx__certgen_cert(&o, key, NULL, NULL)
			                    : rdmx__certgen_cert(&o, key, lf->issuer ? other : ca,
			                                         lf->issuer ? other_key : ca_key);
		if (!x || write_pair(pki, lf->name, key, x)) {
			X509_free(x);
			EVP_PKEY_free(key);
			goto out;
		}
		if (!strcmp(lf->name, "revoked"))
			revoked = x;
		else
			X509_free(x);
		EVP_PKEY_free(key);
	}
	crl = rdmx__certgen_crl(ca, ca_key, NULL, revoked, 30);
	if (!crl || rdmx__certgen_write_crl(tls_test_pki_path(pki, "crl", ".pem"), crl))
		goto out;
	ret = 0;
out:
	X509_CRL_free(crl);
	X509_free(revoked);
	X509_free(ca);
	X509_free(other);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(other_key);
	if (ret)
		tls_test_pki_destroy(pki);
	return ret;
}

void tls_test_pki_destroy(struct tls_test_pki *pki)
{
	DIR *d = opendir(pki->dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		unlink(tls_test_pki_path(pki, e->d_name, ""));
	}
	closedir(d);
	rmdir(pki->dir);
}

struct rdmx_tls_config *tls_test_config(const struct tls_test_pki *pki, const char *name,
                                        const char *allow, int with_crl)
{
	struct rdmx_tls_config *cfg = NULL;

	if (rdmx_tls_config_create(&cfg))
		return NULL;
	if (rdmx_tls_config_set_ca_file(cfg, tls_test_pki_path(pki, "ca", ".crt")) ||
	    rdmx_tls_config_set_cert_key(cfg, tls_test_pki_path(pki, name, ".crt"),
	                                 tls_test_pki_path(pki, name, ".key")) ||
	    (allow && rdmx_tls_config_add_allowed_peer(cfg, allow)) ||
	    (with_crl && rdmx_tls_config_set_crl_file(cfg, tls_test_pki_path(pki, "crl", ".pem"))))
		rdmx_tls_config_destroy(&cfg);
	return cfg;
}

/* ---- log capture ---- */

#define LOG_LINES 64
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_lines[LOG_LINES][512];
static unsigned log_next;

static void capture(enum rdmx_log_level level, const char *file, int line, const char *func,
                    const char *message)
{
	(void)file;
	(void)line;
	(void)func;
	pthread_mutex_lock(&log_lock);
	snprintf(log_lines[log_next++ % LOG_LINES], sizeof(log_lines[0]), "%s", message);
	pthread_mutex_unlock(&log_lock);
	fprintf(stderr, "rdmx %d: %s\n", (int)level, message);
}

void tls_test_log_capture(void)
{
	tls_test_log_clear();
	rdmx_log_set_threshold(RDMX_LOG_INFO);
	rdmx_log_set_function(capture);
}

int tls_test_log_contains(const char *needle)
{
	int found = 0;

	pthread_mutex_lock(&log_lock);
	for (unsigned i = 0; i < LOG_LINES && !found; i++)
		found = strstr(log_lines[i], needle) != NULL;
	pthread_mutex_unlock(&log_lock);
	return found;
}

void tls_test_log_clear(void)
{
	pthread_mutex_lock(&log_lock);
	memset(log_lines, 0, sizeof(log_lines));
	log_next = 0;
	pthread_mutex_unlock(&log_lock);
}
