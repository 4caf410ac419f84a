"""The suite's header says how the interpreter runs, so a test can see that
the plugin's rerun under the shim kept its options."""
import sys


def pytest_report_header(config):
    return "dev mode: %s" % bool(sys.flags.dev_mode)
