/* python.h: the calling thread's Python frames, read without the GIL.
 *
 * PyTorch releases the GIL before it allocates, so frames are read as raw
 * memory from the thread's own frame chain (which cannot change while the
 * thread runs C code), by per-version layouts. Nothing here calls into the
 * interpreter on the capture path. */
#ifndef GPULEAK_PYTHON_H
#define GPULEAK_PYTHON_H

#include <stddef.h>
#include <stdint.h>

/* One captured Python frame, packed: the interned code object's index in the
 * high 32 bits, the line being executed in the low 32 bits. Two captures of
 * the same line of the same function give the same value, so packed frames
 * can be hashed into a stack id. 0 is never a valid frame. */
typedef uint64_t python_frame_t;

/* Looks for a CPython interpreter in the process (dlsym, no link to
 * libpython) and checks its version against the known layouts. Call once,
 * outside any hook, from the shim's initialisation; safe to call when no
 * Python is loaded (then python_capture returns 0). On an unknown version it
 * prints one line on stderr saying Python frames are off. Returns 1 when
 * Python frames will be captured, 0 otherwise. */
int python_init(void);

/* Captures up to max frames of the calling thread, innermost first, into out.
 * Returns how many were written: 0 when the thread has no Python frames or
 * Python support is off. Never takes the GIL, never blocks, never allocates
 * with malloc on the fast path (a miss in the code-object cache may). */
int python_capture(python_frame_t *out, int max);

/* What python_capture(out, max) would take, as a 64-bit hash of the frames
 * as they stand (code objects and instructions), into *key; returns how
 * many frames that is. Reads the frame chain and the code objects' first
 * lines, nothing else: no code object is interned and no line decoded, so
 * that a stack seen before is recognised at the cost of the walk alone.
 * Two calls give the same key for the same frames at the same
 * instructions; different instructions of one line give different keys. */
int python_key(int max, uint64_t *key);

/* How many of the native frames pcs[0..n), innermost first, come before the
 * first frame in the interpreter's own code (libpython, or the executable it
 * is linked into). Below Python frames those are what tell two allocations
 * apart: the interpreter's frames between the innermost Python frame and
 * the C code it called tell how the call was dispatched, which changes
 * when an instruction is specialized after its first runs, not what
 * allocated. n when Python support is off. */
int python_native_before_interpreter(const uintptr_t *pcs, int n);

/* The packed frame of a live code object executing at byte offset addr,
 * as python_capture would take it: for frames a framework recorded itself
 * (JAX keeps each array's (code, instruction) pairs). Call with the GIL
 * held, the code object kept alive by the caller. 0 when code is no code
 * object or Python support is off. */
python_frame_t python_frame_of(const void *code, long addr);

/* Describes a packed frame for the report: qualified function name, file and
 * line. The strings are owned by the python module and live until exit.
 * Returns 0 on success, -1 for a frame this module never produced. */
int python_describe(python_frame_t frame, const char **function,
                    const char **file, int *line);

/* Looks for the interpreter's Py_IsInitialized (dlsym) and notes whether
 * Python is up now. Call once at start, outside any hook; harmless without
 * an interpreter. Independent of GPULEAK_PYTHON. */
void python_watch_finish(void);

/* 1 once an interpreter that was up has begun to finish: its atexit
 * callbacks have run and it is about to tear its modules down, which frees
 * what a script kept in its globals. What is live then is what the program
 * held to its end. Reads one field of the interpreter per call until then
 * (no GIL needed), a flag after. */
int python_finished(void);

/* Whether the program installed audit hooks (sys.addaudithook, or
 * PySys_AddAuditHook in an embedding program): 1, 0, or -1 when this
 * interpreter's place for them is not known (a version other than 3.10 to
 * 3.13, or a build whose layout differs). A hook sees the events of what
 * the shim runs in the interpreter (compiling and running its helpers,
 * gc.get_objects, sys._getframe, an import), and a hook is the program's
 * code: with hooks, the shim runs nothing there. No GIL needed; the
 * first call looks the interpreter's symbols up. */
int python_audit_hooked(void);

/* The minor version of the CPython 3 in this process (12 for 3.12), or -1
 * when there is none; read from the interpreter itself, whether Python
 * frames are on or not. Any thread. */
int python_running_minor(void);

/* The interpreter's version as "3.12.3", or NULL when none was found. */
const char *python_version(void);

#endif
