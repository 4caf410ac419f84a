/* wrappers.h: the wrapper of every door, by door id, for the doors to hand
 * out. The wrappers themselves are the shim's exported cu* definitions. */
#ifndef GPULEAK_WRAPPERS_H
#define GPULEAK_WRAPPERS_H

#include "doors.h"

/* wrappers_table[DOOR_x] is the shim's function for driver function x. */
extern void *const wrappers_table[DOOR_COUNT];

#endif
