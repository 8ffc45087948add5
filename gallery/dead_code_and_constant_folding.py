"""
Remove dead code and fold constants
===================================

Traced graphs often carry work whose result nobody uses (left over from
debugging, or from a rewrite that replaced a node's users) and work that does
not depend on the input at all (a scale computed from buffers on every call).
The first kind can be deleted; the second can be computed once, ahead of time,
and stored as a buffer. Both shrink the graph without changing what it
computes.
"""

# %%
# A model with both kinds of waste
# --------------------------------
#
# ``unused`` is computed and dropped; ``scale`` depends only on a parameter
# and a buffer, never on ``x``.

import operator

import matplotlib.pyplot as plt
import torch
import torch.fx as fx
from torch import nn

from fxguide.display import show_code
from fxguide.display.drawing import draw, plot_graphs
from fxguide.models import seeded


class Normalize(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.log_scale = nn.Parameter(torch.linspace(-1.0, 1.0, 4))
        self.register_buffer("mean", torch.arange(4.0))
        self.register_buffer("std", torch.full((4,), 2.0))

    def forward(self, x):
        unused = torch.sigmoid(x) * 10  # noqa: F841 (dead on purpose)
        scale = torch.exp(self.log_scale) / (self.std + 1e-5)
        return self.linear((x - self.mean) * scale)


model = seeded(Normalize)
gm = fx.symbolic_trace(model)
show_code(gm)
before = draw(gm, title="traced")

# %%
# Look at ``_tensor_constant0``: the tracer has already computed
# ``self.std + 1e-5``. During symbolic tracing, buffers are real tensors: the
# tracer hands out proxies for parameters, and for buffers only when told to.

print("fx.Tracer.proxy_buffer_attributes:", fx.Tracer.proxy_buffer_attributes)

# %%
# So arithmetic on buffers alone runs once at trace time, and its result is
# stored in the module. (``self.mean`` still appears as a ``get_attr`` node:
# a real tensor that is an attribute of the module is read by name.) The
# ``exp`` of the parameter, though, is recorded and would run on every call.

# %%
# Dead-code elimination
# ---------------------
#
# ``Graph.eliminate_dead_code``, introduced in the tutorial's
# :ref:`erasing section <transformations-erase>`, deletes every node that has
# no users unless ``node.is_impure()`` flags it, and returns whether anything
# changed; the code must be regenerated afterwards.

print("changed:", gm.graph.eliminate_dead_code())
gm.recompile()
show_code(gm)

# %%
# Here that is safe: every node is a pure function of its inputs. An unused
# in-place update is not flagged as impure, so it is deleted too:


def scales_in_place(x):
    x.mul_(3)  # result unused, but x changes
    return x + 1


in_place = fx.symbolic_trace(scales_in_place)
in_place.graph.eliminate_dead_code()
in_place.recompile()
print("eager:", scales_in_place(torch.ones(2)), "| after DCE:", in_place(torch.ones(2)))

# %%
# Before running it on a graph with in-place calls, pass ``is_impure_node``:
# :ref:`transformations-dce-in-place` gives a rule that keeps every form
# (method, function, ``inplace=True``, module).

# %%
# Constant folding
# ----------------
#
# A node is constant when it reads an attribute (``get_attr``) or computes
# only from constant nodes, and is pure (``not node.is_impure()``): a random
# draw from a parameter, ``torch.rand_like(self.p)``, reads only constants but
# must give new numbers on every call. Evaluate those once, in graph order; wherever a
# constant value feeds a node that is not constant, store it as a buffer and
# read that instead. Dead-code elimination then removes the constant nodes
# nobody reads any more.


def fold_constants(gm: fx.GraphModule) -> list[str]:
    values: dict[fx.Node, object] = {}
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            values[node] = operator.attrgetter(node.target)(gm)
        elif (node.op == "call_function" and node.all_input_nodes and not node.is_impure()
              and all(n in values for n in node.all_input_nodes)):
            args, kwargs = fx.node.map_arg((node.args, node.kwargs), lambda n: values[n])
            values[node] = node.target(*args, **kwargs)
    folded = []
    for node, value in values.items():
        if node.op == "get_attr" or all(user in values for user in node.users):
            continue
        name = f"_folded_{node.name}"
        gm.register_buffer(name, value.detach())
        with gm.graph.inserting_before(node):
            constant = gm.graph.get_attr(name)
        node.replace_all_uses_with(constant)
        folded.append(name)
    gm.graph.eliminate_dead_code()
    gm.graph.lint()
    gm.recompile()
    return folded


print(fold_constants(gm))
show_code(gm)


# %%
# Same values, less work
# ----------------------
#
# The folded module computes what the model does, without the dead
# ``sigmoid`` and ``mul`` and without recomputing the scale on every call.
# Folding a parameter is right for inference only: after training changes
# ``log_scale``, the stored buffer is stale and the graph must be folded again.

x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
torch.testing.assert_close(gm(x), model(x))
print(len(fx.symbolic_trace(model).graph.nodes), "nodes before,", len(gm.graph.nodes), "after")
plot_graphs(before, draw(gm, title="dead code removed, constants folded"))
plt.show()


# %%
# A random draw is not a constant
# -------------------------------
#
# ``torch.rand_like(self.noise_like)`` reads only a parameter, so without the
# ``is_impure()`` check the loop would fold it: the buffer would hold one draw,
# and every call would add the same noise. ``is_impure()`` flags random
# functions, so the draw stays in the graph and two calls differ.


class AddsNoise(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.noise_like = nn.Parameter(torch.zeros(4))

    def forward(self, x):
        return x + torch.rand_like(self.noise_like)


noisy = fx.symbolic_trace(AddsNoise())
print("rand_like is impure:", [node.is_impure() for node in noisy.graph.nodes if node.op == "call_function"][0])
print("folded:", fold_constants(noisy))
show_code(noisy)
print("two calls add the same noise:", torch.equal(noisy(torch.zeros(4)), noisy(torch.zeros(4))))
