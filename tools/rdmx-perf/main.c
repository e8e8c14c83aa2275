/* rdmx-perf: perftest-style benchmarks.
 *   rdmx-perf TEST [-d DEVICE] [-s SIZE] [-n ITERS] [-p PORT] [-t INFLIGHT]
 *             [--poll busy|block|hybrid] [SERVER_ADDR]
 * Without SERVER_ADDR it is the server; with it, the client, which prints
 * perftest's columns and a last line
 *   RESULT test=... size=... p50_us=... p99_us=... mib_s=... ops_per_s=... */
#include "perf.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: rdmx-perf TEST [-d DEVICE] [-s SIZE] [-n ITERS] [-p PORT] [-t INFLIGHT]\n"
		   "                 [--poll busy|block|hybrid] [--passive] [SERVER_ADDR]\n"
		   "TEST: send_lat write_lat read_lat atomic_lat send_bw write_bw read_bw");
#ifdef RDMX_PERF_HAVE_RPC
	fprintf(f, " rpc_lat rpc_bw");
#endif
	fprintf(f, "\nWithout SERVER_ADDR: server. Latency: half round trip for send_lat and\n"
		   "write_lat, whole operation for read_lat and atomic_lat (perftest's convention).\n"
		   "--passive: the server of read/atomic/write tests does not call progress while\n"
		   "serving (the device alone must answer, as a NIC does).\n");
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

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	if (*s == '\0' || *s == '-' || *end != '\0' || v > max)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	struct perf_opts o = {.size = 64, .iters = 1000, .port = 18515, .inflight = 64,
			      .poll = RDMX_POLL_BUSY};
	static const struct option longopts[] = {
		{"poll", required_argument, NULL, 'P'},
		{"passive", no_argument, NULL, 'A'},
		{"help", no_argument, NULL, 'h'},
		{0}};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "d:s:n:p:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': o.device = optarg; break;
		case 's':
			if (parse_u64(optarg, 1ull << 30, &o.size)) goto bad;
			break;
		case 'n':
			if (parse_u64(optarg, 1ull << 32, &o.iters) || o.iters == 0) goto bad;
			break;
		case 'p':
			if (parse_u64(optarg, 65535, &v) || v == 0) goto bad;
			o.port = (uint16_t)v;
			break;
		case 't':
			if (parse_u64(optarg, 4096, &v) || v == 0) goto bad;
			o.inflight = (uint32_t)v;
			break;
		case 'P':
			if (strcmp(optarg, "busy") == 0) o.poll = RDMX_POLL_BUSY;
			else if (strcmp(optarg, "block") == 0) o.poll = RDMX_POLL_BLOCK;
			else if (strcmp(optarg, "hybrid") == 0) o.poll = RDMX_POLL_HYBRID;
			else goto bad;
			break;
		case 'A': o.passive = true; break;
		case 'h': usage(stdout); return 0;
		default: goto bad;
		}
	}
	if (optind >= argc)
		goto bad;
	o.test = argv[optind++];
	if (optind < argc)
		o.server = argv[optind++];
	if (optind < argc)
		goto bad;
	const struct perf_test *t = find_test(o.test);
	if (!t) {
		fprintf(stderr, "rdmx-perf: unknown test '%s'\n", o.test);
		usage(stderr);
		return 2;
	}
	return t->run(&o);
bad:
	fprintf(stderr, "rdmx-perf: bad arguments\n");
	usage(stderr);
	return 2;
}
