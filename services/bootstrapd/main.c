/* rdmx-bootstrapd: the cluster registry over mutual TLS.
 *
 *   rdmx-bootstrapd --listen HOST:PORT --ca FILE --cert FILE --key FILE
 *                   [--crl FILE] [--policy FILE] [--allow PATTERN]...
 *                   [--min-ttl-ms N] [--max-ttl-ms N] [--max-members N]
 *                   [--handshake-timeout-ms N] [--metrics HOST:PORT]\n"
                "                       [--verbose]
 *
 * Prints "listening HOST PORT" on stdout once it accepts connections.
 * SIGHUP reloads the policy file; SIGINT / SIGTERM stop. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include <rdmx/log.h>
#include <rdmx/metrics.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "cli.h"
#include "metrics_http.h"
#include "policy.h"
#include "registry_server.h"
#include "sd_notify.h"

struct args {
	char host[256];
	uint16_t port;
	const char *ca, *cert, *key, *crl, *policy, *metrics;
	bool allow_insecure_key;
	char metrics_host[256];
	uint16_t metrics_port;
	const char *allow[64];
	int n_allow;
	uint32_t handshake_timeout_ms;
	int verbose;
	struct rdmx__bootstrapd_opts o;
};

static void usage(FILE *f)
{
	fprintf(
	    f, "usage: rdmx-bootstrapd --listen HOST:PORT --ca FILE --cert FILE --key FILE\n"
	       "                       [--crl FILE] [--policy FILE] [--allow PATTERN]...\n"
	       "                       [--min-ttl-ms N] [--max-ttl-ms N] [--max-members N]\n"
	       "                       [--handshake-timeout-ms N] [--verbose]\n"
	       "      --listen HOST:PORT        the registry endpoint (mutual TLS); port 0 = any\n"
	       "      --ca FILE                 CA certificate (PEM, $RDMX_CA)\n"
	       "      --cert FILE               this node's certificate (PEM, $RDMX_CERT)\n"
	       "      --key FILE                its private key (PEM, $RDMX_KEY)\n"
	       "      --crl FILE                certificate revocation list (PEM)\n"
	       "      --allow-insecure-key      accept a key file group or others can read\n"
	       "      --policy FILE             lines 'CERT_NAME_PATTERN SERVICE_PATTERN' ('#'\n"
	       "                                comments): which certificates may register which\n"
	       "                                services; without it any member of the CA may\n"
	       "                                register any service\n"
	       "      --allow PATTERN           client certificate names accepted at all (default\n"
	       "                                '*': any name signed by the CA); repeatable\n"
	       "      --min-ttl-ms N            shortest lease granted\n"
	       "      --max-ttl-ms N            longest lease granted\n"
	       "      --max-members N           members held at most\n"
	       "      --handshake-timeout-ms N  TLS handshake limit\n"
	       "      --metrics HOST:PORT       Prometheus metrics at http://HOST:PORT/metrics\n"
	       "  -v, --verbose                 log more\n" RDMX_CLI_HELP_COMMON
	       "SIGHUP reloads the policy; SIGINT/SIGTERM stop.\n"
	       "Exit status: 0 stopped by a signal; 1 failure; 2 usage error.\n");
}

static int parse_u32(const char *opt, const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	long v;

	if (rdmx_cli_parse_long("rdmx-bootstrapd", opt, s, (long)min, (long)max, &v))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

enum {
	B_LISTEN = RDMX_CLI_OPT_VERSION + 1,
	B_POLICY,
	B_ALLOW,
	B_MIN_TTL,
	B_MAX_TTL,
	B_MAX_MEMBERS,
	B_HS_TIMEOUT,
	B_METRICS,
};

static const struct option long_options[] = {
    RDMX_CLI_LONGOPTS_STD,
    {"listen", required_argument, NULL, B_LISTEN},
    RDMX_CLI_LONGOPTS_TLS,
    {"policy", required_argument, NULL, B_POLICY},
    {"allow", required_argument, NULL, B_ALLOW},
    {"min-ttl-ms", required_argument, NULL, B_MIN_TTL},
    {"max-ttl-ms", required_argument, NULL, B_MAX_TTL},
    {"max-members", required_argument, NULL, B_MAX_MEMBERS},
    {"handshake-timeout-ms", required_argument, NULL, B_HS_TIMEOUT},
    {"metrics", required_argument, NULL, B_METRICS},
    {"verbose", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0},
};

/* 0 parsed, 1 help / version printed, -1 usage error (said) */
static int parse_args(int argc, char **argv, struct args *a)
{
	struct rdmx_cli_tls tls = {NULL, NULL, NULL, NULL, false};
	int have_listen = 0, c;

	rdmx_cli_reset();
	while ((c = rdmx_cli_getopt("rdmx-bootstrapd", argc, argv, "hv", long_options, true)) !=
	       -1) {
		if (rdmx_cli_tls_opt(&tls, c, optarg))
			continue;
		if (rdmx_cli_std_opt("rdmx-bootstrapd", c, usage))
			return 1;
		switch (c) {
		case 'v':
			a->verbose = 1;
			break;
		case B_LISTEN:
			if (rdmx_cli_split_addr(optarg, a->host, sizeof(a->host), &a->port)) {
				rdmx_cli_bad_value("rdmx-bootstrapd", "--listen", optarg);
				return -1;
			}
			have_listen = 1;
			break;
		case B_POLICY:
			a->policy = optarg;
			break;
		case B_ALLOW:
			if (a->n_allow == 64) {
				fprintf(stderr, "rdmx-bootstrapd: at most 64 --allow\n");
				return -1;
			}
			a->allow[a->n_allow++] = optarg;
			break;
		case B_MIN_TTL:
			if (parse_u32("--min-ttl-ms", optarg, 10, 86400000, &a->o.min_ttl_ms))
				return -1;
			break;
		case B_MAX_TTL:
			if (parse_u32("--max-ttl-ms", optarg, 10, 86400000, &a->o.max_ttl_ms))
				return -1;
			break;
		case B_MAX_MEMBERS:
			if (parse_u32("--max-members", optarg, 1, 1000000, &a->o.max_members))
				return -1;
			break;
		case B_HS_TIMEOUT:
			if (parse_u32("--handshake-timeout-ms", optarg, 1, 600000,
			              &a->handshake_timeout_ms))
				return -1;
			break;
		case B_METRICS:
			if (rdmx_cli_split_addr(optarg, a->metrics_host, sizeof(a->metrics_host),
			                        &a->metrics_port)) {
				rdmx_cli_bad_value("rdmx-bootstrapd", "--metrics", optarg);
				return -1;
			}
			a->metrics = optarg;
			break;
		default:
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rdmx-bootstrapd: unexpected operand '%s'\n", argv[optind]);
		return -1;
	}
	rdmx_cli_tls_env(&tls);
	a->ca = tls.ca;
	a->cert = tls.cert;
	a->key = tls.key;
	a->crl = tls.crl;
	a->allow_insecure_key = tls.allow_insecure_key;
	if (!have_listen || !a->ca || !a->cert || !a->key) {
		fprintf(stderr, "rdmx-bootstrapd: --listen, --ca, --cert and --key are required\n");
		return -1;
	}
	if (a->o.min_ttl_ms > a->o.max_ttl_ms) {
		fprintf(stderr, "rdmx-bootstrapd: --min-ttl-ms is above --max-ttl-ms\n");
		return -1;
	}
	if (a->o.default_ttl_ms < a->o.min_ttl_ms)
		a->o.default_ttl_ms = a->o.min_ttl_ms;
	if (a->o.default_ttl_ms > a->o.max_ttl_ms)
		a->o.default_ttl_ms = a->o.max_ttl_ms;
	return 0;
}

static struct rdmx_tls_config *make_config(const struct args *a)
{
	struct rdmx_tls_config *cfg = NULL;
	int ret = rdmx_tls_config_create(&cfg);

	if (!ret)
		ret = rdmx_tls_config_set_ca_file(cfg, a->ca);
	if (!ret)
		ret = rdmx_tls_config_set_cert_key(cfg, a->cert, a->key);
	if (!ret && a->crl)
		ret = rdmx_tls_config_set_crl_file(cfg, a->crl);
	if (!ret)
		ret = rdmx_tls_config_set_allow_insecure_key(cfg, a->allow_insecure_key);
	for (int i = 0; !ret && i < a->n_allow; i++) {
		ret = rdmx_tls_config_add_allowed_peer(cfg, a->allow[i]);
		if (ret)
			fprintf(stderr, "rdmx-bootstrapd: bad --allow pattern '%s'\n", a->allow[i]);
	}
	if (!ret && a->n_allow == 0)
		ret = rdmx_tls_config_add_allowed_peer(cfg, "*");
	if (!ret && a->handshake_timeout_ms)
		ret = rdmx_tls_config_set_handshake_timeout(cfg, a->handshake_timeout_ms);
	if (!ret)
		ret = rdmx_tls_config_load(cfg);
	if (ret) {
		if (!rdmx_cli_key_refused("rdmx-bootstrapd", a->key, ret))
			fprintf(stderr, "rdmx-bootstrapd: TLS setup failed: %s\n",
			        rdmx_strerror(ret));
		rdmx_tls_config_destroy(&cfg);
	}
	return cfg;
}

static struct rdmx__bootstrapd *server;

/* /metrics: the TLS listener, members and sessions */
static int fill_metrics(FILE *f, void *arg)
{
	struct rdmx_tls_listener_stats ls;
	struct rdmx_metrics_sources src;
	uint64_t refused, evicted;

	(void)arg;
	memset(&src, 0, sizeof(src));
	src.clients = -1;
	if (rdmx__bootstrapd_listener_stats(server, &ls) == 0)
		src.listener = &ls;
	fprintf(f,
	        "# HELP rdmx_registry_members Members registered now.\n"
	        "# TYPE rdmx_registry_members gauge\n"
	        "rdmx_registry_members %u\n"
	        "# HELP rdmx_registry_sessions Client sessions open now.\n"
	        "# TYPE rdmx_registry_sessions gauge\n"
	        "rdmx_registry_sessions %u\n",
	        rdmx__bootstrapd_members(server), rdmx__bootstrapd_sessions(server));
	rdmx__bootstrapd_session_limits(server, &refused, &evicted);
	fprintf(f,
	        "# HELP rdmx_registry_sessions_refused_total New sessions refused: all "
	        "client sessions open, the newcomer's certificate holding the most.\n"
	        "# TYPE rdmx_registry_sessions_refused_total counter\n"
	        "rdmx_registry_sessions_refused_total %llu\n"
	        "# HELP rdmx_registry_sessions_evicted_total Sessions closed for a newcomer: all "
	        "client sessions open, theirs the certificate holding the most.\n"
	        "# TYPE rdmx_registry_sessions_evicted_total counter\n"
	        "rdmx_registry_sessions_evicted_total %llu\n",
	        (unsigned long long)refused, (unsigned long long)evicted);
	return rdmx_metrics_write(f, &src);
}
static const char *policy_path;

static void stop_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)revents;
	fprintf(stderr, "rdmx-bootstrapd: signal %d, stopping\n", w->signum);
	ev_break(loop, EVBREAK_ALL);
}

static void hup_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct rdmx__policy *p = NULL;

	(void)loop;
	(void)w;
	(void)revents;
	if (!policy_path) {
		fprintf(stderr, "rdmx-bootstrapd: SIGHUP: no --policy to reload\n");
		return;
	}
	if (rdmx__policy_load(policy_path, &p)) {
		fprintf(stderr, "rdmx-bootstrapd: policy reload failed, the old one stays\n");
		return;
	}
	fprintf(stderr, "rdmx-bootstrapd: policy reloaded: %zu rules\n", rdmx__policy_rules(p));
	rdmx__bootstrapd_set_policy(server, p);
}

int main(int argc, char **argv)
{
	struct args a;
	struct rdmx_tls_config *cfg;
	struct rdmx__policy *policy = NULL;
	struct ev_loop *loop = EV_DEFAULT;
	ev_signal sigint, sigterm, sighup;
	struct rdmx_metrics_http *metrics = NULL;
	int ret;

	memset(&a, 0, sizeof(a));
	rdmx__bootstrapd_opts_init(&a.o);
	ret = parse_args(argc, argv, &a);
	if (ret)
		return ret > 0 ? 0 : 2;
	signal(SIGPIPE, SIG_IGN);
	rdmx_log_set_threshold(a.verbose ? RDMX_LOG_INFO : RDMX_LOG_NOTICE);
	if (a.policy && rdmx__policy_load(a.policy, &policy))
		return 1;
	if (!a.policy)
		fprintf(stderr, "rdmx-bootstrapd: no --policy: any certificate of the CA may "
		                "register any service\n");
	policy_path = a.policy;
	cfg = make_config(&a);
	if (!cfg) {
		rdmx__policy_destroy(&policy);
		return 1;
	}
	/* caught before "listening": a stop right after it is a clean stop */
	ev_signal_init(&sigint, stop_cb, SIGINT);
	ev_signal_init(&sigterm, stop_cb, SIGTERM);
	ev_signal_init(&sighup, hup_cb, SIGHUP);
	ev_signal_start(loop, &sigint);
	ev_signal_start(loop, &sigterm);
	ev_signal_start(loop, &sighup);
	a.o.host = a.host[0] ? a.host : NULL;
	a.o.port = a.port;
	ret = rdmx__bootstrapd_create(loop, cfg, &a.o, policy, &server);
	if (ret) {
		fprintf(stderr, "rdmx-bootstrapd: cannot start: %s\n", rdmx_strerror(ret));
		rdmx__policy_destroy(&policy);
		rdmx_tls_config_destroy(&cfg);
		return 1;
	}
	printf("listening %s %u\n", a.host[0] ? a.host : "*", rdmx__bootstrapd_get_port(server));
	fflush(stdout);
	if (a.metrics) {
		if (rdmx_metrics_http_create(loop, a.metrics_host, a.metrics_port, fill_metrics,
		                             NULL, "rdmx-bootstrapd", &metrics)) {
			rdmx__bootstrapd_destroy(&server);
			rdmx_tls_config_destroy(&cfg);
			return 1;
		}
		printf("metrics %s %u\n", a.metrics_host[0] ? a.metrics_host : "*",
		       rdmx_metrics_http_port(metrics));
		fflush(stdout);
	}
	rdmx__svc_notify("READY=1");
	ev_run(loop, 0);
	rdmx__svc_notify("STOPPING=1");
	rdmx_metrics_http_destroy(&metrics);
	rdmx__bootstrapd_destroy(&server);
	rdmx_tls_config_destroy(&cfg);
	return 0;
}
