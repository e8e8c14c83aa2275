/* What the secure suites share around the test PKI: a Criterion suite whose
 * every test gets a fresh PKI and the log capture, and the millisecond clock
 * of their guards. */
#ifndef RDMX_TLS_TEST_SUITE_H
#define RDMX_TLS_TEST_SUITE_H

#include <stdint.h>

#include <criterion/criterion.h>

#include <rdmx/pe.h>

#include "tls_test_pki.h"

/* The engine's monotonic clock in milliseconds, signed for deadline arithmetic. */
static inline int64_t tls_test_now_ms(void)
{
	return (int64_t)(rdmx_pe_now_ns() / 1000000u);
}

/* TestSuite(suite, .timeout = timeout_s) whose .init makes the PKI in `pki`
 * (a struct tls_test_pki) and captures the log, and whose .fini removes it. */
#define TLS_TEST_SUITE(suite, pki, timeout_s)                                                      \
	static void suite##_pki_init(void)                                                         \
	{                                                                                          \
		cr_assert_eq(tls_test_pki_create(&(pki)), 0);                                      \
		tls_test_log_capture();                                                            \
	}                                                                                          \
	static void suite##_pki_fini(void)                                                         \
	{                                                                                          \
		tls_test_pki_destroy(&(pki));                                                      \
	}                                                                                          \
	TestSuite(suite, .init = suite##_pki_init, .fini = suite##_pki_fini, .timeout = (timeout_s))

#endif
