/* Status list: every code has a text and a name; unknown codes are named so. */
#include <limits.h>
#include <string.h>

#include "helpers.h"

Test(status, every_code_has_text_and_name)
{
	unsigned n = 0;
#define CHECK_CODE(name, value, text)                                                              \
	cr_assert_str_eq(rdmx_strerror(value), text);                                              \
	cr_assert_str_eq(rdmx_err_name(value), #name);                                             \
	cr_assert_leq(value, 0);                                                                   \
	n++;
	RDMX_STATUS_LIST(CHECK_CODE)
#undef CHECK_CODE
	cr_assert_geq(n, 23);
	cr_assert_str_eq(rdmx_err_name(RDMX_E_INVAL), "E_INVAL");
	cr_assert_str_eq(rdmx_err_name(0), "OK");
}

Test(status, codes_are_never_renumbered)
{
	cr_assert_eq(RDMX_E_INVAL, -1);
	cr_assert_eq(RDMX_E_FULL, -4);
	cr_assert_eq(RDMX_E_REMOTE_ACCESS, -8);
	cr_assert_eq(RDMX_E_CONN_ABORTED, -9);
	cr_assert_eq(RDMX_E_CANCELED, -15);
	cr_assert_eq(RDMX_E_EXISTS, -22);
	cr_assert_eq(RDMX_E_INSECURE_KEY, -23);
}

Test(status, unknown_codes)
{
	int unknown[] = {1, 42, -99, -1000, INT_MIN, INT_MAX};

	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		cr_assert_str_eq(rdmx_strerror(unknown[i]), "unknown error");
		cr_assert_str_eq(rdmx_err_name(unknown[i]), "UNKNOWN");
	}
}
