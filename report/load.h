/* load.h: a gpuleak report read from an untrusted file, checked field by
 * field, as plain C values. Strings point into the parsed JSON document or
 * the report's pool of names, which live as long as the report. */
#ifndef GPULEAK_CLI_LOAD_H
#define GPULEAK_CLI_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "composition.h"
#include "origin_rules.h"
#include "report_format.h"

typedef struct {
    const char *function; /* NULL when not symbolized */
    const char *file;     /* NULL when no line info */
    const char *module;
    long line;            /* 0 when unknown */
    uint64_t offset, address;
    bool inlined;
} load_frame_t;

typedef struct {
    const char *function, *file;
    long line;
} load_pyframe_t;

/* An object that held a site's memory when Python finished ("held_by"). */
typedef struct {
    const char *name, *type, *owner, *file;  /* owner NULL when not an attribute */
    const char *path;                        /* NULL unless name starts at a type */
    bool graph;
    int role;                                /* composition.h's; -1 when not written */
    uint64_t bytes, allocations;
} load_holder_t;

typedef struct {
    uint64_t id;
    const char *kind;
    int framework;        /* a tensor site's (report_format.h), else -1 */
    long device;
    uint64_t bytes;       /* what the list is about: leaked, torn down, asked, grown... */
    uint64_t allocations; /* "allocations", or "count" in failures */
    uint64_t frees, live_bytes, peak_live_bytes;
    const char *teardown; /* teardown_leaks only, else NULL */
    /* The shim's "origin" (docs/origin-rules.md): the frame a person acts
     * on, which origin_kind says is native, Python, or absent. A display
     * hint: one this reader cannot read is ignored, never refused. */
    enum { LOAD_ORIGIN_NONE, LOAD_ORIGIN_NATIVE, LOAD_ORIGIN_PYTHON } origin_kind;
    load_frame_t origin_native;
    load_pyframe_t origin_python;
    load_pyframe_t *callers;  /* the origin's "callers": the user's frames shown
                                 after a helper's line shared by leaking and
                                 freed sites (malloc'd; NULL when none) */
    size_t ncallers;
    bool has_via;         /* the origin's "via": the innermost installed
                             package's frame on the way to the allocation */
    load_pyframe_t via;
    const char *owner;    /* the shim's "owner", or NULL */
    load_holder_t *holders;  /* "held_by", largest first (malloc'd; NULL when none) */
    size_t nholders;
    uint64_t holders_more;   /* "held_by_more": holders not listed */
    long long result;     /* failures only */
    /* The frames, innermost first: pointers into the report's frame tables
     * (version 2), shared by every site with the same stack, or into frames
     * of the site's own (version 1, owns_stack). */
    const load_frame_t **stack;
    size_t nstack;
    const load_pyframe_t **python;
    size_t npython;
    bool owns_stack;      /* inline (version 1); else the report's stack table's */
} load_site_t;

/* One entry of a version 2 report's "stacks": a site's frames, resolved. */
typedef struct {
    uint64_t site;
    const load_frame_t **stack; /* into the report's frames */
    size_t nstack;
    const load_pyframe_t **python;
    size_t npython;
} load_stack_t;

typedef struct {
    load_site_t *v;
    size_t n;
} load_list_t;

typedef struct {
    uint64_t allocations, frees, failed_allocations, bytes_allocated, live_bytes,
        peak_bytes, leaked_bytes, leaked_allocations, teardown_leaked_bytes,
        teardown_leaked_allocations;
} load_totals_t;

typedef struct {
    const char *name;
    load_totals_t totals;
} load_kind_t;

typedef struct {
    long device;
    load_totals_t totals;
} load_device_t;

/* The kinds a timeline point may break its bytes into, in report order. */
#define LOAD_KINDS REPORT_KIND_COUNT
extern const char *const load_kind_names[LOAD_KINDS];

/* t_ns is nanoseconds since timeline_start_ns (the shim writes offsets;
 * absolute times are converted on load). */
typedef struct {
    uint64_t t_ns, bytes;
    uint64_t max_bytes; /* highest live bytes within the sample, >= bytes */
    uint64_t kinds[LOAD_KINDS];
} load_point_t;

/* A named mark on the timeline (the program's gpuleak_mark). */
typedef struct {
    uint64_t t_ns;       /* since timeline_start_ns, like the points */
    const char *name;
} load_mark_t;

/* The report's "oom": the first out-of-memory failure and what held the
 * GPU then. Only shown, never judged on, so it is read quietly like the
 * origins: a section this reader cannot read is left out (has_oom false)
 * and so is a holder it cannot read. */
typedef struct {
    uint64_t count;       /* out-of-memory failures in the run, this one included */
    uint64_t time_ns;     /* epoch ns; 0 when absent */
    uint64_t live_bytes;  /* live GPU bytes at that moment (PyTorch's OOM: its tensors') */
    uint64_t torch_reserved_bytes;  /* PyTorch's OOM: its reserved memory on the device
                                       then; 0 when not written (a driver's OOM, an
                                       older report) */
    uint64_t torch_allocated_bytes; /* and its live tensors' bytes there */
    composition_t composition;      /* the GPU memory by role when Python was asked
                                       after the failure; all zero when not written */
    load_site_t site;     /* the refused allocation: kind, device, bytes asked, its
                             frames (the report's "stacks") and its origin (its entry
                             in another list, where the shim wrote one) */
    load_list_t holders;  /* "sites": the largest holders then, largest first, each
                             with the bytes it held, its frames and origin as above */
} load_oom_t;

typedef struct {
    const char *path;
    void *doc;   /* the document read piecewise (split_doc_t *), or NULL */
    void *whole; /* the document parsed whole (json_t *) when it could not
                    be read piecewise, or NULL */
    long long pid;
    bool has_rank, has_local_rank;
    long long rank, local_rank;
    const char *job;      /* the launcher's job id; NULL when absent */
    const char *host;     /* NULL when absent */
    const char **argv;
    size_t argc;
    const char *tracking; /* "on" / "off", NULL when absent */
    const char *reason;
    /* When the report was written ("status"). moment and complete are
     * checked like the counts, since check's verdict depends on them;
     * signal and locks_skipped are only shown, and read quietly. */
    const char *moment;   /* "exit", "signal", "request", "snapshot" (or a newer
                             shim's word); NULL when absent, as in older reports */
    bool complete;        /* false: taken while the program ran on (a snapshot, a
                             dump on request), so what it lists as leaks was live
                             then, not left at exit; "complete" absent: false for
                             moment snapshot or request, else true */
    long signal;          /* the signal that ended the program (moment signal); 0 */
    uint64_t locks_skipped; /* shim locks the report gave up waiting for */
    uint64_t start_time_ns, end_time_ns, peak_time_ns; /* 0 when absent */
    uint64_t unknown_frees;
    load_totals_t totals;
    load_kind_t *kinds;
    size_t nkinds;
    load_device_t *devices;
    size_t ndevices;
    load_list_t leaks, teardown, failures, sites;
    /* "kept_by_libraries": live at exit as leaks are, but memory a CUDA
     * library keeps for the process (empty in reports before it) */
    load_list_t kept;
    /* "reachable_at_exit": live at exit, but held by the program's names
     * when Python finished; its shutdown did not free it (empty in
     * reports before it) */
    load_list_t reachable;
    bool has_growth;
    uint64_t growth_bytes;
    /* "status.growth_judged": false when the run had too few samples for
     * the growth rule, so an empty growth section says nothing; absent (an
     * older report) reads true. growth_samples: how many it had (0 when
     * absent). */
    bool growth_judged;
    uint64_t growth_samples;
    /* "held_at_finish": what a Python program held when Python began to
     * finish (has_held false when absent or null) */
    bool has_held;
    uint64_t held_bytes;
    /* held_at_finish's "holders_search", a display hint (has_search false
     * when absent or unreadable) */
    bool has_search;
    uint64_t search_objects, search_named_bytes;
    double search_seconds;
    const char *search_ended;
    unsigned frameworks;         /* 1 << each framework whose arrays were followed
                                    (report_format.h); 0 in older reports */
    composition_t held_composition;  /* the GPU memory by role then; all zero when
                                        not written */
    composition_t request_composition;  /* a report on request's, beside its
                                        holders_search; all zero when not written */
    composition_t peak_composition;  /* the tensors at their peak by the role their
                                        calls imply (inferred); all zero when not
                                        written */
    load_list_t held;
    load_list_t growth;
    bool has_peak;
    uint64_t peak_bytes, peak_at_ns;
    /* "peak.sites_at": the sites are what each held at PyTorch's tensors'
     * peak (allocated memory, peak_sites_bytes of it), not the GPU's */
    bool peak_at_tensors;
    uint64_t peak_sites_bytes;
    load_list_t peak_sites;
    bool has_timeline;
    uint64_t timeline_start_ns;
    load_point_t *points;
    size_t npoints;
    load_mark_t *marks;   /* oldest first; a malformed one is left out */
    size_t nmarks;
    uint64_t marks_dropped;
    load_stack_t *stacks; /* sorted by site; the site entries' stacks point here */
    size_t nstacks;
    load_frame_t *frames; /* version 2's frame tables, each frame once */
    size_t nframes;
    load_pyframe_t *pyframes;
    size_t npyframes;
    struct strpool *strings; /* the names the sites and frames keep (strpool.h) */
    const char *text;     /* the file's bytes, which a streamed list is read
                             from (dump.h): borrowed from load_buffer's
                             caller, owned when load_file read them */
    size_t text_len;
    bool owns_text;
    size_t text_mapped;   /* when owned: the bytes of the mapping that holds
                             text (load_file), 0 when malloc'd */
    bool has_oom;
    load_oom_t oom;
    /* "python_layout": where the program's Python kept its standard library
     * and installed packages, which the shim's origins were judged by and a
     * re-judge (rejudge.h) judges by again. Read quietly, as the origins
     * are: absent, null or unreadable, has_layout is false; a folder that
     * is not a string is left out. */
    bool has_layout;
    origin_layout_t layout;  /* its arrays malloc'd; strings in the document */
} load_report_t;

load_report_t *load_file(const char *path, char **error);
/* load_file reading only the top-level members named in keep (NULL-
 * terminated; "format" and "version" among them): a view that needs a few
 * sections of a big report (merge) parses only those. The lists every
 * report has (leaks, sites) read as empty when not kept. */
load_report_t *load_file_keeping(const char *path, const char *const *keep, char **error);
load_report_t *load_buffer(const char *data, size_t len, const char *name, char **error);
void load_free(load_report_t *report);

int load_kind_index(const char *kind);

/* The reports a command reads, loaded together by load_files. */
typedef struct {
    load_report_t **v; /* one per file; NULL where the file could not be loaded */
    char **errors;     /* one per file: the line said about it, or NULL */
    size_t n;          /* files */
    size_t bad;        /* files that could not be loaded */
} load_set_t;

/* Loads every one of paths[0..n) into *set, trying each even after a bad
 * one so that one run names every bad file: one line on stderr per file
 * that cannot be loaded ("gpuleak: FILE: problem"), kept in set->errors.
 * Returns 0, or -1 when the set itself cannot be allocated (said too).
 * Free with load_set_free either way. */
int load_files(load_set_t *set, char *const *paths, size_t n);
/* load_files reading none of the top-level members skip names (NULL-
 * terminated): a view that never looks at a big section (check without
 * --max-peak: the peak's sites, the timeline) does not parse it. */
int load_files_skipping(load_set_t *set, char *const *paths, size_t n, const char *const *skip);

/* Frees a load_set_t's reports and messages; a zeroed one is a no-op. */
void load_set_free(load_set_t *set);

#endif
