/* What the one-machine engine examples (bulk_read, sync_event) share: their
 * command line (-h/--help, -d DEVICE), the plain-flow warning, and two
 * processes joined by a socketpair. Across machines use rdmx's mutual-TLS
 * bootstrap instead of the socketpair: connection details grant access to
 * memory. */
#ifndef RDMX_EXAMPLES_TWO_PROCS_H
#define RDMX_EXAMPLES_TWO_PROCS_H

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Parses `prog [-d DEVICE]` into *device (NULL: $RDMX_DEVICE or the first
 * device), then runs `owner` in a child process and `peer` in this one, each
 * with its end of a socketpair. Returns main's exit status: 0 when both
 * returned 0 (after --help too), else 1. */
static inline int example_two_procs(int argc, char **argv, const char *prog, const char **device,
                                    int (*owner)(int fd), int (*peer)(int fd))
{
	int sv[2], status;

	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf(
		    "usage: %s [-d DEVICE]\n"
		    "The plain cm flow it uses (no TLS) is unauthenticated and unencrypted: use\n"
		    "it only on a trusted network.\n",
		    prog);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "-d") == 0)
		*device = argv[2];
	fprintf(stderr,
	        "%s: warning: the plain cm flow is unauthenticated and unencrypted; "
	        "use it only on a trusted network\n",
	        prog);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	pid_t child = fork();
	if (child == 0) {
		int rc_child = owner(sv[1]);
		fflush(stdout);
		_exit(rc_child);
	}
	int rc = peer(sv[0]);
	waitpid(child, &status, 0);
	return rc || !WIFEXITED(status) || WEXITSTATUS(status);
}

#endif
