"""The report's keys, declared once (common/report_keys.h): every key is in
docs/report-format.md, every key a written report holds is in the table,
and neither the shim's writer nor the command's reader spells a key of its
own (they name them through RK)."""
import json
import os
import re
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_core import BUILD, ROOT, run  # noqa: E402

KEYS_H = os.path.join(ROOT, "common", "report_keys.h")
WRITER = os.path.join(ROOT, "shim", "reports", "report_json.c")
READER = os.path.join(ROOT, "report", "load.c")
# Objects whose keys are data, not the format's: kinds, PyTorch's actions,
# device numbers, site ids.
DATA_KEYED = ("kinds", "events", "devices", "stacks")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def table():
    with open(KEYS_H) as fh:
        return re.findall(r'^\s*X\((\w+),', fh.read(), re.M)


def code_of(path):
    with open(path) as fh:
        return COMMENT.sub("", fh.read())


def keys_in(value, parent="", out=None):
    """Every key of the report's objects, data-keyed objects' own left out."""
    out = set() if out is None else out
    if isinstance(value, dict):
        for key, child in value.items():
            if parent not in DATA_KEYED:
                out.add(key)
            keys_in(child, key if parent not in DATA_KEYED else "", out)
    elif isinstance(value, list):
        for child in value:
            keys_in(child, parent, out)
    return out


class ReportKeysTest(unittest.TestCase):
    def test_every_key_is_documented(self):
        with open(os.path.join(ROOT, "docs", "report-format.md")) as fh:
            doc = fh.read()
        keys = table()
        self.assertGreater(len(keys), 100)
        self.assertEqual(len(keys), len(set(keys)), "a key declared twice")
        self.assertEqual([k for k in keys if not re.search(r'["`]%s["`]' % re.escape(k), doc)], [])

    def test_the_writer_spells_no_key_of_its_own(self):
        code = code_of(WRITER)
        self.assertEqual(re.findall(r'\\"(\w+)\\":', code), [], "a key in a format string")
        keys = set(table())
        literal = [k for k in re.findall(r'"(\w+)"', code) if k in keys]
        # Values the writer writes that are keys' names elsewhere too
        # (peak.sites_at "tensors", status.moment "signal").
        self.assertEqual(sorted(set(literal) - {"tensors", "signal"}), [], "a key as a literal")

    def test_the_reader_spells_no_key_of_its_own(self):
        code = code_of(READER)
        keys = set(table())
        literal = [k for k in re.findall(r'"(\w+)"', code) if k in keys]
        # "tensors" is peak.sites_at's value there, not a key.
        self.assertEqual(sorted(set(literal) - {"tensors"}), [], "a key as a literal")

    def test_every_key_a_report_holds_is_in_the_table(self):
        tmp = tempfile.mkdtemp(prefix="gpuleak-keys-")
        found = set()
        for prog in ("prog_kinds", "prog_teardown", "prog_errors"):
            r = run([BUILD / "tests" / prog], tmp, env_extra={"GPULEAK_SUMMARY": "0",
                                                              "GPULEAK_SELF_TIME": "1"})
            for report in r.reports:
                found |= keys_in(json.loads(json.dumps(report)))
            for name in os.listdir(tmp):
                if name.startswith("r-"):
                    with open(os.path.join(tmp, name)) as fh:
                        found |= keys_in(json.load(fh))
                    os.unlink(os.path.join(tmp, name))
        self.assertIn("shim_time_ns", found)
        self.assertEqual(sorted(found - set(table())), [])


if __name__ == "__main__":
    unittest.main()
