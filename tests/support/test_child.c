/* Child processes that die with the test (see test_child.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_child.h"

#define MAX_CHILDREN 64

static pid_t children[MAX_CHILDREN];
static int registered;

static void forget(pid_t pid)
{
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (children[i] == pid)
			children[i] = 0;
}

static int remember(pid_t pid)
{
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (!children[i]) {
			children[i] = pid;
			return 0;
		}
	return -1;
}

void test_child_kill_all(void)
{
	for (int i = 0; i < MAX_CHILDREN; i++) {
		pid_t pid = children[i];

		if (pid > 0) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			children[i] = 0;
		}
	}
}

int test_child_start(char *const argv[], int stdout_fd, pid_t *out)
{
	pid_t parent = getpid(), pid;

	if (!registered) {
		atexit(test_child_kill_all);
		registered = 1;
	}
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent) /* the test died before prctl */
			_exit(127);
		if (stdout_fd >= 0 && stdout_fd != STDOUT_FILENO) {
			dup2(stdout_fd, STDOUT_FILENO);
			close(stdout_fd);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	setpgid(pid, pid); /* both sides: no race with a signal to the group */
	if (remember(pid)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -EMFILE;
	}
	*out = pid;
	return 0;
}

int test_child_signal(pid_t pid, int sig)
{
	if (pid <= 0)
		return -EINVAL;
	return kill(-pid, sig) == 0 ? 0 : -errno;
}

int test_child_stop(pid_t *pidp, int grace_ms)
{
	struct timespec tick = {0, 10 * 1000000};
	pid_t pid = pidp ? *pidp : 0;
	int status = -1;

	if (pid <= 0)
		return -1;
	kill(-pid, SIGCONT); /* a stopped child cannot act on SIGTERM */
	kill(pid, SIGTERM);
	for (int waited = 0; waited < grace_ms; waited += 10) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			goto reaped;
		nanosleep(&tick, NULL);
	}
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
reaped:
	kill(-pid, SIGKILL); /* whatever it left in its group */
	forget(pid);
	*pidp = 0;
	return status;
}
