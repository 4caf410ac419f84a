#!/bin/sh
# Tests of the gpuleak command, run by `make cli-test`: the Check suite,
# then every subcommand and exit code end to end, then the fuzz crashes.
# Usage: tests/cli/run.sh BUILD_DIR   (from the repository root)
set -u
BUILD=${1:-build}
G=$BUILD/gpuleak
FIX=tests/cli/fixtures
T=$(mktemp -d "${TMPDIR:-/tmp}/gpuleak-cli-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
pass=0

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect CODE DESCRIPTION -- COMMAND...: the command's exit status must be CODE;
# its stdout and stderr are left in $T/out and $T/err.
expect() {
    want=$1; what=$2; shift 3
    "$@" >"$T/out" 2>"$T/err"
    got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$what: exit $got, wanted $want"; sed 's/^/    /' "$T/err" | head -5; fi
}
# has FILE TEXT: FILE contains TEXT.
has() { if grep -qF -- "$2" "$1"; then ok; else bad "$(basename "$1") lacks \"$2\""; fi; }
hasnt() { if grep -qF -- "$2" "$1"; then bad "$(basename "$1") has \"$2\""; else ok; fi; }
lines() { n=$(wc -l <"$1"); if [ "$n" -eq "$2" ]; then ok; else bad "$(basename "$1") has $n line(s), wanted $2"; fi; }

echo "== Check suite (units, suppressions, loader)"
mkdir -p "$BUILD/tests"
cc ${TEST_CFLAGS:-} -Wall -Wextra -std=gnu11 -g -iquote cli -iquote shim -iquote common -o "$BUILD/tests/test_cli" tests/cli/test_cli.c \
    "$BUILD"/cli/load.o "$BUILD"/cli/supp.o "$BUILD"/cli/units.o "$BUILD"/cli/frames.o "$BUILD"/cli/opts.o \
    "$BUILD"/cli/frame_text.o "$BUILD"/cli/origin_rules.o "$BUILD"/cli/json_split.o "$BUILD"/cli/strpool.o \
    "$BUILD"/cli/composition.o \
    -lcheck -lsubunit -lm -lrt -lpthread -ljansson || exit 1
"$BUILD/tests/test_cli" || fails=$((fails + 1))

echo "== report"
for g in tests/cli/golden/*.txt; do
    name=$(basename "$g" .txt)
    args=$(sed -n '1s/^# gpuleak //p' "$g")
    # shellcheck disable=SC2086
    $G $args >"$T/golden" 2>&1
    tail -n +2 "$g" >"$T/want"
    if cmp -s "$T/want" "$T/golden"; then ok; else bad "golden $name differs:"; diff -u "$T/want" "$T/golden" | head -20; fi
done
# layout.json records its interpreter's layout ("python_layout": a standard
# library in pylib/python3.11, a package in a --target folder, neither known
# to the built-in globs), and origins as a shim without it wrote them. Judged
# again, its Python frames are judged by the layout (golden report-layout);
# '!' globs still come first; without the field, the built-in globs alone.
expect 0 "report with python_layout, as written" -- $G report $FIX/layout.json
has "$T/out" "/opt/py/pylib/python3.11/sched.py:151 in scheduler.run"
expect 1 "check judged again by the recorded layout" -- $G check --origin-rules default $FIX/layout.json
has "$T/out" "device memory at /srv/app/layout_demo.py:48 in through_stdlib"
has "$T/out" "device memory at /srv/app/layout_demo.py:53 in through_library, via Grid.make __init__.py:15"
expect 1 "check judged again, a library kept by a glob" -- $G check --origin-skip '!*/gridlib/*' $FIX/layout.json
has "$T/out" "device memory at /srv/app/deps/gridlib/__init__.py:15 in Grid.make"
has "$T/out" "device memory at /srv/app/layout_demo.py:48 in through_stdlib"
expect 1 "check judged again without the built-in rules, the layout's gone too" -- $G check --origin-rules none $FIX/layout.json
has "$T/out" "device memory at /opt/py/pylib/python3.11/sched.py:151 in scheduler.run"
python3 - "$FIX/layout.json" "$T" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d.pop("python_layout")
json.dump(d, open(sys.argv[2] + "/nolayout.json", "w"))
PY
expect 1 "check judged again without python_layout" -- $G check --origin-rules default "$T/nolayout.json"
has "$T/out" "device memory at /opt/py/pylib/python3.11/sched.py:151 in scheduler.run"
has "$T/out" "device memory at /srv/app/deps/gridlib/__init__.py:15 in Grid.make"
expect 0 "report" -- $G report $FIX/demo.json
has "$T/out" "Leak of 10485760 byte(s) in 5 allocation(s) of device memory on device 0, allocated from:"
has "$T/out" "#0 forward in /src/model.py:17 (Python)"
has "$T/out" "GPU memory over time: peak"
expect 0 "report --kind host" -- $G report --kind host $FIX/demo.json
hasnt "$T/out" "tests/demo/demo.c:23 in keep_for_logging"
expect 0 "report --device 0 --top 1 --full-stacks" -- $G report --device=0 --top 1 --full-stacks $FIX/demo.json
expect 2 "report --kind bogus" -- $G report --kind bogus $FIX/demo.json
expect 2 "report --top x" -- $G report --top x $FIX/demo.json
expect 2 "report without file" -- $G report
expect 2 "report missing file" -- $G report "$T/none.json"
lines "$T/err" 1
# With PyTorch's tensors seen, the peak section holds what each site had at
# the tensors' peak (peak.sites_at_bytes), not at the GPU's (peak.bytes):
# its shares are of that, and its title says which peak.
python3 - "$FIX/demo.json" "$T" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); t = sys.argv[2]
d["peak"].update(sites_at="tensors", sites_at_bytes=20971520, sites_at_time_ns=d["peak"]["time_ns"])
json.dump(d, open(f"{t}/tensor-peak.json", "w"))
d["peak"]["sites_at"] = 3
json.dump(d, open(f"{t}/tensor-peak-bad.json", "w"))
PY
expect 0 "report: the peak composition at the tensors' peak" -- $G report "$T/tensor-peak.json"
has "$T/out" "Peak composition (live at the tensors' peak, 20.0 MiB allocated):"
has "$T/out" "    10.0 MiB  50.0%"
has "$T/out" "     4.0 MiB  20.0%"
expect 0 "report: the peak composition at the GPU's peak" -- $G report $FIX/demo.json
has "$T/out" "Peak composition (live at the peak):"
has "$T/out" "    10.0 MiB  66.7%"
expect 2 "report: peak.sites_at not a string" -- $G report "$T/tensor-peak-bad.json"
has "$T/err" '"peak.sites_at" is not a string'
lines "$T/err" 1

echo "== bad input: one line naming the file, exit 2"
# A FIFO no one writes blocked the reader for good (issue 32 item 10); it
# reads as empty now. A pipe with a writer is read as a file is.
mkfifo "$T/fifo.json"
expect 2 "report of a FIFO with no writer, at once" -- timeout 10 $G report "$T/fifo.json"
has "$T/err" "fifo.json"
expect 0 "report of a pipe with a writer" -- sh -c "cat $FIX/demo.json | $G report /dev/stdin"
has "$T/out" "demo.c:31 in train_step"
: >"$T/empty.json"
printf 'not json' >"$T/text.json"
head -c 300 $FIX/demo.json >"$T/trunc.json"
echo '{"version":1}' >"$T/noformat.json"
echo '{"format":"gpuleak-report","version":99}' >"$T/v99.json"
python3 - "$FIX/demo.json" "$T" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); t = sys.argv[2]
def w(name, f):
    x = json.loads(json.dumps(d)); f(x); json.dump(x, open(f"{t}/{name}.json", "w"))
w("negative", lambda x: x["totals"].__setitem__("leaked_bytes", -5))
w("wrongtype", lambda x: x["leaks"][0].__setitem__("bytes", "10"))
w("huge", lambda x: x["leaks"][0].__setitem__("bytes", 1e300))
w("nototals", lambda x: x.pop("totals"))
w("badframe", lambda x: x["leaks"][0]["stack"][0].__setitem__("offset", 12))
PY
for f in empty text trunc noformat v99 negative wrongtype huge nototals badframe; do
    for sub in report check export merge; do
        extra=; [ $sub = export ] && extra="--format folded"
        # shellcheck disable=SC2086
        expect 2 "$sub $f.json" -- $G $sub "$T/$f.json" $extra
        lines "$T/err" 1
        has "$T/err" "gpuleak: $T/$f.json: "
    done
    expect 2 "diff $f.json" -- $G diff $FIX/demo.json "$T/$f.json"
done
has "$T/err" "" # keep set -u quiet
$G report "$T/noformat.json" 2>"$T/err"; has "$T/err" 'not a gpuleak report: "format" is missing'
$G report "$T/v99.json" 2>"$T/err"; has "$T/err" "unsupported report version 99"
$G report "$T/trunc.json" 2>"$T/err"; has "$T/err" "truncated"
$G report "$T/negative.json" 2>"$T/err"; has "$T/err" '"totals.leaked_bytes" is negative'

echo "== check"
expect 1 "check default budget" -- $G check $FIX/demo.json
has "$T/out" "FAIL $FIX/demo.json: --max-leaked 0 B: leak of 10485760 byte(s) in 5 allocation(s) of device memory at tests/demo/demo.c:23 in keep_for_logging"
has "$T/out" "at /src/model.py:17 in forward"
has "$T/out" "libcublas* (default)"
hasnt "$T/out" "leak of 4194304"
expect 0 "check --max-leaked 20MiB" -- $G check $FIX/demo.json --max-leaked 20MiB
has "$T/out" "PASS"
expect 1 "check --no-default-suppressions" -- $G check $FIX/demo.json --max-leaked 13.5MiB --no-default-suppressions
has "$T/out" "leak of 4194304 byte(s) in 1 allocation(s) of device memory at tests/demo/demo.c:63 in main"
printf '# ours\nleak:keep_for_logging\nleak:*model.py\n\nleak:stage_batch*\n' >"$T/supp.txt"
expect 0 "check --suppressions" -- $G check $FIX/demo.json --max-leaked 0 --suppressions "$T/supp.txt"
has "$T/out" "keep_for_logging"
has "$T/out" "10485760 keep_for_logging"
# With no budget, growth is judged at 0 too where the report judged it (a
# Python program's kept tensors are freed by its shutdown, not leaked), and
# left be where it did not.
expect 1 "check's default judges growth" -- $G check $FIX/demo.json --suppressions "$T/supp.txt"
has "$T/out" "FAIL $FIX/demo.json: --max-growth 0 B: growth of 6291456 byte(s) of device memory at tests/demo/demo.c:23 in keep_for_logging"
has "$T/out" "PASS $FIX/demo.json: --max-leaked 0 B"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("growth"); json.dump(d, open(sys.argv[2], "w"))' $FIX/demo.json "$T/nogrowth.json"
expect 0 "check's default leaves growth be where the report has none" -- $G check "$T/nogrowth.json" --suppressions "$T/supp.txt"
hasnt "$T/out" "max-growth"
printf 'leak:ok\nfrob:x\n' >"$T/badsupp.txt"
expect 2 "check bad suppressions" -- $G check $FIX/demo.json --suppressions "$T/badsupp.txt"
has "$T/err" "badsupp.txt:2: unknown suppression type"
expect 2 "check missing suppressions" -- $G check $FIX/demo.json --suppressions "$T/nope.txt"
sed -e 's/"tracking": "on"/"tracking": "off"/' -e 's/"reason": null/"reason": "out of records"/' $FIX/demo.json >"$T/off.json"
expect 0 "check a report whose tracking stopped" -- $G check "$T/off.json" --max-leaked 100MiB
has "$T/out" "tracking stopped early (out of records); the verdict covers only what was recorded before"
expect 0 "check a complete report: no such note" -- $G check $FIX/demo.json --max-leaked 100MiB
hasnt "$T/out" "tracking stopped early"
expect 1 "check --max-peak" -- $G check $FIX/demo.json --max-leaked 1GiB --max-peak 10MiB
has "$T/out" "--max-peak 10.0 MiB: peak GPU memory 15728640 byte(s)"
expect 0 "check --max-peak ok" -- $G check $FIX/demo.json --max-peak 16MiB
expect 1 "check --max-growth" -- $G check $FIX/demo.json --max-growth 1MiB
has "$T/out" "--max-growth 1.0 MiB: growth of 6291456 byte(s)"
expect 0 "check --max-growth ok" -- $G check $FIX/demo.json --max-growth=6MiB
python3 -c "import json,sys; d=json.load(open('$FIX/demo.json')); d.pop('growth'); json.dump(d, open('$T/nogrowth.json','w'))"
expect 2 "check --max-growth without growth data" -- $G check "$T/nogrowth.json" --max-growth 1MiB
# A run too short for the growth rule (status.growth_judged false) has an
# empty growth list that says nothing: the growth budget is skipped on it,
# one SKIP line, never "PASS ... growth 0 B"; a report without the field
# (older) is judged as before.
python3 - "$FIX/demo.json" "$T" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1])); t = sys.argv[2]
d["growth"] = []
d["status"] = {"moment": "exit", "complete": True, "growth_samples": 3, "growth_judged": False}
json.dump(d, open(f"{t}/short.json", "w"))
d["status"]["growth_judged"] = "no"
json.dump(d, open(f"{t}/short-bad.json", "w"))
d["status"]["growth_judged"] = True
json.dump(d, open(f"{t}/judged.json", "w"))
PYEOF
# Not judged is not passed (issue 40): its own exit code, 0 only when allowed.
expect 3 "check --max-growth 0 on a run too short to judge growth" -- $G check "$T/short.json" --max-growth 0
has "$T/out" "SKIP $T/short.json: --max-growth 0 B: growth not judged: the run was too short (3 sample(s) of live memory, too few for the growth rule; docs/growth.md)"
hasnt "$T/out" "PASS"
lines "$T/out" 1
expect 1 "check's default on a run too short to judge growth: the growth SKIP line" -- $G check "$T/short.json"
has "$T/out" "SKIP $T/short.json: --max-growth 0 B: growth not judged"
has "$T/out" "FAIL $T/short.json: --max-leaked 0 B"
expect 0 "check --allow-unjudged: a budget not judged passes" -- $G check "$T/short.json" --max-growth 0 --allow-unjudged
has "$T/out" "SKIP $T/short.json: --max-growth 0 B"
expect 3 "check --junit: growth not judged is a skipped testcase" -- $G check "$T/short.json" --max-growth 0 --max-peak 1GiB --junit "$T/junit-short.xml"
if xmllint --noout "$T/junit-short.xml"; then ok; else bad "junit-short.xml is not well-formed"; fi
has "$T/junit-short.xml" 'tests="2" failures="0" errors="0" skipped="1"'
has "$T/junit-short.xml" '<testcase classname="gpuleak" name="max-growth">'
has "$T/junit-short.xml" '<skipped message="growth not judged: the run was too short (3 sample(s) of live memory'
expect 0 "check --max-growth 0 on a judged run that did not grow" -- $G check "$T/judged.json" --max-growth 0
has "$T/out" "PASS $T/judged.json: --max-growth 0 B: growth 0 B"
expect 0 "report: growth not judged" -- $G report "$T/short.json"
has "$T/out" "  growth:   not judged: the run was too short (3 sample(s) of live memory)"
expect 2 "status.growth_judged not a boolean" -- $G check "$T/short-bad.json"
has "$T/err" '"status.growth_judged" is not a boolean'
lines "$T/err" 1
# Sites that share an origin line are one FAIL line, their bytes summed,
# the largest first.
python3 - "$FIX/demo.json" "$T/oneline.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
line = {"function": "forward", "file": "/src/model.py", "line": 17, "module": None, "python": True}
for leak in d["leaks"]:
    if leak["site"] in (4, 9, 1):
        leak["origin"] = dict(line)
    if leak["site"] == 1:
        leak["device"] = 1  # another kind (pinned host) and device: a line of its own
json.dump(d, open(sys.argv[2], "w"))
PYEOF
expect 1 "check groups sites by origin line" -- $G check "$T/oneline.json" --max-leaked 0 --no-default-suppressions
has "$T/out" "leak of 12582912 byte(s) in 7 allocation(s) of device memory at /src/model.py:17 in forward (2 sites)"
hasnt "$T/out" "leak of 10485760"
has "$T/out" "leak of 1048576 byte(s) in 1 allocation(s) of pinned host memory at /src/model.py:17 in forward"
# PyTorch's allocator default rule hides its segments, never its tensors.
python3 - "$FIX/demo.json" "$T/tensor.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
seg = next(l for l in d["leaks"] if l["site"] == 4)
frame = {"function": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc",
         "file": None, "line": None, "module": "/x/libc10_cuda.so", "offset": "0x10",
         "address": "0x10", "inlined": False}
seg["stack"] = [frame] + seg["stack"]
tensor = dict(seg, site=99, kind="tensor")
d["leaks"] = [seg, tensor]
json.dump(d, open(sys.argv[2], "w"))
PYEOF
expect 1 "check: a tensor is never hidden by the caching allocator's rule" -- $G check "$T/tensor.json" --max-leaked 0
has "$T/out" "of PyTorch tensor memory at"
has "$T/out" "*c10*cuda*CUDACachingAllocator* (default)"
expect 2 "check bad size" -- $G check $FIX/demo.json --max-leaked 12XB
lines "$T/err" 1
expect 0 "check --fail-on-leak (run's spelling) 20M" -- $G check $FIX/demo.json --fail-on-leak 20M
has "$T/out" "PASS $FIX/demo.json: --fail-on-leak 20.0 MiB"
expect 0 "check --max-leaked 20m" -- $G check $FIX/demo.json --max-leaked=20m
expect 2 "check --max-leaked without a value" -- $G check $FIX/demo.json --max-leaked
has "$T/err" "--max-leaked needs a value"
expect 2 "check no file" -- $G check
expect 2 "check unknown option" -- $G check --frob $FIX/demo.json
expect 1 "check --junit" -- $G check $FIX/demo.json $FIX/demo.json --max-peak 1MiB --junit "$T/junit.xml"
if xmllint --noout "$T/junit.xml"; then ok; else bad "junit.xml is not well-formed"; fi
has "$T/junit.xml" '<testsuites name="gpuleak" tests="2" failures="2" errors="0" skipped="0">'
expect 2 "check --junit with a bad file" -- $G check $FIX/demo.json "$T/text.json" --junit "$T/junit2.xml"
if xmllint --noout "$T/junit2.xml"; then ok; else bad "junit2.xml is not well-formed"; fi
has "$T/junit2.xml" "<error"
expect 0 "check --junit pass" -- $G check $FIX/demo.json --max-leaked 1GiB --junit "$T/junit3.xml"
if xmllint --noout "$T/junit3.xml"; then ok; else bad "junit3.xml is not well-formed"; fi

echo "== snapshots, signals and the OOM (status, oom)"
# A snapshot lists what was live while the program ran: the leak budget is
# skipped (one line, not a failure); growth and peak are judged as ever.
expect 3 "check a snapshot: the leaks are not judged" -- $G check $FIX/snapshot.json --max-leaked 0
has "$T/out" "SKIP $FIX/snapshot.json: --max-leaked 0 B: a snapshot taken while the program ran (moment snapshot): live is not leaked; growth and peak are judged"
hasnt "$T/out" "FAIL"
expect 1 "check a snapshot: the peak is judged" -- $G check $FIX/snapshot.json --max-peak 10MiB
has "$T/out" "FAIL $FIX/snapshot.json: --max-peak 10.0 MiB"
expect 1 "check a snapshot beside a complete report" -- $G check $FIX/snapshot.json $FIX/demo.json
has "$T/out" "SKIP $FIX/snapshot.json"
has "$T/out" "FAIL $FIX/demo.json: --max-leaked 0 B"
expect 3 "check a snapshot --junit" -- $G check $FIX/snapshot.json --max-leaked 0 --max-peak 16MiB --junit "$T/junit-snap.xml"
if xmllint --noout "$T/junit-snap.xml"; then ok; else bad "junit-snap.xml is not well-formed"; fi
has "$T/junit-snap.xml" '<testsuites name="gpuleak" tests="2" failures="0" errors="0" skipped="1">'
has "$T/junit-snap.xml" '<testcase classname="gpuleak" name="max-leaked">'
has "$T/junit-snap.xml" '<skipped message="a snapshot taken while the program ran (moment snapshot): live is not leaked; growth and peak are judged"/>'
python3 - "$FIX/demo.json" "$FIX/oom.json" "$T" <<'PY'
import json, sys
d, oom, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
def w(name, status=None, f=None, base=d):
    x = json.loads(json.dumps(base))
    if status is not None:
        x["status"] = status
    if f:
        f(x)
    json.dump(x, open(f"{t}/{name}.json", "w"))
w("request", {"moment": "request"})  # no "complete": the moment says it
w("signal", {"moment": "signal", "complete": True, "signal": 15, "locks_skipped": 2})
w("signal-unnamed", {"moment": "signal", "complete": True, "signal": 40})
w("badcomplete", {"moment": "snapshot", "complete": "no"})
w("badoom", f=lambda x: x["oom"].__setitem__("kind", 7), base=oom)
w("oom-snapshot", {"moment": "snapshot", "complete": False}, base=oom)
PY
expect 3 "check a dump on request (complete derived from the moment)" -- $G check "$T/request.json" --max-leaked 0
has "$T/out" "SKIP $T/request.json: --max-leaked 0 B: a dump on request taken while the program ran (moment request)"
expect 0 "report a dump on request" -- $G report "$T/request.json"
has "$T/out" "  moment:   request (a dump on request), taken while the program ran: what it lists as leaks was live then, not left at exit"
has "$T/out" "17.0 MiB live then"
has "$T/out" "Leaks (live when the report was taken, the program running): 4 site(s)"
# A report a signal wrote as it killed the program is final, but lists
# what was live then (the program's frees never ran): the leak budget is
# skipped as on a snapshot; growth and peak are judged.
# A CI job's timeout (SIGTERM) judged nothing: exit 3, not a green build.
expect 3 "check a signal's report: the leaks are not judged" -- $G check "$T/signal.json" --max-leaked 0
has "$T/out" "SKIP $T/signal.json: --max-leaked 0 B: a report taken when the program was killed by signal 15 (SIGTERM): live is not leaked; growth and peak are judged"
hasnt "$T/out" "FAIL"
expect 1 "check a signal's report: growth and peak are judged" -- $G check "$T/signal.json" --max-leaked 0 --max-peak 10MiB --max-growth 1MiB
has "$T/out" "SKIP $T/signal.json: --max-leaked"
has "$T/out" "FAIL $T/signal.json: --max-peak 10.0 MiB"
has "$T/out" "FAIL $T/signal.json: --max-growth 1.0 MiB"
expect 0 "check a signal's report, unjudged allowed" -- $G check "$T/signal.json" --max-leaked 0 --allow-unjudged
expect 3 "check a signal's report --junit" -- $G check "$T/signal.json" --max-leaked 0 --junit "$T/junit-signal.xml"
has "$T/junit-signal.xml" 'skipped="1"'
has "$T/junit-signal.xml" '<skipped message="a report taken when the program was killed by signal 15 (SIGTERM)'
expect 3 "check a report of an unnamed signal" -- $G check "$T/signal-unnamed.json" --max-leaked 0
has "$T/out" "--max-leaked 0 B: a report taken when the program was killed by signal 40: live is not leaked"
expect 0 "report a signal's report" -- $G report "$T/signal.json"
has "$T/out" "  moment:   signal, written as signal 15 (SIGTERM) ended the program: what it lists as leaks was live then"
has "$T/out" "  locks:    2 lock(s) of the shim skipped"
has "$T/out" "Leaks (live when a signal ended the program)"
expect 0 "report without status.moment: no moment line" -- $G report $FIX/demo.json
hasnt "$T/out" "moment:"
hasnt "$T/out" "locks:"
expect 2 "status.complete not a boolean" -- $G check "$T/badcomplete.json"
has "$T/err" '"status.complete" is not a boolean'
lines "$T/err" 1
# The OOM: shown after the failures; a malformed section is left out, the
# report still read; the origin options judge its sites again too.
expect 0 "report an OOM" -- $G report $FIX/oom.json --top 1
has "$T/out" "Out of memory: 2 failure(s) in all; the first, at 0.00 s:"
has "$T/out" "  2097152 byte(s) of device memory asked on device 0, from tests/integration/prog_growth.c:50 in ask_too_much"
has "$T/out" "       1 device        3.0 MiB 100.0%  tests/integration/prog_growth.c:43 in hold_for_oom"
expect 0 "report an unreadable oom section" -- $G report "$T/badoom.json"
hasnt "$T/out" "Out of memory"
has "$T/out" "Failed allocations: 2 site(s)"
expect 0 "report an OOM, origins judged again" -- $G report $FIX/oom.json --origin-skip 'ask_too_much:hold_for_oom'
has "$T/out" "asked on device 0, from tests/integration/prog_growth.c:89 in main"
has "$T/out" "100.0%  tests/integration/prog_growth.c:88 in main"
# The kept and still-reachable tables are judged again as the leaks are.
python3 - "$FIX/oom.json" "$T/listed.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["kept_by_libraries"], r["reachable_at_exit"], r["leaks"] = r["leaks"], r["leaks"], []
json.dump(r, open(sys.argv[2], "w"))
PY
expect 0 "report kept and reachable, origins judged again" -- $G report "$T/listed.json" --origin-skip hold_for_oom
hasnt "$T/out" "in hold_for_oom"
has "$T/out" "tests/integration/prog_growth.c:88 in main"
expect 3 "check an OOM snapshot" -- $G check "$T/oom-snapshot.json" --max-leaked 0 --max-growth 0
has "$T/out" "SKIP $T/oom-snapshot.json"
has "$T/out" "PASS $T/oom-snapshot.json: --max-growth 0 B: growth 0 B"

echo "== version 2 stack tables"
# The fixture is a version 1 report (stacks inline). Written as version 2
# (each frame once in "frames", each stack once in "stacks"), every view must
# read the same.
python3 - "$FIX/demo.json" "$T" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); t = sys.argv[2]
frames, pyframes, stacks = [], [], {}
def index(table, frame):
    if frame not in table:
        table.append(frame)
    return table.index(frame)
entries = [e for k in ("leaks", "teardown_leaks", "failures", "sites", "growth") for e in d.get(k) or []]
entries += (d.get("peak") or {}).get("sites") or []
for e in entries:
    st = {"stack": [index(frames, f) for f in e.pop("stack", [])],
          "python_stack": [index(pyframes, f) for f in e.pop("python_stack", [])]}
    stacks.setdefault(str(e["site"]), st)
d.update(version=2, frames=frames, python_frames=pyframes, stacks=stacks)
json.dump(d, open(f"{t}/v2.json", "w"))
bad = json.loads(json.dumps(d)); next(iter(bad["stacks"].values()))["stack"] = [len(frames)]
json.dump(bad, open(f"{t}/v2-badindex.json", "w"))
bad = json.loads(json.dumps(d)); bad["stacks"]["x1"] = bad["stacks"].pop(next(iter(bad["stacks"])))
json.dump(bad, open(f"{t}/v2-badkey.json", "w"))
PY
for args in "report" "report --full-stacks" "check --max-leaked 1" "export --format folded" "export --format csv"; do
    # shellcheck disable=SC2086
    $G $args $FIX/demo.json >"$T/v1.out" 2>&1
    # shellcheck disable=SC2086
    $G $args "$T/v2.json" >"$T/v2.out" 2>&1
    sed -i "s|$T/v2.json|$FIX/demo.json|g" "$T/v2.out"
    if cmp -s "$T/v1.out" "$T/v2.out"; then ok; else bad "$args reads version 2 differently:"; diff -u "$T/v1.out" "$T/v2.out" | head -10; fi
done
expect 2 "frame index out of range" -- $G report "$T/v2-badindex.json"
has "$T/err" "names frame"
lines "$T/err" 1
expect 2 "stacks key not a site id" -- $G report "$T/v2-badkey.json"
has "$T/err" "is not keyed by a site id"

echo "== diff"
python3 - "$FIX/demo.json" "$T" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); t = sys.argv[2]
# same stacks, different ids and addresses (another run): must match
for i, s in enumerate(d["leaks"]):
    s["site"] = 100 + i
    for f in s["stack"]: f["address"] = hex(int(f["address"], 16) + 0x1000)
json.dump(d, open(f"{t}/rerun.json", "w"))
d["leaks"][0]["bytes"] += 4096
new = json.loads(json.dumps(d["leaks"][3])); new["stack"][0]["function"] = "new_leak"; new["stack"][0]["offset"] = "0x9999"
d["leaks"].append(new)
json.dump(d, open(f"{t}/worse.json", "w"))
PY
expect 0 "diff same stacks, other ids" -- $G diff $FIX/demo.json "$T/rerun.json"
has "$T/out" "no site appeared or grew"
expect 1 "diff grew and appeared" -- $G diff $FIX/demo.json "$T/worse.json"
has "$T/out" "GREW  +4096 byte(s) (10485760 -> 10489856)"
has "$T/out" "NEW   +1048576 byte(s)"
has "$T/out" "new_leak"
expect 1 "diff --threshold 4KiB (new site still over)" -- $G diff $FIX/demo.json "$T/worse.json" --threshold 4KiB
hasnt "$T/out" "GREW"
expect 0 "diff --threshold 2MiB" -- $G diff $FIX/demo.json "$T/worse.json" --threshold=2MiB
has "$T/out" "no site appeared or grew by more than 2.0 MiB (2 site(s) grew by 1.0 MiB in all, each within it)"
# Issue 40: two sites of 3 and 4 MiB, each under a 5 MiB threshold, are
# 7 MiB together: the threshold holds for the total too.
python3 - "$FIX/demo.json" "$T" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["leaks"][0]["bytes"] += 3 << 20
d["leaks"][1]["bytes"] += 4 << 20
json.dump(d, open(sys.argv[2] + "/two-under.json", "w"))
PY
expect 1 "diff --threshold: the total over it fails" -- $G diff $FIX/demo.json "$T/two-under.json" --threshold 5MiB
has "$T/out" "TOTAL +7340032 byte(s) appeared or grew over 2 site(s), more than the threshold 5.0 MiB, 2 of them (7.0 MiB) each within it"
expect 0 "diff --threshold: the total within it, said" -- $G diff $FIX/demo.json "$T/two-under.json" --threshold 8MiB
has "$T/out" "(2 site(s) grew by 7.0 MiB in all, each within it)"
expect 0 "diff improved" -- $G diff "$T/worse.json" $FIX/demo.json
has "$T/out" "GONE"
# A rebuild after one comment line: every offset and every later line moved
# (fixtures/demo-rebuilt.json is demo.json so edited). Still the same sites.
expect 0 "diff across a rebuild (offsets and lines moved)" -- $G diff $FIX/demo.json $FIX/demo-rebuilt.json
hasnt "$T/out" "NEW"
hasnt "$T/out" "GONE"
has "$T/out" "no site appeared or grew"
expect 0 "diff across a rebuild, the other way" -- $G diff $FIX/demo-rebuilt.json $FIX/demo.json
hasnt "$T/out" "GONE"
# Two sites of one function (calls at lines 23 and 30): after the rebuild
# (24 and 31) each pairs with itself, and a call added between them (27)
# is the new one.
python3 - "$FIX/demo.json" "$FIX/demo-rebuilt.json" "$T" <<'PY'
import json, sys
old, new, t = (json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3])
def twin(d, line, bytes_, site):
    s = json.loads(json.dumps(d["leaks"][0])); s["site"] = site; s["bytes"] = bytes_
    s["stack"][0]["line"] = line; s["stack"][0]["offset"] = hex(0x2000 + line)
    d["leaks"].append(s)
twin(old, 30, 1048576, 500)
json.dump(old, open(f"{t}/two-calls.json", "w"))
twin(new, 31, 1048576, 600)
json.dump(new, open(f"{t}/two-calls-rebuilt.json", "w"))
twin(new, 27, 2097152, 700)
json.dump(new, open(f"{t}/three-calls-rebuilt.json", "w"))
PY
expect 0 "diff: two sites of one function, moved" -- $G diff "$T/two-calls.json" "$T/two-calls-rebuilt.json"
hasnt "$T/out" "NEW"
hasnt "$T/out" "GONE"
expect 1 "diff: a call added between two of one function" -- $G diff "$T/two-calls.json" "$T/three-calls-rebuilt.json"
has "$T/out" "NEW   +2097152 byte(s) (0 -> 2097152) of device memory in 5 allocation(s) at tests/demo/demo.c:27 in keep_for_logging"
lines "$T/out" 3
hasnt "$T/out" "GONE"
expect 2 "diff one file" -- $G diff $FIX/demo.json
expect 2 "diff bad threshold" -- $G diff $FIX/demo.json "$T/worse.json" --threshold lots

echo "== merge"
python3 - "$FIX/demo.json" "$T" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); t = sys.argv[2]
for r in range(3):
    x = json.loads(json.dumps(d)); x["process"]["rank"] = r; x["process"]["pid"] = 1000 + r
    x["totals"]["peak_bytes"] = (r + 1) * 10 * 1048576
    if r == 2: x["leaks"] = x["leaks"][:1]
    json.dump(x, open(f"{t}/rank{r}.json", "w"))
    if r == 1:
        x["growth"] = []; x["status"] = {"growth_samples": 3, "growth_judged": False}
        json.dump(x, open(f"{t}/rank1-short.json", "w"))
PY
expect 0 "merge" -- $G merge "$T/rank2.json" "$T/rank0.json" "$T/rank1.json"
has "$T/out" "imbalance (max/min peak) 3.00x"
has "$T/out" "Leaking lines common to all 3 rank(s):"
has "$T/out" "30.0 MiB in all ranks, device memory at tests/demo/demo.c:23 in keep_for_logging"
hasnt "$T/out" "stage_batch_buffer"
# Three alike ranks: none stands out.
has "$T/out" "none: the ranks' peaks, leaks and growth are alike"
# The common lines, largest first.
expect 0 "merge: common lines largest first" -- $G merge "$T/rank0.json" "$T/rank1.json"
sed -n 's/^ *\([0-9.]*\) MiB in all ranks.*/\1/p' "$T/out" >"$T/common"
lines "$T/common" 4
if sort -rn "$T/common" | cmp -s - "$T/common"; then ok; else bad "merge: common lines not largest first: $(tr '\n' ' ' <"$T/common")"; fi
# A rank too short to judge growth reads "not judged", not "0 B".
expect 0 "merge: growth not judged" -- $G merge "$T/rank0.json" "$T/rank1-short.json"
has "$T/out" " not judged  $T/rank1-short.json"
hasnt "$T/out" " 0 B  $T/rank1-short.json"
# Issue 34: of five ranks, the one that leaks ten times as much is named
# first, with its line; the others are its median.
python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
base = json.load(open(f"{t}/rank0.json"))
for r in range(5):
    x = json.loads(json.dumps(base)); x["process"]["rank"] = r; x["process"]["pid"] = 2000 + r
    if r == 3:
        x["totals"]["leaked_bytes"] *= 10
        for site in x["leaks"]: site["bytes"] *= 10
    json.dump(x, open(f"{t}/job{r}.json", "w"))
PY
expect 0 "merge: the outlier rank" -- $G merge "$T"/job0.json "$T"/job1.json "$T"/job2.json "$T"/job3.json "$T"/job4.json
has "$T/out" "rank 3: leaked 170.0 MiB at tests/demo/demo.c:23 in keep_for_logging; 4 other rank(s) at a median of 17.0 MiB"
lines_before() { sed -n "1,/$2/p" "$1" | wc -l; }
if [ "$(lines_before "$T/out" 'rank 3: leaked')" -lt "$(lines_before "$T/out" ' rank  ')" ]; then ok; else bad "merge: the outlier is not before the rows"; fi
expect 0 "merge --format json" -- $G merge --format json "$T"/job0.json "$T"/job1.json "$T"/job2.json "$T"/job3.json "$T"/job4.json
python3 - "$T/out" <<'PY' && ok || bad "merge --format json: the outlier is not in .outliers"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["reports"] == 5 and len(d["ranks"]) == 5, d
assert [(o["rank"], o["metric"]) for o in d["outliers"]] == [(3, "leaked")], d["outliers"]
assert d["outliers"][0]["line"] == "tests/demo/demo.c:23 in keep_for_logging", d["outliers"][0]
PY
expect 2 "merge nothing" -- $G merge
expect 2 "merge bad file" -- $G merge "$T/rank0.json" "$T/text.json"

echo "== export"
expect 0 "export folded" -- $G export $FIX/demo.json --format folded
has "$T/out" "_start;__libc_start_main;__libc_start_call_main;main;train_step;keep_for_logging 10485760"
has "$T/out" "train (train.py:42);forward (model.py:17);_PyEval_EvalFrameDefault;cudaMalloc 2097152"
lines "$T/out" 4
# Issue 40: an empty export says why, on stderr; still exit 0.
expect 0 "export --what growth of a run too short" -- $G export "$T/short.json" --format folded --what growth
lines "$T/out" 0
has "$T/err" "no sites to export (the run was too short for the growth rule to judge growth)"
expect 0 "export csv (timeline)" -- $G export $FIX/demo.json --format csv -o "$T/t.csv"
has "$T/t.csv" "t_s,bytes,device,pool,vmm,managed,host,array"
python3 -c "import json,sys; d=json.load(open('$FIX/demo.json')); d.pop('timeline'); json.dump(d, open('$T/notl.json','w'))"
expect 0 "export csv (sites)" -- $G export "$T/notl.json" --format=csv
has "$T/out" '4,"device",0,10485760,5,0,10485760,10485760,"keep_for_logging","tests/demo/demo.c",23,"demo",0x1291'
cp "$T/notl.json" "$T/self.json"
expect 2 "export -o onto its own input" -- $G export "$T/self.json" --format csv -o "$T/self.json"
has "$T/err" "is the report itself"
if cmp -s "$T/notl.json" "$T/self.json"; then ok; else bad "export -o overwrote its input"; fi
expect 0 "export chrome-trace" -- $G export $FIX/demo.json --format chrome-trace -o "$T/trace.json"
if python3 -c "
import json,sys; d=json.load(open('$T/trace.json'))
c=[e for e in d['traceEvents'] if e['ph']=='C']
assert len(c) > 10 and all(isinstance(e['ts'], (int,float)) for e in c), 'counters'
assert any(e['ph']=='M' for e in d['traceEvents'])"; then ok; else bad "chrome trace"; fi
expect 0 "export chrome-trace without timeline" -- $G export "$T/notl.json" --format chrome-trace
# The exact peak survives the export: the highest max_bytes of the timeline,
# in the CSV and in the trace, is the report's peak.
if python3 - "$FIX/demo.json" "$T/t.csv" "$T/trace.json" <<'PY'
import csv, json, sys
peak = json.load(open(sys.argv[1]))["totals"]["peak_bytes"]
rows = list(csv.DictReader(open(sys.argv[2])))
assert max(int(r["max_bytes"]) for r in rows) == peak, "csv max_bytes"
assert all(int(r["max_bytes"]) >= int(r["bytes"]) for r in rows)
ev = json.load(open(sys.argv[3]))["traceEvents"]
highs = [e["args"]["max_bytes"] for e in ev if e["ph"] == "C" and "max_bytes" in e["args"]]
assert len(highs) == len(rows) and max(highs) == peak, "trace max_bytes"
kinds = [e["args"] for e in ev if e["name"].startswith("GPU memory by kind")]
assert kinds and all(set(k) == {"device", "host"} for k in kinds), kinds[:1]
assert not any(e["name"].startswith("PyTorch") for e in ev)
PY
then ok; else bad "export: max_bytes or the kinds' tracks"; fi
# With PyTorch's tensors (allocated memory) in the timeline, they are a
# track of their own, never stacked on the driver's kinds (reserved).
python3 - "$FIX/demo.json" "$T/tensors.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["timeline"]["points"]:
    p["kinds"]["tensor"] = p["kinds"]["device"] // 2
json.dump(d, open(sys.argv[2], "w"))
PY
expect 0 "export chrome-trace with tensors" -- $G export "$T/tensors.json" --format chrome-trace -o "$T/trace-t.json"
if python3 - "$T/trace-t.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
t = [e["args"]["tensor"] for e in ev if e["name"].startswith("PyTorch tensors")]
assert len(t) == 11 and max(t) == 14680064 // 2, t
assert all("tensor" not in e["args"] for e in ev if e["name"].startswith("GPU memory by kind"))
PY
then ok; else bad "export: the tensors' track"; fi
expect 0 "export folded --what peak" -- $G export $FIX/demo.json --format folded --what peak
has "$T/out" "main;train_step;keep_for_logging 10485760"
has "$T/out" "main;train_step 4194304"
lines "$T/out" 3
expect 0 "export folded --what growth" -- $G export $FIX/demo.json --format folded --what=growth
has "$T/out" "main;train_step;keep_for_logging 6291456"
lines "$T/out" 1
expect 0 "export folded --what leaked" -- $G export $FIX/demo.json --format folded --what leaked
lines "$T/out" 4
python3 -c "import json; d=json.load(open('$FIX/demo.json')); d.pop('peak'); json.dump(d, open('$T/nopeak.json','w'))"
expect 2 "export --what peak without a peak section" -- $G export "$T/nopeak.json" --format folded --what peak
has "$T/err" '--what peak needs the report'"'"'s "peak" section'
lines "$T/err" 1
expect 2 "export --what with csv" -- $G export $FIX/demo.json --format csv --what peak
expect 2 "export --what bogus" -- $G export $FIX/demo.json --format folded --what lots
expect 2 "export bad format" -- $G export $FIX/demo.json --format svg
expect 2 "export no format" -- $G export $FIX/demo.json
expect 2 "export unwritable" -- $G export $FIX/demo.json --format csv -o /nonexistent/dir/x.csv

echo "== html (headless Chromium)"
if python3 tests/cli/html_test.py "$BUILD"; then ok; else bad "html: see above"; fi

echo "== run (over the fake driver)"
export LD_LIBRARY_PATH="$BUILD/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
(cd "$T" && mkdir -p runs)
expect 23 "run --fail-on-leak -- demo" -- $G run --fail-on-leak -- "$BUILD/demo"
has "$T/err" "--fail-on-leak 0 B: leak of 10485760 byte(s) in 5 allocation(s) of device memory at tests/demo/demo.c:23 in keep_for_logging"
has "$T/err" "SUMMARY: gpuleak:"
expect 0 "run -- demo (no gate)" -- $G run --output="$T/runs/plain-%p.json" -- "$BUILD/demo"
if ls "$T"/runs/plain-*.json >/dev/null 2>&1; then ok; else bad "run --output wrote no report"; fi
expect 0 "run --fail-on-leak=20MiB" -- $G run --quiet --fail-on-leak=20MiB -- "$BUILD/demo"
hasnt "$T/err" "SUMMARY"
expect 23 "run --max-peak=1MiB" -- $G run --quiet --max-peak=1MiB -- "$BUILD/demo"
has "$T/err" "--max-peak 1.0 MiB"
expect 23 "run --fail-on-growth" -- $G run --quiet --fail-on-growth -- "$BUILD/demo"
expect 0 "run --fail-on-growth=8MiB" -- $G run --quiet --fail-on-growth=8MiB -- "$BUILD/demo"
printf 'leak:keep_for_logging\nleak:stage_batch_buffer\n' >"$T/demo.supp"
expect 0 "run --suppressions" -- $G run --quiet --fail-on-leak --suppressions="$T/demo.supp" -- "$BUILD/demo"
printf 'leak:keep_for_logging\n' >"$T/one.supp"
printf 'leak:stage_batch_buffer\n' >"$T/other.supp"
expect 0 "run: every --suppressions file counts" -- $G run --quiet --fail-on-leak --suppressions="$T/one.supp" --suppressions "$T/other.supp" -- "$BUILD/demo"
expect 23 "run: one of two suppressions files" -- $G run --quiet --fail-on-leak --suppressions="$T/one.supp" -- "$BUILD/demo"
expect 2 "run: missing suppressions file, before CMD" -- $G run --fail-on-leak --suppressions="$T/nope.supp" -- sh -c ": >\"$T/ran\""
has "$T/err" "nope.supp"
if [ -e "$T/ran" ]; then bad "run started CMD with a missing suppressions file"; else ok; fi
printf 'bogus:x\n' >"$T/bad.supp"
expect 2 "run: malformed suppressions file, before CMD" -- $G run --suppressions="$T/bad.supp" -- sh -c ": >\"$T/ran\""
has "$T/err" "bad.supp:1"
if [ -e "$T/ran" ]; then bad "run started CMD with a malformed suppressions file"; else ok; fi
expect 23 "run --output pattern, gate" -- $G run --quiet --output="$T/runs/g-%p.json" --fail-on-leak -- "$BUILD/demo"
has "$T/err" "$T/runs/g-"
expect 23 "run gate sees only this run's report" -- $G run --quiet --output="$T/runs/g-%p.json" --fail-on-leak -- "$BUILD/demo"
n=$(grep -c "keep_for_logging" "$T/err"); [ "$n" -eq 1 ] && ok || bad "run judged $n reports, wanted 1"
expect 0 "run --stack-depth=0 --no-python" -- $G run --quiet --stack-depth=0 --no-python --output="$T/runs/d0.json" -- "$BUILD/demo"
if grep -q '"stack":\[\]' "$T/runs/d0.json"; then ok; else bad "--stack-depth=0 not passed"; fi
# A gate that could not judge (a run too short for the growth rule) is
# not a pass (issue 40): exit 24, unless --allow-unjudged.
cat >"$T/one_alloc.c" <<'C'
#include <cuda.h>
int main(void)
{
    CUdevice d;
    CUcontext c;
    CUdeviceptr p;
    if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, 0) || cuCtxSetCurrent(c))
        return 9;
    return cuMemAlloc(&p, 4096) ? 9 : 0;
}
C
if cc -I/usr/local/cuda/include -o "$T/one_alloc" "$T/one_alloc.c" -L"$BUILD/fakecuda" -lcuda; then
    expect 24 "run --fail-on-growth on a run too short to judge it" -- $G run --quiet --fail-on-growth -- "$T/one_alloc"
    has "$T/err" "--fail-on-growth 0 B: growth not judged: the run was too short"
    has "$T/err" "gpuleak run: the report(s) are kept in"  # the SKIP line's path still leads somewhere
    expect 0 "run --fail-on-growth --allow-unjudged" -- $G run --quiet --fail-on-growth --allow-unjudged -- "$T/one_alloc"
    # A report on request keeps its own name; the gate judges the final one.
    cat >"$T/dump_then_exit.c" <<'C'
#include <cuda.h>
#include <signal.h>
#include <time.h>
int main(void)
{
    CUdevice d;
    CUcontext c;
    CUdeviceptr p;
    if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, 0) || cuCtxSetCurrent(c))
        return 9;
    if (cuMemAlloc(&p, 4096))
        return 9;
    raise(SIGUSR2);
    struct timespec wait = { 1, 0 };
    nanosleep(&wait, NULL);
    return cuMemFree(p) ? 9 : 0;
}
C
    if cc -I/usr/local/cuda/include -o "$T/dump_then_exit" "$T/dump_then_exit.c" -L"$BUILD/fakecuda" -lcuda; then
        mkdir -p "$T/dumps"
        expect 0 "run: a report on request beside the final one, the final judged" -- \
            $G run --quiet --output="$T/dumps/d-%p.json" --max-leaked -- "$T/dump_then_exit"
        if [ "$(ls "$T/dumps" | grep -c '^d-[0-9]*\.request-1\.json$')" = 1 ] && [ "$(ls "$T/dumps" | grep -c '^d-[0-9]*\.json$')" = 1 ]; then ok; else bad "run: the report on request and the final one: $(ls "$T/dumps" | tr '\n' ' ')"; fi
    else
        bad "dump_then_exit.c did not build"
    fi
else
    bad "one_alloc.c did not build"
fi
expect 3 "run passes the exit code" -- $G run -- sh -c 'exit 3'
expect 3 "run: CMD's failure wins over a gate" -- $G run --quiet --fail-on-leak -- sh -c "\"$BUILD/demo\"; exit 3"
kept=$(sed -n 's/^gpuleak run: the report(s) are kept in //p' "$T/err")
if [ -n "$kept" ] && ls "$kept"/gpuleak-*.json >/dev/null 2>&1; then ok; rm -rf "$kept"; else bad "run: reports of a failed gate not kept when CMD failed too"; fi
# 128+N alone reads as an exit code CMD chose: one line says a signal
# ended it, and only then.
expect 137 "run: death by signal" -- $G run -- sh -c 'kill -9 $$'
has "$T/err" "gpuleak: sh killed by signal 9 (SIGKILL)"
lines "$T/err" 1
expect 143 "run: death by SIGTERM, gated" -- $G run --quiet --fail-on-leak -- sh -c "\"$BUILD/demo\"; kill -TERM \$\$"
has "$T/err" "gpuleak: sh killed by signal 15 (SIGTERM)"
expect 168 "run: death by a signal without a name" -- $G run -- sh -c 'kill -40 $$'
has "$T/err" "gpuleak: sh killed by signal 40"
hasnt "$T/err" "signal 40 ("
expect 3 "run: an exit code is not a signal" -- $G run -- sh -c 'exit 3'
hasnt "$T/err" "killed by signal"
expect 127 "run: not found" -- $G run -- /nonexistent/cmd
expect 126 "run: not executable" -- $G run -- "$FIX/demo.json"
expect 125 "run: gate but no report" -- $G run --fail-on-leak -- true
expect 2 "run: no command" -- $G run --quiet
expect 2 "run: bad size" -- $G run --fail-on-leak=lots -- true
lines "$T/err" 1
# A gate's value may follow as the next word when it begins with a digit
# (before, "--fail-on-leak 20MiB" ran "20MiB", exit 127).
expect 0 "run --fail-on-leak 20MiB -- demo" -- $G run --quiet --fail-on-leak 20MiB -- "$BUILD/demo"
expect 0 "run --max-leaked 20M -- demo" -- $G run --quiet --max-leaked 20M -- "$BUILD/demo"
expect 23 "run --max-leaked -- demo" -- $G run --quiet --max-leaked -- "$BUILD/demo"
has "$T/err" "--max-leaked 0 B: leak of 10485760 byte(s)"
expect 23 "run --max-leaked then CMD, no --" -- $G run --quiet --max-leaked "$BUILD/demo"
expect 0 "run --max-growth 8MiB" -- $G run --quiet --max-growth 8MiB -- "$BUILD/demo"
expect 23 "run --max-peak 1M" -- $G run --quiet --max-peak 1M -- "$BUILD/demo"
expect 2 "run: a gate's next word that begins with a digit must be a size" -- $G run --max-leaked 20XB -- sh -c ": >\"$T/ran\""
has "$T/err" 'bad size "20XB"'
lines "$T/err" 1
if [ -e "$T/ran" ]; then bad "run started CMD with a bad gate"; else ok; fi
expect 2 "run: bad stack depth" -- $G run --stack-depth=999 -- true
expect 2 "run: unknown option" -- $G run --frob -- true
expect 2 "run: --output takes no \"--\" for its value" -- $G run --output -- true
has "$T/err" "--output needs a value"
expect 2 "run: --output in a missing directory, before CMD" -- $G run --output="$T/none/r-%p.json" --fail-on-leak -- sh -c ": >\"$T/ran\""
has "$T/err" "cannot write in $T/none"
if [ -e "$T/ran" ]; then bad "run started CMD with an unusable --output directory"; else ok; fi
# A directory is not a report's name: said before CMD runs (the shim wrote
# to $TMPDIR, saying "outdir exists and is not a gpuleak report").
mkdir -p "$T/outdir"
for out in "$T/outdir" "$T/outdir/" "$T/newdir/"; do
    expect 2 "run --output $out, a directory" -- $G run --output "$out" -- sh -c ": >\"$T/ran\""
    has "$T/err" "names a directory; name the report in it, as $T/"
    lines "$T/err" 1
    if [ -e "$T/ran" ]; then bad "run started CMD with --output a directory"; rm -f "$T/ran"; else ok; fi
done
expect 0 "run --output in a directory" -- $G run --quiet --output "$T/outdir/r-%p.json" -- true
LD_PRELOAD=/nonexistent-preload.so expect 0 "run keeps LD_PRELOAD" -- $G run -- sh -c 'case "$LD_PRELOAD" in *libgpuleak.so:/nonexistent-preload.so) exit 0;; *) exit 9;; esac'
expect 0 "run: variables" -- $G run --quiet --no-python --stack-depth=5 --output=x -- sh -c '[ "$GPULEAK_SUMMARY" = 0 ] && [ "$GPULEAK_PYTHON" = 0 ] && [ "$GPULEAK_STACK_DEPTH" = 5 ] && [ "$GPULEAK_OUTPUT" = x ]'
# The dump signal (SIGUSR2) sent to gpuleak's pid, the one a person sees,
# reaches CMD: before, it killed gpuleak (exit 140) and left CMD running.
# CMD here says when its trap is set, and gives up by itself after 5 s.
for sig in USR2 USR1; do
    rm -f "$T/ready" "$T/got"
    $G run -- sh -c "trap 'echo $sig >\"$T/got\"; exit 0' $sig; : >\"$T/ready\"; i=0; while [ \$i -lt 100 ]; do sleep 0.05; i=\$((i+1)); done; exit 5" >"$T/out" 2>"$T/err" &
    gpid=$!
    i=0; while [ ! -e "$T/ready" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
    kill -$sig $gpid
    wait $gpid
    got=$?
    if [ "$got" -eq 0 ] && grep -qx "$sig" "$T/got" 2>/dev/null; then ok; else bad "run: SIG$sig not passed to CMD (exit $got)"; fi
done

echo "== install layout (../lib/libgpuleak.so)"
make --no-print-directory -s install PREFIX="$T/prefix" BUILD="$BUILD" >/dev/null
expect 23 "installed run" -- "$T/prefix/bin/gpuleak" run --quiet --fail-on-leak -- "$BUILD/demo"

echo "== misc"
# A C++ name the shim left mangled (the program had no C++ runtime: nvcc's
# host code without libstdc++) reads demangled in every view.
python3 - "$FIX/demo.json" "$T/mangled.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["leaks"][0]["stack"][0]["function"] = "_ZL16leak_from_staticm.constprop.0"
json.dump(d, open(sys.argv[2], "w"))
PYEOF
expect 0 "report of a mangled name" -- $G report "$T/mangled.json"
has "$T/out" "leak_from_static(unsigned long) [clone .constprop.0]"
hasnt "$T/out" "_ZL16leak_from_static"
expect 1 "check names it demangled too" -- $G check "$T/mangled.json"
has "$T/out" "leak_from_static(unsigned long) [clone .constprop.0]"
expect 2 "no command" -- $G
expect 2 "unknown command" -- $G frob
expect 0 "version" -- $G version
expect 0 "help" -- $G --help
has "$T/out" "usage: gpuleak COMMAND"
for c in run report check diff merge export help version; do
    has "$T/out" "  $c "
done
# Each command's help is its own: usage, every option, exit codes; the
# same from "gpuleak help CMD".
for c in run report check diff merge export help version; do
    expect 0 "$c --help" -- $G $c --help
    has "$T/out" "usage: gpuleak $c"
    has "$T/out" "Exit codes:"
    cp "$T/out" "$T/help-$c.txt"
    expect 0 "help $c" -- $G help $c
    if cmp -s "$T/out" "$T/help-$c.txt"; then ok; else bad "gpuleak help $c differs from $c --help"; fi
done
has "$T/help-run.txt" "--max-leaked[=SIZE]"
has "$T/help-run.txt" "--fail-on-leak[=SIZE]     Another spelling of --max-leaked."
has "$T/help-check.txt" "--max-leaked SIZE"
has "$T/help-export.txt" "-o, --output FILE"
expect 2 "help for an unknown command" -- $G help frob
lines "$T/err" 1
expect 0 "run: --help before CMD is run's" -- $G run --help -- true
has "$T/out" "usage: gpuleak run"
expect 0 "run: --help after CMD is CMD's" -- $G run -- sh -c 'exit 0' --help
hasnt "$T/out" "usage: gpuleak run"

echo "== options: one parser, one line per refusal"
for c in run report check diff merge export help version; do
    expect 2 "$c --frob" -- $G $c --frob "$FIX/demo.json"
    lines "$T/err" 1
    has "$T/err" "gpuleak $c: unknown option --frob"
done
expect 2 "report --top=-1" -- $G report --top=-1 $FIX/demo.json
lines "$T/err" 1
expect 2 "report --top without a value" -- $G report $FIX/demo.json --top
has "$T/err" "--top needs a value"
expect 2 "report --full-stacks=1" -- $G report --full-stacks=1 $FIX/demo.json
has "$T/err" "--full-stacks takes no value"
expect 2 "report --kind bogus" -- $G report --kind=bogus $FIX/demo.json
has "$T/err" "--kind takes device, pool, vmm, managed, host, array or tensor, not \"bogus\""
expect 2 "diff: a third operand" -- $G diff $FIX/demo.json $FIX/demo.json $FIX/demo.json
lines "$T/err" 1
expect 2 "export without --format" -- $G export $FIX/demo.json
has "$T/err" "--format is needed"
expect 0 "-- ends the options" -- $G report --top 1 -- $FIX/demo.json
# run takes a gate alone (0); check needs its size: a report given where the
# size goes is named as such (it read 'bad size "FILE"').
expect 2 "check --fail-on-leak FILE" -- $G check --fail-on-leak $FIX/demo.json
has "$T/err" "gpuleak check: --fail-on-leak needs a SIZE before the files: \"$FIX/demo.json\" is a file (--fail-on-leak 0 allows none)"
lines "$T/err" 1
expect 2 "check --max-leaked 20XB FILE" -- $G check --max-leaked 20XB $FIX/demo.json
has "$T/err" 'bad size "20XB"'
if [ -w /dev/full ]; then
    for c in "report $FIX/demo.json" "check $FIX/demo.json" "diff $FIX/demo.json $FIX/demo.json" \
             "merge $FIX/demo.json $FIX/demo.json" "export --format csv $FIX/demo.json" "version"; do
        # shellcheck disable=SC2086
        $G $c >/dev/full 2>"$T/err"
        rc=$?
        if [ $rc -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "writing stdout failed" "$T/err"; then ok
        else bad "$c to a full disk: exit $rc, $(cat "$T/err")"; fi
    done
fi

echo "== manual page"
expect 0 "help --man" -- $G help --man
cp "$T/out" "$T/gpuleak.1"
has "$T/gpuleak.1" ".TH GPULEAK 1"
# Issue 40: examples, and every variable the shim reads, from its own rows.
has "$T/gpuleak.1" ".SH EXAMPLES"
for v in $(sed -n 's/.*"\(GPULEAK_[A-Z_]*\)".*/\1/p' common/shim_options.h); do
    has "$T/gpuleak.1" "$(printf '%s' "$v" | sed 's/-/\\-/g')"
done
# Every option of every command, its aliases too, as --help lists them,
# is in the page (roff spells '-' as '\-').
nopts=0
for c in $($G --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p'); do
    has "$T/gpuleak.1" ".SS \"gpuleak $c\""
    for o in $($G $c --help | sed -n 's/^  \(-[a-z], \)\{0,1\}\(--[a-z-]*\).*/\1\2/p' | tr -d ',' ); do
        has "$T/gpuleak.1" "$(printf '%s' "$o" | sed 's/-/\\-/g')"
        nopts=$((nopts + 1))
    done
done
# A floor, so that a help the sed above cannot read fails here.
if [ "$nopts" -ge 30 ]; then ok; else bad "found only $nopts options in the commands' help"; fi
if command -v groff >/dev/null 2>&1; then
    groff -man -ww -z "$T/gpuleak.1" 2>"$T/groff.err"
    if [ ! -s "$T/groff.err" ]; then ok; else bad "groff warns about the manual page:"; head -5 "$T/groff.err"; fi
fi
make --no-print-directory -s BUILD="$BUILD" "$BUILD/gpuleak.1" >/dev/null
if cmp -s "$BUILD/gpuleak.1" "$T/gpuleak.1"; then ok; else bad "make's $BUILD/gpuleak.1 is not gpuleak help --man"; fi

echo "== fuzz crashes replayed"
for f in tests/cli/crashes/* tests/cli/corpus/*; do
    [ -f "$f" ] || continue
    $G report "$f" >/dev/null 2>"$T/err"
    rc=$?
    if [ $rc -eq 0 ] || { [ $rc -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ]; }; then ok; else bad "$f: exit $rc"; fi
done

echo "cli-test: $pass passed, $fails failed"
[ "$fails" -eq 0 ]
