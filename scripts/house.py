#!/usr/bin/env python3
"""The house's shape, as a stranger would check it: the modules each
module includes (a module is x.c with its x.h), the circles among them,
the arrows that point up a floor (the floors are the shim's folders, in
the order FLOORS lists them, and the command's trees, COMMAND_FLOORS), the functions longer than the limit and the
blocks of code written twice.

    scripts/house.py            prints what it finds; exits 1 on a circle,
                                an arrow up, a long function or a
                                repeated block
    scripts/house.py --graph    prints every module's arrows too

tests/integration/test_house.py runs it with `make test`."""
import ast
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The shim's floors, bottom first: a module may include its own floor's
# and those below it, never one above.
FLOORS = ["base", "stacks", "count", "names", "python", "reports", "entry"]
TREES = ["shim", "report", "cli", "common"]
LONGEST = 80  # lines of a function, outside tests

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
FUNCTION = re.compile(r"^[A-Za-z_][^;{}()=]*\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*(?:__attribute__\(\([^)]*\)\)\s*)*\{",
                      re.M)


def sources():
    """Every .c and .h file of the trees: path -> module name."""
    found = {}
    for tree in TREES:
        for folder, _, files in os.walk(os.path.join(ROOT, tree)):
            for name in files:
                if name.endswith((".c", ".h")):
                    found[os.path.join(folder, name)] = os.path.splitext(name)[0]
    return found


# The command's floors, bottom first: common/ (shared with the shim), the
# report reader, the commands.
COMMAND_FLOORS = ["common", "report", "cli"]


def floor_of(path):
    """(tower, floor) of the file at path: ("shim", its folder) on the
    shim's floors, ("command", its tree) on the command's, else None."""
    parts = os.path.relpath(path, ROOT).split(os.sep)
    if parts[0] == "shim" and len(parts) > 2 and parts[1] in FLOORS:
        return ("shim", parts[1])
    if parts[0] in COMMAND_FLOORS and len(parts) > 1:
        return ("command", parts[0])
    return None


def height(floor):
    return (FLOORS if floor[0] == "shim" else COMMAND_FLOORS).index(floor[1])


def graph(files):
    """module -> set of modules it includes (its .c and .h together), and
    module -> its folder."""
    by_header = {}
    for path, module in files.items():
        if path.endswith(".h"):
            by_header.setdefault(os.path.basename(path), set()).add(path)
    arrows, home = {}, {}
    for path, module in files.items():
        home[(os.path.dirname(path), module)] = path
        key = (os.path.dirname(path), module)
        with open(path, errors="replace") as fh:
            text = fh.read()
        for name in INCLUDE.findall(text):
            for target in by_header.get(os.path.basename(name), ()):
                other = (os.path.dirname(target), os.path.splitext(os.path.basename(target))[0])
                if other != key:
                    arrows.setdefault(key, set()).add(other)
        arrows.setdefault(key, set())
    return arrows


def circles(arrows):
    """The strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in arrows.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(arrows):
        if v not in index:
            visit(v)
    return out


def arrows_up(arrows):
    """(from, to) where a module includes one on a higher floor of its
    tower (the shim's, or the command's)."""
    up = []
    for (folder, module), targets in sorted(arrows.items()):
        mine = floor_of(os.path.join(folder, module))
        for other_folder, other in sorted(targets):
            theirs = floor_of(os.path.join(other_folder, other))
            if mine and theirs and mine[0] == theirs[0] and height(theirs) > height(mine):
                up.append(("%s/%s" % (mine[1], module), "%s/%s" % (theirs[1], other)))
    return up


LEXEME = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def code_only(text):
    """text with its comments, strings and characters blanked (newlines
    kept), so that a brace inside one is not counted."""
    return LEXEME.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def long_functions(files):
    """(path, function, lines) of every C function longer than LONGEST."""
    found = []
    for path in sorted(files):
        if not path.endswith(".c"):
            continue
        with open(path, errors="replace") as fh:
            text = code_only(fh.read())
        for match in FUNCTION.finditer(text):
            depth, i = 0, match.end() - 1
            while i < len(text):
                if text[i] == "{":
                    depth += 1
                elif text[i] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                i += 1
            lines = text.count("\n", match.start(), i) + 1
            if lines > LONGEST:
                found.append((os.path.relpath(path, ROOT), match.group(1), lines))
    return found


PYTHON_TREES = ["shim", "python", "scripts", "cli"]


def long_python_functions():
    """(path, function, lines) of every Python function (outside tests)
    longer than LONGEST."""
    found = []
    for tree in PYTHON_TREES:
        for folder, _, names in os.walk(os.path.join(ROOT, tree)):
            for name in sorted(names):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                with open(path) as fh:
                    module = ast.parse(fh.read(), path)
                for node in ast.walk(module):
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        lines = node.end_lineno - node.lineno + 1
                        if lines > LONGEST:
                            found.append((os.path.relpath(path, ROOT), node.name, lines))
    return found


BLOCK = 6  # lines of a repeated block
BOILERPLATE = ("{", "}", "};", ")", "});", "*/", "/*", "else", "break;", "return 0;", "return -1;")


def repeated_blocks():
    """Runs of BLOCK lines found twice or more (outside tests and
    scripts), as lists of (path, first line); lines of braces, comments and
    preprocessor lines are not counted, nor blocks of short lines."""
    seen = {}
    for tree in ("shim", "report", "cli", "common", "python", "include"):
        for folder, _, names in os.walk(os.path.join(ROOT, tree)):
            for name in sorted(names):
                if not name.endswith((".c", ".h", ".py", ".js")):
                    continue
                path = os.path.join(folder, name)
                with open(path, errors="replace") as fh:
                    lines = [line.strip() for line in fh.read().split("\n")]
                for i in range(len(lines) - BLOCK + 1):
                    window = tuple(lines[i:i + BLOCK])
                    content = [line for line in window if line and line not in BOILERPLATE
                               and not line.startswith(("//", "#", "* ", "/*"))]
                    if len(content) >= BLOCK - 1 and sum(map(len, content)) >= 120:
                        seen.setdefault(window, []).append((os.path.relpath(path, ROOT), i + 1))
    found, reported = [], set()
    for places in sorted(v for v in seen.values() if len(v) > 1):
        overlaps = any((path, line - 1) in reported for path, line in places)
        reported.update(places)
        if not overlaps:
            found.append(places)
    return found


def main(argv):
    files = sources()
    arrows = graph(files)
    if "--graph" in argv:
        for (folder, module), targets in sorted(arrows.items()):
            print("%s/%s -> %s" % (os.path.relpath(folder, ROOT), module,
                                   " ".join(sorted(m for _, m in targets))))
    bad = 0
    for group in circles(arrows):
        print("circle: " + " <-> ".join("%s/%s" % (os.path.relpath(f, ROOT), m) for f, m in group))
        bad += 1
    for low, high in arrows_up(arrows):
        print("arrow up: %s includes %s" % (low, high))
        bad += 1
    for path, name, lines in long_functions(files) + long_python_functions():
        print("long function: %s %s, %d lines (the limit is %d)" % (path, name, lines, LONGEST))
        bad += 1
    for places in repeated_blocks():
        print("repeated block: " + ", ".join("%s:%d" % place for place in places))
        bad += 1
    print("%d finding(s)" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
