/* test_python.c: shim/stacks/python.c against a live, embedded interpreter.
 *
 * The test embeds CPython, registers a small built-in module ("gpltest")
 * whose functions release the GIL (as PyTorch's bindings do) and then call
 * python_capture, and compares what was captured with what the interpreter
 * itself says: the frame chain from sys._getframe(), with f_lineno, taken on
 * the same source line. It also compares the line-table decoder with
 * co_lines() for every offset of every code object of a few stdlib modules,
 * checks that a reused code-object address is not mistaken for the old code
 * object, captures from several threads at once, and times 10-frame
 * captures (printed only).
 *
 * Build: needs `python3-config --includes` and `python3-config --embed
 * --ldflags` (see docs/python-frames.md). Running it against another
 * interpreter (3.10, 3.12, 3.13) is the way to check that version's layout. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "suite.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "python.h"

/* Hidden test hook in python.c: line of a byte offset by our decoder. */
int python__code_line(const void *code, long addr);

#define MAXF 128

/* gpltest.capture([max]): frames of the calling thread, captured with the GIL
 * released, as a list of (function, file, line), innermost first. */
static PyObject *gt_capture(PyObject *self, PyObject *args)
{
    (void)self;
    python_frame_t fr[MAXF];
    int n, max = MAXF;
    if (!PyArg_ParseTuple(args, "|i", &max))
        return NULL;
    if (max > MAXF)
        max = MAXF;
    Py_BEGIN_ALLOW_THREADS
    n = python_capture(fr, max);
    Py_END_ALLOW_THREADS
    PyObject *list = PyList_New(0);
    for (int i = 0; i < n; i++) {
        const char *fn, *file;
        int line;
        if (python_describe(fr[i], &fn, &file, &line) != 0) {
            Py_DECREF(list);
            PyErr_SetString(PyExc_AssertionError, "describe failed on a captured frame");
            return NULL;
        }
        PyObject *t = Py_BuildValue("(ssi)", fn, file, line);
        PyList_Append(list, t);
        Py_DECREF(t);
    }
    return list;
}

/* gpltest.packed(): the raw packed frames, to check that two captures of
 * the same line give the same values. */
static PyObject *gt_packed(PyObject *self, PyObject *args)
{
    (void)self; (void)args;
    python_frame_t fr[MAXF];
    int n;
    Py_BEGIN_ALLOW_THREADS
    n = python_capture(fr, MAXF);
    Py_END_ALLOW_THREADS
    PyObject *list = PyList_New(n);
    for (int i = 0; i < n; i++)
        PyList_SET_ITEM(list, i, PyLong_FromUnsignedLongLong(fr[i]));
    return list;
}

/* gpltest.code_line(code, offset): our decoder's line (-1: none). */
static PyObject *gt_code_line(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *code;
    long off;
    if (!PyArg_ParseTuple(args, "Ol", &code, &off))
        return NULL;
    return PyLong_FromLong(python__code_line(code, off));
}

/* gpltest.bench(n): ns per capture over n captures, GIL released; raises
 * unless every capture saw the same number of frames. Returns (ns, frames). */
static PyObject *gt_bench(PyObject *self, PyObject *args)
{
    (void)self;
    long iters;
    if (!PyArg_ParseTuple(args, "l", &iters))
        return NULL;
    python_frame_t fr[MAXF];
    int n0 = 0, bad = 0;
    struct timespec a, b;
    Py_BEGIN_ALLOW_THREADS
    n0 = python_capture(fr, MAXF); /* warm the caches */
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < iters; i++)
        bad |= python_capture(fr, MAXF) != n0;
    clock_gettime(CLOCK_MONOTONIC, &b);
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_AssertionError, "frame count changed during bench");
        return NULL;
    }
    double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)iters;
    return Py_BuildValue("(di)", ns, n0);
}

static PyMethodDef gt_methods[] = {
    {"capture", gt_capture, METH_VARARGS, NULL},
    {"packed", gt_packed, METH_NOARGS, NULL},
    {"code_line", gt_code_line, METH_VARARGS, NULL},
    {"bench", gt_bench, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef gt_module = {
    PyModuleDef_HEAD_INIT, "gpltest", NULL, -1, gt_methods,
    NULL, NULL, NULL, NULL,
};

/* Init function of the built-in module, registered before Py_Initialize. */
static PyObject *gt_init(void)
{
    return PyModule_Create(&gt_module);
}

/* The Python side. Line numbers are never written down: every check
 * compares a capture with the interpreter's own view taken on the same
 * line (here()), and a few structural facts (names, order, not the first
 * line). Compiled under the file name below. */
#define SRC_FILE "gpltest_frames.py"
static const char *src =
    "import sys, threading, gpltest\n"
    "QUAL = sys.version_info >= (3, 11)\n"
    "def here():\n"
    "    out = []\n"
    "    f = sys._getframe(1)\n"
    "    while f is not None:\n"
    "        c = f.f_code\n"
    "        out.append((c.co_qualname if QUAL else c.co_name, c.co_filename, f.f_lineno))\n"
    "        f = f.f_back\n"
    "    return out\n"
    "def same(got, exp):\n"
    "    assert got == exp, 'captured %r\\nexpected %r' % (got, exp)\n"
    "    return got\n"
    "\n"
    "def n9(): got, exp = gpltest.capture(), here(); return same(got, exp)\n"
    "def n8(): return n9()\n"
    "def n7(): return n8()\n"
    "def n6(): return n7()\n"
    "def n5(): return n6()\n"
    "def n4(): return n5()\n"
    "def n3(): return n4()\n"
    "def n2(): return n3()\n"
    "def n1(): return n2()\n"
    "def check_nested():\n"
    "    got = n1()\n"
    "    names = [g[0] for g in got]\n"
    "    assert names == ['n9','n8','n7','n6','n5','n4','n3','n2','n1','check_nested'], names\n"
    "    assert all(g[1] == '" SRC_FILE "' for g in got)\n"
    "\n"
    "def long_function():\n"
    "    a = 1\n"
    "    b = a + 1\n"
    "    for i in range(3):\n"
    "        b += i\n"
    "    try:\n"
    "        raise ValueError(b)\n"
    "    except ValueError:\n"
    "        c = b * 2\n"
    "    with open('/dev/null') as fh:\n"
    "        d = fh.read()\n"
    "    got, exp = gpltest.capture(), here()\n"
    "    e = (a, b, c, d)\n"
    "    return same(got, exp), e\n"
    "def check_long():\n"
    "    got, _ = long_function()\n"
    "    assert got[0][0] == 'long_function'\n"
    "    assert got[0][2] >= long_function.__code__.co_firstlineno + 11, got[0]\n"
    "\n"
    "class Klass:\n"
    "    def method(self):\n"
    "        got, exp = gpltest.capture(), here(); return same(got, exp)\n"
    "    @staticmethod\n"
    "    def static():\n"
    "        got, exp = gpltest.capture(), here(); return same(got, exp)\n"
    "    class Inner:\n"
    "        def deep(self):\n"
    "            got, exp = gpltest.capture(), here(); return same(got, exp)\n"
    "def gen():\n"
    "    yield 1\n"
    "    got, exp = gpltest.capture(), here(); yield same(got, exp)\n"
    "async def coro():\n"
    "    got, exp = gpltest.capture(), here(); return same(got, exp)\n"
    "def outer():\n"
    "    x = 5\n"
    "    def inner():\n"
    "        got, exp = gpltest.capture(), here(); return same(got, exp), x\n"
    "    return inner()[0]\n"
    "def check_kinds():\n"
    "    m = Klass().method()\n"
    "    if QUAL: assert m[0][0] == 'Klass.method', m[0]\n"
    "    s = Klass.static()\n"
    "    d = Klass.Inner().deep()\n"
    "    if QUAL: assert d[0][0] == 'Klass.Inner.deep', d[0]\n"
    "    g = gen(); next(g); gg = next(g)\n"
    "    assert gg[0][0] == 'gen' and gg[1][0] == 'check_kinds'\n"
    "    c = coro()\n"
    "    try:\n"
    "        c.send(None)\n"
    "    except StopIteration as stop:\n"
    "        cc = stop.value\n"
    "    assert cc[0][0] == 'coro'\n"
    "    o = outer()\n"
    "    if QUAL: assert o[0][0] == 'outer.<locals>.inner', o[0]\n"
    "    lam = (lambda: same(gpltest.capture(), here()))()\n"
    "    assert lam[0][0].endswith('<lambda>'), lam[0]\n"
    "    comp = [same(gpltest.capture(), here()) for _ in range(1)][0]\n"
    "    assert 'check_kinds' in [c[0] for c in comp]\n"
    "\n"
    "def check_threads():\n"
    "    errors = []\n"
    "    def work(k):\n"
    "        try:\n"
    "            for _ in range(200):\n"
    "                if k % 2: n1()\n"
    "                else: Klass().method()\n"
    "        except BaseException as e:\n"
    "            errors.append(e)\n"
    "    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]\n"
    "    for t in ts: t.start()\n"
    "    for t in ts: t.join()\n"
    "    assert not errors, errors\n"
    "    got = []\n"
    "    t = threading.Thread(target=lambda: got.append(gpltest.capture()))\n"
    "    t.start(); t.join()\n"
    "    assert got[0][0][0].endswith('<lambda>'), got\n"
    "    assert got[0][-1][0].endswith('_bootstrap'), got\n"
    "\n"
    "def m3(): got, exp = gpltest.capture(3), here(); return same(got, exp[:3])\n"
    "def m2(): return m3()\n"
    "def m1(): return m2()\n"
    "def check_max():\n"
    "    a = n1(); b = m1()\n"
    "    assert len(a) == 10 and len(b) == 3, (a, b)\n"
    "    assert gpltest.capture(1)[0][0] == 'check_max'\n"
    "\n"
    "def check_packed_stable():\n"
    "    r = [gpltest.packed() for _ in range(3)]\n"
    "    assert r[0] == r[1] == r[2]\n"
    "    a = gpltest.packed(); b = gpltest.packed()\n"
    "    assert a[0] >> 32 == b[0] >> 32 and a[1:] == b[1:]\n"
    "    assert all(x != 0 for x in a)\n"
    "\n"
    "def check_reuse():\n"
    "    seen, reused = set(), 0\n"
    "    for i in range(300):\n"
    "        ns = {'gpltest': gpltest, 'here': here, 'same': same}\n"
    "        src = 'def f%d():\\n' % i + '\\n' * (i % 7) + '    return same(gpltest.capture(), here())\\n'\n"
    "        exec(compile(src, 'dyn%d.py' % i, 'exec'), ns)\n"
    "        got = ns['f%d' % i]()\n"
    "        assert got[0][:2] == ('f%d' % i, 'dyn%d.py' % i), got[0]\n"
    "        c = id(ns['f%d' % i].__code__); reused += c in seen; seen.add(c)\n"
    "        del ns, got\n"
    "    return reused\n"
    "\n"
    "def all_codes(co):\n"
    "    yield co\n"
    "    for k in co.co_consts:\n"
    "        if hasattr(k, 'co_code'):\n"
    "            yield from all_codes(k)\n"
    "def check_linetables():\n"
    "    import importlib, os\n"
    "    count = 0\n"
    "    for name in ('os', 'threading', 'json.decoder', 'dataclasses', 'asyncio.base_events', 'argparse', 'typing'):\n"
    "        m = importlib.import_module(name)\n"
    "        with open(m.__file__) as fh:\n"
    "            top = compile(fh.read(), m.__file__, 'exec')\n"
    "        for co in all_codes(top):\n"
    "            table = {}\n"
    "            for start, end, line in co.co_lines():\n"
    "                for off in range(start, end, 2):\n"
    "                    table[off] = -1 if line is None else line\n"
    "            for off in range(0, len(co.co_code), 2):\n"
    "                want = table.get(off, -1)\n"
    "                got = gpltest.code_line(co, off)\n"
    "                assert got == want, (co, off, got, want)\n"
    "                count += 1\n"
    "    assert count > 10000, count\n"
    "    return count\n"
    "\n"
    "def b9(): return gpltest.bench(100000)\n"
    "def b8(): return b9()\n"
    "def b7(): return b8()\n"
    "def b6(): return b7()\n"
    "def b5(): return b6()\n"
    "def b4(): return b5()\n"
    "def b3(): return b4()\n"
    "def b2(): return b3()\n"
    "def b1(): return b2()\n"
    "def bench_entry(): return b1()\n";

static PyObject *ns;

/* Calls the Python function `name` of the test source; fails the test with
 * the Python traceback printed when it raises. */
static PyObject *call_py(const char *name)
{
    PyObject *fn = PyDict_GetItemString(ns, name);
    ck_assert_msg(fn != NULL, "no Python function %s", name);
    PyObject *r = PyObject_CallObject(fn, NULL);
    if (!r) {
        PyErr_Print();
        ck_abort_msg("Python check %s failed (traceback above)", name);
    }
    return r;
}

/* python_init finds the embedded interpreter and reports its version. */
START_TEST(test_init_and_version)
{
    ck_assert_int_eq(python_init(), 1);
    ck_assert_int_eq(python_init(), 1); /* idempotent */
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", PY_MAJOR_VERSION, PY_MINOR_VERSION,
             PY_MICRO_VERSION);
    ck_assert_str_eq(python_version(), want);
}
END_TEST

/* Frames this module never produced are refused, not dereferenced. */
START_TEST(test_describe_rejects)
{
    const char *f, *file;
    int line;
    ck_assert_int_eq(python_describe(0, &f, &file, &line), -1);
    ck_assert_int_eq(python_describe((python_frame_t)0xfffff << 32, &f, &file, &line), -1);
    ck_assert_int_eq(python_describe((python_frame_t)0x7fffffff << 32 | 5, &f, &file, &line), -1);
}
END_TEST

/* A thread state with no Python frame running gives 0 frames. */
START_TEST(test_no_frames_from_c)
{
    /* The main thread is in C here (no Python frame running). */
    python_frame_t fr[8];
    int n;
    Py_BEGIN_ALLOW_THREADS
    n = python_capture(fr, 8);
    Py_END_ALLOW_THREADS
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(python_capture(fr, 0), 0);
}
END_TEST

/* Each of these runs the Python check of the same name (see src). */
START_TEST(test_nested) { Py_DECREF(call_py("check_nested")); }
END_TEST
START_TEST(test_long_function) { Py_DECREF(call_py("check_long")); }
END_TEST
START_TEST(test_kinds) { Py_DECREF(call_py("check_kinds")); }
END_TEST
START_TEST(test_threads) { Py_DECREF(call_py("check_threads")); }
END_TEST
START_TEST(test_packed_stable) { Py_DECREF(call_py("check_packed_stable")); }
END_TEST
/* Dead code objects' addresses reused: the new names must be reported. */
START_TEST(test_address_reuse)
{
    PyObject *r = call_py("check_reuse");
    printf("test_python: %ld of 300 dynamic code objects reused a dead one's address\n",
           PyLong_AsLong(r));
    Py_DECREF(r);
}
END_TEST

/* Our line decoder equals co_lines() at every offset of many code objects. */
START_TEST(test_linetables)
{
    PyObject *r = call_py("check_linetables");
    printf("test_python: line tables agree with co_lines() at %ld offsets\n",
           PyLong_AsLong(r));
    Py_DECREF(r);
}
END_TEST

/* max caps the frames written, innermost kept. */
START_TEST(test_max_bounds) { Py_DECREF(call_py("check_max")); }
END_TEST

/* 100k captures of exactly 10 frames; the time is printed, not asserted. */
START_TEST(test_bench)
{
    PyObject *r = call_py("bench_entry");
    double ns_per;
    int frames;
    ck_assert(PyArg_ParseTuple(r, "di", &ns_per, &frames));
    ck_assert_int_eq(frames, 10);
    printf("test_python: %.1f ns per capture of %d Python frames (Python %s)\n",
           ns_per, frames, python_version());
    Py_DECREF(r);
}
END_TEST

/* All tests in one case: they share one interpreter. */
static Suite *python_suite(void)
{
    Suite *s = suite_create("python");
    TCase *tc = tcase_create("capture");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_init_and_version);
    tcase_add_test(tc, test_describe_rejects);
    tcase_add_test(tc, test_no_frames_from_c);
    tcase_add_test(tc, test_nested);
    tcase_add_test(tc, test_long_function);
    tcase_add_test(tc, test_kinds);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_packed_stable);
    tcase_add_test(tc, test_address_reuse);
    tcase_add_test(tc, test_linetables);
    tcase_add_test(tc, test_max_bounds);
    tcase_add_test(tc, test_bench);
    suite_add_tcase(s, tc);
    return s;
}

/* Embeds Python with the gpltest module, loads the test source, runs the
 * suite without forking (one interpreter for all tests). */
int main(void)
{
    PyImport_AppendInittab("gpltest", gt_init);
    Py_Initialize();
    if (python_init() != 1) {
        fprintf(stderr, "test_python: python_init failed for Python %s\n", Py_GetVersion());
        return 1;
    }
    ns = PyDict_New();
    PyDict_SetItemString(ns, "__builtins__", PyEval_GetBuiltins());
    PyObject *code = Py_CompileString(src, SRC_FILE, Py_file_input);
    PyObject *r = code ? PyEval_EvalCode(code, ns, ns) : NULL;
    if (!r) {
        PyErr_Print();
        return 1;
    }
    Py_DECREF(r);
    Py_DECREF(code);

    /* One interpreter for all tests: no fork per test. */
    return suite_run(python_suite(), 0);
}
