/* Fair shares of a server's places at its limit (the secure RPC server's
 * clients, rdmx-bootstrapd's sessions): one certificate name must not hold
 * every place and lock every other peer out. The name holding the most
 * places gives one up to a newcomer whose name holds at least two fewer (so
 * the newcomer's name never ends up holding more: no two names take turns
 * giving places to each other); else the newcomer is refused. Which of
 * that name's places goes (its oldest, its idle longest) is the caller's. */
#ifndef RDMX_COMMON_SHARE_H
#define RDMX_COMMON_SHARE_H

#include <stdint.h>

/* One place: its holder's name and the caller's object. */
struct rdmx__place {
	const char *name;
	void *holder;
};

/* Sorts v[0..n) by name and counts the places of each. Returns the index
 * in v of the first place of the name that gives one up to `name`, or -1
 * when none does (refuse the newcomer); *mine: the places `name` holds,
 * *most: the places the name holding the most holds (its run in v is
 * v[index .. index + *most)). */
long rdmx__share_pick(struct rdmx__place *v, uint32_t n, const char *name, uint32_t *mine,
                      uint32_t *most);

#endif
