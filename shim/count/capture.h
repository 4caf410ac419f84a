/* capture.h: the site of an allocation, taken on the allocating thread.
 *
 * Both the driver's wrappers and PyTorch's allocator events (torch_trace.h)
 * name an allocation by the same kind of site: the thread's native frames,
 * then its Python frames, interned with the kind as one stack id. */
#ifndef GPULEAK_CAPTURE_H
#define GPULEAK_CAPTURE_H

#include <stdint.h>

#include "python.h"
#include "tracker.h"

/* Maps the table of Python lines every thread shares (capture.c).
 * Returns 0, or -1 when memory for it is lacking: sites are then right
 * still, but no Python line is trusted (each stack walked natively). */
int capture_init(void);

/* Captures the calling thread's stack (native, then Python, as deep as
 * GPULEAK_STACK_DEPTH and GPULEAK_PYTHON_DEPTH allow) and returns its site
 * id. The kind and the device are part of the site, so one call path
 * allocating two kinds, or on two devices, makes two sites (a site's kind
 * and device are one each). With stacks off it is the kind's (and
 * device's) frameless site; 0 when the depot is full. Blocks on nothing but
 * the depot's insert lock. */
uint32_t capture_site(alloc_kind_t kind, int device);

/* The site of an allocation a framework recorded the Python frames of
 * itself (innermost first), with no native frames: for arrays seen only in
 * a snapshot of the framework's pool (pools.h). 0 when the depot is full. */
uint32_t capture_site_of_frames(alloc_kind_t kind, int device, const python_frame_t *python,
                                int count);

#endif
