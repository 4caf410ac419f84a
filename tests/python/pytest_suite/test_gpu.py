"""Tests for the gpuleak pytest plugin to judge (tests/integration/
test_pytest_plugin.py runs them): tensors of the fake PyTorch
(tests/python/faketorch) over the fake allocator."""
import threading

import pytest
import torch  # the fake, on PYTHONPATH

kept = []
cache = []


@pytest.fixture(scope="session")
def shared_weights():
    """Lives for the whole session: not a leak of the test that first
    needs it."""
    return torch.empty(32768)


def test_uses_a_session_fixture(shared_weights):
    assert shared_weights is not None


def test_first_matmul():
    """PyTorch's cuBLAS handle takes its workspace (kept for the process)
    the first time a test multiplies: cuBLAS's, not this test's leak."""
    a, b = torch.empty(4096), torch.empty(4096)
    product = a @ b
    del a, b, product


@pytest.fixture
def batch():
    """Function-scoped: torn down after each test that uses it, its value
    dropped by pytest only after the teardown phase."""
    return torch.empty(16384)


@pytest.fixture
def model():
    weights = torch.empty(8192)
    yield weights
    del weights


def test_uses_function_fixtures(batch, model):
    assert batch is not None and model is not None


def test_clean():
    activations = torch.empty(1 << 20)
    del activations


def test_leaks():
    kept.append(torch.empty(65536))  # LEAK-LINE


@pytest.mark.gpuleak(max_leaked="1MiB")
def test_within_its_budget():
    kept.append(torch.empty(4096))


@pytest.mark.gpuleak(repeat=4, max_leaked="1MiB")
def test_grows_on_each_run():
    cache.append(torch.empty(8192))  # GROW-LINE


@pytest.mark.gpuleak(repeat=4)
def test_steady_on_each_run():
    scratch = torch.empty(8192)
    del scratch


class TestWithState:
    """pytest keeps every test's class instance for the whole session;
    what a test set on self is gone with it, not the test's leak."""

    def setup_method(self):
        self.weights = torch.empty(8192)

    def test_uses_its_state(self):
        self.activations = torch.empty(4096)
        assert self.weights is not None


def alloc(n):
    return torch.empty(n)  # HELPER-LINE


def test_leaks_through_a_helper():
    kept.append(alloc(2048))  # OWN-LINE


background_kept = []


@pytest.fixture(scope="session")
def loader():
    """A background thread of the session (a data loader's prefetch) that
    allocates when asked, while whichever test runs."""
    ask, done = threading.Event(), threading.Event()

    def prefetch():
        while True:
            ask.wait()
            ask.clear()
            background_kept.append(torch.empty(1024))  # THREAD-LINE
            done.set()

    threading.Thread(target=prefetch, daemon=True).start()

    def fetch():
        done.clear()
        ask.set()
        done.wait(10)
    return fetch


def test_while_a_thread_allocates(loader):
    loader()


def test_skipped_while_a_thread_allocates(loader):
    loader()
    pytest.skip("skipped after the thread allocated")
