#define _GNU_SOURCE
#include "report_json.h"
#include "composition.h"
#include "report_format.h"
#include "report_keys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* uthash's default answer to a failed allocation is exit(-1), which would
 * end the watched program with a changed status while its report is being
 * written. In the non-fatal mode a failed add leaves the table as it was and
 * marks the slot, which is then dropped (its stack entry ends early). */
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(slot) ((slot)->dropped = 1)
#include <uthash.h>

#define MAX_REPORT_FRAMES 512

/* ---- the JSON writer --------------------------------------------------- */

/* Writes s as a JSON string; control characters and bytes that are not
 * valid UTF-8 lead bytes are escaped, so any file name stays parseable. */
static void put_string(FILE *f, const char *s)
{
    if (s == NULL) {
        fputs_unlocked("null", f);
        return;
    }
    fputc_unlocked('"', f);
    const unsigned char *run = (const unsigned char *)s;
    for (const unsigned char *p = run;; p++) {
        int plain = *p != '\0' && *p != '"' && *p != '\\' && *p >= 0x20 && *p < 0x7f;
        if (plain)
            continue;
        if (p > run)
            fwrite_unlocked(run, 1, (size_t)(p - run), f);
        if (*p == '\0')
            break;
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else
            fprintf(f, "\\u%04x", *p); /* control bytes, and bytes >= 0x80 as code points:
                                            lossless and always valid JSON */
        run = p + 1;
    }
    fputc_unlocked('"', f);
}

/* Writes value in decimal. A report of 100k stacks holds millions of
 * numbers, and fprintf's format parsing was the largest part of writing
 * them. */
static void put_uint(FILE *f, uint64_t value)
{
    char digits[20];
    size_t n = 0;
    do {
        digits[sizeof digits - ++n] = (char)('0' + value % 10);
        value /= 10;
    } while (value != 0);
    fwrite_unlocked(digits + sizeof digits - n, 1, n, f);
}

/* The report is about six containers deep; the writer keeps this many. */
#define JW_DEPTH 16

/* The report's JSON writer. It places its own commas: each member of an
 * object and each element of an array after the first gets one, so a
 * section's writer says what it writes and nothing of separators. A
 * container opened with lines puts each member after the first on a line
 * of its own (the report's sections, its lists of sites and frames), for a
 * person or a line-based tool reading the file. */
typedef struct jw {
    FILE *f;
    int depth;                 /* containers open */
    char close[JW_DEPTH];      /* each one's closing bracket */
    uint8_t lines[JW_DEPTH];   /* 1: a member per line */
    uint8_t filled[JW_DEPTH];  /* 1: it has a member already */
} jw_t;

/* Before a member or an element: the comma after the one before, and the
 * line break where its container puts one. */
static void jw_next(jw_t *w)
{
    int d = w->depth - 1;
    if (d < 0 || d >= JW_DEPTH)
        return;
    if (w->filled[d]) {
        fputc_unlocked(',', w->f);
        if (w->lines[d])
            fputc_unlocked('\n', w->f);
    }
    w->filled[d] = 1;
}

/* "key": before an object's member; an array's element has none (key
 * NULL). The keys come from common/report_keys.h (RK). */
static void jw_key(jw_t *w, const char *key)
{
    jw_next(w);
    if (key != NULL) {
        put_string(w->f, key);
        fputc_unlocked(':', w->f);
    }
}

/* Opens an object ('{') or an array ('['), as key's value; lines: a
 * member per line. Closed by jw_close. */
static void jw_open(jw_t *w, const char *key, char bracket, int lines)
{
    jw_key(w, key);
    fputc_unlocked(bracket, w->f);
    if (w->depth < JW_DEPTH) {
        w->close[w->depth] = bracket == '{' ? '}' : ']';
        w->lines[w->depth] = (uint8_t)lines;
        w->filled[w->depth] = 0;
    }
    w->depth++;
}

static void jw_close(jw_t *w)
{
    if (w->depth > 0 && --w->depth < JW_DEPTH)
        fputc_unlocked(w->close[w->depth], w->f);
}

/* Values, each as key's (NULL in an array). */
static void jw_u64(jw_t *w, const char *key, uint64_t value)
{
    jw_key(w, key);
    put_uint(w->f, value);
}

static void jw_int(jw_t *w, const char *key, long long value)
{
    jw_key(w, key);
    fprintf(w->f, "%lld", value);
}

static void jw_bool(jw_t *w, const char *key, int value)
{
    jw_key(w, key);
    fputs_unlocked(value ? "true" : "false", w->f);
}

static void jw_real(jw_t *w, const char *key, const char *format, double value)
{
    jw_key(w, key);
    fprintf(w->f, format, value);
}

/* A string, or null for NULL. */
static void jw_str(jw_t *w, const char *key, const char *value)
{
    jw_key(w, key);
    put_string(w->f, value);
}

static void jw_hex(jw_t *w, const char *key, uint64_t value)
{
    jw_key(w, key);
    fprintf(w->f, "\"0x%llx\"", (unsigned long long)value);
}

/* A line number, or null when unknown (0). */
static void jw_line(jw_t *w, const char *key, int line)
{
    jw_key(w, key);
    if (line > 0)
        fprintf(w->f, "%d", line);
    else
        fputs_unlocked("null", w->f);
}

/* ---- sections ---------------------------------------------------------- */

/* The fields of a totals row, without braces, so a device entry can hold
 * them beside its "device" key. */
static void put_totals_fields(jw_t *w, const totals_t *t)
{
    jw_u64(w, RK(allocations), t->allocations);
    jw_u64(w, RK(frees), t->frees);
    jw_u64(w, RK(failed_allocations), t->failures);
    jw_u64(w, RK(bytes_allocated), t->bytes_allocated);
    jw_u64(w, RK(live_bytes), t->live_bytes);
    jw_u64(w, RK(peak_bytes), t->peak_bytes);
    jw_u64(w, RK(leaked_bytes), t->live_bytes);
    jw_u64(w, RK(leaked_allocations), t->live_allocations);
    jw_u64(w, RK(teardown_leaked_bytes), t->teardown_bytes);
    jw_u64(w, RK(teardown_leaked_allocations), t->teardown_allocations);
}

/* The fields every frame has: "function", "file", "line" (null when
 * unknown) and "module", without braces, so each kind of frame adds its own. */
static void put_frame_fields(jw_t *w, const char *function, const char *file, int line,
                             const char *module)
{
    jw_str(w, RK(function), function);
    jw_str(w, RK(file), file);
    jw_line(w, RK(line), line);
    jw_str(w, RK(module), module);
}

/* Stacks are written once each, in "stacks", keyed by site; their frames
 * are written once each too, in "frames" and "python_frames", and a stack
 * names them by index. A run with 100,000 leaking sites repeats the same few
 * hundred frames in every stack, and every section lists the same sites:
 * written inline that was 561 MB and most of the time at exit. */

/* Where a captured frame (a return address, or a packed Python frame) went
 * in its table: symbolizing one address can give several frames (inlining). */
typedef struct frame_slot {
    uint64_t key;
    uint32_t first, count;
    int dropped;             /* set by uthash when it could not add the slot */
    UT_hash_handle hh;
} frame_slot_t;

typedef struct python_entry {
    const char *function, *file;
    int line;
} python_entry_t;

/* A site's origin as put_origin worked it out, for the kind it was asked
 * with; owner NULL until then. */
typedef struct site_origin {
    origin_site_t origin;
    int kind;
} site_origin_t;

typedef struct frame_tables {
    frame_slot_t *native_slots, *python_slots;
    symbolized_frame_t *native;
    python_entry_t *python;
    size_t native_count, native_cap, python_count, python_cap;
    unsigned char *listed;   /* per site id: 1 when some section names it */
    uint32_t listed_high;
    site_origin_t *origins;  /* per site id up to listed_high, or NULL: put_origin */
    const report_view_t *view;  /* for the callers shown with an origin */
} frame_tables_t;

/* Grows a table to hold one more entry. Returns 0, or -1 when memory is
 * out (the stack being written then ends early; nothing else is lost). */
static int reserve(void **table, size_t *cap, size_t count, size_t entry_size)
{
    if (count < *cap)
        return 0;
    size_t bigger = *cap ? *cap * 2 : 256;
    void *p = realloc(*table, bigger * entry_size);
    if (p == NULL)
        return -1;
    *table = p;
    *cap = bigger;
    return 0;
}

/* slot once HASH_ADD has run: NULL (and slot freed) when the table could
 * not take it for want of memory. */
static frame_slot_t *kept(frame_slot_t *slot)
{
    if (!slot->dropped)
        return slot;
    free(slot);
    return NULL;
}

/* The table slot of one return address, symbolized the first time it is
 * met. NULL when memory is out. */
static frame_slot_t *native_slot(frame_tables_t *t, uintptr_t address)
{
    uint64_t key = address;
    frame_slot_t *slot;
    HASH_FIND(hh, t->native_slots, &key, sizeof key, slot);
    if (slot != NULL)
        return slot;
    symbolized_frame_t found[64];
    int n = report_view_native_frames(address, found, 64);
    slot = calloc(1, sizeof *slot);
    if (slot == NULL)
        return NULL;
    slot->key = key;
    slot->first = (uint32_t)t->native_count;
    for (int i = 0; i < n; i++) {
        if (reserve((void **)&t->native, &t->native_cap, t->native_count, sizeof *t->native) != 0)
            break;
        t->native[t->native_count++] = found[i];
        slot->count++;
    }
    HASH_ADD(hh, t->native_slots, key, sizeof key, slot);
    return kept(slot);
}

/* The table slot of one packed Python frame; count is 0 for a frame the
 * python module cannot describe (it is left out). NULL when memory is out. */
static frame_slot_t *python_slot(frame_tables_t *t, uint64_t packed)
{
    frame_slot_t *slot;
    HASH_FIND(hh, t->python_slots, &packed, sizeof packed, slot);
    if (slot != NULL)
        return slot;
    slot = calloc(1, sizeof *slot);
    if (slot == NULL)
        return NULL;
    slot->key = packed;
    slot->first = (uint32_t)t->python_count;
    python_entry_t e;
    if (report_view_python_frame(packed, &e.function, &e.file, &e.line) == 0
        && reserve((void **)&t->python, &t->python_cap, t->python_count, sizeof *t->python) == 0) {
        t->python[t->python_count++] = e;
        slot->count = 1;
    }
    HASH_ADD(hh, t->python_slots, key, sizeof packed, slot);
    return kept(slot);
}

/* Writes the indices of slot's frames as elements of the open array. */
static void put_indices(jw_t *w, const frame_slot_t *slot, int *budget)
{
    for (uint32_t i = 0; slot != NULL && i < slot->count && *budget > 0; i++, (*budget)--)
        jw_u64(w, NULL, slot->first + i);
}

/* One entry of "stacks": the site's native frames (inlined ones expanded)
 * and its Python frames, as indices into the frame tables. */
static void put_stack_entry(jw_t *w, frame_tables_t *t, uint32_t site)
{
    const stack_record_t *stack = report_view_stack(site);
    char key[16];
    snprintf(key, sizeof key, "%u", site);
    jw_open(w, key, '{', 0);
    jw_open(w, RK(stack), '[', 0);
    int budget = MAX_REPORT_FRAMES;
    for (int i = 0; stack != NULL && i < stack->native_count; i++)
        put_indices(w, native_slot(t, (uintptr_t)stack->frames[i]), &budget);
    jw_close(w);
    jw_open(w, RK(python_stack), '[', 0);
    budget = MAX_REPORT_FRAMES;
    for (int i = 0; stack != NULL && i < stack->python_count; i++)
        put_indices(w, python_slot(t, stack->frames[stack->native_count + i]), &budget);
    jw_close(w);
    jw_close(w);
}

/* Marks site as named by a section, so that its stack is written. */
static void list_site(frame_tables_t *t, uint32_t site)
{
    if (t->listed != NULL && site <= t->listed_high)
        t->listed[site] = 1;
}

/* "stacks", "frames" and "python_frames", for every site marked. */
static void put_frame_tables(jw_t *w, frame_tables_t *t)
{
    jw_open(w, RK(stacks), '{', 1);
    for (uint32_t site = 0; t->listed != NULL && site <= t->listed_high; site++)
        if (t->listed[site])
            put_stack_entry(w, t, site);
    jw_close(w);
    jw_open(w, RK(frames), '[', 1);
    for (size_t i = 0; i < t->native_count; i++) {
        const symbolized_frame_t *fr = &t->native[i];
        jw_open(w, NULL, '{', 0);
        put_frame_fields(w, fr->function, fr->file, fr->line, fr->module ? fr->module : "?");
        jw_hex(w, RK(offset), fr->offset);
        jw_hex(w, RK(address), fr->address);
        jw_bool(w, RK(inlined), fr->inlined);
        jw_close(w);
    }
    jw_close(w);
    jw_open(w, RK(python_frames), '[', 1);
    for (size_t i = 0; i < t->python_count; i++) {
        const python_entry_t *e = &t->python[i];
        jw_open(w, NULL, '{', 0);
        jw_str(w, RK(function), e->function);
        jw_str(w, RK(file), e->file);
        jw_int(w, RK(line), e->line);
        jw_close(w);
    }
    jw_close(w);
}

static void free_frame_tables(frame_tables_t *t)
{
    frame_slot_t *slot, *next;
    HASH_ITER(hh, t->native_slots, slot, next) {
        HASH_DEL(t->native_slots, slot);
        free(slot);
    }
    HASH_ITER(hh, t->python_slots, slot, next) {
        HASH_DEL(t->python_slots, slot);
        free(slot);
    }
    free(t->native);
    free(t->python);
    free(t->listed);
    free(t->origins);
}

/* The site's origin, worked out once a report: a site can be in four of
 * its sections (leaks, sites, peak, growth), and deciding (every frame
 * described and matched against the rules) was a quarter of the report's
 * time. Computed afresh when there is no memory for the memo. */
static origin_site_t site_origin(frame_tables_t *t, uint32_t site, int kind)
{
    origin_site_t o;
    site_origin_t *memo = t->origins != NULL && site <= t->listed_high ? &t->origins[site] : NULL;
    if (memo != NULL && memo->origin.owner != NULL && memo->kind == kind)
        return memo->origin;
    report_view_origin(site, kind, &o);
    if (memo != NULL)
        *memo = (site_origin_t){ o, kind };
    return o;
}

/* The origin's frame, its offset or Python mark, the library and "via"
 * marks and the user's callers shown with it. */
static void put_origin_frame(jw_t *w, frame_tables_t *t, uint32_t site, const origin_site_t *o)
{
    jw_open(w, RK(origin), '{', 0);
    put_frame_fields(w, o->frame.function, o->frame.file, o->frame.line, o->frame.module);
    if (!o->frame.is_python)
        jw_hex(w, RK(offset), o->offset);
    jw_bool(w, RK(python), o->frame.is_python);
    if (o->library)
        jw_bool(w, RK(library), 1);
    if (o->has_via) {
        jw_open(w, RK(via), '{', 0);
        put_frame_fields(w, o->via.function, o->via.file, o->via.line, o->via.module);
        jw_close(w);
    }
    origin_frame_t callers[UINT8_MAX];
    int n = report_view_origin_callers(t->view, site, callers);
    if (n > 0) {
        jw_open(w, RK(callers), '[', 0);
        for (int i = 0; i < n; i++) {
            jw_open(w, NULL, '{', 0);
            put_frame_fields(w, callers[i].function, callers[i].file, callers[i].line, callers[i].module);
            jw_close(w);
        }
        jw_close(w);
    }
    jw_close(w);
}

/* The site's "origin" (the frame docs/origin-rules.md picks as the user's
 * line, or null) and "owner". */
static void put_origin(jw_t *w, frame_tables_t *t, uint32_t site, int kind)
{
    origin_site_t o = site_origin(t, site, kind);
    if (o.found)
        put_origin_frame(w, t, site, &o);
    else
        jw_str(w, RK(origin), NULL);
    jw_str(w, RK(owner), o.owner);
}

static const char *teardown_name(int reason)
{
    return reason == TEARDOWN_CTX_DESTROY ? "cuCtxDestroy"
         : reason == TEARDOWN_PRIMARY_RESET ? "cuDevicePrimaryCtxReset" : NULL;
}

enum section { SECTION_LEAKS, SECTION_TEARDOWN, SECTION_FAILURES, SECTION_SITES,
               SECTION_PEAK, SECTION_GROWTH, SECTION_HELD };

/* The holders shown per site; the rest are counted in "held_by_more". */
#define HOLDERS_LISTED 5

/* The Python objects that held a site's memory (count of them). */
static void put_holder_list(jw_t *w, const holder_t *holders, size_t count)
{
    if (count == 0)
        return;
    jw_open(w, RK(held_by), '[', 0);
    size_t n = count < HOLDERS_LISTED ? count : HOLDERS_LISTED;
    for (size_t i = 0; i < n; i++) {
        const holder_t *h = &holders[i];
        jw_open(w, NULL, '{', 0);
        jw_str(w, RK(name), h->name);
        jw_str(w, RK(type), h->type);
        jw_str(w, RK(owner), h->owner[0] ? h->owner : NULL);
        jw_str(w, RK(file), h->file);
        if (h->path[0] != '\0')
            jw_str(w, RK(path), h->path);
        jw_bool(w, RK(graph), h->graph);
        jw_str(w, RK(role), composition_role_name((composition_role_t)h->role));
        jw_str(w, RK(part), h->part);
        jw_u64(w, RK(bytes), h->bytes);
        jw_u64(w, RK(allocations), h->allocations);
        jw_close(w);
    }
    jw_close(w);
    if (count > n)
        jw_u64(w, RK(held_by_more), count - n);
}

/* A site entry's "bytes" and "allocations" (or "count"): what its section
 * is about: live at exit for leaks, live at teardown, asked for and
 * refused, live at the peak, gained, held, or ever allocated for the sites
 * list. */
static void site_amounts(const report_site_t *site, enum section section, uint64_t *bytes,
                         uint64_t *count)
{
    const site_stats_t *s = &site->stats;
    *bytes = s->bytes_allocated;
    *count = s->allocations;
    if (section == SECTION_LEAKS) {
        *bytes = s->live_bytes;
        *count = s->live_allocations;
    } else if (section == SECTION_TEARDOWN) {
        *bytes = s->teardown_bytes;
        *count = s->teardown_allocations;
    } else if (section == SECTION_FAILURES) {
        *bytes = s->failed_bytes;
        *count = s->failures;
    } else if (section == SECTION_PEAK) {
        *bytes = s->at_peak_bytes;
    } else if (section == SECTION_GROWTH) {
        *bytes = site->growth.bytes_gained;
    } else if (section == SECTION_HELD) {
        *bytes = site->held_bytes;
    }
}

/* What a growth finding says of its site. */
static void put_growth_fields(jw_t *w, const growth_finding_t *g)
{
    jw_real(w, RK(bytes_per_second), "%.1f", g->bytes_per_second);
    jw_real(w, RK(bytes_per_1k_allocations), "%.1f", g->bytes_per_1k_allocations);
    jw_real(w, RK(steadiness), "%.3f", g->steadiness);
    jw_real(w, RK(trend), "%.3f", g->trend);
    jw_u64(w, RK(baseline_bytes), g->baseline_bytes);
    jw_u64(w, RK(high_bytes), g->high_bytes);
}

/* One site entry of a section. */
static void put_site(jw_t *w, frame_tables_t *tables, const report_site_t *site,
                     enum section section)
{
    const site_stats_t *s = &site->stats;
    uint64_t bytes, count;
    site_amounts(site, section, &bytes, &count);
    jw_open(w, NULL, '{', 0);
    jw_u64(w, RK(site), site->id);
    jw_str(w, RK(kind), report_kind_name(s->kind));
    if (site->framework >= 0)
        jw_str(w, RK(framework), report_framework_text(site->framework, REPORT_FRAMEWORK_NAME));
    jw_int(w, RK(device), s->device);
    jw_u64(w, RK(bytes), bytes);
    jw_u64(w, section == SECTION_FAILURES ? RK(count) : RK(allocations), count);
    if (section == SECTION_FAILURES)
        jw_int(w, RK(result), s->last_failure);
    if (section == SECTION_TEARDOWN)
        jw_str(w, RK(teardown), teardown_name(s->teardown_reason));
    if (section == SECTION_HELD)
        jw_bool(w, RK(grew), site->growth.grew);
    if (section == SECTION_GROWTH)
        put_growth_fields(w, &site->growth);
    jw_u64(w, RK(total_allocations), s->allocations);
    jw_u64(w, RK(frees), s->frees);
    jw_u64(w, RK(live_bytes), s->live_bytes);
    jw_u64(w, RK(peak_live_bytes), s->peak_live_bytes);
    put_origin(w, tables, site->id, s->kind);
    put_holder_list(w, site->holders, site->holder_count);
    jw_close(w);
    list_site(tables, site->id);
}

/* The sites list is capped: a run with 100k call sites needs its leaks in
 * full, not every site's lifetime counters. */
#define SITES_LISTED 1000

static void put_list(jw_t *w, frame_tables_t *tables, const char *key,
                     const report_list_t *list, enum section section)
{
    size_t n = list->count;
    if (section == SECTION_SITES && n > SITES_LISTED)
        n = SITES_LISTED;
    jw_open(w, key, '[', 1);
    for (size_t i = 0; i < n; i++)
        put_site(w, tables, &list->sites[i], section);
    jw_close(w);
}

/* A rank's digits as a number ("007" is no JSON number), or null. */
static void put_rank(jw_t *w, const char *key, const char *rank)
{
    if (rank != NULL)
        jw_u64(w, key, strtoul(rank, NULL, 10));
    else
        jw_str(w, key, NULL);
}

/* The process's arguments, from this thread's view: the process's
 * (main's) is empty once main has left through pthread_exit. */
static void put_argv(jw_t *w, int redact)
{
    jw_open(w, RK(argv), '[', 0);
    FILE *cmdline = fopen("/proc/thread-self/cmdline", "r");
    if (cmdline != NULL) {
        char arg[4096];
        size_t len = 0;
        int c, first = 1;
        while ((c = fgetc(cmdline)) != EOF) {
            if (c != '\0' && len < sizeof arg - 1) {
                arg[len++] = (char)c;
                continue;
            }
            if (c != '\0')
                continue;
            arg[len] = '\0';
            jw_str(w, NULL, redact && !first ? "<redacted>" : arg);
            first = 0;
            len = 0;
        }
        fclose(cmdline);
    }
    jw_close(w);
}

static void put_process(jw_t *w, const report_view_t *view)
{
    char host[256] = "";
    if (gethostname(host, sizeof host) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    jw_open(w, RK(process), '{', 0);
    jw_int(w, RK(pid), getpid());
    jw_str(w, RK(host), host);
    put_rank(w, RK(rank), view->run.rank);
    put_rank(w, RK(local_rank), view->run.local_rank);
    jw_str(w, RK(job), view->run.job);
    put_argv(w, view->run.redact_argv);
    jw_u64(w, RK(end_time_ns), view->now_ns + view->run.epoch_offset_ns);
    jw_str(w, RK(python), view->run.python_version);
    jw_close(w);
}

/* One timeline point: its time since start, live bytes, high, and the
 * bytes by kind and device. */
static void put_point(jw_t *w, const report_view_t *view, const timeline_point_t *p, uint64_t start)
{
    jw_open(w, NULL, '{', 0);
    jw_u64(w, RK(t_ns), p->time_ns - start);
    jw_u64(w, RK(bytes), p->bytes);
    jw_u64(w, RK(max_bytes), p->max_bytes);
    jw_open(w, RK(kinds), '{', 0);
    for (int k = 0; k < REPORT_KIND_COUNT; k++)
        jw_u64(w, report_kind_name(k), p->kind_bytes[k]);
    jw_close(w);
    jw_open(w, RK(devices), '{', 0);
    for (int d = 0; d < TIMELINE_DEVICES; d++) {
        char key[8];
        snprintf(key, sizeof key, "%d", d);
        if (view->devices_seen & (1ull << d))
            jw_u64(w, key, p->device_bytes[d]);
    }
    jw_close(w);
    if (p->pool_reserved_bytes)
        jw_u64(w, RK(pool_reserved_bytes), p->pool_reserved_bytes);
    jw_close(w);
}

/* Times in the timeline are ns since tracking started; start_ns gives the
 * epoch, so points stay small and charts need no subtraction. */
static void put_timeline(jw_t *w, const report_view_t *view)
{
    uint64_t start = view->run.started_ns;
    jw_open(w, RK(timeline), '{', 0);
    jw_u64(w, RK(start_ns), start + view->run.epoch_offset_ns);
    jw_u64(w, RK(interval_ns), view->timeline_interval_ns);
    jw_open(w, RK(points), '[', 1);
    for (size_t i = 0; i < view->timeline_count; i++)
        put_point(w, view, &view->timeline[i], start);
    jw_close(w);
    jw_open(w, RK(marks), '[', 0);
    for (size_t i = 0; i < view->mark_count; i++) {
        const mark_t *m = &view->marks[i];
        jw_open(w, NULL, '{', 0);
        jw_u64(w, RK(t_ns), m->time_ns > start ? m->time_ns - start : 0);
        jw_str(w, RK(name), m->name);
        jw_close(w);
    }
    jw_close(w);
    jw_u64(w, RK(marks_dropped), view->marks_dropped);
    jw_close(w);
}

/* Which PyTorch allocator mode ran, whether its tensors were followed
 * through its events (and why not), the events of each action that
 * arrived, and what its cache held at the end (reserve sites' bytes). */
static void put_torch_mode(jw_t *w, const report_view_t *view)
{
    jw_open(w, RK(torch_allocator), '{', 0);
    jw_str(w, RK(mode), view->run.torch_mode);
    jw_str(w, RK(PYTORCH_CUDA_ALLOC_CONF), view->run.torch_alloc_conf);
    jw_str(w, RK(tensors), view->run.torch_status);
    jw_open(w, RK(events), '{', 0);
    for (int a = 0; a < TORCH_ACTIONS; a++)
        jw_u64(w, torch_events_action_name(a), view->run.torch_events[a]);
    jw_close(w);
    jw_u64(w, RK(reserve_bytes), view->reserve_bytes);
    jw_close(w);
}

/* "framework": a tensor site's, by report_view_site_framework. */
static void put_framework(jw_t *w, uint32_t site, int kind)
{
    int framework = report_view_site_framework(site, kind);
    if (framework >= 0)
        jw_str(w, RK(framework), report_framework_text(framework, REPORT_FRAMEWORK_NAME));
}

/* "frameworks": each framework whose arrays were followed, and how they
 * were seen: PyTorch's one by one (its allocator's events), JAX's in
 * snapshots (its list of live arrays), CuPy's one by one on the main
 * thread (its memory hook) and in snapshots for the others. */
static void put_frameworks(jw_t *w, const report_view_t *view)
{
    jw_open(w, RK(frameworks), '{', 0);
    for (int f = 0; f < REPORT_FRAMEWORK_COUNT; f++) {
        if (!(view->run.frameworks & 1u << f))
            continue;
        jw_open(w, report_framework_text(f, REPORT_FRAMEWORK_NAME), '{', 0);
        const pools_counts_t *c = &view->run.pools[f];
        const char *seen = f == REPORT_FRAMEWORK_torch ? "one by one"
                         : f == REPORT_FRAMEWORK_jax ? "in snapshots"
                         : view->run.cupy_hooked ? "one by one on the main thread, in snapshots elsewhere"
                                                 : "in snapshots";
        jw_str(w, RK(seen), seen);
        if (f != REPORT_FRAMEWORK_torch) {
            jw_u64(w, RK(live_arrays), c->live_arrays);
            jw_u64(w, RK(live_bytes), c->live_bytes);
            jw_u64(w, RK(arrays_seen_one_by_one), c->events);
            jw_u64(w, RK(from_snapshots), c->from_snapshots);
            jw_u64(w, RK(snapshots), c->snapshots);
        }
        jw_close(w);
    }
    jw_close(w);
}

/* Where the program's Python keeps its standard library and installed
 * packages, as it said at its finish (null before that, or without
 * Python): the layout this report's origins were judged by, kept so that
 * `gpuleak report --origin-skip` judges them again the same way. */
static void put_python_layout(jw_t *w)
{
    const origin_layout_t *layout = report_view_layout();
    if (layout == NULL) {
        jw_str(w, RK(python_layout), NULL);
        return;
    }
    const struct { const char *key; const char *const *folders; size_t n; } lists[] = {
        { RK(stdlib), layout->stdlib, layout->nstdlib },
        { RK(packages), layout->packages, layout->npackages },
    };
    jw_open(w, RK(python_layout), '{', 0);
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        jw_open(w, lists[l].key, '[', 0);
        for (size_t i = 0; i < lists[l].n; i++)
            jw_str(w, NULL, lists[l].folders[i]);
        jw_close(w);
    }
    jw_close(w);
}

/* "composition":{...}: the GPU memory by role (common/composition.h), each
 * role's largest owners; "inferred" where the roles come from the calls
 * that made the tensors, not from a walk of the heap. */
static void put_composition(jw_t *w, const composition_t *c)
{
    jw_open(w, RK(composition), '{', 0);
    jw_u64(w, RK(gpu_bytes), c->gpu_bytes);
    if (c->inferred)
        jw_bool(w, RK(inferred), 1);
    jw_open(w, RK(parts), '[', 0);
    for (int r = 0; r < COMPOSITION_ROLE_COUNT; r++) {
        if (c->bytes[r] == 0)
            continue;
        jw_open(w, NULL, '{', 0);
        jw_str(w, RK(role), composition_role_name((composition_role_t)r));
        jw_u64(w, RK(bytes), c->bytes[r]);
        jw_open(w, RK(by), '[', 0);
        for (int i = 0; i < COMPOSITION_TOP && c->by[r][i].name != NULL; i++) {
            jw_open(w, NULL, '{', 0);
            jw_str(w, RK(name), c->by[r][i].name);
            jw_u64(w, RK(bytes), c->by[r][i].bytes);
            jw_close(w);
        }
        jw_close(w);
        jw_close(w);
    }
    jw_close(w);
    jw_close(w);
}

/* How a holder search went: "holders_search":{...}, and what the GPU
 * memory was then: "composition":{...}. Nothing when none ran. */
static void put_search(jw_t *w, const holder_search_t *hs)
{
    if (!hs->ran)
        return;
    jw_open(w, RK(holders_search), '{', 0);
    jw_u64(w, RK(objects), hs->objects);
    jw_real(w, RK(seconds), "%.3f", hs->elapsed_ns / 1e9);
    jw_str(w, RK(ended), hs->ended);
    jw_u64(w, RK(named_allocations), hs->named_allocations);
    jw_u64(w, RK(named_bytes), hs->named_bytes);
    jw_close(w);
    if (hs->composition.gpu_bytes > 0)
        put_composition(w, &hs->composition);
}

/* What filled the GPU when an allocation first ran out of memory, and
 * who held it then (the search made at the failure). */
static void put_oom(jw_t *w, frame_tables_t *tables, const report_view_t *view)
{
    const tracker_oom_t *oom = view->has_oom ? &view->oom : NULL;
    if (oom == NULL) {
        jw_str(w, RK(oom), NULL);
        return;
    }
    jw_open(w, RK(oom), '{', 0);
    jw_u64(w, RK(count), oom->count);
    jw_u64(w, RK(time_ns), oom->time_ns + view->run.epoch_offset_ns);
    jw_u64(w, RK(bytes), oom->bytes_asked);
    jw_str(w, RK(kind), report_kind_name(oom->kind));
    put_framework(w, oom->site, oom->kind);
    jw_int(w, RK(device), oom->device);
    jw_u64(w, RK(live_bytes), oom->live_bytes);
    if (oom->kind == REPORT_KIND_tensor) {
        jw_u64(w, RK(torch_reserved_bytes), oom->torch_reserved_bytes);
        jw_u64(w, RK(torch_allocated_bytes), oom->torch_allocated_bytes);
    }
    jw_u64(w, RK(site), oom->site);
    jw_open(w, RK(sites), '[', 0);
    list_site(tables, oom->site);
    for (size_t i = 0; i < view->oom_holder_count; i++) {
        const tracker_site_bytes_t *h = &oom->sites[view->oom_holders[i]];
        jw_open(w, NULL, '{', 0);
        jw_u64(w, RK(site), h->site);
        int kind = report_view_site_kind(h->site);
        jw_str(w, RK(kind), report_kind_name(kind));
        put_framework(w, h->site, kind);
        jw_u64(w, RK(bytes), h->bytes);
        const holder_t *held;
        put_holder_list(w, held, report_view_holders(view->oom_set, h->site, &held));
        jw_close(w);
        list_site(tables, h->site);
    }
    jw_close(w);
    put_search(w, &view->oom_search);
    jw_close(w);
}

/* An epoch time of the coarse clock's t, or 0 for none. */
static uint64_t epoch_ns(const report_view_t *view, uint64_t t)
{
    return t ? t + view->run.epoch_offset_ns : 0;
}

/* "status": the report's moment, whether tracking ran to it, what was
 * skipped or dropped, and whether growth was judged. */
static void put_status(jw_t *w, const report_view_t *view)
{
    const char *reason = view->run.stop_reason;
    static const char *const moments[] = { "exit", "signal", "request", "snapshot" };
    jw_open(w, RK(status), '{', 0);
    jw_str(w, RK(moment), moments[view->moment]);
    jw_bool(w, RK(complete), view->moment <= REPORT_ON_SIGNAL);
    jw_str(w, RK(tracking), reason ? "off" : "on");
    jw_str(w, RK(reason), reason);
    if (view->moment == REPORT_ON_SIGNAL)
        jw_int(w, RK(signal), view->signal);
    else
        jw_str(w, RK(signal), NULL);
    jw_u64(w, RK(locks_skipped), view->locks_skipped);
    jw_u64(w, RK(stacks_dropped), view->run.stacks_dropped);
    jw_u64(w, RK(growth_sites_unfollowed), view->run.growth_sites_unfollowed);
    /* Without it an empty growth list of a short run read as "nothing grew". */
    jw_u64(w, RK(growth_samples), view->growth_samples);
    jw_bool(w, RK(growth_judged), view->growth_judged);
    jw_close(w);
}

/* The shim's own time, when it was timed (GPULEAK_SELF_TIME), in the
 * totals. */
static void put_self_time(jw_t *w, const selftime_totals_t *self_time)
{
    const selftime_totals_t own = *self_time;
    if (own.calls == 0)
        return;
    jw_u64(w, RK(shim_time_ns), own.ns);
    jw_u64(w, RK(shim_timed_calls), own.calls);
    jw_u64(w, RK(shim_clock_read_ns), (uint64_t)(own.clock_ns + 0.5));
    jw_u64(w, RK(shim_captures), own.captures);
    jw_u64(w, RK(shim_native_stack_ns), own.native_ns);
    jw_u64(w, RK(shim_python_frames_ns), own.python_ns);
    jw_u64(w, RK(shim_intern_ns), own.intern_ns);
    jw_u64(w, RK(shim_native_frames), own.native_frames);
    jw_u64(w, RK(shim_unwound_frames), own.unwound_frames);
    jw_u64(w, RK(shim_reused_frames), own.reused_frames);
    jw_u64(w, RK(shim_trusted_captures), own.trusted);
}

/* Every driver kind's totals summed: tensors left out, they live inside
 * segments already counted. */
static totals_t driver_totals(const report_view_t *view)
{
    totals_t all = { 0 };
    for (int k = 0; k < REPORT_KIND_COUNT; k++) {
        const totals_t kt = view->kinds[k];
        if (k == REPORT_KIND_tensor)
            continue;
        all.allocations += kt.allocations;
        all.frees += kt.frees;
        all.failures += kt.failures;
        all.bytes_allocated += kt.bytes_allocated;
        all.live_bytes += kt.live_bytes;
        all.live_allocations += kt.live_allocations;
        all.teardown_bytes += kt.teardown_bytes;
        all.teardown_allocations += kt.teardown_allocations;
    }
    return all;
}

/* "totals": every kind the driver handed out (host included, tensors not:
 * they have their own entry under kinds); peak_bytes is GPU memory; the
 * leaked fields are the leaks section's, where PyTorch's cache is not a
 * leak. */
static void put_totals_section(jw_t *w, const report_view_t *view)
{
    const totals_t *t = &view->totals;
    totals_t all = driver_totals(view);
    jw_open(w, RK(totals), '{', 0);
    jw_u64(w, RK(allocations), all.allocations);
    jw_u64(w, RK(frees), all.frees);
    jw_u64(w, RK(failed_allocations), all.failures);
    jw_u64(w, RK(unknown_frees), view->run.unknown_frees);
    jw_u64(w, RK(bytes_allocated), all.bytes_allocated);
    jw_u64(w, RK(live_bytes), all.live_bytes);
    jw_u64(w, RK(peak_bytes), t->peak_bytes);
    jw_u64(w, RK(peak_time_ns), epoch_ns(view, t->peak_time_ns));
    jw_u64(w, RK(leaked_bytes), view->leaked_bytes);
    jw_u64(w, RK(leaked_allocations), view->leaked_allocations);
    jw_u64(w, RK(kept_bytes), view->kept_bytes);
    jw_u64(w, RK(kept_allocations), view->kept_allocations);
    jw_u64(w, RK(reachable_bytes), view->reachable_bytes);
    jw_u64(w, RK(reachable_allocations), view->reachable_allocations);
    jw_u64(w, RK(teardown_leaked_bytes), all.teardown_bytes);
    jw_u64(w, RK(teardown_leaked_allocations), all.teardown_allocations);
    jw_u64(w, RK(maps), view->run.maps);
    jw_u64(w, RK(unmaps), view->run.unmaps);
    jw_u64(w, RK(sites), view->sites.count);
    jw_u64(w, RK(stacks), view->run.stacks);
    jw_u64(w, RK(shim_bytes), view->shim_bytes);
    put_self_time(w, &view->run.self_time);
    jw_close(w);
}

/* "kinds" and "devices": the totals of each. */
static void put_kinds_and_devices(jw_t *w, const report_view_t *view)
{
    jw_open(w, RK(kinds), '{', 0);
    for (int k = 0; k < REPORT_KIND_COUNT; k++) {
        jw_open(w, report_kind_name(k), '{', 0);
        put_totals_fields(w, &view->kinds[k]);
        jw_close(w);
    }
    jw_close(w);
    jw_open(w, RK(devices), '[', 0);
    for (int d = 0; d < TRACKER_MAX_DEVICES; d++) {
        if (!(view->devices_seen & (1ull << d)))
            continue;
        jw_open(w, NULL, '{', 0);
        jw_int(w, RK(device), d);
        put_totals_fields(w, &view->devices[d]);
        jw_close(w);
    }
    jw_close(w);
}

/* The lists of sites at exit: leaks; live at exit as the leaks are but a
 * library's for the process; live at exit too but held by the program's
 * names as Python finished (its shutdown, not the program, left it);
 * teardown leaks; failures; every site. */
static void put_exit_lists(jw_t *w, frame_tables_t *tables, const report_view_t *view)
{
    put_list(w, tables, RK(leaks), &view->leaks, SECTION_LEAKS);
    put_list(w, tables, RK(kept_by_libraries), &view->kept, SECTION_LEAKS);
    put_list(w, tables, RK(reachable_at_exit), &view->reachable, SECTION_LEAKS);
    put_list(w, tables, RK(teardown_leaks), &view->teardown, SECTION_TEARDOWN);
    put_list(w, tables, RK(failures), &view->failures, SECTION_FAILURES);
    put_list(w, tables, RK(sites), &view->sites, SECTION_SITES);
}

/* "peak": the GPU's peak, and what each site held at the peak the sites
 * are taken at (the tensors' where PyTorch's events are followed). */
static void put_peak(jw_t *w, frame_tables_t *tables, const report_view_t *view)
{
    const totals_t *t = &view->totals;
    jw_open(w, RK(peak), '{', 0);
    jw_u64(w, RK(bytes), t->peak_bytes);
    jw_u64(w, RK(time_ns), epoch_ns(view, t->peak_time_ns));
    const totals_t *at = view->peak_is_tensors ? &view->tensors : t;
    jw_str(w, RK(sites_at), view->peak_is_tensors ? "tensors" : "gpu");
    jw_u64(w, RK(sites_at_bytes), at->peak_bytes);
    jw_u64(w, RK(sites_at_time_ns), epoch_ns(view, at->peak_time_ns));
    put_list(w, tables, RK(sites), &view->peak, SECTION_PEAK);
    if (view->peak_composition.gpu_bytes > 0)
        put_composition(w, &view->peak_composition);
    jw_close(w);
}

/* "held_at_finish" (null before Python finished, or without Python), and
 * the holder search of a report on request, or the composition of one no
 * search was made for. */
static void put_held(jw_t *w, frame_tables_t *tables, const report_view_t *view)
{
    if (view->held_time_ns == 0) {
        jw_str(w, RK(held_at_finish), NULL);
    } else {
        jw_open(w, RK(held_at_finish), '{', 0);
        jw_u64(w, RK(time_ns), epoch_ns(view, view->held_time_ns));
        jw_u64(w, RK(gpu_bytes), view->held_gpu_bytes);
        jw_u64(w, RK(tensor_bytes), view->held_tensor_bytes);
        put_list(w, tables, RK(sites), &view->held, SECTION_HELD);
        if (view->holder_set != NULL && view->holders_at_finish)
            put_search(w, &view->holders);
        jw_close(w);
    }
    if (view->holder_set != NULL && !view->holders_at_finish)
        put_search(w, &view->holders);
    else if (view->live_composition.gpu_bytes > 0)
        put_composition(w, &view->live_composition);
}

/* The whole report, section by section, in the format's order
 * (docs/report-format.md). */
static void write_body(FILE *f, const report_view_t *view)
{
    frame_tables_t tables = { 0 };
    tables.listed_high = view->run.site_count;
    tables.view = view;
    tables.listed = calloc((size_t)tables.listed_high + 1, 1); /* NULL: no stacks written */
    tables.origins = calloc((size_t)tables.listed_high + 1, sizeof *tables.origins);
    jw_t writer = { .f = f }, *w = &writer;
    jw_open(w, NULL, '{', 1);
    /* Its first member's text is how replaceable() knows a report. */
    jw_str(w, RK(format), REPORT_FORMAT_NAME);
    jw_int(w, RK(version), REPORT_FORMAT_VERSION);
    jw_open(w, RK(tool), '{', 0);
    jw_str(w, RK(name), "gpuleak");
    jw_str(w, RK(version), GPULEAK_VERSION);
    jw_close(w);
    put_process(w, view);
    put_status(w, view);
    put_totals_section(w, view);
    put_kinds_and_devices(w, view);
    put_exit_lists(w, &tables, view);
    put_timeline(w, view);
    put_peak(w, &tables, view);
    put_list(w, &tables, RK(growth), &view->growth, SECTION_GROWTH);
    put_held(w, &tables, view);
    put_python_layout(w);
    put_oom(w, &tables, view);
    put_frame_tables(w, &tables);
    free_frame_tables(&tables);
    put_torch_mode(w, view);
    put_frameworks(w, view);
    jw_close(w);
    fputc_unlocked('\n', f);
}

/* Whether path may be replaced: it does not exist, or it is a regular
 * file (not a link) of this user's that starts like a gpuleak report. A
 * report path that names someone's data must never cost them that data:
 * an empty file is data too (a placeholder made with its own mode, a hard
 * link), and so is another user's report in a folder both may write.
 * Returns 1 or 0, or -1 with errno set when it cannot tell (no descriptor
 * left). */
static int replaceable(const char *path)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? 1 : errno == EMFILE || errno == ENFILE || errno == ENOMEM ? -1 : 0;
    struct stat st;
    char head[64] = "";
    ssize_t n = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
        n = read(fd, head, sizeof head - 1);
    close(fd);
    if (n <= 0)
        return 0;
    head[n] = '\0';
    char prefix[64];
    int n_prefix = snprintf(prefix, sizeof prefix, "{\"%s\":\"%s\"", RK(format), REPORT_FORMAT_NAME);
    return n_prefix > 0 && strncmp(head, prefix, (size_t)n_prefix) == 0;
}

/* Creates path's temporary sibling, exclusively, into tmp. Its name is
 * unguessable: in a directory others can write (a shared /tmp) a name
 * known in advance (path.tmp.PID) can be taken first, and the report
 * would be lost. Returns the descriptor, or -1 with errno set. */
static int create_temporary(const char *path, char *tmp, size_t size)
{
    int fd = -1;
    for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
        uint32_t noise;
        if (getrandom(&noise, sizeof noise, GRND_NONBLOCK) != (ssize_t)sizeof noise) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            noise = (uint32_t)ts.tv_nsec ^ (uint32_t)attempt * 0x9E3779B9u;
        }
        if (snprintf(tmp, size, "%s.tmp.%d.%08x", path, (int)getpid(), noise) >= (int)size) {
            errno = ENAMETOOLONG;
            return -1;
        }
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            return -1;
    }
    return fd;
}

/* Moves the finished tmp to path without replacing anything there:
 * renameat2's RENAME_NOREPLACE, or a hard link where the file system has
 * no such rename. Returns 0, or -1 with errno set (EEXIST: path exists). */
static int place_new(const char *tmp, const char *path)
{
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
    if (link(tmp, path) != 0)
        return -1;
    unlink(tmp);
    return 0;
}

/* Where a report's bytes go: its temporary file, written by the process
 * that opened it only. A child forked while a report is being written
 * inherits the stream with its buffer and the descriptor, and its exit()
 * flushes that buffer into the same file (the offset is shared): stale
 * bytes in the parent's report, which it renames into place. Report
 * writes are serialized (report.c's write_lock), so one sink serves all. */
static struct report_sink {
    int fd;
    pid_t owner;
} sink;

static ssize_t sink_write(void *cookie, const char *buf, size_t size)
{
    const struct report_sink *s = cookie;
    if (getpid() != s->owner)
        return (ssize_t)size;  /* a forked child's flush: dropped */
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(s->fd, buf + done, size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return done > 0 ? (ssize_t)done : -1;
        done += (size_t)n;
    }
    return (ssize_t)done;
}

static int sink_close(void *cookie)
{
    const struct report_sink *s = cookie;
    return getpid() == s->owner ? close(s->fd) : 0;
}

int report_json_write(const char *path, const report_view_t *view, report_place_t place)
{
    int may = place == REPORT_REPLACE_REPORT ? replaceable(path) : 1;
    if (may <= 0) {
        if (may == 0)
            errno = EEXIST;
        return -1;
    }
    char tmp[4200];
    int fd = create_temporary(path, tmp, sizeof tmp);
    if (fd < 0)
        return -1;
    sink = (struct report_sink){ fd, getpid() };
    FILE *f = fopencookie(&sink, "w", (cookie_io_functions_t){ .write = sink_write, .close = sink_close });
    if (f != NULL) {
        __fsetlocking(f, FSETLOCKING_BYCALLER); /* one writer: skip the lock per byte */
        setvbuf(f, NULL, _IOFBF, 1 << 16);      /* few writes, and few pid checks */
    }
    if (f == NULL) {
        int err = errno;
        close(fd);
        unlink(tmp);
        errno = err;
        return -1;
    }
    write_body(f, view);
    int failed = ferror(f);
    if (fclose(f) != 0 || failed) {
        int err = errno ? errno : EIO;
        unlink(tmp);
        errno = err;
        return -1;
    }
    if ((place == REPORT_CREATE_ONLY ? place_new(tmp, path) : rename(tmp, path)) != 0) {
        int err = errno;
        unlink(tmp);
        errno = err;
        return -1;
    }
    return 0;
}
