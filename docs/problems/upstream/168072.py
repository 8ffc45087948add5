# pytorch/pytorch#168072: a post-grad pattern on aten.gelu never matches because Inductor decomposes gelu
# before post-grad passes (aten.relu stays). Records which ops a post-grad custom pass sees.
import torch
import torch._inductor.config as inductor_config
from torch._inductor.custom_graph_pass import CustomGraphPass

seen = {}


class Record(CustomGraphPass):
    def __init__(self, name):
        self.name = name

    def __call__(self, graph):
        seen[self.name] = sorted({str(n.target) for n in graph.nodes if n.op == "call_function"})

    def uuid(self):
        return b"record-post-grad-" + self.name.encode()


for name, fn in {"gelu": torch.nn.functional.gelu, "relu": torch.relu}.items():
    torch.compiler.reset()
    x = torch.randn(16)
    with inductor_config.patch(post_grad_custom_pre_pass=Record(name), fx_graph_cache=False, compile_threads=1):
        out = torch.compile(fn)(x)
    print(name, "matches eager:", torch.allclose(out, fn(x)), "| post-grad ops:", seen[name])
print("aten.gelu reaches post-grad:", any("gelu" in op for op in seen["gelu"]))
