/* torch_trace.h: PyTorch's tensors, from its caching allocator's own events.
 *
 * PyTorch's native caching allocator hands tensors out of segments it keeps,
 * so the driver sees only the segments. The allocator calls "trace trackers"
 * on every event, with or without memory history (torch >= 2.2, PyTorch PR
 * #112238: record_trace in c10/cuda/CUDACachingAllocator.cpp returns early
 * only when history is off and no tracker is attached). This module finds that interface at run time in the
 * loaded libc10_cuda.so, without PyTorch's headers, checks every piece it
 * relies on, attaches one tracker, and records each tensor as kind tensor
 * with its own stack. Anything it does not recognise is said once on stderr
 * and in the report, and the run keeps the segments only. The program's
 * allocator and environment are never changed. */
#ifndef GPULEAK_TORCH_TRACE_H
#define GPULEAK_TORCH_TRACE_H

#include <stdint.h>

#include "torch_events.h"
#include "tracker.h"

/* Called by the wrappers after the driver handed out device, VMM or pool
 * memory (recorded as kind under key, at now_ns on clock.h's coarse clock),
 * on that thread, inside the shim. Keeps the key, so that PyTorch's segment
 * event that follows on this thread marks that allocation as its cache
 * (tracker_mark_reserve). Until it has attached or given up, it looks for
 * libc10_cuda.so and whether this allocation came from it (then the device
 * allocators exist, so a tracker attached now is not lost), and then
 * attaches, once; afterwards it costs
 * two stores and an atomic load. A second thread arriving while one
 * attaches goes on at once, never waiting on the shim. The attach itself is
 * PyTorch's method: it takes each device allocator's mutex in turn while
 * this thread holds its own device's (a thread holding another
 * device's mutex and waiting for this one would deadlock with it; none of
 * PyTorch's paths was seen to do so). */
void torch_trace_notice_segment(alloc_kind_t kind, uint64_t key, uint64_t now_ns);

/* Whether the calling thread is inside one of PyTorch's allocator events
 * (its allocator's mutex held): what runs there must not call CUDA. */
int torch_trace_in_event(void);

#endif
