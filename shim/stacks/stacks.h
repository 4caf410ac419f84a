/* stacks.h: native stack capture and the stack depot.
 *
 * A stack is stored once, as raw return addresses plus packed Python frames,
 * and named by a 32-bit id; an allocation keeps only the id. Names are
 * resolved late (symbolize.h), for the stacks a report uses. */
#ifndef GPULEAK_STACKS_H
#define GPULEAK_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "python.h"

/* The most native and Python frames one stack holds. */
#define STACKS_MAX_FRAMES 256
/* The most distinct stacks kept; ids run from 1 to this. */
#define STACKS_CAPACITY (1u << 20)

typedef struct stack_record {
    uint64_t hash;
    uint32_t id;
    uint16_t native_count;
    uint16_t python_count;
    uint32_t tag;          /* caller's discriminator (the allocation kind) */
    uint64_t thread;       /* pthread_self() of the thread that first interned
                              it with Python frames; 0 without them (a native
                              worker, an autograd thread): whose site it is */
    uint64_t frames[];     /* native_count return addresses, then python_count
                              python_frame_t, both innermost first */
} stack_record_t;

/* Finds the shim's own address range (its frames are dropped) and warms the
 * unwinder up, so the first allocation does not pay for loading unwind
 * tables inside a hook. fast_unwind 1 takes stacks with unwind.h's
 * unwinder, falling back to libunwind's where it cannot; 0 with libunwind
 * only. Call once before any capture. */
void stacks_init(int fast_unwind);

/* Captures the calling thread's return addresses, innermost first, leading
 * frames inside the shim dropped. Returns how many were written (<= max).
 * When hint is not NULL it receives a hint for stacks_intern_hinted: where
 * the unwinder keeps this stack (unwind_last_slot), or -1. */
int stacks_capture(uintptr_t *out, int max, int *hint);

/* A 64-bit hash of a stack (tag, native frames, Python frames), as the
 * depot keys it. */
uint64_t stacks_hash(uint32_t tag, const uintptr_t *native, int native_count,
                     const python_frame_t *python, int python_count);

/* Returns the id of the stack (tag, native frames, Python frames), adding it
 * to the depot on first sight. Lookups are lock-free; only an insert takes
 * the depot's mutex. Returns 0 when the depot is full (counted in
 * stacks_overflowed) or out of memory. */
uint32_t stacks_intern(uint32_t tag, const uintptr_t *native, int native_count,
                       const python_frame_t *python, int python_count);

/* stacks_intern, first trying the id this thread last interned with the
 * same hint from stacks_capture (-1: none): a stack the unwinder found
 * again whole is then compared with its record, not hashed and looked up.
 * The id returned is the same either way. */
uint32_t stacks_intern_hinted(int hint, uint32_t tag, const uintptr_t *native, int native_count,
                              const python_frame_t *python, int python_count);

/* The record of an id from stacks_intern, or NULL for 0 or an unknown id. */
const stack_record_t *stacks_get(uint32_t id);

/* The largest id handed out so far; ids run from 1 to this. */
uint32_t stacks_count(void);

/* Interns refused because the depot was full. */
uint64_t stacks_overflowed(void);

/* Bytes the depot uses for records (the report and the benchmark show it). */
size_t stacks_memory_bytes(void);

#endif
