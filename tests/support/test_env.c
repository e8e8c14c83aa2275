/* The test batteries' environment (test_env.h). */
#include <stdlib.h>

#include "test_env.h"

const char *env_device(int which)
{
	const char *d = getenv("RDMX_TEST_DEVICE");

	if (!d || !*d)
		d = "tcp";
	if (which) {
		const char *p = getenv("RDMX_TEST_PEER_DEVICE");

		if (p && *p)
			return p;
	}
	return d;
}

const char *env_addr_raw(int which)
{
	const char *a = getenv(which ? "RDMX_TEST_PEER_ADDR" : "RDMX_TEST_ADDR");

	return (a && *a) ? a : NULL;
}

const char *env_addr(int which)
{
	const char *a = env_addr_raw(which);

	return a ? a : "127.0.0.1";
}
