import torch

from .optimizer import Optimizer


class Adam(Optimizer):
    def step(self):
        """Two moments of each trained parameter's size, made at the first
        step, as Adam's exp_avg and exp_avg_sq."""
        for p in self.param_groups[0]["params"]:
            if p.grad is not None and not self.state[p]:
                self.state[p]["exp_avg"] = torch.Tensor(p.nbytes())
                self.state[p]["exp_avg_sq"] = torch.Tensor(p.nbytes())
