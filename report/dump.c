/* dump.c: a loaded report written back out, whole or in a page's parts. */
#define _GNU_SOURCE
#include "dump.h"
#include "demangle.h"
#include "json_split.h"
#include "report_keys.h"
#include "units.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where a head or a rest is cut: NULL for the whole document. */
typedef struct {
    size_t max_sites;
    const uint64_t *kept; /* sorted: the sites whose stacks the head keeps */
    size_t nkept;
    size_t nkept_stacks;  /* of them, those with an entry in the stack table */
    int summary;          /* a head without the members summary_leaves_out */
} cut_t;

/* The lists of sites a head cuts, by their key in the document (nested:
 * its "sites" one level down), and where the load keeps each. growth, peak
 * and held_at_finish are read as {..., "sites": [...]} or a bare list
 * (load.c). */
static const struct {
    enum report_key key;
    int nested;
    size_t offset;
} site_lists[] = {
    { REPORT_KEY_leaks, 0, offsetof(load_report_t, leaks) },
    { REPORT_KEY_kept_by_libraries, 0, offsetof(load_report_t, kept) },
    { REPORT_KEY_reachable_at_exit, 0, offsetof(load_report_t, reachable) },
    { REPORT_KEY_teardown_leaks, 0, offsetof(load_report_t, teardown) },
    { REPORT_KEY_failures, 0, offsetof(load_report_t, failures) },
    { REPORT_KEY_sites, 0, offsetof(load_report_t, sites) },
    { REPORT_KEY_growth, 0, offsetof(load_report_t, growth) },
    { REPORT_KEY_growth, 1, offsetof(load_report_t, growth) },
    { REPORT_KEY_peak, 0, offsetof(load_report_t, peak_sites) },
    { REPORT_KEY_peak, 1, offsetof(load_report_t, peak_sites) },
    { REPORT_KEY_held_at_finish, 0, offsetof(load_report_t, held) },
    { REPORT_KEY_held_at_finish, 1, offsetof(load_report_t, held) },
};

#define NLISTS (sizeof site_lists / sizeof site_lists[0])

/* Site list i's path: "leaks", "peak.sites". */
static void list_path(size_t i, char *out, size_t size)
{
    snprintf(out, size, "%s%s", report_key(site_lists[i].key), site_lists[i].nested ? ".sites" : "");
}

static const load_list_t *list_of(const load_report_t *r, size_t i)
{
    return (const load_list_t *)((const char *)r + site_lists[i].offset);
}

/* The loaded list of the site list at path, or NULL when path is not one. */
static const load_list_t *list_at(const load_report_t *r, const char *path)
{
    char p[64];
    for (size_t i = 0; i < NLISTS; i++) {
        list_path(i, p, sizeof p);
        if (strcmp(p, path) == 0)
            return list_of(r, i);
    }
    return NULL;
}

/* Whether the streamed member at path is cut: a list of more sites than
 * the head keeps, or the stack table when the head leaves a stack out. */
static int is_cut(const load_report_t *r, const cut_t *cut, const char *path)
{
    if (cut == NULL)
        return 0;
    if (strcmp(path, RK(stacks)) == 0)
        return cut->nkept_stacks < r->nstacks;
    const load_list_t *list = list_at(r, path);
    return list != NULL && list->n > cut->max_sites;
}

/* path.key into out; a key too long for out is cut, and its path then
 * names no list: only short, known paths are cut or demangled. */
static void sub_path(char *out, size_t size, const char *path, const char *key)
{
    if (snprintf(out, size, "%s%s%s", path, *path ? "." : "", key) >= (int)size)
        out[0] = '\0';
}

/* A piece of a streamed member with the names the load demangled in the
 * tree demangled again (path: the member's): frames, the native origin of
 * a site and the inline frames of a version 1 site. */
static void demangle_piece(const char *path, json_t *piece)
{
    if (strcmp(path, RK(frames)) == 0) {
        demangle_field(piece, RK(function));
        return;
    }
    if (strcmp(path, RK(python_frames)) == 0 || strcmp(path, RK(stacks)) == 0)
        return;
    json_t *origin = json_object_get(piece, RK(origin));
    if (json_is_object(origin) && !json_is_true(json_object_get(origin, RK(python))))
        demangle_field(origin, RK(function));
    json_t *stack = json_object_get(piece, RK(stack));
    for (size_t i = 0; i < json_array_size(stack); i++)
        demangle_field(json_array_get(stack, i), RK(function));
}

static int dump_json(json_t *v, dump_sink_t sink, void *data)
{
    return json_dump_callback(v, sink, data, JSON_COMPACT | JSON_ENCODE_ANY);
}

static int dump_key(const char *key, dump_sink_t sink, void *data)
{
    json_t *k = json_string(key);
    int rc = k != NULL ? dump_json(k, sink, data) : -1;
    json_decref(k);
    return rc != 0 || sink(":", 1, data) != 0 ? -1 : 0;
}

/* Whether text holds a name the load may have demangled: a string
 * starting "_Z". */
static int maybe_mangled(const char *start, const char *end)
{
    return memmem(start, (size_t)(end - start), "\"_Z", 3) != NULL;
}

static int by_id(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return *x < *y ? -1 : *x > *y;
}

/* Whether a stack table's key names a site the head keeps. */
static int kept_key(const cut_t *cut, const char *key)
{
    char *end;
    uint64_t id = strtoull(key, &end, 10);
    return *end == '\0' && bsearch(&id, cut->kept, cut->nkept, sizeof id, by_id) != NULL;
}

/* Which pieces of a streamed member a part writes. */
typedef enum { ALL, HEAD, REST } part_t;

/* Whether piece n (key: its key in an object) of the member at path
 * belongs in part. */
static int in_part(const cut_t *cut, part_t part, const char *path, size_t n, const char *key)
{
    if (part == ALL)
        return 1;
    int head = key != NULL && strcmp(path, RK(stacks)) == 0 ? kept_key(cut, key) : n < cut->max_sites;
    return part == HEAD ? head : !head;
}

/* The text of the pieces a part keeps of a list cut after its first
 * max_sites, [*start, *end), brackets left out: only the kept pieces are
 * walked, not the 95,000 after them. 0 when not found (the part is then
 * written piece by piece). */
static int cut_text(const load_report_t *r, json_t *v, size_t max_sites, part_t part,
                    const char **start, const char **end)
{
    const char *open, *close, *a, *b, *mid = NULL;
    if (!split_text(r->doc, v, &open, &close))
        return 0;
    split_iter_t it;
    split_iter_begin(&it, r->doc, v);
    for (size_t n = 0; n < max_sites && split_iter_next_text(&it, &a, &b); n++)
        mid = b;
    split_iter_end(&it);
    if (mid == NULL)
        return 0;
    if (part == HEAD) {
        *start = open + 1;
        *end = mid;
        return 1;
    }
    while (mid < close && (*mid == ' ' || *mid == '\t' || *mid == '\r' || *mid == '\n'))
        mid++;
    if (mid >= close || *mid != ',')
        return 0;
    *start = mid + 1;
    *end = close - 1;
    return 1;
}

/* A streamed member's pieces that belong in part, as an array or object,
 * each from its text as it is (the load parsed every piece of it), or
 * parsed and written anew where a name in it may have been demangled. */
static int dump_pieces(const load_report_t *r, json_t *v, const char *path, const cut_t *cut,
                       part_t part, dump_sink_t sink, void *data)
{
    const char *start, *end;
    int object = json_is_object(v);
    if (part == ALL && split_text(r->doc, v, &start, &end) && !maybe_mangled(start, end))
        return sink(start, (size_t)(end - start), data);
    if (part != ALL && !object && cut_text(r, v, cut->max_sites, part, &start, &end)
        && !maybe_mangled(start, end))
        return sink("[", 1, data) || sink(start, (size_t)(end - start), data) || sink("]", 1, data) ? -1 : 0;
    int rc = sink(object ? "{" : "[", 1, data);
    split_iter_t it;
    split_iter_begin(&it, r->doc, v);
    size_t n = 0, written = 0;
    for (; rc == 0 && split_iter_next_text(&it, &start, &end); n++) {
        const char *key = object ? split_iter_key(&it) : NULL;
        if (!in_part(cut, part, path, n, key))
            continue;
        rc = (written++ > 0 ? sink(",", 1, data) : 0) || (object ? dump_key(key, sink, data) : 0)
             ? -1 : 0;
        if (rc != 0 || !maybe_mangled(start, end)) {
            rc = rc != 0 ? -1 : sink(start, (size_t)(end - start), data);
            continue;
        }
        json_t *piece = json_loadb(start, (size_t)(end - start), JSON_DECODE_ANY, NULL);
        if (piece != NULL)
            demangle_piece(path, piece);
        rc = piece == NULL || dump_json(piece, sink, data) != 0 ? -1 : 0;
        json_decref(piece);
    }
    rc = rc != 0 || split_iter_failed(&it) ? -1 : sink(object ? "}" : "]", 1, data);
    split_iter_end(&it);
    return rc;
}

/* Whether a section (an object at the top) has a member cut. */
static int section_cut(const load_report_t *r, json_t *obj, const char *path, const cut_t *cut)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        char sub[256];
        sub_path(sub, sizeof sub, path, key);
        if (split_is_streamed(r->doc, v) && is_cut(r, cut, sub))
            return 1;
    }
    return 0;
}

/* Whether a summary leaves out the top-level member key: the stack and
 * frame tables and the timeline, most of a report's bytes once its lists
 * are cut. */
static int summary_leaves_out(const char *key)
{
    return strcmp(key, RK(stacks)) == 0 || strcmp(key, RK(frames)) == 0
        || strcmp(key, RK(python_frames)) == 0 || strcmp(key, RK(timeline)) == 0;
}

/* An object of the tree member by member, so that the members it streams
 * (at the top, and one level down) are written piecewise: for ALL (cut
 * NULL) or HEAD, every member, the cut ones as the head keeps them; for
 * REST, only the members cut, each with what the head left out. */
static int dump_object(const load_report_t *r, json_t *obj, const char *path, const cut_t *cut,
                       part_t part, dump_sink_t sink, void *data)
{
    int rc = sink("{", 1, data);
    const char *key;
    json_t *v;
    size_t n = 0;
    json_object_foreach(obj, key, v) {
        char sub[256];
        sub_path(sub, sizeof sub, path, key);
        if (cut != NULL && cut->summary && *path == '\0' && summary_leaves_out(key))
            continue;
        int streamed = split_is_streamed(r->doc, v), section = *path == '\0' && json_is_object(v);
        if (part == REST && (streamed ? !is_cut(r, cut, sub) : !section || !section_cut(r, v, sub, cut)))
            continue;
        rc = rc != 0 || (n++ > 0 && sink(",", 1, data) != 0) || dump_key(key, sink, data) != 0 ? -1
           : streamed ? dump_pieces(r, v, sub, cut, is_cut(r, cut, sub) ? part : ALL, sink, data)
           : section ? dump_object(r, v, sub, cut, part, sink, data)
           : dump_json(v, sink, data);
        if (rc != 0)
            break;
    }
    return rc != 0 ? -1 : sink("}", 1, data);
}

/* Where the head cuts r: the sites it keeps are the first max_sites of
 * each list and those the oom section names. 0, or -1 out of memory. */
static int cut_open(const load_report_t *r, size_t max_sites, cut_t *cut, uint64_t **ids)
{
    /* A list read under two paths (a bare "peak" or "peak.sites") gives
     * its ids twice; the sort below keeps each once. */
    size_t total = 1 + r->oom.holders.n;
    for (size_t i = 0; i < NLISTS; i++)
        total += list_of(r, i)->n < max_sites ? list_of(r, i)->n : max_sites;
    uint64_t *kept = *ids = malloc(total * sizeof *kept);
    if (kept == NULL)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < NLISTS; i++)
        for (size_t k = 0; k < list_of(r, i)->n && k < max_sites; k++)
            kept[n++] = list_of(r, i)->v[k].id;
    /* The oom section is never cut: every site it names keeps its stack. */
    for (size_t k = 0; k < r->oom.holders.n; k++)
        kept[n++] = r->oom.holders.v[k].id;
    if (r->has_oom)
        kept[n++] = r->oom.site.id;
    qsort(kept, n, sizeof *kept, by_id);
    size_t unique = 0;
    for (size_t i = 0; i < n; i++)
        if (unique == 0 || kept[unique - 1] != kept[i])
            kept[unique++] = kept[i];
    *cut = (cut_t){ .max_sites = max_sites, .kept = kept, .nkept = unique };
    for (size_t i = 0; i < r->nstacks; i++)
        if (bsearch(&r->stacks[i].site, kept, unique, sizeof *kept, by_id) != NULL)
            cut->nkept_stacks++;
    return 0;
}

int dump_report(const load_report_t *r, dump_sink_t sink, void *data)
{
    if (r->whole != NULL)
        return dump_json(r->whole, sink, data);
    return dump_object(r, split_root(r->doc), "", NULL, ALL, sink, data);
}

int dump_cuts(const load_report_t *r, size_t max_sites)
{
    if (r->whole != NULL)
        return 0;
    for (size_t i = 0; i < NLISTS; i++)
        if (list_of(r, i)->n > max_sites)
            return 1;
    return 0;
}

/* part of r cut at max_sites: the head (rest 0) or the rest (rest 1). */
static int dump_part(const load_report_t *r, size_t max_sites, int rest, dump_sink_t sink, void *data)
{
    if (!dump_cuts(r, max_sites))
        return rest ? sink("{}", 2, data) : dump_report(r, sink, data);
    cut_t cut;
    uint64_t *ids;
    if (cut_open(r, max_sites, &cut, &ids) != 0)
        return -1;
    int rc = dump_object(r, split_root(r->doc), "", &cut, rest ? REST : HEAD, sink, data);
    free(ids);
    return rc;
}

int dump_head(const load_report_t *r, size_t max_sites, dump_sink_t sink, void *data)
{
    return dump_part(r, max_sites, 0, sink, data);
}

int dump_rest(const load_report_t *r, size_t max_sites, dump_sink_t sink, void *data)
{
    return dump_part(r, max_sites, 1, sink, data);
}

int dump_summary(const load_report_t *r, size_t max_sites, dump_sink_t sink, void *data)
{
    if (r->whole != NULL)
        return dump_report(r, sink, data);
    cut_t cut;
    uint64_t *ids;
    if (cut_open(r, max_sites, &cut, &ids) != 0)
        return -1;
    cut.summary = 1;
    int rc = dump_object(r, split_root(r->doc), "", &cut, HEAD, sink, data);
    free(ids);
    return rc;
}

int dump_cut_totals(const load_report_t *r, size_t max_sites, dump_sink_t sink, void *data)
{
    json_t *root = r->whole == NULL ? split_root(r->doc) : NULL;
    int rc = sink("{", 1, data);
    size_t n = 0;
    for (size_t i = 0; rc == 0 && root != NULL && i < NLISTS; i++) {
        /* Only the path the document uses: "peak.sites" or a bare "peak". */
        char path[64];
        list_path(i, path, sizeof path);
        json_t *v = json_object_get(root, report_key(site_lists[i].key));
        if (site_lists[i].nested)
            v = json_object_get(v, RK(sites));
        const load_list_t *l = list_of(r, i);
        if (v == NULL || !split_is_streamed(r->doc, v) || l->n <= max_sites)
            continue;
        uint64_t bytes = 0, allocations = 0;
        for (size_t k = max_sites; k < l->n; k++) {
            bytes = units_add(bytes, l->v[k].bytes);
            allocations = units_add(allocations, l->v[k].allocations);
        }
        char text[256];
        int len = snprintf(text, sizeof text, "%s\"%s\":{\"sites\":%zu,\"bytes\":%llu,\"allocations\":%llu}",
                           n++ > 0 ? "," : "", path, l->n, (unsigned long long)bytes,
                           (unsigned long long)allocations);
        rc = sink(text, (size_t)len, data);
    }
    return rc != 0 ? -1 : sink("}", 1, data);
}
