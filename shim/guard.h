/* guard.h: the per-thread flag that keeps the shim from recording itself.
 *
 * Set while a wrapper records, while the shim starts, and for good on a
 * thread that must never be tracked; a call arriving with it set is
 * forwarded untouched, so a nested driver call is recorded once. */
#ifndef GPULEAK_GUARD_H
#define GPULEAK_GUARD_H

extern __thread int guard_depth __attribute__((tls_model("initial-exec")));

static inline int guard_enter(void) { return guard_depth++ == 0; }
static inline void guard_leave(void) { guard_depth--; }

#endif
