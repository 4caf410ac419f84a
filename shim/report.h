/* report.h: the report file at exit, and the summary on stderr. */
#ifndef GPULEAK_REPORT_H
#define GPULEAK_REPORT_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "finish.h"
#include "growth.h"
#include "marks.h"
#include "symbolize.h"
#include "timeline.h"
#include "tracker.h"

/* A site with its counters, as the report lists it. */
typedef struct report_site {
    uint32_t id;
    site_stats_t stats;
    growth_finding_t growth;
    uint64_t held_bytes;  /* held list only: live when Python began to finish */
    const finish_holder_t *holders;  /* the Python objects that held its memory
                                        at Python's finish, largest first */
    size_t holder_count;
    int aside;     /* not the program's own to list as a leak, growth or peak
                      holder: PyTorch's cached segments where its tensors are
                      followed (shown by the tensors in them), or tensors
                      whose frees stopped being seen (torch_trace.h) */
} report_site_t;

/* The sites of one report section, sorted by the section's byte count. */
typedef struct report_list {
    report_site_t *sites;
    size_t count;
} report_list_t;

/* Why a report is being written: it is final at exit or on a fatal signal;
 * a snapshot or a dump on request is overwritten by the next one. */
typedef enum report_moment {
    REPORT_AT_EXIT,
    REPORT_ON_SIGNAL,      /* a signal that ends the process, at its default action */
    REPORT_ON_REQUEST,     /* GPULEAK_DUMP_SIGNAL */
    REPORT_SNAPSHOT,       /* every GPULEAK_FLUSH_INTERVAL seconds */
} report_moment_t;

/* The holders an out-of-memory record lists. */
#define OOM_HOLDERS 20

/* Everything the writers show, gathered once at exit. */
typedef struct report_view {
    report_moment_t moment;
    report_list_t leaks;      /* live at exit, by live bytes */
    report_list_t teardown;   /* live at context teardown, by bytes */
    report_list_t failures;   /* refused allocations, by bytes asked */
    report_list_t sites;      /* every site, by peak live bytes */
    report_list_t peak;       /* live at the peak (the tensors' when seen,
                                 else the GPU's), by bytes then */
    report_list_t growth;     /* grew during the run, by bytes gained */
    totals_t totals;          /* the driver's GPU memory (reserved, with tensors) */
    totals_t tensors;         /* PyTorch's tensors (allocated); zero when unseen */
    int peak_is_tensors;      /* 1: the peak section is at the tensors' peak */
    uint64_t reserve_bytes;   /* live bytes of the reserve sites */
    uint64_t leaked_bytes, leaked_allocations;  /* the leaks section's sums */
    uint8_t *callers;         /* by site id (NULL: none): how many of the user's
                                 frames after the origin the views show with it,
                                 where the origin line alone (a helper) is shared
                                 by sites that leak and sites that do not */
    uint32_t callers_high;    /* the last site id callers covers */
    report_list_t held;       /* live when Python began to finish (before its
                                 shutdown freed the script's globals), by
                                 held_bytes; growth.grew set where the site
                                 also grew; empty without Python */
    uint64_t held_time_ns, held_gpu_bytes, held_tensor_bytes;
    uint64_t held_bytes;      /* every held site's bytes, the unlisted too */
    size_t held_sites;        /* every held site, the unlisted too */
    finish_search_t holders;  /* how the search for holders went */
    tracker_oom_t oom;        /* the out-of-memory record, when has_oom */
    int has_oom;
    size_t oom_holders[OOM_HOLDERS];  /* its largest holders, as indices into
                                         oom.sites, largest first */
    size_t oom_holder_count;
    timeline_point_t *timeline;
    size_t timeline_count;
    mark_t *marks;            /* gpuleak_mark's marks, oldest first */
    size_t mark_count;
    uint64_t marks_dropped;   /* made after the first MARKS_MAX */
    uint64_t timeline_interval_ns;
    totals_t kinds[KIND_COUNT];             /* each kind's totals */
    totals_t devices[TRACKER_MAX_DEVICES];  /* each device's, where devices_seen */
    uint64_t devices_seen;                  /* a bit per device */
    uint64_t shim_bytes;      /* the shim's tables and stack depot */
    uint64_t now_ns;          /* tracker_now_ns() when the view was gathered */
    unsigned locks_skipped;   /* locks the gathering gave up (patience.h): the
                                 parts behind them read without or left out */
    int signal;               /* the signal a REPORT_ON_SIGNAL report is for */
} report_view_t;

/* Writes the report file (GPULEAK_OUTPUT, or the fallback it names on
 * stderr, once, when that path cannot be written) and, at exit or on a
 * fatal signal, the summary. Serialised: one report at a time, waited for
 * at most REPORT_WAIT_S (then this one is not written). The final report
 * (exit or signal) is written once: a second final one, and any snapshot or
 * dump from the moment a final one begins, returns at once. signal names
 * the signal of a REPORT_ON_SIGNAL report. With interrupted (a report owed
 * by a thread that a signal interrupted, which may hold the driver's own
 * locks, or stderr's), the report asks the driver nothing and writes its
 * summary without stdio's lock. Never waits on a shim lock without an end
 * (patience.h). */
#define REPORT_WAIT_S 10
void report_write(report_moment_t moment, int signal, int interrupted);

/* Waits up to ms for the final report, which another thread may be
 * writing, to be done (written, or given up). Returns 1 once done, 0 when
 * the time ran out. Async-signal-safe. */
int report_final_wait(unsigned ms);

/* 0 while this thread writes a report for a thread a signal interrupted
 * (see report_write): the driver is then not to be called. */
int report_may_call_driver(void);

/* Expands a GPULEAK_OUTPUT pattern (%p pid, %h host, %r the rank from
 * report_rank, 0 without one, %% a percent sign) into out. Returns 0, or -1
 * when the result does not fit in size bytes. */
int report_expand_path(const char *pattern, char *out, size_t size);

/* The process's rank: RANK, else LOCAL_RANK, whichever is 1 to 9 decimal
 * digits; NULL when neither is. A value that is set but not a number (a
 * path, say: it goes into the report's path) is ignored, with one line on
 * stderr the first time. The string is the environment's. */
const char *report_rank(void);

/* The native frames of site, symbolized, inlined frames expanded, innermost
 * first; writes up to max and returns how many. Valid until exit. */
int report_site_frames(uint32_t site, symbolized_frame_t *out, int max);

struct origin_frame;

/* The callers view->callers says to show after site's origin (a helper's
 * leaking path), into out (room for 255). Returns how many, 0 for most
 * sites. Between origin_init and origin_end. */
int report_origin_callers(const report_view_t *view, uint32_t site, struct origin_frame *out);

/* The line a site's Python frames point at by the report's origin rules
 * (GPULEAK_ORIGIN_SKIP and GPULEAK_ORIGIN_RULES included), as "file:line in
 * function", into out. Waits for a report being written. Returns 0, or -1
 * when no Python frame of the site is kept. */
int report_python_origin(uint32_t site, char *out, size_t size);

/* What report_json_write may do to a file already at its path. */
typedef enum report_place {
    REPORT_REPLACE_REPORT, /* replace it only when it is a gpuleak report */
    REPORT_CREATE_ONLY,    /* never replace anything: a shared directory's name */
} report_place_t;

/* Writes the report as JSON to path, through a temporary file of an
 * unguessable name in the same directory (created O_EXCL | O_NOFOLLOW)
 * moved into place as place allows. Returns 0, or -1 with errno set:
 * EEXIST when a file at path may not be replaced. */
int report_json_write(const char *path, const report_view_t *view, report_place_t place);

/* Prints the LeakSanitizer-style summary to f; path is where the report
 * went (NULL when it could not be written). */
void report_summary_print(FILE *f, const report_view_t *view, const char *path);

#endif
