/* Child processes of tests that die with the test, on every exit path.
 *
 * A child started here runs in a process group of its own (so that what it
 * starts goes with it), has PR_SET_PDEATHSIG(SIGKILL) (so that a test that
 * crashes, fails an assertion or is killed by ctest takes it along), and is
 * recorded: an atexit handler kills (SIGKILL to the group) and reaps every
 * child still recorded. test_child_stop asks it to end with SIGTERM, waits a
 * bounded time, then kills the group and reaps. Not thread-safe: start and
 * stop children from one thread (the one whose death kills them). */
#ifndef RDMX_TEST_CHILD_H
#define RDMX_TEST_CHILD_H

#include <sys/types.h>

/* Starts argv[0] (a path) with argv; its stdout goes to stdout_fd when
 * >= 0 (the fd is not closed here). 0 and *pid, or -errno. */
int test_child_start(char *const argv[], int stdout_fd, pid_t *pid);
/* SIGTERM, up to grace_ms for it to exit, then SIGKILL of its group; reaps
 * it. *pid set to 0. Returns its wait status, -1 if it was not running. */
int test_child_stop(pid_t *pid, int grace_ms);
/* Sends sig to the child's process group (SIGSTOP/SIGCONT in fault tests). */
int test_child_signal(pid_t pid, int sig);
/* Kills and reaps every child still running (also run at exit). */
void test_child_kill_all(void);

#endif
