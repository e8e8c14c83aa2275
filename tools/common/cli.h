/* The argument convention every rdmx program follows (getopt_long):
 *   --opt=value and --opt value, -h/--help (usage on stdout, exit 0),
 *   --version ("PROG VERSION", exit 0), usage errors exit 2 with one line
 *   naming the option ("PROG: unknown option '--bogus'",
 *   "PROG: bad value 'x' for --timeout-ms"), and the same environment
 *   fallbacks (RDMX_CA, RDMX_CERT, RDMX_KEY, RDMX_REGISTRY, RDMX_DEVICE).
 * These helpers print those lines so that every program says them alike. */
#ifndef RDMX_TOOLS_CLI_H
#define RDMX_TOOLS_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* exit status of a usage error */
#define RDMX_CLI_USAGE 2

/* getopt_long return values of the options every program has */
#define RDMX_CLI_OPT_VERSION 0x1000
#define RDMX_CLI_OPT_HELP 'h'

/* Prints "PROG VERSION\n" on stdout (the one place the version line is made). */
void rdmx_cli_print_version(const char *prog);

/* -h/--help and --version, alike in every program: put RDMX_CLI_LONGOPTS_STD
 * in the longopts ('h' in the shortopts) and hand each option getopt returns
 * to rdmx_cli_std_opt: for -h/--help it calls usage(stdout), for --version
 * rdmx_cli_print_version(prog), and returns 1 (the program is done, exit
 * status 0); for any other option it returns 0. */
#define RDMX_CLI_LONGOPTS_STD                                                                      \
	{"help", no_argument, NULL, RDMX_CLI_OPT_HELP},                                            \
	{                                                                                          \
		"version", no_argument, NULL, RDMX_CLI_OPT_VERSION                                 \
	}
int rdmx_cli_std_opt(const char *prog, int opt, void (*usage)(FILE *));

/* getopt_long with our messages: call it with `shortopts` not starting with
 * ':' or '+' (they are added: `permute` false stops at the first operand,
 * for programs whose sub-command takes its own options). Returns the option
 * like getopt_long, -1 at the end, or '?' after printing
 * "PROG: unknown option '...'" / "PROG: option '...' needs a value" on
 * stderr. Reset with rdmx_cli_reset() before a second parse. */
int rdmx_cli_getopt(const char *prog, int argc, char **argv, const char *shortopts,
                    const struct option *longopts, bool permute);
void rdmx_cli_reset(void);

/* Prints "PROG: bad value 'VALUE' for OPT" and returns RDMX_CLI_USAGE. */
int rdmx_cli_bad_value(const char *prog, const char *opt, const char *value);

/* Decimal integer in [min, max] -> 0; else the bad-value line and -1.
 * `opt` names the option in the message ("--timeout-ms"). */
int rdmx_cli_parse_long(const char *prog, const char *opt, const char *value, long min, long max,
                        long *out);
/* "12", "4k", "64M", "1G" (K/M/G powers of 1024, optional "iB"/"B") in
 * [min, max] -> 0; else the bad-value line and -1. */
int rdmx_cli_parse_size(const char *prog, const char *opt, const char *value, uint64_t min,
                        uint64_t max, uint64_t *out);
/* The same numbers without range or message (a size in a command, not an
 * option): 0 with *out, or -1. */
int rdmx_cli_size(const char *value, uint64_t *out);

/* "host:port", "[v6]:port" or ":port" (host "" = every address) -> 0, or -1. */
int rdmx_cli_split_addr(const char *s, char *host, size_t host_len, uint16_t *port);

/* Files of mutual TLS; rdmx_cli_tls_env fills the unset ones from
 * $RDMX_CA, $RDMX_CERT, $RDMX_KEY. */
struct rdmx_cli_tls {
	const char *ca, *cert, *key, *crl;
	bool allow_insecure_key; /* --allow-insecure-key */
};
void rdmx_cli_tls_env(struct rdmx_cli_tls *t);
/* --allow-insecure-key, in every program that takes --key: accept a private
 * key file that group or others can read (refused by default). Put
 * RDMX_CLI_LONGOPT_ALLOW_INSECURE_KEY in the longopts, set
 * rdmx_cli_tls.allow_insecure_key on RDMX_CLI_OPT_ALLOW_INSECURE_KEY and
 * pass it to rdmx_tls_config_set_allow_insecure_key. */
#define RDMX_CLI_OPT_ALLOW_INSECURE_KEY 0x0f00
#define RDMX_CLI_LONGOPT_ALLOW_INSECURE_KEY                                                        \
	{                                                                                          \
		"allow-insecure-key", no_argument, NULL, RDMX_CLI_OPT_ALLOW_INSECURE_KEY           \
	}
/* The TLS file options, alike in every program that takes them: --ca,
 * --cert, --key, --crl FILE and --allow-insecure-key. Put
 * RDMX_CLI_LONGOPTS_TLS in the longopts and hand each option getopt returns
 * to rdmx_cli_tls_opt first: it stores the option's value in `t` and returns
 * 1, or returns 0 for an option that is not one of these. */
#define RDMX_CLI_OPT_CA 0x0f01
#define RDMX_CLI_OPT_CERT 0x0f02
#define RDMX_CLI_OPT_KEY 0x0f03
#define RDMX_CLI_OPT_CRL 0x0f04
#define RDMX_CLI_LONGOPTS_TLS                                                                      \
	{"ca", required_argument, NULL, RDMX_CLI_OPT_CA},                                          \
	    {"cert", required_argument, NULL, RDMX_CLI_OPT_CERT},                                  \
	    {"key", required_argument, NULL, RDMX_CLI_OPT_KEY},                                    \
	    {"crl", required_argument, NULL, RDMX_CLI_OPT_CRL},                                    \
	    RDMX_CLI_LONGOPT_ALLOW_INSECURE_KEY
int rdmx_cli_tls_opt(struct rdmx_cli_tls *t, int opt, const char *arg);
/* After a TLS setup that failed with `status`: for RDMX_E_INSECURE_KEY prints
 * "PROG: private key KEY is readable by group or others (mode 0644); chmod 600
 * it, or pass --allow-insecure-key" on stderr and returns 1; else prints
 * nothing and returns 0. */
int rdmx_cli_key_refused(const char *prog, const char *key, int status);
/* The same text without "PROG: " and newline into buf; 1 if written, else 0. */
int rdmx_cli_key_refused_msg(char *buf, size_t len, const char *key, int status);

/* The plain (cm) flow: no TLS, so no authentication and no encryption.
 * Programs that use it print RDMX_CLI_HELP_PLAIN_NOTE in --help and call
 * rdmx_cli_warn_plain at start: "PROG: warning: the plain cm flow is
 * unauthenticated and unencrypted; use it only on a trusted network". */
#define RDMX_CLI_HELP_PLAIN_NOTE                                                                   \
	"The plain cm flow is unauthenticated and unencrypted: use it only on a\n"                 \
	"trusted network.\n"
void rdmx_cli_warn_plain(const char *prog);

/* $RDMX_REGISTRY, or NULL */
const char *rdmx_cli_registry_env(void);
/* --device NAME: sets $RDMX_DEVICE for this process (the engine's
 * rdmx_dev_open(NULL) reads it), so one name reaches every layer. */
int rdmx_cli_set_device(const char *name);

/* The --help lines of the options every program shares. */
#define RDMX_CLI_HELP_COMMON                                                                       \
	"  -h, --help              this text, on stdout\n"                                         \
	"      --version           the version\n"

#endif
