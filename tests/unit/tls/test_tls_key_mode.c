/* Private key file modes: a key that group or others can read is refused
 * with RDMX_E_INSECURE_KEY and a log line naming the file and its mode,
 * unless the config allows it explicitly; 0600 (and 0400) load. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <sys/stat.h>

#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "test_assert.h"
#include "tls_test_pki.h"
#include "tls_test_suite.h"

static struct tls_test_pki pki;

TLS_TEST_SUITE(tls_key_mode, pki, 60);

static const char *server_key(mode_t mode)
{
	const char *key = tls_test_pki_path(&pki, "server", ".key");

	cr_assert_eq(chmod(key, mode), 0, "chmod %s", key);
	return key;
}

/* A config with the server's files and `allow`; returns the load status. */
static int load_with(bool set_allow, bool allow)
{
	struct rdmx_tls_config *cfg = tls_test_config(&pki, "server", "*.test", 0);
	int rc;

	cr_assert_not_null(cfg);
	if (set_allow)
		cr_assert_rc(rdmx_tls_config_set_allow_insecure_key(cfg, allow), RDMX_OK);
	rc = rdmx_tls_config_load(cfg);
	rdmx_tls_config_destroy(&cfg);
	return rc;
}

static void expect_refused(mode_t mode)
{
	const char *key = server_key(mode);
	char want[64];

	tls_test_log_clear();
	cr_assert_rc(load_with(false, false), RDMX_E_INSECURE_KEY);
	cr_assert(tls_test_log_contains(key), "the log does not name %s", key);
	snprintf(want, sizeof(want), "(mode %04o)", (unsigned)mode);
	cr_assert(tls_test_log_contains(want), "the log does not say %s", want);
	cr_assert(tls_test_log_contains("readable by group or others"));
}

Test(tls_key_mode, mode_0600_loads)
{
	server_key(0600);
	cr_assert_rc(load_with(false, false), RDMX_OK);
	server_key(0400);
	cr_assert_rc(load_with(false, false), RDMX_OK);
}

Test(tls_key_mode, mode_0644_refused)
{
	expect_refused(0644);
}

Test(tls_key_mode, mode_0640_refused)
{
	expect_refused(0640);
}

Test(tls_key_mode, others_only_refused)
{
	expect_refused(0604);
}

Test(tls_key_mode, allow_overrides_and_is_logged)
{
	const char *key = server_key(0644);

	tls_test_log_clear();
	cr_assert_rc(load_with(true, true), RDMX_OK);
	cr_assert(tls_test_log_contains(key));
	cr_assert(tls_test_log_contains("accepted as asked"));
	/* false again is the default: refused */
	cr_assert_rc(load_with(true, false), RDMX_E_INSECURE_KEY);
}

Test(tls_key_mode, refusal_is_sticky_and_setter_checks_state)
{
	struct rdmx_tls_config *cfg = tls_test_config(&pki, "server", "*.test", 0);

	server_key(0644);
	cr_assert_not_null(cfg);
	cr_assert_rc(rdmx_tls_config_load(cfg), RDMX_E_INSECURE_KEY);
	cr_assert_rc(rdmx_tls_config_load(cfg), RDMX_E_INSECURE_KEY);
	cr_assert_rc(rdmx_tls_config_set_allow_insecure_key(cfg, true), RDMX_E_BAD_STATE);
	rdmx_tls_config_destroy(&cfg);
	cr_assert_rc(rdmx_tls_config_set_allow_insecure_key(NULL, true), RDMX_E_INVAL);
}

Test(tls_key_mode, missing_key_named)
{
	struct rdmx_tls_config *cfg = NULL;

	cr_assert_rc(rdmx_tls_config_create(&cfg), RDMX_OK);
	cr_assert_rc(rdmx_tls_config_set_ca_file(cfg, tls_test_pki_path(&pki, "ca", ".crt")),
	             RDMX_OK);
	cr_assert_rc(rdmx_tls_config_set_cert_key(cfg, tls_test_pki_path(&pki, "server", ".crt"),
	                                          "/nonexistent/server.key"),
	             RDMX_OK);
	cr_assert_rc(rdmx_tls_config_add_allowed_peer(cfg, "*"), RDMX_OK);
	tls_test_log_clear();
	cr_assert_rc(rdmx_tls_config_load(cfg), RDMX_E_INVAL);
	cr_assert(tls_test_log_contains("/nonexistent/server.key"));
	rdmx_tls_config_destroy(&cfg);
}
