/* rdmx-perf: perftest-style benchmarks, with perftest's flags and columns.
 *   rdmx-perf TEST [options] [SERVER_ADDR]
 * Without SERVER_ADDR it is the server; with it, the client, which prints
 * perftest's columns and a last line
 *   RESULT test=... size=... p50_us=... p99_us=... mib_s=... ops_per_s=...
 * (tests/vm/bench reads it). Defaults are perftest's: latency tests 2 bytes
 * and 1000 iterations, bandwidth tests 65536 bytes and 5000 iterations;
 * -a sweeps 2..8388608 bytes by powers of two (give -a to both sides). */
#include "perf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define PERF_ALL_MAX (8u << 20)

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: rdmx-perf TEST [options] [SERVER_ADDR]\n"
	        "TEST: send_lat write_lat read_lat atomic_lat send_bw write_bw read_bw atomic_bw");
#ifdef RDMX_PERF_HAVE_RPC
	fprintf(f, " rpc_lat rpc_bw");
#endif
	fprintf(
	    f,
	    "\nWithout SERVER_ADDR: the server (it prints its results too where it measures).\n"
	    "  -s, --size N           bytes per operation (lat: 2, bw: 65536)\n"
	    "  -n, --iters N          iterations (lat: 1000, bw: 5000)\n"
	    "  -D, --duration SECS    bandwidth tests: run for SECS seconds instead of -n\n"
	    "  -a, --all              every size 2..8388608 by powers of 2 (both sides)\n"
	    "  -p, --port N           the listening port (default 18515)\n"
	    "  -d, --ib-dev DEV       the device ($RDMX_DEVICE; default: first verbs, else tcp)\n"
	    "  -x, --gid-index N      the GID index\n"
	    "  -m, --mtu N            the MTU (256..4096)\n"
	    "  -I, --inline_size N    send/write payloads up to N bytes inline (engine\n"
	    "                         tests; at most the device's max_inline, default 0)\n"
	    "  -t, --tx-depth N       operations in flight (bandwidth and rpc tests, default 64)\n"
	    "  -F, --CPU-freq         accepted for perftest scripts (rdmx-perf reads no CPU\n"
	    "                         frequency: it times with CLOCK_MONOTONIC)\n"
	    "      --report_gbits     bandwidth in Gb/sec instead of MB/sec\n"
	    "      --out_json         one JSON line per result after the table\n"
	    "      --poll MODE        busy, block or hybrid (default busy)\n"
	    "      --passive          the server of read/atomic/write tests does not call\n"
	    "                         progress while serving (the device alone answers)\n"
	    "  -q, --quiet            no progress meter (-D shows one on a "
	    "terminal)\n" RDMX_CLI_HELP_COMMON RDMX_CLI_HELP_PLAIN_NOTE
	    "Latency: half round trip for send_lat and write_lat, whole operation for\n"
	    "read_lat and atomic_lat (perftest's convention).\n"
	    "Exit status: 0 done; 1 failure; 2 usage error.\n");
}

static const struct perf_test *find_test(const char *name)
{
	for (size_t i = 0; i < perf_engine_tests_count; i++)
		if (strcmp(perf_engine_tests[i].name, name) == 0)
			return &perf_engine_tests[i];
#ifdef RDMX_PERF_HAVE_RPC
	for (size_t i = 0; i < perf_rpc_tests_count; i++)
		if (strcmp(perf_rpc_tests[i].name, name) == 0)
			return &perf_rpc_tests[i];
#endif
	return NULL;
}

static bool is_lat(const char *test)
{
	size_t n = strlen(test);

	return n > 4 && strcmp(test + n - 4, "_lat") == 0;
}

enum { P_POLL = RDMX_CLI_OPT_VERSION + 1, P_PASSIVE, P_GBITS, P_JSON };

static const struct option longopts[] = {
    RDMX_CLI_LONGOPTS_STD,
    {"size", required_argument, NULL, 's'},
    {"iters", required_argument, NULL, 'n'},
    {"all", no_argument, NULL, 'a'},
    {"duration", required_argument, NULL, 'D'},
    {"quiet", no_argument, NULL, 'q'},
    {"port", required_argument, NULL, 'p'},
    {"ib-dev", required_argument, NULL, 'd'},
    {"gid-index", required_argument, NULL, 'x'},
    {"mtu", required_argument, NULL, 'm'},
    {"tx-depth", required_argument, NULL, 't'},
    {"CPU-freq", no_argument, NULL, 'F'},
    {"report_gbits", no_argument, NULL, P_GBITS},
    {"out_json", no_argument, NULL, P_JSON},
    {"poll", required_argument, NULL, P_POLL},
    {"passive", no_argument, NULL, P_PASSIVE},
    {"inline_size", required_argument, NULL, 'I'},
    {NULL, 0, NULL, 0},
};

int main(int argc, char **argv)
{
	struct perf_opts o = {.size = 0,
	                      .iters = 0,
	                      .port = 18515,
	                      .inflight = 64,
	                      .poll = RDMX_POLL_BUSY,
	                      .gid_index = -1};
	uint64_t v;
	long l;
	bool all = false;
	int c, rc = 0;

	while ((c = rdmx_cli_getopt("rdmx-perf", argc, argv, "hs:n:aD:p:d:x:m:I:t:Fq", longopts,
	                            true)) != -1) {
		if (rdmx_cli_std_opt("rdmx-perf", c, usage))
			return 0;
		switch (c) {
		case 's':
			if (rdmx_cli_parse_size("rdmx-perf", "--size", optarg, 1, 1ull << 30,
			                        &o.size))
				return 2;
			break;
		case 'n':
			if (rdmx_cli_parse_size("rdmx-perf", "--iters", optarg, 1, 1ull << 32,
			                        &o.iters))
				return 2;
			break;
		case 'a':
			all = true;
			break;
		case 'D':
			if (rdmx_cli_parse_long("rdmx-perf", "--duration", optarg, 1, 65535, &l))
				return 2;
			o.duration = (uint32_t)l;
			break;
		case 'q':
			o.quiet = true;
			break;
		case 'p':
			if (rdmx_cli_parse_long("rdmx-perf", "--port", optarg, 1, 65535, &l))
				return 2;
			o.port = (uint16_t)l;
			break;
		case 'd':
			o.device = optarg;
			break;
		case 'x':
			if (rdmx_cli_parse_long("rdmx-perf", "--gid-index", optarg, 0, 65535, &l))
				return 2;
			o.gid_index = (int)l;
			break;
		case 'm':
			if (rdmx_cli_parse_long("rdmx-perf", "--mtu", optarg, 256, 4096, &l) ||
			    (l & (l - 1))) {
				if (l & (l - 1))
					rdmx_cli_bad_value("rdmx-perf", "--mtu", optarg);
				return 2;
			}
			o.mtu = (uint32_t)l;
			break;
		case 'I':
			if (rdmx_cli_parse_size("rdmx-perf", "--inline_size", optarg, 0, 65536, &v))
				return 2;
			o.inline_size = (uint32_t)v;
			break;
		case 't':
			if (rdmx_cli_parse_size("rdmx-perf", "--tx-depth", optarg, 1, 4096, &v))
				return 2;
			o.inflight = (uint32_t)v;
			break;
		case 'F':
			break;
		case P_GBITS:
			o.report_gbits = true;
			break;
		case P_JSON:
			o.out_json = true;
			break;
		case P_POLL:
			if (strcmp(optarg, "busy") == 0)
				o.poll = RDMX_POLL_BUSY;
			else if (strcmp(optarg, "block") == 0)
				o.poll = RDMX_POLL_BLOCK;
			else if (strcmp(optarg, "hybrid") == 0)
				o.poll = RDMX_POLL_HYBRID;
			else
				return rdmx_cli_bad_value("rdmx-perf", "--poll", optarg);
			break;
		case P_PASSIVE:
			o.passive = true;
			break;
		default:
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "rdmx-perf: which test? (rdmx-perf --help lists them)\n");
		return 2;
	}
	o.test = argv[optind++];
	if (optind < argc)
		o.server = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "rdmx-perf: unexpected operand '%s'\n", argv[optind]);
		return 2;
	}
	const struct perf_test *t = find_test(o.test);
	if (!t) {
		fprintf(stderr, "rdmx-perf: unknown test '%s'\n", o.test);
		return 2;
	}
	if (o.duration && is_lat(o.test)) {
		fprintf(stderr,
		        "rdmx-perf: -D is for the bandwidth tests (%s counts -n iterations)\n",
		        o.test);
		return 2;
	}
	rdmx_cli_warn_plain("rdmx-perf");
	if (!o.size)
		o.size = is_lat(o.test) ? 2 : 65536;
	if (!o.iters)
		o.iters = is_lat(o.test) ? 1000 : 5000;
	if (!all)
		return t->run(&o);
	for (uint64_t size = 2; rc == 0 && size <= PERF_ALL_MAX; size *= 2) {
		o.size = size;
		rc = t->run(&o);
	}
	return rc;
}
