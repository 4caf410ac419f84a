"""The other CPython interpreters a test may run itself under: each
CPython 3.10 to 3.13 this machine has (pyenv's, Debian's) but the one
running. The shim reads each version's own frame and object layouts, so
what passes under one must pass under each."""
import glob
import os
import sys


def other_pythons():
    found = sorted(glob.glob("/root/.pyenv/versions/3.1[0-3].*/bin/python3")
                   + glob.glob("/usr/bin/python3.1[0-3]"))
    return [p for p in found if os.path.realpath(p) != os.path.realpath(sys.executable)]
