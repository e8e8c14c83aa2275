/* Leak baseline: open fds and threads of the process, on tcp only (verbs
 * libraries keep process-wide fds open by design). Call leak_begin first
 * thing and leak_end after everything is closed: a Criterion assertion
 * fails when a count differs. */
#ifndef RDMX_TEST_LEAK_H
#define RDMX_TEST_LEAK_H

void leak_begin(void);
void leak_end(void);

#endif
