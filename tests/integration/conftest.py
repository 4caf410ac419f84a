"""How `make integration` runs these unittest suites: under pytest, WORKERS
at a time (pytest-xdist), except the tests that judge time (the growth
rule's samples, checkpoints kept to a share of the program's time, a
stress run of 32 threads) and would be skewed by a busy machine: those are
marked `alone` (a class attribute ALONE = True, or tests.alone on one test)
and run after, one at a time. `python3 -m unittest discover` still runs
them all, one at a time, without pytest."""


def pytest_configure(config):
    config.addinivalue_line("markers", "alone: judges time; runs after the parallel pass, by itself")


def pytest_collection_modifyitems(items):
    for item in items:
        if getattr(item.cls, "ALONE", False) or getattr(getattr(item, "obj", None), "alone", False):
            item.add_marker("alone")
