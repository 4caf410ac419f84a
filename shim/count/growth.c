#include "growth.h"
#include "clock.h"
#include "bounded.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

/* A checkpoint reads every site, which with tens of thousands of sites
 * takes milliseconds: longer than the first intervals, so the thread that
 * takes them would spend most of its time there (15% of a whole run of 1M
 * allocations over 100k sites). The next checkpoint waits at least this
 * many times as long as the last one took: at most 1/20 of the thread's
 * time goes to checkpoints. */
#define CHECKPOINT_COST_FACTOR 19

/* A checkpoint is also due after one thread's events pass a share of the
 * allocations so far (a 64th, at least 256), however little time passed:
 * a burst of a few hundred steps after a long, quiet start-up then gets
 * checkpoints of its own, which a clock alone spreads over the start-up,
 * and over a long run they come no faster than the buffer halves. Per
 * thread, so that counting shares no cache line. */
#define CHECKPOINT_EVENTS_FIRST 8

static uint64_t checkpoint_time[GROWTH_CHECKPOINTS];
static uint64_t checkpoint_allocations[GROWTH_CHECKPOINTS];
static uint32_t checkpoint_sites[GROWTH_CHECKPOINTS];   /* site_high at each */
static uint64_t (*series)[GROWTH_CHECKPOINTS];          /* [site][checkpoint] */
static size_t checkpoint_count;
static uint64_t interval_ns;
static _Atomic uint64_t next_due_ns = UINT64_MAX;  /* by the clock */
static _Atomic uint64_t next_allowed_ns;  /* by the last one's cost, on the precise clock */
static _Atomic uint64_t events_per_checkpoint = CHECKPOINT_EVENTS_FIRST;
static __thread uint64_t thread_events __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t unfollowed;
static pthread_mutex_t growth_lock = PTHREAD_MUTEX_INITIALIZER;
static growth_reader_t read_site;

void growth_init(uint64_t start_ns, uint64_t first_interval_ns, growth_reader_t reader)
{
    void *p = mmap(NULL, sizeof *series * GROWTH_SITES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return;
    pthread_mutex_lock(&growth_lock);
    series = p;
    read_site = reader;
    checkpoint_count = 0;
    interval_ns = first_interval_ns ? first_interval_ns : 1000000;
    atomic_store(&next_due_ns, start_ns);
    atomic_store(&events_per_checkpoint, CHECKPOINT_EVENTS_FIRST);
    pthread_mutex_unlock(&growth_lock);
}

/* Drops every other checkpoint, keeping the later of each pair, and doubles
 * the interval. Caller holds growth_lock. */
static void halve(uint32_t site_high)
{
    size_t kept = 0;
    for (size_t i = 1; i < checkpoint_count; i += 2, kept++) {
        checkpoint_time[kept] = checkpoint_time[i];
        checkpoint_allocations[kept] = checkpoint_allocations[i];
        checkpoint_sites[kept] = checkpoint_sites[i];
    }
    uint32_t last = site_high < GROWTH_SITES ? site_high : GROWTH_SITES - 1;
    for (uint32_t s = 0; s <= last; s++)
        for (size_t i = 1, k = 0; i < checkpoint_count; i += 2, k++)
            series[s][k] = series[s][i];
    checkpoint_count = kept;
    interval_ns *= 2;
}

/* Whether a checkpoint is due now: its interval has passed, or this
 * thread made its share of events since its last try, as long as the last
 * checkpoint's cost allows another. The cost is judged on the precise
 * clock (read only then): a burst can fit in one tick of the coarse one. */
static int due(uint64_t now_ns, int by_events)
{
    if (now_ns >= atomic_load_explicit(&next_due_ns, memory_order_relaxed))
        return 1;
    return by_events
        && clock_monotonic_ns() >= atomic_load_explicit(&next_allowed_ns, memory_order_relaxed);
}

static __thread int held __attribute__((tls_model("initial-exec")));

void growth_hold(int on)
{
    held = on;
}

/* Takes a checkpoint when no other thread is taking one and it is still
 * due. Out of line and apart from the hot code: it comes once a
 * checkpoint's interval, where growth_note comes at every event. */
static __attribute__((cold, noinline)) void
checkpoint(uint64_t now_ns, int by_events, uint64_t (*allocations)(void), uint32_t site_high)
{
    if (pthread_mutex_trylock(&growth_lock) != 0)
        return;
    if (series == NULL || !due(now_ns, by_events)) {
        pthread_mutex_unlock(&growth_lock);
        return;
    }
    /* Its cost in this thread's CPU time: a checkpoint that was descheduled
     * midway (a loaded machine) must not hold the next ones back for 19
     * times the time it waited, which left a short run with two samples.
     * Nor more than the time that passed: where the thread's CPU clock
     * moves by scheduler ticks (seen in a virtual machine here: a
     * microsecond's checkpoint measured as milliseconds), a tick in the
     * middle of one held the rest of a short loop back. */
    uint64_t started_ns = clock_thread_cpu_ns(), started_wall_ns = clock_monotonic_ns();
    if (checkpoint_count == GROWTH_CHECKPOINTS)
        halve(site_high);
    size_t c = checkpoint_count++;
    checkpoint_time[c] = now_ns;
    checkpoint_allocations[c] = allocations();
    uint64_t share = checkpoint_allocations[c] / GROWTH_CHECKPOINTS;
    atomic_store_explicit(&events_per_checkpoint,
                          share > CHECKPOINT_EVENTS_FIRST ? share : CHECKPOINT_EVENTS_FIRST,
                          memory_order_relaxed);
    checkpoint_sites[c] = site_high;
    uint32_t last = site_high;
    if (last >= GROWTH_SITES) {
        atomic_store(&unfollowed, (uint64_t)(last - GROWTH_SITES + 1));
        last = GROWTH_SITES - 1;
    }
    for (uint32_t s = 0; s <= last; s++)
        series[s][c] = read_site(s);
    /* The first one's cost is the code's and the tables' first touch (half
     * a millisecond of page faults and symbol binding against tens of
     * microseconds after): 19 times it held every checkpoint of a short
     * run's loop back. */
    uint64_t ended_wall_ns = clock_monotonic_ns();
    uint64_t cpu_ns = clock_thread_cpu_ns() - started_ns, wall_ns = ended_wall_ns - started_wall_ns;
    uint64_t wait_ns = c == 0 ? 0 : (cpu_ns < wall_ns ? cpu_ns : wall_ns) * CHECKPOINT_COST_FACTOR;
    atomic_store(&next_due_ns, now_ns + (wait_ns > interval_ns ? wait_ns : interval_ns));
    atomic_store(&next_allowed_ns, ended_wall_ns + wait_ns);
    pthread_mutex_unlock(&growth_lock);
}

void growth_note(uint64_t now_ns, uint64_t (*allocations)(void), uint32_t site_high)
{
    if (held)
        return;
    int by_events = ++thread_events >= atomic_load_explicit(&events_per_checkpoint,
                                                            memory_order_relaxed);
    if (by_events)
        thread_events = 0;  /* one try a share: the cost guard may refuse it */
    if (due(now_ns, by_events))
        checkpoint(now_ns, by_events, allocations, site_high);
}

/* The lowest value in values[from, to). */
static uint64_t floor_of(const uint64_t *values, size_t from, size_t to)
{
    uint64_t low = UINT64_MAX;
    for (size_t i = from; i < to; i++)
        if (values[i] < low)
            low = values[i];
    return low;
}

/* The moments in values[base..high] at which the series rose to a level
 * that it then held (the next sample the same, none later below it): a
 * leak once an epoch adds one each epoch. Memory that is reused (a
 * sawtooth) or filled once adds at most one or two, and sizes that vary
 * from step to step (noise) never repeat a value exactly just after rising
 * to it, so however few the samples, such a series is not taken for one
 * that rises in held steps. The high point itself needs no next sample. */
static size_t held_rises(const uint64_t *values, size_t base, size_t high, uint64_t *first_level)
{
    size_t rises = values[high] > values[high - 1];
    uint64_t later_floor = values[high];
    *first_level = values[high];
    for (size_t i = high - 1; i > base; i--) {
        if (values[i] > values[i - 1] && values[i] <= later_floor && values[i + 1] == values[i]) {
            rises++;
            *first_level = values[i];
        }
        if (values[i] < later_floor)
            later_floor = values[i];
    }
    return rises;
}

/* Where the run began, for a site's series: the time and allocation count
 * of the run's first checkpoint, which may come before the site's own
 * first sample. */
typedef struct run_start {
    uint64_t time_ns, allocations;
} run_start_t;

/* The baseline of a series of n >= 1 samples: the first sample at or
 * after a fifth of the run (from run), both by time and by allocations: a
 * burst of steps after a long, quiet start-up starts its series in the
 * burst, and a start-up that allocates much (weights) still skips by time.
 * A run shorter than GROWTH_TIMED_SPAN_NS is judged by allocations alone:
 * the samples are timed by a coarse clock (ticks of a few milliseconds),
 * which would put most of a short run's samples in its first fifth. A site
 * born late also skips a fifth of its own life by allocations: its first
 * fill (a cache, an eval buffer) is its start-up, as the run's is; an idle
 * tail makes no allocations, so a burst before one is not skipped. The
 * fifth by time is of the run, never of the site's life: a torch.compile'd
 * model's outputs begin after a long compile and end before a long idle
 * tail (Inductor's workers shutting down), and a fifth of their own span
 * by time skipped their whole burst. It depends on the times and
 * allocations alone, not on the values, so whether a run can be judged at
 * all is known before any site is. */
static size_t baseline(const uint64_t *times_ns, const uint64_t *allocations, size_t n, run_start_t run)
{
    uint64_t span = times_ns[n - 1] > run.time_ns ? times_ns[n - 1] - run.time_ns : 0;
    if (span < GROWTH_TIMED_SPAN_NS)
        span = 0;
    uint64_t made_span = allocations[n - 1] > run.allocations ? allocations[n - 1] - run.allocations : 0;
    uint64_t own_start = allocations[0];
    uint64_t own_span = allocations[n - 1] > own_start ? allocations[n - 1] - own_start : 0;
    size_t base = 0;
    while (base < n - 1 && (times_ns[base] - run.time_ns < span / 5
                            || allocations[base] - run.allocations < made_span / 5
                            || allocations[base] - own_start < own_span / 5))
        base++;
    return base;
}

int growth_judgeable(const uint64_t *times_ns, const uint64_t *allocations, size_t n)
{
    return n > 0 && n - baseline(times_ns, allocations, n, (run_start_t){ times_ns[0], allocations[0] })
                        >= GROWTH_MIN_SAMPLES;
}

/* growth_evaluate for a series of a run that began at run. */
static void evaluate_from(const uint64_t *values, const uint64_t *times_ns,
                          const uint64_t *allocations, size_t n, run_start_t run, growth_finding_t *out)
{
    memset(out, 0, sizeof *out);
    if (n < 2)
        return;
    size_t base = baseline(times_ns, allocations, n, run);
    size_t high = base;
    for (size_t i = base; i < n; i++)
        if (values[i] >= values[high])
            high = i;
    out->baseline_bytes = values[base];
    out->high_bytes = values[high];
    if (values[high] <= values[base])
        return;
    out->bytes_gained = values[high] - values[base];
    size_t steps = high - base, rises = 0;
    for (size_t i = base; i < high; i++)
        rises += values[i + 1] >= values[i];
    out->steadiness = steps ? (double)rises / (double)steps : 0;
    uint64_t elapsed = times_ns[high] - times_ns[base];
    if (elapsed > 0)
        out->bytes_per_second = (double)out->bytes_gained * 1e9 / (double)elapsed;
    uint64_t made = allocations[high] - allocations[base];
    if (made > 0)
        out->bytes_per_1k_allocations = (double)out->bytes_gained * 1000.0 / (double)made;
    /* The window must cover most of the run after the baseline: ending it
     * at a high point picked from anywhere would let noise choose a short
     * rising stretch. Shutdown frees come at the very end, so a real leak's
     * high point is late. */
    size_t length = high - base + 1;
    if (length < GROWTH_HELD_RISES + 1 || length * 3 < (n - base) * 2)
        return;
    /* Noise can order three floors by chance; a real rise also lifts the
     * floor by a fair share of what was gained, and later samples lie above
     * earlier ones far more often than below (Goodman and Kruskal's gamma:
     * ties, common in a leak that grows in steps, are left out; for noise it
     * stays near 0). */
    long above = 0, below = 0;
    for (size_t i = base; i <= high; i++)
        for (size_t j = i + 1; j <= high; j++) {
            above += values[j] > values[i];
            below += values[j] < values[i];
        }
    out->trend = above + below ? (double)(above - below) / (double)(above + below) : 0;
    if (out->trend < GROWTH_MIN_TREND)
        return;
    int floors_rose = 0;
    if (length >= GROWTH_MIN_SAMPLES) {
        size_t third = length / 3;
        uint64_t f1 = floor_of(values, base, base + third);
        uint64_t f2 = floor_of(values, base + third, base + 2 * third);
        uint64_t f3 = floor_of(values, base + 2 * third, high + 1);
        floors_rose = f1 < f2 && f2 < f3 && (f3 - f1) * 4 >= out->bytes_gained;
    }
    /* Held rises show a leak only while they go on: a bounded cache that
     * filled in steps and then kept its size for more than the last third
     * of the window also rose and held, long ago. */
    size_t reached = high;
    while (reached > base && values[reached - 1] == values[high])
        reached--;
    int still_rising = (reached - base) * 3 >= (high - base) * 2;
    /* Nor do they while the memory went back down after the high point: a
     * loop's temporaries sampled at a phase that drifts (checkpoints every
     * so many allocations, a step of another number) climb in held steps
     * too, then wrap. A leak's memory stays (Python's finish ends the
     * series before its shutdown frees). */
    uint64_t first_level;
    size_t held = held_rises(values, base, high, &first_level);
    for (size_t i = high + 1; i < n && still_rising; i++)
        still_rising = values[i] >= first_level;
    out->grew = floors_rose || (still_rising && held >= GROWTH_HELD_RISES);
}

void growth_evaluate(const uint64_t *values, const uint64_t *times_ns,
                     const uint64_t *allocations, size_t n, growth_finding_t *out)
{
    evaluate_from(values, times_ns, allocations, n, (run_start_t){ times_ns[0], allocations[0] }, out);
}

/* Copies site's series up to now_ns into values, times and allocs
 * (GROWTH_CHECKPOINTS + 1 each): the checkpoints at which the site existed
 * and that were taken by then, and a last sample, live_now at now_ns; and
 * where the run began into *run (the first checkpoint, else the last
 * sample). Returns its length, or 0 for a site not followed (or when a
 * report's bounded wait for the checkpoints' lock ended: bounded.h). */
static size_t series_of(uint32_t site, uint64_t now_ns, uint64_t live_now, uint64_t allocations_now,
                        uint64_t *values, uint64_t *times, uint64_t *allocs, run_start_t *run)
{
    if (site >= GROWTH_SITES || series == NULL)
        return 0;
    if (!bounded_mutex_lock(&growth_lock))
        return 0;
    *run = (run_start_t){ now_ns, allocations_now };
    if (checkpoint_count > 0 && checkpoint_time[0] <= now_ns)
        *run = (run_start_t){ checkpoint_time[0], checkpoint_allocations[0] };
    size_t n = 0;
    for (size_t c = 0; c < checkpoint_count; c++) {
        if (site > checkpoint_sites[c])
            continue; /* the site did not exist yet */
        if (checkpoint_time[c] > now_ns)
            break;    /* after the moment given as the last: its sample ends the series */
        values[n] = series[site][c];
        times[n] = checkpoint_time[c];
        allocs[n] = checkpoint_allocations[c];
        n++;
    }
    pthread_mutex_unlock(&growth_lock);
    values[n] = live_now;
    times[n] = now_ns;
    allocs[n] = allocations_now;
    return n + 1;
}

int growth_site(uint32_t site, uint64_t now_ns, uint64_t live_now, uint64_t allocations_now,
                growth_finding_t *out)
{
    uint64_t values[GROWTH_CHECKPOINTS + 1], times[GROWTH_CHECKPOINTS + 1],
        allocs[GROWTH_CHECKPOINTS + 1];
    run_start_t run;
    size_t n = series_of(site, now_ns, live_now, allocations_now, values, times, allocs, &run);
    if (n == 0)
        return -1;
    evaluate_from(values, times, allocs, n, run, out);
    return 0;
}

int growth_run(uint64_t now_ns, uint64_t allocations_now, size_t *samples)
{
    uint64_t values[GROWTH_CHECKPOINTS + 1], times[GROWTH_CHECKPOINTS + 1],
        allocs[GROWTH_CHECKPOINTS + 1];
    /* Site 0 is the first: every checkpoint follows it, so its series has
     * the run's every sample (its values are not needed). */
    run_start_t run;
    *samples = series_of(0, now_ns, 0, allocations_now, values, times, allocs, &run);
    return growth_judgeable(times, allocs, *samples);
}

size_t growth_checkpoints(void)
{
    pthread_mutex_lock(&growth_lock);
    size_t n = checkpoint_count;
    pthread_mutex_unlock(&growth_lock);
    return n;
}

uint64_t growth_sites_unfollowed(void)
{
    return atomic_load(&unfollowed);
}
