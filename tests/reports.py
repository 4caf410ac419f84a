"""Reads gpuleak reports for the tests and scripts, as one shape whatever
the version: a version 2 report writes each stack once ("stacks", keyed by
site) and each frame once ("frames", "python_frames"); load() puts the
frames back into every site entry ("stack", "python_stack"), as version 1
wrote them, so assertions read a site's frames where they always were."""
import json


def inline_stacks(report):
    """Gives every site entry of report its "stack" and "python_stack"
    (lists of frame dicts) from the tables; returns report."""
    if report.get("version", 1) < 2:
        return report
    frames = report.get("frames", [])
    pyframes = report.get("python_frames", [])
    stacks = report.get("stacks", {})

    def fill(entry):
        st = stacks.get(str(entry.get("site")), {})
        entry["stack"] = [frames[i] for i in st.get("stack", [])]
        entry["python_stack"] = [pyframes[i] for i in st.get("python_stack", [])]

    lists = [report.get(k) or [] for k in ("leaks", "teardown_leaks", "failures", "sites", "growth")]
    lists.append((report.get("peak") or {}).get("sites") or [])
    oom = report.get("oom")
    if oom:
        fill(oom)
        lists.append(oom.get("sites") or [])
    for entries in lists:
        for entry in entries:
            fill(entry)
    return report


def load(path):
    with open(path) as f:
        return inline_stacks(json.load(f))
