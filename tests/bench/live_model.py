#!/usr/bin/env python3
"""live_model.py: how often shim/count/live.c's reservations fold, in a model.

    python3 tests/bench/live_model.py [--threads 8] [--events 400000] [--hold 0.2 0.5]

An event-level model of one live row (the GPU's, say) under threads that
each allocate SIZE bytes and free them again, as bench_pairs does: a thread
holds its allocation for HOLD of its cycle. It follows live.c's rules (a
move within the reservation is local; past it, a grant of what is needed
plus half the headroom left beside it; when none is left, a fold that cuts
each reservation to what its thread used since the last fold; when that is
not enough either, every reservation taken back and the move committed,
raising the peak), checks that the peak equals the true one, and prints how
many events took each path. It is a model: no threads, no timing, only the
order of events (each thread's next event at a jittered time).
"""
import argparse
import heapq
import random

SIZE = 256


def run(threads, events, hold, seed=1):
    rng = random.Random(seed)
    committed = reserved = peak = 0
    delta, reserve, high = [0] * threads, [0] * threads, [0] * threads
    paths = dict(local=0, granted=0, folded=0, exact=0)
    due = [(rng.random(), t, True) for t in range(threads)]
    heapq.heapify(due)
    live = live_max = 0

    def grant(t):
        nonlocal reserved
        want = max(0, delta[t] + SIZE - reserve[t])
        headroom = peak - committed - reserved
        if want > headroom:
            return False
        given = want + (headroom - want) // 2
        reserve[t] += given
        reserved += given
        delta[t] += SIZE
        high[t] = max(high[t], delta[t])
        return True

    def fold(keep):
        nonlocal committed, reserved
        for u in range(threads):
            committed += delta[u]
            kept = max(0, high[u] - delta[u]) if keep else 0
            reserved += kept - reserve[u]
            reserve[u], high[u], delta[u] = kept, 0, 0

    for _ in range(events):
        when, t, up = heapq.heappop(due)
        heapq.heappush(due, (when + rng.uniform(0.5, 1.5) * (hold if up else 1 - hold), t, not up))
        if not up:
            delta[t] -= SIZE
            live -= SIZE
            paths["local"] += 1
            continue
        live += SIZE
        live_max = max(live_max, live)
        if delta[t] + SIZE <= reserve[t]:
            delta[t] += SIZE
            high[t] = max(high[t], delta[t])
            paths["local"] += 1
        elif grant(t):
            paths["granted"] += 1
        else:
            if reserved > 0:
                fold(True)
                if grant(t):
                    paths["folded"] += 1
                    continue
            fold(False)
            committed += SIZE
            peak = max(peak, committed)
            paths["exact"] += 1
    assert peak == live_max, (peak, live_max)
    return paths, peak // SIZE


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--events", type=int, default=400000)
    ap.add_argument("--hold", type=float, nargs="+", default=[0.5, 0.2, 0.05])
    args = ap.parse_args()
    print("| hold | local | granted | folded, then granted | exact (all folded) | walks per event | peak allocations |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for hold in args.hold:
        paths, peak = run(args.threads, args.events, hold)
        walks = paths["folded"] + paths["exact"]
        print("| %.2f | %d | %d | %d | %d | %.1f%% | %d of %d |" % (
            hold, paths["local"], paths["granted"], paths["folded"], paths["exact"],
            100.0 * walks / args.events, peak, args.threads))


if __name__ == "__main__":
    main()
