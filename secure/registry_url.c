/* Registry URLs: which backend, which endpoints, which etcd key prefix. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdlib.h>
#include <string.h>

#include "registry_internal.h"
#include "tls_internal.h"

/* One "HOST:PORT" or "[V6]:PORT" of len bytes. */
static int parse_endpoint(const char *s, size_t len, struct rdmx__reg_url_endpoint *ep)
{
	const char *host = s, *colon;
	size_t host_len;
	char digits[6];
	char *end;
	long port;

	if (len && s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (!close || close + 1 >= s + len || close[1] != ':')
			return RDMX_E_INVAL;
		host = s + 1;
		host_len = (size_t)(close - host);
		colon = close + 1;
	} else {
		colon = NULL;
		for (size_t i = 0; i < len; i++)
			if (s[i] == ':')
				colon = s + i;
		if (!colon)
			return RDMX_E_INVAL;
		host_len = (size_t)(colon - s);
		if (memchr(s, ':', host_len))
			return RDMX_E_INVAL; /* a bare IPv6 address: wants brackets */
	}
	if (!host_len || host_len > RDMX__REG_URL_MAX_HOST)
		return RDMX_E_INVAL;
	for (size_t i = 0; i < host_len; i++)
		if (host[i] <= ' ' || host[i] > '~' || host[i] == '/' || host[i] == ',' ||
		    host[i] == '@')
			return RDMX_E_INVAL;
	len -= (size_t)(colon + 1 - s);
	if (!len || len > 5)
		return RDMX_E_INVAL;
	memcpy(digits, colon + 1, len);
	digits[len] = '\0';
	if (digits[0] < '0' || digits[0] > '9')
		return RDMX_E_INVAL;
	port = strtol(digits, &end, 10);
	if (*end || port < 1 || port > 65535)
		return RDMX_E_INVAL;
	memcpy(ep->host, host, host_len);
	ep->host[host_len] = '\0';
	ep->port = (uint16_t)port;
	return RDMX_OK;
}

static int valid_prefix_char(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '/' || ch == '.' || ch == '_' || ch == '-';
}

static int parse(const char *url, struct rdmx__reg_url *u)
{
	const char *rest = url, *path;
	size_t len;

	memset(u, 0, sizeof(*u));
	if (strncmp(url, "etcd://", 7) == 0) {
		const char *at, *end;

		u->backend = RDMX__REG_BACKEND_ETCD;
		rest += 7;
		at = strchr(rest, '@');
		end = strchr(rest, '/');
		if (at && (!end || at < end)) {
			size_t n = (size_t)(at - rest);

			if (!n || n > RDMX__REG_URL_MAX_USER)
				return RDMX_E_INVAL;
			for (size_t i = 0; i < n; i++)
				if (!valid_prefix_char(rest[i]) || rest[i] == '/')
					return RDMX_E_INVAL;
			memcpy(u->user, rest, n);
			u->user[n] = '\0';
			rest = at + 1;
		}
	} else {
		u->backend = RDMX__REG_BACKEND_RDMX;
		if (strncmp(url, "rdmx://", 7) == 0)
			rest += 7;
		else if (strstr(url, "://"))
			return RDMX_E_INVAL; /* a scheme we do not know */
	}
	path = strchr(rest, '/');
	len = path ? (size_t)(path - rest) : strlen(rest);
	while (len) {
		const char *comma = memchr(rest, ',', len);
		size_t one = comma ? (size_t)(comma - rest) : len;

		if (u->n == RDMX_REGISTRY_MAX_URL_ENDPOINTS ||
		    parse_endpoint(rest, one, &u->ep[u->n]))
			return RDMX_E_INVAL;
		u->n++;
		if (!comma)
			break;
		rest = comma + 1;
		len -= one + 1;
		if (!len)
			return RDMX_E_INVAL; /* a trailing comma */
	}
	if (!u->n)
		return RDMX_E_INVAL;
	if (u->backend == RDMX__REG_BACKEND_RDMX)
		return u->n == 1 && (!path || !path[1]) ? RDMX_OK : RDMX_E_INVAL;
	if (!path || !path[1]) {
		strcpy(u->prefix, RDMX__REG_ETCD_DEFAULT_PREFIX);
		return RDMX_OK;
	}
	len = strlen(path);
	if (len > RDMX__REG_URL_MAX_PREFIX || strstr(path, "//"))
		return RDMX_E_INVAL;
	for (size_t i = 0; i < len; i++)
		if (!valid_prefix_char(path[i]))
			return RDMX_E_INVAL;
	memcpy(u->prefix, path, len + 1);
	if (u->prefix[len - 1] != '/')
		strcat(u->prefix, "/");
	return RDMX_OK;
}

int rdmx__reg_url_parse(const char *url, struct rdmx__reg_url *out)
{
	struct rdmx__reg_url *u;
	int ret;

	if (!url || !out)
		return RDMX_E_INVAL;
	u = malloc(sizeof(*u));
	if (!u)
		return RDMX_E_NOMEM;
	ret = strlen(url) > 4096 ? RDMX_E_INVAL : parse(url, u);
	if (ret)
		RDMX_SEC_ERR("registry: '%.200s' is not a registry address (HOST:PORT, "
		             "rdmx://HOST:PORT or etcd://HOST:PORT[,HOST:PORT...][/PREFIX])",
		             url);
	else
		*out = *u;
	free(u);
	return ret;
}
