/* origin.h: which frame of a site is "the user's line", and who owns the
 * memory (the user, NCCL, cuBLAS, PyTorch's allocators, the CUDA runtime).
 *
 * Decided at report time from frames the report has already symbolized and
 * described, never on the allocation path. The skip rules are a table of
 * data (docs/origin-rules.md lists them), which GPULEAK_ORIGIN_SKIP extends
 * and GPULEAK_ORIGIN_RULES=none empties; the owner rules are fixed. */
#ifndef GPULEAK_ORIGIN_H
#define GPULEAK_ORIGIN_H

#include <stddef.h>
#include <stdint.h>

/* One frame as the rules see it: Python frames (is_python 1, module NULL)
 * and native frames alike. Any string may be NULL when unknown; line is 0
 * when unknown. The strings are only read during the call. */
typedef struct origin_frame {
    const char *function;  /* demangled native name, or Python qualified name */
    const char *file;      /* source file (DWARF for native frames) */
    const char *module;    /* ELF object path; NULL for Python frames */
    int line;
    int is_python;
} origin_frame_t;

/* Which string of a frame a rule's glob is matched against. */
typedef enum origin_what {
    ORIGIN_MODULE,
    ORIGIN_FUNCTION,
    ORIGIN_FILE,
    ORIGIN_ANY,      /* module, function or file: what GPULEAK_ORIGIN_SKIP gives */
} origin_what_t;

/* Which frames a rule applies to. */
typedef enum origin_scope {
    ORIGIN_NATIVE,
    ORIGIN_PYTHON,
    ORIGIN_BOTH,
} origin_scope_t;

typedef enum origin_action {
    ORIGIN_SKIP,     /* plumbing: not the origin */
    ORIGIN_KEEP,     /* stop looking at later rules: this frame may be the origin */
    ORIGIN_LIBRARY,  /* an installed package: not the origin, but the innermost
                        such frame is kept as the site's "via" */
} origin_action_t;

/* One rule. Rules are tried in order and the first whose glob matches its
 * string of the frame (fnmatch, flags 0, so * crosses '/') decides; a frame
 * no rule matches is kept. */
typedef struct origin_rule {
    origin_what_t what;
    origin_scope_t scope;
    const char *glob;
    origin_action_t action;
} origin_rule_t;

/* Reads GPULEAK_ORIGIN_SKIP (extra globs, colon-separated, tried before the
 * built-in table; a glob starting with '!' keeps instead of skipping) and
 * GPULEAK_ORIGIN_RULES ("none" drops the built-in table; unset, "" or
 * "default" keeps it; anything else gets one line on stderr and the
 * default). Forgets every decision cached by an earlier call. Call once per
 * report, before the first origin_find; calling it again re-reads both. */
void origin_init(void);

/* Index of the origin frame in frames[0..count): the first frame, in the
 * order given, that the rules keep. The report passes the Python frames
 * first (innermost first), then the native frames (innermost first), so a
 * user's Python line wins over native frames. Returns -1 when every frame
 * is skipped (or count is 0). */
int origin_find(const origin_frame_t *frames, int count);

/* Index of the innermost frame in frames[0..before) whose first matching
 * rule says ORIGIN_LIBRARY (an installed package), or -1. */
int origin_find_via(const origin_frame_t *frames, int before);

/* The owner of PyTorch's caching allocator's segments. */
#define ORIGIN_OWNER_CACHING "pytorch-caching-allocator"

/* Who owns the memory of a site whose frames and kind (alloc_kind_t) are
 * given: "pytorch-caching-allocator", "pytorch-tensor", "nccl", "cublas",
 * "cudnn", "cuda-runtime", "user", or "unknown" when count is 0 (no stack
 * was recorded). The string is static. */
const char *origin_owner(const origin_frame_t *frames, int count, int kind);

/* The built-in skip table, in the order it is tried, and its length in
 * *count; for docs/origin-rules.md's test. */
const origin_rule_t *origin_builtin_rules(size_t *count);

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
 * (python_describe) first, then its native frames (report_site_frames,
 * inlined frames expanded), with kind its alloc_kind_t. Call between
 * symbolize_begin and symbolize_end, from one thread (it uses static
 * buffers). A site without a stack gets found 0 and owner "unknown". */
void origin_site(uint32_t site, int kind, origin_site_t *out);

/* The frames after a site's origin that the rules keep too (its callers in
 * the user's own code, a recursion's repeats as one), outermost last: up to max into out, as origin_site
 * orders frames. Returns how many. The same conditions as origin_site; the
 * strings live as long as origin_site's. */
int origin_callers(uint32_t site, origin_frame_t *out, int max);

/* Whether two frames name the same place (function, file, line, module). */
int origin_same_frame(const origin_frame_t *a, const origin_frame_t *b);

/* Releases what origin_init and the lookups allocated. Safe to call when
 * nothing was initialised; origin_find after it initialises again. */
void origin_end(void);

#endif
