/* origin.h: which frame of a recorded site is "the user's line", and who
 * owns its memory (the user, NCCL, cuBLAS, PyTorch's allocators, the CUDA
 * runtime), by the rules of common/origin_rules.h.
 *
 * Decided at report time from frames the report has already symbolized and
 * described, never on the allocation path. */
#ifndef GPULEAK_ORIGIN_H
#define GPULEAK_ORIGIN_H

#include <stddef.h>
#include <stdint.h>

#include "origin_rules.h"
#include "symbolize.h"

/* The native frames of site, symbolized, inlined frames expanded, innermost
 * first; writes up to max and returns how many. Between symbolize_begin and
 * symbolize_end. */
int origin_site_frames(uint32_t site, symbolized_frame_t *out, int max);

/* Reads GPULEAK_ORIGIN_SKIP (extra globs, colon-separated, tried before the
 * built-in table; a glob starting with '!' keeps instead of skipping) and
 * GPULEAK_ORIGIN_RULES ("none" drops the built-in table; unset, "" or
 * "default" keeps it; anything else gets one line on stderr, once, and the
 * default), and builds the rules from them and from the interpreter's
 * layout when Python has said it (pylayout_get; its rules go with the
 * built-in table). Call once per report, before the first question;
 * calling it again re-reads both. */
void origin_init(void);

/* The interpreter's layout the rules of the last origin_init took, or NULL
 * when they took none (Python had not said it yet, or there is none). */
const origin_layout_t *origin_layout(void);

/* The origin and owner of one recorded site, as the report writes them. */
typedef struct origin_site {
    const char *owner;     /* origin_owner's answer, static */
    int found;             /* 0: no origin (every frame is plumbing, or no stack) */
    origin_frame_t frame;  /* the origin frame when found; its strings belong to
                              the symbolizer (until symbolize_end) or the python
                              module (until exit) */
    uintptr_t address;     /* native origin: the return address; 0 for Python */
    uintptr_t offset;      /* native origin: address minus the module's load base */
    int library;           /* 1: no frame is the program's own, and frame is
                              the innermost installed package's (a tool run
                              from a venv, a script inside site-packages) */
    int has_via;           /* 1: via holds the innermost library frame (an
                              installed package's) between the allocation and
                              the origin: how the user's line reached it */
    origin_frame_t via;
} origin_site_t;

/* Answers both questions for a site of the stack depot: its Python frames
 * (python_describe) first, then its native frames (origin_site_frames,
 * inlined frames expanded), with kind its alloc_kind_t. Call between
 * symbolize_begin and symbolize_end, from one thread (it uses static
 * buffers). A site without a stack gets found 0 and owner "unknown". */
void origin_site(uint32_t site, int kind, origin_site_t *out);

/* The frames after a site's origin that the rules keep too (its callers in
 * the user's own code, a recursion's repeats as one), outermost last: up to max into out, as origin_site
 * orders frames. Returns how many. The same conditions as origin_site; the
 * strings live as long as origin_site's. */
int origin_callers(uint32_t site, origin_frame_t *out, int max);

/* The origin among a site's Python frames alone (no native frame, so no
 * symbolizing): the user's frame, else the innermost installed package's.
 * Between origin_init and origin_end. Returns 0 with *out set, or -1 when
 * no Python frame qualifies. */
int origin_python_site(uint32_t site, origin_frame_t *out);

/* Releases what origin_init and the lookups allocated. Safe to call when
 * nothing was initialised. */
void origin_end(void);

#endif
