# layout.py: where the watched program's interpreter keeps its standard
# library and its installed packages, as the interpreter itself says.
# libgpuleak.so embeds this file (shim/python/embedded_py.S) and runs layout()
# from its atexit callback, with the GIL held, before holders.py
# (shim/python/search.c). The origin rules judge Python frames by these folders
# (docs/origin-rules.md), the report records them ("python_layout"), and
# holders.py looks for the program's names outside them first.
#
# layout() returns one line per folder, the standard library's first:
#   stdlib \t folder      the standard library (its folder, or its zip)
#   packages \t folder    a folder installed packages are imported from
# each an absolute path without a trailing "/", once, only those that
# exist; "" when the interpreter could not be read.
#
# Where it looks:
#   standard library: sys._stdlib_dir (3.11+), the folder os was loaded
#     from, sys.base_prefix and sys.base_exec_prefix joined with
#     sys.platlibdir as the interpreter's start-up builds them
#     (/usr/lib64/python3.12 on Fedora), the zipped library on sys.path
#     (python312.zip), and sysconfig's stdlib and platstdlib;
#   packages: sysconfig's purelib and platlib, site.getsitepackages() and
#     site.USER_SITE, and the folders on sys.path that hold installed
#     distributions (a *.dist-info folder: pip install --target, pex,
#     Bazel's wheels) or are named site-packages or dist-packages. A
#     folder a .pth file adds for an editable install holds the user's own
#     source, and no .dist-info: it stays the user's.
#
# Rules it keeps: imports nothing new (its one import, sys, is always
# loaded) and runs none of the program's code.
# sysconfig and site are asked only when the program already imported
# them and their files are the standard library's own: importing a name
# at exit loads whatever comes first on sys.path, which may be a file of
# the program's (its folder comes first), and costs milliseconds.
# sysconfig is asked only once its configuration has been read, since
# get_paths() would otherwise import the large _sysconfigdata module;
# without it, the folders above come from sys and site alone, which is
# where sysconfig's default schemes put them too. A folder is listed
# through os's own C functions (the posix module, always loaded), and at
# most SCAN_MAX of its entries are read. Never raises. layout() takes about
# 0.1 ms, compiling this file some 0.7 ms more (docs/performance.md).
import sys

# Entries of one sys.path folder read while looking for a .dist-info:
# a folder of packages has one among its first few (about one entry in
# three is one), while reading a folder of thousands of files (a script's
# folder of data) costs some 0.4 us an entry.
SCAN_MAX = 256


def _posix():
    return sys.modules["posix"]


def _exists(path):
    try:
        _posix().stat(path)
        return True
    except OSError:
        return False


def _clean(path):
    """path as one line of the answer: absolute, no trailing "/" (the root
    itself is no one folder's), else None."""
    if type(path) is not str or not path.startswith("/") or "\t" in path or "\n" in path:
        return None
    return path.rstrip("/") or None


def _under(path, folders):
    return any(path == f or path.startswith(f + "/") for f in folders)


def _existing(paths, known=()):
    """The clean paths that exist, each once, in order, none already known."""
    out = []
    for path in paths:
        path = _clean(path)
        if path is not None and path not in out and path not in known and _exists(path):
            out.append(path)
    return out


def _module_file(name):
    module = sys.modules.get(name)
    if type(module) is not type(sys):
        return None
    path = module.__dict__.get("__file__")
    return path if type(path) is str else None


def _standard(name, stdlib):
    """The module name, when it is imported and the standard library's own
    file; else None."""
    path = _module_file(name)
    return sys.modules[name] if path is not None and _under(path, stdlib) else None


def _ask(function):
    """What the standard library's function answers, or None: one source
    failing loses only its own folders."""
    try:
        return function()
    except Exception:
        return None


def _holds_distributions(folder):
    """Whether folder holds an installed distribution's metadata."""
    try:
        with _posix().scandir(folder) as entries:
            for count, entry in enumerate(entries):
                if count >= SCAN_MAX:
                    break
                if entry.name.endswith(".dist-info"):
                    return True
    except OSError:
        pass  # not a folder (a zip), gone, or not readable
    return False


def _stdlib():
    """The standard library's folders, and sysconfig's paths (or {})."""
    version = "%d.%d" % sys.version_info[:2]
    os_file = _module_file("os")
    stdlib = _existing(
        [getattr(sys, "_stdlib_dir", None), os_file and os_file.rpartition("/")[0]]
        + ["%s/%s/python%s" % (prefix, getattr(sys, "platlibdir", "lib"), version)
           for prefix in (sys.base_prefix, sys.base_exec_prefix)]
        + [p for p in sys.path if type(p) is str
           and p.endswith("/python%d%d.zip" % sys.version_info[:2])])
    sysconfig = _standard("sysconfig", stdlib)
    paths = None
    if sysconfig is not None and any(n.startswith("_sysconfigdata") for n in list(sys.modules)):
        paths = _ask(sysconfig.get_paths)
    if type(paths) is not dict:
        paths = {}
    stdlib += _existing([paths.get("stdlib"), paths.get("platstdlib")], stdlib)
    return stdlib, paths


def _packages(stdlib, paths):
    """The folders installed packages are imported from."""
    site = _standard("site", stdlib)
    candidates = [paths.get("purelib"), paths.get("platlib")]
    if site is not None:
        sitepackages = _ask(site.getsitepackages)
        candidates += (sitepackages if type(sitepackages) is list else []) + [
            site.__dict__.get("USER_SITE")]
    packages = _existing(candidates, stdlib)
    for entry in list(sys.path):
        entry = _clean(entry)
        if entry is None or _under(entry, packages):
            continue
        if entry.endswith(("/site-packages", "/dist-packages")):
            if _exists(entry):
                packages.append(entry)
        elif not _under(entry, stdlib) and _holds_distributions(entry):
            packages.append(entry)
    return packages


def layout():
    """The lines above; "" when anything failed."""
    try:
        stdlib, paths = _stdlib()
        packages = _packages(stdlib, paths)
        return "".join(["stdlib\t%s\n" % f for f in stdlib]
                       + ["packages\t%s\n" % f for f in packages])
    except Exception:
        return ""
