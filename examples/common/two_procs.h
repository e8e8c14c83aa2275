/* What the one-machine engine examples (bulk_read, sync_event) share: their
 * command line (-h/--help, -d DEVICE), the warning that their connection is
 * made without TLS, and two processes joined by a socketpair. Across
 * machines use rdmx's mutual-TLS bootstrap instead of the socketpair:
 * connection details grant access to memory. */
#ifndef RDMX_EXAMPLES_TWO_PROCS_H
#define RDMX_EXAMPLES_TWO_PROCS_H

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXAMPLE_TWO_PROCS_USAGE "usage: %s [-d DEVICE]\n"

/* -h/--help on stdout; an unknown argument, or -d without its value, is
 * named on stderr with the usage line (exit status 2). Returns -1 to go on
 * (with *device set by -d DEVICE), else main's exit status. */
static inline int example_two_procs_args(int argc, char **argv, const char *prog,
                                         const char **device)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf(
			    EXAMPLE_TWO_PROCS_USAGE
			    "  -d DEVICE   the device (default: $RDMX_DEVICE, else the first RDMA\n"
			    "              device, else tcp)\n"
			    "  -h, --help  this text\n"
			    "Two processes of this host, a parent and its child, pass each other\n"
			    "their connection details (rdmx_ctx_export, rdmx_ctx_connect) over a\n"
			    "socketpair, without TLS. The details, which grant access to memory,\n"
			    "never leave the host, but the data connection made from them is "
			    "neither\n"
			    "encrypted nor authenticated (on tcp only its token admits it): "
			    "whoever\n"
			    "can read or inject its traffic can read or change it. Use it only on "
			    "a\n"
			    "trusted host; across machines pass the details through the "
			    "mutual-TLS\n"
			    "bootstrap (rdmx_bootstrap).\n",
			    prog);
			return 0;
		}
		if (strcmp(argv[i], "-d") == 0 && i + 1 < argc) {
			*device = argv[++i];
			continue;
		}
		if (strcmp(argv[i], "-d") == 0)
			fprintf(stderr, "%s: option '-d' needs a value\n", prog);
		else
			fprintf(stderr, "%s: unknown argument '%s'\n", prog, argv[i]);
		fprintf(stderr, EXAMPLE_TWO_PROCS_USAGE, prog);
		return 2;
	}
	return -1;
}

/* Parses `prog [-d DEVICE]` into *device (NULL: $RDMX_DEVICE or the first
 * device), then runs `owner` in a child process and `peer` in this one, each
 * with its end of a socketpair. Returns main's exit status: 0 when both
 * returned 0 (after --help too), 2 on a usage error, else 1. */
static inline int example_two_procs(int argc, char **argv, const char *prog, const char **device,
                                    int (*owner)(int fd), int (*peer)(int fd))
{
	int sv[2], status, rc = example_two_procs_args(argc, argv, prog, device);

	if (rc >= 0)
		return rc;
	fprintf(stderr,
	        "%s: warning: no TLS: the connection details go over a socketpair on this host "
	        "and the data connection is unencrypted; use it only on a trusted host\n",
	        prog);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	pid_t child = fork();
	if (child == 0) {
		int rc_child = owner(sv[1]);
		fflush(stdout);
		_exit(rc_child);
	}
	rc = peer(sv[0]);
	waitpid(child, &status, 0);
	return rc || !WIFEXITED(status) || WEXITSTATUS(status);
}

#endif
