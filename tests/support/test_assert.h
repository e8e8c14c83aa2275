/* Criterion assertions on rdmx status codes that name the expression and
 * the status (rdmx_err_name), shared by the batteries and suites. */
#ifndef RDMX_TEST_ASSERT_H
#define RDMX_TEST_ASSERT_H

#include <criterion/criterion.h>

#include <rdmx/status.h>

#define ASSERT_OK(expr)                                                                            \
	do {                                                                                       \
		int _rc = (expr);                                                                  \
		cr_assert_eq(_rc, 0, "%s -> %s (%d)", #expr, rdmx_err_name(_rc), _rc);             \
	} while (0)

#define ASSERT_RC(expr, want)                                                                      \
	do {                                                                                       \
		int _rc = (expr);                                                                  \
		int _want = (want);                                                                \
		cr_assert_eq(_rc, _want, "%s -> %s (%d), expected %s", #expr, rdmx_err_name(_rc),  \
		             _rc, rdmx_err_name(_want));                                           \
	} while (0)

/* One of two codes (where the contract lets the check happen at alloc or at
 * submit, for instance). */
#define ASSERT_RC2(expr, w1, w2)                                                                   \
	do {                                                                                       \
		int _rc = (expr);                                                                  \
		cr_assert(_rc == (w1) || _rc == (w2), "%s -> %s (%d), expected %s or %s", #expr,   \
		          rdmx_err_name(_rc), _rc, rdmx_err_name(w1), rdmx_err_name(w2));          \
	} while (0)

/* The same, in the words of the TLS and secure suites. */
#define cr_assert_rc(expr, want)                                                                   \
	do {                                                                                       \
		int rc_ = (expr);                                                                  \
		cr_assert_eq(rc_, (want), "%s = %s (%d), want %s", #expr, rdmx_err_name(rc_), rc_, \
		             rdmx_err_name(want));                                                 \
	} while (0)

/* Runs `step` until cond holds, failing the test after the battery's
 * failure guard (its GUARD_MS and now_ms()) with the condition's text: the
 * loop under each battery's DRIVE_UNTIL. */
#define TEST_DRIVE_UNTIL(cond, step)                                                               \
	do {                                                                                       \
		uint64_t _deadline = now_ms() + GUARD_MS;                                          \
		while (!(cond)) {                                                                  \
			cr_assert(now_ms() < _deadline,                                            \
			          "timed out (failure guard %d ms) waiting for: %s", GUARD_MS,     \
			          #cond);                                                          \
			step;                                                                      \
		}                                                                                  \
	} while (0)

#endif
