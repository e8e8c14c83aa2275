/* Drives the progress meter (tools/common/progress.h) over 64 MiB of
 * pretend work: progress.sh runs it with stderr on a file and on a terminal.
 *   progress_probe [--quiet] */
#include <string.h>

#include "progress.h"

int main(int argc, char **argv)
{
	bool quiet = argc > 1 && strcmp(argv[1], "--quiet") == 0;
	struct rdmx_progress p;
	uint64_t total = 64u << 20;

	rdmx_progress_init(&p, "probe", total, quiet);
	for (uint64_t done = 0; done < total; done += 1u << 20)
		rdmx_progress_update(&p, done);
	rdmx_progress_finish(&p, total);
	rdmx_progress_init_timed(&p, "timed", 1000000000u, quiet);
	rdmx_progress_update(&p, 4096);
	rdmx_progress_finish(&p, 8192);
	return 0;
}
