#!/bin/sh
# `make fuzz`: builds the report reader with libFuzzer (clang) and runs it
# for a bounded time over tests/cli/corpus and the command tests' fixtures
# (tests/cli/fixtures, seeds too); each crash it finds is copied to
# tests/cli/crashes/, which `make cli-test` replays through `gpuleak report`.
# With FUZZ_LOG set, the fuzzer's own output goes to that file (make test
# runs it beside other tests), and its last lines are shown when it fails.
# Usage: tests/cli/fuzz.sh OUT_DIR SECONDS
set -eu
OUT=${1:-build/fuzz}
SECONDS_MAX=${2:-60}
CLANG=${CLANG:-$(command -v clang || command -v clang-14 || true)}
if [ -z "$CLANG" ]; then
    echo "fuzz: clang not found (apt-get install clang)" >&2
    exit 2
fi
mkdir -p "$OUT/corpus" "$OUT/artifacts" tests/cli/crashes
# What an earlier run found is in tests/cli/crashes already: only this
# run's findings are counted.
rm -f "$OUT"/artifacts/*
"$CLANG" -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -iquote cli -iquote report -iquote common -o "$OUT/fuzz_load" tests/cli/fuzz_load.c \
    report/*.c cli/text.c common/units.c common/diagnosis.c cli/supp.c cli/check.c common/cuda_errors.c \
    common/chart.c common/composition.c common/frame_text.c common/origin_rules.c \
    -ljansson
# New inputs go to $OUT/corpus (the first directory); the seeds stay as committed.
LOG=${FUZZ_LOG:-/dev/stderr}
set +e
"$OUT/fuzz_load" -max_total_time="$SECONDS_MAX" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$OUT/artifacts/" -print_final_stats=1 "$OUT/corpus" tests/cli/corpus tests/cli/fixtures \
    2>"$LOG"
rc=$?
set -e
found=0
for f in "$OUT"/artifacts/crash-* "$OUT"/artifacts/leak-* "$OUT"/artifacts/timeout-* "$OUT"/artifacts/oom-*; do
    [ -f "$f" ] || continue
    cp "$f" tests/cli/crashes/
    echo "fuzz: kept $(basename "$f") in tests/cli/crashes/"
    found=$((found + 1))
done
if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    [ -n "${FUZZ_LOG:-}" ] && tail -n 40 "$FUZZ_LOG" >&2
    echo "fuzz: the fuzzer found $found problem input(s) (exit $rc)" >&2
    exit 1
fi
echo "fuzz: no crash in ${SECONDS_MAX}s${FUZZ_LOG:+ (its output: $FUZZ_LOG)}"
