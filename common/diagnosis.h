/* diagnosis.h: a finding's cause and its cure, in one wording for the exit
 * summary and every view of the command, said only where the report holds
 * the evidence for it (docs/diagnosis.md lists each cause with the
 * evidence it needs); otherwise the views give the facts alone. */
#ifndef GPULEAK_DIAGNOSIS_H
#define GPULEAK_DIAGNOSIS_H

#include "composition.h"

#include <stdint.h>
#include <stdio.h>

/* What a framework's pool held at its own out-of-memory failure. */
typedef struct diagnosis_oom {
    uint64_t asked;      /* bytes the refused allocation asked for */
    uint64_t allocated;  /* bytes in live tensors then */
    uint64_t reserved;   /* bytes of its cached segments then (0: not known) */
    int framework;       /* whose pool (report_format.h; -1: PyTorch's) */
} diagnosis_oom_t;

/* Writes, indented by indent spaces, what the framework's reserved memory
 * was made of at its OOM and, where the facts show it, the cause and the
 * cure: fragmentation of PyTorch's cache when it held more unused bytes
 * than were asked (the cure is PyTorch's). Nothing when reserved is 0
 * (not known: an older report, a driver's OOM). Returns 1 when it named a
 * cause, else 0. */
int diagnosis_oom(FILE *f, int indent, const diagnosis_oom_t *oom);

/* Writes, indented, the composition c of moment (composition_print's
 * line), then every cause it holds the evidence for (docs/diagnosis.md),
 * each with its cure:
 * - an autograd graph kept: memory saved for backward owned by one name,
 *   at least 1% of the GPU memory then (but while the program ran, at an
 *   OOM or a report on request, not for a frame's local or the exception
 *   being handled: the step under way was using its graph);
 * - a second copy of the weights: two outermost modules with parameters of
 *   the same size within 2%, or a name holding other tensors that weigh
 *   what a module's parameters do (a checkpoint kept on the GPU), each at
 *   least 1%;
 * - gradients no optimizer steps, at least 1%.
 * Returns how many causes it named. */
int diagnosis_composition(FILE *f, int indent, composition_moment_t moment, const composition_t *c);

/* Writes, indented, how the search for holders went: the objects it looked
 * at, its seconds and how it ended (ended as a report has it, written as
 * frame_text_put writes text it did not make), and what of held_bytes it
 * named; or, where the program's audit hooks kept it from running, that. */
void diagnosis_search(FILE *f, int indent, uint64_t objects, double seconds, const char *ended,
                      uint64_t named_bytes, uint64_t held_bytes);

/* Writes, indented, what dominated the peak in c (the tensors at their
 * peak by the role their calls imply, composition_role_of_call) and the
 * usual levers on it: the forward's activations (a smaller batch,
 * activation checkpointing, mixed precision), the optimizer's state, or
 * the weights and their gradients, when that part is the largest and at
 * least 40% of the peak. Meant for a run that ran out of memory: a clean
 * run gets no advice. Returns 1 when it gave a lever. */
int diagnosis_peak(FILE *f, int indent, const composition_t *c);

/* Writes, indented, the cause one holder of a finding's memory shows by
 * itself: its autograd graph kept (graph: bytes it holds saved for
 * backward), or, for memory that grew (grew), tensors kept across steps
 * (diagnosis_kept, worded for framework). For a view that has the
 * holders but no composition (the pytest plugin, by way of the shim's
 * gpuleak_diagnosis). Returns 1 when it named a cause. */
int diagnosis_holder(FILE *f, int indent, const char *holder, int graph, int role, uint64_t bytes,
                     int grew, int framework);

/* Writes, indented, the cause and cure of a line that grew when the
 * largest holder of its memory is a container (its name has "[...]": a
 * list, a dict) that keeps tensors themselves, not their graphs (role:
 * composition.h's, other_tensors): outputs or batches kept across steps.
 * grew: the bytes the line gained; framework: whose arrays they are
 * (report_format.h; -1: PyTorch's), for the cure's words. Returns 1 when
 * it named the cause. */
int diagnosis_kept(FILE *f, int indent, const char *holder, int graph, int role, uint64_t grew,
                   int framework);

#endif
