/* A one-line progress meter on stderr for long work (a large value, a timed
 * benchmark): bytes done, rate and time left, redrawn at most 10 times a
 * second. It draws only when stderr is a terminal and the program was not
 * told --quiet; otherwise every call is a no-op, so that logs and pipes
 * never see it. */
#ifndef RDMX_TOOLS_PROGRESS_H
#define RDMX_TOOLS_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct rdmx_progress {
	bool on, drawn;
	const char *what;
	uint64_t total_bytes; /* 0: unknown */
	uint64_t total_ns;    /* a timed run: its length; 0 for a byte count */
	uint64_t t0_ns, last_ns;
};

/* `what` (static text) names the work; total_bytes 0 when unknown. */
void rdmx_progress_init(struct rdmx_progress *p, const char *what, uint64_t total_bytes,
                        bool quiet);
/* A run of `duration_ns`: time left counts down from it. */
void rdmx_progress_init_timed(struct rdmx_progress *p, const char *what, uint64_t duration_ns,
                              bool quiet);
/* `done` bytes so far. */
void rdmx_progress_update(struct rdmx_progress *p, uint64_t done);
/* Last redraw and a newline (when anything was drawn). */
void rdmx_progress_finish(struct rdmx_progress *p, uint64_t done);
/* Whether the meter draws (stderr is a terminal, not quiet). */
bool rdmx_progress_enabled(bool quiet);

#endif
