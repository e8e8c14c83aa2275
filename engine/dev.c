/* Devices: the provider registry and device open/close.
 *
 * Providers are listed in preference order (verbs, then tcp). Each one's ops
 * table is checked once, at first use: a provider missing a mandatory op is
 * left out with an error log instead of crashing a caller later. */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h"

static const struct rdmx_provider_ops *const providers[] = {
#ifdef RDMX_HAVE_VERBS
    &rdmx__verbs_ops,
#endif
    &rdmx__tcp_ops,
};
#define NUM_PROVIDERS (sizeof(providers) / sizeof(providers[0]))

static bool provider_ok[NUM_PROVIDERS];
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;

#define MANDATORY(ops, field)                                                                      \
	do {                                                                                       \
		if (!(ops)->field) {                                                               \
			RDMX_ERR("provider %s lacks mandatory op %s: provider disabled",           \
			         (ops)->name ? (ops)->name : "?", #field);                         \
			return false;                                                              \
		}                                                                                  \
	} while (0)

static bool check_ops(const struct rdmx_provider_ops *o)
{
	MANDATORY(o, name);
	MANDATORY(o, dev_list);
	MANDATORY(o, dev_open);
	MANDATORY(o, dev_close);
	MANDATORY(o, dev_query_caps);
	MANDATORY(o, dev_get_gid);
	MANDATORY(o, mr_reg);
	MANDATORY(o, mr_dereg);
	MANDATORY(o, ctx_start);
	MANDATORY(o, ctx_stop);
	MANDATORY(o, ctx_get_fd);
	MANDATORY(o, ctx_arm);
	MANDATORY(o, ctx_disarm);
	MANDATORY(o, ctx_poll);
	MANDATORY(o, conn_export);
	MANDATORY(o, conn_connect);
	MANDATORY(o, conn_disconnect);
	MANDATORY(o, conn_release);
	MANDATORY(o, post_recv);
	MANDATORY(o, post_send);
	if (o->id != RDMX_PROVIDER_ID_TCP && o->id != RDMX_PROVIDER_ID_VERBS) {
		RDMX_ERR("provider %s has unknown id %u: provider disabled", o->name, o->id);
		return false;
	}
	/* optional: dev_find_by_addr, listen, stop_listen, connect_to_addr,
	 * conn_accept, conn_reject (the engine answers RDMX_E_NOT_SUPPORTED) */
	return true;
}

static void registry_init(void)
{
	for (size_t i = 0; i < NUM_PROVIDERS; i++)
		provider_ok[i] = check_ops(providers[i]);
}

static void registry(void)
{
	pthread_once(&registry_once, registry_init);
}

/* Lists one provider's devices into a heap array (*n entries). */
static int provider_devices(const struct rdmx_provider_ops *ops, struct rdmx_dev_info **out,
                            size_t *n)
{
	struct rdmx_dev_info *infos;
	size_t count = 0, again = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = ops->dev_list(NULL, 0, &count);
	if (rc)
		return rc;
	if (count == 0)
		return 0;
	infos = calloc(count, sizeof(*infos));
	if (!infos)
		return RDMX_E_NOMEM;
	rc = ops->dev_list(infos, count, &again);
	if (rc) {
		free(infos);
		return rc;
	}
	*out = infos;
	*n = again < count ? again : count;
	return 0;
}

int rdmx_dev_list(struct rdmx_dev_info *infos, size_t max, size_t *count)
{
	size_t total = 0, written = 0;

	if (!count || (!infos && max))
		return RDMX_E_INVAL;
	registry();
	for (size_t p = 0; p < NUM_PROVIDERS; p++) {
		struct rdmx_dev_info *list;
		size_t n;

		if (!provider_ok[p])
			continue;
		if (provider_devices(providers[p], &list, &n)) {
			RDMX_DBG("provider %s lists no devices", providers[p]->name);
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			if (written < max) {
				infos[written] = list[i];
				snprintf(infos[written].provider, sizeof(infos[written].provider),
				         "%s", providers[p]->name);
				written++;
			}
		}
		total += n;
		free(list);
	}
	*count = total;
	return 0;
}

/* The provider (index) that lists device `name`, or -1. */
static int provider_of(const char *name)
{
	for (size_t p = 0; p < NUM_PROVIDERS; p++) {
		struct rdmx_dev_info *list;
		size_t n;
		bool found = false;

		if (!provider_ok[p] || provider_devices(providers[p], &list, &n))
			continue;
		for (size_t i = 0; i < n && !found; i++)
			found = strncmp(list[i].name, name, sizeof(list[i].name)) == 0;
		free(list);
		if (found)
			return (int)p;
	}
	return -1;
}

/* First device of the first provider that has one ("tcp" at worst). */
static int default_device(char name[RDMX_DEV_NAME_MAX])
{
	for (size_t p = 0; p < NUM_PROVIDERS; p++) {
		struct rdmx_dev_info *list;
		size_t n;

		if (!provider_ok[p] || provider_devices(providers[p], &list, &n))
			continue;
		if (n) {
			snprintf(name, RDMX_DEV_NAME_MAX, "%s", list[0].name);
			free(list);
			return 0;
		}
		free(list);
	}
	return RDMX_E_NO_DEVICE;
}

static int open_ops(const struct rdmx_provider_ops *ops, const char *name, const char *ip,
                    struct rdmx_dev **out)
{
	struct rdmx_dev *dev;
	int rc;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return RDMX_E_NOMEM;
	dev->ops = ops;
	snprintf(dev->name, sizeof(dev->name), "%s", name);
	atomic_init(&dev->users, 0);
	rc = dev->ops->dev_open(dev, ip);
	if (rc) {
		RDMX_DBG("opening device %s (%s) failed: %s", name, dev->ops->name,
		         rdmx_err_name(rc));
		free(dev);
		return rc;
	}
	*out = dev;
	return 0;
}

static int open_with(size_t p, const char *name, const char *ip, struct rdmx_dev **out)
{
	return open_ops(providers[p], name, ip, out);
}

int rdmx__dev_open_ops(const struct rdmx_provider_ops *ops, const char *name, struct rdmx_dev **dev)
{
	if (!ops || !name || !dev || !*name || strlen(name) >= RDMX_DEV_NAME_MAX)
		return RDMX_E_INVAL;
	if (!check_ops(ops))
		return RDMX_E_INVAL;
	return open_ops(ops, name, NULL, dev);
}

int rdmx_dev_open(const char *name, struct rdmx_dev **dev)
{
	char chosen[RDMX_DEV_NAME_MAX];
	int p, rc;

	if (!dev)
		return RDMX_E_INVAL;
	registry();
	if (!name) {
		const char *env = getenv("RDMX_DEVICE");

		if (env && *env) {
			name = env;
		} else {
			rc = default_device(chosen);
			if (rc)
				return rc;
			name = chosen;
		}
	}
	if (!*name || strlen(name) >= RDMX_DEV_NAME_MAX)
		return RDMX_E_INVAL;
	p = provider_of(name);
	if (p < 0) {
		RDMX_DBG("no device named %s", name);
		return RDMX_E_NO_DEVICE;
	}
	return open_with((size_t)p, name, NULL, dev);
}

int rdmx_dev_open_by_addr(const char *ip, struct rdmx_dev **dev)
{
	unsigned char scratch[sizeof(struct in6_addr)];
	char name[RDMX_DEV_NAME_MAX];

	if (!ip || !dev)
		return RDMX_E_INVAL;
	if (inet_pton(AF_INET, ip, scratch) != 1 && inet_pton(AF_INET6, ip, scratch) != 1)
		return RDMX_E_INVAL;
	registry();
	for (size_t p = 0; p < NUM_PROVIDERS; p++) {
		if (!provider_ok[p] || !providers[p]->dev_find_by_addr)
			continue;
		memset(name, 0, sizeof(name));
		if (providers[p]->dev_find_by_addr(ip, name) == 0) {
			name[RDMX_DEV_NAME_MAX - 1] = '\0';
			return open_with(p, name, ip, dev);
		}
	}
	RDMX_DBG("no device owns address %s", ip);
	return RDMX_E_NO_DEVICE;
}

int rdmx_dev_close(struct rdmx_dev **dev)
{
	unsigned users;

	if (!dev || !*dev)
		return 0;
	users = atomic_load(&(*dev)->users);
	if (users) {
		RDMX_DBG("device %s still has %u users", (*dev)->name, users);
		return RDMX_E_BAD_STATE;
	}
	(*dev)->ops->dev_close(*dev);
	free(*dev);
	*dev = NULL;
	return 0;
}

int rdmx_dev_query_caps(const struct rdmx_dev *dev, struct rdmx_dev_caps *caps)
{
	struct rdmx_dev_caps c;
	int rc;

	if (!dev || !caps)
		return RDMX_E_INVAL;
	memset(&c, 0, sizeof(c));
	rc = dev->ops->dev_query_caps(dev, &c);
	if (rc)
		return rc;
	*caps = c;
	return 0;
}

int rdmx_dev_get_gid(const struct rdmx_dev *dev, uint32_t index, uint8_t gid[16])
{
	uint8_t g[16];
	int rc;

	if (!dev || !gid)
		return RDMX_E_INVAL;
	rc = dev->ops->dev_get_gid(dev, index, g);
	if (rc)
		return rc;
	memcpy(gid, g, sizeof(g));
	return 0;
}

const char *rdmx_dev_provider(const struct rdmx_dev *dev)
{
	return dev ? dev->ops->name : NULL;
}

const char *rdmx_dev_name(const struct rdmx_dev *dev)
{
	return dev ? dev->name : NULL;
}
