/* Certificate generation with OpenSSL 3 (see certgen.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "certgen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

static void report(const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[256] = "no detail";

	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	fprintf(stderr, "rdmx-certs: %s: %s\n", what, buf);
	ERR_clear_error();
}

EVP_PKEY *rdmx__certgen_key(void)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");

	if (!key)
		report("cannot generate an ECDSA P-256 key");
	return key;
}

static int set_random_serial(X509 *x)
{
	BIGNUM *bn = BN_new();
	ASN1_INTEGER *serial = NULL;
	int ret = -1;

	/* 159 random bits: positive, unique enough, within the 20-octet limit */
	if (!bn || !BN_rand(bn, 159, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY))
		goto out;
	serial = BN_to_ASN1_INTEGER(bn, NULL);
	if (!serial || !X509_set_serialNumber(x, serial))
		goto out;
	ret = 0;
out:
	ASN1_INTEGER_free(serial);
	BN_free(bn);
	return ret;
}

static int add_conf_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
	int ok;

	if (!ext)
		return -1;
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -1;
}

/* Builds the subjectAltName from typed entries, never through a config string,
 * so that a name holding a comma cannot inject another entry. */
static int add_sans(X509 *x, const char *const *sans, size_t n)
{
	GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
	int ret = -1;

	if (!gens)
		return -1;
	for (size_t i = 0; i < n; i++) {
		GENERAL_NAME *gen = GENERAL_NAME_new();
		const char *s = sans[i];

		if (!gen)
			goto out;
		if (strncmp(s, "DNS:", 4) == 0 && s[4] != '\0') {
			ASN1_IA5STRING *ia5 = ASN1_IA5STRING_new();

			if (!ia5 || !ASN1_STRING_set(ia5, s + 4, (int)strlen(s + 4))) {
				ASN1_IA5STRING_free(ia5);
				GENERAL_NAME_free(gen);
				goto out;
			}
			GENERAL_NAME_set0_value(gen, GEN_DNS, ia5);
		} else if (strncmp(s, "IP:", 3) == 0) {
			unsigned char addr[16];
			int len = 0;
			ASN1_OCTET_STRING *oct;

			if (inet_pton(AF_INET, s + 3, addr) == 1)
				len = 4;
			else if (inet_pton(AF_INET6, s + 3, addr) == 1)
				len = 16;
			oct = len ? ASN1_OCTET_STRING_new() : NULL;
			if (!oct || !ASN1_OCTET_STRING_set(oct, addr, len)) {
				fprintf(stderr, "rdmx-certs: bad IP subjectAltName '%s'\n", s);
				ASN1_OCTET_STRING_free(oct);
				GENERAL_NAME_free(gen);
				goto out;
			}
			GENERAL_NAME_set0_value(gen, GEN_IPADD, oct);
		} else {
			fprintf(stderr,
			        "rdmx-certs: subjectAltName '%s' must start with DNS: or IP:\n", s);
			GENERAL_NAME_free(gen);
			goto out;
		}
		if (!sk_GENERAL_NAME_push(gens, gen)) {
			GENERAL_NAME_free(gen);
			goto out;
		}
	}
	ret = X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) == 1 ? 0 : -1;
out:
	GENERAL_NAMES_free(gens);
	return ret;
}

static int add_extensions(X509 *x, X509 *issuer, const struct rdmx_certgen_opts *o)
{
	X509V3_CTX ctx;
	char eku[64] = "";

	X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
	if (add_conf_ext(x, &ctx, NID_basic_constraints,
	                 o->is_ca ? "critical,CA:TRUE" : "critical,CA:FALSE") ||
	    add_conf_ext(x, &ctx, NID_key_usage,
	                 o->is_ca ? "critical,keyCertSign,cRLSign,digitalSignature"
	                          : "critical,digitalSignature") ||
	    add_conf_ext(x, &ctx, NID_subject_key_identifier, "hash") ||
	    add_conf_ext(x, &ctx, NID_authority_key_identifier, "keyid:always"))
		return -1;
	if (o->eku & RDMX_CERTGEN_EKU_SERVER)
		strcat(eku, "serverAuth,");
	if (o->eku & RDMX_CERTGEN_EKU_CLIENT)
		strcat(eku, "clientAuth,");
	if (o->eku & RDMX_CERTGEN_EKU_CODESIGN)
		strcat(eku, "codeSigning,");
	if (eku[0]) {
		eku[strlen(eku) - 1] = '\0';
		if (add_conf_ext(x, &ctx, NID_ext_key_usage, eku))
			return -1;
	}
	if (o->n_sans && add_sans(x, o->sans, o->n_sans))
		return -1;
	return 0;
}

X509 *rdmx__certgen_cert(const struct rdmx_certgen_opts *opts, EVP_PKEY *key, X509 *issuer,
                         EVP_PKEY *issuer_key)
{
	X509 *x = X509_new();
	X509_NAME *name;

	if (!x)
		goto err;
	name = X509_get_subject_name(x);
	if (!X509_set_version(x, 2) || set_random_serial(x))
		goto err;
	if (opts->cn && !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
	                                            (const unsigned char *)opts->cn, -1, -1, 0))
		goto err;
	if (!X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name))
		goto err;
	if (!X509_gmtime_adj(X509_getm_notBefore(x), opts->not_before_s) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), opts->not_after_s))
		goto err;
	if (!X509_set_pubkey(x, key))
		goto err;
	if (add_extensions(x, issuer, opts))
		goto err;
	if (!X509_sign(x, issuer ? issuer_key : key, EVP_sha256()))
		goto err;
	return x;
err:
	report("cannot build the certificate");
	X509_free(x);
	return NULL;
}

X509_CRL *rdmx__certgen_crl(X509 *ca, EVP_PKEY *ca_key, X509_CRL *prev, X509 *revoke, int days)
{
	X509_CRL *crl = X509_CRL_new();
	ASN1_TIME *now = ASN1_TIME_new();
	ASN1_TIME *next = ASN1_TIME_new();
	X509_REVOKED *rev = NULL;
	X509V3_CTX ctx;
	X509_EXTENSION *ext = NULL;

	if (!crl || !now || !next || !X509_gmtime_adj(now, 0) ||
	    !X509_gmtime_adj(next, (long)days * 86400))
		goto err;
	if (!X509_CRL_set_version(crl, 1) ||
	    !X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca)) ||
	    !X509_CRL_set1_lastUpdate(crl, now) || !X509_CRL_set1_nextUpdate(crl, next))
		goto err;
	if (prev) {
		STACK_OF(X509_REVOKED) *old = X509_CRL_get_REVOKED(prev);

		for (int i = 0; i < sk_X509_REVOKED_num(old); i++) {
			X509_REVOKED *r = X509_REVOKED_dup(sk_X509_REVOKED_value(old, i));

			if (!r || !X509_CRL_add0_revoked(crl, r)) {
				X509_REVOKED_free(r);
				goto err;
			}
		}
	}
	if (revoke) {
		rev = X509_REVOKED_new();
		if (!rev || !X509_REVOKED_set_serialNumber(rev, X509_get_serialNumber(revoke)) ||
		    !X509_REVOKED_set_revocationDate(rev, now) || !X509_CRL_add0_revoked(crl, rev))
			goto err;
		rev = NULL;
	}
	X509V3_set_ctx(&ctx, ca, NULL, NULL, crl, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_authority_key_identifier, "keyid:always");
	if (!ext || !X509_CRL_add_ext(crl, ext, -1))
		goto err;
	X509_EXTENSION_free(ext);
	ext = NULL;
	if (!X509_CRL_sort(crl) || !X509_CRL_sign(crl, ca_key, EVP_sha256()))
		goto err;
	ASN1_TIME_free(now);
	ASN1_TIME_free(next);
	return crl;
err:
	report("cannot build the CRL");
	X509_EXTENSION_free(ext);
	X509_REVOKED_free(rev);
	ASN1_TIME_free(now);
	ASN1_TIME_free(next);
	X509_CRL_free(crl);
	return NULL;
}

/* Writes through `path.tmp` then renames, so a reader never sees half a file
 * and a key file is never, even briefly, readable by others. */
static int write_pem(const char *path, mode_t mode, int (*emit)(FILE *, void *), void *obj)
{
	size_t n = strlen(path) + 5;
	char *tmp = malloc(n);
	int fd = -1;
	FILE *f = NULL;
	int ret = -1;

	if (!tmp)
		return -1;
	snprintf(tmp, n, "%s.tmp", path);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0 || fchmod(fd, mode) != 0) {
		fprintf(stderr, "rdmx-certs: cannot create %s: %s\n", tmp, strerror(errno));
		goto out;
	}
	f = fdopen(fd, "w");
	if (!f)
		goto out;
	fd = -1;
	if (!emit(f, obj)) {
		report(path);
		goto out;
	}
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		fprintf(stderr, "rdmx-certs: cannot write %s: %s\n", tmp, strerror(errno));
		goto out;
	}
	if (fclose(f) != 0) {
		f = NULL;
		goto out;
	}
	f = NULL;
	if (rename(tmp, path) != 0) {
		fprintf(stderr, "rdmx-certs: cannot rename %s: %s\n", tmp, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (f)
		fclose(f);
	if (fd >= 0)
		close(fd);
	if (ret)
		unlink(tmp);
	free(tmp);
	return ret;
}

static int emit_key(FILE *f, void *obj)
{
	return PEM_write_PrivateKey(f, obj, NULL, NULL, 0, NULL, NULL);
}

static int emit_cert(FILE *f, void *obj)
{
	return PEM_write_X509(f, obj);
}

static int emit_crl(FILE *f, void *obj)
{
	return PEM_write_X509_CRL(f, obj);
}

int rdmx__certgen_write_key(const char *path, EVP_PKEY *key)
{
	return write_pem(path, 0600, emit_key, key);
}

int rdmx__certgen_write_cert(const char *path, X509 *cert)
{
	return write_pem(path, 0644, emit_cert, cert);
}

int rdmx__certgen_write_crl(const char *path, X509_CRL *crl)
{
	return write_pem(path, 0644, emit_crl, crl);
}

static FILE *open_read(const char *path, int quiet)
{
	FILE *f = fopen(path, "r");

	if (!f && !(quiet && errno == ENOENT))
		fprintf(stderr, "rdmx-certs: cannot open %s: %s\n", path, strerror(errno));
	return f;
}

EVP_PKEY *rdmx__certgen_read_key(const char *path, int allow_insecure)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	EVP_PKEY *key;
	FILE *f;

	if (fd < 0) {
		fprintf(stderr, "rdmx-certs: cannot open %s: %s\n", path, strerror(errno));
		return NULL;
	}
	/* the mode of the file opened, which is the file read */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "rdmx-certs: %s is not a regular file\n", path);
		close(fd);
		return NULL;
	}
	if ((st.st_mode & 077) && !allow_insecure) {
		fprintf(stderr,
		        "rdmx-certs: private key %s is readable by group or others (mode %04o); "
		        "chmod 600 it, or pass --allow-insecure-key\n",
		        path, (unsigned)(st.st_mode & 07777));
		close(fd);
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return NULL;
	}
	key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	if (!key)
		report(path);
	return key;
}

X509 *rdmx__certgen_read_cert(const char *path)
{
	FILE *f = open_read(path, 0);
	X509 *x;

	if (!f)
		return NULL;
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	if (!x)
		report(path);
	return x;
}

X509_CRL *rdmx__certgen_read_crl(const char *path, int quiet)
{
	FILE *f = open_read(path, quiet);
	X509_CRL *crl;

	if (!f)
		return NULL;
	crl = PEM_read_X509_CRL(f, NULL, NULL, NULL);
	fclose(f);
	if (!crl)
		report(path);
	return crl;
}
