"""The house's shape (scripts/house.py): no circle among the modules, no
module of the shim including one on a floor above its own, no function
over the limit and no block of six lines written twice, outside tests."""
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import house  # noqa: E402

# Functions allowed past the limit: none now; one that grows past it fails.
STILL_LONG = set()


class HouseTest(unittest.TestCase):
    def setUp(self):
        self.files = house.sources()
        self.arrows = house.graph(self.files)

    def test_every_floor_is_a_folder_of_the_shim(self):
        for floor in house.FLOORS:
            self.assertTrue(os.path.isdir(os.path.join(ROOT, "shim", floor)), floor)
        loose = [name for name in os.listdir(os.path.join(ROOT, "shim"))
                 if not os.path.isdir(os.path.join(ROOT, "shim", name))]
        self.assertEqual(loose, [], "files of the shim outside its floors")

    def test_no_circle(self):
        self.assertEqual(house.circles(self.arrows), [])

    def test_no_arrow_up(self):
        self.assertEqual(house.arrows_up(self.arrows), [])

    def test_the_checker_sees_a_circle_and_an_arrow_up(self):
        base = (os.path.join(ROOT, "shim", "base"), "log")
        entry = (os.path.join(ROOT, "shim", "entry"), "api")
        arrows = {base: {entry}, entry: {base}}
        self.assertEqual(len(house.circles(arrows)), 1)
        self.assertEqual(house.arrows_up(arrows), [("base/log", "entry/api")])
        reader = (os.path.join(ROOT, "report"), "load")
        command = (os.path.join(ROOT, "cli"), "text")
        self.assertEqual(house.arrows_up({reader: {command}, command: {reader}}),
                         [("report/load", "cli/text")])

    def test_the_writers_read_the_view_alone(self):
        """The JSON writer and the exit summary include their own header,
        the view's and common/'s: what they print is gathered (or read)
        through the view, never from the floors below it."""
        common = {name for name in os.listdir(os.path.join(ROOT, "common")) if name.endswith(".h")}
        for writer in ("report_json", "report_summary"):
            with open(os.path.join(ROOT, "shim", "reports", writer + ".c")) as fh:
                included = set(house.INCLUDE.findall(fh.read()))
            self.assertEqual(included - common - {writer + ".h", "report_view.h"}, set(), writer)
            with open(os.path.join(ROOT, "shim", "reports", writer + ".h")) as fh:
                self.assertEqual(set(house.INCLUDE.findall(fh.read())) - common, {"report_view.h"})

    def test_no_block_written_twice(self):
        self.assertEqual(house.repeated_blocks(), [])

    def test_no_long_function(self):
        found = {(path, name) for path, name, _ in
                 house.long_functions(self.files) + house.long_python_functions()}
        self.assertEqual(found - STILL_LONG, set())


if __name__ == "__main__":
    unittest.main()
