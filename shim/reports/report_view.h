/* report_view.h: a report's content, gathered once (report_view_gather)
 * into one view that the writers (report_json.h, report_summary.h) only
 * format: the sites of each section, the totals, the timeline, the marks,
 * the out-of-memory record, what Python held at its finish and who held it. */
#ifndef GPULEAK_REPORT_VIEW_H
#define GPULEAK_REPORT_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "search.h"
#include "growth.h"
#include "marks.h"
#include "origin.h"
#include "pools.h"
#include "selftime.h"
#include "stacks.h"
#include "symbolize.h"
#include "timeline.h"
#include "torch_events.h"
#include "tracker.h"

/* A site with its counters, as the report lists it. */
typedef struct report_site {
    uint32_t id;
    site_stats_t stats;
    int framework;        /* a tensor site's (enum report_framework), else -1 */
    growth_finding_t growth;
    uint64_t held_bytes;  /* held list only: live when Python began to finish */
    const holder_t *holders;  /* the Python objects that held its memory,
                                 largest first: at Python's finish, or now
                                 in a report on request (view->holder_set) */
    size_t holder_count;
    int aside;     /* not the program's own to list as a leak, growth or peak
                      holder: PyTorch's cached segments where its tensors are
                      followed (shown by the tensors in them), or tensors
                      whose frees stopped being seen (torch_trace.h) */
    uint64_t reachable_bytes, reachable_allocations;  /* of its memory live at
                      the report, what the program's names held at Python's
                      finish (holder_set_named): its shutdown did not free it;
                      tensor sites only (report_view_gather says why) */
    int kept;      /* its owner is a library that keeps its memory for the
                      process (origin_owner_keeps), so what it has live at
                      exit is listed as kept, not as a leak, nor as held by
                      the program at Python's finish; known for the sites
                      live at exit or then */
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

/* The run as a whole, read once: why tracking stopped, its clocks, the
 * counts no list carries, the shim's own time, what PyTorch's allocator
 * events said, and the interpreter. */
typedef struct report_run {
    const char *stop_reason;       /* NULL: tracking ran to the report */
    uint64_t epoch_offset_ns;      /* the coarse clock's time + this = the epoch's */
    uint64_t started_ns;           /* tracking's start, on the coarse clock */
    uint64_t unknown_frees, maps, unmaps;
    uint64_t stacks, stacks_dropped, growth_sites_unfollowed;
    selftime_totals_t self_time;   /* calls 0: not timed */
    const char *torch_mode;        /* lifecycle_torch_mode() */
    const char *torch_alloc_conf;  /* PYTORCH_CUDA_ALLOC_CONF, or NULL */
    const char *torch_status;      /* torch_events_status() */
    uint64_t torch_events[TORCH_ACTIONS];
    pools_counts_t pools[REPORT_FRAMEWORK_COUNT];  /* JAX's and CuPy's arrays (pools.h) */
    int cupy_hooked;               /* CuPy's hook registered on the main thread */
    unsigned frameworks;           /* 1 << each framework whose arrays were followed */
    const char *python_version;    /* NULL: no interpreter */
    const char *rank, *local_rank, *job;  /* rank.h's, or NULL */
    uint32_t site_count;           /* the largest site id */
    int redact_argv;               /* GPULEAK_REDACT_ARGV */
    int summary_sites, summary_frames;  /* GPULEAK_SUMMARY_SITES, _FRAMES */
    int report_temporary;          /* GPULEAK_REPORT_TEMPORARY: gpuleak run removes it */
    char command[512];             /* how to call gpuleak (command.h), for the next step */
} report_run_t;

/* The holders an out-of-memory record lists. */
#define OOM_HOLDERS 20

/* Everything the writers show, gathered once at exit. */
typedef struct report_view {
    report_moment_t moment;
    report_run_t run;
    report_list_t leaks;      /* live at exit, by live bytes */
    report_list_t kept;       /* live at exit, kept for the process by a
                                 library (cuBLAS's workspaces, NCCL's
                                 communicators), by live bytes */
    report_list_t reachable;  /* live at exit, held by the program's names
                                 when Python finished, which its shutdown did
                                 not free: still reachable, not leaked (the
                                 leaks leave this part out), by those bytes */
    report_list_t teardown;   /* live at context teardown, by bytes */
    report_list_t failures;   /* refused allocations, by bytes asked */
    report_list_t sites;      /* every site, by peak live bytes */
    report_list_t peak;       /* live at the peak (the tensors' when seen,
                                 else the GPU's), by bytes then */
    report_list_t growth;     /* grew during the run, by bytes gained */
    int growth_judged;        /* 0: the run had too few samples for the rule
                                 (growth_run): an empty growth list says nothing */
    size_t growth_samples;    /* the samples of a site followed from the first
                                 checkpoint, up to the growth rule's last moment */
    totals_t totals;          /* the driver's GPU memory (reserved, with tensors) */
    totals_t tensors;         /* PyTorch's tensors (allocated); zero when unseen */
    int peak_is_tensors;      /* 1: the peak section is at the tensors' peak */
    composition_t peak_composition;  /* the tensors at their peak by the role the
                                 call that made each implies (inferred: no heap
                                 walk saw that moment); zero unless peak_is_tensors */
    composition_t live_composition;  /* a report while the program runs with no
                                 search made for it: the memory now, inferred
                                 the same way; zero otherwise */
    uint64_t reserve_bytes;   /* live bytes of the reserve sites */
    uint64_t leaked_bytes, leaked_allocations;  /* the leaks section's sums */
    uint64_t kept_bytes, kept_allocations;      /* the kept section's sums */
    uint64_t reachable_bytes, reachable_allocations;  /* the reachable section's */
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
    holder_search_t holders;  /* how the search for holders went */
    const holder_set_t *holder_set;  /* the search the sites' holders come from:
                                 Python's finish, or one made for this report */
    int holders_at_finish;    /* 1: holder_set is Python's finish's */
    const holder_set_t *oom_set;     /* the search made at the first OOM */
    holder_search_t oom_search;      /* how that search went */
    void *holder_ticket, *oom_ticket;  /* search_release's */
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
    totals_t kinds[REPORT_KIND_COUNT];             /* each kind's totals */
    totals_t devices[TRACKER_MAX_DEVICES];  /* each device's, where devices_seen */
    uint64_t devices_seen;                  /* a bit per device */
    uint64_t shim_bytes;      /* the shim's tables and stack depot */
    uint64_t now_ns;          /* clock_coarse_ns() when the view was gathered */
    unsigned locks_skipped;   /* locks the gathering gave up (bounded.h): the
                                 parts behind them read without or left out */
    int signal;               /* the signal a REPORT_ON_SIGNAL report is for */
} report_view_t;

/* Gathers everything a report shows into *view (signal: a
 * REPORT_ON_SIGNAL report's), taking every lock it needs
 * within bounded.h's bounds (view->locks_skipped counts those given up).
 * Call between origin_init and origin_end (owners decide PyTorch's cache),
 * with symbolize_begin before. Returns 0, or -1 when memory is lacking
 * (release the view either way). */
int report_view_gather(report_view_t *view, report_moment_t moment, int signal);

/* Frees what report_view_gather allocated. */
void report_view_release(report_view_t *view);

struct origin_frame;

/* The callers view->callers says to show after site's origin (a helper's
 * leaking path), into out (room for 255). Returns how many, 0 for most
 * sites. Between origin_init and origin_end. */
int report_view_origin_callers(const report_view_t *view, uint32_t site, struct origin_frame *out);

/* What the writers read of a site beyond its counters, through the view
 * alone (the view module is the one reader of the floors below for them):
 * names are resolved late, for the sites a report lists. Between
 * origin_init and origin_end, symbolize_begin before. */

/* The site's stack as the depot keeps it (NULL for an unknown id). */
const stack_record_t *report_view_stack(uint32_t site);

/* The frames of one native return address (inlined first), up to max. */
int report_view_native_frames(uint64_t address, symbolized_frame_t *out, int max);

/* A packed Python frame's function, file and line; 0, or -1 when unknown. */
int report_view_python_frame(uint64_t packed, const char **function, const char **file, int *line);

/* The site's origin and owner (origin_site). */
void report_view_origin(uint32_t site, int kind, origin_site_t *out);

/* The site's frames as the origin rules see them, up to max. */
int report_view_origin_frames(uint32_t site, symbolized_frame_t *out, int max);

/* The interpreter's layout the origin rules judged by, or NULL. */
const origin_layout_t *report_view_layout(void);

/* The kind of site's last event. */
int report_view_site_kind(uint32_t site);

/* The framework whose arrays site's memory is (enum report_framework): a
 * tensor site's; -1 for another kind. */
int report_view_site_framework(uint32_t site, int kind);

/* How the views name the memory of site, of kind: the kind's phrase, or a
 * tensor site's framework's ("JAX array memory"). */
const char *report_view_site_phrase(uint32_t site, int kind);

/* The holders set names for site, largest first, into *out; how many. */
size_t report_view_holders(const holder_set_t *set, uint32_t site, const holder_t **out);

#endif
