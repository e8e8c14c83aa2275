/* rdmx-bootstrapd: the cluster registry over mutual TLS.
 *
 *   rdmx-bootstrapd --listen HOST:PORT --ca FILE --cert FILE --key FILE
 *                   [--crl FILE] [--policy FILE] [--allow PATTERN]...
 *                   [--min-ttl-ms N] [--max-ttl-ms N] [--max-members N]
 *                   [--handshake-timeout-ms N] [--verbose]
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
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "policy.h"
#include "registry_server.h"
#include "sd_notify.h"

struct args {
	char host[256];
	uint16_t port;
	const char *ca, *cert, *key, *crl, *policy;
	const char *allow[64];
	int n_allow;
	uint32_t handshake_timeout_ms;
	int verbose;
	struct rdmx__bootstrapd_opts o;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: rdmx-bootstrapd --listen HOST:PORT --ca FILE --cert FILE --key FILE\n"
	           "                       [--crl FILE] [--policy FILE] [--allow PATTERN]...\n"
	           "                       [--min-ttl-ms N] [--max-ttl-ms N] [--max-members N]\n"
	           "                       [--handshake-timeout-ms N] [--verbose]\n"
	           "  --policy FILE   lines 'CERT_NAME_PATTERN SERVICE_PATTERN' ('#' comments):\n"
	           "                  which certificates may register which services.\n"
	           "                  Without it any member of the CA may register any service.\n"
	           "  --allow PATTERN client certificate names accepted at all (default '*':\n"
	           "                  any name signed by the CA). Repeatable.\n"
	           "  SIGHUP reloads the policy; SIGINT/SIGTERM stop.\n");
}

static int parse_u32(const char *opt, const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || !*s || v < min || v > max) {
		fprintf(stderr, "rdmx-bootstrapd: %s wants %u..%u, got '%s'\n", opt, min, max, s);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

/* HOST:PORT, [V6]:PORT or :PORT (all addresses). */
static int parse_listen(const char *s, struct args *a)
{
	const char *colon = strrchr(s, ':');
	uint32_t port;
	size_t hl;

	if (!colon || parse_u32("--listen port", colon + 1, 0, 65535, &port))
		return -1;
	hl = (size_t)(colon - s);
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		s++;
		hl -= 2;
	}
	if (hl >= sizeof(a->host))
		return -1;
	memcpy(a->host, s, hl);
	a->host[hl] = '\0';
	a->port = (uint16_t)port;
	return 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	int have_listen = 0;

	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		int takes = 1;

		if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(o, "--verbose") || !strcmp(o, "-v")) {
			a->verbose = 1;
			takes = 0;
		} else if (!v) {
			fprintf(stderr, "rdmx-bootstrapd: %s needs a value\n", o);
			return -1;
		} else if (!strcmp(o, "--listen")) {
			if (parse_listen(v, a)) {
				fprintf(stderr, "rdmx-bootstrapd: bad --listen '%s'\n", v);
				return -1;
			}
			have_listen = 1;
		} else if (!strcmp(o, "--ca")) {
			a->ca = v;
		} else if (!strcmp(o, "--cert")) {
			a->cert = v;
		} else if (!strcmp(o, "--key")) {
			a->key = v;
		} else if (!strcmp(o, "--crl")) {
			a->crl = v;
		} else if (!strcmp(o, "--policy")) {
			a->policy = v;
		} else if (!strcmp(o, "--allow")) {
			if (a->n_allow == 64)
				return -1;
			a->allow[a->n_allow++] = v;
		} else if (!strcmp(o, "--min-ttl-ms")) {
			if (parse_u32(o, v, 10, 86400000, &a->o.min_ttl_ms))
				return -1;
		} else if (!strcmp(o, "--max-ttl-ms")) {
			if (parse_u32(o, v, 10, 86400000, &a->o.max_ttl_ms))
				return -1;
		} else if (!strcmp(o, "--max-members")) {
			if (parse_u32(o, v, 1, 1000000, &a->o.max_members))
				return -1;
		} else if (!strcmp(o, "--handshake-timeout-ms")) {
			if (parse_u32(o, v, 1, 600000, &a->handshake_timeout_ms))
				return -1;
		} else {
			fprintf(stderr, "rdmx-bootstrapd: unknown option %s\n", o);
			return -1;
		}
		i += takes;
	}
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
		fprintf(stderr, "rdmx-bootstrapd: TLS setup failed: %s\n", rdmx_strerror(ret));
		rdmx_tls_config_destroy(&cfg);
	}
	return cfg;
}

static struct rdmx__bootstrapd *server;
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
	int ret;

	memset(&a, 0, sizeof(a));
	rdmx__bootstrapd_opts_init(&a.o);
	if (parse_args(argc, argv, &a)) {
		usage(stderr);
		return 2;
	}
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
	ev_signal_init(&sigint, stop_cb, SIGINT);
	ev_signal_init(&sigterm, stop_cb, SIGTERM);
	ev_signal_init(&sighup, hup_cb, SIGHUP);
	ev_signal_start(loop, &sigint);
	ev_signal_start(loop, &sigterm);
	ev_signal_start(loop, &sighup);
	rdmx__svc_notify("READY=1");
	ev_run(loop, 0);
	rdmx__svc_notify("STOPPING=1");
	rdmx__bootstrapd_destroy(&server);
	rdmx_tls_config_destroy(&cfg);
	return 0;
}
