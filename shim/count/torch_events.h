/* torch_events.h: what PyTorch's allocator events told, for the report:
 * how many of each action came, and whether its tensors are followed.
 * torch_trace.c (an entry point, where the events arrive) writes it; the
 * report reads it, a floor below the events' door. */
#ifndef GPULEAK_TORCH_EVENTS_H
#define GPULEAK_TORCH_EVENTS_H

#include <stdint.h>

/* PyTorch's actions (c10 TraceEntry::Action), in its order, with the names
 * the report gives their counts. */
#define TORCH_TRACE_ACTIONS(X)                                                 \
    X(ALLOC, "alloc") X(FREE_REQUESTED, "free_requested")                      \
    X(FREE_COMPLETED, "free_completed") X(SEGMENT_ALLOC, "segment_alloc")      \
    X(SEGMENT_FREE, "segment_free") X(SEGMENT_MAP, "segment_map")              \
    X(SEGMENT_UNMAP, "segment_unmap") X(SNAPSHOT, "snapshot") X(OOM, "oom")
#define TORCH_TRACE_ENUM(action, name) TORCH_##action,
enum torch_trace_action { TORCH_TRACE_ACTIONS(TORCH_TRACE_ENUM) TORCH_ACTIONS };
#undef TORCH_TRACE_ENUM

/* The report's name of an action ("alloc", ...), "unknown" past the last. */
const char *torch_events_action_name(int action);

/* Counts one event of action (an enum torch_trace_action). */
void torch_events_count(int action);

/* The events received, by action, while tracking was on. */
void torch_events_counts(uint64_t out[TORCH_ACTIONS]);

/* Says how the tensors are followed now: status is "attached", or why they
 * are not (a sentence that lives as long as the process); followed is 1
 * while attached and no event was refused since. */
void torch_events_say(const char *status, int followed);

/* Whether tensors are being followed. */
int torch_events_followed(void);

/* For the report: "attached", "not seen" (no PyTorch CUDA allocator was seen
 * allocating), or why tensors are not tracked (a sentence; the run then
 * shows the segments only). */
const char *torch_events_status(void);

#endif
