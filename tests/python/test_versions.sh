#!/bin/sh
# test_versions.sh: builds and runs tests/unit/test_python.c against every
# interpreter named on the command line (each a python3.X-config, or a prefix
# holding bin/python3*-config), so each version's layout table is checked
# against a live interpreter. Needs libcheck. Example:
#   tests/python/test_versions.sh /root/.pyenv/versions/3.1[0-3]*
#   tests/python/test_versions.sh /usr/bin/python3.12-config     (GPU machine)
set -e
cd "$(dirname "$0")/../.."
out=${TMPDIR:-/tmp}/gpuleak-pyversions
mkdir -p "$out"
CFLAGS="-O2 -g -Wall -Wextra -std=gnu11 -fPIC -pthread"
INCLUDES=$(for floor in shim/*/; do printf -- '-I%s ' "$floor"; done)
# shellcheck disable=SC2086
cc $CFLAGS -fvisibility=hidden -fno-omit-frame-pointer $INCLUDES -c shim/stacks/python.c -o "$out/python.o"
# shellcheck disable=SC2086
for base in real_dl log; do
    # shellcheck disable=SC2086
    cc $CFLAGS -fvisibility=hidden $INCLUDES -c shim/base/$base.c -o "$out/$base.o"
done
status=0
for arg in "$@"; do
    if [ -d "$arg" ]; then cfg=$(ls "$arg"/bin/python3*-config | head -1); else cfg=$arg; fi
    name=$(basename "$(dirname "$(dirname "$cfg")")")-$(basename "$cfg")
    echo "== $cfg"
    # shellcheck disable=SC2086
    cc $CFLAGS $INCLUDES $("$cfg" --includes) -o "$out/test_python-$name" \
        tests/unit/test_python.c "$out/python.o" "$out/real_dl.o" "$out/log.o" -lcheck -lsubunit -lm -lrt -ldl -lpthread \
        $("$cfg" --embed --ldflags)
    "$out/test_python-$name" || status=1
done
exit $status
