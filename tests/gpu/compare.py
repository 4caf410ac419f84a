#!/usr/bin/env python3
"""compare.py: checks a gpuleak report against independent counts (stdlib only).

Used by scripts/gpu-check.sh on the GPU machine. Subcommands:

  counts REPORT CUPTI      per kind, gpuleak's allocations / frees / failed /
                           leaked against the CUPTI counter's
                           (tests/gpu/cupti_count.c); totals.maps / unmaps too.
  expect REPORT EXPECT     per kind, gpuleak's numbers against what
                           tests/gpu/leak.cu says it did ($LEAK_EXPECT_OUT).
  stack REPORT --function NAME
                           a leak site's native stack names NAME.
  pyframes REPORT --file BASENAME --line N
                           a leak or site has a python_stack frame in a file
                           named BASENAME at line N.
  kindpos REPORT KIND      gpuleak saw at least one KIND allocation.
  same REPORT_A REPORT_B   two gpuleak reports of the same program agree
                           (per kind allocations / frees / failed / leaked).
  pick DIR PREFIX [--pid N]
                           prints the path of DIR/PREFIX*.json to use: the
                           one whose pid is N, else the one with the most
                           allocations (a child process may write its own).
  summary REPORT           prints the report's totals and kinds.

Exit status: 0 agree, 1 disagree, 2 an input is missing or unreadable,
3 the CUPTI counter did not run (subscription failed).
Report format: docs/report-format.md.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import reports  # noqa: E402

KINDS = ["device", "pool", "vmm", "managed", "host", "array"]
# What must agree exactly, per kind. Bytes are shown; for arrays gpuleak
# estimates the size from the descriptor, so they are never compared.
STRICT = ["allocations", "frees", "failed_allocations", "leaked_allocations"]
SHOWN_BYTES = ["bytes_allocated", "leaked_bytes"]


class InputError(Exception):
    pass


def load(path, what):
    if not path or not os.path.exists(path):
        raise InputError(f"{what} file missing: {path}")
    try:
        with open(path) as f:
            return reports.inline_stacks(json.load(f))
    except (OSError, ValueError) as e:
        raise InputError(f"{what} file unreadable: {path}: {e}")


def load_report(path, allow_cupti=False):
    r = load(path, "report")
    if allow_cupti and r.get("format") == "cupti-count":
        return r
    if r.get("format") != "gpuleak-report":
        raise InputError(f"{path}: not a gpuleak report (format={r.get('format')!r})")
    return r


def num(d, *keys):
    """d[k1][k2]..., 0 when any level is missing or null."""
    for k in keys:
        if not isinstance(d, dict):
            return 0
        d = d.get(k)
    return d if isinstance(d, (int, float)) else 0


def tracking_note(report):
    st = report.get("status") or {}
    if st.get("tracking") not in (None, "on"):
        return f"gpuleak tracking was {st.get('tracking')!r}: {st.get('reason')!r}"
    return None


def table(rows, header, left=2):
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    fmt = "  ".join("{:<%d}" % w if i < left or i == len(widths) - 1 else "{:>%d}" % w
                    for i, w in enumerate(widths))
    out = [fmt.format(*header), fmt.format(*["-" * w for w in widths])]
    out += [fmt.format(*[str(c) for c in r]) for r in rows]
    return "\n".join(out)


def cmd_counts(a):
    report = load_report(a.report)
    cupti = load(a.cupti, "CUPTI count")
    label = a.label or os.path.basename(a.report)
    if not cupti.get("subscribed"):
        print(f"[{label}] CUPTI counter did not subscribe: {cupti.get('error')}")
        return 3
    rows, bad, warn = [], [], []
    cols = STRICT + SHOWN_BYTES
    for kind in KINDS:
        row, marks = [kind], []
        for field in cols:
            s = num(report, "kinds", kind, field)
            c = num(cupti, "kinds", kind, field)
            if field in SHOWN_BYTES and kind == "array":
                row.append(f"{s} / (est)")
                continue
            row.append(f"{s} / {c}" if s != c else f"{s}")
            if s != c:
                msg = f"{kind}.{field}: gpuleak {s} cupti {c} (diff {s - c:+d})"
                if field in STRICT:
                    bad.append(msg)
                    marks.append("MISMATCH")
                else:
                    warn.append(msg)
                    marks.append("bytes differ")
        row.append(", ".join(sorted(set(marks))) or "ok")
        rows.append(row)
    trow, tmarks = ["totals"], []
    for field in cols:
        # The driver's totals: the kinds CUPTI sees, summed. The report's
        # own leaked totals are its leaks section's, where PyTorch's cache
        # is not a leak and its tensors are (no driver call shows them).
        s = sum(num(report, "kinds", kind, field) for kind in KINDS)
        c = num(cupti, "totals", field)
        trow.append(f"{s} / {c}" if s != c else f"{s}")
        if s != c and field in STRICT:
            bad.append(f"totals.{field}: gpuleak {s} cupti {c} (diff {s - c:+d})")
            tmarks.append("MISMATCH")
    trow.append(", ".join(sorted(set(tmarks))) or "ok")
    rows.append(trow)
    maprow = []
    for field in ("maps", "unmaps"):
        s = num(report, "totals", field)
        c = num(cupti, "totals", field)
        maprow.append(f"{field} {s}" + (f" / cupti {c}" if s != c else ""))
        if s != c:
            bad.append(f"totals.{field}: gpuleak {s} cupti {c} (diff {s - c:+d})")
    # Not compared strictly: what each side counts as a free of an unknown
    # pointer (a NULL free is not a free for CUPTI's counter; gpuleak may or
    # may not count it).
    s_unk = num(report, "totals", "unknown_frees")
    c_unk = num(cupti, "totals", "unknown_frees")
    c_null = num(cupti, "totals", "null_frees")
    print(f"[{label}] gpuleak report vs CUPTI driver-API callbacks (successful calls); "
          "a cell is 'gpuleak / cupti' where they differ")
    print(table(rows, ["kind"] + cols + [""], left=1))
    print(f"[{label}] VMM {', '.join(maprow)}; unknown frees: gpuleak {s_unk}, "
          f"cupti {c_unk} (+{c_null} NULL frees, not compared)")
    note = tracking_note(report)
    if note:
        bad.append(note)
    if cupti.get("legacy_calls"):
        used = [n for n, f in (cupti.get("functions") or {}).items()
                if f.get("legacy") and f.get("calls")]
        warn.append(f"old-ABI entry points were called ({', '.join(used)}): "
                    "gpuleak's kinds may not name them")
    if cupti.get("late_events"):
        print(f"[{label}] note: {cupti['late_events']} CUPTI events came after the counter's "
              "first write at exit (frees from other exit handlers); the CUPTI file includes them")
    if num(report, "totals", "teardown_leaked_allocations"):
        print(f"[{label}] note: gpuleak moved {num(report, 'totals', 'teardown_leaked_allocations')} "
              "allocations to teardown_leaks (their context was destroyed or reset)")
    for w in warn:
        print(f"[{label}] warning: {w}")
    for b in bad:
        print(f"[{label}] disagreement: {b}")
    fns = cupti.get("functions") or {}
    called = {n: f for n, f in fns.items() if f.get("calls")}
    if called:
        print(f"[{label}] CUPTI by function: " + ", ".join(
            f"{n}={f['success']}" + (f"(+{f['failed']} failed)" if f.get("failed") else "")
            for n, f in sorted(called.items())))
    return 1 if bad else 0


def cmd_expect(a):
    # The CUPTI counter's file has the same kinds/totals fields, so the
    # referee itself can be checked against the program.
    report = load_report(a.report, allow_cupti=True)
    exp = load(a.expect, "expectation")
    label = a.label or os.path.basename(a.report)
    rows, bad = [], []
    fields = STRICT + ["leaked_bytes"]
    for kind in KINDS:
        for field in fields:
            e = num(exp, "kinds", kind, field)
            s = num(report, "kinds", kind, field)
            if field == "leaked_bytes" and kind == "array":
                rows.append([kind, field, s, "-", "(est)"])
                continue
            s_show = s
            mark = "ok" if s == e else "MISMATCH"
            if s != e:
                bad.append(f"{kind}.{field}: gpuleak {s_show} expected {e}")
            if s or e or field in ("allocations", "frees"):
                rows.append([kind, field, s_show, e, mark])
    s_la = num(report, "totals", "leaked_allocations") + num(report, "totals", "teardown_leaked_allocations")
    e_la = num(exp, "totals", "leaked_allocations")
    rows.append(["totals", "leaked_allocations(+teardown)", s_la, e_la, "ok" if s_la == e_la else "MISMATCH"])
    if s_la != e_la:
        bad.append(f"totals.leaked_allocations(+teardown): gpuleak {s_la} expected {e_la}")
    s_lb = sum(num(report, "kinds", k, "leaked_bytes") for k in KINDS if k != "array")
    e_lb = num(exp, "totals", "leaked_bytes_without_arrays")
    rows.append(["totals", "leaked_bytes(no arrays)", s_lb, e_lb, "ok" if s_lb == e_lb else "MISMATCH"])
    if s_lb != e_lb:
        bad.append(f"leaked bytes without arrays: gpuleak {s_lb} expected {e_lb}")
    for field in ("maps", "unmaps"):
        s, e = num(report, "totals", field), num(exp, "totals", field)
        rows.append(["totals", field, s, e, "ok" if s == e else "MISMATCH"])
        if s != e:
            bad.append(f"totals.{field}: gpuleak {s} expected {e}")
    print(f"[{label}] gpuleak report vs what leak.cu did")
    print(table(rows, ["kind", "field", "gpuleak", "expected", ""]))
    td = num(report, "totals", "teardown_leaked_allocations")
    if td:
        print(f"[{label}] note: {td} allocations are in teardown_leaks (context destroyed or reset "
              "before exit); per-kind leaked counts leave them out, the totals line counts them")
    note = tracking_note(report)
    if note:
        bad.append(note)
    for b in bad:
        print(f"[{label}] disagreement: {b}")
    return 1 if bad else 0


def frame_text(fr):
    fn = fr.get("function") or "?"
    where = fr.get("file")
    if where:
        where = f"{where}:{fr.get('line')}"
    else:
        where = f"{os.path.basename(fr.get('module') or '?')}+{fr.get('offset')}"
    return f"{fn} ({where})"


def cmd_stack(a):
    report = load_report(a.report)
    label = a.label or os.path.basename(a.report)
    sites = (report.get("leaks") or []) + (report.get("teardown_leaks") or [])
    found = []
    for site in sites:
        for i, fr in enumerate(site.get("stack") or []):
            if a.function in (fr.get("function") or ""):
                found.append((site, i))
                break
    if not found:
        print(f"[{label}] no leak site's stack names {a.function!r} "
              f"({len(sites)} leak sites; first stacks below)")
        for site in sites[:3]:
            print(f"  site {site.get('site')} {site.get('kind')} {site.get('bytes')} B: " +
                  " <- ".join(frame_text(f) for f in (site.get("stack") or [])[:8]))
        return 1
    kinds = sorted({s.get("kind") for s, _ in found})
    print(f"[{label}] {len(found)} leak site(s) name {a.function!r} (kinds: {', '.join(map(str, kinds))})")
    for site, i in found[:6]:
        st = site.get("stack") or []
        print(f"  site {site.get('site')} {site.get('kind')} {site.get('bytes')} B x{site.get('allocations')}: "
              f"frame {i}: " + " <- ".join(frame_text(f) for f in st[:i + 2]))
    want = set(a.kinds.split(",")) if a.kinds else set()
    if a.kinds_from:
        exp = load(a.kinds_from, "expectation")
        want |= {k for k in KINDS if num(exp, "kinds", k, "leaked_allocations") > 0}
    if want:
        missing = want - set(kinds)
        if missing:
            print(f"[{label}] no {a.function!r} leak site for kinds: {', '.join(sorted(missing))}")
            return 1
    return 0


def cmd_pyframes(a):
    report = load_report(a.report)
    label = a.label or os.path.basename(a.report)
    if not report.get("process", {}).get("python"):
        print(f"[{label}] note: report's process.python is {report.get('process', {}).get('python')!r}")
    hits, with_py = [], 0
    for section in ("leaks", "teardown_leaks", "sites"):
        for site in report.get(section) or []:
            ps = site.get("python_stack") or []
            if ps:
                with_py += 1
            for fr in ps:
                if os.path.basename(fr.get("file") or "") == a.file and fr.get("line") == a.line:
                    hits.append((section, site))
                    break
    if not hits:
        print(f"[{label}] no python_stack frame at {a.file}:{a.line} "
              f"({with_py} site entries have a python_stack)")
        for section in ("leaks", "sites"):
            for site in (report.get(section) or [])[:2]:
                ps = site.get("python_stack") or []
                print(f"  {section} site {site.get('site')}: " + (" <- ".join(
                    f"{f.get('function')} ({os.path.basename(f.get('file') or '?')}:{f.get('line')})"
                    for f in ps[:6]) or "(no python_stack)"))
        return 1
    secs = sorted({s for s, _ in hits})
    nbytes = sum(num(s, "peak_live_bytes") for sec, s in hits if sec == "sites")
    print(f"[{label}] {len(hits)} entries in {', '.join(secs)} have a frame at {a.file}:{a.line}"
          f" (sites' peak live bytes together: {nbytes})")
    sec, site = hits[0]
    print(f"  {sec} site {site.get('site')}: " + " <- ".join(
        f"{f.get('function')} ({os.path.basename(f.get('file') or '?')}:{f.get('line')})"
        for f in (site.get("python_stack") or [])[:8]))
    return 0


def cmd_kindpos(a):
    report = load_report(a.report)
    label = a.label or os.path.basename(a.report)
    n = num(report, "kinds", a.kind, "allocations")
    print(f"[{label}] gpuleak saw {n} {a.kind} allocations")
    return 0 if n > 0 else 1


def cmd_same(a):
    ra, rb = load_report(a.report_a), load_report(a.report_b)
    label = a.label or "same"
    bad = []
    for kind in KINDS:
        for field in STRICT:
            x, y = num(ra, "kinds", kind, field), num(rb, "kinds", kind, field)
            if x != y:
                bad.append(f"{kind}.{field}: {x} vs {y}")
    for field in ("maps", "unmaps", "unknown_frees"):
        x, y = num(ra, "totals", field), num(rb, "totals", field)
        if x != y:
            bad.append(f"totals.{field}: {x} vs {y}")
    print(f"[{label}] {os.path.basename(a.report_a)} vs {os.path.basename(a.report_b)}: "
          + ("agree" if not bad else "; ".join(bad)))
    return 1 if bad else 0


def pid_of(d):
    if d.get("format") == "cupti-count":
        return d.get("pid")
    return (d.get("process") or {}).get("pid")


def cmd_pick(a):
    cands = []
    for name in sorted(os.listdir(a.dir)) if os.path.isdir(a.dir) else []:
        if name.startswith(a.prefix) and name.endswith(".json"):
            path = os.path.join(a.dir, name)
            try:
                with open(path) as f:
                    d = json.load(f)
            except (OSError, ValueError):
                print(f"pick: skipping unreadable {path}", file=sys.stderr)
                continue
            cands.append((path, d))
    if not cands:
        print(f"pick: no {a.prefix}*.json in {a.dir}", file=sys.stderr)
        return 2
    chosen = None
    if a.pid is not None:
        chosen = next((p for p, d in cands if pid_of(d) == a.pid), None)
    if chosen is None:
        chosen = max(cands, key=lambda c: (num(c[1], "totals", "allocations"),
                                           os.path.getmtime(c[0])))[0]
    if len(cands) > 1:
        print(f"pick: {len(cands)} files for {a.prefix}: " + ", ".join(
            f"{os.path.basename(p)} (pid {pid_of(d)}, {num(d, 'totals', 'allocations')} allocations)"
            for p, d in cands) + f"; using {os.path.basename(chosen)}", file=sys.stderr)
    print(chosen)
    return 0


def cmd_summary(a):
    report = load_report(a.report)
    label = a.label or os.path.basename(a.report)
    t = report.get("totals") or {}
    print(f"[{label}] totals: " + ", ".join(f"{k}={v}" for k, v in t.items()))
    for k in KINDS:
        d = (report.get("kinds") or {}).get(k) or {}
        if any(d.values()):
            print(f"[{label}]   {k}: " + ", ".join(f"{f}={v}" for f, v in d.items()))
    print(f"[{label}] status={report.get('status')} python={report.get('process', {}).get('python')} "
          f"leak sites={len(report.get('leaks') or [])} sites={len(report.get('sites') or [])}")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--label", default=None, help="prefix for output lines")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("counts"); s.add_argument("report"); s.add_argument("cupti")
    s = sub.add_parser("expect"); s.add_argument("report"); s.add_argument("expect")
    s = sub.add_parser("stack"); s.add_argument("report"); s.add_argument("--function", required=True)
    s.add_argument("--kinds", default=None, help="comma list: each kind needs such a site")
    s.add_argument("--kinds-from", default=None,
                   help="leak.cu's expectation file: each kind it leaked needs such a site")
    s = sub.add_parser("pyframes"); s.add_argument("report")
    s.add_argument("--file", required=True); s.add_argument("--line", type=int, required=True)
    s = sub.add_parser("kindpos"); s.add_argument("report"); s.add_argument("kind", choices=KINDS)
    s = sub.add_parser("summary"); s.add_argument("report")
    s = sub.add_parser("same"); s.add_argument("report_a"); s.add_argument("report_b")
    s = sub.add_parser("pick"); s.add_argument("dir"); s.add_argument("prefix")
    s.add_argument("--pid", type=int, default=None)
    a = p.parse_args(argv)
    try:
        return {"counts": cmd_counts, "expect": cmd_expect, "stack": cmd_stack,
                "pyframes": cmd_pyframes, "kindpos": cmd_kindpos, "summary": cmd_summary,
                "same": cmd_same, "pick": cmd_pick}[a.cmd](a)
    except InputError as e:
        print(f"[{a.label or a.cmd}] input error: {e}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
