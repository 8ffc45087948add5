# pytorch/pytorch#163798: with capture_scalar_outputs=False, tolist() was traced into the graph (item() breaks)
import torch
from torch._dynamo.testing import CompileCounter

assert not torch._dynamo.config.capture_scalar_outputs
graphs = []


def backend(gm, example_inputs):
    graphs.append(gm)
    return gm.forward


@torch.compile(fullgraph=False, backend=backend)
def func(a):
    u0, u1 = a.tolist()
    return a * u0 * u1


a = torch.tensor([1, 2])
out = func(a)
print("matches eager:", torch.equal(out, a * 1 * 2))
has_item = any(n.target == "item" or "item" in str(n.target) or "local_scalar" in str(n.target) for g in graphs for n in g.graph.nodes)
print("graphs:", len(graphs), "| an item()/_local_scalar_dense node in a graph:", has_item)
print("tolist graph-breaks now" if not has_item else "STILL: tolist traced into the graph")
