/* rdmx-certs: a cluster CA and node certificates in two commands.
 *
 *   rdmx-certs init DIR [--days N] [--force]
 *   rdmx-certs issue DIR NAME [--san DNS:x|IP:a]... [--no-cn] [--days N] [--force]
 *   rdmx-certs revoke DIR NAME [--days N]
 *   rdmx-certs crl DIR [--days N]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "certgen.h"
#include "cli.h"

#define MAX_SANS 32
#define CRL_DAYS 365

/* --allow-insecure-key: read a ca.key that group or others can read */
static int allow_insecure_key;
/* --no-cn: issue without a subject commonName */
static int no_cn;

static void usage(FILE *f)
{
	fprintf(f, "usage: rdmx-certs init DIR|issue DIR NAME|revoke DIR NAME|crl DIR [options]\n"
	           "  rdmx-certs init DIR [--days N] [--force]\n"
	           "      make a cluster CA: DIR/ca.key (0600), DIR/ca.crt, DIR/crl.pem\n"
	           "  rdmx-certs issue DIR NAME [--san DNS:name|IP:addr]... [--no-cn] [--days N] "
	           "[--force]\n"
	           "      make DIR/NAME.key (0600) and DIR/NAME.crt signed by the CA,\n"
	           "      subjectAltName DNS:NAME (+ --san), usage serverAuth+clientAuth\n"
	           "  rdmx-certs revoke DIR NAME [--days N]\n"
	           "      add DIR/NAME.crt to DIR/crl.pem (give --crl to the servers)\n"
	           "  rdmx-certs crl DIR [--days N]\n"
	           "      re-sign DIR/crl.pem with the same entries (before it expires)\n"
	           "options:\n"
	           "      --days N         validity in days (CA 3650, node 365, CRL 365)\n"
	           "      --san DNS:name|IP:addr  issue: an extra subjectAltName (repeatable)\n"
	           "      --force          overwrite existing files\n"
	           "      --no-cn          issue: no subject commonName (the name is only in the\n"
	           "                       subjectAltName; etcd's JSON gateway refuses clients\n"
	           "                       whose certificate has a CN when etcd auth is on)\n"
	           "      --allow-insecure-key\n"
	           "                       issue/revoke/crl: read a ca.key group or others can\n"
	           "                       read (refused by default)\n" RDMX_CLI_HELP_COMMON
	           "Exit status: 0 done; 1 failure; 2 usage error.\n");
}

static char *join(const char *dir, const char *name, const char *suffix)
{
	size_t n = strlen(dir) + strlen(name) + strlen(suffix) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s%s", dir, name, suffix);
	return p;
}

/* A node name becomes both a DNS name and a file name: keep it to DNS
 * characters so it can neither escape DIR nor smuggle odd bytes. */
static int valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 253 || s[0] == '.' || s[0] == '-' || strstr(s, ".."))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

static int parse_days(const char *s, int *days)
{
	long v;

	if (rdmx_cli_parse_long("rdmx-certs", "--days", s, 1, 36500, &v))
		return -1;
	*days = (int)v;
	return 0;
}

/* --san DNS:name or IP:address (v4 or v6), checked as the options are read:
 * a bad one is a usage error, said in one line. */
static int parse_san(const char *s)
{
	unsigned char addr[16];

	if (strncmp(s, "DNS:", 4) == 0 && s[4] != '\0')
		return 0;
	if (strncmp(s, "IP:", 3) == 0 &&
	    (inet_pton(AF_INET, s + 3, addr) == 1 || inet_pton(AF_INET6, s + 3, addr) == 1))
		return 0;
	fprintf(stderr, "rdmx-certs: bad value '%s' for --san (want DNS:name or IP:address)\n", s);
	return -1;
}

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static int cmd_init(const char *dir, int days, int force)
{
	char *key_path = join(dir, "ca", ".key");
	char *crt_path = join(dir, "ca", ".crt");
	char *crl_path = join(dir, "crl", ".pem");
	struct rdmx_certgen_opts o = {
	    .cn = "rdmx cluster CA",
	    .not_before_s = -300,
	    .not_after_s = (long)days * 86400,
	    .is_ca = 1,
	};
	EVP_PKEY *key = NULL;
	X509 *ca = NULL;
	X509_CRL *crl = NULL;
	int ret = 1;

	if (!key_path || !crt_path || !crl_path)
		goto out;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "rdmx-certs: cannot create %s: %s\n", dir, strerror(errno));
		goto out;
	}
	if (exists(key_path) && !force) {
		fprintf(stderr, "rdmx-certs: %s exists (use --force to replace the CA)\n",
		        key_path);
		goto out;
	}
	key = rdmx__certgen_key();
	ca = key ? rdmx__certgen_cert(&o, key, NULL, NULL) : NULL;
	crl = ca ? rdmx__certgen_crl(ca, key, NULL, NULL, CRL_DAYS) : NULL;
	if (!crl || rdmx__certgen_write_key(key_path, key) ||
	    rdmx__certgen_write_cert(crt_path, ca) || rdmx__certgen_write_crl(crl_path, crl))
		goto out;
	printf("key %s\ncert %s\ncrl %s\n", key_path, crt_path, crl_path);
	ret = 0;
out:
	X509_CRL_free(crl);
	X509_free(ca);
	EVP_PKEY_free(key);
	free(key_path);
	free(crt_path);
	free(crl_path);
	return ret;
}

static int cmd_issue(const char *dir, const char *name, const char *const *extra, size_t n_extra,
                     int days, int force)
{
	char *ca_key_path = join(dir, "ca", ".key");
	char *ca_crt_path = join(dir, "ca", ".crt");
	char *key_path = join(dir, name, ".key");
	char *crt_path = join(dir, name, ".crt");
	const char *sans[MAX_SANS + 1];
	char dns[300];
	struct rdmx_certgen_opts o = {
	    .cn = no_cn ? NULL : name,
	    .sans = sans,
	    .not_before_s = -300,
	    .not_after_s = (long)days * 86400,
	    .eku = RDMX_CERTGEN_EKU_SERVER | RDMX_CERTGEN_EKU_CLIENT,
	};
	EVP_PKEY *ca_key = NULL, *key = NULL;
	X509 *ca = NULL, *x = NULL;
	int ret = 1;

	if (!ca_key_path || !ca_crt_path || !key_path || !crt_path)
		goto out;
	if (!valid_name(name)) {
		fprintf(stderr,
		        "rdmx-certs: NAME must be a DNS name (letters, digits, '-', '.'), "
		        "got '%s'\n",
		        name);
		goto out;
	}
	if (exists(key_path) && !force) {
		fprintf(stderr, "rdmx-certs: %s exists (use --force to replace it)\n", key_path);
		goto out;
	}
	snprintf(dns, sizeof(dns), "DNS:%s", name);
	sans[0] = dns;
	for (size_t i = 0; i < n_extra; i++)
		sans[i + 1] = extra[i];
	o.n_sans = n_extra + 1;
	ca_key = rdmx__certgen_read_key(ca_key_path, allow_insecure_key);
	ca = ca_key ? rdmx__certgen_read_cert(ca_crt_path) : NULL;
	if (!ca)
		goto out;
	if (X509_check_private_key(ca, ca_key) != 1) {
		fprintf(stderr, "rdmx-certs: %s does not match %s\n", ca_key_path, ca_crt_path);
		goto out;
	}
	key = rdmx__certgen_key();
	x = key ? rdmx__certgen_cert(&o, key, ca, ca_key) : NULL;
	if (!x || rdmx__certgen_write_key(key_path, key) || rdmx__certgen_write_cert(crt_path, x))
		goto out;
	printf("key %s\ncert %s\n", key_path, crt_path);
	ret = 0;
out:
	X509_free(x);
	X509_free(ca);
	EVP_PKEY_free(key);
	EVP_PKEY_free(ca_key);
	free(ca_key_path);
	free(ca_crt_path);
	free(key_path);
	free(crt_path);
	return ret;
}

/* name NULL: re-sign the CRL with its current entries. */
static int cmd_revoke(const char *dir, const char *name, int days)
{
	char *ca_key_path = join(dir, "ca", ".key");
	char *ca_crt_path = join(dir, "ca", ".crt");
	char *crl_path = join(dir, "crl", ".pem");
	char *crt_path = join(dir, name ? name : "unused", ".crt");
	EVP_PKEY *ca_key = NULL;
	X509 *ca = NULL, *x = NULL;
	X509_CRL *old = NULL, *crl = NULL;
	int ret = 1;

	if (!ca_key_path || !ca_crt_path || !crl_path || !crt_path)
		goto out;
	if (name && !valid_name(name)) {
		fprintf(stderr, "rdmx-certs: bad NAME '%s'\n", name);
		goto out;
	}
	ca_key = rdmx__certgen_read_key(ca_key_path, allow_insecure_key);
	ca = ca_key ? rdmx__certgen_read_cert(ca_crt_path) : NULL;
	if (!ca)
		goto out;
	if (name) {
		x = rdmx__certgen_read_cert(crt_path);
		if (!x)
			goto out;
	}
	old = rdmx__certgen_read_crl(crl_path, 1);
	crl = rdmx__certgen_crl(ca, ca_key, old, x, days);
	if (!crl || rdmx__certgen_write_crl(crl_path, crl))
		goto out;
	printf("crl %s\n", crl_path);
	ret = 0;
out:
	X509_CRL_free(crl);
	X509_CRL_free(old);
	X509_free(x);
	X509_free(ca);
	EVP_PKEY_free(ca_key);
	free(ca_key_path);
	free(ca_crt_path);
	free(crl_path);
	free(crt_path);
	return ret;
}

enum { C_FORCE = RDMX_CLI_OPT_VERSION + 1, C_DAYS, C_SAN, C_NO_CN };

static const struct option long_options[] = {
    RDMX_CLI_LONGOPTS_STD,
    {"force", no_argument, NULL, C_FORCE},
    {"no-cn", no_argument, NULL, C_NO_CN},
    {"days", required_argument, NULL, C_DAYS},
    {"san", required_argument, NULL, C_SAN},
    RDMX_CLI_LONGOPT_ALLOW_INSECURE_KEY,
    {NULL, 0, NULL, 0},
};

/* What is wrong with the operands, in one line: the command, or what it
 * lacks or has too many of. */
static void operands_error(const char *const *pos, size_t n_pos, size_t n_sans)
{
	static const struct {
		const char *name, *operands;
		size_t n; /* operands after the command */
	} cmds[] = {{"init", "DIR", 1},
	            {"issue", "DIR NAME", 2},
	            {"revoke", "DIR NAME", 2},
	            {"crl", "DIR", 1}};

	for (size_t i = 0; n_pos > 0 && i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(pos[0], cmds[i].name) != 0)
			continue;
		if (n_pos - 1 < cmds[i].n)
			fprintf(stderr, "rdmx-certs: %s: %s missing (rdmx-certs %s %s)\n",
			        cmds[i].name, n_pos == 1 ? cmds[i].operands : "NAME", cmds[i].name,
			        cmds[i].operands);
		else if (n_pos - 1 > cmds[i].n)
			fprintf(stderr, "rdmx-certs: %s: one operand too many ('%s')\n",
			        cmds[i].name, pos[n_pos - 1]);
		else if (n_sans)
			fprintf(stderr, "rdmx-certs: --san is for issue, not %s\n", cmds[i].name);
		return;
	}
	if (n_pos == 0)
		fprintf(stderr,
		        "rdmx-certs: want init, issue, revoke or crl (rdmx-certs --help)\n");
	else
		fprintf(stderr,
		        "rdmx-certs: unknown command '%s': want init, issue, revoke or crl\n",
		        pos[0]);
}

int main(int argc, char **argv)
{
	const char *pos[3];
	size_t n_pos = 0;
	const char *sans[MAX_SANS];
	size_t n_sans = 0;
	int days = 0, force = 0, c;

	rdmx_cli_reset();
	while ((c = rdmx_cli_getopt("rdmx-certs", argc, argv, "h", long_options, true)) != -1) {
		if (rdmx_cli_std_opt("rdmx-certs", c, usage))
			return 0;
		switch (c) {
		case C_NO_CN:
			no_cn = 1;
			break;
		case C_FORCE:
			force = 1;
			break;
		case RDMX_CLI_OPT_ALLOW_INSECURE_KEY:
			allow_insecure_key = 1;
			break;
		case C_DAYS:
			if (parse_days(optarg, &days))
				return 2;
			break;
		case C_SAN:
			if (n_sans == MAX_SANS - 1) {
				fprintf(stderr, "rdmx-certs: at most %d --san\n", MAX_SANS - 1);
				return 2;
			}
			if (parse_san(optarg))
				return 2;
			sans[n_sans++] = optarg;
			break;
		default:
			return 2;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (n_pos == 3) {
			fprintf(stderr, "rdmx-certs: too many operands\n");
			return 2;
		}
		pos[n_pos++] = argv[i];
	}
	if (n_pos == 2 && !strcmp(pos[0], "init") && n_sans == 0)
		return cmd_init(pos[1], days ? days : 3650, force);
	if (n_pos == 3 && !strcmp(pos[0], "issue"))
		return cmd_issue(pos[1], pos[2], sans, n_sans, days ? days : 365, force);
	if (n_pos == 3 && !strcmp(pos[0], "revoke") && n_sans == 0)
		return cmd_revoke(pos[1], pos[2], days ? days : CRL_DAYS);
	if (n_pos == 2 && !strcmp(pos[0], "crl") && n_sans == 0)
		return cmd_revoke(pos[1], NULL, days ? days : CRL_DAYS);
	operands_error(pos, n_pos, n_sans);
	return 2;
}
