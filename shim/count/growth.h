/* growth.h: which sites keep more memory live as the run goes on.
 *
 * At an exit, PyTorch's interpreter shutdown frees the tensors a training
 * loop leaked, so what was live at exit misses them; the signal is growth
 * during the run. Every site's live bytes are sampled at checkpoints (a
 * bounded number, halved when full, so they always span the whole run), and
 * a rule applied to each site's series decides whether it grew. */
#ifndef GPULEAK_GROWTH_H
#define GPULEAK_GROWTH_H

#include <stddef.h>
#include <stdint.h>

#define GROWTH_CHECKPOINTS 64
#define GROWTH_SITES 65536     /* sites beyond this are not followed (counted) */
#define GROWTH_MIN_SAMPLES 10 /* from baseline to high point, to judge at all */
#define GROWTH_MIN_TREND 0.6   /* gamma of the samples, see growth_evaluate */
#define GROWTH_HELD_RISES 5    /* rises never undone that make growth on their own */
#define GROWTH_TIMED_SPAN_NS (100ull * 1000 * 1000)  /* shorter runs: by allocations alone */

/* Reads one site's live bytes for a checkpoint. */
typedef uint64_t (*growth_reader_t)(uint32_t site);

/* Starts checkpointing at start_ns, first every interval_ns. */
void growth_init(uint64_t start_ns, uint64_t interval_ns, growth_reader_t reader);

/* Called on every allocation or free with the time, a reader of the number
 * of allocations so far (a sum over threads, so read only when a checkpoint
 * is taken) and the highest site id. Cheap unless a checkpoint is due: then
 * one thread samples every site (O(sites)) while others go on. The next is
 * due after the interval or 19 times what this one took, whichever is
 * longer, or, sooner than the interval, once a thread has made its share of
 * events (a 64th of the allocations so far, at least 256) and 19 times
 * this one's cost has passed: a burst after a long start-up gets
 * checkpoints of its own. */
void growth_note(uint64_t now_ns, uint64_t (*allocations)(void), uint32_t site_high);

/* While on, growth_note takes no checkpoint on the calling thread: events
 * that stand for one moment (a snapshot's arrays, recorded one by one) must
 * not be sampled half done, as a rise over their microseconds. */
void growth_hold(int on);

/* What the rule found for one series. */
typedef struct growth_finding {
    int grew;                 /* 1 when the rule calls it growth */
    uint64_t bytes_gained;    /* from the baseline to the site's high point */
    double bytes_per_second;
    double bytes_per_1k_allocations;
    double steadiness;        /* share of steps that did not go down, 0..1 */
    double trend;             /* Goodman-Kruskal gamma of the samples, -1..1 */
    uint64_t baseline_bytes, high_bytes;
} growth_finding_t;

/* The rule, on a series of n samples (values at times, with the process's
 * allocation count at each): skip the first fifth of the run, by time and
 * by allocations, whichever is later (start-up: weights, optimizer state;
 * a quiet start-up before a short burst), end at the site's highest sample after that
 * (interpreter shutdown frees at the end; that point must leave at least
 * two thirds of the samples after the baseline in the window, so noise
 * cannot pick a short rising stretch), split what lies between into
 * three parts, and call it growth when the samples' rank correlation with
 * time (Goodman and Kruskal's gamma) is at least GROWTH_MIN_TREND and
 * either the lowest value of each part is higher than the one before and
 * the floor rose by at least a quarter of the bytes gained (with at least
 * GROWTH_MIN_SAMPLES samples from baseline to high point), or the series
 * rose at GROWTH_HELD_RISES moments or more to a level it held at the next
 * sample and never went back below (a leak once an epoch, however few the
 * samples) and reached its high level within the last third of the
 * window (a cache that filled in steps and then stayed is bounded): the
 * memory is kept, not reused, and the rise is not noise. */
void growth_evaluate(const uint64_t *values, const uint64_t *times_ns,
                     const uint64_t *allocations, size_t n, growth_finding_t *out);

/* Whether the rule can find growth at all in a series of n samples at
 * these times and allocation counts: at least GROWTH_MIN_SAMPLES from its
 * baseline on (fewer, and no values make a finding: the floors need that
 * many, and GROWTH_HELD_RISES rises each held at the next sample need as
 * many too). It depends on the times and counts alone, never on the values. */
int growth_judgeable(const uint64_t *times_ns, const uint64_t *allocations, size_t n);

/* Evaluates the recorded series of site up to now_ns, with a final sample
 * (live_now at now_ns) appended: checkpoints taken after now_ns are left
 * out, so an earlier moment (Python's finish) can end the series. Returns
 * 0, or -1 for a site not followed (or when a report's bounded wait for
 * the checkpoints' lock ended: bounded.h). */
int growth_site(uint32_t site, uint64_t now_ns, uint64_t live_now, uint64_t allocations_now,
                growth_finding_t *out);

/* Whether the run's growth could be judged up to now_ns (the moment
 * growth_site is given as the last), with allocations_now: 1 when the
 * series of a site followed since the first checkpoint was long enough
 * for the rule (growth_judgeable), else 0, with the number of samples that
 * series had (its checkpoints by then and the last sample) in *samples;
 * 0 samples where nothing is followed or the report's bounded wait for the
 * checkpoints' lock ended. A site that began later has fewer samples. */
int growth_run(uint64_t now_ns, uint64_t allocations_now, size_t *samples);

/* Checkpoints taken so far, and sites not followed for lack of room. */
size_t growth_checkpoints(void);
uint64_t growth_sites_unfollowed(void);

#endif
