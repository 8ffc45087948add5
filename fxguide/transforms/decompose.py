"""Decompose operations into simpler ones by re-running rules on Proxies.

A rule is plain PyTorch code, e.g. ``relu(x) = (x > 0) * x``. To apply it, the
transform builds a new graph node by node: nodes without a rule are copied
(``Graph.node_copy``); for a node with a rule, its inputs are wrapped in
``torch.fx.Proxy`` objects attached to the new graph through a
``GraphAppendingTracer``, and the rule is simply *called*: every operation it
performs on the Proxies is recorded into the new graph.
"""

from __future__ import annotations

import copy

from collections.abc import Callable, Mapping

import torch
import torch.fx as fx
import torch.nn.functional as F
from torch import nn
from torch.fx.proxy import GraphAppendingTracer

from fxguide.transforms import _bind_error, carry_input_guard, to_graph_module


def _rule_input(x: object, inplace: object, caller: str) -> None:
    if not isinstance(x, (torch.Tensor, fx.Proxy)):
        raise TypeError(f"{caller}: expected a tensor (or a Proxy, while decomposing), got {type(x).__name__}")
    if not isinstance(inplace, bool):
        raise TypeError(f"{caller}: inplace must be True or False, got {inplace!r}")


def relu_rule(x, inplace: bool = False):
    """``relu(x)`` as a comparison and a product: ``(x > 0) * x``; ``inplace=True`` writes it into ``x``.

    >>> x = torch.tensor([-1.0, 2.0])
    >>> relu_rule(x, inplace=True) is x, x.tolist() == [0.0, 2.0]
    (True, True)
    """
    _rule_input(x, inplace, "relu_rule")
    result = (x > 0) * x
    return x.copy_(result) if inplace else result


def silu_rule(x, inplace: bool = False):
    """``silu(x)`` as its definition: ``x * sigmoid(x)``; ``inplace=True`` writes it into ``x``."""
    _rule_input(x, inplace, "silu_rule")
    result = x * torch.sigmoid(x)
    return x.copy_(result) if inplace else result


#: Default rule table, mapping each function called in the graph to the rule that replaces it.
#: A rule takes the same arguments as the function it replaces.
RULES: dict[Callable, Callable] = {
    torch.relu: relu_rule,
    F.relu: relu_rule,
    F.silu: silu_rule,
}


def _name(target: Callable) -> str:
    return getattr(target, "__name__", repr(target))


def _inplace(node: fx.Node) -> bool:
    """Whether the call asks to overwrite its first argument (``inplace=True``, by keyword or second argument)."""
    flag = node.kwargs.get("inplace", node.args[1] if len(node.args) > 1 else False)
    if isinstance(flag, fx.Node):
        raise ValueError(f"decompose: node {node.name!r} computes `inplace` at run time; "
                         f"a decomposition must know whether to overwrite the input")
    if flag and not isinstance(node.args[0] if node.args else None, fx.Node):
        raise ValueError(f"decompose: node {node.name!r} asks for inplace=True on a constant input")
    return bool(flag)


def _check_rule(rule: Callable, node: fx.Node) -> None:
    if mismatch := _bind_error(rule, node):
        signature, error = mismatch
        raise TypeError(f"decompose: the rule {_name(rule)}{signature} for {_name(node.target)} cannot take the "
                        f"arguments of node {node.name!r} ({error}); a rule takes the same arguments as the "
                        f"function it replaces") from None


def decompose(module: nn.Module, rules: Mapping[Callable, Callable] | None = None) -> fx.GraphModule:
    """Return a GraphModule in which each function with a rule is replaced by the rule's ops.

    ``rules`` maps a function the graph calls (``call_function`` targets such as
    ``torch.relu``) to plain PyTorch code computing the same thing; it defaults
    to :data:`RULES`. The result computes the same values as ``module``; a
    call with ``inplace=True`` (``F.relu(x, inplace=True)``) also still
    overwrites its input, with ``x.copy_(rule result)``.

    >>> from fxguide.models import TinyMLP, seeded
    >>> gm = decompose(seeded(TinyMLP))
    >>> [n.name for n in gm.graph.nodes]
    ['x', 'linear', 'gt', 'mul', 'add', 'sum_1', 'output']
    """
    rules = RULES if rules is None else rules
    if not isinstance(rules, Mapping) or not rules or not all(callable(k) and callable(v) for k, v in rules.items()):
        raise TypeError(f"decompose: rules must map functions to rule functions, e.g. {{torch.relu: relu_rule}}; "
                        f"got {rules!r}")
    old = to_graph_module(module, "decompose")
    graph = fx.Graph()
    graph.set_codegen(copy.deepcopy(old.graph._codegen))  # the same calling convention and output structure
    tracer = GraphAppendingTracer(graph)
    env: dict[fx.Node, fx.Node] = {}
    for node in old.graph.nodes:
        rule = rules.get(node.target) if node.op == "call_function" else None
        if rule is None:
            env[node] = graph.node_copy(node, lambda n: env[n])
            continue
        args = fx.map_arg(node.args, lambda n: fx.Proxy(env[n], tracer))
        kwargs = fx.map_arg(node.kwargs, lambda n: fx.Proxy(env[n], tracer))
        inplace = _inplace(node)
        _check_rule(rule, node)
        if inplace:  # the rule computes the value; the one write into the input is recorded below
            if "inplace" in kwargs:
                kwargs = {**kwargs, "inplace": False}
            else:
                args = (args[0], False, *args[2:])
        result = rule(*args, **kwargs)
        if not isinstance(result, fx.Proxy):
            raise TypeError(f"decompose: the rule for {_name(node.target)!r} returned "
                            f"{type(result).__name__}; it must compute its result from its arguments")
        if inplace:  # F.relu(x, inplace=True) changes x: write the result back into it
            result = args[0].copy_(result)
        env[node] = result.node
    graph.lint()
    return carry_input_guard(old, fx.GraphModule(old, graph))
