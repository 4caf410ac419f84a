/* origin.c: a recorded site's origin frame and owner, by the shared rules
 * (common/origin_rules.h) with the user's GPULEAK_ORIGIN_SKIP and
 * GPULEAK_ORIGIN_RULES, and the interpreter's layout once Python has said
 * it (pylayout.h). Runs at report time, single-threaded. */
#define _GNU_SOURCE
#include "origin.h"
#include "config.h"
#include "log.h"
#include "pylayout.h"
#include "python.h"
#include "symbolize.h"
#include "stacks.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static const origin_layout_t *judged_by;  /* the layout origin_init took */

void origin_init(void)
{
    /* Read once: the reporter's thread may write while Python finishes. */
    judged_by = pylayout_get();
    origin_rules_init(config.origin_skip, config.origin_rules != CONFIG_RULES_NONE, judged_by);
}

const origin_layout_t *origin_layout(void)
{
    return judged_by;
}

void origin_end(void)
{
    origin_rules_end();
}

/* Native frames one site may expand to (inlined frames included), as
 * report_json.c allows. */
#define SITE_NATIVE_MAX 512

int origin_site_frames(uint32_t site, symbolized_frame_t *out, int max)
{
    const stack_record_t *stack = stacks_get(site);
    if (stack == NULL)
        return 0;
    int n = 0;
    for (int i = 0; i < stack->native_count && n < max; i++)
        n += symbolize_address((uintptr_t)stack->frames[i], out + n, max - n);
    return n;
}

/* Builds the site's frames the way the report shows them (Python first,
 * then native, both innermost first) and asks both questions. The buffers
 * are static: 100k sites would otherwise put 40 KiB on the stack per call
 * for nothing, and the report is single-threaded. */
static symbolized_frame_t native[SITE_NATIVE_MAX];
static origin_frame_t frames[STACKS_MAX_FRAMES + SITE_NATIVE_MAX];
static int frame_native[STACKS_MAX_FRAMES + SITE_NATIVE_MAX];

/* Fills frames (and frame_native) with the site's frames as the report
 * shows them; returns how many. */
/* The site's Python frames, innermost first, into out (room for
 * STACKS_MAX_FRAMES); returns how many. */
static int python_frames(uint32_t site, origin_frame_t *out)
{
    int n = 0;
    const stack_record_t *stack = stacks_get(site);
    for (int i = 0; stack != NULL && i < stack->python_count && n < STACKS_MAX_FRAMES; i++) {
        origin_frame_t *fr = &out[n];
        if (python_describe(stack->frames[stack->native_count + i], &fr->function, &fr->file,
                            &fr->line) != 0)
            continue;
        fr->module = NULL;
        fr->is_python = 1;
        n++;
    }
    return n;
}

static int site_frames(uint32_t site)
{
    int n = python_frames(site, frames);
    for (int i = 0; i < n; i++)
        frame_native[i] = -1;
    int native_count = origin_site_frames(site, native, SITE_NATIVE_MAX);
    for (int i = 0; i < native_count; i++) {
        frames[n] = (origin_frame_t){ native[i].function, native[i].file, native[i].module,
                                      native[i].line, 0 };
        frame_native[n++] = i;
    }
    return n;
}

int origin_python_site(uint32_t site, origin_frame_t *out)
{
    origin_frame_t python[STACKS_MAX_FRAMES];
    int n = python_frames(site, python);
    int o = origin_find(python, n);
    if (o < 0)
        o = origin_find_via(python, n);
    if (o >= 0)
        *out = python[o];
    return o >= 0 ? 0 : -1;
}

void origin_site(uint32_t site, int kind, origin_site_t *out)
{
    memset(out, 0, sizeof *out);
    int n = site_frames(site);
    out->owner = origin_owner(frames, n, kind);
    int o = origin_find(frames, n);
    if (o < 0) {
        /* No frame of the program's own: an installed package's innermost
         * frame says more than none. */
        o = origin_find_via(frames, n);
        if (o < 0)
            return;
        out->library = 1;
    }
    out->found = 1;
    out->frame = frames[o];
    if (frame_native[o] >= 0) {
        out->address = native[frame_native[o]].address;
        out->offset = native[frame_native[o]].offset;
    }
    if (out->library)
        return;
    /* Between the allocation and the origin: frames of the origin's own
     * kind (the Python frames come first, whatever the origin is). */
    int first = 0;
    while (first < o && frames[first].is_python != frames[o].is_python)
        first++;
    int via = origin_find_via(frames + first, o - first);
    if (via >= 0) {
        out->has_via = 1;
        out->via = frames[first + via];
    }
}

int origin_callers(uint32_t site, origin_frame_t *out, int max)
{
    int n = site_frames(site);
    int o = origin_find(frames, n), got = 0;
    for (int i = o + 1; o >= 0 && i < n && got < max; i++) {
        if (frames[i].is_python != frames[o].is_python)
            break;  /* a Python origin's callers are Python frames */
        /* A recursion's repeated frame is one caller: depth is no place. */
        if (origin_keeps(&frames[i]) && (got == 0 || !origin_same_frame(&out[got - 1], &frames[i])))
            out[got++] = frames[i];
    }
    return got;
}

