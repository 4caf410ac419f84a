/* unwind.h: native stacks from the unwind rules of each address, cached.
 *
 * On PyTorch's allocation path libunwind's fast trace (unw_backtrace) costs
 * about 200 ns to start, and on a frame it cannot trace from its cache it
 * walks the whole stack again with unw_step, 26 us for 36 frames: the mean
 * was twice the median (docs/performance.md). This unwinder reads each
 * return address's DWARF call-frame rule (.eh_frame, through
 * .eh_frame_hdr's sorted table) once, keeps it in a table shared by all
 * threads, and then steps a frame with two or three loads from the stack.
 * It is x86-64 only; it reads only inside the calling thread's stack; where
 * a frame needs a rule it does not know (a signal frame, an expression it
 * does not read, code with no unwind table), it gives up and the caller
 * asks libunwind, so a stack is never worse than before. */
#ifndef GPULEAK_UNWIND_H
#define GPULEAK_UNWIND_H

#include <stdint.h>

/* Writes up to max return addresses of the calling thread, innermost first,
 * starting with an address inside unwind_capture itself (as unw_backtrace
 * starts inside its caller). Returns how many, or -1 when some frame could
 * not be stepped before the stack ended or max was reached: the caller
 * should then take the stack another way. Thread-safe, not async-signal-
 * safe: a thread's first call asks for its stack's bounds (which may
 * allocate), and the first sight of an address asks dl_iterate_phdr.
 * Rules are forgotten when the loader reports an unload, noticed at the
 * next new address: a library unloaded and another loaded at its addresses
 * meanwhile can give wrong frames until then, as libunwind's cache can.
 * Each thread remembers its recent stacks (64, found by the stack pointer
 * a capture starts at) and reuses the frames of them that the stack still
 * holds, checked word by word: a stack seen before is taken whole, and
 * another steps only its frames inside those it shares with the last. */
int unwind_capture(uintptr_t *out, int max);

/* The frames the calling thread's captures gave (those that fell back to
 * libunwind aside), and how many of them were taken from its remembered
 * stacks instead of stepped: for tests and benchmarks. */
typedef struct {
    uint64_t frames, reused;
} unwind_counts_t;

unwind_counts_t unwind_counts(void);

/* Where the calling thread's last capture left its stack among its
 * remembered ones (0 to UNWIND_SLOTS - 1), or -1 when it has none: a hint
 * for the stack depot (stacks.c), which finds a stack seen again there
 * without hashing it. Captures that fell back to libunwind leave a stale
 * value; users must check what they find. */
#define UNWIND_SLOTS 64
int unwind_last_slot(void);

#endif
