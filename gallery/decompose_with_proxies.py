"""
Decompose a real model's activations into a few primitives
==========================================================

Some backends support only a few primitive operations, so a pass must rewrite
every other operation in terms of them. The tutorial's
:ref:`retracing section <transformations-retrace>` shows the technique on a
toy block: write each rule as plain PyTorch, call it on ``Proxy`` objects
bound to a ``GraphAppendingTracer``, copy every other node with
``node_copy``. This example takes it to torchvision's MobileNetV3-Small (built
with random weights: nothing is downloaded), whose activations are
*modules* (``nn.Hardswish``, ``nn.Hardsigmoid``, ``nn.ReLU``), so the rules are
keyed by module type and the pass rewrites ``call_module`` nodes.
"""

# %%
# What the model calls
# --------------------
#
# Count the operations of the traced model by what they call.

import collections

import torch
import torch.fx as fx
import torchvision
from torch import nn

model = torchvision.models.mobilenet_v3_small(weights=None).eval()
gm = fx.symbolic_trace(model)


def called(gm: fx.GraphModule) -> collections.Counter:
    kinds = collections.Counter()
    for node in gm.graph.nodes:
        if node.op == "call_module":
            kinds[type(gm.get_submodule(node.target)).__name__] += 1
        elif node.op in ("call_function", "call_method"):
            kinds[getattr(node.target, "__name__", node.target)] += 1
    return kinds


print(called(gm))

# %%
# Rules for modules
# -----------------
#
# Each rule receives the module (to read its settings) and the input. Called
# on tensors, the rules can be tested against the modules they replace, before
# any graph is involved. These rules ignore ``inplace=True``: they return a new
# tensor instead of writing into their input, which gives the same result as
# long as no later node reads an activation's input.


def relu_rule(module: nn.ReLU, x):
    return (x > 0) * x


def hardsigmoid_rule(module: nn.Hardsigmoid, x):
    return torch.clamp(x + 3, 0, 6) / 6


def hardswish_rule(module: nn.Hardswish, x):
    return x * hardsigmoid_rule(None, x)


RULES = {nn.ReLU: relu_rule, nn.Hardsigmoid: hardsigmoid_rule, nn.Hardswish: hardswish_rule}

t = torch.linspace(-5, 5, 11)
for module_type, rule in RULES.items():
    torch.testing.assert_close(rule(module_type(), t), module_type()(t))
print("each rule matches its module on", t.tolist())

# %%
# The pass
# --------
#
# The loop of the tutorial, with one change: the rule is looked up from the
# type of the submodule a ``call_module`` node calls, and receives that
# submodule first.


def decompose_modules(gm: fx.GraphModule, rules: dict) -> fx.GraphModule:
    graph = fx.Graph()
    tracer = fx.proxy.GraphAppendingTracer(graph)
    env: dict[fx.Node, fx.Node] = {}
    for node in gm.graph.nodes:
        module = gm.get_submodule(node.target) if node.op == "call_module" else None
        rule = rules.get(type(module))
        if rule is None:
            env[node] = graph.node_copy(node, lambda n: env[n])
        else:
            args = fx.map_arg(node.args, lambda n: fx.Proxy(env[n], tracer))
            env[node] = rule(module, *args).node
    graph.lint()
    decomposed = fx.GraphModule(gm, graph)
    decomposed.delete_all_unused_submodules()  # the activation modules are no longer called
    return decomposed


decomposed = decompose_modules(gm, RULES)
print(called(decomposed))

# %%
# Check
# -----
#
# No ``Hardswish``, ``Hardsigmoid`` or ``ReLU`` is left, in the graph or
# among the submodules; the decomposed model computes what the original does.

images = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    torch.testing.assert_close(decomposed(images), model(images))
left = {type(m).__name__ for m in decomposed.modules() if type(m) in RULES}
print("activation modules left:", left or "none", "| outputs match the original")
print(len(gm.graph.nodes), "nodes before,", len(decomposed.graph.nodes), "after")
