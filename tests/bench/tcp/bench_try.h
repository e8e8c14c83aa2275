/* die and TRY of the tcp benchmark programs (tcp_lat.c, poll_cost.c): a
 * failed step ends the program with its name and why. The includer defines
 * BENCH_PROG, its name in the message, before including this header. */
#ifndef RDMX_BENCH_TRY_H
#define RDMX_BENCH_TRY_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/status.h>

/* rc < 0: an rdmx status; else a failed system call, errno says why. */
static void die(const char *what, int rc)
{
	fprintf(stderr, BENCH_PROG ": %s: %s\n", what,
	        rc < 0 ? rdmx_err_name(rc) : strerror(errno));
	exit(1);
}

#define TRY(expr)                                                                                  \
	do {                                                                                       \
		int _rc = (expr);                                                                  \
		if (_rc)                                                                           \
			die(#expr, _rc);                                                           \
	} while (0)

#endif
