"""check_assert.py REPORT: the leak in assert_leak.cu's report is named by
its functions (main, leak_from_static) without libdw or -g, and its origin
is one of them."""
import json
import sys


def main():
    report = json.load(open(sys.argv[1]))
    frames = report.get("frames") or []
    names = set()
    for leak in report.get("leaks") or []:
        for i in ((report.get("stacks") or {}).get(str(leak["site"])) or {}).get("stack") or []:
            names.add(frames[i].get("function"))
        for f in leak.get("stack") or []:
            names.add(f.get("function"))
    # nvcc compiles host code as C++: a static function's symbol demangles
    # with its parameters, "leak_from_static(unsigned long)", or stays
    # mangled, "_ZL16leak_from_staticm.constprop.0", in a process with no
    # C++ runtime to demangle it (the shim loads none: shim/names/symbolize.c).
    def plain(name):
        name = name.split("(")[0]
        return "leak_from_static" if name.startswith("_ZL16leak_from_static") else name
    names = {plain(n) for n in names if n}
    origins = [plain((l.get("origin") or {}).get("function") or "") for l in report.get("leaks") or []]
    print("status:", report.get("status"))
    print("functions in the leaks' stacks:", sorted(n for n in names if n)[:20])
    print("origins:", origins)
    ok = "main" in names and "leak_from_static" in names and \
        any(o in ("main", "leak_from_static") for o in origins)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
