/* torch_trace.h: PyTorch's tensors, from its caching allocator's own events.
 *
 * PyTorch's native caching allocator hands tensors out of segments it keeps,
 * so the driver sees only the segments. The allocator calls "trace trackers"
 * on every event, with or without memory history (DESIGN.md, "PyTorch's own
 * allocator events"). This module finds that interface at run time in the
 * loaded libc10_cuda.so, without PyTorch's headers, checks every piece it
 * relies on, attaches one tracker, and records each tensor as kind tensor
 * with its own stack. Anything it does not recognise is said once on stderr
 * and in the report, and the run keeps the segments only. The program's
 * allocator and environment are never changed. */
#ifndef GPULEAK_TORCH_TRACE_H
#define GPULEAK_TORCH_TRACE_H

#include <stdint.h>

/* PyTorch's actions (c10 TraceEntry::Action), in its order. */
enum torch_trace_action {
    TORCH_ALLOC, TORCH_FREE_REQUESTED, TORCH_FREE_COMPLETED, TORCH_SEGMENT_ALLOC,
    TORCH_SEGMENT_FREE, TORCH_SEGMENT_MAP, TORCH_SEGMENT_UNMAP, TORCH_SNAPSHOT, TORCH_OOM,
    TORCH_ACTIONS
};

/* Called by the wrappers after the driver handed out device, VMM or pool
 * memory (recorded under site), on that thread, inside the shim. Keeps the
 * site, so that PyTorch's segment event that follows on this thread marks
 * it as its cache (tracker_mark_reserve). Until it has attached or given
 * up, it looks for libc10_cuda.so and whether this allocation came from it
 * (then the device allocators exist, so a tracker attached now is not
 * lost), and then attaches, once. Afterwards it costs a store and an atomic
 * load. Never blocks on another thread of the program: a second thread
 * arriving while one attaches goes on at once. */
void torch_trace_notice_segment(uint32_t site);

/* For the report: "attached", "not seen" (no PyTorch CUDA allocator was seen
 * allocating), or why tensors are not tracked (a sentence; the run then
 * shows the segments only). */
const char *torch_trace_status(void);

/* Whether the calling thread is inside one of PyTorch's allocator events
 * (its allocator's mutex held): what runs there must not call CUDA. */
int torch_trace_in_event(void);

/* The events received, by action, while tracking was on. */
void torch_trace_counts(uint64_t out[TORCH_ACTIONS]);

#endif
