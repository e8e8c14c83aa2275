/* Readiness under systemd (Type=notify): each service is started with
 * NOTIFY_SOCKET naming a unix datagram socket the test owns; READY=1 must
 * arrive, after the "listening" line (the service accepts clients by then),
 * and STOPPING=1 after SIGTERM, then a clean exit. Every wait is a blocking
 * read bounded by a generous receive timeout. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tls_test_pki.h"

#define WAIT_S 120 /* upper bound of one blocking read, never reached when all is well */

static struct tls_test_pki pki;
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static int sock = -1;
static pid_t child = -1;
static int child_out = -1; /* read end of the child's stdout */

static void setup(void)
{
	struct sockaddr_un sa;
	struct timeval tv = {WAIT_S, 0};

	cr_assert_eq(tls_test_pki_create(&pki), 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	cr_assert_lt(strlen(pki.dir) + sizeof("/notify.sock"), sizeof(sock_path));
	memcpy(sock_path, pki.dir, strlen(pki.dir));
	memcpy(sock_path + strlen(pki.dir), "/notify.sock", sizeof("/notify.sock"));
	memcpy(sa.sun_path, sock_path, sizeof(sock_path));
	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(sock, 0);
	cr_assert_eq(bind(sock, (struct sockaddr *)&sa, sizeof(sa)), 0, "bind: %s",
	             strerror(errno));
	cr_assert_eq(setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
}

static void teardown(void)
{
	if (child > 0) {
		kill(-child, SIGKILL);
		waitpid(child, NULL, 0);
		child = -1;
	}
	if (child_out >= 0)
		close(child_out);
	child_out = -1;
	if (sock >= 0)
		close(sock);
	sock = -1;
	unlink(sock_path);
	tls_test_pki_destroy(&pki);
}

/* argv[0] is the program; its own process group, killed with the test */
static void start(char *const argv[])
{
	int out[2];
	pid_t parent = getpid();

	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		dup2(out[1], STDOUT_FILENO);
		setenv("NOTIFY_SOCKET", sock_path, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	setpgid(child, child);
	close(out[1]);
	child_out = out[0];
}

/* blocks for the next datagram that contains `want` as one of its lines */
static void expect_state(const char *want)
{
	char buf[4096];

	for (;;) {
		ssize_t n = recv(sock, buf, sizeof(buf) - 1, 0);
		char *line, *save = NULL;

		cr_assert_gt(n, 0, "no %s within %d s (recv: %s)", want, WAIT_S,
		             n < 0 ? strerror(errno) : "empty datagram");
		buf[n] = '\0';
		for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			if (strcmp(line, want) == 0)
				return;
	}
}

/* the child's stdout so far, without blocking: READY=1 comes after its
 * "listening" line was flushed, so the line is in the pipe already */
static void expect_stdout_has(const char *needle)
{
	char buf[4096];
	ssize_t n;

	cr_assert_eq(fcntl(child_out, F_SETFL, O_NONBLOCK), 0);
	n = read(child_out, buf, sizeof(buf) - 1);
	cr_assert_gt(n, 0, "nothing on stdout before READY=1");
	buf[n] = '\0';
	cr_assert(strstr(buf, needle), "stdout before READY=1: '%s', no '%s'", buf, needle);
}

static void stop_and_expect_clean_exit(void)
{
	int status;

	cr_assert_eq(kill(child, SIGTERM), 0);
	expect_state("STOPPING=1");
	cr_assert_eq(waitpid(child, &status, 0), child);
	child = -1;
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exit status 0x%x", status);
}

TestSuite(service_notify, .init = setup, .fini = teardown);

Test(service_notify, bootstrapd_ready_then_stopping)
{
	char *argv[] = {RDMX_BOOTSTRAPD_PATH,
	                "--listen",
	                "127.0.0.1:0",
	                "--ca",
	                (char *)tls_test_pki_path(&pki, "ca", ".crt"),
	                "--cert",
	                (char *)tls_test_pki_path(&pki, "server", ".crt"),
	                "--key",
	                (char *)tls_test_pki_path(&pki, "server", ".key"),
	                NULL};

	start(argv);
	expect_state("READY=1");
	expect_stdout_has("listening 127.0.0.1 ");
	stop_and_expect_clean_exit();
}

Test(service_notify, kv_serve_ready_then_stopping)
{
	char *argv[] = {RDMX_KV_PATH, "serve",
	                "--listen",   "127.0.0.1:0",
	                "--ca",       (char *)tls_test_pki_path(&pki, "ca", ".crt"),
	                "--cert",     (char *)tls_test_pki_path(&pki, "server", ".crt"),
	                "--key",      (char *)tls_test_pki_path(&pki, "server", ".key"),
	                NULL};

	start(argv);
	expect_state("READY=1");
	expect_stdout_has("listening 127.0.0.1 ");
	stop_and_expect_clean_exit();
}
