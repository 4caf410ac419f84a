#define _GNU_SOURCE
#include "report.h"
#include "lifecycle.h"
#include "python.h"
#include "report_format.h"
#include "stacks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_REPORT_FRAMES 512

/* Writes s as a JSON string; control characters and bytes that are not
 * valid UTF-8 lead bytes are escaped, so any file name stays parseable. */
static void put_string(FILE *f, const char *s)
{
    if (s == NULL) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else if (*p >= 0x80)
            fprintf(f, "\\u%04x", *p); /* raw byte as a code point: lossless, always valid */
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void put_key(FILE *f, const char *key)
{
    put_string(f, key);
    fputc(':', f);
}

static void put_u64(FILE *f, const char *key, uint64_t value, int comma)
{
    put_key(f, key);
    fprintf(f, "%llu%s", (unsigned long long)value, comma ? "," : "");
}

static void put_totals(FILE *f, const totals_t *t)
{
    fputc('{', f);
    put_u64(f, "allocations", t->allocations, 1);
    put_u64(f, "frees", t->frees, 1);
    put_u64(f, "failed_allocations", t->failures, 1);
    put_u64(f, "bytes_allocated", t->bytes_allocated, 1);
    put_u64(f, "live_bytes", t->live_bytes, 1);
    put_u64(f, "peak_bytes", t->peak_bytes, 1);
    put_u64(f, "leaked_bytes", t->live_bytes, 1);
    put_u64(f, "leaked_allocations", t->live_allocations, 1);
    put_u64(f, "teardown_leaked_bytes", t->teardown_bytes, 1);
    put_u64(f, "teardown_leaked_allocations", t->teardown_allocations, 0);
    fputc('}', f);
}

static void put_native_stack(FILE *f, uint32_t site)
{
    static symbolized_frame_t frames[MAX_REPORT_FRAMES];
    int n = report_site_frames(site, frames, MAX_REPORT_FRAMES);
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        const symbolized_frame_t *fr = &frames[i];
        fprintf(f, "%s{", i ? "," : "");
        put_key(f, "function");
        put_string(f, fr->function);
        fputc(',', f);
        put_key(f, "file");
        put_string(f, fr->file);
        fputc(',', f);
        put_key(f, "line");
        if (fr->line > 0)
            fprintf(f, "%d,", fr->line);
        else
            fputs("null,", f);
        put_key(f, "module");
        put_string(f, fr->module ? fr->module : "?");
        fprintf(f, ",\"offset\":\"0x%llx\",\"address\":\"0x%llx\",\"inlined\":%s}",
                (unsigned long long)fr->offset, (unsigned long long)fr->address,
                fr->inlined ? "true" : "false");
    }
    fputc(']', f);
}

static void put_python_stack(FILE *f, uint32_t site)
{
    const stack_record_t *stack = stacks_get(site);
    fputc('[', f);
    int first = 1;
    for (int i = 0; stack != NULL && i < stack->python_count; i++) {
        const char *function, *file;
        int line;
        if (python_describe(stack->frames[stack->native_count + i], &function, &file, &line) != 0)
            continue;
        fprintf(f, "%s{", first ? "" : ",");
        first = 0;
        put_key(f, "function");
        put_string(f, function);
        fputc(',', f);
        put_key(f, "file");
        put_string(f, file);
        fprintf(f, ",\"line\":%d}", line);
    }
    fputc(']', f);
}

static const char *teardown_name(int reason)
{
    return reason == TEARDOWN_CTX_DESTROY ? "cuCtxDestroy"
         : reason == TEARDOWN_PRIMARY_RESET ? "cuDevicePrimaryCtxReset" : NULL;
}

enum section { SECTION_LEAKS, SECTION_TEARDOWN, SECTION_FAILURES, SECTION_SITES };

/* One site entry. "bytes" and "allocations" mean what the section is about:
 * live at exit for leaks, live at teardown, asked for and refused, or ever
 * allocated for the sites list. */
static void put_site(FILE *f, const report_site_t *site, enum section section)
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
    }
    fputc('{', f);
    put_u64(f, "site", site->id, 1);
    put_key(f, "kind");
    put_string(f, tracker_kind_name((alloc_kind_t)s->kind));
    fprintf(f, ",\"device\":%d,", s->device);
    put_u64(f, "bytes", bytes, 1);
    put_u64(f, section == SECTION_FAILURES ? "count" : "allocations", count, 1);
    if (section == SECTION_FAILURES)
        fprintf(f, "\"result\":%d,", s->last_failure);
    if (section == SECTION_TEARDOWN) {
        put_key(f, "teardown");
        put_string(f, teardown_name(s->teardown_reason));
        fputc(',', f);
    }
    put_u64(f, "total_allocations", s->allocations, 1);
    put_u64(f, "frees", s->frees, 1);
    put_u64(f, "live_bytes", s->live_bytes, 1);
    put_u64(f, "peak_live_bytes", s->peak_live_bytes, 1);
    put_key(f, "stack");
    put_native_stack(f, site->id);
    fputc(',', f);
    put_key(f, "python_stack");
    put_python_stack(f, site->id);
    fputc('}', f);
}

/* The sites list is capped: a run with 100k call sites needs its leaks in
 * full, not every site's lifetime counters. */
#define SITES_LISTED 1000

static void put_list(FILE *f, const char *key, const report_list_t *list, enum section section)
{
    size_t n = list->count;
    if (section == SECTION_SITES && n > SITES_LISTED)
        n = SITES_LISTED;
    put_key(f, key);
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputs(",\n", f);
        put_site(f, &list->sites[i], section);
    }
    fputs("]", f);
}

static void put_process(FILE *f)
{
    char host[256] = "";
    if (gethostname(host, sizeof host) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    const char *rank = getenv("RANK");
    if (rank == NULL)
        rank = getenv("LOCAL_RANK");
    fprintf(f, "\"process\":{\"pid\":%d,", (int)getpid());
    put_key(f, "host");
    put_string(f, host);
    fputs(",\"rank\":", f);
    if (rank != NULL && *rank != '\0' && strspn(rank, "0123456789") == strlen(rank))
        fputs(rank, f);
    else
        fputs("null", f);
    fputs(",\"argv\":[", f);
    FILE *cmdline = fopen("/proc/self/cmdline", "r");
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
            fputs(first ? "" : ",", f);
            put_string(f, arg);
            first = 0;
            len = 0;
        }
        fclose(cmdline);
    }
    fputs("],", f);
    uint64_t offset = lifecycle_epoch_offset_ns();
    put_u64(f, "end_time_ns", tracker_now_ns() + offset, 1);
    put_key(f, "python");
    put_string(f, python_version());
    fputs("},\n", f);
}

static void write_body(FILE *f, const report_view_t *view)
{
    const totals_t *t = &view->totals;
    fprintf(f, "{\"format\":\"%s\",\"version\":%d,\n", REPORT_FORMAT_NAME, REPORT_FORMAT_VERSION);
    fprintf(f, "\"tool\":{\"name\":\"gpuleak\",\"version\":\"%s\"},\n", GPULEAK_VERSION);
    put_process(f);
    const char *reason = lifecycle_stop_reason();
    fprintf(f, "\"status\":{\"tracking\":\"%s\",\"reason\":", reason ? "off" : "on");
    put_string(f, reason);
    fprintf(f, ",\"stacks_dropped\":%llu},\n", (unsigned long long)stacks_overflowed());

    /* Totals count every kind (host included); peak_bytes is GPU memory. */
    totals_t all = { 0 };
    for (int k = 0; k < KIND_COUNT; k++) {
        totals_t kt;
        tracker_kind_totals((alloc_kind_t)k, &kt);
        all.allocations += kt.allocations;
        all.frees += kt.frees;
        all.failures += kt.failures;
        all.bytes_allocated += kt.bytes_allocated;
        all.live_bytes += kt.live_bytes;
        all.live_allocations += kt.live_allocations;
        all.teardown_bytes += kt.teardown_bytes;
        all.teardown_allocations += kt.teardown_allocations;
    }
    fputs("\"totals\":{", f);
    put_u64(f, "allocations", all.allocations, 1);
    put_u64(f, "frees", all.frees, 1);
    put_u64(f, "failed_allocations", all.failures, 1);
    put_u64(f, "unknown_frees", tracker_unknown_frees(), 1);
    put_u64(f, "bytes_allocated", all.bytes_allocated, 1);
    put_u64(f, "live_bytes", all.live_bytes, 1);
    put_u64(f, "peak_bytes", t->peak_bytes, 1);
    put_u64(f, "peak_time_ns", t->peak_time_ns ? t->peak_time_ns + lifecycle_epoch_offset_ns() : 0, 1);
    put_u64(f, "leaked_bytes", all.live_bytes, 1);
    put_u64(f, "leaked_allocations", all.live_allocations, 1);
    put_u64(f, "teardown_leaked_bytes", all.teardown_bytes, 1);
    put_u64(f, "teardown_leaked_allocations", all.teardown_allocations, 1);
    put_u64(f, "maps", tracker_maps(0), 1);
    put_u64(f, "unmaps", tracker_maps(1), 1);
    put_u64(f, "sites", view->sites.count, 1);
    put_u64(f, "stacks", stacks_count(), 1);
    put_u64(f, "shim_bytes", tracker_memory_bytes() + stacks_memory_bytes(), 0);
    fputs("},\n\"kinds\":{", f);
    for (int k = 0; k < KIND_COUNT; k++) {
        totals_t kt;
        tracker_kind_totals((alloc_kind_t)k, &kt);
        fputs(k ? "," : "", f);
        put_key(f, tracker_kind_name((alloc_kind_t)k));
        put_totals(f, &kt);
    }
    fputs("},\n\"devices\":[", f);
    int first = 1;
    for (int d = 0; d < TRACKER_MAX_DEVICES; d++) {
        totals_t dt;
        if (tracker_device_totals(d, &dt) != 0)
            continue;
        fprintf(f, "%s{\"device\":%d,\"totals\":", first ? "" : ",", d);
        put_totals(f, &dt);
        fputc('}', f);
        first = 0;
    }
    fputs("],\n", f);
    put_list(f, "leaks", &view->leaks, SECTION_LEAKS);
    fputs(",\n", f);
    put_list(f, "teardown_leaks", &view->teardown, SECTION_TEARDOWN);
    fputs(",\n", f);
    put_list(f, "failures", &view->failures, SECTION_FAILURES);
    fputs(",\n", f);
    put_list(f, "sites", &view->sites, SECTION_SITES);
    fputs("}\n", f);
}

int report_json_write(const char *path, const report_view_t *view)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "w");
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
    if (rename(tmp, path) != 0) {
        int err = errno;
        unlink(tmp);
        errno = err;
        return -1;
    }
    return 0;
}
