/* bootstrapd registration policy: which certificate names may register
 * which service names.
 *
 * File: one rule per line, "CERT_NAME_PATTERN SERVICE_PATTERN", '#' starts a
 * comment, blank lines are ignored. CERT_NAME_PATTERN follows the TLS
 * allow-list rules (exact name, "*.suffix" for one label, "*" for any);
 * SERVICE_PATTERN is a shell glob (fnmatch: '*', '?', '[...]'). A join is
 * allowed when any rule matches both names. An empty policy allows nothing. */
#ifndef RDMX_BOOTSTRAPD_POLICY_H
#define RDMX_BOOTSTRAPD_POLICY_H

#include <stddef.h>

#define RDMX_POLICY_MAX_RULES 10000u
#define RDMX_POLICY_MAX_LINE 1024u

struct rdmx__policy;

/* 0, or -1 with one line on stderr naming the file and line. */
int rdmx__policy_load(const char *path, struct rdmx__policy **policy);
/* From a string (tests); `origin` names it in errors. */
int rdmx__policy_parse(const char *text, const char *origin, struct rdmx__policy **policy);
void rdmx__policy_destroy(struct rdmx__policy **policy);
/* 1 allowed, 0 not. */
int rdmx__policy_allows(const struct rdmx__policy *policy, const char *cert_name,
                        const char *service);
size_t rdmx__policy_rules(const struct rdmx__policy *policy);

#endif
