/* torch_events.c: the counts and the status of PyTorch's allocator events
 * (torch_events.h). */
#include "torch_events.h"
#include "counts.h"

#include <stdatomic.h>

/* The actions that come with tensors (an allocation, its free and its
 * block's reuse) are counted in each thread's block (counts.h): a shared
 * counter was a locked instruction at every event, on a line every thread
 * writes. The rarer ones (segments, snapshots, failures) share one. */
#define PER_THREAD (TORCH_FREE_COMPLETED + 1)
_Static_assert(TORCH_ALLOC == 0 && TORCH_FREE_REQUESTED == 1 && PER_THREAD <= COUNTS_EVENTS,
               "the tensors' actions come first, and fit in a thread's block");

static _Atomic uint64_t counts[TORCH_ACTIONS];
static _Atomic(const char *) status = "not seen";
static _Atomic int followed;

const char *torch_events_action_name(int action)
{
#define TORCH_EVENTS_NAME(action, name) name,
    static const char *const names[TORCH_ACTIONS] = { TORCH_TRACE_ACTIONS(TORCH_EVENTS_NAME) };
#undef TORCH_EVENTS_NAME
    return action >= 0 && action < TORCH_ACTIONS ? names[action] : "unknown";
}

void torch_events_count(int action)
{
    if (action >= 0 && action < PER_THREAD)
        counts_event_add((unsigned)action);
    else if (action >= 0 && action < TORCH_ACTIONS)
        atomic_fetch_add_explicit(&counts[action], 1, memory_order_relaxed);
}

void torch_events_counts(uint64_t out[TORCH_ACTIONS])
{
    for (int i = 0; i < TORCH_ACTIONS; i++)
        out[i] = i < PER_THREAD ? counts_event_sum((unsigned)i)
                                : atomic_load_explicit(&counts[i], memory_order_relaxed);
}

void torch_events_say(const char *now, int now_followed)
{
    atomic_store(&status, now);
    atomic_store(&followed, now_followed);
}

int torch_events_followed(void)
{
    return atomic_load(&followed);
}

const char *torch_events_status(void)
{
    return atomic_load(&status);
}
