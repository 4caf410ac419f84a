import torch


def _engine_run_backward(tensor):
    """Gives every parameter the graph reaches a gradient of its size
    (accumulated: made once) and lets go of what the graph saved, as
    PyTorch's backward does."""
    todo, seen = [tensor.grad_fn], set()
    while todo:
        fn = todo.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        fn._storage = None
        for p in fn.leaves:
            if p._grad is None:
                p._grad = torch.Tensor(p.nbytes())
        todo.extend(n for n, _ in fn.next_functions)
