/* composition.h: what a process's GPU memory was made of, by role, at a
 * moment the holder search walked the heap (Python's finish, the first
 * OOM, a report on request): one definition of the roles, read by the
 * shim's writer and the command's reader, and one wording for the exit
 * summary and every view.
 *
 * The parts sum to gpu_bytes, the driver memory the process held then
 * (pinned host memory aside): tensors by the role the interpreter shows
 * (shim/python/holders.py), the tensors no object was found for, PyTorch's
 * cache (its reserved segments' bytes that no live tensor used) and what
 * lies outside PyTorch's allocator (CUDA libraries' own allocations, the
 * program's direct driver calls, other frameworks' memory). */
#ifndef GPULEAK_COMPOSITION_H
#define GPULEAK_COMPOSITION_H

#include <stdint.h>
#include <stdio.h>

/* X(id, holders.py's word or NULL, phrase): the roles in the order every
 * view lists them. The report spells a role by its id. */
#define COMPOSITION_ROLES(X) \
    X(parameters, "parameter", "parameters") \
    X(gradients, "gradient", "gradients") \
    X(untrained_gradients, "untrained", "gradients no optimizer steps") \
    X(optimizer_state, "optimizer", "optimizer state") \
    X(buffers, "buffer", "buffers") \
    X(saved_for_backward, "saved", "saved for backward") \
    X(activations, NULL, "made in a module's forward") \
    X(other_tensors, "held", "other tensors") \
    X(unnamed_tensors, NULL, "tensors no object was found for") \
    X(torch_cache, NULL, "PyTorch's cache") \
    X(outside_torch, NULL, "outside PyTorch's allocator")

typedef enum composition_role {
#define COMPOSITION_ID(id, word, phrase) COMPOSITION_##id,
    COMPOSITION_ROLES(COMPOSITION_ID)
#undef COMPOSITION_ID
    COMPOSITION_ROLE_COUNT
} composition_role_t;

/* The largest owners listed for a role. */
#define COMPOSITION_TOP 3

/* An owner of a role's bytes: the outermost module of parameters, an
 * optimizer, a graph's root, a holder. name points into the report or
 * the search's answer. */
typedef struct composition_part {
    const char *name;
    uint64_t bytes;
} composition_part_t;

typedef struct composition {
    uint64_t gpu_bytes;  /* the sum of bytes[]; 0: nothing known */
    unsigned frameworks; /* 1 << each framework whose arrays the tensors are
                            (report_format.h; 0: PyTorch's): names the cache */
    int inferred;        /* 1: the tensors' roles are those their calls imply
                            (composition_role_of_call), no walk of the heap */
    uint64_t bytes[COMPOSITION_ROLE_COUNT];
    composition_part_t by[COMPOSITION_ROLE_COUNT][COMPOSITION_TOP];  /* largest first */
} composition_t;

/* The role's report name ("parameters"), and its phrase for people. */
const char *composition_role_name(composition_role_t role);
const char *composition_role_phrase(composition_role_t role);

/* The role's phrase where the tensors are the arrays of frameworks (a
 * mask of 1 << enum report_framework): the cache is "JAX's pool" when JAX's
 * alone, and what lies outside is outside the frameworks' pools. */
const char *composition_role_phrase_for(composition_role_t role, unsigned frameworks);

/* The role holders.py's word names ("parameter" -> parameters), or -1. */
int composition_role_of_word(const char *word);

/* The role a report's name spells, or -1. */
int composition_role_of_name(const char *name);

/* Adds bytes of role owned by name (NULL: no owner to list) into c, keeping
 * each role's COMPOSITION_TOP largest owners. Add each owner's bytes of a
 * role in one call: a second call lists it twice. */
void composition_add(composition_t *c, composition_role_t role, const char *name, uint64_t bytes);

/* Whether c says anything about PyTorch (a tensor or its cache seen): the
 * summary line is printed only then, a program without PyTorch's tensors
 * would read one part. */
int composition_has_tensors(const composition_t *c);

/* The role a tensor most likely has, from the Python frames of the call
 * that made it (functions[i] in files[i], innermost first), PyTorch's own
 * files telling: an optimizer's (torch/optim/): optimizer_state; autograd's
 * backward (torch/autograd/): gradients; a module moved or loaded
 * (module.py's _apply, to, cuda, load_state_dict) or built (an __init__
 * or reset_parameters under torch/nn/): parameters; a module's call
 * (module.py's _call_impl): activations; the innermost of those decides.
 * No frame at all in a Python process (python): a native thread's,
 * PyTorch's autograd engine in backward: gradients. Else other_tensors.
 * For a moment no heap walk saw (the peak): the report says it is
 * inferred. */
composition_role_t composition_role_of_call(const char *const *functions, const char *const *files,
                                            size_t n, int python);

/* The moments a composition is of, for its line's lead. */
typedef enum composition_moment {
    COMPOSITION_AT_FINISH,   /* Python's finish: "GPU memory at Python's finish" */
    COMPOSITION_AT_OOM,      /* the first OOM: "GPU memory at the failure" */
    COMPOSITION_AT_PEAK,     /* the tensors' peak */
    COMPOSITION_AT_REPORT,   /* a report on request or a snapshot, the program running */
} composition_moment_t;

/* Writes, indented, one line: "GPU memory at Python's finish, 1.2 GiB:
 * parameters 400 MiB (model), ...", the roles with bytes, largest owner in
 * parentheses; an inferred composition says so ("by the calls that made
 * them"). Nothing when !composition_has_tensors(c). */
void composition_print(FILE *f, int indent, composition_moment_t moment, const composition_t *c);

#endif
