/* diagnosis.c: each cause's sentence and cure (docs/diagnosis.md). */
#include "diagnosis.h"
#include "report_format.h"
#include "composition.h"
#include "units.h"
#include "frame_text.h"

#include <string.h>

int diagnosis_oom(FILE *f, int indent, const diagnosis_oom_t *oom)
{
    if (oom->reserved == 0)
        return 0;
    char reserved[UNITS_SIZE_BUF], allocated[UNITS_SIZE_BUF], unused[UNITS_SIZE_BUF], asked[UNITS_SIZE_BUF];
    uint64_t free_bytes = oom->reserved > oom->allocated ? oom->reserved - oom->allocated : 0;
    units_format_size(oom->reserved, reserved);
    units_format_size(oom->allocated, allocated);
    units_format_size(free_bytes, unused);
    units_format_size(oom->asked, asked);
    if (oom->framework > REPORT_FRAMEWORK_torch) {
        fprintf(f, "%*s%s held %s, %s of it in arrays and %s unused.\n", indent, "",
                report_framework_text(oom->framework, REPORT_FRAMEWORK_CACHE), reserved, allocated,
                unused);
        return 0;
    }
    fprintf(f, "%*sPyTorch had %s reserved, %s of it in tensors and %s cached but unused.\n", indent, "",
            reserved, allocated, unused);
    if (free_bytes < oom->asked || oom->asked == 0)
        return 0;
    fprintf(f, "%*sCause: fragmentation. The cache held more unused memory than the %s asked, but in no\n"
               "%*sblock large enough for it.\n"
               "%*sCure: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the cache's segments then grow\n"
               "%*sin place instead of leaving gaps); torch.cuda.empty_cache() between phases of different\n"
               "%*ssizes gives the cache back to the driver.\n",
            indent, "", asked, indent, "", indent, "", indent, "", indent, "");
    return 1;
}

/* Whether a graph's owner is the running step's own: a frame's local or
 * the exception in flight. */
static int owned_by_the_step(const char *name)
{
    return strstr(name, "() local ") != NULL || strncmp(name, "the exception", 13) == 0;
}

/* The kept-graph cause for holder's bytes saved for backward, and its cure
 * (cure: 0 when a cause before gave it). */
static void graph_cause(FILE *f, int indent, const char *holder, uint64_t bytes, int cure)
{
    char size[UNITS_SIZE_BUF];
    fprintf(f, "%*sCause: %s keeps the autograd graph it was computed from: %s of tensors saved\n"
               "%*sfor backward that no backward() will free (a loss summed or kept across steps,\n"
               "%*sor evaluation outside torch.no_grad()).\n",
            indent, "", holder, units_format_size(bytes, size), indent, "", indent, "");
    if (cure)
        fprintf(f, "%*sCure: keep a number (loss.item()) or a tensor without its graph (.detach())\n"
                   "%*swhere it is summed or stored; evaluate and generate under torch.no_grad()\n"
                   "%*sor torch.inference_mode().\n",
                indent, "", indent, "", indent, "");
}

/* A graph kept: each owner of memory saved for backward past 1% of c. */
static int graphs(FILE *f, int indent, const composition_t *c, int running)
{
    const composition_part_t *by = c->by[COMPOSITION_saved_for_backward];
    int named = 0;
    for (int i = 0; i < COMPOSITION_TOP && by[i].name != NULL; i++) {
        if (by[i].bytes == 0 || by[i].bytes < c->gpu_bytes / 100
            || (running && owned_by_the_step(by[i].name)))
            continue;
        graph_cause(f, indent, by[i].name, by[i].bytes, named++ == 0);
    }
    return named;
}

int diagnosis_holder(FILE *f, int indent, const char *holder, int graph, int role, uint64_t bytes,
                     int grew, int framework)
{
    if (graph) {
        graph_cause(f, indent, holder, bytes, 1);
        return 1;
    }
    return grew ? diagnosis_kept(f, indent, holder, graph, role, bytes, framework) : 0;
}

int diagnosis_kept(FILE *f, int indent, const char *holder, int graph, int role, uint64_t grew,
                   int framework)
{
    if (graph || role != COMPOSITION_other_tensors || strstr(holder, "[...]") == NULL)
        return 0;
    char size[UNITS_SIZE_BUF];
    int torch = framework < 0 || framework == REPORT_FRAMEWORK_torch;
    fprintf(f, "%*sCause: %s keeps %s from step after step: this line grew %s during the run.\n"
               "%*sCure: keep what later steps need %s, clear\n"
               "%*sit once used, or bound it (collections.deque(maxlen=N)).\n",
            indent, "", holder, torch ? "tensors" : "arrays", units_format_size(grew, size),
            indent, "", report_framework_text(framework, REPORT_FRAMEWORK_TO_HOST), indent, "");
    return 1;
}

/* Whether a and b are the same size within 2%: a copy of a model's weights
 * in a checkpoint also holds its buffers. */
static int about_equal(uint64_t a, uint64_t b)
{
    uint64_t larger = a > b ? a : b, diff = a > b ? a - b : b - a;
    return diff <= larger / 50;
}

/* A second copy of the weights: two modules, or a module and a name. */
static int copies(FILE *f, int indent, const composition_t *c)
{
    const composition_part_t *modules = c->by[COMPOSITION_parameters];
    const composition_part_t *others = c->by[COMPOSITION_other_tensors];
    char size[UNITS_SIZE_BUF];
    int named = 0;
    unsigned others_named = 0;  /* a checkpoint as large as two copies is one finding */
    for (int i = 0; i < COMPOSITION_TOP && modules[i].name != NULL; i++) {
        if (modules[i].bytes == 0 || modules[i].bytes < c->gpu_bytes / 100)
            continue;
        units_format_size(modules[i].bytes, size);
        for (int j = i + 1; j < COMPOSITION_TOP && modules[j].name != NULL; j++)
            if (about_equal(modules[i].bytes, modules[j].bytes)) {
                fprintf(f, "%*sCause: two copies of the same weights: %s and %s each hold %s of parameters\n"
                           "%*s(a copy.deepcopy kept, a model loaded twice).\n",
                        indent, "", modules[i].name, modules[j].name, size, indent, "");
                named++;
            }
        for (int j = 0; j < COMPOSITION_TOP && others[j].name != NULL; j++)
            if (!(others_named & 1u << j) && about_equal(modules[i].bytes, others[j].bytes)) {
                others_named |= 1u << j;
                fprintf(f, "%*sCause: %s holds %s of tensors, as much as %s's parameters: a state_dict\n"
                           "%*sor a checkpoint kept on the GPU.\n",
                        indent, "", others[j].name, units_format_size(others[j].bytes, size), modules[i].name,
                        indent, "");
                named++;
            }
    }
    if (named > 0)
        fprintf(f, "%*sCure: where a copy is not needed on the GPU, del it once used, or load and keep it on\n"
                   "%*sthe CPU (torch.load(..., map_location=\"cpu\"), .cpu()).\n",
                indent, "", indent, "");
    return named;
}

/* Gradients of parameters no optimizer steps, past 1% of c. */
static int untrained(FILE *f, int indent, const composition_t *c)
{
    uint64_t bytes = c->bytes[COMPOSITION_untrained_gradients];
    const char *owner = c->by[COMPOSITION_untrained_gradients][0].name;
    if (bytes == 0 || bytes < c->gpu_bytes / 100)
        return 0;
    char size[UNITS_SIZE_BUF];
    fprintf(f, "%*sCause: %s of gradients belong to parameters%s%s that no optimizer steps: backward\n"
               "%*scomputes and keeps them for nothing.\n"
               "%*sCure: freeze what does not train (module.requires_grad_(False) or p.requires_grad_(False)),\n"
               "%*sor give those parameters to the optimizer.\n",
            indent, "", units_format_size(bytes, size), owner != NULL ? " of " : "", owner != NULL ? owner : "",
            indent, "", indent, "", indent, "");
    return 1;
}

int diagnosis_composition(FILE *f, int indent, composition_moment_t moment, const composition_t *c)
{
    composition_print(f, indent, moment, c);
    int running = moment != COMPOSITION_AT_FINISH;
    return graphs(f, indent, c, running) + copies(f, indent, c) + untrained(f, indent, c);
}

void diagnosis_search(FILE *f, int indent, uint64_t objects, double seconds, const char *ended,
                      uint64_t named_bytes, uint64_t held_bytes)
{
    if (ended != NULL && strcmp(ended, REPORT_SEARCH_AUDIT_HOOKS) == 0) {
        fprintf(f, "%*sThe search for holders did not run: the program has audit hooks "
                   "(sys.addaudithook), which would have seen its work, and gpuleak runs none of "
                   "the program's code.\n", indent, "");
        return;
    }
    char a[UNITS_SIZE_BUF], b[UNITS_SIZE_BUF];
    uint64_t named = named_bytes < held_bytes ? named_bytes : held_bytes;
    fprintf(f, "%*sThe search for holders looked at %llu object(s) in %.3f s and ended ", indent, "",
            (unsigned long long)objects, seconds);
    frame_text_put(f, ended != NULL ? ended : "?");
    fprintf(f, "; it named holders for %s of the %s held (%.0f%%).\n", units_format_size(named, a),
            units_format_size(held_bytes, b),
            held_bytes ? 100.0 * (double)named / (double)held_bytes : 100.0);
}

int diagnosis_peak(FILE *f, int indent, const composition_t *c)
{
    uint64_t activations = c->bytes[COMPOSITION_activations];
    uint64_t optimizer = c->bytes[COMPOSITION_optimizer_state];
    uint64_t weights = c->bytes[COMPOSITION_parameters] + c->bytes[COMPOSITION_gradients]
                     + c->bytes[COMPOSITION_untrained_gradients];
    uint64_t largest = activations > optimizer ? activations : optimizer;
    largest = largest > weights ? largest : weights;
    if (largest == 0 || largest < c->gpu_bytes / 100 * 40)
        return 0;
    char size[UNITS_SIZE_BUF];
    units_format_size(largest, size);
    if (largest == activations)
        fprintf(f, "%*sLever: tensors made in modules' forward were %s of the peak: a smaller batch or\n"
                   "%*ssequence, activation checkpointing (torch.utils.checkpoint) or mixed precision\n"
                   "%*s(torch.autocast) make them smaller.\n", indent, "", size, indent, "", indent, "");
    else if (largest == optimizer)
        fprintf(f, "%*sLever: the optimizer's state was %s of the peak: an optimizer that keeps less\n"
                   "%*s(SGD, Adafactor, an 8-bit Adam) or its state sharded across ranks (ZeRO, FSDP).\n",
                indent, "", size, indent, "");
    else
        fprintf(f, "%*sLever: the weights and their gradients were %s of the peak: bf16 weights, frozen\n"
                   "%*slayers (requires_grad_(False)), or sharding across ranks (FSDP).\n",
                indent, "", size, indent, "");
    return 1;
}
