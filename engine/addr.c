/* Addresses for the cm-style flow: numeric text first, then a name lookup. */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int resolve(int family, const char *text, int flags, struct rdmx_addr *a)
{
	struct addrinfo hints, *res = NULL;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = family;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = flags;
	rc = getaddrinfo(text, NULL, &hints, &res);
	if (rc != 0 || !res)
		return RDMX_E_INVAL;
	if (res->ai_addrlen > sizeof(a->ss)) {
		freeaddrinfo(res);
		return RDMX_E_INVAL;
	}
	memset(&a->ss, 0, sizeof(a->ss));
	memcpy(&a->ss, res->ai_addr, res->ai_addrlen);
	a->ss_len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

int rdmx_addr_create(enum rdmx_addr_type type, const char *text, uint16_t port,
                     struct rdmx_addr **addr)
{
	struct rdmx_addr *a;
	int family, rc;

	if (!text || !addr || !*text)
		return RDMX_E_INVAL;
	switch (type) {
	case RDMX_ADDR_IPV4:
		family = AF_INET;
		break;
	case RDMX_ADDR_IPV6:
	case RDMX_ADDR_GID: /* a GID is written as an IPv6 address */
		family = AF_INET6;
		break;
	default:
		return RDMX_E_INVAL;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return RDMX_E_NOMEM;
	if (strlen(text) >= sizeof(a->text)) {
		rc = RDMX_E_INVAL;
		goto free_addr;
	}
	a->type = type;
	a->port = port;
	snprintf(a->text, sizeof(a->text), "%s", text);
	rc = resolve(family, text, AI_NUMERICHOST, a);
	if (rc && type != RDMX_ADDR_GID)
		rc = resolve(family, text, 0, a);
	if (rc) {
		RDMX_DBG("cannot resolve \"%s\" as %s", a->text,
		         family == AF_INET ? "ipv4" : "ipv6");
		goto free_addr;
	}
	if (family == AF_INET)
		((struct sockaddr_in *)&a->ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)&a->ss)->sin6_port = htons(port);
	*addr = a;
	return 0;

free_addr:
	free(a);
	return rc;
}

int rdmx_addr_destroy(struct rdmx_addr **addr)
{
	if (!addr || !*addr)
		return 0;
	free(*addr);
	*addr = NULL;
	return 0;
}

int rdmx_addr_get_params(const struct rdmx_addr *addr, enum rdmx_addr_type *type, const char **text,
                         uint16_t *port)
{
	if (!addr)
		return RDMX_E_INVAL;
	if (type)
		*type = addr->type;
	if (text)
		*text = addr->text;
	if (port)
		*port = addr->port;
	return 0;
}
