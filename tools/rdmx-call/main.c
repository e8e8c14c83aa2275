/* rdmx-call: call any method of an rdmx RPC server with JSON (grpcurl-like).
 *
 *   rdmx-call [options] ADDR list [SERVICE]
 *   rdmx-call [options] ADDR package.Service/Method ['{json}' | @FILE | -]
 *   rdmx-call [options] ADDR describe SERVICE_OR_METHOD
 *
 * ADDR is HOST:PORT of the server's plain rdmx listener, or — with --ca,
 * --cert and --key — of its secure bootstrap endpoint (mutual TLS).
 * Without --proto, the request and reply schemas come from the server's
 * reflection service (rdmx.reflection.v1.Reflection/FileContaining);
 * with --proto FILE they come from the local IDL file.
 * docs/guide-rpc.md has the JSON mapping and examples.
 *
 * Exit status: 0 OK; 1 failure (connection, schema, JSON); 2 usage;
 * 64 + the RPC status code when the server answered another status
 * (like grpcurl).
 *
 * This file parses the command line (into struct callopts) and dispatches:
 * target.c and service.c reach the server (ADDR, or --registry --service),
 * list.c, describe.c and method.c are the commands, schema.c finds their
 * IDL, callstream.c runs a call of any kind at ADDR. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/pe.h>
#include <rdmx/rpc.h>

#include "callopts.h"
#include "callstream.h"
#include "cli.h"
#include "describe.h"
#include "list.h"
#include "method.h"
#include "service.h"
#include "target.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: rdmx-call [options] ADDR list [SERVICE]\n"
	        "       rdmx-call [options] ADDR package.Service/Method ['{json}' | @FILE | -]\n"
	        "       rdmx-call [options] ADDR describe SERVICE_OR_METHOD\n"
	        "       rdmx-call [options] --registry ADDRESS --service NAME list|METHOD ...\n"
	        "  ADDR                      HOST:PORT of the server's rdmx listener, or of its\n"
	        "                            secure bootstrap endpoint when --ca/--cert/--key\n"
	        "                            (or $RDMX_CA, $RDMX_CERT, $RDMX_KEY) are given\n"
	        "      --registry ADDRESS    find the server in the registry instead of ADDR:\n"
	        "                            HOST:PORT, rdmx://HOST:PORT or\n"
	        "                            etcd://HOST:PORT[,HOST:PORT...] ($RDMX_REGISTRY)\n"
	        "      --service NAME        with --registry: the service; one live member is\n"
	        "                            picked (the less loaded of two at random), a member\n"
	        "                            that cannot be reached is skipped for the next;\n"
	        "                            a call whose request never reached the server, or\n"
	        "                            of an idempotent method, goes again on another\n"
	        "                            member (within the timeout and a retry budget)\n"
	        "      --proto FILE          the IDL of the method (default: ask the server's\n"
	        "                            reflection service)\n"
	        "  -I, --import-path DIR     where --proto's imports are found (repeatable)\n"
	        "      --ca FILE             CA certificate (PEM, $RDMX_CA)\n"
	        "      --cert FILE           this node's certificate (PEM, $RDMX_CERT)\n"
	        "      --key FILE            its private key (PEM, $RDMX_KEY)\n"
	        "      --crl FILE            certificate revocation list (PEM)\n"
	        "      --allow-insecure-key  accept a private key file group or others can read\n"
	        "      --plain, --plaintext, -plaintext\n"
	        "                            the plain listener even when $RDMX_CA, $RDMX_CERT\n"
	        "                            and $RDMX_KEY are set; without TLS files the plain\n"
	        "                            listener is used too\n"
	        "      --server-name PATTERN the name the server's certificate must carry\n"
	        "                            (default '*': any certificate of the CA)\n"
	        "  -d DATA                   the request messages: JSON values one after the\n"
	        "                            other, one request each; '@' reads them from\n"
	        "                            stdin as the call goes (streams)\n"
	        "  -H 'KEY: VALUE'           request metadata (repeatable)\n"
	        "      --device NAME         the device ($RDMX_DEVICE)\n"
	        "      --timeout-ms N        connection and call deadline (default 10000)\n"
	        "      --max-time, -max-time SECONDS\n"
	        "                            the whole call's deadline (a decimal number)\n"
	        "  -v, --verbose             the request metadata, response headers and\n"
	        "                            trailers on stdout; device, status and latency\n"
	        "                            on stderr\n" RDMX_CLI_HELP_COMMON
	        "The plain cm flow (no TLS) is unauthenticated and unencrypted: use it only\n"
	        "on a trusted network.\n"
	        "The request is -d DATA, or the JSON argument ('{}' when absent), @FILE, or -\n"
	        "(stdin); every response message is printed as it arrives. describe prints a\n"
	        "service or method from the server's reflection service.\n"
	        "An option takes its value after a space or an '='; grpcurl's single-dash\n"
	        "long options (-plaintext, -max-time, -proto, -import-path) work too.\n"
	        "Exit status: 0 OK; 1 failure; 2 usage error; 64 + RPC status code otherwise.\n");
}

enum {
	A_PROTO = RDMX_CLI_OPT_VERSION + 1,
	A_PLAIN,
	A_SERVER_NAME,
	A_TIMEOUT,
	A_REGISTRY,
	A_SERVICE,
	A_DEVICE,
	A_MAX_TIME,
};

static const struct option long_options[] = {
    RDMX_CLI_LONGOPTS_STD,
    {"proto", required_argument, NULL, A_PROTO},
    {"import-path", required_argument, NULL, 'I'},
    RDMX_CLI_LONGOPTS_TLS,
    {"plain", no_argument, NULL, A_PLAIN},
    {"plaintext", no_argument, NULL, A_PLAIN},
    {"server-name", required_argument, NULL, A_SERVER_NAME},
    {"device", required_argument, NULL, A_DEVICE},
    {"max-time", required_argument, NULL, A_MAX_TIME},
    {"timeout-ms", required_argument, NULL, A_TIMEOUT},
    {"registry", required_argument, NULL, A_REGISTRY},
    {"service", required_argument, NULL, A_SERVICE},
    {"verbose", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0},
};

/* -max-time SECONDS: the whole call's deadline, and --timeout-ms from it.
 * 0, or -1 (said). */
static int parse_max_time(const char *arg, struct callopts *o)
{
	char *end = NULL;
	double sec;

	errno = 0;
	sec = strtod(arg, &end);
	if (errno || end == arg || *end || !(sec > 0) || sec > 86400) {
		fprintf(stderr,
		        "rdmx-call: --max-time: want seconds (a decimal number "
		        "above 0, at most 86400), got '%s'\n",
		        arg);
		return -1;
	}
	o->deadline_ns = rdmx_pe_now_ns() + (uint64_t)(sec * 1e9);
	o->timeout_ms = (int)(sec * 1000.0 + 0.999);
	if (o->timeout_ms < 1)
		o->timeout_ms = 1;
	return 0;
}

static int add_include(const char *dir, struct callopts *o)
{
	if (o->n_includes == CALLOPTS_MAX_INCLUDES) {
		fprintf(stderr, "rdmx-call: at most %d -I\n", CALLOPTS_MAX_INCLUDES);
		return -1;
	}
	o->includes[o->n_includes++] = dir;
	return 0;
}

/* One option c (not a TLS, help or version one) with its argument arg.
 * 0, or -1 (said). */
static int parse_option(int c, const char *arg, struct callopts *o, bool *plain)
{
	long v;

	switch (c) {
	case 'v':
		o->verbose = true;
		return 0;
	case A_PROTO:
		o->proto = arg;
		return 0;
	case 'I':
		return add_include(arg, o);
	case A_PLAIN:
		*plain = true;
		return 0;
	case A_SERVER_NAME:
		o->tls.peer = arg;
		return 0;
	case A_DEVICE:
		rdmx_cli_set_device(arg);
		return 0;
	case 'd':
		o->data_opt = arg;
		return 0;
	case 'H':
		return callmd_parse_header(arg, &o->headers);
	case A_MAX_TIME:
		return parse_max_time(arg, o);
	case A_TIMEOUT:
		if (rdmx_cli_parse_long("rdmx-call", "--timeout-ms", arg, 1, 600000, &v))
			return -1;
		o->timeout_ms = (int)v;
		return 0;
	case A_REGISTRY:
		o->registry = arg;
		return 0;
	case A_SERVICE:
		o->service = arg;
		return 0;
	default:
		return -1;
	}
}

/* The TLS files (the options', else $RDMX_CA, $RDMX_CERT, $RDMX_KEY unless
 * --plain) into o->tls; o->secure when all three are there. 0, or -1
 * (said). */
static int take_tls(struct rdmx_cli_tls *tls, bool plain, struct callopts *o)
{
	if (plain && (tls->ca || tls->cert || tls->key)) {
		fprintf(stderr,
		        "rdmx-call: --plain (--plaintext) and --ca/--cert/--key exclude each "
		        "other\n");
		return -1;
	}
	if (!plain)
		rdmx_cli_tls_env(tls);
	o->tls.ca = tls->ca;
	o->tls.cert = tls->cert;
	o->tls.key = tls->key;
	o->tls.crl = tls->crl;
	o->tls.allow_insecure_key = tls->allow_insecure_key;
	return 0;
}

/* The operands pos[0..n): [ADDR] WHAT [DATA]. 0, or -1 (said). */
static int take_operands(const char *const *pos, int n, struct callopts *o)
{
	if (o->service) {
		if (!o->registry)
			o->registry = rdmx_cli_registry_env();
		if (!o->registry) {
			fprintf(stderr,
			        "rdmx-call: --service needs --registry (or $RDMX_REGISTRY)\n");
			return -1;
		}
		if (n < 1 || n > 2) {
			fprintf(stderr,
			        "rdmx-call: with --service: want list|package.Service/Method "
			        "(no ADDR; rdmx-call --help)\n");
			return -1;
		}
		o->what = pos[0];
		o->data = n == 2 ? pos[1] : NULL;
	} else if (o->registry) {
		fprintf(stderr, "rdmx-call: --registry needs --service NAME\n");
		return -1;
	} else if (n < 2) {
		fprintf(stderr, "rdmx-call: want ADDR list|package.Service/Method "
		                "(rdmx-call --help)\n");
		return -1;
	} else {
		o->addr = pos[0];
		o->what = pos[1];
		o->data = n == 3 ? pos[2] : NULL;
	}
	return 0;
}

/* What the options and operands together refuse. 0, or -1 (said). */
static int check_together(struct callopts *o)
{
	if (strcmp(o->what, "describe") == 0 && !o->data) {
		fprintf(stderr, "rdmx-call: describe wants SERVICE_OR_METHOD\n");
		return -1;
	}
	if (o->data_opt && o->data && strcmp(o->what, "describe") != 0) {
		fprintf(stderr,
		        "rdmx-call: give the request with -d or as an argument, not both\n");
		return -1;
	}
	if (o->service && (rdmx_rpc_md_count(&o->headers) || o->data_opt)) {
		fprintf(stderr, "rdmx-call: -H and -d are for ADDR calls, not --service\n");
		return -1;
	}
	if (o->tls.ca || o->tls.cert || o->tls.key) {
		if (!o->tls.ca || !o->tls.cert || !o->tls.key) {
			fprintf(stderr, "rdmx-call: TLS needs all of --ca, --cert and --key\n");
			return -1;
		}
		o->secure = true;
	}
	return 0;
}

/* 0 parsed, 1 help / version printed, -1 usage error (said) */
static int parse_args(int argc, char **argv, struct callopts *o)
{
	struct rdmx_cli_tls tls = {NULL, NULL, NULL, NULL, false};
	const char *pos[3];
	bool plain = false;
	int n_pos = 0, c;

	o->timeout_ms = 10000;
	rdmx_rpc_md_init(&o->headers);
	rdmx_cli_reset();
	while ((c = rdmx_cli_getopt("rdmx-call", argc, argv, "hI:d:H:v", long_options, true)) !=
	       -1) {
		if (rdmx_cli_tls_opt(&tls, c, optarg))
			continue;
		if (rdmx_cli_std_opt("rdmx-call", c, usage))
			return 1;
		if (parse_option(c, optarg, o, &plain))
			return -1;
	}
	for (int i = optind; i < argc; i++) {
		if (n_pos == 3) {
			fprintf(stderr, "rdmx-call: too many arguments (%s)\n", argv[i]);
			return -1;
		}
		pos[n_pos++] = argv[i];
	}
	if (take_tls(&tls, plain, o) || take_operands(pos, n_pos, o))
		return -1;
	return check_together(o);
}

/* grpcurl spells its long options with one dash (-plaintext, -max-time 5,
 * -max-time=5, -proto F, -import-path D): taken as their "--" forms
 * (before a "--", so that an operand is never rewritten). */
static char alias_buf[64][512];

static void single_dash_aliases(int argc, char **argv)
{
	static const char *const names[] = {"plaintext", "max-time", "proto", "import-path"};
	int k = 0;

	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *a = argv[i];

		if (a[0] != '-' || a[1] == '-' || k == 64)
			continue;
		for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
			size_t l = strlen(names[n]);

			if (strncmp(a + 1, names[n], l) == 0 &&
			    (a[1 + l] == '\0' || a[1 + l] == '=') &&
			    strlen(a) + 2 < sizeof(alias_buf[0])) {
				snprintf(alias_buf[k], sizeof(alias_buf[0]), "-%s", a);
				argv[i] = alias_buf[k++];
				break;
			}
		}
	}
}

int main(int argc, char **argv)
{
	struct calltarget t;
	struct callopts o;
	int ret;

	memset(&t, 0, sizeof(t));
	memset(&o, 0, sizeof(o));
	single_dash_aliases(argc, argv);
	ret = parse_args(argc, argv, &o);
	if (ret) {
		rdmx_rpc_md_fini(&o.headers);
		return ret > 0 ? 0 : 2;
	}
	ret = o.service ? calltarget_open_service(&t, &o) : calltarget_connect(&t, &o);
	if (ret == 0)
		ret = strcmp(o.what, "list") == 0       ? cmd_list(&t, &o)
		      : strcmp(o.what, "describe") == 0 ? cmd_describe(&t, &o)
		                                        : cmd_method(&t, &o);
	calltarget_close(&t);
	rdmx_rpc_md_fini(&o.headers);
	return ret;
}
