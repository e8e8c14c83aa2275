/* The route guide's map, shared by server and client (the client checks what
 * the server answers against it): a 10 x 10 grid of points from
 * (ROUTE_LAT0, ROUTE_LON0) in steps of ROUTE_STEP; the point (i, j) holds a
 * feature named "feature i,j" unless (i + j) % 3 == 0. */
#ifndef ROUTE_GUIDE_DB_H
#define ROUTE_GUIDE_DB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define ROUTE_GRID 10
#define ROUTE_LAT0 400000000
#define ROUTE_LON0 (-740000000)
#define ROUTE_STEP 1000000

/* The feature name at (lat, lon) into buf; false when there is none. */
static inline bool route_db_name(int32_t lat, int32_t lon, char *buf, size_t size)
{
	int32_t i = (lat - ROUTE_LAT0) / ROUTE_STEP, j = (lon - ROUTE_LON0) / ROUTE_STEP;

	if (lat < ROUTE_LAT0 || lon < ROUTE_LON0 || (lat - ROUTE_LAT0) % ROUTE_STEP ||
	    (lon - ROUTE_LON0) % ROUTE_STEP || i >= ROUTE_GRID || j >= ROUTE_GRID ||
	    (i + j) % 3 == 0)
		return false;
	snprintf(buf, size, "feature %d,%d", (int)i, (int)j);
	return true;
}

#endif
