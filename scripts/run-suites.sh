#!/bin/sh
# run-suites.sh JOBS SUITE...: runs the unit suites JOBS at a time, then
# prints each one's output whole, in the order given, under "== SUITE".
# Exits 1 when any suite failed (or died), 2 when it could not start.
set -u
jobs=$1
shift
out=$(mktemp -d "${TMPDIR:-/tmp}/suites.XXXXXX") || exit 2
i=0
for suite in "$@"; do
    i=$((i + 1))
    echo "$i $suite"
done | xargs -P "$jobs" -L 1 sh -c '"$2" >"$0/$1.out" 2>&1; echo $? >"$0/$1.rc"' "$out"
status=0
i=0
for suite in "$@"; do
    i=$((i + 1))
    echo "== $suite"
    cat "$out/$i.out"
    if [ "$(cat "$out/$i.rc" 2>/dev/null)" != 0 ]; then
        echo "$suite: failed"
        status=1
    fi
done
rm -rf "$out"
exit $status
