/* Registry addresses (rdmx_registry_client_open): the forms that pick a
 * backend, the ones refused, and an etcd address whose members are all gone
 * answering within the timeout, never hanging. No etcd needed. */
#include <stdlib.h>
#include <time.h>

#include <criterion/criterion.h>

#include <rdmx/registry.h>
#include <rdmx/status.h>

#include "common/clock.h"

static long long now_ms(void)
{
	return (long long)rdmx__now_ms();
}

Test(registry_url, refused_forms)
{
	static const char *const bad[] = {
	    "",
	    "nohost",
	    "host:",
	    "host:0",
	    "host:65536",
	    "host:12x",
	    ":80",
	    "http://host:80",
	    "rdmx://a:1,b:2",
	    "rdmx://a:1/prefix",
	    "etcd://",
	    "etcd://a:1,",
	    "etcd://,a:1",
	    "etcd://a:1,b",
	    "etcd://::1:2379",
	    "etcd://[::1]2379",
	    "etcd://a:1/bad prefix",
	    "etcd://a:1//x",
	    "etcd://a:1,a:2,a:3,a:4,a:5,a:6,a:7,a:8,a:9,a:10,a:11,a:12,a:13,a:14,a:15,a:16,a:17",
	    "etcd://@a:1",
	    "etcd://us er@a:1",
	    "rdmx://user@a:1",
	};
	struct rdmx_registry_client *c = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(rdmx_registry_client_open(bad[i], NULL, 100, &c), RDMX_E_INVAL, "'%s'",
		             bad[i]);
		cr_expect_null(c, "'%s'", bad[i]);
	}
	cr_expect_eq(rdmx_registry_client_open(NULL, NULL, 100, &c), RDMX_E_INVAL);
	cr_expect_eq(rdmx_registry_client_open("etcd://a:1", NULL, -1, &c), RDMX_E_INVAL);
}

Test(registry_url, etcd_forms_open_without_connecting)
{
	static const char *const good[] = {
	    "etcd://127.0.0.1:1",
	    "etcd://127.0.0.1:1,127.0.0.1:2,localhost:3",
	    "etcd://[::1]:2379",
	    "etcd://127.0.0.1:1/",
	    "etcd://127.0.0.1:1/team-a/registry",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct rdmx_registry_client *c = NULL;
		int fd;

		cr_assert_eq(rdmx_registry_client_open(good[i], NULL, 100, &c), RDMX_OK, "'%s'",
		             good[i]);
		cr_expect_eq(rdmx_registry_client_get_fd(c, &fd), RDMX_E_NOT_SUPPORTED);
		cr_expect_eq(rdmx_registry_client_destroy(&c), RDMX_OK);
		cr_expect_null(c);
	}
}

/* Every listed member refuses: each call fails within the timeout. */
Test(registry_url, etcd_all_members_gone_is_bounded)
{
	struct rdmx_registry_client *c = NULL;
	struct rdmx_registry_members *ms = NULL;
	struct rdmx_registry_event *ev = NULL;
	uint64_t id = 0;
	long long t0;
	int ret;

	cr_assert_eq(rdmx_registry_client_open("etcd://127.0.0.1:1,127.0.0.1:2", NULL, 400, &c),
	             RDMX_OK);
	t0 = now_ms();
	ret = rdmx_registry_client_lookup(c, "kv", &ms);
	cr_expect_lt(ret, 0);
	cr_expect_null(ms);
	ret = rdmx_registry_client_join(c, "kv", "127.0.0.1:5", NULL, 0, 2000, &id, NULL);
	cr_expect_lt(ret, 0);
	cr_expect_eq(id, 0u);
	cr_expect_lt(rdmx_registry_client_heartbeat(c, 42), 0);
	cr_expect_lt(rdmx_registry_client_watch(c, "kv"), 0);
	cr_expect_eq(rdmx_registry_client_next_event(c, 10, &ev), RDMX_E_BAD_STATE);
	cr_expect_lt(now_ms() - t0, 4 * 1000, "took %lld ms", now_ms() - t0);
	cr_expect_neq(*rdmx_registry_client_last_error(c), '\0');
	rdmx_registry_client_destroy(&c);
}

/* etcd://USER@...: the password only from the environment */
Test(registry_url, etcd_user_needs_its_password)
{
	struct rdmx_registry_client *c = NULL;

	unsetenv("RDMX_ETCD_PASSWORD");
	cr_expect_eq(rdmx_registry_client_open("etcd://kv1@127.0.0.1:1", NULL, 100, &c),
	             RDMX_E_INVAL);
	cr_expect_null(c);
	setenv("RDMX_ETCD_PASSWORD", "secret", 1);
	cr_assert_eq(
	    rdmx_registry_client_open("etcd://kv1@127.0.0.1:1,127.0.0.1:2/p", NULL, 100, &c),
	    RDMX_OK);
	rdmx_registry_client_destroy(&c);
	unsetenv("RDMX_ETCD_PASSWORD");
}

Test(registry_url, keeper_takes_a_url)
{
	struct rdmx_registry_keeper_opts o;
	struct rdmx_registry_keeper *k = NULL;
	struct rdmx_tls_config *cfg = NULL;

	cr_assert_eq(rdmx_tls_config_create(&cfg), RDMX_OK);
	rdmx_registry_keeper_opts_init(&o);
	o.url = "not a registry";
	o.cfg = cfg;
	o.service = "kv";
	o.endpoint = "127.0.0.1:5";
	o.timeout_ms = 200;
	cr_expect_eq(rdmx_registry_keeper_start(&o, &k), RDMX_E_INVAL);
	o.url = "";
	cr_expect_eq(rdmx_registry_keeper_start(&o, &k), RDMX_E_INVAL);
	cr_expect_null(k);
	rdmx_tls_config_destroy(&cfg);
}
