/* symbolize.h: turning return addresses into names, late.
 *
 * Called at exit only, for the stacks the report uses, never on the
 * allocation path. libdw is loaded with dlopen so the shim runs (without
 * source lines) where elfutils is absent. */
#ifndef GPULEAK_SYMBOLIZE_H
#define GPULEAK_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

/* One frame as the report shows it. Strings are owned by the symbolizer and
 * stay valid until symbolize_end(); any of them may be NULL when unknown
 * (function, file), except module, which is "?" when even that is unknown. */
typedef struct symbolized_frame {
    uintptr_t address;     /* the return address as captured */
    uintptr_t offset;      /* address minus the module's load base */
    const char *module;    /* path of the ELF object */
    const char *function;  /* demangled when the process has __cxa_demangle */
    uintptr_t function_offset; /* address minus the symbol's start */
    const char *file;      /* source file from DWARF, NULL without it */
    int line;              /* 0 without DWARF */
    int inlined;           /* 1 for a frame inlined into the next one */
} symbolized_frame_t;

/* Prepares for a batch of lookups (reads the process's module map; loads
 * libdw if present, the first time, for the rest of the process's life).
 * Returns 0, or -1 when nothing beyond dladdr is usable (lookups still
 * work, with less detail). */
int symbolize_begin(void);

/* Resolves one return address. A return address points after the call, so
 * the lookup uses address - 1. Writes up to max frames into out: the frames
 * inlined at that address first (innermost first), then the real function.
 * Returns how many were written (at least 1 when max >= 1). */
int symbolize_address(uintptr_t address, symbolized_frame_t *out, int max);

/* Frees everything symbolize_begin and the lookups made; loaded libraries
 * stay (unloading them would run their exit handlers on the reporter
 * thread, which a forked child could then deadlock on). */
void symbolize_end(void);

#endif
