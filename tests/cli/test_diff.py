"""`gpuleak diff`: sites matched across runs and rebuilds, what appeared
or grew, and the threshold, which holds for each site and for the total."""
import json

from conftest import DEMO, FIX, derive, gpuleak, one_line

REBUILT = f"{FIX}/demo-rebuilt.json"


def another_run(d):
    """Same stacks, other ids and addresses: must match."""
    for i, site in enumerate(d["leaks"]):
        site["site"] = 100 + i
        for frame in site["stack"]:
            frame["address"] = hex(int(frame["address"], 16) + 0x1000)


def worse(d):
    """Another run in which one site grew by 4 KiB and a new one appeared."""
    another_run(d)
    d["leaks"][0]["bytes"] += 4096
    new = json.loads(json.dumps(d["leaks"][3]))
    new["stack"][0]["function"] = "new_leak"
    new["stack"][0]["offset"] = "0x9999"
    d["leaks"].append(new)


def test_grew_and_appeared(t):
    r = gpuleak("diff", DEMO, derive(DEMO, t / "rerun.json", another_run), code=0)
    assert "no site appeared or grew" in r.out
    worse_json = derive(DEMO, t / "worse.json", worse)
    r = gpuleak("diff", DEMO, worse_json, code=1)
    assert "GREW  +4096 byte(s) (10485760 -> 10489856)" in r.out
    assert "NEW   +1048576 byte(s)" in r.out
    assert "new_leak" in r.out
    r = gpuleak("diff", DEMO, worse_json, "--threshold", "4KiB", code=1)
    assert "GREW" not in r.out
    r = gpuleak("diff", DEMO, worse_json, "--threshold=2MiB", code=0)
    assert ("no site appeared or grew by more than 2.0 MiB (2 site(s) grew by 1.0 MiB in all, "
            "each within it)") in r.out
    assert "GONE" in gpuleak("diff", worse_json, DEMO, code=0).out
    gpuleak("diff", DEMO, worse_json, "--threshold", "lots", code=2)


def test_the_threshold_holds_for_the_total(t):
    """Issue 40: two sites of 3 and 4 MiB, each under a 5 MiB threshold,
    are 7 MiB together: the threshold holds for the total too."""
    def two_under(d):
        d["leaks"][0]["bytes"] += 3 << 20
        d["leaks"][1]["bytes"] += 4 << 20
    path = derive(DEMO, t / "two-under.json", two_under)
    r = gpuleak("diff", DEMO, path, "--threshold", "5MiB", code=1)
    assert ("TOTAL +7340032 byte(s) appeared or grew over 2 site(s), more than the threshold "
            "5.0 MiB, 2 of them (7.0 MiB) each within it") in r.out
    r = gpuleak("diff", DEMO, path, "--threshold", "8MiB", code=0)
    assert "(2 site(s) grew by 7.0 MiB in all, each within it)" in r.out


def test_across_a_rebuild():
    """A rebuild after one comment line: every offset and every later line
    moved (demo-rebuilt.json is demo.json so edited). Still the same sites."""
    r = gpuleak("diff", DEMO, REBUILT, code=0)
    assert "NEW" not in r.out
    assert "GONE" not in r.out
    assert "no site appeared or grew" in r.out
    assert "GONE" not in gpuleak("diff", REBUILT, DEMO, code=0).out


def twin(line, size, site):
    """Another site of keep_for_logging, called at line."""
    def add(d):
        s = json.loads(json.dumps(d["leaks"][0]))
        s["site"], s["bytes"] = site, size
        s["stack"][0]["line"] = line
        s["stack"][0]["offset"] = hex(0x2000 + line)
        d["leaks"].append(s)
    return add


def test_two_sites_of_one_function(t):
    """Two sites of one function (calls at lines 23 and 30): after the
    rebuild (24 and 31) each pairs with itself, and a call added between
    them (27) is the new one."""
    old = derive(DEMO, t / "two-calls.json", twin(30, 1048576, 500))
    new = derive(REBUILT, t / "two-calls-rebuilt.json", twin(31, 1048576, 600))
    r = gpuleak("diff", old, new, code=0)
    assert "NEW" not in r.out
    assert "GONE" not in r.out

    def three(d):
        twin(31, 1048576, 600)(d)
        twin(27, 2097152, 700)(d)
    r = gpuleak("diff", old, derive(REBUILT, t / "three-calls-rebuilt.json", three), code=1)
    assert ("NEW   +2097152 byte(s) (0 -> 2097152) of device memory in 5 allocation(s) at "
            "tests/demo/demo.c:27 in keep_for_logging") in r.out
    assert len(r.out.splitlines()) == 3
    assert "GONE" not in r.out


def test_operands():
    gpuleak("diff", DEMO, code=2)
    assert one_line(gpuleak("diff", DEMO, DEMO, DEMO, code=2).err)
