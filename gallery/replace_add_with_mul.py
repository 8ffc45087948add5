"""
Replace one operation everywhere
================================

The smallest useful transform: find every node that calls ``torch.add`` (or
the ``+`` operator) and make it call ``torch.mul`` instead. It shows the whole
life of an FX transform in a few lines: trace, walk the nodes, edit, recompile,
check. (The tutorial's :doc:`/transformations` page explains each step.)
"""

# %%
# A function with two additions
# -----------------------------
#
# ``+`` on traced values records ``operator.add``; ``torch.add`` records itself.
# Both are additions, so the transform must catch both. (A third spelling,
# ``x.add(y)``, is recorded as a ``call_method`` node with the target
# ``"add"``: the loop below does not touch it, as the last section shows.)

import operator

import torch
import torch.fx as fx

from fxguide.display import show_code


def f(x, y):
    return torch.add(x, y) + y


gm = fx.symbolic_trace(f)
show_code(gm)

# %%
# Retarget the nodes
# ------------------
#
# A node's ``target`` is the callable it runs. Changing it changes the graph;
# ``recompile`` regenerates the Python code from the edited graph.

ADDITIONS = {torch.add, operator.add}

for node in gm.graph.nodes:
    if node.op == "call_function" and node.target in ADDITIONS:
        node.target = torch.mul

gm.graph.lint()
gm.recompile()
show_code(gm)

# %%
# Check the result
# ----------------
#
# ``(x * y) * y`` is what the edited module must now compute.

x, y = torch.arange(1.0, 4.0), torch.full((3,), 2.0)
torch.testing.assert_close(gm(x, y), x * y * y)
print(gm(x, y))

# %%
# The method spelling
# -------------------
#
# ``x.add(y)`` records a ``call_method`` node whose target is the string
# ``"add"``, not a function, so the loop above leaves it an addition. A
# transform meant for every spelling checks that opcode too.

method_gm = fx.symbolic_trace(lambda x, y: x.add(y))
print([(node.op, node.target) for node in method_gm.graph.nodes if node.op.startswith("call")])
for node in method_gm.graph.nodes:
    if node.op == "call_function" and node.target in ADDITIONS:
        node.target = torch.mul
method_gm.recompile()
print("after the loop:", method_gm(x, y), "(x + y, still an addition)")
