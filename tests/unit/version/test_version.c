/* rdmx/version.h against rdmx_version() and the build's project version. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rdmx/rdmx.h>

Test(version, macros_make_the_string)
{
	char want[32];

	snprintf(want, sizeof(want), "%d.%d.%d", RDMX_VERSION_MAJOR, RDMX_VERSION_MINOR,
	         RDMX_VERSION_PATCH);
	cr_assert_str_eq(RDMX_VERSION_STRING, want);
}

Test(version, header_agrees_with_the_project_version)
{
	cr_assert_str_eq(RDMX_VERSION_STRING, RDMX_TEST_PROJECT_VERSION);
}

Test(version, library_agrees_with_the_header)
{
	const char *v = rdmx_version();

	cr_assert_not_null(v);
	cr_assert_str_eq(v, RDMX_VERSION_STRING);
	/* a static string: the same pointer every time */
	cr_assert_eq(rdmx_version(), v);
}

Test(version, packed_number_orders_releases)
{
	cr_assert_eq(RDMX_VERSION,
	             RDMX_VERSION_AT(RDMX_VERSION_MAJOR, RDMX_VERSION_MINOR, RDMX_VERSION_PATCH));
	cr_assert_lt(RDMX_VERSION_AT(0, 1, 9), RDMX_VERSION_AT(0, 2, 0));
	cr_assert_lt(RDMX_VERSION_AT(0, 255, 255), RDMX_VERSION_AT(1, 0, 0));
}

/* the SONAME the program was linked against carries the ABI number */
Test(version, soname_is_the_abi_number)
{
	char name[64];
	void *h;

	snprintf(name, sizeof(name), "librdmx.so.%d", RDMX_TEST_SOVERSION);
	h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
	cr_assert_not_null(h, "%s is not the loaded librdmx: %s", name, dlerror());
	dlclose(h);
}
