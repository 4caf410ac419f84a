/* frames.c: frame text in LeakSanitizer's shape, a site's "origin" (the
 * frame a person should look at first) and a site's identity across runs. */
#define _GNU_SOURCE
#include "frames.h"
#include "frame_text.h"
#include "origin_rules.h"
#include "units.h"

#include <stdlib.h>
#include <string.h>

/* The same phrases as the shim's exit summary, so both texts match. */
const char *frames_site_phrase(const load_site_t *site)
{
    int k = load_kind_index(site->kind);
    return k >= 0 ? report_site_phrase(k, site->framework) : "memory";
}

/* How many of site's innermost native frames are cudart's own, folded
 * under the runtime call they serve (origin_rules.h). */
static size_t cudart_folded(const load_site_t *site)
{
    origin_frame_t frames[64];
    size_t n = site->nstack < 64 ? site->nstack : 64;
    for (size_t i = 0; i < n; i++)
        frames[i] = (origin_frame_t){ site->stack[i]->function, site->stack[i]->file,
                                      site->stack[i]->module, (int)site->stack[i]->line, 0 };
    return (size_t)origin_cudart_folded(frames, (int)n);
}

/* Prints up to limit frames (0: all), Python frames first because they name
 * the user's line while the native ones start in the allocator; with a
 * limit, cudart's own frames fold under the runtime call they serve. */
void frames_print_stack(FILE *f, const load_site_t *site, size_t limit)
{
    size_t folded = limit != 0 ? cudart_folded(site) : 0;
    size_t shown = 0, total = site->npython + site->nstack - folded;
    for (size_t i = 0; i < site->npython && (limit == 0 || shown < limit); i++, shown++)
        frame_text_python(f, (int)shown, site->python[i]->function, site->python[i]->file,
                          site->python[i]->line);
    for (size_t i = folded; i < site->nstack && (limit == 0 || shown < limit); i++, shown++) {
        const load_frame_t *fr = site->stack[i];
        frame_text_native(f, (int)shown, fr->address, fr->function, fr->file, fr->line, fr->module,
                          fr->offset);
        if (i == folded && folded > 0)
            frame_text_cudart_folded(f, folded, "--full-stacks shows them");
    }
    if (total == 0)
        fputs("    (no stack recorded)\n", f);
    else if (shown < total)
        fprintf(f, "    ... %zu more frame(s); --full-stacks shows them\n", total - shown);
}

/* One definition of the user's frame for the shim and every view: the
 * shared rules, which also know nvcc's static cudart and the CUDA
 * libraries by function name, not only by module. */
const load_frame_t *frames_innermost_user(const load_site_t *site)
{
    for (size_t i = 0; i < site->nstack; i++) {
        const load_frame_t *fr = site->stack[i];
        origin_frame_t frame = { fr->function, fr->file, fr->module, (int)fr->line, 0 };
        if (origin_keeps(&frame))
            return fr;
    }
    return site->nstack ? site->stack[0] : NULL;
}

static frame_text_place_t as_place(const load_pyframe_t *fr)
{
    return (frame_text_place_t){ fr->function, fr->file, fr->line };
}

/* One line naming where a site comes from, as every view writes it
 * (common/frame_text.h): the shim's own "origin" when the report has it
 * (its rules are richer), else the innermost Python frame, else the
 * innermost native frame outside the runtimes. Malloc'd; NULL only when
 * out of memory. */
char *frames_origin(const load_site_t *site)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return NULL;
    frame_text_place_t *callers = calloc(site->ncallers ? site->ncallers : 1, sizeof *callers);
    frame_text_origin_t o = { .found = 1, .owner = site->owner };
    const load_frame_t *native = NULL;
    if (site->origin_kind == LOAD_ORIGIN_PYTHON) {
        o.function = site->origin_python.function;
        o.file = site->origin_python.file;
        o.line = site->origin_python.line;
    } else if (site->origin_kind == LOAD_ORIGIN_NATIVE) {
        native = &site->origin_native;
    } else if (site->npython > 0) {
        o.function = site->python[0]->function;
        o.file = site->python[0]->file;
        o.line = site->python[0]->line;
    } else {
        native = frames_innermost_user(site);
    }
    if (native != NULL) {
        o.function = native->function;
        o.file = native->file;
        o.module = native->module;
        o.line = native->line;
        o.offset = native->offset;
    }
    if (site->origin_kind != LOAD_ORIGIN_NONE && callers != NULL) {
        for (size_t i = 0; i < site->ncallers; i++)
            callers[i] = as_place(&site->callers[i]);
        o.callers = callers;
        o.ncallers = site->ncallers;
    }
    frame_text_place_t via;
    if (site->origin_kind != LOAD_ORIGIN_NONE && site->has_via) {
        via = as_place(&site->via);
        o.via = &via;
    }
    if (site->framework > REPORT_FRAMEWORK_torch && site->nstack == 0 && site->npython == 0)
        o.unseen = 1 + site->framework;
    if (site->origin_kind == LOAD_ORIGIN_NONE && site->npython == 0 && native == NULL && !o.unseen)
        fprintf(f, "site %llu (no stack recorded)", (unsigned long long)site->id);
    else
        frame_text_origin(f, &o);
    fclose(f);
    free(callers);
    return text;
}

char *frames_origin_line(const load_site_t *site)
{
    char *key = NULL;
    int n;
    if (site->origin_kind == LOAD_ORIGIN_PYTHON)
        n = asprintf(&key, "%s:%ld", site->origin_python.file ? site->origin_python.file : "?",
                     site->origin_python.line);
    else if (site->origin_kind == LOAD_ORIGIN_NATIVE && site->origin_native.file != NULL)
        n = asprintf(&key, "%s:%ld", site->origin_native.file, site->origin_native.line);
    else if (site->origin_kind == LOAD_ORIGIN_NATIVE)
        n = asprintf(&key, "%s+0x%llx", site->origin_native.module ? site->origin_native.module : "?",
                     (unsigned long long)site->origin_native.offset);
    else
        n = asprintf(&key, "site %llu", (unsigned long long)site->id);
    /* A helper's leaking path is a line of its own. */
    for (size_t i = 0; n >= 0 && i < site->ncallers; i++) {
        char *longer = NULL;
        n = asprintf(&longer, "%s<%s:%ld", key, site->callers[i].file ? site->callers[i].file : "?",
                     site->callers[i].line);
        free(key);
        key = n < 0 ? NULL : longer;
    }
    return n < 0 ? NULL : key;
}

int frames_id(const load_site_t *site, frames_id_t *id)
{
    size_t len = 0;
    FILE *f = open_memstream(&id->name, &len);
    id->nlines = site->nstack + site->npython;
    id->lines = calloc(id->nlines ? id->nlines : 1, sizeof *id->lines);
    if (f == NULL || id->lines == NULL) {
        if (f != NULL)
            fclose(f);
        frames_id_free(id);
        return -1;
    }
    fputs(site->kind, f);
    /* Control characters separate the parts, which real names do not
     * hold, so that frames "a" "bc" and "ab" "c" differ. */
    for (size_t i = 0; i < site->nstack; i++) {
        const load_frame_t *fr = site->stack[i];
        if (fr->function != NULL)
            fprintf(f, "\x1f%s", fr->function);
        else
            fprintf(f, "\x1f%s+0x%llx", frame_text_basename(fr->module), (unsigned long long)fr->offset);
        id->lines[i] = fr->line;
    }
    for (size_t i = 0; i < site->npython; i++) {
        const load_pyframe_t *fr = site->python[i];
        fprintf(f, "\x1d%s\x1e%s", fr->function, frame_text_basename(fr->file));
        id->lines[site->nstack + i] = fr->line;
    }
    if (fclose(f) != 0 || id->name == NULL) {
        frames_id_free(id);
        return -1;
    }
    return 0;
}

void frames_id_free(frames_id_t *id)
{
    free(id->name);
    free(id->lines);
    id->name = NULL;
    id->lines = NULL;
    id->nlines = 0;
}

int frames_id_cmp_lines(const frames_id_t *a, const frames_id_t *b)
{
    for (size_t i = 0; i < a->nlines && i < b->nlines; i++)
        if (a->lines[i] != b->lines[i])
            return a->lines[i] < b->lines[i] ? -1 : 1;
    return (a->nlines > b->nlines) - (a->nlines < b->nlines);
}

int frames_id_cmp(const frames_id_t *a, const frames_id_t *b)
{
    int c = strcmp(a->name, b->name);
    return c ? c : frames_id_cmp_lines(a, b);
}

void frames_print_holders(FILE *f, const load_site_t *site, const char *indent, size_t limit)
{
    char size[UNITS_SIZE_BUF], phrase[1024];
    size_t n = site->nholders < limit ? site->nholders : limit;
    for (size_t i = 0; i < n; i++) {
        const load_holder_t *h = &site->holders[i];
        report_holder_phrase(phrase, sizeof phrase, h->name, h->type, h->owner, h->file, h->graph, h->path);
        fprintf(f, "%sheld by ", indent);
        frame_text_put(f, phrase);
        fprintf(f, ": %s in %llu allocation(s)\n", units_format_size(h->bytes, size),
                (unsigned long long)h->allocations);
    }
    uint64_t more = site->holders_more + (site->nholders - n);
    if (more > 0)
        fprintf(f, "%s... and %llu more holder(s)\n", indent, (unsigned long long)more);
}
