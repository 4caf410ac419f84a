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

static void put_key(FILE *f, const char *key)
{
    put_string(f, key);
    fputc_unlocked(':', f);
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

static void put_u64(FILE *f, const char *key, uint64_t value, int comma)
{
    put_key(f, key);
    put_uint(f, value);
    if (comma)
        fputc_unlocked(',', f);
}

/* "key":value for the other kinds of value, each then a comma when comma:
 * the keys come from common/report_keys.h (RK), the commas are the
 * caller's, as put_u64's. */
static void put_int(FILE *f, const char *key, long long value, int comma)
{
    put_key(f, key);
    fprintf(f, comma ? "%lld," : "%lld", value);
}

static void put_bool(FILE *f, const char *key, int value, int comma)
{
    put_key(f, key);
    fputs_unlocked(value ? "true" : "false", f);
    if (comma)
        fputc_unlocked(',', f);
}

static void put_real(FILE *f, const char *key, const char *format, double value, int comma)
{
    put_key(f, key);
    fprintf(f, format, value);
    if (comma)
        fputc_unlocked(',', f);
}

static void put_str(FILE *f, const char *key, const char *value, int comma)
{
    put_key(f, key);
    put_string(f, value);
    if (comma)
        fputc_unlocked(',', f);
}

static void put_hex(FILE *f, const char *key, uint64_t value, int comma)
{
    put_key(f, key);
    fprintf(f, comma ? "\"0x%llx\"," : "\"0x%llx\"", (unsigned long long)value);
}

/* "key":{ or "key":[, the object or array the caller fills and closes. */
static void put_open(FILE *f, const char *key, char bracket)
{
    put_key(f, key);
    fputc_unlocked(bracket, f);
}

/* The fields of a totals row, without braces, so a device entry can hold
 * them beside its "device" key. */
static void put_totals_fields(FILE *f, const totals_t *t)
{
    put_u64(f, RK(allocations), t->allocations, 1);
    put_u64(f, RK(frees), t->frees, 1);
    put_u64(f, RK(failed_allocations), t->failures, 1);
    put_u64(f, RK(bytes_allocated), t->bytes_allocated, 1);
    put_u64(f, RK(live_bytes), t->live_bytes, 1);
    put_u64(f, RK(peak_bytes), t->peak_bytes, 1);
    put_u64(f, RK(leaked_bytes), t->live_bytes, 1);
    put_u64(f, RK(leaked_allocations), t->live_allocations, 1);
    put_u64(f, RK(teardown_leaked_bytes), t->teardown_bytes, 1);
    put_u64(f, RK(teardown_leaked_allocations), t->teardown_allocations, 0);
}

static void put_totals(FILE *f, const totals_t *t)
{
    fputc_unlocked('{', f);
    put_totals_fields(f, t);
    fputc_unlocked('}', f);
}

/* The fields every frame has: "function", "file", "line" (null when
 * unknown) and "module", without braces, so each kind of frame adds its own. */
static void put_frame_fields(FILE *f, const char *function, const char *file, int line,
                             const char *module)
{
    put_key(f, RK(function));
    put_string(f, function);
    fputc_unlocked(',', f);
    put_key(f, RK(file));
    put_string(f, file);
    fputc_unlocked(',', f);
    put_key(f, RK(line));
    if (line > 0)
        fprintf(f, "%d,", line);
    else
        fputs_unlocked("null,", f);
    put_key(f, RK(module));
    put_string(f, module);
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

/* Writes the indices of slot's frames, after a comma unless *first. */
static void put_indices(FILE *f, const frame_slot_t *slot, int *first, int *budget)
{
    for (uint32_t i = 0; slot != NULL && i < slot->count && *budget > 0; i++, (*budget)--) {
        if (!*first)
            fputc_unlocked(',', f);
        put_uint(f, slot->first + i);
        *first = 0;
    }
}

/* One entry of "stacks": the site's native frames (inlined ones expanded)
 * and its Python frames, as indices into the frame tables. */
static void put_stack_entry(FILE *f, frame_tables_t *t, uint32_t site)
{
    const stack_record_t *stack = report_view_stack(site);
    fputc_unlocked('"', f);
    put_uint(f, site);
    fputs_unlocked("\":{", f);
    put_open(f, RK(stack), '[');
    int first = 1, budget = MAX_REPORT_FRAMES;
    for (int i = 0; stack != NULL && i < stack->native_count; i++)
        put_indices(f, native_slot(t, (uintptr_t)stack->frames[i]), &first, &budget);
    fputs_unlocked("],", f);
    put_open(f, RK(python_stack), '[');
    first = 1;
    budget = MAX_REPORT_FRAMES;
    for (int i = 0; stack != NULL && i < stack->python_count; i++)
        put_indices(f, python_slot(t, stack->frames[stack->native_count + i]), &first, &budget);
    fputs_unlocked("]}", f);
}

/* Marks site as named by a section, so that its stack is written. */
static void list_site(frame_tables_t *t, uint32_t site)
{
    if (t->listed != NULL && site <= t->listed_high)
        t->listed[site] = 1;
}

/* "stacks", "frames" and "python_frames", for every site marked. */
static void put_frame_tables(FILE *f, frame_tables_t *t)
{
    put_open(f, RK(stacks), '{');
    int first = 1;
    for (uint32_t site = 0; t->listed != NULL && site <= t->listed_high; site++) {
        if (!t->listed[site])
            continue;
        fputs_unlocked(first ? "\n" : ",\n", f);
        first = 0;
        put_stack_entry(f, t, site);
    }
    fputs_unlocked("},\n", f);
    put_open(f, RK(frames), '[');
    for (size_t i = 0; i < t->native_count; i++) {
        const symbolized_frame_t *fr = &t->native[i];
        fputs_unlocked(i ? ",\n{" : "\n{", f);
        put_frame_fields(f, fr->function, fr->file, fr->line, fr->module ? fr->module : "?");
        fputc_unlocked(',', f);
        put_hex(f, RK(offset), fr->offset, 1);
        put_hex(f, RK(address), fr->address, 1);
        put_bool(f, RK(inlined), fr->inlined, 0);
        fputc_unlocked('}', f);
    }
    fputs_unlocked("],\n", f);
    put_open(f, RK(python_frames), '[');
    for (size_t i = 0; i < t->python_count; i++) {
        const python_entry_t *e = &t->python[i];
        fputs_unlocked(i ? ",\n{" : "\n{", f);
        put_key(f, RK(function));
        put_string(f, e->function);
        fputc_unlocked(',', f);
        put_key(f, RK(file));
        put_string(f, e->file);
        fputc_unlocked(',', f);
        put_int(f, RK(line), e->line, 0);
        fputc_unlocked('}', f);
    }
    fputs_unlocked("],\n", f);
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

/* The site's "origin" (the frame docs/origin-rules.md picks as the user's
 * line, or null) and "owner", the last fields of a site entry. */
static void put_origin(FILE *f, frame_tables_t *t, uint32_t site, int kind)
{
    origin_site_t o = site_origin(t, site, kind);
    put_key(f, RK(origin));
    if (!o.found) {
        fputs_unlocked("null", f);
    } else {
        fputc_unlocked('{', f);
        put_frame_fields(f, o.frame.function, o.frame.file, o.frame.line, o.frame.module);
        fputc_unlocked(',', f);
        if (!o.frame.is_python)
            put_hex(f, RK(offset), o.offset, 1);
        put_bool(f, RK(python), o.frame.is_python, 0);
        if (o.library) {
            fputc_unlocked(',', f);
            put_bool(f, RK(library), 1, 0);
        }
        if (o.has_via) {
            fputc_unlocked(',', f);
            put_open(f, RK(via), '{');
            put_frame_fields(f, o.via.function, o.via.file, o.via.line, o.via.module);
            fputc_unlocked('}', f);
        }
        origin_frame_t callers[UINT8_MAX];
        int n = report_view_origin_callers(t->view, site, callers);
        if (n > 0) {
            fputc_unlocked(',', f);
            put_open(f, RK(callers), '[');
            for (int i = 0; i < n; i++) {
                fputs_unlocked(i ? ",{" : "{", f);
                put_frame_fields(f, callers[i].function, callers[i].file, callers[i].line,
                                 callers[i].module);
                fputc_unlocked('}', f);
            }
            fputc_unlocked(']', f);
        }
        fputc_unlocked('}', f);
    }
    fputc_unlocked(',', f);
    put_key(f, RK(owner));
    put_string(f, o.owner);
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
static void put_holder_list(FILE *f, const holder_t *holders, size_t count)
{
    if (count == 0)
        return;
    fputc_unlocked(',', f);
    put_open(f, RK(held_by), '[');
    size_t n = count < HOLDERS_LISTED ? count : HOLDERS_LISTED;
    for (size_t i = 0; i < n; i++) {
        const holder_t *h = &holders[i];
        fputs_unlocked(i ? ",{" : "{", f);
        put_key(f, RK(name));
        put_string(f, h->name);
        fputs_unlocked(",", f);
        put_key(f, RK(type));
        put_string(f, h->type);
        fputs_unlocked(",", f);
        put_key(f, RK(owner));
        put_string(f, h->owner[0] ? h->owner : NULL);
        fputs_unlocked(",", f);
        put_key(f, RK(file));
        put_string(f, h->file);
        if (h->path[0] != '\0') {
            fputs_unlocked(",", f);
            put_key(f, RK(path));
            put_string(f, h->path);
        }
        fputc_unlocked(',', f);
        put_bool(f, RK(graph), h->graph, 1);
        put_str(f, RK(role), composition_role_name((composition_role_t)h->role), 1);
        put_str(f, RK(part), h->part, 1);
        put_u64(f, RK(bytes), h->bytes, 1);
        put_u64(f, RK(allocations), h->allocations, 0);
        fputc_unlocked('}', f);
    }
    fputc_unlocked(']', f);
    if (count > n) {
        fputc_unlocked(',', f);
        put_u64(f, RK(held_by_more), count - n, 0);
    }
}

static void put_holders(FILE *f, const report_site_t *site)
{
    put_holder_list(f, site->holders, site->holder_count);
}

/* One site entry. "bytes" and "allocations" mean what the section is about:
 * live at exit for leaks, live at teardown, asked for and refused, or ever
 * allocated for the sites list. */
static void put_site(FILE *f, frame_tables_t *tables, const report_site_t *site,
                     enum section section)
{
    const site_stats_t *s = &site->stats;
    uint64_t bytes = s->bytes_allocated, count = s->allocations;
    if (section == SECTION_LEAKS) {
        bytes = s->live_bytes;
        count = s->live_allocations;
    } else if (section == SECTION_TEARDOWN) {
        bytes = s->teardown_bytes;
        count = s->teardown_allocations;
    } else if (section == SECTION_FAILURES) {
        bytes = s->failed_bytes;
        count = s->failures;
    } else if (section == SECTION_PEAK) {
        bytes = s->at_peak_bytes;
    } else if (section == SECTION_GROWTH) {
        bytes = site->growth.bytes_gained;
    } else if (section == SECTION_HELD) {
        bytes = site->held_bytes;
    }
    fputc_unlocked('{', f);
    put_u64(f, RK(site), site->id, 1);
    put_key(f, RK(kind));
    put_string(f, report_kind_name(s->kind));
    fputc_unlocked(',', f);
    put_int(f, RK(device), s->device, 1);
    put_u64(f, RK(bytes), bytes, 1);
    put_u64(f, section == SECTION_FAILURES ? RK(count) : RK(allocations), count, 1);
    if (section == SECTION_FAILURES)
        put_int(f, RK(result), s->last_failure, 1);
    if (section == SECTION_TEARDOWN) {
        put_key(f, RK(teardown));
        put_string(f, teardown_name(s->teardown_reason));
        fputc_unlocked(',', f);
    }
    if (section == SECTION_HELD)
        put_bool(f, RK(grew), site->growth.grew, 1);
    if (section == SECTION_GROWTH) {
        const growth_finding_t *g = &site->growth;
        put_real(f, RK(bytes_per_second), "%.1f", g->bytes_per_second, 1);
        put_real(f, RK(bytes_per_1k_allocations), "%.1f", g->bytes_per_1k_allocations, 1);
        put_real(f, RK(steadiness), "%.3f", g->steadiness, 1);
        put_real(f, RK(trend), "%.3f", g->trend, 1);
        put_u64(f, RK(baseline_bytes), g->baseline_bytes, 1);
        put_u64(f, RK(high_bytes), g->high_bytes, 1);
    }
    put_u64(f, RK(total_allocations), s->allocations, 1);
    put_u64(f, RK(frees), s->frees, 1);
    put_u64(f, RK(live_bytes), s->live_bytes, 1);
    put_u64(f, RK(peak_live_bytes), s->peak_live_bytes, 1);
    put_origin(f, tables, site->id, s->kind);
    put_holders(f, site);
    fputc_unlocked('}', f);
    list_site(tables, site->id);
}

/* The sites list is capped: a run with 100k call sites needs its leaks in
 * full, not every site's lifetime counters. */
#define SITES_LISTED 1000

static void put_list(FILE *f, frame_tables_t *tables, const char *key,
                     const report_list_t *list, enum section section)
{
    size_t n = list->count;
    if (section == SECTION_SITES && n > SITES_LISTED)
        n = SITES_LISTED;
    put_key(f, key);
    fputc_unlocked('[', f);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputs_unlocked(",\n", f);
        put_site(f, tables, &list->sites[i], section);
    }
    fputs_unlocked("]", f);
}

/* A rank's digits as a number ("007" is no JSON number), or null. */
static void put_rank(FILE *f, const char *rank)
{
    if (rank != NULL)
        fprintf(f, "%lu", strtoul(rank, NULL, 10));
    else
        fputs_unlocked("null", f);
}

static void put_process(FILE *f, const report_view_t *view)
{
    char host[256] = "";
    if (gethostname(host, sizeof host) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    const char *rank = view->run.rank;
    put_open(f, RK(process), '{');
    put_int(f, RK(pid), getpid(), 1);
    put_key(f, RK(host));
    put_string(f, host);
    fputc_unlocked(',', f);
    put_key(f, RK(rank));
    put_rank(f, rank);
    fputc_unlocked(',', f);
    put_key(f, RK(local_rank));
    put_rank(f, view->run.local_rank);
    fputc_unlocked(',', f);
    put_key(f, RK(job));
    put_string(f, view->run.job);
    fputc_unlocked(',', f);
    put_open(f, RK(argv), '[');
    /* This thread's: the process's (main's) is empty once main has left
     * through pthread_exit. */
    FILE *cmdline = fopen("/proc/thread-self/cmdline", "r");
    int redact = view->run.redact_argv;
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
            fputs_unlocked(first ? "" : ",", f);
            put_string(f, redact && !first ? "<redacted>" : arg);
            first = 0;
            len = 0;
        }
        fclose(cmdline);
    }
    fputs_unlocked("],", f);
    put_u64(f, RK(end_time_ns), view->now_ns + view->run.epoch_offset_ns, 1);
    put_key(f, RK(python));
    put_string(f, view->run.python_version);
    fputs_unlocked("},\n", f);
}

/* Times in the timeline are ns since tracking started; start_ns gives the
 * epoch, so points stay small and charts need no subtraction. */
static void put_timeline(FILE *f, const report_view_t *view)
{
    uint64_t start = view->run.started_ns;
    put_open(f, RK(timeline), '{');
    put_u64(f, RK(start_ns), start + view->run.epoch_offset_ns, 1);
    put_u64(f, RK(interval_ns), view->timeline_interval_ns, 1);
    put_open(f, RK(points), '[');
    for (size_t i = 0; i < view->timeline_count; i++) {
        const timeline_point_t *p = &view->timeline[i];
        fputs_unlocked(i ? ",\n{" : "\n{", f);
        put_u64(f, RK(t_ns), p->time_ns - start, 1);
        put_u64(f, RK(bytes), p->bytes, 1);
        put_u64(f, RK(max_bytes), p->max_bytes, 1);
        put_open(f, RK(kinds), '{');
        for (int k = 0; k < REPORT_KIND_COUNT; k++)
            fprintf(f, "%s\"%s\":%llu", k ? "," : "", report_kind_name(k),
                    (unsigned long long)p->kind_bytes[k]);
        fputs_unlocked("},", f);
        put_open(f, RK(devices), '{');
        int first = 1;
        for (int d = 0; d < TIMELINE_DEVICES; d++) {
            if (!(view->devices_seen & (1ull << d)))
                continue;
            fprintf(f, "%s\"%d\":%llu", first ? "" : ",", d, (unsigned long long)p->device_bytes[d]);
            first = 0;
        }
        fputs_unlocked("}", f);
        if (p->pool_reserved_bytes) {
            fputc_unlocked(',', f);
            put_u64(f, RK(pool_reserved_bytes), p->pool_reserved_bytes, 0);
        }
        fputs_unlocked("}", f);
    }
    fputs_unlocked("],\n", f);
    put_open(f, RK(marks), '[');
    for (size_t i = 0; i < view->mark_count; i++) {
        const mark_t *m = &view->marks[i];
        fputs_unlocked(i ? ",{" : "{", f);
        put_u64(f, RK(t_ns), m->time_ns > start ? m->time_ns - start : 0, 1);
        put_str(f, RK(name), m->name, 0);
        fputc_unlocked('}', f);
    }
    fputs_unlocked("],", f);
    put_u64(f, RK(marks_dropped), view->marks_dropped, 0);
    fputs_unlocked("},\n", f);
}

/* Which PyTorch allocator mode ran, whether its tensors were followed
 * through its events (and why not), the events of each action that
 * arrived, and what its cache held at the end (reserve sites' bytes). */
static void put_torch_mode(FILE *f, const report_view_t *view)
{
    put_open(f, RK(torch_allocator), '{');
    put_str(f, RK(mode), view->run.torch_mode, 1);
    put_str(f, RK(PYTORCH_CUDA_ALLOC_CONF), view->run.torch_alloc_conf, 1);
    put_str(f, RK(tensors), view->run.torch_status, 1);
    put_open(f, RK(events), '{');
    for (int a = 0; a < TORCH_ACTIONS; a++)
        put_u64(f, torch_events_action_name(a), view->run.torch_events[a], a + 1 < TORCH_ACTIONS);
    fputs_unlocked("},", f);
    put_u64(f, RK(reserve_bytes), view->reserve_bytes, 0);
    fputs_unlocked("}\n", f);
}

/* Where the program's Python keeps its standard library and installed
 * packages, as it said at its finish (null before that, or without
 * Python): the layout this report's origins were judged by, kept so that
 * `gpuleak report --origin-skip` judges them again the same way. */
static void put_python_layout(FILE *f)
{
    const origin_layout_t *layout = report_view_layout();
    put_key(f, RK(python_layout));
    if (layout == NULL) {
        fputs_unlocked("null,\n", f);
        return;
    }
    const struct { const char *key; const char *const *folders; size_t n; } lists[] = {
        { RK(stdlib), layout->stdlib, layout->nstdlib },
        { RK(packages), layout->packages, layout->npackages },
    };
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        fputs_unlocked(l ? "]," : "{", f);
        put_open(f, lists[l].key, '[');
        for (size_t i = 0; i < lists[l].n; i++) {
            fputs_unlocked(i ? "," : "", f);
            put_string(f, lists[l].folders[i]);
        }
    }
    fputs_unlocked("]},\n", f);
}

/* lead, then "composition":{...}: the GPU memory by role
 * (common/composition.h), each role's largest owners; "inferred" where the
 * roles come from the calls that made the tensors, not from a walk of the
 * heap. */
static void put_composition(FILE *f, const char *lead, const composition_t *c)
{
    fputs_unlocked(lead, f);
    put_open(f, RK(composition), '{');
    put_u64(f, RK(gpu_bytes), c->gpu_bytes, 1);
    if (c->inferred)
        put_bool(f, RK(inferred), 1, 1);
    put_open(f, RK(parts), '[');
    const char *sep = "";
    for (int r = 0; r < COMPOSITION_ROLE_COUNT; r++) {
        if (c->bytes[r] == 0)
            continue;
        fputs_unlocked(sep, f);
        sep = ",";
        fputc_unlocked('{', f);
        put_str(f, RK(role), composition_role_name((composition_role_t)r), 1);
        put_u64(f, RK(bytes), c->bytes[r], 1);
        put_open(f, RK(by), '[');
        for (int i = 0; i < COMPOSITION_TOP && c->by[r][i].name != NULL; i++) {
            fputs_unlocked(i ? ",{" : "{", f);
            put_str(f, RK(name), c->by[r][i].name, 1);
            put_u64(f, RK(bytes), c->by[r][i].bytes, 0);
            fputc_unlocked('}', f);
        }
        fputs_unlocked("]}", f);
    }
    fputs_unlocked("]}", f);
}

/* How a holder search went: "holders_search":{...}, after lead, and what
 * the GPU memory was then: "composition":{...}. */
static void put_search(FILE *f, const char *lead, const holder_search_t *hs)
{
    if (!hs->ran)
        return;
    fputs_unlocked(lead, f);
    put_open(f, RK(holders_search), '{');
    put_u64(f, RK(objects), hs->objects, 1);
    put_real(f, RK(seconds), "%.3f", hs->elapsed_ns / 1e9, 1);
    put_str(f, RK(ended), hs->ended, 1);
    put_u64(f, RK(named_allocations), hs->named_allocations, 1);
    put_u64(f, RK(named_bytes), hs->named_bytes, 0);
    fputc_unlocked('}', f);
    if (hs->composition.gpu_bytes > 0)
        put_composition(f, ",", &hs->composition);
}

/* What filled the GPU when an allocation first ran out of memory, and
 * who held it then (the search made at the failure). */
static void put_oom(FILE *f, frame_tables_t *tables, const report_view_t *view)
{
    const tracker_oom_t *oom = view->has_oom ? &view->oom : NULL;
    put_key(f, RK(oom));
    if (oom == NULL) {
        fputs_unlocked("null,\n", f);
        return;
    }
    fputc_unlocked('{', f);
    put_u64(f, RK(count), oom->count, 1);
    put_u64(f, RK(time_ns), oom->time_ns + view->run.epoch_offset_ns, 1);
    put_u64(f, RK(bytes), oom->bytes_asked, 1);
    put_str(f, RK(kind), report_kind_name(oom->kind), 1);
    put_int(f, RK(device), oom->device, 1);
    put_u64(f, RK(live_bytes), oom->live_bytes, 1);
    if (oom->kind == REPORT_KIND_tensor) {
        put_u64(f, RK(torch_reserved_bytes), oom->torch_reserved_bytes, 1);
        put_u64(f, RK(torch_allocated_bytes), oom->torch_allocated_bytes, 1);
    }
    put_u64(f, RK(site), oom->site, 1);
    put_open(f, RK(sites), '[');
    list_site(tables, oom->site);
    for (size_t i = 0; i < view->oom_holder_count; i++) {
        const tracker_site_bytes_t *h = &oom->sites[view->oom_holders[i]];
        fputs_unlocked(i ? ",{" : "{", f);
        put_u64(f, RK(site), h->site, 1);
        put_str(f, RK(kind), report_kind_name(report_view_site_kind(h->site)), 1);
        put_u64(f, RK(bytes), h->bytes, 0);
        const holder_t *held;
        put_holder_list(f, held, report_view_holders(view->oom_set, h->site, &held));
        fputc_unlocked('}', f);
        list_site(tables, h->site);
    }
    fputc_unlocked(']', f);
    put_search(f, ",", &view->oom_search);
    fputs_unlocked("},\n", f);
}

/* An epoch time of the coarse clock's t, or 0 for none. */
static uint64_t epoch_ns(const report_view_t *view, uint64_t t)
{
    return t ? t + view->run.epoch_offset_ns : 0;
}

/* "status": the report's moment, whether tracking ran to it, what was
 * skipped or dropped, and whether growth was judged. */
static void put_status(FILE *f, const report_view_t *view)
{
    const char *reason = view->run.stop_reason;
    static const char *const moments[] = { "exit", "signal", "request", "snapshot" };
    put_open(f, RK(status), '{');
    put_str(f, RK(moment), moments[view->moment], 1);
    put_bool(f, RK(complete), view->moment <= REPORT_ON_SIGNAL, 1);
    put_str(f, RK(tracking), reason ? "off" : "on", 1);
    put_str(f, RK(reason), reason, 1);
    if (view->moment == REPORT_ON_SIGNAL)
        put_int(f, RK(signal), view->signal, 1);
    else
        put_str(f, RK(signal), NULL, 1);
    put_u64(f, RK(locks_skipped), view->locks_skipped, 1);
    put_u64(f, RK(stacks_dropped), view->run.stacks_dropped, 1);
    put_u64(f, RK(growth_sites_unfollowed), view->run.growth_sites_unfollowed, 1);
    /* Without it an empty growth list of a short run read as "nothing grew". */
    put_u64(f, RK(growth_samples), view->growth_samples, 1);
    put_bool(f, RK(growth_judged), view->growth_judged, 0);
    fputs_unlocked("},\n", f);
}

/* The shim's own time, when it was timed (GPULEAK_SELF_TIME), after the
 * totals' last field. */
static void put_self_time(FILE *f, const selftime_totals_t *self_time)
{
    const selftime_totals_t own = *self_time;
    if (own.calls == 0)
        return;
    fputc_unlocked(',', f);
    put_u64(f, RK(shim_time_ns), own.ns, 1);
    put_u64(f, RK(shim_timed_calls), own.calls, 1);
    put_u64(f, RK(shim_clock_read_ns), (uint64_t)(own.clock_ns + 0.5), 1);
    put_u64(f, RK(shim_captures), own.captures, 1);
    put_u64(f, RK(shim_native_stack_ns), own.native_ns, 1);
    put_u64(f, RK(shim_python_frames_ns), own.python_ns, 1);
    put_u64(f, RK(shim_intern_ns), own.intern_ns, 1);
    put_u64(f, RK(shim_native_frames), own.native_frames, 1);
    put_u64(f, RK(shim_unwound_frames), own.unwound_frames, 1);
    put_u64(f, RK(shim_reused_frames), own.reused_frames, 0);
}

/* "totals": every kind the driver handed out (host included, tensors not:
 * they live inside segments already counted, and have their own entry
 * under kinds); peak_bytes is GPU memory; the leaked fields are the leaks
 * section's, where PyTorch's cache is not a leak. */
static void put_totals_section(FILE *f, const report_view_t *view)
{
    const totals_t *t = &view->totals;
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
    put_open(f, RK(totals), '{');
    put_u64(f, RK(allocations), all.allocations, 1);
    put_u64(f, RK(frees), all.frees, 1);
    put_u64(f, RK(failed_allocations), all.failures, 1);
    put_u64(f, RK(unknown_frees), view->run.unknown_frees, 1);
    put_u64(f, RK(bytes_allocated), all.bytes_allocated, 1);
    put_u64(f, RK(live_bytes), all.live_bytes, 1);
    put_u64(f, RK(peak_bytes), t->peak_bytes, 1);
    put_u64(f, RK(peak_time_ns), epoch_ns(view, t->peak_time_ns), 1);
    put_u64(f, RK(leaked_bytes), view->leaked_bytes, 1);
    put_u64(f, RK(leaked_allocations), view->leaked_allocations, 1);
    put_u64(f, RK(kept_bytes), view->kept_bytes, 1);
    put_u64(f, RK(kept_allocations), view->kept_allocations, 1);
    put_u64(f, RK(reachable_bytes), view->reachable_bytes, 1);
    put_u64(f, RK(reachable_allocations), view->reachable_allocations, 1);
    put_u64(f, RK(teardown_leaked_bytes), all.teardown_bytes, 1);
    put_u64(f, RK(teardown_leaked_allocations), all.teardown_allocations, 1);
    put_u64(f, RK(maps), view->run.maps, 1);
    put_u64(f, RK(unmaps), view->run.unmaps, 1);
    put_u64(f, RK(sites), view->sites.count, 1);
    put_u64(f, RK(stacks), view->run.stacks, 1);
    put_u64(f, RK(shim_bytes), view->shim_bytes, 0);
    put_self_time(f, &view->run.self_time);
    fputs_unlocked("},\n", f);
}

/* "kinds" and "devices": the totals of each. */
static void put_kinds_and_devices(FILE *f, const report_view_t *view)
{
    put_open(f, RK(kinds), '{');
    for (int k = 0; k < REPORT_KIND_COUNT; k++) {
        fputs_unlocked(k ? "," : "", f);
        put_key(f, report_kind_name(k));
        put_totals(f, &view->kinds[k]);
    }
    fputs_unlocked("},\n", f);
    put_open(f, RK(devices), '[');
    int first = 1;
    for (int d = 0; d < TRACKER_MAX_DEVICES; d++) {
        if (!(view->devices_seen & (1ull << d)))
            continue;
        fputs_unlocked(first ? "{" : ",{", f);
        put_int(f, RK(device), d, 1);
        put_totals_fields(f, &view->devices[d]);
        fputc_unlocked('}', f);
        first = 0;
    }
    fputs_unlocked("],\n", f);
}

/* The lists of sites at exit: leaks; live at exit as the leaks are but a
 * library's for the process; live at exit too but held by the program's
 * names as Python finished (its shutdown, not the program, left it);
 * teardown leaks; failures; every site. */
static void put_exit_lists(FILE *f, frame_tables_t *tables, const report_view_t *view)
{
    put_list(f, tables, RK(leaks), &view->leaks, SECTION_LEAKS);
    fputs_unlocked(",\n", f);
    put_list(f, tables, RK(kept_by_libraries), &view->kept, SECTION_LEAKS);
    fputs_unlocked(",\n", f);
    put_list(f, tables, RK(reachable_at_exit), &view->reachable, SECTION_LEAKS);
    fputs_unlocked(",\n", f);
    put_list(f, tables, RK(teardown_leaks), &view->teardown, SECTION_TEARDOWN);
    fputs_unlocked(",\n", f);
    put_list(f, tables, RK(failures), &view->failures, SECTION_FAILURES);
    fputs_unlocked(",\n", f);
    put_list(f, tables, RK(sites), &view->sites, SECTION_SITES);
    fputs_unlocked(",\n", f);
}

/* "peak": the GPU's peak, and what each site held at the peak the sites
 * are taken at (the tensors' where PyTorch's events are followed). */
static void put_peak(FILE *f, frame_tables_t *tables, const report_view_t *view)
{
    const totals_t *t = &view->totals;
    put_open(f, RK(peak), '{');
    put_u64(f, RK(bytes), t->peak_bytes, 1);
    put_u64(f, RK(time_ns), epoch_ns(view, t->peak_time_ns), 1);
    const totals_t *at = view->peak_is_tensors ? &view->tensors : t;
    put_str(f, RK(sites_at), view->peak_is_tensors ? "tensors" : "gpu", 1);
    put_u64(f, RK(sites_at_bytes), at->peak_bytes, 1);
    put_u64(f, RK(sites_at_time_ns), epoch_ns(view, at->peak_time_ns), 1);
    put_list(f, tables, RK(sites), &view->peak, SECTION_PEAK);
    if (view->peak_composition.gpu_bytes > 0)
        put_composition(f, ",", &view->peak_composition);
    fputs_unlocked("},\n", f);
}

/* "held_at_finish" (null before Python finished, or without Python), and
 * the holder search of a report on request or a snapshot. */
static void put_held(FILE *f, frame_tables_t *tables, const report_view_t *view)
{
    put_key(f, RK(held_at_finish));
    if (view->held_time_ns == 0) {
        fputs_unlocked("null", f);
    } else {
        fputc_unlocked('{', f);
        put_u64(f, RK(time_ns), epoch_ns(view, view->held_time_ns), 1);
        put_u64(f, RK(gpu_bytes), view->held_gpu_bytes, 1);
        put_u64(f, RK(tensor_bytes), view->held_tensor_bytes, 1);
        put_list(f, tables, RK(sites), &view->held, SECTION_HELD);
        if (view->holder_set != NULL && view->holders_at_finish)
            put_search(f, ",\n", &view->holders);
        fputc_unlocked('}', f);
    }
    fputs_unlocked(",\n", f);
    if (view->holder_set != NULL && !view->holders_at_finish) {
        put_search(f, "", &view->holders);
        fputs_unlocked(",\n", f);
    } else if (view->live_composition.gpu_bytes > 0) {
        put_composition(f, "", &view->live_composition);
        fputs_unlocked(",\n", f);
    }
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
    fputc_unlocked('{', f);
    put_str(f, RK(format), REPORT_FORMAT_NAME, 1);
    put_int(f, RK(version), REPORT_FORMAT_VERSION, 1);
    fputc_unlocked('\n', f);
    put_open(f, RK(tool), '{');
    put_str(f, RK(name), "gpuleak", 1);
    put_str(f, RK(version), GPULEAK_VERSION, 0);
    fputs_unlocked("},\n", f);
    put_process(f, view);
    put_status(f, view);
    put_totals_section(f, view);
    put_kinds_and_devices(f, view);
    put_exit_lists(f, &tables, view);
    put_timeline(f, view);
    put_peak(f, &tables, view);
    put_list(f, &tables, RK(growth), &view->growth, SECTION_GROWTH);
    fputs_unlocked(",\n", f);
    put_held(f, &tables, view);
    put_python_layout(f);
    put_oom(f, &tables, view);
    put_frame_tables(f, &tables);
    free_frame_tables(&tables);
    put_torch_mode(f, view);
    fputs_unlocked("}\n", f);
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
