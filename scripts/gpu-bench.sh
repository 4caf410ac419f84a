#!/usr/bin/env bash
# gpu-bench.sh: what gpuleak costs on a real GPU. Run from the repository root
# on a machine with an NVIDIA GPU, nvcc and python3 with torch:
#
#   bash scripts/gpu-bench.sh
#
# Builds the shim the way scripts/gpu-check.sh does (.deps/ from
# scripts/fetch-gpu-deps.sh when the machine has no libunwind), then:
#   1 allocation pairs (tests/bench/gpu_pairs.cu, nvcc): cudaMallocAsync +
#     cudaFreeAsync, 1 MiB, one stream, and cudaMalloc + cudaFree (fewer),
#     without the shim, under it with defaults and with stacks off;
#   2 a PyTorch training step (tests/bench/gpu_train.py: a transformers
#     GPT-2 from a config, 6 layers 512 wide, batch 8 x 256; GPU_BENCH_MODEL=
#     mlp for the older 8 x Linear 1024 loop), median ms/iter after 20
#     warm-up iterations, interleaved repetitions of: plain (no gpuleak, the
#     allocator as the user runs it: the baseline), the shim with defaults,
#     with stacks off and with GPULEAK_SELF_TIME=1, and PyTorch's
#     _record_memory_history(stacks="all");
#   3 compute-sanitizer --leak-check full on fewer iterations, with a timeout;
#   4 the CPU benchmarks over the fake driver (tests/bench/run.py: pairs,
#     threads, memory, exit) on this host's cores, to $OUT/gpu-bench-cpu.md;
#   5 (run after 2) tests/bench/unwind_probe.c on the training loop: what
#     unw_backtrace and an unw_step walk cost a call on PyTorch's stacks;
#   6 a JAX training step and a CuPy filter loop with the frameworks'
#     defaults (tests/bench/gpu_frameworks.py), plain and under the shim.
#
# Writes to "${OUT:-/tmp/gpuleak-out}": gpu-bench.md (the tables, also
# printed at the end), gpu-bench.log (everything printed), gpu-bench-runs.tsv
# (one line per run), and gpu-bench-cpu.md (step 4). These are run logs: keep
# them outside docs/ (docs/performance.md holds the current numbers). Exit 0
# when the tables were written (failed runs are marked in them), 1 when the
# shim could not be built.
#
# Knobs: GPU_BENCH_BUDGET_S (default 500: no run starts that could end past
# it; each run has its own timeout), GPU_BENCH_REPS (7), GPU_BENCH_ITERS
# (200), GPU_BENCH_MODEL (gpt2), GPU_BENCH_ASYNC_PAIRS (200000),
# GPU_BENCH_SYNC_PAIRS (2000), GPU_BENCH_SANITIZER_ITERS (30),
# GPU_BENCH_ANCHOR_REPS (the repetitions that run the history anchor too;
# default all: a GPT-2 process takes about 20 s to start on the H200 host),
# GPU_BENCH_STEPS ("1 2 3 4 5 6": the steps to run), GPU_BENCH_TRAIN_CONFIGS
# (the training loop's configurations, default these five: plain-caching
# shim-default shim-off history shim-selftime, the last defaults with
# GPULEAK_SELF_TIME=1, whose
# own time is summed per iteration in the header: the steadiest measure of
# the 5% target, since the loop's run-to-run spread is wider than 5%; also
# plain-async, plain with backend:cudaMallocAsync; shim-async, the shim with
# GPULEAK_TORCH_ALLOCATOR=async; shim-depth64;
# shim-python, stacks Python only, shim-native, native only, and
# shim-libunwind and shim-selftime-libunwind, defaults and shim-selftime
# with GPULEAK_FAST_UNWIND=0), GPU_BENCH_PIN (a taskset CPU list for
# the pair and training runs, "none", or the default "auto": CPUs 2-7 when
# the host has 8 or more),
# GPU_BENCH_DRY=1 (build only, for a machine without a GPU: the tables come
# out empty).
set -u -o pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh
gpu_begin gpu-bench

BUDGET=${GPU_BENCH_BUDGET_S:-500}
REPS=${GPU_BENCH_REPS:-7}
ITERS=${GPU_BENCH_ITERS:-200}
export GPU_BENCH_MODEL=${GPU_BENCH_MODEL:-gpt2}
ASYNC_PAIRS=${GPU_BENCH_ASYNC_PAIRS:-200000}
SYNC_PAIRS=${GPU_BENCH_SYNC_PAIRS:-2000}
SAN_ITERS=${GPU_BENCH_SANITIZER_ITERS:-30}
ANCHOR_REPS=${GPU_BENCH_ANCHOR_REPS:-$REPS}
DRY=${GPU_BENCH_DRY:-0}
STEPS=${GPU_BENCH_STEPS:-1 2 3 4 5 6}
read -r -a TRAIN_CONFIGS <<<"${GPU_BENCH_TRAIN_CONFIGS:-plain-caching shim-default shim-off history shim-selftime}"
# The pair and training runs are pinned to the same CPUs: a process that
# lands on other cores (or another socket) from one run to the next spreads
# the medians by more than the shim costs.
PIN=()
case ${GPU_BENCH_PIN:-auto} in
    none) ;;
    auto) command -v taskset >/dev/null && [ "$(nproc)" -ge 8 ] && PIN=(taskset -c 2-7) ;;
    *) PIN=(taskset -c "$GPU_BENCH_PIN") ;;
esac
PY=${PYTHON:-python3}
T0=$SECONDS
RUNS=$WORK/runs.tsv
HEADER=$WORK/header.txt
: >"$RUNS"

section() { printf '\n=== %s  [t=%ds]\n' "$*" $((SECONDS - T0)); }
left() { echo $((BUDGET - (SECONDS - T0))); }
# step N: whether step N is among GPU_BENCH_STEPS (says so when it is not).
step() {
    case " $STEPS " in *" $1 "*) return 0 ;; esac
    echo "    skipped (GPU_BENCH_STEPS=$STEPS)"
    return 1
}

# run_one GROUP CONFIG REP TIMEOUT KEY CMD...: runs CMD in $WORK/cwd with a
# timeout cut to what the budget leaves, takes KEY=value from its output and
# appends one line to $RUNS. A run that would start with under 15 s left is
# skipped (and recorded as skipped).
run_one() {
    local group=$1 config=$2 rep=$3 t=$4 key=$5 rc value status t1 wall lg
    shift 5
    local l
    l=$(left)
    if [ "$l" -lt 15 ]; then
        printf '%s\t%s\t%s\t\t\tskipped (budget)\n' "$group" "$config" "$rep" >>"$RUNS"
        echo "    [$group/$config #$rep] skipped: ${l}s of the budget left"
        return 1
    fi
    [ $((l - 10)) -lt "$t" ] && t=$((l - 10))
    lg=$WORK/$group-$config-$rep.log
    t1=$(date +%s.%N)
    (cd "$WORK/cwd" && timeout -k 5 "$t" "$@") >"$lg" 2>&1
    rc=$?
    local done_ns end_ns exit_ms=""
    done_ns=$(date +%s%N)
    wall=$(awk -v a="$t1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    value=$(grep -o "$key=[0-9.]*" "$lg" | tail -n 1 | cut -d= -f2)
    # A program that prints end_ns (its last line's CLOCK_REALTIME) has its
    # exit timed: from that line to the wait (issue 33's exit target).
    end_ns=$(grep -o "end_ns=[0-9]*" "$lg" | tail -n 1 | cut -d= -f2)
    [ -n "$end_ns" ] && exit_ms=$(( (done_ns - end_ns) / 1000000 ))
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        status="timeout ${t}s"
    elif [ "$rc" -ne 0 ]; then
        status="exit $rc"
    elif [ -z "$value" ]; then
        status="no value"
    else
        status=ok
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$group" "$config" "$rep" "$value" "$wall" "$status" "$exit_ms" >>"$RUNS"
    echo "    [$group/$config #$rep] ${value:-?} ($status, ${wall}s${exit_ms:+, exit ${exit_ms} ms})"
    if [ "$status" != ok ]; then
        tail -n 15 "$lg" | sed 's/^/    | /'
    fi
    [ "$status" = ok ]
}

finish() {
    local st=$1
    section "tables"
    echo "- total: $((SECONDS - T0))s of the ${BUDGET}s budget" >>"$HEADER"
    if "$PY" "$REPO/tests/bench/gpu_table.py" "$RUNS" "$HEADER" >"$OUT/gpu-bench.md" 2>"$WORK/table.err"; then
        cat "$OUT/gpu-bench.md"
    else
        echo "gpu-bench: table generation failed:"
        cat "$WORK/table.err"
        { cat "$HEADER"; echo; echo '```'; cat "$RUNS"; echo '```'; } >"$OUT/gpu-bench.md"
    fi
    cp "$RUNS" "$OUT/gpu-bench-runs.tsv"
    echo
    echo "gpu-bench: done in $((SECONDS - T0))s; files in $OUT: $(find "$OUT" -maxdepth 1 -type f -name 'gpu-bench*' -printf '%f ')"
    exec >&- 2>&-
    wait "$TEE_PID" 2>/dev/null
    rm -rf "$WORK"
    exit "$st"
}

# ---------------------------------------------------------------------------
section "environment"
{
    echo "## gpuleak GPU benchmarks (scripts/gpu-bench.sh)"
    echo
    echo "- date: $(date -u '+%F %T UTC')"
    echo "- git: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?'), $(git -C "$REPO" status --porcelain 2>/dev/null | wc -l) changed file(s)"
    echo "- host: $(uname -srm), $(nproc) CPU(s), $(lscpu 2>/dev/null | awk -F: '/Model name/{gsub(/^ +/, "", $2); print $2; exit}')"
    if command -v nvidia-smi >/dev/null; then
        echo "- gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1)"
    else
        echo "- gpu: no nvidia-smi"
    fi
} >"$HEADER"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=$(command -v nvcc || echo "$CUDA_HOME/bin/nvcc")
[ -d "$CUDA_HOME" ] || CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
TORCH_INFO=$(timeout 90 "$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tail -n 1)
{
    echo "- nvcc: $("$NVCC" --version 2>&1 | tail -n 1)"
    echo "- python: $("$PY" -c 'import sys; print(sys.version.split()[0])' 2>&1); torch: $TORCH_INFO"
    echo "- settings: model $GPU_BENCH_MODEL, $REPS repetitions interleaved, $ITERS iterations a training run, $ASYNC_PAIRS async / $SYNC_PAIRS sync pairs; steps $STEPS; pair and training runs pinned: ${PIN[*]:-no}"
} >>"$HEADER"
cat "$HEADER"
TORCH_OK=0
case $TORCH_INFO in *"available True"*) TORCH_OK=1 ;; esac
# Anything inherited would change what is measured.
unset LD_PRELOAD CUDA_INJECTION64_PATH PYTORCH_CUDA_ALLOC_CONF PYTORCH_NO_CUDA_MEMORY_CACHING
for v in $(env | awk -F= '/^GPULEAK_/{print $1}'); do unset "$v"; done

# ---------------------------------------------------------------------------
section "build"
if ! gpu_build_shim; then
    tail -n 40 "$WORK/build-shim.log" | sed 's/^/    | /'
    echo "gpu-bench: the shim did not build"
    echo "- BUILD FAILED: the shim did not build (see gpu-bench.log)" >>"$HEADER"
    finish 1
fi
if ldd "$SHIM" | grep 'not found'; then
    echo "gpu-bench: the shim has unresolved libraries"
    echo "- BUILD FAILED: unresolved libraries: $(ldd "$SHIM" | grep 'not found' | tr '\n' ' ')" >>"$HEADER"
    finish 1
fi
echo "shim: $SHIM ($(du -k "$SHIM" | cut -f1) KiB)"
PAIRS_BIN=$WORK/bin/gpu_pairs
if timeout 180 "$NVCC" -O2 -g -Xcompiler -fno-omit-frame-pointer -o "$PAIRS_BIN" tests/bench/gpu_pairs.cu >"$WORK/build-pairs.log" 2>&1; then
    echo "gpu_pairs: built ($(ldd "$PAIRS_BIN" | grep -c cudart) shared cudart link(s): 0 means static)"
else
    tail -n 20 "$WORK/build-pairs.log" | sed 's/^/    | /'
    echo "- gpu_pairs.cu did not build: no pair rows" >>"$HEADER"
    PAIRS_BIN=
fi

if [ "$DRY" = 1 ]; then
    echo "GPU_BENCH_DRY=1: stopping before anything that needs the GPU"
    echo "- dry run (GPU_BENCH_DRY=1): nothing measured" >>"$HEADER"
    finish 0
fi

SHIM_ENV=(LD_PRELOAD="$SHIM" GPULEAK_OUTPUT="$WORK/reports/%p.json")

# ---------------------------------------------------------------------------
section "1. allocation pairs (gpu_pairs.cu), $REPS interleaved repetitions"
if [ -n "$PAIRS_BIN" ] && step 1; then
    for rep in $(seq 1 "$REPS"); do
        [ "$(left)" -gt 300 ] || { echo "    leaving the rest of the budget to the training loop"; break; }
        for mode in async sync; do
            n=$ASYNC_PAIRS
            [ "$mode" = sync ] && n=$SYNC_PAIRS
            run_one micro "$mode-plain" "$rep" 60 ns_per_pair "${PIN[@]}" env "$PAIRS_BIN" "$mode" "$n"
            run_one micro "$mode-shim" "$rep" 60 ns_per_pair "${PIN[@]}" env "${SHIM_ENV[@]}" "$PAIRS_BIN" "$mode" "$n"
            run_one micro "$mode-off" "$rep" 60 ns_per_pair "${PIN[@]}" env "${SHIM_ENV[@]}" GPULEAK_STACK_DEPTH=0 \
                GPULEAK_PYTHON=0 "$PAIRS_BIN" "$mode" "$n"
        done
    done
fi

# ---------------------------------------------------------------------------
section "2. training loop (gpu_train.py, $ITERS iterations), $REPS interleaved repetitions"
TRAIN=$REPO/tests/bench/gpu_train.py
# Kept for compute-sanitizer at the end: its run needs about this much.
SAN_RESERVE=110
case " $STEPS " in *" 3 "*) ;; *) SAN_RESERVE=0 ;; esac
train_run() {
    local config=$1 rep=$2
    shift 2
    run_one train "$config" "$rep" 120 ms_per_iter "${PIN[@]}" env PYTHONUNBUFFERED=1 "$@" "$PY" "$TRAIN" "$ITERS" 20
}
if [ "$TORCH_OK" = 1 ] && step 2; then
    for rep in $(seq 1 "$REPS"); do
        if [ "$(left)" -lt $((SAN_RESERVE + 90)) ]; then
            echo "    ${rep}: stopping the repetitions, $(left)s left"
            break
        fi
        configs=("${TRAIN_CONFIGS[@]}")
        # Reverse the order every other repetition (A B ... B A).
        if [ $((rep % 2)) -eq 0 ]; then
            configs=()
            for ((i = ${#TRAIN_CONFIGS[@]} - 1; i >= 0; i--)); do configs+=("${TRAIN_CONFIGS[i]}"); done
        fi
        for c in "${configs[@]}"; do
            # The anchors (PyTorch's history) may run in fewer repetitions.
            [ "$c" = history ] && [ "$rep" -gt "$ANCHOR_REPS" ] && continue
            case $c in
                plain-async) train_run "$c" "$rep" PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync ;;
                plain-caching) train_run "$c" "$rep" ;;
                shim-default) train_run "$c" "$rep" "${SHIM_ENV[@]}" ;;
                shim-async) train_run "$c" "$rep" "${SHIM_ENV[@]}" GPULEAK_TORCH_ALLOCATOR=async ;;
                shim-depth64) train_run "$c" "$rep" "${SHIM_ENV[@]}" GPULEAK_STACK_DEPTH=64 ;;
                shim-off) train_run "$c" "$rep" "${SHIM_ENV[@]}" GPULEAK_STACK_DEPTH=0 GPULEAK_PYTHON=0 ;;
                shim-python) train_run "$c" "$rep" "${SHIM_ENV[@]}" GPULEAK_STACK_DEPTH=0 ;;
                shim-native) train_run "$c" "$rep" "${SHIM_ENV[@]}" GPULEAK_PYTHON=0 ;;
                shim-selftime) train_run "$c" "$rep" "${SHIM_ENV[@]}" GPULEAK_SELF_TIME=1 ;;
                shim-libunwind) train_run "$c" "$rep" "${SHIM_ENV[@]}" GPULEAK_FAST_UNWIND=0 ;;
                shim-selftime-libunwind) train_run "$c" "$rep" "${SHIM_ENV[@]}" GPULEAK_SELF_TIME=1 GPULEAK_FAST_UNWIND=0 ;;
                history) train_run "$c" "$rep" GPU_BENCH_RECORD_HISTORY=1 ;;
                *) echo "    unknown configuration $c (GPU_BENCH_TRAIN_CONFIGS)" ;;
            esac
        done
    done
    # The shim's own time, as the runs with GPULEAK_SELF_TIME=1 measured it
    # (over the whole run, so per iteration it is slightly overstated).
    for lg in "$WORK"/train-shim-selftime-*.log; do
        [ -f "$lg" ] || continue
        line=$(grep -o 'its own time was [0-9.]* ms over [0-9]* call(s), [0-9]* ns a call' "$lg" | tail -n 1)
        ms=$(grep -o 'ms_per_iter=[0-9.]*' "$lg" | tail -n 1 | cut -d= -f2)
        [ -n "$line" ] && [ -n "$ms" ] || continue
        clock=$(grep -o "the clock's [0-9]* ns a read" "$lg" | tail -n 1 | awk '{print $3}')
        own=$(echo "$line" | awk '{print $5}')
        calls=$(echo "$line" | awk '{print $8}')
        echo "$line" | awk -v own="$own" -v calls="$calls" -v ms="$ms" -v it="$ITERS" -v clock="${clock:-?}" -v f="$(basename "$lg" .log)" \
            '{ printf "- %s: shim own time %.1f ms over %d calls (%.0f an iteration), %.1f us an iteration = %.2f%% of its %.3f ms/iter (clock reads of %s ns left out)\n", f, own, calls, calls / it, own * 1000 / it, 100 * own / it / ms, ms, clock }' \
            | tee -a "$HEADER" | sed 's/^/    /'
        # Where it went: the stacks' part of it.
        grep -o 'of it, [0-9]* stack(s) taken: .*' "$lg" | tail -n 1 | sed "s/^/- $(basename "$lg" .log): /" \
            | tee -a "$HEADER" | sed 's/^/    /'
    done
    # Which backend the shim's runs used (the user's, unchanged by default).
    grep -h -o 'backend=[A-Za-z]*' "$WORK"/train-shim-default-*.log 2>/dev/null | sort | uniq -c | sed 's/^/    shim-default /'
    rep=$(find "$WORK/reports" -name '*.json' -size -64M 2>/dev/null | head -n 1)
    [ -n "$rep" ] && "$PY" - "$rep" <<'PYEOF' | sed 's/^/    /'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print("a shim report:", {k: t.get(k) for k in ("allocations", "frees", "sites", "stacks", "shim_bytes")})
PYEOF
else
    echo "    no usable torch: $TORCH_INFO"
    echo "- no usable torch ($TORCH_INFO): no training rows" >>"$HEADER"
fi

# ---------------------------------------------------------------------------
section "6. JAX and CuPy loops with their defaults (gpu_frameworks.py), $REPS interleaved repetitions"
FRAMEWORKS=$REPO/tests/bench/gpu_frameworks.py
if step 6; then
    for fw in jax cupy; do
        if ! "$PY" -c "import $fw" >/dev/null 2>&1; then
            echo "    no $fw here"
            echo "- no $fw: no $fw rows" >>"$HEADER"
            continue
        fi
        for rep in $(seq 1 "$REPS"); do
            [ "$(left)" -lt 60 ] && break
            order=(plain shim)
            [ $((rep % 2)) -eq 0 ] && order=(shim plain)
            for c in "${order[@]}"; do
                if [ "$c" = plain ]; then
                    run_one "$fw" "plain" "$rep" 120 ms_per_iter "${PIN[@]}" env PYTHONUNBUFFERED=1 \
                        "$PY" "$FRAMEWORKS" "$fw" "$ITERS" 20
                else
                    run_one "$fw" "shim" "$rep" 120 ms_per_iter "${PIN[@]}" env PYTHONUNBUFFERED=1 \
                        "${SHIM_ENV[@]}" "$PY" "$FRAMEWORKS" "$fw" "$ITERS" 20
                fi
            done
        done
    done
fi

# ---------------------------------------------------------------------------
# What one native stack costs on PyTorch's allocation path, timed inside it.
section "5. unwind probe (tests/bench/unwind_probe.c) on gpu_train.py, 100 iterations"
PROBE_SO=$WORK/bin/unwind_probe.so
if ! step 5; then
    :
elif [ "$TORCH_OK" != 1 ]; then
    echo "    skipped: no torch"
elif ! cc -O2 -g -Wall -Wextra -shared -fPIC -Ishim/stacks -o "$PROBE_SO" tests/bench/unwind_probe.c shim/stacks/unwind.c \
        ${DEPS:+-I"$DEPS/include" -L"$DEPS/lib"} -lunwind -ldl -lpthread >"$WORK/build-probe.log" 2>&1; then
    tail -n 10 "$WORK/build-probe.log" | sed 's/^/    | /'
    echo "- unwind probe: did not build" >>"$HEADER"
else
    (cd "$WORK/cwd" && "${PIN[@]}" env LD_LIBRARY_PATH="$REPO/build/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LD_PRELOAD="$PROBE_SO" PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
        timeout 120 "$PY" "$TRAIN" 100 20) >"$WORK/probe.log" 2>&1
    echo "    exit $?"
    grep '^PROBE' "$WORK/probe.log" | sed 's/^/    /'
    grep '^PROBE' "$WORK/probe.log" | sed 's/^PROBE /- unwind probe: /' >>"$HEADER"
fi

# ---------------------------------------------------------------------------
section "3. compute-sanitizer --leak-check full ($SAN_ITERS iterations, once)"
SAN=$(command -v compute-sanitizer || true)
[ -z "$SAN" ] && [ -x "$CUDA_HOME/bin/compute-sanitizer" ] && SAN=$CUDA_HOME/bin/compute-sanitizer
[ -z "$SAN" ] && [ -x "$CUDA_HOME/compute-sanitizer/compute-sanitizer" ] && SAN=$CUDA_HOME/compute-sanitizer/compute-sanitizer
if ! step 3; then
    :
elif [ "$TORCH_OK" != 1 ]; then
    echo "    skipped: no torch"
elif [ -z "$SAN" ]; then
    echo "    compute-sanitizer not found"
    echo "- compute-sanitizer: not found" >>"$HEADER"
else
    t=$(($(left) - 20))
    [ "$t" -gt 180 ] && t=180
    if [ "$t" -lt 30 ]; then
        echo "    skipped: $(left)s left"
        echo "- compute-sanitizer: skipped, budget spent" >>"$HEADER"
    else
        warm=10
        [ "$SAN_ITERS" -le "$warm" ] && warm=0
        run_one train sanitizer 1 "$t" ms_per_iter env PYTHONUNBUFFERED=1 "$SAN" --leak-check full \
            "$PY" "$TRAIN" "$SAN_ITERS" "$warm"
        summary=$(grep -E 'LEAK SUMMARY|ERROR SUMMARY|bytes leaked' "$WORK"/train-sanitizer-1.log 2>/dev/null | head -n 3 | tr '\n' ' ')
        echo "    sanitizer said: ${summary:-nothing}"
        echo "- compute-sanitizer: $SAN_ITERS iterations ($warm warm-up), timeout ${t}s; it said: ${summary:-nothing recognisable (see gpu-bench.log)}" >>"$HEADER"
    fi
fi

# ---------------------------------------------------------------------------
# This host has more cores than the 2-core containers the CPU benchmarks
# usually run on: the thread scaling is only measurable here.
section "4. CPU benchmarks over the fake driver on this host (tests/bench/run.py)"
if ! step 4; then
    :
elif [ "$(left)" -lt 90 ]; then
    echo "    skipped: $(left)s of the budget left"
    echo "- CPU benchmarks on this host: skipped, budget spent" >>"$HEADER"
elif ! timeout 120 make -C "$REPO" -j"$(nproc)" build/fakecuda/libcuda.so.1 build/bench/bench_pairs \
        build/bench/bench_live >"$WORK/build-bench.log" 2>&1; then
    tail -n 20 "$WORK/build-bench.log" | sed 's/^/    | /'
    echo "- CPU benchmarks on this host: did not build" >>"$HEADER"
else
    timeout $(($(left) - 10)) "$PY" tests/bench/run.py --build "$REPO/build" --reps 5 \
        --only pairs,threads,memory,exit --out "$OUT/gpu-bench-cpu.md" >"$WORK/cpu-bench.log" 2>&1
    echo "    exit $? ($(wc -l <"$OUT/gpu-bench-cpu.md" 2>/dev/null || echo 0) lines in gpu-bench-cpu.md)"
    grep '^|' "$OUT/gpu-bench-cpu.md" 2>/dev/null | head -n 40
    echo "- CPU benchmarks on this host's cores: gpu-bench-cpu.md" >>"$HEADER"
fi

finish 0
