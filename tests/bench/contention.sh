#!/usr/bin/env bash
# contention.sh: what stops the shim's thread scaling.
#
#   bash tests/bench/contention.sh [REPS]     (from the repository root)
#
# An experiment, not a benchmark of the shipped shim: it builds the shim
# in a scratch copy of shim/ as shipped, then four ways with live-byte moves
# in tracker.c taken out (the site's; the kind's, device's and GPU's; the
# timeline's; all of them, and with them the counts, which the same moves
# make: the reports those builds write are wrong, which is why they are
# never built otherwise), and others that undo one choice
# each (listed above the edits below); a name joined with + makes both. It
# times bench_pairs over the bookless fake on 1, 2 and 8 threads, REPS
# (default 5) interleaved repetitions, and prints a markdown table of
# medians. An edit that no longer matches its file stops the script: it
# says which.
#
# CONTENTION_VARIANTS picks the builds (default: all of them, listed
# below). CONTENTION_BASE=DIR adds a build named "base" of DIR's shim/
# (another checkout, e.g. `git worktree add DIR REV`), unedited: an A/B of
# two versions in one call, where run-to-run speed differs too much to
# compare calls.
# On a machine without libunwind, carry .deps (scripts/gpu-common.sh).
set -u
REPS=${1:-5}
REPO=$PWD
WORK=$(mktemp -d /tmp/contention.XXXXXX)
J=$(nproc)
if [ -d .deps ]; then
    # shellcheck source=scripts/gpu-common.sh
    . scripts/gpu-common.sh
    gpu_build_shim || { tail -n 20 "$WORK/build-shim.log"; exit 1; }
fi
make -j"$J" build/fakecuda/libcuda.so.1 build/bench/bench_pairs >"$WORK/build.log" 2>&1 ||
    { tail -n 20 "$WORK/build.log"; exit 1; }

VARIANTS=${CONTENTION_VARIANTS:-"shipped no-site-live no-rows-live no-timeline none
timeline-sum-every-event shards-as-before none+shards-per-key none+shards-per-64KiB
none+shards-as-before"}
if [ -n "${CONTENTION_BASE:-}" ]; then
    [ -d "$CONTENTION_BASE/shim" ] || { echo "contention.sh: no shim/ in $CONTENTION_BASE" >&2; exit 1; }
    VARIANTS="base $VARIANTS"
fi
for v in $VARIANTS; do
    mkdir -p "$WORK/$v"
    cp -r "$REPO/shim" "$REPO/Makefile" "$REPO/scripts" "$WORK/$v/"
    if [ "$v" = base ]; then
        rm -rf "$WORK/$v/shim"
        cp -r "$CONTENTION_BASE/shim" "$WORK/$v/"
    fi
    [ "$v" = base ] || python3 - "$WORK/$v/shim" "$v" <<'EOF' || exit 1
import os, sys
shim, variant = sys.argv[1], sys.argv[2]
edits = {  # a variant's edits: (file in shim/, text, its replacement)
    "no-site-live": [("tracker.c", "    moved[n++] = LIVE_SITE(s - sites);\n", "")],
    "no-rows-live": [("tracker.c", "live_move(moved, n, a->size, event, now_ns)",
                      "live_move(moved, 1, a->size, event, now_ns)")],
    "no-timeline": [("tracker.c", "    note_timeline(now_ns, live_move(moved, n, a->size, event, now_ns));",
                     "    live_move(moved, n, a->size, event, now_ns);")],
    "none": [("tracker.c", "    note_timeline(now_ns, live_move(moved, n, a->size, event, now_ns));\n", "")],
    # Not counters: the timeline's sum read whenever an estimate reads
    # above the interval's high (as at ae066fd), and the live-allocation
    # table's shards by a key's region of 16 bytes (a shard per address) or
    # 64 KiB instead of 4 KiB, or as at ae066fd (64 shards, one multiply per
    # address).
    "timeline-sum-every-event": [("tracker.c", "if (estimate_high_at_ns == now_ns) {", "if (0) {")],
    "shards-per-key": [("tracker.c", "#define SHARD_REGION_SHIFT 12", "#define SHARD_REGION_SHIFT 4")],
    "shards-per-64KiB": [("tracker.c", "#define SHARD_REGION_SHIFT 12", "#define SHARD_REGION_SHIFT 16")],
    "shards-as-before": [
        ("tracker.c", "#define SHARDS 256 ", "#define SHARDS 64 "),
        ("tracker.c", "    h = (h ^ (h >> 31)) * 0x7fb5d329728ea185ull;\n"
         "    h = (h ^ (h >> 27)) * 0x81dadef4bc2dd44dull;\n"
         "    return &shards[space][(h ^ (h >> 33)) & (SHARDS - 1)];",
         "    h = (key >> 4) * 0xff51afd7ed558ccdull;\n"
         "    return &shards[space][h >> 58];")],
}
parts = [part for part in variant.split("+") if part != "shipped"]
unknown = [part for part in parts if part not in edits]
if unknown:
    sys.exit("contention.sh: no edits for variant %s" % ", ".join(unknown))
for name, old, new in sum((edits[part] for part in parts), []):
    path = os.path.join(shim, name)
    source = open(path).read()
    if source.count(old) != 1:
        sys.exit("contention.sh: %s no longer has, once, the line the %s build edits: %r"
                 % (name, variant, old.strip().splitlines()[0]))
    open(path, "w").write(source.replace(old, new))
EOF
    make -C "$WORK/$v" -j"$J" BUILD="$WORK/$v/build" "$WORK/$v/build/libgpuleak.so" \
        EXTRA_LDFLAGS="-L$REPO/.deps/lib" >>"$WORK/build.log" 2>&1 ||
        { tail -n 20 "$WORK/build.log"; exit 1; }
    [ -d build/deps ] && cp -r build/deps "$WORK/$v/build/"
done

run() {  # VARIANT THREADS PATHS DEPTH -> pairs/s
    LD_LIBRARY_PATH="$REPO/build/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        LD_PRELOAD="$WORK/$1/build/libgpuleak.so" GPULEAK_OUTPUT=/dev/null GPULEAK_SUMMARY=0 \
        GPULEAK_STACK_DEPTH="$4" GPULEAK_PYTHON=0 FAKECUDA_BOOKLESS=1 \
        build/bench/bench_pairs sync 32 200000 "$2" 256 "$3" 2>/dev/null |
        grep -o 'pairs_per_s=[0-9.]*' | cut -d= -f2
}
for rep in $(seq 1 "$REPS"); do
    for v in $VARIANTS; do
        for t in 1 2 8; do echo "off,one-path $v $t $(run "$v" "$t" shared 0)"; done
    done
    for v in base shipped none timeline-sum-every-event; do
        case " $(echo $VARIANTS) " in *" $v "*) ;; *) continue ;; esac
        for t in 1 2 8; do echo "native-32,own-paths $v $t $(run "$v" "$t" own 32)"; done
    done
done >"$WORK/runs.txt"

python3 - "$WORK/runs.txt" <<'EOF'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    fields = line.split()
    if len(fields) == 4:
        runs[tuple(fields[:3])].append(float(fields[3]) / 1e6)
print("| stacks, call paths | shim build | 1 thread Mpairs/s | 2 threads | 8 threads | 8t scaling |")
print("| --- | --- | --- | --- | --- | --- |")
seen = []
for group, variant, _ in runs:
    if (group, variant) not in seen:
        seen.append((group, variant))
for group, variant in seen:
    got = [runs.get((group, variant, t), []) for t in ("1", "2", "8")]
    if not all(got):
        print("| %s | %s | a run failed | | | |" % (group, variant))
        continue
    one, two, eight = (statistics.median(g) for g in got)
    print("| %s | %s | %.2f [%.2f-%.2f] | %.2f | %.2f [%.2f-%.2f] | %.2fx |" % (
        group, variant, one, min(got[0]), max(got[0]), two, eight, min(got[2]), max(got[2]),
        eight / one))
EOF
rm -rf "$WORK"
