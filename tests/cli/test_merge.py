"""`gpuleak merge`: one answer for the ranks of a job: the lines common
to all, the rank that stands out with its line, growth not judged said
as such."""
import json
import re

import pytest

from conftest import DEMO, ROOT, gpuleak


@pytest.fixture(scope="module")
def ranks(t):
    """Three ranks of demo.json, peaks 10, 20 and 30 MiB, rank 2 with one
    leak; and rank 1 again, too short to judge growth."""
    demo = json.loads((ROOT / DEMO).read_text())
    paths = []
    for rank in range(3):
        x = json.loads(json.dumps(demo))
        x["process"]["rank"], x["process"]["pid"] = rank, 1000 + rank
        x["totals"]["peak_bytes"] = (rank + 1) * 10 * 1048576
        if rank == 2:
            x["leaks"] = x["leaks"][:1]
        paths.append(t / f"rank{rank}.json")
        paths[-1].write_text(json.dumps(x))
        if rank == 1:
            x["growth"] = []
            x["status"] = {"growth_samples": 3, "growth_judged": False}
            (t / "rank1-short.json").write_text(json.dumps(x))
    return [str(p) for p in paths]


def test_common_lines(ranks):
    r = gpuleak("merge", ranks[2], ranks[0], ranks[1], code=0)
    assert "imbalance (max/min peak) 3.00x" in r.out
    assert "Leaking lines common to all 3 rank(s):" in r.out
    assert "30.0 MiB in all ranks, device memory at tests/demo/demo.c:23 in keep_for_logging" in r.out
    assert "stage_batch_buffer" not in r.out
    # Three alike ranks: none stands out.
    assert "none: the ranks' peaks, leaks and growth are alike" in r.out


def test_common_lines_largest_first(ranks):
    r = gpuleak("merge", ranks[0], ranks[1], code=0)
    sizes = [float(m.group(1)) for m in re.finditer(r"^ *([0-9.]+) MiB in all ranks", r.out, re.M)]
    assert len(sizes) == 4
    assert sizes == sorted(sizes, reverse=True)


def test_growth_not_judged(t, ranks):
    """A rank too short to judge growth reads "not judged", not "0 B"."""
    short = t / "rank1-short.json"
    r = gpuleak("merge", ranks[0], short, code=0)
    assert f" not judged  {short}" in r.out
    assert f" 0 B  {short}" not in r.out


@pytest.fixture(scope="module")
def job(t, ranks):
    """Issue 34: five ranks, of which rank 3 leaks ten times as much."""
    base = json.loads(open(ranks[0]).read())
    paths = []
    for rank in range(5):
        x = json.loads(json.dumps(base))
        x["process"]["rank"], x["process"]["pid"] = rank, 2000 + rank
        if rank == 3:
            x["totals"]["leaked_bytes"] *= 10
            for site in x["leaks"]:
                site["bytes"] *= 10
        paths.append(t / f"job{rank}.json")
        paths[-1].write_text(json.dumps(x))
    return [str(p) for p in paths]


def test_the_outlier_rank_named_first(job):
    """The rank that leaks ten times as much is named first, with its
    line; the others are its median."""
    r = gpuleak("merge", *job, code=0)
    said = ("rank 3: leaked 170.0 MiB at tests/demo/demo.c:23 in keep_for_logging; "
            "4 other rank(s) at a median of 17.0 MiB")
    assert said in r.out
    assert r.out.index(said) < r.out.index(" rank  ")
    d = json.loads(gpuleak("merge", "--format", "json", *job, code=0).out)
    assert d["reports"] == 5 and len(d["ranks"]) == 5
    assert [(o["rank"], o["metric"]) for o in d["outliers"]] == [(3, "leaked")]
    assert d["outliers"][0]["line"] == "tests/demo/demo.c:23 in keep_for_logging"


def test_bad_operands(ranks, text_file):
    gpuleak("merge", code=2)
    gpuleak("merge", ranks[0], text_file, code=2)
