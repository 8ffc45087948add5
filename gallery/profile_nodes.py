"""
Profile a model node by node
============================

Where does a forward pass spend its time? ``torch.fx.Interpreter`` runs a
traced graph one node at a time through ``run_node``, so overriding that one
method is enough to put a stopwatch around every node. This example uses the
small profiler in :mod:`fxguide.transforms.profiling` (a dozen lines on top of
``Interpreter``) on a ResNet-style model, prints a table in graph order and
draws where the time goes.
"""

# %%
# The profiler
# ------------
#
# :class:`fxguide.transforms.profiling.NodeProfiler` subclasses ``Interpreter`` and only
# overrides ``run_node``: read the clock, let the base class run the node,
# read the clock again. Because it runs the same graph, its result must equal
# the model's.

import inspect

import matplotlib.pyplot as plt
import torch
import torch.fx as fx

from fxguide.models import SmallResNet
from fxguide.models import seeded
from fxguide.transforms.profiling import NodeProfiler, format_profile, profile_nodes

print(inspect.getsource(NodeProfiler.run_node))

torch.set_num_threads(1)
model = seeded(SmallResNet, channels=16, blocks=2).eval()
gm = fx.symbolic_trace(model)
x = torch.randn(8, 3, 32, 32, generator=torch.Generator().manual_seed(0))

with torch.no_grad():
    torch.testing.assert_close(NodeProfiler(gm).run(x), model(x))
print("the profiled run computes what the model computes")

# %%
# A table in graph order
# ----------------------
#
# :func:`fxguide.transforms.profiling.profile_nodes` runs the graph several times and
# keeps each node's median. The table keeps graph order, so its rows do not
# move when two nodes trade places between runs.

times = profile_nodes(gm, x, repeats=15)
print(format_profile(times))

# %%
# Where the time goes
# -------------------
#
# Grouped by what the node calls, the convolutions dominate; batch norms and
# ReLUs are elementwise passes that cost a fraction of a convolution each, and
# placeholders and the output cost almost nothing.


def kind(t) -> str:
    if t.op == "call_module":
        return type(gm.get_submodule(t.target)).__name__
    return t.target if t.op != "placeholder" else "input"


totals: dict[str, float] = {}
for t in times:
    totals[kind(t)] = totals.get(kind(t), 0.0) + t.seconds * 1e3

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.5), gridspec_kw={"width_ratios": [2, 1]})
left.barh([t.name for t in times][::-1], [t.seconds * 1e3 for t in times][::-1], color="#5a8")
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
# Running node by node in Python adds a little overhead per node, so the sum
# of the rows is a bit more than a plain call takes. For a model made of
# millisecond-long convolutions that overhead is small; for a graph of many
# tiny operations, profile with ``torch.profiler`` instead.
