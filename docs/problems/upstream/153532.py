# pytorch/pytorch#153532 (RFC): each Inductor custom-pass hook took one callable. PR #184108 (fixes #151876)
# lets a hook take a list. Checks that two passes given as a list both run, in order.
import torch
import torch._inductor.config as inductor_config
from torch._inductor.custom_graph_pass import CustomGraphPass

calls = []


class Named(CustomGraphPass):
    def __init__(self, name):
        self.name = name

    def __call__(self, graph):
        calls.append(self.name)

    def uuid(self):
        return b"named-" + self.name.encode()


x = torch.randn(8)
torch.compiler.reset()
try:
    with inductor_config.patch(post_grad_custom_post_pass=[Named("first"), Named("second")],
                               fx_graph_cache=False, compile_threads=1):
        out = torch.compile(lambda t: torch.relu(t) * 2)(x)
    print("matches eager:", torch.equal(out, torch.relu(x) * 2), "| passes ran:", calls)
except Exception as e:
    print("a list is refused:", type(e).__name__, str(e).splitlines()[0][:200])
