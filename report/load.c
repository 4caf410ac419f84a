/* load.c: reads a report with jansson and checks every field the views use
 * before any view sees it. Reports are untrusted input (they come from other
 * machines, CI artifacts, truncated disks), so each problem becomes one line
 * naming the file and the field, and nothing downstream re-checks types. */
#define _GNU_SOURCE
#include "load.h"
#include "demangle.h"
#include "frame_text.h"
#include "json_split.h"
#include "report_format.h"
#include "report_keys.h"
#include "strpool.h"
#include "units.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reports far past this are not something the shim writes (it caps its site
 * list); refusing them keeps a hostile file from exhausting memory. */
#define LOAD_MAX_BYTES (1024ULL * 1024 * 1024)
#define WHERE_MAX 160

const char *const load_kind_names[LOAD_KINDS] = { REPORT_KINDS(REPORT_KIND_NAME) };

typedef struct {
    const char *name;
    char *error;
    const load_report_t *report; /* for the stack table, once loaded, and its
                                    strings (NULL: strings stay the tree's) */
    bool not_json;               /* a streamed piece was not JSON */
} ctx_t;

/* Records the first problem only: later ones are usually consequences. */
static int fail(ctx_t *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(ctx_t *ctx, const char *fmt, ...)
{
    if (ctx->error != NULL)
        return -1;
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    if (msg == NULL || asprintf(&ctx->error, "%s: %s", ctx->name, msg) < 0)
        ctx->error = NULL;
    free(msg);
    if (ctx->error == NULL)
        ctx->error = strdup("out of memory");
    return -1;
}

/* Untrusted text quoted in an error stays on one line and stays short. */
static void quote_value(const char *s, char *out, size_t size)
{
    size_t n = 0;
    for (; *s != '\0' && n + 4 < size; s++)
        out[n++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
    if (*s != '\0' && n + 4 <= size) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
}

/* Field paths are cut at WHERE_MAX: a key from the file can be long, and a
 * cut path still names the field well enough. */
static void child_where(char *out, const char *where, const char *key)
{
    if (snprintf(out, WHERE_MAX, "%s%s%s", where, *where ? "." : "", key) >= WHERE_MAX)
        memcpy(out + WHERE_MAX - 4, "...", 4);
}

static void index_where(char *out, const char *where, const char *key, size_t i)
{
    if (snprintf(out, WHERE_MAX, "%s%s%s[%zu]", where, *where ? "." : "", key, i) >= WHERE_MAX)
        memcpy(out + WHERE_MAX - 4, "...", 4);
}

/* Fetches obj[key]; a missing field is an error only when required, and a
 * JSON null counts as missing so optional fields may be written as null. */
static json_t *field(ctx_t *ctx, json_t *obj, const char *where, const char *key, int required)
{
    json_t *v = json_object_get(obj, key);
    if ((v == NULL || json_is_null(v)) && required) {
        char w[WHERE_MAX];
        child_where(w, where, key);
        fail(ctx, "invalid report: \"%s\" is missing", w);
    }
    return json_is_null(v) ? NULL : v;
}

/* An integer from lo to hi (a JSON integer: reals and strings are refused
 * rather than converted); below says what one under lo is. */
static int read_int(ctx_t *ctx, json_t *obj, const char *where, const char *key, int required,
                    long long lo, long long hi, const char *below, long long *out)
{
    json_t *v = field(ctx, obj, where, key, required);
    *out = 0;
    if (v == NULL)
        return required ? -1 : 0;
    json_int_t n = json_integer_value(v);
    if (json_is_integer(v) && n >= lo && n <= hi) {
        *out = n;
        return 0;
    }
    char w[WHERE_MAX]; /* named only for the message: a big report has millions */
    child_where(w, where, key);
    if (!json_is_integer(v))
        return fail(ctx, "invalid report: \"%s\" is not an integer", w);
    return fail(ctx, "invalid report: \"%s\" is %s (%lld)", w, n < lo ? below : "out of range",
                (long long)n);
}

static int get_int(ctx_t *ctx, json_t *obj, const char *where, const char *key, int required,
                   long long lo, long long hi, long long *out)
{
    return read_int(ctx, obj, where, key, required, lo, hi, "out of range", out);
}

/* A size, count or time: a JSON integer from 0 to 2^63-1. */
static int get_u64(ctx_t *ctx, json_t *obj, const char *where, const char *key, int required,
                   uint64_t *out)
{
    long long n = 0;
    int rc = read_int(ctx, obj, where, key, required, 0, LLONG_MAX, "negative", &n);
    *out = (uint64_t)n;
    return rc;
}

/* A string the report keeps: the pool's copy, since the element it was
 * read from may be freed once read (json_split.h). */
static int keep_string(ctx_t *ctx, const char *s, const char **out)
{
    *out = ctx->report != NULL ? strpool_intern(ctx->report->strings, s) : s;
    return *out != NULL ? 0 : fail(ctx, "out of memory");
}

static int get_str(ctx_t *ctx, json_t *obj, const char *where, const char *key, int required,
                   const char **out)
{
    json_t *v = field(ctx, obj, where, key, required);
    *out = NULL;
    if (v == NULL)
        return required ? -1 : 0;
    if (!json_is_string(v)) {
        char w[WHERE_MAX];
        child_where(w, where, key);
        return fail(ctx, "invalid report: \"%s\" is not a string", w);
    }
    return keep_string(ctx, json_string_value(v), out);
}

static json_t *get_typed(ctx_t *ctx, json_t *obj, const char *where, const char *key, int required,
                         int (*is)(const json_t *), const char *what)
{
    json_t *v = field(ctx, obj, where, key, required);
    if (v != NULL && !is(v)) {
        char w[WHERE_MAX];
        child_where(w, where, key);
        fail(ctx, "invalid report: \"%s\" is not %s", w, what);
        return NULL;
    }
    return v;
}

static int is_object(const json_t *v) { return json_is_object(v); }
static int is_array(const json_t *v) { return json_is_array(v); }
static int is_boolean(const json_t *v) { return json_is_boolean(v); }

/* "0x1234" as the shim writes offsets and addresses: hex, at most 64 bits. */
static int get_hex(ctx_t *ctx, json_t *obj, const char *where, const char *key, uint64_t *out)
{
    const char *s;
    *out = 0;
    if (get_str(ctx, obj, where, key, 1, &s) != 0)
        return -1;
    size_t len = strlen(s);
    int ok = len > 2 && len <= 18 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') &&
             strspn(s + 2, "0123456789abcdefABCDEF") == len - 2;
    if (!ok) {
        char w[WHERE_MAX];
        child_where(w, where, key);
        return fail(ctx, "invalid report: \"%s\" is not a hex address", w);
    }
    *out = strtoull(s + 2, NULL, 16);
    return 0;
}

static int load_totals(ctx_t *ctx, json_t *obj, const char *where, load_totals_t *t)
{
    /* Only these five are needed to judge a run; the rest default to 0 so a
     * hand-written report for a test or a bug needs no boilerplate. */
    get_u64(ctx, obj, where, RK(allocations), 1, &t->allocations);
    get_u64(ctx, obj, where, RK(frees), 1, &t->frees);
    get_u64(ctx, obj, where, RK(peak_bytes), 1, &t->peak_bytes);
    get_u64(ctx, obj, where, RK(leaked_bytes), 1, &t->leaked_bytes);
    get_u64(ctx, obj, where, RK(leaked_allocations), 1, &t->leaked_allocations);
    get_u64(ctx, obj, where, RK(failed_allocations), 0, &t->failed_allocations);
    get_u64(ctx, obj, where, RK(bytes_allocated), 0, &t->bytes_allocated);
    get_u64(ctx, obj, where, RK(live_bytes), 0, &t->live_bytes);
    get_u64(ctx, obj, where, RK(teardown_leaked_bytes), 0, &t->teardown_leaked_bytes);
    get_u64(ctx, obj, where, RK(teardown_leaked_allocations), 0, &t->teardown_leaked_allocations);
    return ctx->error ? -1 : 0;
}

static int load_frame(ctx_t *ctx, json_t *v, const char *where, load_frame_t *f)
{
    if (!json_is_object(v))
        return fail(ctx, "invalid report: \"%s\" is not an object", where);
    long long line;
    demangle_field(v, RK(function));
    get_str(ctx, v, where, RK(function), 0, &f->function);
    get_str(ctx, v, where, RK(file), 0, &f->file);
    get_str(ctx, v, where, RK(module), 1, &f->module);
    get_int(ctx, v, where, RK(line), 0, 0, 1LL << 31, &line);
    f->line = (long)line;
    get_hex(ctx, v, where, RK(offset), &f->offset);
    get_hex(ctx, v, where, RK(address), &f->address);
    json_t *inl = field(ctx, v, where, RK(inlined), 0);
    if (inl != NULL && !json_is_boolean(inl)) {
        char w[WHERE_MAX];
        child_where(w, where, RK(inlined));
        return fail(ctx, "invalid report: \"%s\" is not a boolean", w);
    }
    f->inlined = inl != NULL && json_is_true(inl);
    return ctx->error ? -1 : 0;
}

static int load_pyframe(ctx_t *ctx, json_t *v, const char *where, load_pyframe_t *f)
{
    if (!json_is_object(v))
        return fail(ctx, "invalid report: \"%s\" is not an object", where);
    long long line;
    get_str(ctx, v, where, RK(function), 1, &f->function);
    get_str(ctx, v, where, RK(file), 1, &f->file);
    get_int(ctx, v, where, RK(line), 0, 0, 1LL << 31, &line);
    f->line = (long)line;
    return ctx->error ? -1 : 0;
}

/* Points *out (malloc'd, *n entries) at the entries of table (count
 * entries of size bytes) that a "stack" or "python_stack" array of indices
 * names. */
static int load_indices(ctx_t *ctx, json_t *obj, const char *where, const char *key,
                        const char *table_name, const void *table, size_t count, size_t size,
                        const void ***out, size_t *n)
{
    json_t *indices = get_typed(ctx, obj, where, key, 0, is_array, "an array");
    *n = indices ? json_array_size(indices) : 0;
    *out = calloc(*n ? *n : 1, sizeof **out);
    if (*out == NULL)
        return fail(ctx, "out of memory");
    char w[WHERE_MAX];
    for (size_t i = 0; i < *n && !ctx->error; i++) {
        json_t *v = json_array_get(indices, i);
        json_int_t k = json_integer_value(v);
        if (json_is_integer(v) && k >= 0 && (uint64_t)k < count) {
            (*out)[i] = (const char *)table + (size_t)k * size;
            continue;
        }
        index_where(w, where, key, i);
        if (!json_is_integer(v))
            return fail(ctx, "invalid report: \"%s\" is not an integer", w);
        return fail(ctx, "invalid report: \"%s\" names frame %lld, but \"%s\" has %zu",
                    w, (long long)k, table_name, count);
    }
    return ctx->error ? -1 : 0;
}

static int by_stack_site(const void *a, const void *b)
{
    const load_stack_t *x = a, *y = b;
    return x->site < y->site ? -1 : x->site > y->site;
}

/* The stack table's entry for a site, or NULL. The shim numbers sites
 * from 1 without gaps, so the entry is first looked for at its place: a
 * binary search for each of 200,000 sites was 4% of reading a big report. */
static const load_stack_t *find_stack(const load_report_t *r, uint64_t site)
{
    if (r->nstacks == 0)
        return NULL;
    uint64_t at = site - r->stacks[0].site;
    if (site >= r->stacks[0].site && at < r->nstacks && r->stacks[at].site == site)
        return &r->stacks[at];
    load_stack_t key = { .site = site };
    return bsearch(&key, r->stacks, r->nstacks, sizeof key, by_stack_site);
}

/* Makes room for entry n of *v (size bytes each, room for *cap), zeroed.
 * Only the entry is zeroed, not the room grown: a list of 100,000 sites
 * would otherwise write (and fault in) up to twice its memory. */
static int room_for(ctx_t *ctx, void **v, size_t n, size_t *cap, size_t size)
{
    if (n >= *cap) {
        size_t more = *cap ? *cap * 2 : 16;
        char *bigger = realloc(*v, more * size);
        if (bigger == NULL)
            return fail(ctx, "out of memory");
        *v = bigger;
        *cap = more;
    }
    memset((char *)*v + n * size, 0, size);
    return 0;
}

/* Ends a walk over a list: a piece of a streamed one that is not JSON fails
 * the load, and load_buffer then parses the text whole for jansson's own
 * word on it. */
static int walk_end(ctx_t *ctx, split_iter_t *it)
{
    int failed = split_iter_failed(it);
    split_iter_end(it);
    if (failed) {
        ctx->not_json = true;
        return fail(ctx, "not JSON");
    }
    return ctx->error ? -1 : 0;
}

/* "frames" and "python_frames", each frame once, into r. */
static int load_frame_tables(ctx_t *ctx, json_t *root, load_report_t *r)
{
    json_t *frames = get_typed(ctx, root, "", RK(frames), 0, is_array, "an array");
    json_t *pyframes = get_typed(ctx, root, "", RK(python_frames), 0, is_array, "an array");
    if (ctx->error)
        return -1;
    char w[WHERE_MAX];
    size_t cap = 0;
    split_iter_t it;
    split_iter_begin(&it, r->doc, frames);
    for (json_t *v; !ctx->error && (v = split_iter_next(&it)) != NULL;) {
        index_where(w, "", RK(frames), r->nframes);
        if (room_for(ctx, (void **)&r->frames, r->nframes, &cap, sizeof *r->frames) == 0)
            load_frame(ctx, v, w, &r->frames[r->nframes++]);
    }
    if (walk_end(ctx, &it) != 0)
        return -1;
    cap = 0;
    split_iter_begin(&it, r->doc, pyframes);
    for (json_t *v; !ctx->error && (v = split_iter_next(&it)) != NULL;) {
        index_where(w, "", RK(python_frames), r->npyframes);
        if (room_for(ctx, (void **)&r->pyframes, r->npyframes, &cap, sizeof *r->pyframes) == 0)
            load_pyframe(ctx, v, w, &r->pyframes[r->npyframes++]);
    }
    return walk_end(ctx, &it);
}

/* A version 2 report writes each frame once ("frames", "python_frames") and
 * each site's stack once ("stacks", keyed by site id, frames by index);
 * they are resolved here, so the views see every site with its frames
 * whichever version wrote the file. */
static int load_stack_tables(ctx_t *ctx, json_t *root, load_report_t *r)
{
    json_t *stacks = get_typed(ctx, root, "", RK(stacks), 0, is_object, "an object");
    if (ctx->error || load_frame_tables(ctx, root, r) != 0)
        return -1;
    char w[WHERE_MAX];
    size_t cap = 0;
    split_iter_t it;
    split_iter_begin(&it, r->doc, stacks);
    for (json_t *value; !ctx->error && (value = split_iter_next(&it)) != NULL;) {
        const char *key = split_iter_key(&it);
        if (room_for(ctx, (void **)&r->stacks, r->nstacks, &cap, sizeof *r->stacks) != 0)
            break;
        load_stack_t *st = &r->stacks[r->nstacks++];
        child_where(w, RK(stacks), key);
        size_t len = strlen(key);
        /* One spelling per id ("1", never "01"), so two keys never name
         * the same site; ids are 32-bit. */
        if (len == 0 || len > 10 || strspn(key, "0123456789") != len
            || (key[0] == '0' && len > 1) || strtoull(key, NULL, 10) > UINT32_MAX) {
            fail(ctx, "invalid report: \"%s\" is not keyed by a site id", w);
            break;
        }
        if (!json_is_object(value)) {
            fail(ctx, "invalid report: \"%s\" is not an object", w);
            break;
        }
        st->site = strtoull(key, NULL, 10);
        load_indices(ctx, value, w, RK(stack), RK(frames), r->frames, r->nframes, sizeof *r->frames,
                     (const void ***)&st->stack, &st->nstack);
        if (!ctx->error)
            load_indices(ctx, value, w, RK(python_stack), RK(python_frames), r->pyframes,
                         r->npyframes, sizeof *r->pyframes, (const void ***)&st->python, &st->npython);
    }
    if (walk_end(ctx, &it) != 0)
        return -1;
    if (r->nstacks > 1)
        qsort(r->stacks, r->nstacks, sizeof *r->stacks, by_stack_site);
    /* Read piecewise, a key written twice is not caught by the parser:
     * the whole text is then parsed, which refuses it as it would. */
    for (size_t i = 1; i < r->nstacks; i++)
        if (r->stacks[i].site == r->stacks[i - 1].site) {
            ctx->not_json = true;
            return fail(ctx, "not JSON");
        }
    return 0;
}

enum list_kind { LIST_LEAKS, LIST_TEARDOWN, LIST_FAILURES, LIST_SITES, LIST_OTHER };

/* Reads a site entry's "origin" object with its own context, so that a
 * malformed one (a hint, written by a newer or older shim) leaves the site
 * without an origin instead of failing the report. */
static void load_origin(const load_report_t *r, json_t *entry, load_site_t *s)
{
    json_t *o = json_object_get(entry, RK(origin));
    s->origin_kind = LOAD_ORIGIN_NONE;
    if (!json_is_object(o))
        return;
    ctx_t quiet = { .name = RK(origin), .report = r };
    if (json_is_true(json_object_get(o, RK(python)))) {
        if (load_pyframe(&quiet, o, RK(origin), &s->origin_python) == 0)
            s->origin_kind = LOAD_ORIGIN_PYTHON;
    } else {
        long long line;
        demangle_field(o, RK(function));
        get_str(&quiet, o, RK(origin), RK(function), 0, &s->origin_native.function);
        get_str(&quiet, o, RK(origin), RK(file), 0, &s->origin_native.file);
        get_str(&quiet, o, RK(origin), RK(module), 1, &s->origin_native.module);
        get_int(&quiet, o, RK(origin), RK(line), 0, 0, 1LL << 31, &line);
        get_hex(&quiet, o, RK(origin), RK(offset), &s->origin_native.offset);
        s->origin_native.line = (long)line;
        if (quiet.error == NULL)
            s->origin_kind = LOAD_ORIGIN_NATIVE;
    }
    free(quiet.error);
    json_t *callers = json_object_get(o, RK(callers));
    s->callers = NULL;
    s->ncallers = 0;
    if (json_is_array(callers) && json_array_size(callers) > 0 && s->origin_kind != LOAD_ORIGIN_NONE) {
        s->callers = calloc(json_array_size(callers), sizeof *s->callers);
        for (size_t i = 0; s->callers != NULL && i < json_array_size(callers); i++) {
            ctx_t quiet_caller = { .name = RK(callers), .report = r };
            if (load_pyframe(&quiet_caller, json_array_get(callers, i), RK(callers),
                             &s->callers[s->ncallers]) == 0)
                s->ncallers++;
            free(quiet_caller.error);
        }
    }
    json_t *via = json_object_get(o, RK(via));
    ctx_t quiet_via = { .name = RK(via), .report = r };
    s->has_via = via != NULL && s->origin_kind != LOAD_ORIGIN_NONE
              && load_pyframe(&quiet_via, via, RK(via), &s->via) == 0;
    free(quiet_via.error);
}

/* Reads a "composition" (common/composition.h) into *c, a display hint:
 * all zero, never refused, when it is absent or cannot be read whole. A
 * role this reader does not know is left out. */
static void load_composition(const load_report_t *r, json_t *v, composition_t *c)
{
    memset(c, 0, sizeof *c);
    c->frameworks = r->frameworks;
    json_t *parts = json_object_get(v, RK(parts));
    if (!json_is_object(v) || !json_is_array(parts))
        return;
    ctx_t quiet = { .name = RK(composition), .report = r };
    for (size_t i = 0; i < json_array_size(parts) && quiet.error == NULL; i++) {
        json_t *part = json_array_get(parts, i), *by = json_object_get(part, RK(by));
        const char *name;
        uint64_t bytes;
        if (get_str(&quiet, part, RK(parts), RK(role), 1, &name) != 0
            || get_u64(&quiet, part, RK(parts), RK(bytes), 1, &bytes) != 0)
            break;
        int role = composition_role_of_name(name);
        if (role < 0)
            continue;
        c->bytes[role] = units_add(c->bytes[role], bytes);
        c->gpu_bytes = units_add(c->gpu_bytes, bytes);
        for (size_t k = 0; k < json_array_size(by) && k < COMPOSITION_TOP; k++) {
            composition_part_t *owner = &c->by[role][k];
            if (get_str(&quiet, json_array_get(by, k), RK(by), RK(name), 1, &owner->name) != 0
                || get_u64(&quiet, json_array_get(by, k), RK(by), RK(bytes), 1, &owner->bytes) != 0)
                break;
        }
    }
    c->inferred = json_is_true(json_object_get(v, RK(inferred)));
    if (quiet.error != NULL)
        memset(c, 0, sizeof *c);
    free(quiet.error);
}

/* Reads held_at_finish's "holders_search", a display hint: left out, never
 * refused, when it cannot be read. */
static void load_search(json_t *search, load_report_t *r)
{
    ctx_t quiet = { .name = RK(holders_search), .report = NULL };
    json_t *seconds = json_object_get(search, RK(seconds));
    r->has_search = json_is_object(search) && json_is_number(seconds);
    if (!r->has_search)
        return;
    get_u64(&quiet, search, RK(holders_search), RK(objects), 1, &r->search_objects);
    get_u64(&quiet, search, RK(holders_search), RK(named_bytes), 1, &r->search_named_bytes);
    get_str(&quiet, search, RK(holders_search), RK(ended), 1, &r->search_ended);
    r->search_seconds = json_number_value(seconds);
    r->has_search = quiet.error == NULL;
    free(quiet.error);
}

/* Reads a site's "held_by" list, a display hint like the origin: an entry
 * this reader cannot read is left out, never refused. */
static void load_holders(const load_report_t *r, json_t *entry, load_site_t *s)
{
    json_t *list = json_object_get(entry, RK(held_by));
    s->holders = NULL;
    s->nholders = 0;
    json_t *more = json_object_get(entry, RK(held_by_more));
    s->holders_more = json_is_integer(more) && json_integer_value(more) > 0
                    ? (uint64_t)json_integer_value(more) : 0;
    if (!json_is_array(list) || json_array_size(list) == 0)
        return;
    s->holders = calloc(json_array_size(list), sizeof *s->holders);
    for (size_t i = 0; s->holders != NULL && i < json_array_size(list); i++) {
        json_t *h = json_array_get(list, i);
        ctx_t quiet = { .name = RK(held_by), .report = r };
        load_holder_t *out = &s->holders[s->nholders];
        get_str(&quiet, h, RK(held_by), RK(name), 1, &out->name);
        get_str(&quiet, h, RK(held_by), RK(type), 1, &out->type);
        get_str(&quiet, h, RK(held_by), RK(owner), 0, &out->owner);
        get_str(&quiet, h, RK(held_by), RK(file), 1, &out->file);
        get_str(&quiet, h, RK(held_by), RK(path), 0, &out->path);
        get_u64(&quiet, h, RK(held_by), RK(bytes), 1, &out->bytes);
        get_u64(&quiet, h, RK(held_by), RK(allocations), 0, &out->allocations);
        out->graph = json_is_true(json_object_get(h, RK(graph)));
        json_t *role = json_object_get(h, RK(role));
        out->role = json_is_string(role) ? composition_role_of_name(json_string_value(role)) : -1;
        if (quiet.error == NULL)
            s->nholders++;
        free(quiet.error);
    }
}

static int load_site_stack(ctx_t *ctx, json_t *v, const char *where, load_site_t *s);

/* A site's "framework" (a tensor site's; PyTorch's when absent, as in
 * reports before it was written, or a name this reader does not know). */
static void load_framework(ctx_t *ctx, json_t *v, const char *where, load_site_t *s)
{
    const char *name = NULL;
    get_str(ctx, v, where, RK(framework), 0, &name);
    int framework = report_framework_of(name);
    s->framework = s->kind == NULL || strcmp(s->kind, "tensor") != 0 ? -1
                 : framework >= 0 ? framework : REPORT_FRAMEWORK_torch;
}

static int load_site(ctx_t *ctx, json_t *v, const char *where, enum list_kind kind, load_site_t *s)
{
    if (!json_is_object(v))
        return fail(ctx, "invalid report: \"%s\" is not an object", where);
    long long device;
    get_u64(ctx, v, where, RK(site), 0, &s->id);
    get_str(ctx, v, where, RK(kind), 1, &s->kind);
    load_framework(ctx, v, where, s);
    get_int(ctx, v, where, RK(device), 0, -1, 1 << 20, &device);
    s->device = (long)device;
    get_u64(ctx, v, where, RK(bytes), 1, &s->bytes);
    get_u64(ctx, v, where, kind == LIST_FAILURES ? RK(count) : RK(allocations), 1, &s->allocations);
    get_u64(ctx, v, where, RK(frees), 0, &s->frees);
    get_u64(ctx, v, where, RK(live_bytes), 0, &s->live_bytes);
    get_u64(ctx, v, where, RK(peak_live_bytes), 0, &s->peak_live_bytes);
    if (kind == LIST_TEARDOWN)
        get_str(ctx, v, where, RK(teardown), 0, &s->teardown);
    /* Display hints only, never judged on: a type this reader does not know
     * (a newer shim) is ignored rather than refused. */
    load_origin(ctx->report, v, s);
    load_holders(ctx->report, v, s);
    json_t *hint = json_object_get(v, RK(owner));
    s->owner = NULL;
    if (json_is_string(hint))
        keep_string(ctx, json_string_value(hint), &s->owner);
    if (kind == LIST_FAILURES)
        get_int(ctx, v, where, RK(result), 0, -(1LL << 31), 1LL << 32, &s->result);
    if (ctx->error)
        return -1;
    return load_site_stack(ctx, v, where, s);
}

/* A site's frames: inline "stack" and "python_stack" (version 1), else
 * its entry in the report's stack table, shared, not copied. */
static int load_site_stack(ctx_t *ctx, json_t *v, const char *where, load_site_t *s)
{
    json_t *stack = get_typed(ctx, v, where, RK(stack), 0, is_array, "an array");
    json_t *py = get_typed(ctx, v, where, RK(python_stack), 0, is_array, "an array");
    if (ctx->error)
        return -1;
    if (stack == NULL && py == NULL) {
        const load_stack_t *st = find_stack(ctx->report, s->id);
        if (st != NULL) {
            s->stack = st->stack;
            s->nstack = st->nstack;
            s->python = st->python;
            s->npython = st->npython;
        }
        return 0;
    }
    /* One block each: the pointers, then the frames they point at. */
    s->owns_stack = true;
    s->nstack = stack ? json_array_size(stack) : 0;
    s->npython = py ? json_array_size(py) : 0;
    s->stack = calloc(s->nstack ? s->nstack : 1, sizeof *s->stack + sizeof **s->stack);
    s->python = calloc(s->npython ? s->npython : 1, sizeof *s->python + sizeof **s->python);
    if (s->stack == NULL || s->python == NULL)
        return fail(ctx, "out of memory");
    load_frame_t *native = (load_frame_t *)(s->stack + s->nstack);
    load_pyframe_t *python = (load_pyframe_t *)(s->python + s->npython);
    char w[WHERE_MAX];
    for (size_t i = 0; i < s->nstack && !ctx->error; i++) {
        index_where(w, where, RK(stack), i);
        load_frame(ctx, json_array_get(stack, i), w, &native[i]);
        s->stack[i] = &native[i];
    }
    for (size_t i = 0; i < s->npython && !ctx->error; i++) {
        index_where(w, where, RK(python_stack), i);
        load_pyframe(ctx, json_array_get(py, i), w, &python[i]);
        s->python[i] = &python[i];
    }
    return ctx->error ? -1 : 0;
}

static int load_list(ctx_t *ctx, json_t *arr, const char *key, enum list_kind kind, load_list_t *list)
{
    char w[WHERE_MAX];
    size_t cap = 0;
    split_iter_t it;
    split_iter_begin(&it, ctx->report->doc, arr);
    for (json_t *v; !ctx->error && (v = split_iter_next(&it)) != NULL;) {
        index_where(w, "", key, list->n);
        if (room_for(ctx, (void **)&list->v, list->n, &cap, sizeof *list->v) != 0)
            break;
        load_site(ctx, v, w, kind, &list->v[list->n++]); /* counted even when it
                                                            fails half way, to be freed */
    }
    return walk_end(ctx, &it);
}

/* Frees what a site owns: its callers and holders, and its frames when
 * they are inline rather than the stack table's. */
static void free_site(load_site_t *s)
{
    free(s->callers);
    free(s->holders);
    if (!s->owns_stack)
        return;
    free(s->stack);
    free(s->python);
}

static void free_list(load_list_t *list)
{
    for (size_t i = 0; list->v != NULL && i < list->n; i++)
        free_site(&list->v[i]);
    free(list->v);
}

/* Growth and peak sections are written as {"bytes":N, "sites":[site...]} (a
 * bare array of sites is read as the sites with their bytes summed). */
static int load_section(ctx_t *ctx, json_t *v, const char *key, uint64_t *bytes, uint64_t *at_ns,
                        load_list_t *list)
{
    json_t *sites = v;
    if (json_is_object(v)) {
        get_u64(ctx, v, key, RK(bytes), 0, bytes);
        if (at_ns != NULL)
            get_u64(ctx, v, key, RK(time_ns), 0, at_ns);
        sites = get_typed(ctx, v, key, RK(sites), 0, is_array, "an array");
    } else if (!json_is_array(v)) {
        return fail(ctx, "invalid report: \"%s\" is neither an object nor an array", key);
    }
    if (ctx->error)
        return -1;
    char w[WHERE_MAX];
    snprintf(w, sizeof w, "%s%s", key, json_is_object(v) ? ".sites" : "");
    if (load_list(ctx, sites, w, LIST_OTHER, list) != 0)
        return -1;
    if (json_object_get(v, RK(bytes)) == NULL || !json_is_object(v)) {
        uint64_t sum = 0;
        for (size_t i = 0; i < list->n; i++)
            sum = sum > UINT64_MAX - list->v[i].bytes ? UINT64_MAX : sum + list->v[i].bytes;
        *bytes = sum;
    }
    return 0;
}

/* Kinds of a point may be partial or absent; unknown kinds are ignored so a
 * newer shim's kinds do not make a report unreadable. */
static int load_timeline(ctx_t *ctx, json_t *v, load_report_t *r)
{
    if (!json_is_object(v))
        return fail(ctx, "invalid report: \"timeline\" is not an object");
    get_u64(ctx, v, RK(timeline), RK(start_ns), 0, &r->timeline_start_ns);
    json_t *points = get_typed(ctx, v, RK(timeline), RK(points), 1, is_array, "an array");
    if (ctx->error)
        return -1;
    r->npoints = json_array_size(points);
    r->points = calloc(r->npoints ? r->npoints : 1, sizeof *r->points);
    if (r->points == NULL)
        return fail(ctx, "out of memory");
    char w[WHERE_MAX], kw[WHERE_MAX];
    for (size_t i = 0; i < r->npoints && !ctx->error; i++) {
        json_t *p = json_array_get(points, i);
        index_where(w, RK(timeline), RK(points), i);
        if (!json_is_object(p))
            return fail(ctx, "invalid report: \"%s\" is not an object", w);
        get_u64(ctx, p, w, RK(t_ns), 1, &r->points[i].t_ns);
        get_u64(ctx, p, w, RK(bytes), 1, &r->points[i].bytes);
        get_u64(ctx, p, w, RK(max_bytes), 0, &r->points[i].max_bytes);
        if (r->points[i].max_bytes < r->points[i].bytes)
            r->points[i].max_bytes = r->points[i].bytes;
        if (i > 0 && r->points[i].t_ns < r->points[i - 1].t_ns && !ctx->error)
            return fail(ctx, "invalid report: \"%s.t_ns\" goes back in time", w);
        json_t *kinds = get_typed(ctx, p, w, RK(kinds), 0, is_object, "an object");
        if (kinds == NULL)
            continue;
        child_where(kw, w, RK(kinds));
        const char *name;
        json_t *value;
        json_object_foreach(kinds, name, value) {
            uint64_t bytes;
            if (get_u64(ctx, kinds, kw, name, 1, &bytes) != 0)
                break;
            int k = load_kind_index(name);
            if (k >= 0)
                r->points[i].kinds[k] = bytes;
        }
    }
    /* Marks are display hints: one this reader cannot read is left out. */
    json_t *marks = json_object_get(v, RK(marks));
    if (json_is_array(marks) && json_array_size(marks) > 0 && !ctx->error) {
        r->marks = calloc(json_array_size(marks), sizeof *r->marks);
        if (r->marks == NULL)
            return fail(ctx, "out of memory");
        for (size_t i = 0; i < json_array_size(marks); i++) {
            json_t *m = json_array_get(marks, i);
            ctx_t quiet = { .name = RK(marks), .report = NULL };
            load_mark_t *out = &r->marks[r->nmarks];
            get_u64(&quiet, m, RK(marks), RK(t_ns), 1, &out->t_ns);
            get_str(&quiet, m, RK(marks), RK(name), 1, &out->name);
            if (quiet.error == NULL)
                r->nmarks++;
            free(quiet.error);
        }
    }
    json_t *dropped = json_object_get(v, RK(marks_dropped));
    if (json_is_integer(dropped) && json_integer_value(dropped) > 0)
        r->marks_dropped = (uint64_t)json_integer_value(dropped);
    /* Points at or after start_ns are absolute times: make them offsets. */
    if (!ctx->error && r->npoints > 0 && r->timeline_start_ns > 0 && r->points[0].t_ns >= r->timeline_start_ns)
        for (size_t i = 0; i < r->npoints; i++)
            r->points[i].t_ns -= r->timeline_start_ns;
    return ctx->error ? -1 : 0;
}

static int load_process(ctx_t *ctx, json_t *root, load_report_t *r)
{
    json_t *p = get_typed(ctx, root, "", RK(process), 0, is_object, "an object");
    if (p == NULL)
        return ctx->error ? -1 : 0;
    get_int(ctx, p, RK(process), RK(pid), 0, 0, 1LL << 40, &r->pid);
    json_t *rank = field(ctx, p, RK(process), RK(rank), 0);
    if (rank != NULL) {
        r->has_rank = true;
        get_int(ctx, p, RK(process), RK(rank), 0, 0, 1LL << 40, &r->rank);
    }
    json_t *local = field(ctx, p, RK(process), RK(local_rank), 0);
    if (local != NULL) {
        r->has_local_rank = true;
        get_int(ctx, p, RK(process), RK(local_rank), 0, 0, 1LL << 40, &r->local_rank);
    }
    get_str(ctx, p, RK(process), RK(job), 0, &r->job);
    get_str(ctx, p, RK(process), RK(host), 0, &r->host);
    get_u64(ctx, p, RK(process), RK(start_time_ns), 0, &r->start_time_ns);
    get_u64(ctx, p, RK(process), RK(end_time_ns), 0, &r->end_time_ns);
    json_t *argv = get_typed(ctx, p, RK(process), RK(argv), 0, is_array, "an array");
    if (ctx->error)
        return -1;
    r->argc = argv ? json_array_size(argv) : 0;
    r->argv = calloc(r->argc + 1, sizeof *r->argv);
    if (r->argv == NULL)
        return fail(ctx, "out of memory");
    for (size_t i = 0; i < r->argc; i++) {
        json_t *a = json_array_get(argv, i);
        if (!json_is_string(a))
            return fail(ctx, "invalid report: \"process.argv[%zu]\" is not a string", i);
        r->argv[i] = json_string_value(a);
    }
    return 0;
}

/* The format and version are checked first and worded differently: a file
 * that is some other JSON deserves "not a gpuleak report", not a field list. */
static int check_identity(ctx_t *ctx, json_t *root)
{
    if (!json_is_object(root))
        return fail(ctx, "not a gpuleak report: the top level is not an object");
    json_t *format = json_object_get(root, RK(format));
    char q[48];
    if (format == NULL)
        return fail(ctx, "not a gpuleak report: \"format\" is missing");
    if (!json_is_string(format))
        return fail(ctx, "not a gpuleak report: \"format\" is not a string");
    if (strcmp(json_string_value(format), REPORT_FORMAT_NAME) != 0) {
        quote_value(json_string_value(format), q, sizeof q);
        return fail(ctx, "not a gpuleak report: \"format\" is \"%s\", not \"%s\"", q, REPORT_FORMAT_NAME);
    }
    json_t *version = json_object_get(root, RK(version));
    if (version == NULL)
        return fail(ctx, "not a gpuleak report: \"version\" is missing");
    if (!json_is_integer(version))
        return fail(ctx, "not a gpuleak report: \"version\" is not an integer");
    if (json_integer_value(version) < 1 || json_integer_value(version) > REPORT_FORMAT_VERSION)
        return fail(ctx, "unsupported report version %lld (this gpuleak reads versions 1 to %d)",
                    (long long)json_integer_value(version), REPORT_FORMAT_VERSION);
    return 0;
}

/* "status": when the report was written. moment and complete decide
 * whether check judges the leaks (a running program's live memory is not
 * leaked), and growth_judged whether it judges growth, so a wrong type
 * there refuses the report as a count's would; an unknown moment is a
 * newer shim's and is kept. signal and locks_skipped are only shown: one
 * this reader cannot read is left out, as an origin is. */
static int load_status(ctx_t *ctx, json_t *root, load_report_t *r)
{
    r->complete = true;
    r->growth_judged = true;
    json_t *status = get_typed(ctx, root, "", RK(status), 0, is_object, "an object");
    if (status == NULL)
        return ctx->error ? -1 : 0;
    json_t *judged = get_typed(ctx, status, RK(status), RK(growth_judged), 0, is_boolean, "a boolean");
    if (judged != NULL)
        r->growth_judged = json_is_true(judged);
    get_u64(ctx, status, RK(status), RK(growth_samples), 0, &r->growth_samples);
    get_str(ctx, status, RK(status), RK(tracking), 0, &r->tracking);
    get_str(ctx, status, RK(status), RK(reason), 0, &r->reason);
    get_str(ctx, status, RK(status), RK(moment), 0, &r->moment);
    json_t *complete = get_typed(ctx, status, RK(status), RK(complete), 0, is_boolean, "a boolean");
    if (complete != NULL)
        r->complete = json_is_true(complete);
    else if (r->moment != NULL)
        r->complete = strcmp(r->moment, "snapshot") != 0 && strcmp(r->moment, "request") != 0;
    json_t *sig = json_object_get(status, RK(signal));
    if (json_is_integer(sig) && json_integer_value(sig) > 0 && json_integer_value(sig) < 1024)
        r->signal = (long)json_integer_value(sig);
    json_t *locks = json_object_get(status, RK(locks_skipped));
    if (json_is_integer(locks) && json_integer_value(locks) > 0)
        r->locks_skipped = (uint64_t)json_integer_value(locks);
    return ctx->error ? -1 : 0;
}

static int by_site_id(const void *a, const void *b)
{
    const load_site_t *x = *(const load_site_t *const *)a, *y = *(const load_site_t *const *)b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The entries of r's site lists that carry the shim's origin, sorted by
 * id (malloc'd; NULL when none or out of memory): the oom section names
 * its sites by id alone, so their origins come from here, found in log
 * time however many holders a file lists. */
static const load_site_t **origin_index(const load_report_t *r, size_t *n)
{
    const load_list_t *lists[] = { &r->sites, &r->failures, &r->leaks, &r->kept, &r->reachable, &r->teardown,
                                   &r->growth, &r->held, &r->peak_sites };
    size_t total = 0;
    *n = 0;
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++)
        total += lists[l]->n;
    const load_site_t **index = total ? malloc(total * sizeof *index) : NULL;
    for (size_t l = 0; index != NULL && l < sizeof lists / sizeof lists[0]; l++)
        for (size_t i = 0; i < lists[l]->n; i++)
            if (lists[l]->v[i].origin_kind != LOAD_ORIGIN_NONE)
                index[(*n)++] = &lists[l]->v[i];
    if (index != NULL)
        qsort(index, *n, sizeof *index, by_site_id);
    return index;
}

/* Gives s, where it has no origin of its own, the origin (callers and via
 * too) and owner of the same site's entry in index. The callers are
 * copied, so that s owns them as every site does. */
static void borrow_origin(load_site_t *s, const load_site_t **index, size_t n)
{
    if (s->origin_kind != LOAD_ORIGIN_NONE || n == 0)
        return;
    const load_site_t want = { .id = s->id }, *key = &want;
    const load_site_t **hit = bsearch(&key, index, n, sizeof *index, by_site_id);
    if (hit == NULL)
        return;
    const load_site_t *from = *hit;
    s->origin_kind = from->origin_kind;
    s->origin_native = from->origin_native;
    s->origin_python = from->origin_python;
    s->has_via = from->has_via;
    s->via = from->via;
    s->owner = from->owner;
    if (from->ncallers > 0 && (s->callers = malloc(from->ncallers * sizeof *s->callers)) != NULL) {
        memcpy(s->callers, from->callers, from->ncallers * sizeof *s->callers);
        s->ncallers = from->ncallers;
    }
}

/* A site of the oom section, the refused allocation or a holder: its kind,
 * bytes and device (-1 when not given, as a holder's is not), its frames,
 * and its origin: its own should a shim write one, else, when it names its
 * site, that site's entry's in index. Returns 0, or -1 with the problem in
 * quiet and nothing left to free. A stack this reader cannot read leaves
 * the site without frames rather than unread. */
static int load_oom_site(ctx_t *quiet, json_t *v, const char *where, load_site_t *s,
                         const load_site_t **index, size_t nindex)
{
    if (!json_is_object(v))
        return fail(quiet, "invalid report: \"%s\" is not an object", where);
    long long device;
    get_u64(quiet, v, where, RK(site), 0, &s->id);
    get_str(quiet, v, where, RK(kind), 1, &s->kind);
    load_framework(quiet, v, where, s);
    get_u64(quiet, v, where, RK(bytes), 1, &s->bytes);
    get_int(quiet, v, where, RK(device), 0, -1, 1 << 20, &device);
    s->device = field(quiet, v, where, RK(device), 0) != NULL ? (long)device : -1;
    if (quiet->error)
        return -1;
    load_origin(quiet->report, v, s);
    load_holders(quiet->report, v, s);
    ctx_t frames = { .name = where, .report = quiet->report };
    if (load_site_stack(&frames, v, where, s) != 0) {
        if (s->owns_stack) {
            free(s->stack);
            free(s->python);
        }
        s->stack = NULL;
        s->python = NULL;
        s->nstack = s->npython = 0;
        s->owns_stack = false;
    }
    free(frames.error);
    if (field(quiet, v, where, RK(site), 0) != NULL)
        borrow_origin(s, index, nindex);
    return 0;
}

/* "oom", read after the lists whose entries carry the origins it borrows.
 * A display hint: read quietly (load_oom_t). */
static void load_oom(json_t *root, load_report_t *r)
{
    json_t *v = json_object_get(root, RK(oom));
    if (!json_is_object(v))
        return;
    load_oom_t *o = &r->oom;
    ctx_t quiet = { .name = RK(oom), .report = r };
    size_t nindex;
    const load_site_t **index = origin_index(r, &nindex);
    get_u64(&quiet, v, RK(oom), RK(count), 0, &o->count);
    get_u64(&quiet, v, RK(oom), RK(time_ns), 0, &o->time_ns);
    get_u64(&quiet, v, RK(oom), RK(live_bytes), 0, &o->live_bytes);
    get_u64(&quiet, v, RK(oom), RK(torch_reserved_bytes), 0, &o->torch_reserved_bytes);
    get_u64(&quiet, v, RK(oom), RK(torch_allocated_bytes), 0, &o->torch_allocated_bytes);
    load_composition(r, json_object_get(v, RK(composition)), &o->composition);
    if (quiet.error != NULL || load_oom_site(&quiet, v, RK(oom), &o->site, index, nindex) != 0) {
        free(quiet.error);
        free(index);
        memset(o, 0, sizeof *o);
        return;
    }
    r->has_oom = true;
    if (o->count == 0)
        o->count = 1; /* this one, at least */
    json_t *sites = json_object_get(v, RK(sites));
    size_t n = json_is_array(sites) ? json_array_size(sites) : 0;
    o->holders.v = n ? calloc(n, sizeof *o->holders.v) : NULL;
    char w[WHERE_MAX];
    for (size_t i = 0; o->holders.v != NULL && i < n; i++) {
        ctx_t one = { .name = "oom.sites", .report = r };
        index_where(w, RK(oom), RK(sites), i);
        load_site_t *h = &o->holders.v[o->holders.n];
        if (load_oom_site(&one, json_array_get(sites, i), w, h, index, nindex) == 0)
            o->holders.n++;
        else
            memset(h, 0, sizeof *h);
        free(one.error);
    }
    free(index);
}

/* One list of "python_layout" into *out (malloc'd; NULL when empty) and
 * *n: its strings, the others left out. Returns -1 when out of memory. */
static int load_folders(json_t *list, const char *const **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t size = json_is_array(list) ? json_array_size(list) : 0;
    const char **folders = size ? calloc(size, sizeof *folders) : NULL;
    if (size > 0 && folders == NULL)
        return -1;
    for (size_t i = 0; i < size; i++)
        if (json_is_string(json_array_get(list, i)))
            folders[(*n)++] = json_string_value(json_array_get(list, i));
    *out = folders;
    return 0;
}

/* "python_layout", read quietly (load.h says why). */
static int load_layout(ctx_t *ctx, json_t *root, load_report_t *r)
{
    json_t *v = json_object_get(root, RK(python_layout));
    if (!json_is_object(v))
        return 0;
    if (load_folders(json_object_get(v, RK(stdlib)), &r->layout.stdlib, &r->layout.nstdlib) != 0
        || load_folders(json_object_get(v, RK(packages)), &r->layout.packages, &r->layout.npackages) != 0)
        return fail(ctx, "out of memory");
    r->has_layout = r->layout.nstdlib + r->layout.npackages > 0;
    return 0;
}

/* "kinds": each kind's totals, by name. */
static int load_kinds(ctx_t *ctx, json_t *root, load_report_t *r)
{
    json_t *kinds = get_typed(ctx, root, "", RK(kinds), 0, is_object, "an object");
    if (kinds == NULL || ctx->error)
        return ctx->error ? -1 : 0;
    r->kinds = calloc(json_object_size(kinds) + 1, sizeof *r->kinds);
    if (r->kinds == NULL)
        return fail(ctx, "out of memory");
    const char *name;
    json_t *value;
    char w[WHERE_MAX];
    json_object_foreach(kinds, name, value) {
        snprintf(w, sizeof w, "kinds.%.60s", name);
        if (!json_is_object(value))
            return fail(ctx, "invalid report: \"%s\" is not an object", w);
        r->kinds[r->nkinds].name = name;
        if (load_totals(ctx, value, w, &r->kinds[r->nkinds].totals) != 0)
            return -1;
        r->nkinds++;
    }
    return 0;
}

/* "devices": each device's totals. */
static int load_devices(ctx_t *ctx, json_t *root, load_report_t *r)
{
    json_t *devices = get_typed(ctx, root, "", RK(devices), 0, is_array, "an array");
    if (devices == NULL || ctx->error)
        return ctx->error ? -1 : 0;
    size_t n = json_array_size(devices);
    r->devices = calloc(n + 1, sizeof *r->devices);
    if (r->devices == NULL)
        return fail(ctx, "out of memory");
    char w[WHERE_MAX];
    for (size_t i = 0; i < n && !ctx->error; i++) {
        json_t *d = json_array_get(devices, i);
        index_where(w, "", RK(devices), i);
        if (!json_is_object(d))
            return fail(ctx, "invalid report: \"%s\" is not an object", w);
        long long dev;
        get_int(ctx, d, w, RK(device), 1, 0, 1 << 20, &dev);
        r->devices[i].device = (long)dev;
        /* The shim nests the counters under "totals"; flat is accepted too. */
        json_t *t = get_typed(ctx, d, w, RK(totals), 0, is_object, "an object");
        char tw[WHERE_MAX];
        child_where(tw, w, RK(totals));
        if (!ctx->error)
            load_totals(ctx, t ? t : d, t ? tw : w, &r->devices[i].totals);
        r->ndevices++;
    }
    return ctx->error ? -1 : 0;
}

/* The site lists: leaks and their neighbours, failures, every site. */
static void load_lists(ctx_t *ctx, json_t *root, load_report_t *r)
{
    static const struct {
        enum report_key key;
        int required;
        enum list_kind kind;
        size_t offset;
    } lists[] = {
        { REPORT_KEY_leaks, 1, LIST_LEAKS, offsetof(load_report_t, leaks) },
        { REPORT_KEY_kept_by_libraries, 0, LIST_LEAKS, offsetof(load_report_t, kept) },
        { REPORT_KEY_reachable_at_exit, 0, LIST_LEAKS, offsetof(load_report_t, reachable) },
        { REPORT_KEY_teardown_leaks, 0, LIST_TEARDOWN, offsetof(load_report_t, teardown) },
        { REPORT_KEY_failures, 0, LIST_FAILURES, offsetof(load_report_t, failures) },
        { REPORT_KEY_sites, 1, LIST_SITES, offsetof(load_report_t, sites) },
    };
    for (size_t i = 0; i < sizeof lists / sizeof lists[0] && !ctx->error; i++) {
        const char *key = report_key(lists[i].key);
        json_t *arr = get_typed(ctx, root, "", key, lists[i].required, is_array, "an array");
        if (!ctx->error)
            load_list(ctx, arr, key, lists[i].kind,
                      (load_list_t *)((char *)r + lists[i].offset));
    }
}

/* "peak": what was live at the peak, the GPU's or the tensors'. */
static void load_peak(ctx_t *ctx, json_t *root, load_report_t *r)
{
    json_t *peak = field(ctx, root, "", RK(peak), 0);
    if (peak == NULL || ctx->error)
        return;
    r->has_peak = true;
    load_section(ctx, peak, RK(peak), &r->peak_bytes, &r->peak_at_ns, &r->peak_sites);
    r->peak_sites_bytes = r->peak_bytes;
    const char *at = NULL;
    if (json_is_object(peak) && !ctx->error)
        get_str(ctx, peak, RK(peak), RK(sites_at), 0, &at);
    if (at != NULL && strcmp(at, "tensors") == 0) {
        r->peak_at_tensors = true;
        get_u64(ctx, peak, RK(peak), RK(sites_at_bytes), 0, &r->peak_sites_bytes);
        for (size_t i = 0; r->peak_sites_bytes == 0 && i < r->peak_sites.n; i++)
            r->peak_sites_bytes = units_add(r->peak_sites_bytes, r->peak_sites.v[i].bytes);
        load_composition(r, json_object_get(peak, RK(composition)), &r->peak_composition);
    }
}

/* "growth", and what Python held at its finish. */
static void load_growth_and_held(ctx_t *ctx, json_t *root, load_report_t *r)
{
    json_t *growth = field(ctx, root, "", RK(growth), 0);
    if (growth != NULL && !ctx->error) {
        r->has_growth = true;
        load_section(ctx, growth, RK(growth), &r->growth_bytes, NULL, &r->growth);
    }
    json_t *held = json_object_get(root, RK(held_at_finish));
    if (json_is_object(held) && !ctx->error) {
        r->has_held = true;
        load_section(ctx, held, RK(held_at_finish), &r->held_bytes, NULL, &r->held);
        load_search(json_object_get(held, RK(holders_search)), r);
        load_composition(r, json_object_get(held, RK(composition)), &r->held_composition);
    }
}

/* "frameworks": whose arrays the tensor sites are (none: PyTorch's, or
 * no tensors). A display hint: names this reader does not know are left. */
static void load_frameworks(json_t *root, load_report_t *r)
{
    json_t *frameworks = json_object_get(root, RK(frameworks)), *entry;
    const char *name;
    if (!json_is_object(frameworks))
        return;
    json_object_foreach(frameworks, name, entry) {
        int f = report_framework_of(name);
        if (f >= 0)
            r->frameworks |= 1u << f;
    }
}

static int load_doc(ctx_t *ctx, json_t *root, load_report_t *r)
{
    if (check_identity(ctx, root) != 0 || load_stack_tables(ctx, root, r) != 0)
        return -1;
    load_status(ctx, root, r);
    load_process(ctx, root, r);
    load_frameworks(root, r);
    json_t *totals = get_typed(ctx, root, "", RK(totals), 1, is_object, "an object");
    if (ctx->error)
        return -1;
    load_totals(ctx, totals, RK(totals), &r->totals);
    get_u64(ctx, totals, RK(totals), RK(peak_time_ns), 0, &r->peak_time_ns);
    get_u64(ctx, totals, RK(totals), RK(unknown_frees), 0, &r->unknown_frees);
    if (load_kinds(ctx, root, r) != 0 || load_devices(ctx, root, r) != 0)
        return -1;
    load_lists(ctx, root, r);
    load_growth_and_held(ctx, root, r);
    load_composition(r, json_object_get(root, RK(composition)), &r->request_composition);
    load_peak(ctx, root, r);
    json_t *timeline = field(ctx, root, "", RK(timeline), 0);
    if (timeline != NULL && !ctx->error) {
        r->has_timeline = true;
        load_timeline(ctx, timeline, r);
    }
    if (!ctx->error)
        load_oom(root, r);
    if (!ctx->error)
        load_layout(ctx, root, r);
    return ctx->error ? -1 : 0;
}

/* Frees a report's text as load_file read it: mapped (read_regular,
 * mapped bytes) or malloc'd (read_stream, mapped 0). */
static void drop_text(char *buf, size_t mapped)
{
    if (buf != NULL && mapped)
        munmap(buf, mapped);
    else
        free(buf);
}

/* Frees a report from load_file/load_buffer, including one that failed half
 * way (every pointer is either NULL or owned). NULL is a no-op. */
void load_free(load_report_t *r)
{
    if (r == NULL)
        return;
    free_list(&r->leaks);
    free_list(&r->kept);
    free_list(&r->reachable);
    free_list(&r->teardown);
    free_list(&r->failures);
    free_list(&r->sites);
    free_list(&r->growth);
    free_list(&r->peak_sites);
    free_list(&r->held);
    free_site(&r->oom.site);
    free_list(&r->oom.holders);
    for (size_t i = 0; i < r->nstacks; i++) {
        free(r->stacks[i].stack);
        free(r->stacks[i].python);
    }
    free(r->stacks);
    free(r->frames);
    free(r->pyframes);
    free(r->points);
    free(r->marks);
    free(r->kinds);
    free(r->devices);
    free(r->argv);
    free((void *)r->layout.stdlib);
    free((void *)r->layout.packages);
    split_close(r->doc);
    json_decref((json_t *)r->whole);
    strpool_free(r->strings);
    if (r->owns_text)
        drop_text((char *)r->text, r->text_mapped);
    free((char *)r->path);
    free(r);
}

/* Whether list (NULL-terminated) holds key. */
static int names(const char *const *list, const char *key)
{
    for (size_t i = 0; list[i] != NULL; i++)
        if (strcmp(list[i], key) == 0)
            return 1;
    return 0;
}

/* Which top-level members a load reads: only those keep names (NULL: all)
 * and none that skip names (NULL: none). */
typedef struct {
    const char *const *keep, *const *skip;
} select_t;

/* How a report is read piecewise: the lists of sites and the stack
 * tables streamed, the sections that hold a list split to reach it; only
 * the members data (a select_t) selects (leaks and sites left out read as
 * empty lists). */
static split_rule_t report_rule(const char *path, const void *data)
{
    const char *const streamed[] = { RK(leaks), RK(kept_by_libraries), RK(reachable_at_exit),
        RK(teardown_leaks), RK(failures), RK(sites), RK(frames), RK(python_frames), RK(stacks),
        "peak.sites", "growth.sites", "held_at_finish.sites", NULL };
    const char *const sections[] = { RK(peak), RK(growth), RK(held_at_finish), NULL };
    const char *const required[] = { RK(leaks), RK(sites), NULL };
    const select_t *select = data;
    int nested = strchr(path, '.') != NULL;
    if (!nested && ((select->keep != NULL && !names(select->keep, path))
                    || (select->skip != NULL && names(select->skip, path))))
        return names(required, path) ? SPLIT_EMPTY : SPLIT_SKIP;
    if (names(streamed, path))
        return SPLIT_STREAM;
    return !nested && names(sections, path) ? SPLIT_MEMBERS : SPLIT_PARSE;
}

/* Reads len bytes of data named name into a new report: piecewise
 * (json_split.h) unless whole. NULL with ctx's error set when it is not a
 * report, and ctx->not_json when read piecewise and a piece was not JSON
 * (the caller then reads it whole). */
static load_report_t *load_text(ctx_t *ctx, const char *data, size_t len, const char *name,
                                const select_t *select, bool whole)
{
    load_report_t *r = calloc(1, sizeof *r);
    if (r == NULL || (r->path = strdup(name)) == NULL || (r->strings = strpool_new()) == NULL) {
        load_free(r);
        fail(ctx, "out of memory");
        return NULL;
    }
    r->text = data;
    r->text_len = len;
    json_t *root = NULL;
    if (!whole && (r->doc = split_open(data, len, report_rule, select)) != NULL) {
        root = split_root(r->doc);
    } else {
        json_error_t jerr;
        root = r->whole = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
        if (root == NULL) {
            char q[sizeof jerr.text];
            quote_value(jerr.text, q, sizeof q);
            fail(ctx, "not JSON (line %d, column %d: %s)%s", jerr.line, jerr.column, q,
                 json_error_code(&jerr) == json_error_premature_end_of_input ? "; truncated?" : "");
        }
    }
    ctx->report = r;
    if (root == NULL || load_doc(ctx, root, r) != 0) {
        load_free(r);
        return NULL;
    }
    return r;
}

/* load_buffer, reading only the members select selects. */
static load_report_t *load_selecting(const char *data, size_t len, const char *name,
                                     const select_t *select, char **error)
{
    ctx_t ctx = { .name = name };
    *error = NULL;
    if (len == 0) {
        fail(&ctx, "empty file, not a gpuleak report");
        *error = ctx.error;
        return NULL;
    }
    load_report_t *r = load_text(&ctx, data, len, name, select, false);
    if (r == NULL && ctx.not_json) {
        /* A piece was not JSON: jansson's own word on the whole text. */
        free(ctx.error);
        ctx = (ctx_t){ .name = name };
        r = load_text(&ctx, data, len, name, select, true);
    }
    *error = ctx.error;
    return r;
}

/* Parses and checks len bytes named name (used in messages); data must
 * outlive the report. Returns the report, or NULL with *error set to one
 * malloc'd line "NAME: problem" that the caller prints and frees. The
 * entry point the fuzzer drives. */
load_report_t *load_buffer(const char *data, size_t len, const char *name, char **error)
{
    const select_t all = { NULL, NULL };
    return load_selecting(data, len, name, &all, error);
}

/* Opens path for reading without waiting on it: a FIFO no one writes would
 * block fopen for good; opened this way, it reads as empty (no writer),
 * while a pipe with a writer (a shell's process substitution) reads as
 * usual. NULL with errno set on failure. */
static FILE *open_report(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    int flags = fcntl(fd, F_GETFL);
    FILE *f = flags >= 0 && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (f == NULL) {
        int saved = errno;
        close(fd);
        errno = saved;
    }
    return f;
}

/* A regular file's bytes, read at once into memory mapped for them with
 * its pages made present in one call: a 66 MB report read into a growing
 * malloc'd buffer spent 0.2 s faulting its pages in one by one. NULL with
 * neither flag set when f is not a regular file (or is empty), or the
 * mapping failed: read_stream reads it then. A file that shrinks meanwhile
 * gives what was there; one that grows, its size at the start. */
static char *read_regular(FILE *f, size_t *len, size_t *mapped, int *too_big, int *read_error)
{
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
        return NULL;
    if ((unsigned long long)st.st_size > LOAD_MAX_BYTES) {
        *too_big = 1;
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    char *buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (buf == MAP_FAILED)
        return NULL;
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fileno(f), buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            *read_error = 1;
            break;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    *len = got;
    *mapped = size;
    return buf;
}

/* The bytes of f read to its end into a growing buffer (a pipe, a FIFO,
 * /dev/stdin); NULL when out of memory or past LOAD_MAX_BYTES (*too_big). */
static char *read_stream(FILE *f, size_t *len, int *too_big)
{
    size_t cap = 65536;
    char *buf = malloc(cap);
    *len = 0;
    while (buf != NULL) {
        if (*len == cap) {
            if (cap >= LOAD_MAX_BYTES) {
                *too_big = 1;
                free(buf);
                return NULL;
            }
            char *bigger = realloc(buf, cap * 2);
            if (bigger == NULL) {
                free(buf);
                return NULL;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + *len, 1, cap - *len, f);
        *len += got;
        if (got == 0)
            break;
    }
    return buf;
}

/* load_file reading only the members select selects: NULL with *error
 * set (malloc'd) when the file cannot be read or is not a report. */
static load_report_t *load_file_selecting(const char *path, const select_t *select, char **error)
{
    ctx_t ctx = { .name = path, .report = NULL };
    *error = NULL;
    FILE *f = open_report(path);
    if (f == NULL) {
        fail(&ctx, "cannot open: %s", strerror(errno));
        *error = ctx.error;
        return NULL;
    }
    size_t len = 0, mapped = 0;
    int too_big = 0, read_error = 0;
    char *buf = read_regular(f, &len, &mapped, &too_big, &read_error);
    if (buf == NULL && !too_big && !read_error)
        buf = read_stream(f, &len, &too_big);
    read_error |= ferror(f);
    int saved = errno;
    fclose(f);
    if (buf == NULL || read_error || too_big) {
        if (buf == NULL && !too_big && !read_error)
            fail(&ctx, "out of memory");
        else if (too_big)
            fail(&ctx, "larger than %llu bytes, not a gpuleak report", LOAD_MAX_BYTES);
        else
            fail(&ctx, "cannot read: %s", strerror(saved));
        drop_text(buf, mapped);
        *error = ctx.error;
        return NULL;
    }
    load_report_t *r = load_selecting(buf, len, path, select, error);
    if (r != NULL) {
        r->owns_text = true;
        r->text_mapped = mapped;
    } else {
        drop_text(buf, mapped);
    }
    return r;
}

load_report_t *load_file(const char *path, char **error)
{
    const select_t all = { NULL, NULL };
    return load_file_selecting(path, &all, error);
}

load_report_t *load_file_keeping(const char *path, const char *const *keep, char **error)
{
    const select_t only = { keep, NULL };
    return load_file_selecting(path, &only, error);
}

/* Index of a known kind name in load_kind_names, or -1. */
int load_kind_index(const char *kind)
{
    for (int i = 0; kind != NULL && i < LOAD_KINDS; i++)
        if (strcmp(kind, load_kind_names[i]) == 0)
            return i;
    return -1;
}

int load_files(load_set_t *set, char *const *paths, size_t n)
{
    return load_files_skipping(set, paths, n, NULL);
}

int load_files_skipping(load_set_t *set, char *const *paths, size_t n, const char *const *skip)
{
    const select_t select = { NULL, skip };
    memset(set, 0, sizeof *set);
    set->v = calloc(n ? n : 1, sizeof *set->v);
    set->errors = calloc(n ? n : 1, sizeof *set->errors);
    if (set->v == NULL || set->errors == NULL) {
        fputs("gpuleak: out of memory\n", stderr);
        return -1;
    }
    set->n = n;
    for (size_t i = 0; i < n; i++) {
        set->v[i] = load_file_selecting(paths[i], &select, &set->errors[i]);
        if (set->v[i] != NULL)
            continue;
        if (set->errors[i] == NULL)
            set->errors[i] = strdup("out of memory");
        frame_text_error_line(set->errors[i]);
        set->bad++;
    }
    return 0;
}

void load_set_free(load_set_t *set)
{
    for (size_t i = 0; i < set->n; i++) {
        load_free(set->v[i]);
        free(set->errors[i]);
    }
    free(set->v);
    free(set->errors);
    memset(set, 0, sizeof *set);
}
