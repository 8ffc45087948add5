"""
Profile a model node by node
============================

Where does a forward pass spend its time? ``torch.fx.Interpreter`` runs a
traced graph one node at a time through ``run_node``, so overriding that one
method is enough to put a stopwatch around every node. This example writes
such a profiler, runs it on a ResNet-style model, prints a table in graph
order and draws where the time goes. (The tutorial page
:doc:`/interpreters` explains ``Interpreter`` and ``run_node``.)
"""

# %%
# The profiler
# ------------
#
# ``NodeProfiler`` subclasses ``Interpreter`` and only overrides ``run_node``:
# read the clock, let the base class run the node, read the clock again.
# Because it runs the same graph, its result must equal the model's.

import statistics
import time

import matplotlib.pyplot as plt
import torch
import torch.fx as fx

from fxguide.display.timing import compare, format_time
from fxguide.models import SmallResNet
from fxguide.models import seeded


class NodeProfiler(fx.Interpreter):
    def __init__(self, gm: fx.GraphModule):
        super().__init__(gm)
        self.samples: dict[str, list[float]] = {node.name: [] for node in gm.graph.nodes}

    def run_node(self, node: fx.Node):
        start = time.perf_counter()
        result = super().run_node(node)
        self.samples[node.name].append(time.perf_counter() - start)
        return result


torch.set_num_threads(1)
model = seeded(SmallResNet, channels=16, blocks=2).eval()
gm = fx.symbolic_trace(model)
x = torch.randn(8, 3, 32, 32, generator=torch.Generator().manual_seed(0))

profiler = NodeProfiler(gm)
with torch.no_grad():
    torch.testing.assert_close(profiler.run(x), model(x))
print("the profiled run computes what the model computes")

# %%
# A table in graph order
# ----------------------
#
# Run the graph several times (after the warm-up run above) and keep each
# node's median. The table keeps graph order, so its rows do not move when two
# nodes trade places between runs.

for samples in profiler.samples.values():
    samples.clear()  # forget the warm-up run
with torch.no_grad():
    for _ in range(15):
        profiler.run(x)
median = {name: statistics.median(samples) for name, samples in profiler.samples.items()}

print(f"{'node':16}{'op':15}median time")
for node in gm.graph.nodes:
    print(f"{node.name:16}{node.op:15}{format_time(median[node.name])}")

# %%
# Where the time goes
# -------------------
#
# Grouped by what the node calls: one bar per node on the left, one per kind
# of node on the right.


def kind(node: fx.Node) -> str:
    if node.op == "call_module":
        return type(gm.get_submodule(node.target)).__name__
    if node.op == "call_function":
        return node.target.__name__
    return node.op


totals: dict[str, float] = {}
for node in gm.graph.nodes:
    totals[kind(node)] = totals.get(kind(node), 0.0) + median[node.name] * 1e3

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.5), gridspec_kw={"width_ratios": [2, 1]})
names = [node.name for node in gm.graph.nodes]
left.barh(names[::-1], [median[name] * 1e3 for name in names][::-1], color="#5a8")
left.set_xlabel("median time (ms)")
left.set_title("per node")
right.bar(list(totals), list(totals.values()), color="#da5")
right.set_ylabel("total median time (ms)")
right.set_title("per kind of node")
plt.setp(right.get_xticklabels(), rotation=40, ha="right")
fig.tight_layout()
plt.show()

# %%
# The interpreter's own cost
# --------------------------
#
# Running node by node in Python costs something on top of the operations:
# ``run_node`` fetches arguments and dispatches for every node, and the
# profiler reads the clock twice. Timed alternately with a plain call of the
# same graph, on the same input:

with torch.no_grad():
    profiled, plain, ratio = compare(lambda: profiler.run(x), lambda: gm(x), repeats=15)
print("profiled run:    ", profiled)
print("plain call:      ", plain)
print("profiled / plain:", ratio)

# %%
# Read the median ratio together with its spread: where the spread straddles
# 1, this run could not tell the two apart. The overhead is paid per node, so
# it weighs more the cheaper each node is; for a graph of many tiny
# operations, ``torch.profiler`` measures without it.
