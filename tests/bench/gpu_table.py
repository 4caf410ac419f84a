"""gpu_table.py: turns scripts/gpu-bench.sh's results into markdown.

    python3 gpu_table.py RESULTS.tsv HEADER.txt > gpu-bench.md

RESULTS.tsv has one line per run: group, config, repetition, value (ms per
iteration or ns per pair; empty when the run failed), wall seconds of the
whole process, status (ok, timeout, exit N, no value), and (when the
program printed its last line's time) the ms from that line to its exit. HEADER.txt is copied
to the top (machine, versions). Medians with min-max; each ratio is to the
baseline named in the tables below, median over median, and "paired" is the
median [min-max] of the ratios within each repetition (a run over its
baseline's run of the same repetition, which the host's drift between
repetitions does not move).
"""
import statistics
import sys

TRAIN = [
    # config, label, baseline config: the baseline is the program as its
    # user runs it (no gpuleak, allocator unchanged)
    ("plain-caching", "plain, as the user runs it (no gpuleak, allocator unchanged)", "plain-caching"),
    ("plain-async", "plain, backend:cudaMallocAsync (no gpuleak)", "plain-caching"),
    ("shim-default", "gpuleak, defaults (64 native frames + Python; allocator unchanged, tensors from its events)", "plain-caching"),
    ("shim-async", "gpuleak, GPULEAK_TORCH_ALLOCATOR=async (switches the allocator)", "plain-caching"),
    ("shim-depth64", "gpuleak, GPULEAK_STACK_DEPTH=64", "plain-caching"),
    ("shim-off", "gpuleak, stacks off (DEPTH=0, PYTHON=0)", "plain-caching"),
    ("shim-python", "gpuleak, Python frames only (DEPTH=0)", "plain-caching"),
    ("shim-native", "gpuleak, native frames only (PYTHON=0)", "plain-caching"),
    ("shim-selftime", "gpuleak, defaults with GPULEAK_SELF_TIME=1 (its own time timed)", "plain-caching"),
    ("shim-libunwind", "gpuleak, defaults but GPULEAK_FAST_UNWIND=0 (libunwind only)", "plain-caching"),
    ("shim-selftime-libunwind", "gpuleak, GPULEAK_FAST_UNWIND=0 and GPULEAK_SELF_TIME=1", "plain-caching"),
    ("history", "_record_memory_history(stacks=\"all\") (no gpuleak)", "plain-caching"),
    ("sanitizer", "compute-sanitizer --leak-check full", "plain-caching"),
]
MICRO = [
    ("async-plain", "cudaMallocAsync+cudaFreeAsync, no shim", "async-plain"),
    ("async-shim", "cudaMallocAsync+cudaFreeAsync, shim defaults", "async-plain"),
    ("async-off", "cudaMallocAsync+cudaFreeAsync, shim stacks off", "async-plain"),
    ("sync-plain", "cudaMalloc+cudaFree, no shim", "sync-plain"),
    ("sync-shim", "cudaMalloc+cudaFree, shim defaults", "sync-plain"),
    ("sync-off", "cudaMalloc+cudaFree, shim stacks off", "sync-plain"),
]


def load(path):
    rows = {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 6:
                continue
            group, config, rep, value, wall, status = parts[:6]
            r = rows.setdefault((group, config), {"values": [], "walls": [], "bad": [], "by_rep": {},
                                                  "exits": []})
            if status == "ok" and value:
                r["values"].append(float(value))
                r["by_rep"][rep] = float(value)
                r["walls"].append(float(wall))
                if len(parts) > 6 and parts[6]:
                    r["exits"].append(float(parts[6]))
            else:
                r["bad"].append(status)
    return rows


def med(v):
    return statistics.median(v) if v else None


def cell(v, fmt):
    if not v:
        return "-"
    return (fmt + " [" + fmt + "-" + fmt + "]") % (med(v), min(v), max(v))


def table(rows, group, spec, unit, fmt, title, added_unit=None):
    out = ["### " + title, ""]
    head = "| run | runs ok | %s median [min-max] | ratio to baseline | paired ratio |" % unit
    sep = "| --- | --- | --- | --- | --- |"
    if added_unit:
        head += " added %s |" % added_unit
        sep += " --- |"
    head += " process wall s |"
    sep += " --- |"
    exits = any(rows.get((group, c), {}).get("exits") for c, _, _ in spec)
    if exits:
        head += " exit ms (last line to wait) |"
        sep += " --- |"
    head += " notes |"
    sep += " --- |"
    out += [head, sep]
    for config, label, base in spec:
        r = rows.get((group, config))
        if r is None:
            continue
        b = rows.get((group, base), {"values": [], "by_rep": {}})
        m, bm = med(r["values"]), med(b["values"])
        ratio = "%.2fx (vs %s)" % (m / bm, base) if m and bm else "-"
        pairs = [v / b["by_rep"][rep] for rep, v in r["by_rep"].items() if b["by_rep"].get(rep)]
        paired = cell(pairs, "%.3f") if pairs and config != base else "-"
        line = "| %s | %d/%d | %s | %s | %s |" % (label, len(r["values"]), len(r["values"]) + len(r["bad"]),
                                               cell(r["values"], fmt), ratio, paired)
        if added_unit:
            line += " %s |" % (("%+.0f" % (m - bm)) if m and bm else "-")
        notes = ", ".join(sorted(set(r["bad"])))
        line += " %s |" % cell(r["walls"], "%.1f")
        if exits:
            line += " %s |" % cell(r["exits"], "%.0f")
        line += " %s |" % notes
        out.append(line)
    return out + [""]


def main():
    rows = load(sys.argv[1])
    with open(sys.argv[2]) as f:
        out = [f.read().rstrip(), ""]
    out += table(rows, "train", TRAIN, "ms/iter", "%.3f",
                 "PyTorch training loop (tests/bench/gpu_train.py, the model of the settings line; "
                 "median ms/iter after 20 warm-up iterations, medians over interleaved runs)")
    for fw, title in (("jax", "JAX training step (jit, value_and_grad, 1024x1024; JAX's pool)"),
                      ("cupy", "CuPy filter loop (2^20 floats, convolve; CuPy's pool)")):
        spec = [("plain", "plain, as the user runs it (no gpuleak)", "plain"),
                ("shim", "gpuleak, defaults (the framework's records read)", "plain")]
        out += table(rows, fw, spec, "ms/iter", "%.3f",
                     title + ", tests/bench/gpu_frameworks.py, median ms/iter, interleaved runs")
    out += table(rows, "micro", MICRO, "ns/pair", "%.0f",
                 "Allocation pairs, 1 MiB, one stream (tests/bench/gpu_pairs.cu, nvcc, static cudart)",
                 added_unit="ns")
    print("\n".join(out))


if __name__ == "__main__":
    main()
