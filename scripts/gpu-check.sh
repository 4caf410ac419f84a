#!/usr/bin/env bash
# gpu-check.sh: checks gpuleak on a machine with a GPU against an independent
# referee (a CUPTI driver-API callback counter) and against programs that
# leak known amounts. Run from the repository root:
#
#   bash scripts/gpu-check.sh
#
# Needs: an NVIDIA GPU, nvcc, gcc, python3 with torch, CUPTI (headers and
# libcupti.so from the CUDA install or the nvidia-cuda-cupti wheel), and
# .deps/ from scripts/fetch-gpu-deps.sh when the machine has no libunwind.
#
# Writes to "${OUT:-/tmp/gpuleak-out}" (at most three files, so they all come
# back from the device tool; docs/gpu-check.md records the latest results,
# not these files):
#   gpu-check.log           everything printed here
#   gpu-check-summary.txt   one line per check and the verdict
#   gpu-check-files.tar.gz  reports, CUPTI counts, per-run logs
#
# Steps: 1 environment; 2 build the shim; 3 build and self-test the CUPTI
# counter; 4 leak.cu three ways (static cudart, shared cudart, per-thread
# default stream) under the shim and the counter; 5 tests/gpu/train.py under
# PyTorch's caching allocator, expandable segments and cudaMallocAsync;
# 6 PY-FRAMES (Python stacks in the report); 6b growth leak scripts; 6c ranks;
# 6d TENSORS (PyTorch's tensors from its allocator's events against its own
# memory_stats(), CUDA graphs and torch.compile unchanged, the leak scripts
# with expandable segments). Each check prints PASS or FAIL;
# the exit status is 1 when any check failed, PY-FRAMES included (set
# GPU_CHECK_PY_FRAMES_REQUIRED=0 to leave it out), 0 otherwise.
#
# Knobs: GPU_CHECK_BUDGET_S (default 560: later steps are skipped, as FAIL,
# once this many seconds have passed), GPU_CHECK_ITERS (train.py iterations,
# default 200), GPU_CHECK_DRY=1 (build only: for a machine without a GPU).
set -u -o pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh
gpu_begin gpu-check

BUDGET=${GPU_CHECK_BUDGET_S:-560}
ITERS=${GPU_CHECK_ITERS:-200}
DRY=${GPU_CHECK_DRY:-0}
PY=${PYTHON:-python3}
COMPARE=("$PY" "$REPO/tests/gpu/compare.py")
T0=$SECONDS

RESULTS=()
NFAIL=0
NPASS=0
PYFRAMES_STATUS="not run"

finish() {
    local verdict st
    section "summary"
    printf '%s\n' "${RESULTS[@]}"
    if [ "$NFAIL" -eq 0 ]; then verdict="ALL PASS"; st=0; else verdict="FAILED: $NFAIL check(s)"; st=1; fi
    if [ "$DRY" != 1 ] && [ "${GPU_CHECK_PY_FRAMES_REQUIRED:-1}" = 1 ] && [ "$PYFRAMES_STATUS" != PASS ]; then
        verdict="$verdict; PY-FRAMES required and $PYFRAMES_STATUS"; st=1
    fi
    echo
    echo "gpu-check: $NPASS passed, $NFAIL failed; PY-FRAMES $PYFRAMES_STATUS (counted unless GPU_CHECK_PY_FRAMES_REQUIRED=0)"
    echo "gpu-check: $verdict  [total $((SECONDS - T0))s]"
    {
        printf '%s\n' "${RESULTS[@]}"
        echo "PY-FRAMES $PYFRAMES_STATUS"
        echo "gpu-check: $verdict  [total $((SECONDS - T0))s]"
    } >"$OUT/gpu-check-summary.txt"
    # Pack the work folder; keep the archive under the device tool's 16 MiB a file.
    local tarball=$OUT/gpu-check-files.tar.gz
    tar -C "$WORK" --exclude=./cwd/core -czf "$tarball" . 2>/dev/null
    local sz
    sz=$(stat -c %s "$tarball" 2>/dev/null || echo 0)
    if [ "$sz" -gt $((15 * 1024 * 1024)) ]; then
        echo "gpu-check: archive is $sz bytes; dropping the largest reports"
        find "$WORK" -name '*.json' -size +4M -print -delete
        tar -C "$WORK" -czf "$tarball" . 2>/dev/null
    fi
    echo "gpu-check: files in $OUT: $(find "$OUT" -maxdepth 1 -type f -printf '%f ')"
    exec >&- 2>&-
    wait "$TEE_PID" 2>/dev/null
    exit "$st"
}

# ---------------------------------------------------------------------------
section "1. environment"
date -u '+date: %F %T UTC'
echo "host: $(hostname) $(uname -srm)"
if command -v nvidia-smi >/dev/null; then
    gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader 2>&1)
    echo "gpu: $gpu"
    if [ "$DRY" != 1 ] && ! nvidia-smi -L >/dev/null 2>&1; then result FAIL "ENV nvidia-smi" "$gpu"; fi
else
    echo "gpu: no nvidia-smi"
    [ "$DRY" = 1 ] || result FAIL "ENV nvidia-smi" "not found"
fi
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=$(command -v nvcc || echo "$CUDA_HOME/bin/nvcc")
[ -d "$CUDA_HOME" ] || CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
echo "nvcc: $("$NVCC" --version 2>&1 | tail -n 2 | tr '\n' ' ')"
echo "CUDA_HOME: $CUDA_HOME"
echo "gcc: $(gcc --version | head -n 1)"
echo "glibc: $(ldd --version 2>&1 | head -n 1)"
echo "python: $("$PY" -c 'import sys; print(sys.version.split()[0], sys.executable)' 2>&1)"
TORCH_INFO=$(timeout 90 "$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tail -n 1)
echo "torch: $TORCH_INFO"
TORCH_OK=0
case $TORCH_INFO in *"available True"*) TORCH_OK=1 ;; esac
echo "env: PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF-<unset>} LD_PRELOAD=${LD_PRELOAD-<unset>} CUDA_INJECTION64_PATH=${CUDA_INJECTION64_PATH-<unset>}"
echo "git: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?') $(git -C "$REPO" status --porcelain 2>/dev/null | wc -l) changed file(s)"
# Anything inherited would spoil the counts.
unset LD_PRELOAD CUDA_INJECTION64_PATH GPULEAK_OUTPUT PYTORCH_CUDA_ALLOC_CONF PYTORCH_NO_CUDA_MEMORY_CACHING GPULEAK_TORCH_ALLOCATOR

# ---------------------------------------------------------------------------
section "2. build the shim"
SHIM_OK=0
if gpu_build_shim; then
    sed 's/^/    /' "$WORK/build-shim.log" | tail -n 15
    ldd "$SHIM" | sed 's/^/    ldd: /'
    missing=$(ldd "$SHIM" | grep 'not found')
    exports=$(nm -D --defined-only "$SHIM" | awk '{print $3}' | grep -c -x -E 'cuMemAlloc_v2|cuMemFree_v2|dlsym|cuGetProcAddress_v2')
    if [ -n "$missing" ]; then
        result FAIL "BUILD shim" "unresolved: $missing"
    elif [ "$exports" -lt 4 ]; then
        result FAIL "BUILD shim" "exports only $exports of cuMemAlloc_v2, cuMemFree_v2, dlsym, cuGetProcAddress_v2"
    else
        result PASS "BUILD shim" "$(du -k "$SHIM" | cut -f1) KiB, libunwind: $(ldd "$SHIM" | awk '/libunwind.so.8/{print $3}')"
        SHIM_OK=1
    fi
else
    tail -n 40 "$WORK/build-shim.log" | sed 's/^/    | /'
    result FAIL "BUILD shim" "make failed, see build-shim.log"
fi
if [ "$SHIM_OK" = 1 ]; then
    # The shim in a process with no CUDA at all must be harmless.
    if (cd "$WORK/cwd" && LD_PRELOAD=$SHIM GPULEAK_OUTPUT=$WORK/reports/smoke-true.json timeout 20 /bin/true) >"$WORK/smoke-true.log" 2>&1; then
        result PASS "SMOKE shim in /bin/true"
    else
        tail -n 10 "$WORK/smoke-true.log" | sed 's/^/    | /'
        result FAIL "SMOKE shim in /bin/true"
    fi
fi

# ---------------------------------------------------------------------------
section "3. the CUPTI counter"
CUPTI_INC="" CUPTI_LIB=""
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
for d in "$CUDA_HOME/include" "$CUDA_HOME/extras/CUPTI/include" "$CUDA_HOME/targets/x86_64-linux/include" \
         "$SITE/nvidia/cu13/include" "$SITE/nvidia/cuda_cupti/include"; do
    [ -f "$d/cupti.h" ] && { CUPTI_INC=$d; break; }
done
for d in "$CUDA_HOME/extras/CUPTI/lib64" "$CUDA_HOME/lib64" "$CUDA_HOME/lib" "$CUDA_HOME/targets/x86_64-linux/lib" \
         "$SITE/nvidia/cu13/lib" "$SITE/nvidia/cuda_cupti/lib"; do
    if [ -e "$d/libcupti.so" ] || [ -e "$d/libcupti.so.13" ]; then CUPTI_LIB=$d; break; fi
done
if [ -z "$CUPTI_LIB" ]; then
    f=$(ldconfig -p 2>/dev/null | awk '/libcupti\.so/{print $NF; exit}')
    [ -n "$f" ] && CUPTI_LIB=$(dirname "$f")
fi
echo "cupti.h: ${CUPTI_INC:-not found}; libcupti: ${CUPTI_LIB:-not found} ($(find "$CUPTI_LIB/" -maxdepth 1 -name 'libcupti.so*' -printf '%f ' 2>/dev/null))"
CUPTI_SO=$WORK/bin/libcupti_count.so
CUPTI_OK=0
if [ -n "$CUPTI_INC" ] && [ -n "$CUPTI_LIB" ]; then
    LINK_CUPTI=(-L"$CUPTI_LIB" -lcupti "-Wl,-rpath,$CUPTI_LIB")
    [ -e "$CUPTI_LIB/libcupti.so" ] || LINK_CUPTI=(-L"$CUPTI_LIB" -l:libcupti.so.13 "-Wl,-rpath,$CUPTI_LIB")
    CC_CUPTI=(gcc -O2 -g -Wall -Wextra -fPIC -I"$CUDA_HOME/include" -I"$CUPTI_INC")
    if "${CC_CUPTI[@]}" -shared -o "$CUPTI_SO" tests/gpu/cupti_count.c "${LINK_CUPTI[@]}" -lpthread >"$WORK/build-cupti.log" 2>&1 &&
       "${CC_CUPTI[@]}" -o "$WORK/bin/cupti_selftest" tests/gpu/cupti_count_selftest.c "${LINK_CUPTI[@]}" -lpthread >>"$WORK/build-cupti.log" 2>&1; then
        result PASS "BUILD cupti_count.so" "linked to $(ldd "$CUPTI_SO" | awk '/libcupti/{print $3}')"
        if check "CUPTI-SELFTEST counter bookkeeping" bash -c \
            "'$WORK/bin/cupti_selftest' '$WORK/reports/cupti-selftest.json' && '$PY' tests/gpu/check_selftest.py '$WORK/reports/cupti-selftest.json'"; then
            CUPTI_OK=1
        fi
    else
        tail -n 30 "$WORK/build-cupti.log" | sed 's/^/    | /'
        result FAIL "BUILD cupti_count.so" "see build-cupti.log"
    fi
else
    result FAIL "BUILD cupti_count.so" "no cupti.h or libcupti found"
fi

# ---------------------------------------------------------------------------
section "4. leak.cu: static cudart, shared cudart, per-thread default stream"
NVFLAGS=(-O1 -g -Xcompiler -fno-omit-frame-pointer -Xcompiler -rdynamic)
ARCH=(-arch=sm_90)
VARIANTS=()
for v in static shared ptsz; do
    case $v in
        static) extra=() ;;
        shared) extra=(-cudart shared -Xlinker -rpath="$CUDA_HOME/lib64" -Xlinker -rpath="$CUDA_HOME/lib") ;;
        ptsz) extra=(--default-stream per-thread) ;;
    esac
    if "$NVCC" "${ARCH[@]}" "${NVFLAGS[@]}" "${extra[@]}" -o "$WORK/bin/leak-$v" tests/gpu/leak.cu >"$WORK/build-leak-$v.log" 2>&1 ||
       { ARCH=(); "$NVCC" "${NVFLAGS[@]}" "${extra[@]}" -o "$WORK/bin/leak-$v" tests/gpu/leak.cu >>"$WORK/build-leak-$v.log" 2>&1; }; then
        if [ "$v" = shared ] && ! ldd "$WORK/bin/leak-$v" 2>/dev/null | grep libcudart.so >/dev/null; then
            result FAIL "BUILD leak-$v" "not linked to libcudart.so"
            continue
        fi
        result PASS "BUILD leak-$v" "$(ldd "$WORK/bin/leak-$v" 2>/dev/null | awk '/libcudart/{print $3}')${ARCH[*]:+ ${ARCH[*]}}"
        VARIANTS+=("$v")
    else
        tail -n 20 "$WORK/build-leak-$v.log" | sed 's/^/    | /'
        result FAIL "BUILD leak-$v"
    fi
done

if [ "$DRY" = 1 ]; then
    echo "GPU_CHECK_DRY=1: stopping before anything that needs the GPU"
    finish
fi

R=$WORK/reports
if [ "$CUPTI_OK" = 1 ] && [ -x "$WORK/bin/leak-static" ] && have_time "CUPTI-BASELINE leak-static" 30; then
    # The referee alone, no shim: it must agree with what the program says it did.
    if run_logged cupti-only-leak-static 60 env CUDA_INJECTION64_PATH="$CUPTI_SO" \
        CUPTI_COUNT_OUT="$R/cupti-only-leak-static-%p.json" LEAK_EXPECT_OUT="$R/expect-baseline.json" \
        "$WORK/bin/leak-static" baseline; then
        f=$("${COMPARE[@]}" pick "$R" cupti-only-leak-static-)
        check "CUPTI-BASELINE leak-static (CUPTI alone vs leak.cu's own accounting)" \
            "${COMPARE[@]}" --label cupti-baseline expect "$f" "$R/expect-baseline.json" || {
            echo "    the referee disagrees with the program: shim comparisons below are suspect"; }
    else
        result FAIL "CUPTI-BASELINE leak-static" "run failed"
    fi
fi

for v in "${VARIANTS[@]}"; do
    [ "$SHIM_OK" = 1 ] || { result FAIL "LEAK-$v" "no shim"; continue; }
    have_time "LEAK-$v" 30 || continue
    inj=()
    [ "$CUPTI_OK" = 1 ] && inj=(CUDA_INJECTION64_PATH="$CUPTI_SO" CUPTI_COUNT_OUT="$R/cupti-leak-$v-%p.json")
    if ! run_logged "leak-$v" 60 env LD_PRELOAD="$SHIM" GPULEAK_OUTPUT="$R/leak-$v-%p.json" "${inj[@]}" \
        LEAK_EXPECT_OUT="$R/expect-leak-$v.json" "$WORK/bin/leak-$v" "$v"; then
        result FAIL "LEAK-$v run" "exit status, see leak-$v.log"
        continue
    fi
    result PASS "LEAK-$v run"
    rep=$("${COMPARE[@]}" pick "$R" "leak-$v-") || { result FAIL "LEAK-$v report" "no report written"; continue; }
    pid=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["process"]["pid"])' "$rep" 2>/dev/null)
    "${COMPARE[@]}" --label "leak-$v" summary "$rep" | sed 's/^/    /'
    if [ "$CUPTI_OK" = 1 ]; then
        cf=$("${COMPARE[@]}" pick "$R" "cupti-leak-$v-" ${pid:+--pid "$pid"})
        check "COUNTS leak-$v (gpuleak vs CUPTI)" "${COMPARE[@]}" --label "leak-$v" counts "$rep" "$cf"
    fi
    check "EXPECT leak-$v (gpuleak vs leak.cu's own accounting)" \
        "${COMPARE[@]}" --label "leak-$v" expect "$rep" "$R/expect-leak-$v.json"
    check "STACK leak-$v (leak sites name leak_on_purpose, every kind leaked)" \
        "${COMPARE[@]}" --label "leak-$v" stack "$rep" --function leak_on_purpose --kinds-from "$R/expect-leak-$v.json"
done

# The shim alone (no CUPTI) must count the same: the referee changes nothing.
if [ "$SHIM_OK" = 1 ] && [ "$CUPTI_OK" = 1 ] && [ -x "$WORK/bin/leak-static" ] && have_time "CONTROL leak-static" 30; then
    if run_logged shim-only-leak-static 60 env LD_PRELOAD="$SHIM" GPULEAK_OUTPUT="$R/shim-only-leak-static-%p.json" \
        "$WORK/bin/leak-static" control; then
        a=$("${COMPARE[@]}" pick "$R" shim-only-leak-static-)
        b=$("${COMPARE[@]}" pick "$R" leak-static-)
        check "CONTROL leak-static (shim alone vs shim+CUPTI)" "${COMPARE[@]}" --label control same "$a" "$b"
    else
        result FAIL "CONTROL leak-static" "run failed"
    fi
fi

# ---------------------------------------------------------------------------
section "5. PyTorch: tests/gpu/train.py ($ITERS iterations) under three allocators"
TRAIN=$REPO/tests/gpu/train.py
LEAK_LINE=$(grep -n '# LEAK-LINE' "$TRAIN" | cut -d: -f1)
if [ "$(printf '%s\n' "$LEAK_LINE" | grep -c .)" -ne 1 ]; then
    result FAIL "TRAIN marker" "want exactly one '# LEAK-LINE' line in train.py, got: $LEAK_LINE"
    LEAK_LINE=0
fi
echo "train.py LEAK-LINE is line $LEAK_LINE: $(sed -n "${LEAK_LINE}p" "$TRAIN" | sed 's/^ *//')"
[ "$TORCH_OK" = 1 ] || result FAIL "TORCH available" "$TORCH_INFO"

# torch_run NAME ENV...: train.py under the shim and the counter.
torch_run() {
    local name=$1
    shift
    local inj=()
    [ "$CUPTI_OK" = 1 ] && inj=(CUDA_INJECTION64_PATH="$CUPTI_SO" CUPTI_COUNT_OUT="$R/cupti-$name-%p.json")
    run_logged "$name" 150 env -u PYTORCH_CUDA_ALLOC_CONF PYTHONUNBUFFERED=1 "$@" \
        LD_PRELOAD="$SHIM" GPULEAK_OUTPUT="$R/$name-%p.json" "${inj[@]}" "$PY" "$TRAIN" "$ITERS"
}

declare -A TORCH_REPORT=()
for mode in native expandable async; do
    name=torch-$mode
    case $mode in
        native) envs=(GPULEAK_SUMMARY=1); want_kind=device ;;  # the defaults: allocator untouched
        expandable) envs=(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True); want_kind=vmm ;;
        async) envs=(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync); want_kind=pool ;;
    esac
    if [ "$SHIM_OK" != 1 ] || [ "$TORCH_OK" != 1 ]; then result FAIL "TORCH-$mode" "no shim or no torch"; continue; fi
    have_time "TORCH-$mode" 60 || continue
    echo "--- $name: ${envs[*]}"
    if ! torch_run "$name" "${envs[@]}"; then
        result FAIL "TORCH-$mode run" "see $name.log"
        continue
    fi
    grep '^TRAIN-STATS' "$WORK/$name.log" | sed 's/^/    /'
    result PASS "TORCH-$mode run"
    rep=$("${COMPARE[@]}" pick "$R" "$name-") || { result FAIL "TORCH-$mode report" "no report written"; continue; }
    TORCH_REPORT[$mode]=$rep
    pid=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["process"]["pid"])' "$rep" 2>/dev/null)
    "${COMPARE[@]}" --label "$name" summary "$rep" | sed 's/^/    /'
    if [ "$CUPTI_OK" = 1 ]; then
        cf=$("${COMPARE[@]}" pick "$R" "cupti-$name-" ${pid:+--pid "$pid"})
        check "COUNTS torch-$mode (gpuleak vs CUPTI)" "${COMPARE[@]}" --label "$name" counts "$rep" "$cf"
    fi
    check "KIND torch-$mode ($want_kind allocations > 0)" "${COMPARE[@]}" --label "$name" kindpos "$rep" "$want_kind"
done

# ---------------------------------------------------------------------------
section "6. PY-FRAMES: Python stacks in the cudaMallocAsync run"
if [ -n "${TORCH_REPORT[async]:-}" ] && [ "$LEAK_LINE" -gt 0 ]; then
    out=$("${COMPARE[@]}" --label torch-async pyframes "${TORCH_REPORT[async]}" --file train.py --line "$LEAK_LINE" 2>&1)
    rc=$?
    printf '%s\n' "$out" | sed 's/^/    /'
    if [ "$rc" -eq 0 ]; then PYFRAMES_STATUS=PASS; else PYFRAMES_STATUS=FAIL; fi
else
    PYFRAMES_STATUS="FAIL (no torch-async report)"
fi
if [ -n "${TORCH_REPORT[async]:-}" ]; then
    check "POOL-RESERVED torch-async (timeline has the pool's reservation beside its use)" "$PY" - "${TORCH_REPORT[async]}" <<'PYEOF'
import json, sys
points = json.load(open(sys.argv[1]))["timeline"]["points"]
# The last point is taken at exit, when the driver may no longer answer:
# there the reservation is unknown and the field is left out.
used = [p for p in points[:-1] if p["kinds"]["pool"] > 0]
with_reserved = [p for p in used if p.get("pool_reserved_bytes", 0) >= p["kinds"]["pool"]]
top = max(used, key=lambda p: p["kinds"]["pool"]) if used else None
print("points with pool use: %d; with reserved >= used: %d; at the largest use: used %s, reserved %s"
      % (len(used), len(with_reserved), top and top["kinds"]["pool"], top and top.get("pool_reserved_bytes")))
sys.exit(0 if used and len(with_reserved) == len(used) else 1)
PYEOF
fi
echo "PY-FRAMES $PYFRAMES_STATUS  (train.py:$LEAK_LINE in a python_stack of the torch-async report)"

# ---------------------------------------------------------------------------
section "6b. GROWTH: four classic PyTorch leaks and a steady loop (default tensor mode)"
LEAKS=$REPO/tests/gpu/leaks
# growth_checks NAME PREFIX SCRIPTS ENV...: each leak script under the shim
# with ENV; its top growth origin must be its LEAK-LINE, no_leak's none.
growth_checks() {
    local name=$1 prefix=$2 scripts=$3 script rep line
    shift 3
    for script in $scripts; do
        if [ "$SHIM_OK" != 1 ] || [ "$TORCH_OK" != 1 ]; then result FAIL "$name $script" "no shim or no torch"; continue; fi
        have_time "$name $script" 40 || continue
        if ! run_logged "$prefix-$script" 120 env "$@" PYTHONUNBUFFERED=1 \
            LD_PRELOAD="$SHIM" GPULEAK_OUTPUT="$R/$prefix-$script-%p.json" GPULEAK_SUMMARY=0 \
            "$PY" "$LEAKS/$script.py" 400; then
            result FAIL "$name $script run" "see $prefix-$script.log"
            continue
        fi
        rep=$("${COMPARE[@]}" pick "$R" "$prefix-$script-") || { result FAIL "$name $script report" "none written"; continue; }
        if [ "$script" = no_leak ]; then
            check "$name $script (no growth finding)" "$PY" "$LEAKS/check_growth.py" "$rep" "$script.py" --no-leak
        else
            line=$(grep -n '# LEAK-LINE' "$LEAKS/$script.py" | cut -d: -f1)
            check "$name $script (top growth origin is $script.py:$line)" \
                "$PY" "$LEAKS/check_growth.py" "$rep" "$script.py" --line "$line"
        fi
    done
}
growth_checks GROWTH growth "outputs_with_graph model_rebuilt batches_list dict_cache no_leak" -u PYTORCH_CUDA_ALLOC_CONF

# ---------------------------------------------------------------------------
section "6c. RANKS: two ranks on one GPU under torchrun, reports per rank, gpuleak merge"
if [ "$SHIM_OK" = 1 ] && [ "$TORCH_OK" = 1 ] && have_time "RANKS" 60; then
    if make -C "$REPO" build/gpuleak >"$WORK/build-cli.log" 2>&1; then
        result PASS "BUILD gpuleak command"
        if run_logged ranks 150 env -u PYTORCH_CUDA_ALLOC_CONF PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 \
            LD_PRELOAD="$SHIM" GPULEAK_OUTPUT="$R/rank-%r-%p.json" GPULEAK_SUMMARY=0 \
            "$PY" -m torch.distributed.run --standalone --nproc_per_node=2 "$REPO/tests/gpu/ranks_leak.py"; then
            n=$(find "$R" -name 'rank-*.json' | wc -l)
            if [ "$n" -eq 2 ]; then result PASS "RANKS one report per rank ($n)"; else result FAIL "RANKS one report per rank" "found $n"; fi
            "$REPO/build/gpuleak" merge "$R"/rank-*.json 2>&1 | sed 's/^/    /'
            line=$(grep -n '# LEAK-LINE' "$REPO/tests/gpu/ranks_leak.py" | cut -d: -f1)
            r1=$(find "$R" -name 'rank-1-*.json' | head -n 1)
            r0=$(find "$R" -name 'rank-0-*.json' | head -n 1)
            check "RANKS rank 1 grew at ranks_leak.py:$line" "$PY" "$LEAKS/check_growth.py" "$r1" ranks_leak.py --line "$line"
            check "RANKS rank 0 did not grow" "$PY" "$LEAKS/check_growth.py" "$r0" ranks_leak.py --no-leak
        else
            result FAIL "RANKS run" "see ranks.log"
        fi
    else
        result FAIL "BUILD gpuleak command" "see build-cli.log"
        tail -n 20 "$WORK/build-cli.log" | sed 's/^/    | /'
    fi
fi

# ---------------------------------------------------------------------------
section "6d. TENSORS: PyTorch's own allocator events, the program unchanged"
GPU=$REPO/tests/gpu
if [ "$SHIM_OK" = 1 ] && [ "$TORCH_OK" = 1 ]; then
    # Counts: gpuleak's tensor kind against torch.cuda.memory_stats().
    for variant in mlp gpt2 gpt2-expandable; do
        have_time "TENSOR-STATS $variant" 40 || continue
        conf=() model=mlp want_conf=
        case $variant in gpt2*) model=gpt2 ;; esac
        case $variant in *expandable) conf=(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True); want_conf=expandable_segments:True ;; esac
        if run_logged "tstats-$variant" 120 env -u PYTORCH_CUDA_ALLOC_CONF PYTHONUNBUFFERED=1 "${conf[@]}" \
            TENSOR_STATS_MODEL=$model EXPECT_OUT="$R/tstats-$variant.json" \
            LD_PRELOAD="$SHIM" GPULEAK_OUTPUT="$R/tstats-$variant-%p.json" GPULEAK_SUMMARY=0 "$PY" "$GPU/tensor_stats.py" 40; then
            check "TENSOR-STATS $variant (gpuleak's tensors = torch.cuda.memory_stats())" \
                env WANT_ALLOC_CONF="$want_conf" "$PY" "$GPU/check_tensor_stats.py" "$R/tstats-$variant.json"
        else
            result FAIL "TENSOR-STATS $variant run" "see tstats-$variant.log"
        fi
    done
    # CUDA graphs and torch.compile(mode="reduce-overhead"): same output and
    # status with the defaults as without gpuleak.
    for mode in graph compile; do
        have_time "GRAPHS $mode" 90 || continue
        run_logged "graphs-$mode-plain" 240 env -u PYTORCH_CUDA_ALLOC_CONF "$PY" "$GPU/graphs.py" "$mode"
        prc=$?
        run_logged "graphs-$mode-shim" 240 env -u PYTORCH_CUDA_ALLOC_CONF LD_PRELOAD="$SHIM" \
            GPULEAK_OUTPUT="$R/graphs-$mode-%p.json" GPULEAK_SUMMARY=0 "$PY" "$GPU/graphs.py" "$mode"
        src=$?
        grep -E '^(step|replay|after)' "$WORK/graphs-$mode-plain.log" >"$WORK/graphs-$mode-plain.out"
        grep -E '^(step|replay|after)' "$WORK/graphs-$mode-shim.log" >"$WORK/graphs-$mode-shim.out"
        sed 's/^/    plain: /' "$WORK/graphs-$mode-plain.out" | tail -n 3
        if [ "$prc" -eq 0 ] && [ "$src" -eq 0 ] && [ -s "$WORK/graphs-$mode-plain.out" ] &&
           cmp -s "$WORK/graphs-$mode-plain.out" "$WORK/graphs-$mode-shim.out"; then
            result PASS "GRAPHS $mode (exit 0 and the same output as plain)"
        else
            diff "$WORK/graphs-$mode-plain.out" "$WORK/graphs-$mode-shim.out" | head -n 10 | sed 's/^/    | /'
            result FAIL "GRAPHS $mode" "plain exit $prc, shim exit $src, outputs $(cmp -s "$WORK/graphs-$mode-plain.out" "$WORK/graphs-$mode-shim.out" && echo same || echo differ)"
        fi
        rep=$("${COMPARE[@]}" pick "$R" "graphs-$mode-") &&
            "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); t=r["kinds"]["tensor"]; print("    tensors %s: %d allocations, %d frees, %d live at exit, unknown frees %d" % (r["torch_allocator"]["tensors"], t["allocations"], t["frees"], t["live_bytes"], r["totals"]["unknown_frees"]))' "$rep"
    done
    # The leak scripts with expandable segments (6b ran them without).
    growth_checks GROWTH-EXPANDABLE growth-exp "outputs_with_graph batches_list dict_cache no_leak" \
        PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
fi

# ---------------------------------------------------------------------------
# Information only, while time is left: the same async run with the referee
# alone (does the shim change what PyTorch does?) and with nothing (speed).
section "7. information: torch-async without the shim"
if [ "$TORCH_OK" = 1 ] && [ "$CUPTI_OK" = 1 ] && [ $((BUDGET - (SECONDS - T0))) -gt 60 ]; then
    if run_logged torch-async-cupti-only 120 env PYTHONUNBUFFERED=1 PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
        CUDA_INJECTION64_PATH="$CUPTI_SO" CUPTI_COUNT_OUT="$R/info-cupti-async-%p.json" "$PY" "$TRAIN" "$ITERS"; then
        grep '^TRAIN-STATS' "$WORK/torch-async-cupti-only.log" | sed 's/^/    /'
        a=$("${COMPARE[@]}" pick "$R" info-cupti-async- 2>/dev/null)
        b=$("${COMPARE[@]}" pick "$R" cupti-torch-async- 2>/dev/null)
        [ -n "$a" ] && [ -n "$b" ] && "$PY" - "$a" "$b" <<'PYEOF' | sed 's/^/    /'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("allocations", "frees", "leaked_allocations"):
    print(f"INFO cupti {k}: without shim {a['totals'][k]}, with shim {b['totals'][k]}")
PYEOF
    fi
fi
if [ "$TORCH_OK" = 1 ] && [ $((BUDGET - (SECONDS - T0))) -gt 45 ]; then
    if run_logged torch-async-plain 120 env PYTHONUNBUFFERED=1 PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
        "$PY" "$TRAIN" "$ITERS"; then
        echo "    INFO plain (no shim, no CUPTI):"
        grep '^TRAIN-STATS' "$WORK/torch-async-plain.log" | sed 's/^/    /'
    fi
fi

finish
