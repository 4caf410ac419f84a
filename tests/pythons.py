"""The other CPython interpreters a test may run itself under: one of each
CPython 3.10 to 3.13 this machine has (pyenv's, Debian's) but the version
running. The shim reads each version's own frame and object layouts, which
differ between minor versions and not within one, so what passes under one
must pass under each."""
import glob
import re
import sys


def other_pythons():
    found = sorted(glob.glob("/root/.pyenv/versions/3.1[0-3].*/bin/python3")
                   + glob.glob("/usr/bin/python3.1[0-3]"))
    running = "%d.%d" % sys.version_info[:2]
    seen, chosen = {running}, []
    for path in found:
        m = re.search(r"(3\.1[0-3])", path)
        if m and m.group(1) not in seen:
            seen.add(m.group(1))
            chosen.append(path)
    return chosen
