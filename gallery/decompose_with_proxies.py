"""
Decompose operations with rules written as plain PyTorch
========================================================

Some backends support only a few primitive operations, so a pass must rewrite
every other operation in terms of them. Writing each rewrite by creating nodes
by hand is tedious. With FX you can write the rule as an ordinary function
(``relu(x)`` is ``(x > 0) * x``) and call it on ``Proxy`` objects: every
operation inside the rule is then recorded as new nodes of the graph being
built.
"""

# %%
# A model and the rules
# ---------------------
#
# The rules are plain functions of tensors. Called on real tensors they can be
# tested like any function; called on proxies they emit graph nodes. A rule
# takes the same arguments as the call it replaces: the trace below shows that
# ``F.silu`` is recorded with its ``inplace=False`` keyword.

import matplotlib.pyplot as plt
import torch
import torch.fx as fx
import torch.nn.functional as F

from fxguide.display import show_code
from fxguide.display.drawing import draw, plot_graphs


def model(x, y):
    return torch.relu(x) + F.silu(y)


def relu_rule(x):
    return (x > 0) * x


def silu_rule(x, inplace=False):  # the traced call passes inplace=False
    return x * torch.sigmoid(x)


RULES = {torch.relu: relu_rule, F.relu: relu_rule, F.silu: silu_rule}

t = torch.linspace(-2, 2, 5)
torch.testing.assert_close(relu_rule(t), torch.relu(t))
torch.testing.assert_close(silu_rule(t), F.silu(t))

gm = fx.symbolic_trace(model)
show_code(gm)

# %%
# Rebuild the graph, node by node
# -------------------------------
#
# Copy every node into a new graph with ``node_copy``; when a node's target
# has a rule, wrap its (already copied) inputs in ``Proxy`` objects bound to a
# ``GraphAppendingTracer`` and call the rule instead. ``env`` maps each old
# node to the new node that stands for its value.


def decompose(gm: fx.GraphModule, rules: dict) -> fx.GraphModule:
    graph = fx.Graph()
    tracer = fx.proxy.GraphAppendingTracer(graph)
    env: dict[fx.Node, fx.Node] = {}
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in rules:
            args = fx.node.map_arg(node.args, lambda n: fx.Proxy(env[n], tracer))
            kwargs = fx.node.map_arg(node.kwargs, lambda n: fx.Proxy(env[n], tracer))
            env[node] = rules[node.target](*args, **kwargs).node
        else:
            env[node] = graph.node_copy(node, lambda n: env[n])
    graph.lint()
    return fx.GraphModule(gm, graph)


decomposed = decompose(gm, RULES)
show_code(decomposed)

# %%
# Check and look
# --------------
#
# The new module computes the same values with only comparisons,
# multiplications, ``sigmoid`` and the addition.

gen = torch.Generator().manual_seed(0)
x, y = torch.randn(4, 3, generator=gen), torch.randn(4, 3, generator=gen)
torch.testing.assert_close(decomposed(x, y), model(x, y))
print(sorted({getattr(n.target, "__name__", str(n.target)) for n in decomposed.graph.nodes
              if n.op == "call_function"}))

plot_graphs(draw(gm, title="before"), draw(decomposed, title="after"))
plt.show()

# %%
# Why proxies
# -----------
#
# The rule for ``silu`` is the same line of code whether it runs on tensors or
# on proxies; nothing in it knows about graphs. That is the point: rules stay
# readable and testable, and the rewriting loop stays the same for any number
# of rules.
