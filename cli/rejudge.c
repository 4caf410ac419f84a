#include "rejudge.h"
#include "origin_rules.h"

#include <stdlib.h>

/* In the order rejudge_options reads: "none" drops the built-in table. */
const char *const rejudge_rule_choices[] = { "none", "default", NULL };

/* The rules the options asked for, which every report's re-judge builds
 * with that report's own layout. */
static const char *skip_globs;
static int builtin = 1;

bool rejudge_options(const opt_value_t *v)
{
    const opt_value_t *skip = &v[REJUDGE_OPT_SKIP], *rules = &v[REJUDGE_OPT_RULES];
    if (!skip->set && !rules->set)
        return false;
    skip_globs = skip->text;
    builtin = !rules->set || rules->choice == 1;
    return true;
}

static load_pyframe_t as_pyframe(const origin_frame_t *fr)
{
    return (load_pyframe_t){ fr->function, fr->file, fr->line };
}

/* One site, frames as the shim orders them: Python first, then native,
 * both innermost first. The callers shown before (a helper's path) are
 * kept in number, taken again after the new origin. */
static void rejudge_site(load_site_t *s)
{
    size_t n = s->npython + s->nstack;
    origin_frame_t *fr = n ? malloc(n * sizeof *fr) : NULL;
    if (fr == NULL)
        return;
    for (size_t i = 0; i < s->npython; i++)
        fr[i] = (origin_frame_t){ s->python[i]->function, s->python[i]->file, NULL,
                                  (int)s->python[i]->line, 1 };
    for (size_t i = 0; i < s->nstack; i++)
        fr[s->npython + i] = (origin_frame_t){ s->stack[i]->function, s->stack[i]->file,
                                               s->stack[i]->module, (int)s->stack[i]->line, 0 };
    int count = (int)n, library = 0;
    int o = origin_find(fr, count);
    if (o < 0) {
        o = origin_find_via(fr, count);
        library = 1;
    }
    s->has_via = false;
    if (o < 0) {
        s->origin_kind = LOAD_ORIGIN_NONE;
        s->ncallers = 0;
        free(fr);
        return;
    }
    if ((size_t)o < s->npython) {
        s->origin_kind = LOAD_ORIGIN_PYTHON;
        s->origin_python = as_pyframe(&fr[o]);
    } else {
        s->origin_kind = LOAD_ORIGIN_NATIVE;
        s->origin_native = *s->stack[(size_t)o - s->npython];
    }
    /* How the origin reached the allocation, through an installed package:
     * the view names only a Python one. */
    if (!library && (size_t)o < s->npython) {
        int via = origin_find_via(fr, o);
        if (via >= 0) {
            s->has_via = true;
            s->via = as_pyframe(&fr[via]);
        }
    }
    size_t wanted = s->ncallers;
    s->ncallers = 0;
    int last = -1;
    for (int i = o + 1; i < count && s->ncallers < wanted; i++) {
        if (fr[i].is_python != fr[o].is_python)
            break;
        /* A recursion's repeated frame is one caller, as the shim has it. */
        if (origin_keeps(&fr[i]) && (last < 0 || !origin_same_frame(&fr[last], &fr[i]))) {
            s->callers[s->ncallers++] = as_pyframe(&fr[i]);
            last = i;
        }
    }
    free(fr);
}

static void rejudge_list(load_list_t *list)
{
    for (size_t i = 0; i < list->n; i++)
        rejudge_site(&list->v[i]);
}

void rejudge_report(load_report_t *r)
{
    origin_rules_init(skip_globs, builtin, r->has_layout ? &r->layout : NULL);
    rejudge_list(&r->leaks);
    rejudge_list(&r->kept);
    rejudge_list(&r->reachable);
    rejudge_list(&r->teardown);
    rejudge_list(&r->failures);
    rejudge_list(&r->sites);
    rejudge_list(&r->held);
    rejudge_list(&r->growth);
    rejudge_list(&r->peak_sites);
    if (r->has_oom) {
        rejudge_site(&r->oom.site);
        rejudge_list(&r->oom.holders);
    }
}
