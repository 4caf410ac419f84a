"""Real PyTorch tests for `pytest --gpuleak` on the GPU machine
(scripts/gpu-real.sh): one keeps a CUDA tensor in a module-level list, one
keeps a loss with its graph, the others free what they make."""
import pytest
import torch

kept = []
losses = []


def test_clean_matmul():
    a = torch.randn(1024, 1024, device="cuda")
    b = (a @ a).sum().item()
    assert b == b


def test_keeps_a_batch():
    kept.append(torch.randn(256, 1024, device="cuda"))  # LEAK-LINE


def test_keeps_a_loss_with_its_graph():
    w = torch.randn(1024, 1024, device="cuda", requires_grad=True)
    x = torch.randn(512, 1024, device="cuda")
    losses.append((x @ w).relu().sum())  # GRAPH-LINE


@pytest.mark.gpuleak(repeat=4)
def test_steady_under_repeat():
    x = torch.randn(512, 512, device="cuda")
    del x


@pytest.fixture
def model():
    return torch.nn.Linear(1024, 1024).cuda()


def test_uses_a_model_fixture(model):
    assert model(torch.randn(8, 1024, device="cuda")).shape == (8, 1024)


class TestWithState:
    def setup_method(self):
        self.weights = torch.randn(1024, 1024, device="cuda")

    def test_uses_its_state(self):
        self.activations = self.weights @ self.weights
        assert self.activations.shape == (1024, 1024)
