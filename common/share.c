/* Fair shares of a server's places at its limit (common/share.h). */
#include "share.h"

#include <stdlib.h>
#include <string.h>

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct rdmx__place *)a)->name, ((const struct rdmx__place *)b)->name);
}

long rdmx__share_pick(struct rdmx__place *v, uint32_t n, const char *name, uint32_t *mine,
                      uint32_t *most)
{
	uint32_t top = 0, run;

	*mine = *most = 0;
	qsort(v, n, sizeof(*v), by_name);
	for (uint32_t i = 0; i < n; i += run) {
		for (run = 1; i + run < n && !strcmp(v[i].name, v[i + run].name); run++)
			;
		if (!strcmp(v[i].name, name))
			*mine = run;
		if (run > *most) {
			*most = run;
			top = i;
		}
	}
	return *most >= *mine + 2 ? (long)top : -1;
}
