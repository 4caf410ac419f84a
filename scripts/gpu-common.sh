# shellcheck shell=bash disable=SC2034
# gpu-common.sh: what the scripts run on the GPU machine share (gpu-check.sh,
# gpu-real.sh, gpu-bench.sh), sourced by each (bash). The GPU machine has no libunwind, so the shim is
# built against the .deps/ that scripts/fetch-gpu-deps.sh made and the
# device tool carried.

# gpu_begin NAME: from the repository root, sets REPO, OUT (the device
# tool's folder, or /tmp/gpuleak-out), WORK (a fresh scratch folder with
# cwd/, bin/ and reports/) and LOG ($OUT/NAME.log), and sends everything the
# script prints to the terminal and the log (TEE_PID is the tee).
gpu_begin() {
    REPO=$PWD
    OUT=${OUT:-/tmp/gpuleak-out}
    mkdir -p "$OUT" || exit 2
    WORK=$(mktemp -d "/tmp/$1.XXXXXX")
    mkdir -p "$WORK/cwd" "$WORK/bin" "$WORK/reports"
    LOG=$OUT/$1.log
    : >"$LOG"
    exec > >(tee -a "$LOG") 2>&1
    TEE_PID=$!
}

# gpu_build_shim: builds build/libgpuleak.so (SHIM) with .deps/ when it is
# there, log in $WORK/build-shim.log, and puts the libraries it needs in
# build/deps/ (its $ORIGIN rpath). Returns make's status. A stale build from
# an earlier call on a warm machine is never reused. CFLAGS stays unset: a
# command-line CFLAGS would replace the Makefile's own flags; headers and
# libraries come in through C_INCLUDE_PATH, LIBRARY_PATH and EXTRA_LDFLAGS.
gpu_build_shim() {
    DEPS=$REPO/.deps
    SHIM=$REPO/build/libgpuleak.so
    if [ -f "$DEPS/lib/libunwind.so.8" ]; then
        # Recreate the names a carried copy may have lost.
        [ -e "$DEPS/lib/libunwind.so" ] || ln -sf libunwind.so.8 "$DEPS/lib/libunwind.so"
        for f in "$DEPS"/lib/libunwind-x86_64.so.8.*; do
            [ -e "$DEPS/lib/libunwind-x86_64.so.8" ] || ln -sf "$(basename "$f")" "$DEPS/lib/libunwind-x86_64.so.8"
        done
        echo "deps: $(find "$DEPS/lib/" -mindepth 1 -maxdepth 1 -printf '%f ')"
        export C_INCLUDE_PATH="$DEPS/include${C_INCLUDE_PATH:+:$C_INCLUDE_PATH}"
        export LIBRARY_PATH="$DEPS/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
        export LD_LIBRARY_PATH="$DEPS/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    else
        echo "deps: no .deps/lib/libunwind.so.8; using the system's libunwind (scripts/fetch-gpu-deps.sh makes .deps)"
    fi
    rm -rf "$REPO/build/shim" "$SHIM" "$REPO/build/deps"
    timeout 180 make -C "$REPO" -j"$(nproc)" build/libgpuleak.so EXTRA_LDFLAGS="-L$DEPS/lib" \
        >"$WORK/build-shim.log" 2>&1 || return 1
    mkdir -p "$REPO/build/deps"
    cp -L "$DEPS"/lib/libunwind*.so.8* "$REPO/build/deps/" 2>/dev/null
    if ldd "$SHIM" | grep >/dev/null 'liblzma.so.5 => not found'; then
        echo "deps: liblzma.so.5 missing here; using Debian's from .deps/fallback"
        cp -L "$DEPS"/fallback/liblzma.so.5* "$REPO/build/deps/"
    fi
    return 0
}

# The checks' bookkeeping, for scripts that set BUDGET (seconds), T0
# ($SECONDS at their start), RESULTS=(), NPASS=0 and NFAIL=0 first.

# result STATUS NAME [DETAIL]: records and prints one check.
result() {
    local st=$1 name=$2 detail=${3:-}
    local line
    line=$(printf '%-5s %s%s' "$st" "$name" "${detail:+  ($detail)}")
    echo "$line"
    RESULTS+=("$line")
    case $st in
        PASS) NPASS=$((NPASS + 1)) ;;
        FAIL) NFAIL=$((NFAIL + 1)) ;;
    esac
}

# check NAME CMD...: runs CMD, shows its output indented, PASS when it exits 0.
check() {
    local name=$1 out rc
    shift
    out=$("$@" 2>&1)
    rc=$?
    [ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/    /'
    if [ "$rc" -eq 0 ]; then result PASS "$name"; else result FAIL "$name" "exit $rc"; fi
    return "$rc"
}

section() { printf '\n=== %s  [t=%ds]\n' "$*" $((SECONDS - T0)); }

# have_time NAME SECONDS: false (and a FAIL line) when the budget would run out.
have_time() {
    local left=$((BUDGET - (SECONDS - T0)))
    if [ "$left" -lt "$2" ]; then
        result FAIL "$1" "skipped: ${left}s of the ${BUDGET}s budget left, needs ~$2s"
        return 1
    fi
}

# run_logged NAME TIMEOUT CMD...: runs CMD in $WORK/cwd, output to $WORK/NAME.log.
# The timeout is cut to what the budget leaves (less 15 s for the summary).
run_logged() {
    local name=$1 t=$2 rc t1=$SECONDS left
    shift 2
    left=$((BUDGET - (SECONDS - T0) - 15))
    [ "$left" -lt "$t" ] && t=$left
    [ "$t" -lt 10 ] && t=10
    (cd "$WORK/cwd" && timeout -k 10 "$t" "$@") >"$WORK/$name.log" 2>&1
    rc=$?
    echo "    [$name] exit $rc after $((SECONDS - t1))s (log: $name.log)"
    if [ "$rc" -ne 0 ]; then
        [ "$rc" -eq 124 ] && echo "    [$name] timed out after ${t}s"
        tail -n 30 "$WORK/$name.log" | sed 's/^/    | /'
    fi
    return "$rc"
}

