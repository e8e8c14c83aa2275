/* rdmx-devices: lists the devices rdmx can open, with the capabilities the
 * engine reports for each (rdmx_dev_query_caps), like ibv_devinfo.
 *
 *   rdmx-devices [-d DEV] [-l] [-v]
 *
 * One block per device:
 *   hca_id: NAME
 *           provider:            verbs|tcp
 *           state:               PORT_ACTIVE | unavailable (REASON)
 *           transport:           RC[, DC]
 *           max_msg_sz:          N
 *           ...
 * -l prints the names only, one a line; -v adds every capability and the GID
 * table.
 * Exit status: 0 listed; 1 the device (-d) cannot be opened or none exists;
 * 2 usage error. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/dev.h>
#include <rdmx/status.h>

#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: rdmx-devices [-d DEV] [-l] [-v]\n"
	           "  -d, --ib-dev DEV    only this device (default: every device;\n"
	           "                      $RDMX_DEVICE when set)\n"
	           "      --device DEV    the same as --ib-dev\n"
	           "  -l, --list          names only, one a line\n"
	           "  -v, --verbose       every capability and the GID table\n" RDMX_CLI_HELP_COMMON
	           "Exit status: 0 listed; 1 a device cannot be opened or there is none;\n"
	           "2 usage error.\n");
}

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

static void print_gids(const struct rdmx_dev *dev, uint32_t n)
{
	char text[INET6_ADDRSTRLEN];
	uint8_t gid[16];

	for (uint32_t i = 0; i < n; i++) {
		if (rdmx_dev_get_gid(dev, i, gid))
			continue;
		if (!inet_ntop(AF_INET6, gid, text, sizeof(text)))
			snprintf(text, sizeof(text), "?");
		printf("\t\t\tGID[%3u]:\t\t%s\n", i, text);
	}
}

static int show(const struct rdmx_dev_info *info, bool verbose)
{
	struct rdmx_dev_caps caps;
	struct rdmx_dev *dev = NULL;
	int rc;

	printf("hca_id:\t%s\n", info->name);
	printf("\tprovider:\t\t\t%s\n", info->provider);
	rc = rdmx_dev_open(info->name, &dev);
	if (!rc)
		rc = rdmx_dev_query_caps(dev, &caps);
	if (rc) {
		printf("\tstate:\t\t\t\tunavailable (%s)\n\n", rdmx_strerror(rc));
		rdmx_dev_close(&dev);
		return 1;
	}
	printf("\tstate:\t\t\t\tPORT_ACTIVE\n");
	printf("\ttransport:\t\t\t%s%s\n", caps.transport_types & RDMX_TRANSPORT_RC ? "RC" : "",
	       caps.transport_types & RDMX_TRANSPORT_DC ? ", DC" : "");
	printf("\tmax_msg_sz:\t\t\t%" PRIu64 "\n", caps.max_message_size);
	printf("\tmax_qp_wr (send):\t\t%" PRIu32 "\n", caps.max_send_queue_size);
	printf("\tmax_srq_wr (recv):\t\t%" PRIu32 "\n", caps.max_recv_queue_size);
	printf("\tmax_sge:\t\t\t%" PRIu32 "\n", caps.max_buf_list_len);
	printf("\tmax_connections:\t\t%" PRIu32 "\n", caps.max_connections);
	printf("\tmax_inline:\t\t\t%" PRIu32 "\n", caps.max_inline);
	printf("\tatomics:\t\t\t%s\n", yes_no(caps.atomics));
	if (verbose) {
		printf("\tatomic_write_native:\t\t%s\n", yes_no(caps.atomic_write_native));
		printf("\tflush_native:\t\t\t%s\n", yes_no(caps.flush_native));
		printf("\todp:\t\t\t\t%s\n", yes_no(caps.odp));
		printf("\tgid_tbl_len:\t\t\t%" PRIu32 "\n", caps.gid_table_len);
		print_gids(dev, caps.gid_table_len);
	}
	printf("\n");
	rdmx_dev_close(&dev);
	return 0;
}

static const struct option long_options[] = {
    RDMX_CLI_LONGOPTS_STD,
    {"ib-dev", required_argument, NULL, 'd'},
    {"device", required_argument, NULL, 'd'},
    {"list", no_argument, NULL, 'l'},
    {"verbose", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0},
};

int main(int argc, char **argv)
{
	struct rdmx_dev_info *infos = NULL;
	const char *only = getenv("RDMX_DEVICE");
	bool verbose = false, list = false, found = false;
	size_t count = 0;
	int c, ret = 0;

	if (only && !*only)
		only = NULL;
	while ((c = rdmx_cli_getopt("rdmx-devices", argc, argv, "hd:lv", long_options, true)) !=
	       -1) {
		if (rdmx_cli_std_opt("rdmx-devices", c, usage))
			return 0;
		switch (c) {
		case 'd':
			only = optarg;
			break;
		case 'l':
			list = true;
			break;
		case 'v':
			verbose = true;
			break;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rdmx-devices: unexpected operand '%s'\n", argv[optind]);
		return 2;
	}
	if (rdmx_dev_list(NULL, 0, &count) || count == 0) {
		fprintf(stderr, "rdmx-devices: no device\n");
		return 1;
	}
	infos = calloc(count, sizeof(*infos));
	if (!infos || rdmx_dev_list(infos, count, &count)) {
		fprintf(stderr, "rdmx-devices: listing devices failed\n");
		free(infos);
		return 1;
	}
	for (size_t i = 0; i < count; i++) {
		if (only && strcmp(only, infos[i].name))
			continue;
		found = true;
		if (list)
			printf("%s\n", infos[i].name);
		else if (show(&infos[i], verbose))
			ret = 1;
	}
	if (only && !found) {
		fprintf(stderr, "rdmx-devices: no device '%s'\n", only);
		ret = 1;
	}
	free(infos);
	return ret;
}
