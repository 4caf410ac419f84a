#!/bin/bash
# cachegrind.sh [REV ...]: what the shim adds to a pair from Python 26 frames
# deep (tests/bench/py_pairs.py over the fake driver), counted by valgrind
# rather than timed: instructions, L1 instruction and data misses (cachegrind's
# 32 KB 8-way caches) and the shim's code lines run once a pair or more
# (callgrind). Each REV (default: HEAD) is built in a temporary worktree with
# the timeline's and growth's intervals made endless and the searches made
# once a clock tick (PyTorch's library, the pools) left out, so that
# valgrind's slowness adds no work a pair; a count a pair is the difference between
# runs of 40,000 and 80,000 pairs (and 5,000 and 10,000 for the lines), so
# that start and exit cancel. Slow: about two minutes a revision.
# docs/performance.md quotes it.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/gpuleak-cg.XXXXXX)
trap 'rm -rf "$work"; git -C "$repo" worktree prune' EXIT
py=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')
frames=26
run() {  # run TOOL OUT PAIRS [SHIM]: one valgrind run of py_pairs.py
    local tool=$1 out=$2 pairs=$3 shim=${4:-}
    env ${shim:+LD_PRELOAD=$shim} LD_LIBRARY_PATH="$repo/build/fakecuda" GPULEAK_SUMMARY=0 \
        GPULEAK_OUTPUT="$work/report-%p.json" PYTHONHASHSEED=0 PYTHONPATH="$repo/tests/bench" \
        setarch -R valgrind --tool="$tool" $([ "$tool" = cachegrind ] && echo --cache-sim=yes) \
        $([ "$tool" = callgrind ] && echo --dump-instr=yes --compress-pos=no --compress-strings=no) \
        --"$tool"-out-file="$out" "$py" "$repo/tests/bench/py_pairs.py" "$pairs" "$frames" >/dev/null 2>&1
}
measure() {  # measure NAME [SHIM]
    local name=$1 shim=${2:-}
    run cachegrind "$work/$name.cg1" 40000 "$shim"
    run cachegrind "$work/$name.cg2" 80000 "$shim"
    if [ -n "$shim" ]; then
        run callgrind "$work/$name.cl1" 5000 "$shim"
        run callgrind "$work/$name.cl2" 10000 "$shim"
    fi
}
make -C "$repo" -s all >/dev/null
measure plain
revs=("$@"); [ ${#revs[@]} -gt 0 ] || revs=(HEAD)
for rev in "${revs[@]}"; do
    tree="$work/tree-$rev"
    git -C "$repo" worktree add -q --detach "$tree" "$rev"
    sed -i 's/timeline_init(now, 1000000, sampler);/timeline_init(now, UINT64_MAX \/ 2, sampler);/;
            s/growth_init(now, 1000000, site_live_bytes);/growth_init(now, UINT64_MAX \/ 2, site_live_bytes);/' \
        "$tree/shim/count/tracker.c"
    grep -q "UINT64_MAX / 2, sampler" "$tree/shim/count/tracker.c" || { echo "cachegrind.sh: $rev: no intervals to patch" >&2; exit 2; }
    # Two more things done once a tick of the clock, so more often a pair
    # the slower a run goes: the search for PyTorch's library (there is none
    # here) and the request for JAX's and CuPy's pools (there are none).
    sed -i 's/^        real_dl_iterate(find_c10, &search);$/        (void)search;/' "$tree/shim/entry/torch_trace.c"
    sed -i 's/^        ask_pools();$/        ;/' "$tree/shim/python/search.c"
    make -C "$tree" -s build/libgpuleak.so >/dev/null
    cp "$tree/build/libgpuleak.so" "$work/shim-$rev.so"
    measure "$rev" "$work/shim-$rev.so"
done
python3 - "$work" "${revs[@]}" <<'PY'
import collections, re, subprocess, sys
work, revs = sys.argv[1], sys.argv[2:]

def totals(path):
    out = subprocess.run(["cg_annotate", "--show=Ir,I1mr,D1mr", path], capture_output=True, text=True).stdout
    line = next(l for l in out.splitlines() if "PROGRAM TOTALS" in l)
    return [int(x.replace(",", "")) for x in re.findall(r"([\d,]+) \(", line)]

def per_pair(name):
    a, b = totals("%s/%s.cg1" % (work, name)), totals("%s/%s.cg2" % (work, name))
    return [(y - x) / 40000 for x, y in zip(a, b)]

def counts(path, shim):
    ob, cnt, after_call = None, collections.Counter(), False
    for l in open(path):
        if l.startswith("ob="):
            ob = l[3:].strip()
        elif l.startswith("calls="):
            after_call = True   # the next cost line is the callee's, inclusive
        else:
            m = re.match(r"0x([0-9a-f]+) \d+ (\d+)", l)
            if m and not after_call and ob and ob.endswith(shim):
                cnt[int(m.group(1), 16)] += int(m.group(2))
            after_call = False
    return cnt

def hot_lines(rev):
    shim = "shim-%s.so" % rev
    a, b = counts("%s/%s.cl1" % (work, rev), shim), counts("%s/%s.cl2" % (work, rev), shim)
    return len({addr >> 6 for addr, n in b.items() if n - a.get(addr, 0) >= 4500})

plain = per_pair("plain")
print("| added a pair | " + " | ".join(revs) + " |")
print("| --- |" + " --- |" * len(revs))
rows = {r: [y - x for x, y in zip(plain, per_pair(r))] for r in revs}
for i, label in enumerate(("instructions", "L1 instruction misses", "L1 data misses")):
    print("| %s | %s |" % (label, " | ".join("%.0f" % rows[r][i] for r in revs)))
print("| shim code lines run once a pair or more | %s |" % " | ".join(str(hot_lines(r)) for r in revs))
PY
