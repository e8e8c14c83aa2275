/* rdmx-registry: command line client of the registry (rdmx-bootstrapd or etcd).
 *
 *   rdmx-registry [--ca F --cert F --key F] [--crl F] --server HOST:PORT
 *                 [--server-name NAME] [--timeout-ms N] COMMAND
 *   COMMAND: list | lookup SERVICE | watch [SERVICE]
 *          | join SERVICE ENDPOINT [--ttl-ms N] [--meta KEY=VALUE]...
 *
 * --ca/--cert/--key default to $RDMX_CA, $RDMX_CERT, $RDMX_KEY.
 *
 * Output, one line per item, space-separated KEY=VALUE tokens after a first
 * word (a script splits on spaces then on the first '='); values are
 * percent-encoded where they hold a space, '%', '=' or a non-printable byte:
 *   member id=N service=S endpoint=E owner=O ttl_ms=N expires_in_ms=N meta.K=V...
 *   joined|left|expired id=N service=S ...        (watch; same tokens)
 *   joined id=N ttl_ms=N                          (join: then it heartbeats
 *                                                  until SIGINT/SIGTERM, then leaves)
 * Exit status: 0 done, 1 failure (reason on stderr), 2 usage. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdmx/registry.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "cli.h"
#include "common/clock.h"

#define MAX_META RDMX_REGISTRY_MAX_META

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: rdmx-registry [options] list | lookup SERVICE | watch [SERVICE]\n"
	        "                     | join SERVICE ENDPOINT [--ttl-ms N] [--meta KEY=VALUE]...\n"
	        "      --server ADDRESS     the registry ($RDMX_REGISTRY): HOST:PORT or\n"
	        "                           rdmx://HOST:PORT (rdmx-bootstrapd), or\n"
	        "                           etcd://HOST:PORT[,HOST:PORT...][/PREFIX] (etcd v3)\n"
	        "      --registry ADDRESS   the same as --server\n"
	        "      --server-name NAME   the name the server's certificate must carry\n"
	        "                           (default: HOST; patterns like *.svc.local allowed;\n"
	        "                           etcd: its certificate must name the HOST given)\n"
	        "      --ca FILE            CA certificate (PEM, $RDMX_CA)\n"
	        "      --cert FILE          this node's certificate (PEM, $RDMX_CERT)\n"
	        "      --key FILE           its private key (PEM, $RDMX_KEY)\n"
	        "      --crl FILE           certificate revocation list (PEM)\n"
	        "      --allow-insecure-key accept a private key file group or others can read\n"
	        "      --timeout-ms N       each request's deadline (default 5000)\n"
	        "      --ttl-ms N           join: the lease asked for (default 30000)\n"
	        "      --meta KEY=VALUE     join: metadata (repeatable)\n" RDMX_CLI_HELP_COMMON
	        "Exit status: 0 done; 1 failure; 2 usage error.\n");
}

static void put_value(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c <= 0x20 || c >= 0x7f || c == '%' || c == '=')
			printf("%%%02X", c);
		else
			putchar(c);
	}
}

static void put_member(const char *word, const struct rdmx_registry_member *m)
{
	printf("%s id=%llu service=", word, (unsigned long long)m->id);
	put_value(m->service);
	printf(" endpoint=");
	put_value(m->endpoint);
	printf(" owner=");
	put_value(m->owner);
	printf(" ttl_ms=%u expires_in_ms=%u", m->ttl_ms, m->expires_in_ms);
	for (size_t i = 0; i < m->n_meta; i++) {
		printf(" meta.");
		put_value(m->meta[i].key);
		putchar('=');
		put_value(m->meta[i].value);
	}
	putchar('\n');
	fflush(stdout);
}

static int fail(struct rdmx_registry_client *c, const char *what, int ret)
{
	const char *server = c ? rdmx_registry_client_last_error(c) : "";

	fprintf(stderr, "rdmx-registry: %s: %s%s%s\n", what, rdmx_strerror(ret),
	        *server ? ": " : "", server);
	return 1;
}

static int cmd_join(struct rdmx_registry_client *c, const char *service, const char *endpoint,
                    struct rdmx_registry_kv *meta, size_t n_meta, uint32_t ttl)
{
	uint64_t id;
	uint32_t granted;
	int ret = rdmx_registry_client_join(c, service, endpoint, meta, n_meta, ttl, &id, &granted);

	if (ret)
		return fail(c, "join", ret);
	printf("joined id=%llu ttl_ms=%u\n", (unsigned long long)id, granted);
	fflush(stdout);
	/* renew at a third of the lease, so that two lost beats are survived */
	while (!stop) {
		int64_t next = (int64_t)rdmx__now_ms() + granted / 3;

		while (!stop && (int64_t)rdmx__now_ms() < next) {
			struct timespec ts = {0, 20 * 1000 * 1000};

			nanosleep(&ts, NULL);
		}
		if (stop)
			break;
		ret = rdmx_registry_client_heartbeat(c, id);
		if (ret)
			return fail(c, "heartbeat", ret);
	}
	ret = rdmx_registry_client_leave(c, id);
	if (ret)
		return fail(c, "leave", ret);
	printf("left id=%llu\n", (unsigned long long)id);
	return 0;
}

static int cmd_watch(struct rdmx_registry_client *c, const char *service)
{
	static const char *const words[] = {"", "joined", "left", "expired"};
	struct rdmx_registry_event *ev = NULL;
	int ret = rdmx_registry_client_watch(c, service);

	if (ret)
		return fail(c, "watch", ret);
	printf("watching service=%s\n", service ? service : "*");
	fflush(stdout);
	while (!stop) {
		ret = rdmx_registry_client_next_event(c, 200, &ev);
		if (ret == RDMX_E_TIMEDOUT)
			continue;
		if (ret)
			return fail(c, "watch", ret);
		put_member(words[ev->type], &ev->member);
		rdmx_registry_event_free(&ev);
	}
	return 0;
}

static int cmd_members(struct rdmx_registry_client *c, const char *service)
{
	struct rdmx_registry_members *ms = NULL;
	int ret = service ? rdmx_registry_client_lookup(c, service, &ms)
	                  : rdmx_registry_client_list(c, &ms);

	if (ret)
		return fail(c, service ? "lookup" : "list", ret);
	for (size_t i = 0; i < ms->count; i++)
		put_member("member", &ms->items[i]);
	rdmx_registry_members_free(&ms);
	return 0;
}

enum {
	R_SERVER = RDMX_CLI_OPT_VERSION + 1,
	R_SERVER_NAME,
	R_TIMEOUT,
	R_TTL,
	R_META,
};

static const struct option long_options[] = {
    RDMX_CLI_LONGOPTS_STD,
    RDMX_CLI_LONGOPTS_TLS,
    {"server", required_argument, NULL, R_SERVER},
    {"registry", required_argument, NULL, R_SERVER},
    {"server-name", required_argument, NULL, R_SERVER_NAME},
    {"timeout-ms", required_argument, NULL, R_TIMEOUT},
    {"ttl-ms", required_argument, NULL, R_TTL},
    {"meta", required_argument, NULL, R_META},
    {NULL, 0, NULL, 0},
};

int main(int argc, char **argv)
{
	struct rdmx_cli_tls tls = {NULL, NULL, NULL, NULL, false};
	const char *ca, *cert, *key;
	const char *crl = NULL, *server = NULL, *server_name = NULL;
	const char *pos[4];
	int n_pos = 0, timeout = 5000, ret, opt;
	unsigned long ttl = 30000;
	struct rdmx_registry_kv meta[MAX_META];
	size_t n_meta = 0;
	char host[256] = "*";
	uint16_t port;
	bool etcd;
	struct rdmx_tls_config *cfg = NULL;
	struct rdmx_registry_client *c = NULL;

	rdmx_cli_reset();
	while ((opt = rdmx_cli_getopt("rdmx-registry", argc, argv, "h", long_options, true)) !=
	       -1) {
		long v;

		if (rdmx_cli_tls_opt(&tls, opt, optarg))
			continue;
		if (rdmx_cli_std_opt("rdmx-registry", opt, usage))
			return 0;
		switch (opt) {
		case R_SERVER:
			server = optarg;
			break;
		case R_SERVER_NAME:
			server_name = optarg;
			break;
		case R_TIMEOUT:
			if (rdmx_cli_parse_long("rdmx-registry", "--timeout-ms", optarg, 1, 600000,
			                        &v))
				return 2;
			timeout = (int)v;
			break;
		case R_TTL:
			if (rdmx_cli_parse_long("rdmx-registry", "--ttl-ms", optarg, 1, UINT32_MAX,
			                        &v))
				return 2;
			ttl = (unsigned long)v;
			break;
		case R_META: {
			char *eq = strchr(optarg, '=');

			if (!eq || n_meta == MAX_META) {
				fprintf(stderr,
				        "rdmx-registry: --meta wants KEY=VALUE (at most %u)\n",
				        MAX_META);
				return 2;
			}
			*eq = '\0';
			meta[n_meta].key = optarg;
			meta[n_meta++].value = eq + 1;
			break;
		}
		default:
			return 2;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (n_pos == 4) {
			fprintf(stderr, "rdmx-registry: too many operands\n");
			return 2;
		}
		pos[n_pos++] = argv[i];
	}
	rdmx_cli_tls_env(&tls);
	ca = tls.ca;
	cert = tls.cert;
	key = tls.key;
	crl = tls.crl;
	if (!server)
		server = rdmx_cli_registry_env();
	if (!server || !ca || !cert || !key) {
		fprintf(stderr, "rdmx-registry: needs --server (or $RDMX_REGISTRY), --ca, --cert "
		                "and --key\n");
		return 2;
	}
	if (n_pos == 0) {
		fprintf(stderr, "rdmx-registry: which command? list, lookup, watch or join\n");
		return 2;
	}
	etcd = strncmp(server, "etcd://", 7) == 0;
	if (!etcd && (rdmx_cli_split_addr(strncmp(server, "rdmx://", 7) ? server : server + 7, host,
	                                  sizeof(host), &port) ||
	              !*host || port == 0)) {
		rdmx_cli_bad_value("rdmx-registry", "--server", server);
		return 2;
	}
	if (!(!strcmp(pos[0], "list") && n_pos == 1) &&
	    !(!strcmp(pos[0], "lookup") && n_pos == 2) &&
	    !(!strcmp(pos[0], "watch") && n_pos <= 2) && !(!strcmp(pos[0], "join") && n_pos == 3)) {
		fprintf(stderr,
		        "rdmx-registry: bad command line for '%s' "
		        "(rdmx-registry --help lists them)\n",
		        pos[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	ret = rdmx_tls_config_create(&cfg);
	if (!ret)
		ret = rdmx_tls_config_set_ca_file(cfg, ca);
	if (!ret)
		ret = rdmx_tls_config_set_cert_key(cfg, cert, key);
	if (!ret && crl)
		ret = rdmx_tls_config_set_crl_file(cfg, crl);
	if (!ret)
		ret = rdmx_tls_config_set_allow_insecure_key(cfg, tls.allow_insecure_key);
	if (!ret)
		ret = rdmx_tls_config_add_allowed_peer(cfg, server_name ? server_name : host);
	if (ret) {
		fprintf(stderr, "rdmx-registry: bad TLS settings: %s\n", rdmx_strerror(ret));
		rdmx_tls_config_destroy(&cfg);
		return 2;
	}
	/* the files are read now, so that a refused key fails before connecting */
	ret = rdmx_tls_config_load(cfg);
	if (ret) {
		if (!rdmx_cli_key_refused("rdmx-registry", key, ret))
			fprintf(stderr, "rdmx-registry: TLS setup (ca %s, cert %s, key %s): %s\n",
			        ca, cert, key, rdmx_strerror(ret));
		rdmx_tls_config_destroy(&cfg);
		return 1;
	}
	/* bounded by --timeout-ms; SIGINT / SIGTERM keep their default action
	 * (end the program) until connected, then ask for a clean stop */
	ret = rdmx_registry_client_open(server, cfg,
	                                timeout > 0 && timeout <= 600000 ? timeout : 5000, &c);
	if (ret) {
		rdmx_tls_config_destroy(&cfg);
		return fail(NULL, "connect", ret);
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (!strcmp(pos[0], "list"))
		ret = cmd_members(c, NULL);
	else if (!strcmp(pos[0], "lookup"))
		ret = cmd_members(c, pos[1]);
	else if (!strcmp(pos[0], "watch"))
		ret = cmd_watch(c, n_pos == 2 ? pos[1] : NULL);
	else
		ret = cmd_join(c, pos[1], pos[2], meta, n_meta,
		               ttl > UINT32_MAX ? UINT32_MAX : (uint32_t)ttl);
	rdmx_registry_client_destroy(&c);
	rdmx_tls_config_destroy(&cfg);
	return ret;
}
