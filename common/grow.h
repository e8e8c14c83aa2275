/* The one growable byte buffer step: make room for `need` bytes in a
 * realloc'd buffer, doubling from `first` bytes. Used by the registry's curl
 * reply buffer and rdmx-call's JSON writer. */
#ifndef RDMX_COMMON_GROW_H
#define RDMX_COMMON_GROW_H

#include <stdbool.h>
#include <stdlib.h>

/* Grows *data (capacity *cap) to at least `need` bytes. false (buffer and
 * capacity unchanged) when the allocation fails. */
static inline bool rdmx__grow(char **data, size_t *cap, size_t need, size_t first)
{
	size_t c = *cap ? *cap : first;
	char *p;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	p = realloc(*data, c);
	if (!p)
		return false;
	*data = p;
	*cap = c;
	return true;
}

#endif
