import collections


class Optimizer:
    def __init__(self, params):
        self.state = collections.defaultdict(dict)
        self.param_groups = [{"params": list(params)}]

    def zero_grad(self):
        for p in self.param_groups[0]["params"]:
            p.grad = None
