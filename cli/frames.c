/* frames.c: frame text in LeakSanitizer's shape, a site's "origin" (the
 * frame a person should look at first) and a site's identity across runs. */
#define _GNU_SOURCE
#include "frames.h"
#include "units.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

/* The file part of a path; modules are shown by basename like LSan does. */
const char *frames_basename(const char *path)
{
    if (path == NULL)
        return "?";
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The same phrases as the shim's exit summary, so both texts match. */
const char *frames_kind_phrase(const char *kind)
{
    static const char *const phrases[LOAD_KINDS] = { REPORT_KINDS(REPORT_KIND_PHRASE) };
    int k = load_kind_index(kind);
    return k >= 0 ? phrases[k] : "memory";
}

/* Writes untrusted text with control characters replaced, so a crafted
 * function name cannot move the cursor or split one line into two. */
void frames_put(FILE *f, const char *text)
{
    if (text == NULL)
        text = "??";
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, f);
}

/* "function file:line (module+0xoffset)": a native frame without its
 * address, as both the stack lines and the one-line site labels show it. */
static void put_native_place(FILE *f, const load_frame_t *fr)
{
    frames_put(f, fr->function);
    if (fr->file != NULL) {
        fputc(' ', f);
        frames_put(f, fr->file);
        if (fr->line > 0)
            fprintf(f, ":%ld", fr->line);
    }
    fputs(" (", f);
    frames_put(f, frames_basename(fr->module));
    fprintf(f, "+0x%llx)", (unsigned long long)fr->offset);
}

static void put_native(FILE *f, const load_frame_t *fr)
{
    fprintf(f, "0x%llx in ", (unsigned long long)fr->address);
    put_native_place(f, fr);
}

static void put_python(FILE *f, const load_pyframe_t *fr)
{
    frames_put(f, fr->function);
    fputs(" in ", f);
    frames_put(f, fr->file);
    fprintf(f, ":%ld (Python)", fr->line);
}

/* Prints up to limit frames (0: all), Python frames first because they name
 * the user's line while the native ones start in the allocator. */
void frames_print_stack(FILE *f, const load_site_t *site, size_t limit)
{
    size_t shown = 0, total = site->npython + site->nstack;
    for (size_t i = 0; i < site->npython && (limit == 0 || shown < limit); i++, shown++) {
        fprintf(f, "    #%zu ", shown);
        put_python(f, &site->python[i]);
        fputc('\n', f);
    }
    for (size_t i = 0; i < site->nstack && (limit == 0 || shown < limit); i++, shown++) {
        fprintf(f, "    #%zu ", shown);
        put_native(f, &site->stack[i]);
        fputc('\n', f);
    }
    if (total == 0)
        fputs("    (no stack recorded)\n", f);
    else if (shown < total)
        fprintf(f, "    ... %zu more frame(s); --full-stacks shows them\n", total - shown);
}

/* Libraries between the user's code and the driver; the origin skips them
 * because "in cudaMalloc (libcudart.so)" says nothing about who leaked. */
static int is_library_module(const char *module)
{
    static const char *const libs[] = {
        "libcuda.so*", "libcudart*", "libcublas*", "libcudnn*", "libnccl*", "libc10*",
        "libtorch*", "libc.so*", "libstdc++*", "ld-linux*", "libpython*", "python3*",
    };
    const char *base = frames_basename(module);
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
        if (fnmatch(libs[i], base, 0) == 0)
            return 1;
    return 0;
}

/* The innermost native frame outside the CUDA/C++/Python runtimes, or the
 * innermost frame when every frame is in one; NULL when there is no stack. */
const load_frame_t *frames_innermost_user(const load_site_t *site)
{
    for (size_t i = 0; i < site->nstack; i++)
        if (!is_library_module(site->stack[i].module))
            return &site->stack[i];
    return site->nstack ? &site->stack[0] : NULL;
}

/* One line naming where a site comes from: the shim's own "origin" when the
 * report has it (its rules are richer), else the innermost Python frame,
 * else the innermost native frame outside the runtimes. Malloc'd;
 * NULL only when out of memory. */
/* ", from f file.py:12": a caller or a via after an origin, the file by
 * its last component. */
static void put_short_frame(FILE *f, const char *lead, const load_pyframe_t *fr)
{
    const char *slash = fr->file ? strrchr(fr->file, '/') : NULL;
    fputs(lead, f);
    frames_put(f, fr->function);
    fputc(' ', f);
    frames_put(f, slash ? slash + 1 : fr->file);
    fprintf(f, ":%ld", fr->line);
}

char *frames_origin(const load_site_t *site)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return NULL;
    const load_frame_t *fr = frames_innermost_user(site);
    if (site->origin_kind != LOAD_ORIGIN_NONE) {
        if (site->origin_kind == LOAD_ORIGIN_PYTHON)
            put_python(f, &site->origin_python);
        else
            put_native_place(f, &site->origin_native);
        for (size_t i = 0; i < site->ncallers; i++)
            put_short_frame(f, ", from ", &site->callers[i]);
        if (site->has_via)
            put_short_frame(f, ", via ", &site->via);
        if (site->owner != NULL && strcmp(site->owner, "user") != 0) {
            fputs(" [", f);
            frames_put(f, site->owner);
            fputc(']', f);
        }
    } else if (site->npython > 0)
        put_python(f, &site->python[0]);
    else if (fr != NULL)
        put_native_place(f, fr);
    else
        fprintf(f, "site %llu (no stack recorded)", (unsigned long long)site->id);
    fclose(f);
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
        const load_frame_t *fr = &site->stack[i];
        if (fr->function != NULL)
            fprintf(f, "\x1f%s", fr->function);
        else
            fprintf(f, "\x1f%s+0x%llx", frames_basename(fr->module), (unsigned long long)fr->offset);
        id->lines[i] = fr->line;
    }
    for (size_t i = 0; i < site->npython; i++) {
        const load_pyframe_t *fr = &site->python[i];
        fprintf(f, "\x1d%s\x1e%s", fr->function, frames_basename(fr->file));
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
        report_holder_phrase(phrase, sizeof phrase, h->name, h->type, h->owner, h->file, h->graph);
        fprintf(f, "%sheld by ", indent);
        frames_put(f, phrase);
        fprintf(f, ": %s in %llu allocation(s)\n", units_format_size(h->bytes, size),
                (unsigned long long)h->allocations);
    }
    uint64_t more = site->holders_more + (site->nholders - n);
    if (more > 0)
        fprintf(f, "%s... and %llu more holder(s)\n", indent, (unsigned long long)more);
}
