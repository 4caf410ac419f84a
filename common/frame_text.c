#include "frame_text.h"
#include "report_format.h"

#include <string.h>

void frame_text_put(FILE *f, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)(text ? text : "??"); *p; p++)
        fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, f);
}

void frame_text_error_line(const char *message)
{
    fputs("gpuleak: ", stderr);
    frame_text_put(stderr, message ? message : "out of memory");
    fputc('\n', stderr);
}

const char *frame_text_basename(const char *path)
{
    if (path == NULL)
        return "?";
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

void frame_text_native(FILE *f, int index, uint64_t address, const char *function,
                       const char *file, long line, const char *module, uint64_t offset)
{
    fprintf(f, "    #%d 0x%llx in ", index, (unsigned long long)address);
    frame_text_put(f, function);
    if (file != NULL) {
        fputc(' ', f);
        frame_text_put(f, file);
        if (line > 0)
            fprintf(f, ":%ld", line);
    }
    fputs(" (", f);
    frame_text_put(f, frame_text_basename(module));
    fprintf(f, "+0x%llx)\n", (unsigned long long)offset);
}

void frame_text_cudart_folded(FILE *f, size_t folded, const char *where)
{
    fprintf(f, "        (%zu frame(s) inside the CUDA runtime folded under it; %s)\n", folded, where);
}

void frame_text_python(FILE *f, int index, const char *function, const char *file, long line)
{
    fprintf(f, "    #%d ", index);
    frame_text_put(f, function);
    fputs(" in ", f);
    frame_text_put(f, file);
    fprintf(f, ":%ld (Python)\n", line);
}

/* ", from step train.py:80": a frame after the origin, its file short. */
static void put_place(FILE *f, const char *lead, const frame_text_place_t *p)
{
    fputs(lead, f);
    if (p->function != NULL) {
        frame_text_put(f, p->function);
        fputc(' ', f);
    }
    frame_text_put(f, frame_text_basename(p->file));
    fprintf(f, ":%ld", p->line);
}

void frame_text_origin(FILE *f, const frame_text_origin_t *o)
{
    if (o->unseen == 1 + REPORT_FRAMEWORK_jax) {
        fputs("no call gpuleak saw (found in a snapshot of JAX's pool, without a traceback)", f);
        return;
    }
    if (o->unseen > 0) {
        fprintf(f, "no call gpuleak saw (found in a snapshot of %s: made on a thread "
                   "without its hook, or before the hook was in)",
                report_framework_text(o->unseen - 1, REPORT_FRAMEWORK_CACHE));
        return;
    }
    if (!o->found) {
        fputs("no frame outside the CUDA, PyTorch and runtime layers", f);
    } else {
        if (o->file != NULL) {
            frame_text_put(f, o->file);
            if (o->line > 0)
                fprintf(f, ":%ld", o->line);
        } else {
            frame_text_put(f, frame_text_basename(o->module));
            fprintf(f, "+0x%llx", (unsigned long long)o->offset);
        }
        if (o->function != NULL) {
            fputs(" in ", f);
            frame_text_put(f, o->function);
        }
        for (size_t i = 0; i < o->ncallers; i++)
            put_place(f, ", from ", &o->callers[i]);
        if (o->via != NULL)
            put_place(f, ", via ", o->via);
        if (o->library)
            fputs(" [an installed package; no frame of the program's own]", f);
    }
    if (o->owner != NULL && strcmp(o->owner, "user") != 0) {
        fputs(" (owner: ", f);
        frame_text_put(f, o->owner);
        fputc(')', f);
    }
}
