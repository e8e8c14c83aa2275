/* Addresses: numeric and named, parameters, resolved socket address, bad input. */
#include <arpa/inet.h>
#include <string.h>

#include "helpers.h"
#include "internal.h"

Test(addr, ipv4)
{
	struct rdmx_addr *a = NULL;
	enum rdmx_addr_type type;
	const char *text;
	uint16_t port;
	const struct sockaddr_in *sin;

	assert_ok(rdmx_addr_create(RDMX_ADDR_IPV4, "127.0.0.1", 18515, &a));
	assert_ok(rdmx_addr_get_params(a, &type, &text, &port));
	cr_assert_eq(type, RDMX_ADDR_IPV4);
	cr_assert_str_eq(text, "127.0.0.1");
	cr_assert_eq(port, 18515);
	sin = (const struct sockaddr_in *)&a->ss;
	cr_assert_eq(sin->sin_family, AF_INET);
	cr_assert_eq(ntohs(sin->sin_port), 18515);
	cr_assert_eq(ntohl(sin->sin_addr.s_addr), 0x7f000001u);
	cr_assert_eq(a->ss_len, sizeof(struct sockaddr_in));
	assert_ok(rdmx_addr_get_params(a, NULL, NULL, NULL));
	assert_ok(rdmx_addr_destroy(&a));
	cr_assert_null(a);
	assert_ok(rdmx_addr_destroy(&a));
	assert_ok(rdmx_addr_destroy(NULL));
}

Test(addr, ipv6_and_gid)
{
	struct rdmx_addr *a = NULL;
	const struct sockaddr_in6 *sin6;

	assert_ok(rdmx_addr_create(RDMX_ADDR_IPV6, "::1", 7, &a));
	sin6 = (const struct sockaddr_in6 *)&a->ss;
	cr_assert_eq(sin6->sin6_family, AF_INET6);
	cr_assert_eq(ntohs(sin6->sin6_port), 7);
	cr_assert_eq(sin6->sin6_addr.s6_addr[15], 1);
	assert_ok(rdmx_addr_destroy(&a));

	assert_ok(rdmx_addr_create(RDMX_ADDR_GID, "fe80::1:2", 0, &a));
	cr_assert_eq(a->ss.ss_family, AF_INET6);
	assert_ok(rdmx_addr_destroy(&a));
}

Test(addr, host_name)
{
	struct rdmx_addr *a = NULL;

	assert_ok(rdmx_addr_create(RDMX_ADDR_IPV4, "localhost", 80, &a));
	cr_assert_eq(a->ss.ss_family, AF_INET);
	cr_assert_eq(ntohs(((const struct sockaddr_in *)&a->ss)->sin_port), 80);
	assert_ok(rdmx_addr_destroy(&a));
}

Test(addr, bad_input)
{
	struct rdmx_addr *a = (void *)0x1;
	char longname[100];

	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_rc(rdmx_addr_create(RDMX_ADDR_IPV4, NULL, 1, &a), RDMX_E_INVAL);
	assert_rc(rdmx_addr_create(RDMX_ADDR_IPV4, "", 1, &a), RDMX_E_INVAL);
	assert_rc(rdmx_addr_create(RDMX_ADDR_IPV4, "127.0.0.1", 1, NULL), RDMX_E_INVAL);
	assert_rc(rdmx_addr_create(RDMX_ADDR_IPV4, "::1", 1, &a), RDMX_E_INVAL);
	assert_rc(rdmx_addr_create(RDMX_ADDR_IPV6, "10.0.0.1", 1, &a), RDMX_E_INVAL);
	assert_rc(rdmx_addr_create(RDMX_ADDR_GID, "not-a-gid", 1, &a), RDMX_E_INVAL);
	assert_rc(rdmx_addr_create(RDMX_ADDR_IPV4, "no such host.invalid", 1, &a), RDMX_E_INVAL);
	assert_rc(rdmx_addr_create(RDMX_ADDR_IPV4, longname, 1, &a), RDMX_E_INVAL);
	assert_rc(rdmx_addr_create((enum rdmx_addr_type)9, "127.0.0.1", 1, &a), RDMX_E_INVAL);
	cr_assert_eq(a, (void *)0x1);
	assert_rc(rdmx_addr_get_params(NULL, NULL, NULL, NULL), RDMX_E_INVAL);
}
