/* The child fixture itself: a child dies with the test process that started
 * it on every exit path (a crash, an abrupt exit, a stop), group and all. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <criterion/criterion.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_child.h"

static char *sleeper[] = {"/bin/sleep", "600", NULL};

/* Runs `how` in a stand-in for a test process that starts a child; returns
 * the child's pid. We are the subreaper: the orphan comes back to us. */
static pid_t orphan_after(void (*how)(void))
{
	int p[2];
	pid_t test, child = 0;

	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	cr_assert_eq(pipe(p), 0);
	test = fork();
	cr_assert_geq(test, 0);
	if (test == 0) {
		pid_t c;

		close(p[0]);
		if (test_child_start(sleeper, -1, &c))
			_exit(3);
		if (write(p[1], &c, sizeof(c)) != (ssize_t)sizeof(c))
			_exit(4);
		how();
		_exit(0);
	}
	close(p[1]);
	cr_assert_eq(read(p[0], &child, sizeof(child)), (ssize_t)sizeof(child));
	close(p[0]);
	cr_assert_eq(waitpid(test, NULL, 0), test);
	return child;
}

/* 1 when `pid` (reparented to us) ended with the test: SIGKILL, or exit
 * 127 when the test died before the child had set PDEATHSIG (it checks its
 * parent after prctl and gives up). */
static int killed(pid_t pid)
{
	int status = 0;

	/* blocking: PDEATHSIG is sent as the test process dies */
	pid_t r = waitpid(pid, &status, 0);

	cr_assert_eq(r, pid, "waitpid(%d): %s", (int)pid, strerror(errno));
	return (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
	       (WIFEXITED(status) && WEXITSTATUS(status) == 127);
}

static void crash(void)
{
	signal(SIGABRT, SIG_DFL);
	abort();
}

static void quick_exit_path(void)
{
	_exit(1); /* no atexit handlers: only PDEATHSIG is left */
}

static void normal_exit(void)
{
	exit(1); /* the atexit handler kills and reaps */
}

Test(test_child, dies_when_the_test_crashes)
{
	cr_assert(killed(orphan_after(crash)));
}

Test(test_child, dies_when_the_test_exits_without_cleanup)
{
	cr_assert(killed(orphan_after(quick_exit_path)));
}

Test(test_child, reaped_at_exit)
{
	pid_t child = orphan_after(normal_exit);

	/* reaped by the test process itself: no longer there for us */
	cr_assert_eq(waitpid(child, NULL, WNOHANG), -1);
	cr_assert_eq(errno, ECHILD);
}

Test(test_child, stop_takes_a_stopped_child_and_its_group)
{
	pid_t child;
	int status;

	cr_assert_eq(test_child_start(sleeper, -1, &child), 0);
	cr_assert_eq(test_child_signal(child, SIGSTOP), 0);
	status = test_child_stop(&child, 2000);
	cr_assert_eq(child, 0);
	cr_assert(WIFSIGNALED(status), "status %d", status);
	cr_assert_eq(test_child_stop(&child, 10), -1);
}
