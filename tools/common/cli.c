/* The shared argument convention (cli.h). getopt_long's own messages are
 * off (opterr = 0) so that every program words its errors the same way. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <rdmx/status.h>
#include <rdmx/version.h>

void rdmx_cli_print_version(const char *prog)
{
	printf("%s %s\n", prog, RDMX_VERSION_STRING);
}

int rdmx_cli_std_opt(const char *prog, int opt, void (*usage)(FILE *))
{
	if (opt == RDMX_CLI_OPT_HELP) {
		usage(stdout);
		return 1;
	}
	if (opt == RDMX_CLI_OPT_VERSION) {
		rdmx_cli_print_version(prog);
		return 1;
	}
	return 0;
}

void rdmx_cli_reset(void)
{
	optind = 0; /* glibc: full re-initialisation */
}

int rdmx_cli_getopt(const char *prog, int argc, char **argv, const char *shortopts,
                    const struct option *longopts, bool permute)
{
	char spec[128];
	int c;

	snprintf(spec, sizeof(spec), "%s:%s", permute ? "" : "+", shortopts);
	opterr = 0;
	c = getopt_long(argc, argv, spec, longopts, NULL);
	if (c != '?' && c != ':')
		return c;
	/* the option is the word before optind, or (short options bundled or
	 * not) optopt */
	if (optopt && !(optind > 0 && optind <= argc && argv[optind - 1][0] == '-' &&
	                argv[optind - 1][1] == '-')) {
		if (c == ':')
			fprintf(stderr, "%s: option '-%c' needs a value\n", prog, optopt);
		else
			fprintf(stderr, "%s: unknown option '-%c'\n", prog, optopt);
	} else {
		const char *word = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
		const char *eq = strchr(word, '=');
		int len = eq ? (int)(eq - word) : (int)strlen(word);

		if (c == ':')
			fprintf(stderr, "%s: option '%.*s' needs a value\n", prog, len, word);
		else if (optopt)
			fprintf(stderr, "%s: option '%.*s' takes no value\n", prog, len, word);
		else
			fprintf(stderr, "%s: unknown option '%.*s'\n", prog, len, word);
	}
	return '?';
}

int rdmx_cli_bad_value(const char *prog, const char *opt, const char *value)
{
	fprintf(stderr, "%s: bad value '%s' for %s\n", prog, value ? value : "", opt);
	return RDMX_CLI_USAGE;
}

int rdmx_cli_parse_long(const char *prog, const char *opt, const char *value, long min, long max,
                        long *out)
{
	char *end;
	long v;

	errno = 0;
	v = value ? strtol(value, &end, 10) : 0;
	if (!value || !*value || errno || *end || v < min || v > max) {
		rdmx_cli_bad_value(prog, opt, value);
		return -1;
	}
	*out = v;
	return 0;
}

int rdmx_cli_size(const char *value, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	errno = 0;
	if (!value || *value < '0' || *value > '9')
		return -1;
	v = strtoull(value, &end, 10);
	if (errno)
		return -1;
	if (*end == 'k' || *end == 'K')
		shift = 10;
	else if (*end == 'm' || *end == 'M')
		shift = 20;
	else if (*end == 'g' || *end == 'G')
		shift = 30;
	if (shift)
		end++;
	if (shift && *end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

int rdmx_cli_parse_size(const char *prog, const char *opt, const char *value, uint64_t min,
                        uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (rdmx_cli_size(value, &v) || v < min || v > max) {
		rdmx_cli_bad_value(prog, opt, value);
		return -1;
	}
	*out = v;
	return 0;
}

int rdmx_cli_split_addr(const char *s, char *host, size_t host_len, uint16_t *port)
{
	const char *colon = s ? strrchr(s, ':') : NULL;
	unsigned long p;
	char *end;
	size_t n;

	if (!colon || colon[1] == '\0')
		return -1;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (errno || *end || p > 65535 || colon[1] < '0' || colon[1] > '9')
		return -1;
	n = (size_t)(colon - s);
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		s++;
		n -= 2;
	}
	if (n >= host_len)
		return -1;
	memcpy(host, s, n);
	host[n] = '\0';
	*port = (uint16_t)p;
	return 0;
}

/* an empty variable counts as unset */
static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

void rdmx_cli_tls_env(struct rdmx_cli_tls *t)
{
	if (!t->ca)
		t->ca = env("RDMX_CA");
	if (!t->cert)
		t->cert = env("RDMX_CERT");
	if (!t->key)
		t->key = env("RDMX_KEY");
}

int rdmx_cli_tls_opt(struct rdmx_cli_tls *t, int opt, const char *arg)
{
	switch (opt) {
	case RDMX_CLI_OPT_CA:
		t->ca = arg;
		return 1;
	case RDMX_CLI_OPT_CERT:
		t->cert = arg;
		return 1;
	case RDMX_CLI_OPT_KEY:
		t->key = arg;
		return 1;
	case RDMX_CLI_OPT_CRL:
		t->crl = arg;
		return 1;
	case RDMX_CLI_OPT_ALLOW_INSECURE_KEY:
		t->allow_insecure_key = true;
		return 1;
	default:
		return 0;
	}
}

const char *rdmx_cli_registry_env(void)
{
	return env("RDMX_REGISTRY");
}

int rdmx_cli_set_device(const char *name)
{
	return setenv("RDMX_DEVICE", name, 1);
}

int rdmx_cli_key_refused_msg(char *buf, size_t len, const char *key, int status)
{
	struct stat st;

	if (status != RDMX_E_INSECURE_KEY)
		return 0;
	/* the library refused the key on the mode of the file it opened; this
	 * stat only fills in the message */
	if (key && stat(key, &st) == 0)
		snprintf(buf, len,
		         "private key %s is readable by group or others (mode %04o); chmod 600 it, "
		         "or pass --allow-insecure-key",
		         key, (unsigned)(st.st_mode & 07777));
	else
		snprintf(buf, len,
		         "private key %s is readable by group or others; chmod 600 it, or pass "
		         "--allow-insecure-key",
		         key ? key : "(unnamed)");
	return 1;
}

int rdmx_cli_key_refused(const char *prog, const char *key, int status)
{
	char msg[1024];

	if (!rdmx_cli_key_refused_msg(msg, sizeof(msg), key, status))
		return 0;
	fprintf(stderr, "%s: %s\n", prog, msg);
	return 1;
}

void rdmx_cli_warn_plain(const char *prog)
{
	fprintf(stderr,
	        "%s: warning: the plain cm flow is unauthenticated and unencrypted; use it only on "
	        "a trusted network\n",
	        prog);
}
