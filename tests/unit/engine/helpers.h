/* Shared helpers of the engine unit tests. */
#ifndef RDMX_TEST_ENGINE_HELPERS_H
#define RDMX_TEST_ENGINE_HELPERS_H

#include <stdlib.h>

#include <criterion/criterion.h>

#include <rdmx/rdmx.h>

#include "mock_provider.h"

/* Prints the expression and both codes by name. */
#define assert_rc(expr, want)                                                                      \
	do {                                                                                       \
		int rc_ = (expr);                                                                  \
		int want_ = (want);                                                                \
		cr_assert_eq(rc_, want_, "%s = %s (%d), want %s", #expr, rdmx_err_name(rc_), rc_,  \
		             rdmx_err_name(want_));                                                \
	} while (0)
#define assert_ok(expr) assert_rc(expr, 0)

/* The real device the tests run on besides the mock: RDMX_TEST_DEVICE or "tcp". */
static inline const char *test_device_name(void)
{
	const char *env = getenv("RDMX_TEST_DEVICE");

	return env && *env ? env : "tcp";
}

/* Opens "mock" (the scripted provider) or a registered device by name. */
static inline int test_dev_open(const char *name, struct rdmx_dev **dev)
{
	if (name[0] == 'm' && name[1] == 'o' && name[2] == 'c' && name[3] == 'k')
		return mock_dev_open(dev);
	return rdmx_dev_open(name, dev);
}

/* Defines the test body once and registers it for the mock and the real device. */
#define DEVICE_TEST(suite, name)                                                                   \
	static void suite##_##name##_body(const char *devname);                                    \
	Test(suite, name##_mock)                                                                   \
	{                                                                                          \
		suite##_##name##_body("mock");                                                     \
	}                                                                                          \
	Test(suite, name##_dev)                                                                    \
	{                                                                                          \
		suite##_##name##_body(test_device_name());                                         \
	}                                                                                          \
	static void suite##_##name##_body(const char *devname)

#endif
