"""
Invert a function by walking its graph backwards
================================================

A graph is data, so a pass can read it in any order. If a function is a chain
of invertible steps (add a constant, multiply by one, ``exp``, ``tanh`` ...),
its inverse is the chain of inverse steps in reverse order. Walking the traced
graph from the output back to the input and emitting each step's inverse into
a new graph builds that inverse automatically.
"""

# %%
# The function and a table of inverses
# ------------------------------------
#
# One table for steps of one argument, one for steps that combine the value
# with a constant.

import operator

import matplotlib.pyplot as plt
import torch
import torch.fx as fx

from fxguide.display import show_code
from fxguide.display.drawing import draw, plot_graphs


def f(x):
    return torch.exp((x * 2 + 3) / 4) - 1


UNARY = {torch.exp: torch.log, torch.log: torch.exp, torch.tanh: torch.atanh, operator.neg: operator.neg}
WITH_CONSTANT = {operator.add: operator.sub, operator.sub: operator.add,
                 operator.mul: operator.truediv, operator.truediv: operator.mul}

gm = fx.symbolic_trace(f)
show_code(gm)

# %%
# Walk backwards
# --------------
#
# Start at the value the output returns and follow each node's single traced
# input until the placeholder. A step is invertible here when exactly one of
# its arguments is traced and (for the binary steps) the traced value comes
# first; anything else is refused with a message naming the node.


def invert(gm: fx.GraphModule) -> fx.GraphModule:
    (output,) = gm.graph.find_nodes(op="output")
    graph = fx.Graph()
    value = graph.placeholder("y")
    node = output.args[0]
    while node.op != "placeholder":
        traced = [a for a in node.args if isinstance(a, fx.Node)]
        if node.op != "call_function" or len(traced) != 1:
            raise ValueError(f"cannot invert node {node.name!r}: {node.format_node()}")
        if node.target in UNARY:
            value = graph.call_function(UNARY[node.target], (value,))
        elif node.target in WITH_CONSTANT and node.args[0] is traced[0]:
            value = graph.call_function(WITH_CONSTANT[node.target], (value, node.args[1]))
        else:
            raise ValueError(f"cannot invert node {node.name!r}: {node.format_node()}")
        node = traced[0]
    graph.output(value)
    return fx.GraphModule(torch.nn.Module(), graph)


inverse = invert(gm)
show_code(inverse)

# %%
# Check the round trip
# --------------------
#
# ``inverse(f(x))`` gives ``x`` back, up to float rounding.

x = torch.linspace(-2, 2, 5)
torch.testing.assert_close(inverse(f(x)), x)
print(inverse(f(x)).round(decimals=4))
plot_graphs(draw(gm, title="f"), draw(inverse, title="inverse of f"))
plt.show()

# %%
# What it refuses
# ---------------
#
# ``x * x`` uses the traced value twice, so it is not a chain of
# one-input steps; the pass says which node stopped it.

try:
    invert(fx.symbolic_trace(lambda x: x * x + 1))
except ValueError as error:
    print(error)
