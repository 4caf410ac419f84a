"""The command's words: help for each command (the same from `gpuleak
help CMD`), one parser that refuses in one line, the manual page that
holds every option and every variable, a full disk said as such."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import BUILD, DEMO, ROOT, gpuleak, one_line

COMMANDS = ["run", "report", "check", "diff", "merge", "export", "help", "version"]


def test_no_command_and_an_unknown_one():
    gpuleak(code=2)
    gpuleak("frob", code=2)
    gpuleak("version", code=0)
    r = gpuleak("--help", code=0)
    assert "usage: gpuleak COMMAND" in r.out
    for command in COMMANDS:
        assert f"  {command} " in r.out


@pytest.mark.parametrize("command", COMMANDS)
def test_each_commands_help(command):
    r = gpuleak(command, "--help", code=0)
    assert f"usage: gpuleak {command}" in r.out
    assert "Exit codes:" in r.out
    assert gpuleak("help", command, code=0).out == r.out


def test_what_the_help_lists():
    assert "--max-leaked[=SIZE]" in gpuleak("run", "--help", code=0).out
    assert ("--fail-on-leak[=SIZE]     Another spelling of --max-leaked."
            in gpuleak("run", "--help", code=0).out)
    assert "--max-leaked SIZE" in gpuleak("check", "--help", code=0).out
    assert "-o, --output FILE" in gpuleak("export", "--help", code=0).out
    assert one_line(gpuleak("help", "frob", code=2).err)


def test_run_help_before_and_after_cmd():
    assert "usage: gpuleak run" in gpuleak("run", "--help", "--", "true", code=0).out
    r = gpuleak("run", "--", "sh", "-c", "exit 0", "--help", code=0)
    assert "usage: gpuleak run" not in r.out


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_option_in_one_line(command):
    r = gpuleak(command, "--frob", DEMO, code=2)
    assert one_line(r.err)
    assert f"gpuleak {command}: unknown option --frob" in r.err


def test_the_parsers_refusals():
    assert one_line(gpuleak("report", "--top=-1", DEMO, code=2).err)
    assert "--top needs a value" in gpuleak("report", DEMO, "--top", code=2).err
    assert "--full-stacks takes no value" in gpuleak("report", "--full-stacks=1", DEMO, code=2).err
    r = gpuleak("report", "--kind=bogus", DEMO, code=2)
    assert ('--kind takes device, pool, vmm, managed, host, array or tensor, not "bogus"'
            in r.err)
    gpuleak("report", "--top", "1", "--", DEMO, code=0)


@pytest.mark.skipif(not os.access("/dev/full", os.W_OK), reason="no /dev/full")
@pytest.mark.parametrize("args", [["report", DEMO], ["check", DEMO], ["diff", DEMO, DEMO],
                                  ["merge", DEMO, DEMO], ["export", "--format", "csv", DEMO],
                                  ["html", "-o", "-", DEMO], ["version"]], ids=lambda a: a[0])
def test_a_full_disk(args):
    with open("/dev/full", "w") as full:
        proc = subprocess.run([str(BUILD / "gpuleak"), *args], cwd=ROOT, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == 2 and one_line(proc.stderr), proc.stderr
    assert "writing stdout failed" in proc.stderr


def roff(text):
    """roff spells '-' as '\\-'."""
    return text.replace("-", "\\-")


@pytest.fixture(scope="module")
def page():
    return gpuleak("help", "--man", code=0).out


def test_the_manual_page(page):
    assert ".TH GPULEAK 1" in page
    # Issue 40: examples, and every variable the shim reads, from its own rows.
    assert ".SH EXAMPLES" in page
    variables = re.findall(r'"(GPULEAK_[A-Z_]*)"', (ROOT / "common" / "shim_options.h").read_text())
    assert len(variables) > 10
    for variable in variables:
        assert roff(variable) in page


def test_every_option_is_in_the_page(page):
    """Every option of every command, its aliases too, as --help lists
    them, is in the page."""
    commands = re.findall(r"^  ([a-z]+)  ", gpuleak("--help", code=0).out, re.M)
    assert set(commands) >= set(COMMANDS)
    options = 0
    for command in commands:
        assert f'.SS "gpuleak {command}"' in page
        listed = gpuleak(command, "--help", code=0).out
        for short, long in re.findall(r"^  (?:(-[a-z]), )?(--[a-z-]*)", listed, re.M):
            for spelling in filter(None, (short, long)):
                assert roff(spelling) in page, (command, spelling)
            options += 1
    # A floor, so that a help the pattern above cannot read fails here.
    assert options >= 30


@pytest.mark.skipif(shutil.which("groff") is None, reason="no groff")
def test_groff_reads_the_page_without_a_warning(t, page):
    path = t / "gpuleak.1"
    path.write_text(page)
    proc = subprocess.run(["groff", "-man", "-ww", "-z", str(path)], capture_output=True, text=True)
    assert proc.stderr == ""


def test_make_writes_the_same_page(page):
    subprocess.run(["make", "--no-print-directory", "-s", f"BUILD={BUILD}", f"{BUILD}/gpuleak.1"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    assert (BUILD / "gpuleak.1").read_text() == page
