"""Tests that fail (or are expected to) on their own with tensors in their
locals, for the gpuleak pytest plugin to judge (tests/integration/
test_pytest_plugin.py): pytest keeps the exception's traceback, and with
it the test's frame, in sys.last_traceback; no memory is left behind."""
import pytest
import torch  # the fake, on PYTHONPATH


def test_fails_on_its_own():
    scratch = torch.empty(65536)
    assert scratch is None


@pytest.mark.xfail(strict=True)
def test_expected_to_fail():
    scratch = torch.empty(65536)
    raise RuntimeError(scratch)


def test_clean_after_them():
    pass
