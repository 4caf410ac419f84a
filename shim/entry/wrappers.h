/* wrappers.h: the wrapper of every wrapped driver function, by id, for the
 * ways in (interpose.c) to hand out. The wrappers themselves are the shim's exported cu*
 * definitions. */
#ifndef GPULEAK_WRAPPERS_H
#define GPULEAK_WRAPPERS_H

#include "driver.h"

/* wrappers_table[DRIVER_x] is the shim's function for driver function x. */
extern void *const wrappers_table[DRIVER_FN_COUNT];

struct timeline_point;

/* Fills a timeline point: the tracker's live bytes, and the bytes the
 * devices' current memory pools hold reserved (asked of the driver, for the
 * devices that have pool allocations), so a chart shows used beside
 * reserved. Runs where a point is due, inside the shim. */
void wrappers_sample_point(struct timeline_point *point);

#endif
