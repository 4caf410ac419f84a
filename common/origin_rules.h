/* origin_rules.h: the rules that pick a stack's origin frame (the user's
 * line) and name who owns the memory, shared by the shim and the gpuleak
 * command. The skip rules are a table of data (docs/origin-rules.md lists
 * them) that the user's globs extend; the owner rules are fixed. */
#ifndef GPULEAK_ORIGIN_RULES_H
#define GPULEAK_ORIGIN_RULES_H

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

/* Where a Python program's interpreter keeps its standard library and its
 * installed packages, as it said itself at its finish (shim/python/layout.py; the
 * report's "python_layout"): absolute folders without a trailing '/'. */
typedef struct origin_layout {
    const char *const *stdlib;    /* the standard library's folders (or zip) */
    size_t nstdlib;
    const char *const *packages;  /* folders installed packages come from */
    size_t npackages;
} origin_layout_t;

/* Builds the rule list: skip's globs (colon-separated, tried before the
 * rest; one starting with '!' keeps instead of skipping; NULL or "" for
 * none), then, when builtin is 1, the rules layout gives (NULL for none:
 * a Python file under a packages folder is a library's, torch's skipped;
 * one under a standard library folder is skipped) and the built-in table.
 * The strings are copied. Forgets every decision cached before. Without a
 * call, the built-in table alone applies. */
void origin_rules_init(const char *skip, int builtin, const origin_layout_t *layout);

/* Index of the origin frame in frames[0..count): the first frame, in the
 * order given, that the rules keep. The report passes the Python frames
 * first (innermost first), then the native frames (innermost first), so a
 * user's Python line wins over native frames. Returns -1 when every frame
 * is skipped (or count is 0). */
int origin_find(const origin_frame_t *frames, int count);

/* How many of frames[0..count) (native frames, innermost first) fold under
 * the CUDA runtime call they serve, as sanitizers fold their interceptors:
 * the leading run of frames inside cudart (libcudart.so, or nvcc's static
 * cudart: cudart::*, libcudart_static_*, __cuda*) or the driver under it
 * (libcuda.so) when the frame after it is the runtime's API entry (a
 * cuda[A-Z]* function), and that entry too when cuda_runtime.h's C++
 * wrappers over it (cudaMalloc<float>) come next, all but the outermost of
 * them; else 0. The views start a stack at the entry left, which is the
 * user's call. */
int origin_cudart_folded(const origin_frame_t *frames, int count);

/* Index of the innermost frame in frames[0..before) whose first matching
 * rule says ORIGIN_LIBRARY (an installed package), or -1. */
int origin_find_via(const origin_frame_t *frames, int before);

/* The owner of PyTorch's caching allocator's segments. */
#define ORIGIN_OWNER_CACHING "pytorch-caching-allocator"
/* The owners of JAX's (XLA's allocator's) and CuPy's pools' blocks. */
#define ORIGIN_OWNER_XLA_POOL "xla-pool"
#define ORIGIN_OWNER_CUPY_POOL "cupy-pool"

/* Who owns the memory of a site whose frames and kind (alloc_kind_t) are
 * given: "pytorch-caching-allocator", "pytorch-tensor", "xla-pool",
 * "cupy-pool", "nccl", "cublas", "cudnn", "cuda-runtime", "user", or "unknown" when count is 0 (no stack
 * was recorded). The string is static. */
const char *origin_owner(const origin_frame_t *frames, int count, int kind);

/* Whether owner (origin_owner's answer) is a library that keeps its
 * memory for the life of the process: cuBLAS's handles and workspaces
 * (PyTorch's too), cuDNN's, NCCL's communicators. Such memory live at exit
 * is the library's, not a leak. */
int origin_owner_keeps(const char *owner);

/* The built-in skip table, in the order it is tried, and its length in
 * *count; for docs/origin-rules.md's test. */
const origin_rule_t *origin_builtin_rules(size_t *count);

/* Whether the rules keep frame: it may be an origin. */
int origin_keeps(const origin_frame_t *frame);

/* Whether two frames name the same place (function, file, line, module). */
int origin_same_frame(const origin_frame_t *a, const origin_frame_t *b);

/* Releases what origin_rules_init and the lookups allocated; the next
 * question starts from the built-in table again. */
void origin_rules_end(void);

#endif
