"""graphs.py MODE: CUDA graphs, which PyTorch serves from private memory
pools, for scripts/gpu-check.sh: the output must be the same with and
without gpuleak, and the run must exit 0.

MODE compile: torch.compile(mode="reduce-overhead") (CUDA graph trees,
which fail under the cudaMallocAsync backend). MODE graph: a manual
torch.cuda.graph capture and replay. Prints checksums rounded so that
runs compare as text."""
import sys

import torch


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 256)).cuda()


def compiled():
    m = model()
    f = torch.compile(m, mode="reduce-overhead")
    x = torch.randn(64, 256, device="cuda", generator=torch.Generator("cuda").manual_seed(1))
    with torch.no_grad():
        for step in range(6):
            y = f(x * (step + 1))
            print("step %d checksum %.3f" % (step, y.double().sum().item()))


def captured():
    m = model()
    static_x = torch.randn(64, 256, device="cuda", generator=torch.Generator("cuda").manual_seed(1))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(3):
            m(static_x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        static_y = m(static_x)
    for step in range(6):
        static_x.mul_(1.01)
        g.replay()
        print("replay %d checksum %.3f" % (step, static_y.double().sum().item()))
    del g
    torch.cuda.empty_cache()
    print("after empty_cache reserved %d" % (torch.cuda.memory_reserved() > 0))


(compiled if sys.argv[1] == "compile" else captured)()
