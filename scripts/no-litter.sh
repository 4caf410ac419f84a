#!/bin/sh
# no-litter.sh BEFORE: fails when /tmp holds gpuleak files or folders that
# BEFORE (a list taken before the tests) did not: make test leaves nothing.
set -u
ls -d /tmp/gpuleak-* /tmp/gpuleak_* 2>/dev/null | sort >"$1.after"
new=$(comm -13 "$1" "$1.after")
rm -f "$1.after"
if [ -n "$new" ]; then
    echo "make test left in /tmp:"
    echo "$new" | head -20 | sed 's/^/  /'
    exit 1
fi
echo "make test left nothing in /tmp"
