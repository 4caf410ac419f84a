/* core_speed.h: how fast the core runs now, for benchmarks that keep apart
 * what they measured while it ran at full speed (tests/bench/run.py). This
 * machine's virtual cores (and the H200 host's) switch between about 0.36
 * and 0.7 ns an add from one moment to the next, and a run's time follows. */
#ifndef GPULEAK_BENCH_CORE_SPEED_H
#define GPULEAK_BENCH_CORE_SPEED_H

/* ns an add now, over a chain of 250,000 adds each waiting for the last
 * (one cycle each on an unshared core): 90-250 us. */
double core_speed_ns_per_add(void);

#endif
