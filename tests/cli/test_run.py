"""`gpuleak run`: the demo over the fake driver, gated and not; what it
passes through unchanged (exit codes, signals, LD_PRELOAD); what it
refuses before CMD runs; the installed layout."""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import BUILD, FIX, ROOT, gpuleak, one_line

DEMO_BIN = str(BUILD / "demo")
FAKE = {"LD_LIBRARY_PATH": ":".join(filter(None, [str(BUILD / "fakecuda"),
                                                   os.environ.get("LD_LIBRARY_PATH")]))}


def run(*args, code, env=None, exe=None):
    """gpuleak run ARGS over the fake driver."""
    full = dict(FAKE, **(env or {}))
    return gpuleak("run", *args, code=code, env=full, **({"exe": exe} if exe else {}))


def touches(t):
    """A CMD that leaves a file when it runs, and that file."""
    return ["sh", "-c", f': >"{t}/ran"'], t / "ran"


def test_gates_on_the_demo(t):
    r = run("--fail-on-leak", "--", DEMO_BIN, code=23)
    assert ("--fail-on-leak 0 B: leak of 10485760 byte(s) in 5 allocation(s) of device memory "
            "at tests/demo/demo.c:23 in keep_for_logging") in r.err
    assert "SUMMARY: gpuleak:" in r.err
    (t / "runs").mkdir()
    run(f"--output={t}/runs/plain-%p.json", "--", DEMO_BIN, code=0)
    assert list((t / "runs").glob("plain-*.json"))
    assert "SUMMARY" not in run("--quiet", "--fail-on-leak=20MiB", "--", DEMO_BIN, code=0).err
    assert "--max-peak 1.0 MiB" in run("--quiet", "--max-peak=1MiB", "--", DEMO_BIN, code=23).err
    run("--quiet", "--fail-on-growth", "--", DEMO_BIN, code=23)
    run("--quiet", "--fail-on-growth=8MiB", "--", DEMO_BIN, code=0)


def test_gate_values_as_the_next_word():
    """A gate's value may follow as the next word when it begins with a
    digit (before, "--fail-on-leak 20MiB" ran "20MiB", exit 127)."""
    run("--quiet", "--fail-on-leak", "20MiB", "--", DEMO_BIN, code=0)
    run("--quiet", "--max-leaked", "20M", "--", DEMO_BIN, code=0)
    r = run("--quiet", "--max-leaked", "--", DEMO_BIN, code=23)
    assert "--max-leaked 0 B: leak of 10485760 byte(s)" in r.err
    run("--quiet", "--max-leaked", DEMO_BIN, code=23)
    run("--quiet", "--max-growth", "8MiB", "--", DEMO_BIN, code=0)
    run("--quiet", "--max-peak", "1M", "--", DEMO_BIN, code=23)


def test_suppressions(t):
    both, one, other = t / "demo.supp", t / "one.supp", t / "other.supp"
    both.write_text("leak:keep_for_logging\nleak:stage_batch_buffer\n")
    one.write_text("leak:keep_for_logging\n")
    other.write_text("leak:stage_batch_buffer\n")
    run("--quiet", "--fail-on-leak", f"--suppressions={both}", "--", DEMO_BIN, code=0)
    # Every --suppressions file counts.
    run("--quiet", "--fail-on-leak", f"--suppressions={one}", "--suppressions", other, "--",
        DEMO_BIN, code=0)
    run("--quiet", "--fail-on-leak", f"--suppressions={one}", "--", DEMO_BIN, code=23)


def test_bad_suppressions_refused_before_cmd(t):
    cmd, ran = touches(t)
    r = run("--fail-on-leak", f"--suppressions={t}/nope.supp", "--", *cmd, code=2)
    assert "nope.supp" in r.err
    assert not ran.exists()
    bad = t / "bad.supp"
    bad.write_text("bogus:x\n")
    r = run(f"--suppressions={bad}", "--", *cmd, code=2)
    assert "bad.supp:1" in r.err
    assert not ran.exists()


def test_output_and_the_reports_judged(t):
    runs = t / "gated"
    runs.mkdir()
    r = run("--quiet", f"--output={runs}/g-%p.json", "--fail-on-leak", "--", DEMO_BIN, code=23)
    assert f"{runs}/g-" in r.err
    # The gate sees only this run's report.
    r = run("--quiet", f"--output={runs}/g-%p.json", "--fail-on-leak", "--", DEMO_BIN, code=23)
    assert r.err.count("keep_for_logging") == 1
    run("--quiet", "--stack-depth=0", "--no-python", f"--output={runs}/d0.json", "--", DEMO_BIN,
        code=0)
    assert '"stack":[]' in (runs / "d0.json").read_text()


def build(t, name, body):
    """A C program over the fake driver, built in t."""
    src = t / f"{name}.c"
    src.write_text("#include <cuda.h>\n#include <signal.h>\n#include <time.h>\n"
                   "int main(void)\n{\n    CUdevice d;\n    CUcontext c;\n    CUdeviceptr p;\n"
                   "    if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, 0)"
                   " || cuCtxSetCurrent(c))\n        return 9;\n" + body + "}\n")
    subprocess.run(["cc", "-I/usr/local/cuda/include", "-o", str(t / name), str(src),
                    f"-L{BUILD}/fakecuda", "-lcuda"], check=True)
    return str(t / name)


def test_a_gate_that_could_not_judge(t):
    """A run too short for the growth rule is not a pass (issue 40): exit
    24, unless --allow-unjudged."""
    one_alloc = build(t, "one_alloc", "    return cuMemAlloc(&p, 4096) ? 9 : 0;\n")
    r = run("--quiet", "--fail-on-growth", "--", one_alloc, code=24)
    assert "--fail-on-growth 0 B: growth not judged: the run was too short" in r.err
    # The SKIP line's path still leads somewhere.
    assert "gpuleak run: the report(s) are kept in" in r.err
    run("--quiet", "--fail-on-growth", "--allow-unjudged", "--", one_alloc, code=0)


def test_a_report_on_request_beside_the_final_one(t):
    """A report on request keeps its own name; the gate judges the final one."""
    prog = build(t, "dump_then_exit", "    if (cuMemAlloc(&p, 4096))\n        return 9;\n"
                 "    raise(SIGUSR2);\n    struct timespec wait = { 1, 0 };\n"
                 "    nanosleep(&wait, NULL);\n    return cuMemFree(p) ? 9 : 0;\n")
    dumps = t / "dumps"
    dumps.mkdir()
    run("--quiet", f"--output={dumps}/d-%p.json", "--max-leaked", "--", prog, code=0)
    names = os.listdir(dumps)
    assert len([n for n in names if re.fullmatch(r"d-[0-9]+\.request-1\.json", n)]) == 1, names
    assert len([n for n in names if re.fullmatch(r"d-[0-9]+\.json", n)]) == 1, names


def test_exit_codes_pass_through(t):
    run("--", "sh", "-c", "exit 3", code=3)
    # CMD's failure wins over a gate, and the reports are kept.
    r = run("--quiet", "--fail-on-leak", "--", "sh", "-c", f'"{DEMO_BIN}"; exit 3', code=3)
    kept = re.search(r"^gpuleak run: the report\(s\) are kept in (.*)$", r.err, re.M)
    assert kept and list(os.scandir(kept.group(1))), r.err
    for entry in os.scandir(kept.group(1)):
        os.unlink(entry.path)
    os.rmdir(kept.group(1))
    r = run("--", "sh", "-c", "exit 3", code=3)
    assert "killed by signal" not in r.err
    run("--", "/nonexistent/cmd", code=127)
    run("--", f"{FIX}/demo.json", code=126)
    run("--fail-on-leak", "--", "true", code=125)


def test_death_by_signal():
    """128+N alone reads as an exit code CMD chose: one line says a signal
    ended it, and only then."""
    r = run("--", "sh", "-c", "kill -9 $$", code=137)
    assert "gpuleak: sh killed by signal 9 (SIGKILL)" in r.err
    assert one_line(r.err)
    r = run("--quiet", "--fail-on-leak", "--", "sh", "-c", f'"{DEMO_BIN}"; kill -TERM $$', code=143)
    assert "gpuleak: sh killed by signal 15 (SIGTERM)" in r.err
    r = run("--", "sh", "-c", "kill -40 $$", code=168)
    assert "gpuleak: sh killed by signal 40" in r.err
    assert "signal 40 (" not in r.err


def test_refusals(t):
    run("--quiet", code=2)
    assert one_line(run("--fail-on-leak=lots", "--", "true", code=2).err)
    cmd, ran = touches(t)
    r = run("--max-leaked", "20XB", "--", *cmd, code=2)
    assert 'bad size "20XB"' in r.err
    assert one_line(r.err)
    assert not ran.exists()
    run("--stack-depth=999", "--", "true", code=2)
    run("--frob", "--", "true", code=2)
    # --output takes no "--" for its value.
    assert "--output needs a value" in run("--output", "--", "true", code=2).err
    r = run(f"--output={t}/none/r-%p.json", "--fail-on-leak", "--", *cmd, code=2)
    assert f"cannot write in {t}/none" in r.err
    assert not ran.exists()


@pytest.mark.parametrize("out", ["outdir", "outdir/", "newdir/"])
def test_output_a_directory(t, out):
    """A directory is not a report's name: said before CMD runs (the shim
    wrote to $TMPDIR, saying "outdir exists and is not a gpuleak report")."""
    (t / "outdir").mkdir(exist_ok=True)
    cmd, ran = touches(t)
    r = run("--output", f"{t}/{out}", "--", *cmd, code=2)
    assert f"names a directory; name the report in it, as {t}/" in r.err
    assert one_line(r.err)
    assert not ran.exists()
    run("--quiet", "--output", f"{t}/outdir/r-%p.json", "--", "true", code=0)


def test_the_environment_it_sets():
    """CMD exits 7 when it finds what it should (its code passed through)."""
    run("--", "sh", "-c", 'case "$LD_PRELOAD" in *libgpuleak.so:/nonexistent-preload.so) exit 7;; '
        '*) exit 9;; esac', code=7, env={"LD_PRELOAD": "/nonexistent-preload.so"})
    run("--quiet", "--no-python", "--stack-depth=5", "--output=x", "--", "sh", "-c",
        '[ "$GPULEAK_SUMMARY" = 0 ] && [ "$GPULEAK_PYTHON" = 0 ] && [ "$GPULEAK_STACK_DEPTH" = 5 ]'
        ' && [ "$GPULEAK_OUTPUT" = x ] && exit 7', code=7)


@pytest.mark.parametrize("sig", ["USR2", "USR1"])
def test_signals_reach_cmd(t, sig):
    """The dump signal (SIGUSR2) sent to gpuleak's pid, the one a person
    sees, reaches CMD: before, it killed gpuleak (exit 140) and left CMD
    running. CMD says when its trap is set, and gives up after 5 s."""
    ready, got = t / f"ready-{sig}", t / f"got-{sig}"
    script = (f"trap 'echo {sig} >\"{got}\"; exit 0' {sig}; : >\"{ready}\"; i=0; "
              "while [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; exit 5")
    proc = subprocess.Popen([str(BUILD / "gpuleak"), "run", "--", "sh", "-c", script], cwd=ROOT,
                            env=dict(os.environ, **FAKE), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    for _ in range(100):
        if ready.exists():
            break
        time.sleep(0.05)
    proc.send_signal(getattr(signal, "SIG" + sig))
    assert proc.wait(timeout=30) == 0
    assert got.read_text().strip() == sig


def test_installed_layout(t):
    """An installed gpuleak finds ../lib/libgpuleak.so."""
    subprocess.run(["make", "--no-print-directory", "-s", "install", f"PREFIX={t}/prefix",
                    f"BUILD={BUILD}"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    run("--quiet", "--fail-on-leak", "--", DEMO_BIN, code=23, exe=f"{t}/prefix/bin/gpuleak")


def test_the_gate_gives_the_total():
    """run's gate words a breach as check does: the total first."""
    r = run("--quiet", "--max-leaked=10MiB", "--", DEMO_BIN, code=23)
    assert "--max-leaked 10.0 MiB: 11.0 MiB leaked in all (11534336 byte(s)), at 2 site(s)" in r.err
