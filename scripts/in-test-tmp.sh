#!/bin/sh
# in-test-tmp.sh DIR CMD...: runs CMD with TMPDIR=DIR, a folder made fresh
# for it and removed after, so that the tests' temporary files (their own,
# the shim's fallback reports, gpuleak run's report folders) never stay in
# /tmp. Exits with CMD's status.
set -u
dir=$1
shift
rm -rf "$dir"
mkdir -p "$dir" || exit 2
TMPDIR=$dir "$@"
status=$?
rm -rf "$dir"
exit $status
