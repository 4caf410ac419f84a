/* metrics.c: the process's live numbers as a node_exporter textfile
 * (metrics.h). */
#define _GNU_SOURCE
#include "metrics.h"
#include "clock.h"
#include "config.h"
#include "growth.h"
#include "log.h"
#include "rank.h"
#include "report_format.h"
#include "tracker.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int metrics_enabled(void)
{
    return config.prometheus_dir != NULL && config.prometheus_dir[0] != '\0';
}

uint64_t metrics_interval_ns(void)
{
    return (uint64_t)config.prometheus_interval_s * 1000000000ull;
}

/* The file's path, or its temporary's (hidden, without the .prom suffix the
 * collector reads), into out. Returns 0, or -1 when it does not fit. */
static int metrics_path(char *out, size_t size, int temporary)
{
    char host[256] = "host";
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "host");
    host[sizeof host - 1] = '\0';
    for (char *c = host; *c; c++)
        if (*c == '/')
            *c = '_';
    int n = snprintf(out, size, "%s/%sgpuleak-%s-%d.prom%s", config.prometheus_dir,
                     temporary ? "." : "", host, (int)getpid(), temporary ? ".tmp" : "");
    return n > 0 && (size_t)n < size ? 0 : -1;
}

/* A label value as the exposition format escapes it. */
static void put_label_value(FILE *f, const char *value)
{
    for (const char *c = value; *c; c++) {
        if (*c == '\\' || *c == '"')
            fputc('\\', f);
        if (*c == '\n')
            fputs("\\n", f);
        else
            fputc(*c, f);
    }
}

/* The labels every sample of this process carries: which process of which
 * job on which host. Bounded: one set per process. */
static void put_process_labels(FILE *f)
{
    char host[256] = "";
    if (gethostname(host, sizeof host) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    const char *rank = rank_of_process(), *local = rank_local(), *job = rank_job();
    fprintf(f, "pid=\"%d\",host=\"", (int)getpid());
    put_label_value(f, host);
    fprintf(f, "\",rank=\"%s\",local_rank=\"%s\",job=\"", rank ? rank : "", local ? local : "");
    put_label_value(f, job ? job : "");
    fputc('"', f);
}

/* One family's HELP and TYPE lines. */
static void put_family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample: name{extra labels, the process's} value. */
static void put_sample(FILE *f, const char *name, const char *extra, uint64_t value)
{
    fprintf(f, "%s{%s%s", name, extra, extra[0] ? "," : "");
    put_process_labels(f);
    fprintf(f, "} %llu\n", (unsigned long long)value);
}

/* One family over the devices seen: their live bytes, or (peak) their
 * peaks. A family's samples follow its HELP and TYPE, all together. */
static void put_devices(FILE *f, const char *name, const char *help, int peak)
{
    char labels[32];
    put_family(f, name, "gauge", help);
    for (int d = 0; d < TRACKER_MAX_DEVICES; d++) {
        totals_t t;
        if (tracker_device_totals(d, &t) != 0)
            continue;
        snprintf(labels, sizeof labels, "device=\"%d\"", d);
        put_sample(f, name, labels, peak ? t.peak_bytes : t.live_bytes);
    }
}

/* Live and peak bytes and the event counts, by kind and by device. */
static void put_totals(FILE *f)
{
    char labels[128];
    put_family(f, "gpuleak_live_bytes", "gauge", "Bytes live now, by kind of memory.");
    for (int k = 0; k < REPORT_KIND_COUNT; k++) {
        totals_t t;
        tracker_kind_totals((alloc_kind_t)k, &t);
        snprintf(labels, sizeof labels, "kind=\"%s\"", report_kind_name(k));
        put_sample(f, "gpuleak_live_bytes", labels, t.live_bytes);
    }
    put_family(f, "gpuleak_allocations_total", "counter", "Allocations made, by kind of memory.");
    for (int k = 0; k < REPORT_KIND_COUNT; k++) {
        totals_t t;
        tracker_kind_totals((alloc_kind_t)k, &t);
        snprintf(labels, sizeof labels, "kind=\"%s\"", report_kind_name(k));
        put_sample(f, "gpuleak_allocations_total", labels, t.allocations);
    }
    put_devices(f, "gpuleak_device_live_bytes",
                "GPU memory the driver handed out and not freed, by device.", 0);
    put_devices(f, "gpuleak_device_peak_bytes", "The device's exact peak so far.", 1);
    totals_t tensors;
    tracker_kind_totals(REPORT_KIND_tensor, &tensors);
    put_family(f, "gpuleak_tensor_peak_bytes", "gauge", "PyTorch's allocated bytes at their peak.");
    put_sample(f, "gpuleak_tensor_peak_bytes", "", tensors.peak_bytes);
}

/* PyTorch's cache (its segments' bytes the events named its own), and the
 * growth the rule of docs/growth.md finds so far: sites and bytes gained,
 * the cache's segments left out. O(sites). */
static void put_sites(FILE *f)
{
    uint64_t now = clock_coarse_ns();
    uint64_t allocations = tracker_allocation_count(), reserved = 0, grew = 0, gained = 0;
    size_t samples;
    int judged = growth_run(now, allocations, &samples);
    uint32_t high = tracker_site_count();
    for (uint32_t id = 1; id <= high; id++) {
        site_stats_t st;
        if (tracker_site(id, &st) != 0)
            continue;
        reserved += st.reserve_bytes < st.live_bytes ? st.reserve_bytes : st.live_bytes;
        growth_finding_t g;
        if (judged && st.reserve_bytes == 0 && st.kind != REPORT_KIND_host
            && growth_site(id, now, st.live_bytes, allocations, &g) == 0 && g.grew) {
            grew++;
            gained += g.bytes_gained;
        }
    }
    put_family(f, "gpuleak_torch_reserved_bytes", "gauge",
               "Bytes of PyTorch's cached segments (reserved, not allocated).");
    put_sample(f, "gpuleak_torch_reserved_bytes", "", reserved);
    put_family(f, "gpuleak_growth_sites", "gauge", "Sites that grew so far (docs/growth.md).");
    put_sample(f, "gpuleak_growth_sites", "", grew);
    put_family(f, "gpuleak_growth_bytes", "gauge", "Bytes the growing sites gained so far.");
    put_sample(f, "gpuleak_growth_bytes", "", gained);
}

int metrics_write(void)
{
    static int warned;
    char tmp[4096], path[4096];
    if (metrics_path(tmp, sizeof tmp, 1) != 0 || metrics_path(path, sizeof path, 0) != 0)
        return -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        if (fd >= 0)
            close(fd);
    } else {
        put_totals(f);
        put_sites(f);
        int failed = ferror(f);
        if (fclose(f) == 0 && !failed && rename(tmp, path) == 0)
            return 0;
    }
    int failure = errno;
    unlink(tmp);
    if (!warned++)
        log_line("cannot write the Prometheus metrics to %s: %s", path, strerror(failure));
    return -1;
}

void metrics_end(void)
{
    char path[4096];
    if (metrics_enabled() && metrics_path(path, sizeof path, 0) == 0)
        unlink(path);
}
