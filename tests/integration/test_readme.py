"""What the README says that the code can check: the Debian packages
scripts/install-deps.sh installs are the ones the README lists, no more,
no fewer (a new user's first question is what `make` will install)."""
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def installed():
    with open(os.path.join(ROOT, "scripts", "install-deps.sh")) as fh:
        text = fh.read()
    loop = re.search(r"for pkg in (.*?); do", text, re.S).group(1)
    return set(loop.replace("\\", " ").split())


def listed():
    """The packages the README names, in backticks, from the sentence that
    points to install-deps.sh to its end."""
    with open(os.path.join(ROOT, "README.md")) as fh:
        text = fh.read()
    said = re.search(r"\(`scripts/install-deps.sh`\): (.*?)\.\n", text, re.S).group(1)
    return set(re.findall(r"`([^`]+)`", said))


class ReadmeTest(unittest.TestCase):
    def test_the_packages_listed_are_the_ones_installed(self):
        self.assertGreater(len(installed()), 10)
        self.assertEqual(listed(), installed())


if __name__ == "__main__":
    unittest.main()
