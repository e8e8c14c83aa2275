#include "test_leak.h"

#include <dirent.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "test_env.h"

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int leak_fds = -1, leak_threads = -1;
static bool leak_tcp;

void leak_begin(void)
{
	leak_tcp = strcmp(env_device(0), "tcp") == 0 && strcmp(env_device(1), "tcp") == 0;
	leak_fds = count_dir("/proc/self/fd");
	leak_threads = count_dir("/proc/self/task");
}

void leak_end(void)
{
	int fds, threads;

	if (!leak_tcp || leak_fds < 0)
		return;
	fds = count_dir("/proc/self/fd");
	threads = count_dir("/proc/self/task");
	/* The soft NIC thread is joined by rdmx_dev_close; its /proc entry may
	 * linger for a moment after the join returns on some kernels. */
	for (int i = 0; i < 200 && threads != leak_threads; i++) {
		usleep(1000);
		threads = count_dir("/proc/self/task");
	}
	cr_assert_eq(fds, leak_fds, "file descriptors leaked: %d before, %d after", leak_fds, fds);
	cr_assert_eq(threads, leak_threads, "threads leaked: %d before, %d after", leak_threads,
	             threads);
}
