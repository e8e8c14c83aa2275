/* bootstrapd policy file parser and matcher (see policy.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/tls.h>

#include "policy.h"

struct rule {
	char *cert;
	char *service;
};

struct rdmx__policy {
	struct rule *rules;
	size_t n;
};

static int service_pattern_ok(const char *p)
{
	if (!*p || strlen(p) > 256)
		return 0;
	for (; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("._-*?[]!", *p)))
			return 0;
	return 1;
}

void rdmx__policy_destroy(struct rdmx__policy **policy)
{
	if (!policy || !*policy)
		return;
	for (size_t i = 0; i < (*policy)->n; i++) {
		free((*policy)->rules[i].cert);
		free((*policy)->rules[i].service);
	}
	free((*policy)->rules);
	free(*policy);
	*policy = NULL;
}

static int add_rule(struct rdmx__policy *p, const char *cert, const char *service)
{
	struct rule *r = realloc(p->rules, (p->n + 1) * sizeof(*r));

	if (!r)
		return -1;
	p->rules = r;
	r[p->n].cert = strdup(cert);
	r[p->n].service = strdup(service);
	if (!r[p->n].cert || !r[p->n].service) {
		free(r[p->n].cert);
		free(r[p->n].service);
		return -1;
	}
	p->n++;
	return 0;
}

/* One line, already stripped of its newline. */
static int parse_line(struct rdmx__policy *p, char *line, const char *origin, unsigned lineno)
{
	char *hash = strchr(line, '#');
	char *save = NULL, *cert, *service, *extra;

	if (hash)
		*hash = '\0';
	cert = strtok_r(line, " \t\r", &save);
	if (!cert)
		return 0;
	service = strtok_r(NULL, " \t\r", &save);
	extra = service ? strtok_r(NULL, " \t\r", &save) : NULL;
	if (!service || extra) {
		fprintf(stderr,
		        "rdmx-bootstrapd: %s:%u: expected CERT_NAME_PATTERN SERVICE_PATTERN\n",
		        origin, lineno);
		return -1;
	}
	if (rdmx_tls_check_peer_pattern(cert)) {
		fprintf(stderr,
		        "rdmx-bootstrapd: %s:%u: bad certificate name pattern '%s' "
		        "(exact name, *.suffix or *)\n",
		        origin, lineno, cert);
		return -1;
	}
	if (!service_pattern_ok(service)) {
		fprintf(stderr, "rdmx-bootstrapd: %s:%u: bad service pattern '%s'\n", origin,
		        lineno, service);
		return -1;
	}
	if (p->n >= RDMX_POLICY_MAX_RULES) {
		fprintf(stderr, "rdmx-bootstrapd: %s:%u: more than %u rules\n", origin, lineno,
		        RDMX_POLICY_MAX_RULES);
		return -1;
	}
	if (add_rule(p, cert, service)) {
		fprintf(stderr, "rdmx-bootstrapd: out of memory\n");
		return -1;
	}
	return 0;
}

int rdmx__policy_parse(const char *text, const char *origin, struct rdmx__policy **policy)
{
	struct rdmx__policy *p = calloc(1, sizeof(*p));
	char line[RDMX_POLICY_MAX_LINE + 1];
	unsigned lineno = 0;

	if (!p)
		return -1;
	while (*text) {
		const char *nl = strchr(text, '\n');
		size_t n = nl ? (size_t)(nl - text) : strlen(text);

		lineno++;
		if (n > RDMX_POLICY_MAX_LINE) {
			fprintf(stderr, "rdmx-bootstrapd: %s:%u: line longer than %u bytes\n",
			        origin, lineno, RDMX_POLICY_MAX_LINE);
			rdmx__policy_destroy(&p);
			return -1;
		}
		memcpy(line, text, n);
		line[n] = '\0';
		if (parse_line(p, line, origin, lineno)) {
			rdmx__policy_destroy(&p);
			return -1;
		}
		text += n + (nl != NULL);
	}
	*policy = p;
	return 0;
}

int rdmx__policy_load(const char *path, struct rdmx__policy **policy)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len = 0;
	int ret;

	if (!f) {
		fprintf(stderr, "rdmx-bootstrapd: cannot open policy %s: %s\n", path,
		        strerror(errno));
		return -1;
	}
	/* bounded: rules times line length */
	text = malloc((size_t)RDMX_POLICY_MAX_RULES * 64 + 1);
	if (text)
		len = fread(text, 1, (size_t)RDMX_POLICY_MAX_RULES * 64, f);
	if (!text || ferror(f) || !feof(f)) {
		fprintf(stderr, "rdmx-bootstrapd: cannot read policy %s (too large?)\n", path);
		fclose(f);
		free(text);
		return -1;
	}
	fclose(f);
	text[len] = '\0';
	if (memchr(text, '\0', len)) {
		fprintf(stderr, "rdmx-bootstrapd: policy %s holds a NUL byte\n", path);
		free(text);
		return -1;
	}
	ret = rdmx__policy_parse(text, path, policy);
	free(text);
	return ret;
}

int rdmx__policy_allows(const struct rdmx__policy *policy, const char *cert_name,
                        const char *service)
{
	for (size_t i = 0; policy && i < policy->n; i++)
		if (rdmx_tls_name_match(policy->rules[i].cert, cert_name) &&
		    fnmatch(policy->rules[i].service, service, 0) == 0)
			return 1;
	return 0;
}

size_t rdmx__policy_rules(const struct rdmx__policy *policy)
{
	return policy ? policy->n : 0;
}
