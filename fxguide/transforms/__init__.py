"""Graph transformations used by the guide's pages: each takes a module, returns a new GraphModule.

Every transform here has the same shape, so they compose: an ``nn.Module`` (or
a ``GraphModule``) goes in, the input is left untouched, and a fresh
``GraphModule`` comes out. :func:`to_graph_module` is the shared first step.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable

import torch.fx as fx
from torch import nn
from torch.fx.operator_schemas import get_signature_for_torch_op

from fxguide.tracing.concrete._inputs import carry as carry_input_guard
from fxguide.tracing.concrete._inputs import check as check_input_guard

__all__ = ["GuardedRun", "carry_input_guard", "check_input_guard", "to_graph_module"]


class GuardedRun:
    """Mixed into fxguide's Interpreters: ``run`` checks the inputs first, as the traced module's call would.

    A graph from :func:`fxguide.tracing.concrete.concrete_trace` checks the structure of its inputs before it
    runs (a list of 3 where it traced a list of 2 raises); an Interpreter runs the graph without calling the
    module, so it would skip that check and compute something else.
    """

    module: fx.GraphModule

    def run(self, *args, **kwargs):
        check_input_guard(self.module, args)
        return super().run(*args, **kwargs)  # type: ignore[misc]


def to_graph_module(module: nn.Module, caller: str = "to_graph_module") -> fx.GraphModule:
    """Return a ``GraphModule`` for ``module`` that a transform may edit freely.

    A plain ``nn.Module`` is traced with ``torch.fx.symbolic_trace``. A
    ``GraphModule`` is deep-copied, so editing the result never changes the
    module the caller passed in.

    >>> from fxguide.models import TinyMLP
    >>> gm = to_graph_module(TinyMLP())
    >>> [node.op for node in gm.graph.nodes]
    ['placeholder', 'call_module', 'call_function', 'call_function', 'call_method', 'output']
    >>> fresh = to_graph_module(gm)
    >>> fresh is gm, fresh.graph is gm.graph
    (False, False)
    """
    if not isinstance(module, nn.Module):
        raise TypeError(
            f"{caller}: expected an nn.Module or a torch.fx.GraphModule, got {type(module).__name__}; "
            "wrap a plain function with torch.fx.symbolic_trace(fn) first"
        )
    if isinstance(module, fx.GraphModule):
        return copy.deepcopy(module)
    return fx.symbolic_trace(module)


def _graph_inputs(gm: object, args: tuple, caller: str,
                  fix: str = "pass one example value each after gm") -> fx.GraphModule:
    """``gm`` if it is a ``GraphModule`` that can be called with ``args``; a ``TypeError`` naming ``caller`` otherwise.

    An input with a default (``def forward(self, x, y=1.0)``) may be left out, as
    when calling ``gm`` itself.

    >>> import torch
    >>> class AddY(torch.nn.Module):
    ...     def forward(self, x, y=1.0):
    ...         return x + y
    >>> gm = fx.symbolic_trace(AddY())
    >>> _graph_inputs(gm, (torch.ones(1),), "record_shapes") is gm
    True
    >>> _graph_inputs(gm, (), "record_shapes")
    Traceback (most recent call last):
    ...
    TypeError: record_shapes: the graph takes 1 to 2 input(s), got 0; pass one example value each after gm
    """
    if not isinstance(gm, fx.GraphModule):
        raise TypeError(f"{caller}: expected a torch.fx.GraphModule (trace the model first, e.g. with "
                        f"torch.fx.symbolic_trace(model)), got {type(gm).__name__}")
    placeholders = gm.graph.find_nodes(op="placeholder")
    variadic = any(str(p.target).startswith("*") for p in placeholders)
    required = sum(1 for p in placeholders if not p.args and not str(p.target).startswith("*"))
    most = None if variadic else len(placeholders)
    if len(args) < required or (most is not None and len(args) > most):
        wanted = (f"at least {required}" if most is None else str(required) if required == most
                  else f"{required} to {most}")
        raise TypeError(f"{caller}: the graph takes {wanted} input(s), got {len(args)}; {fix}")
    return gm


def _bind_error(fn: Callable, node: fx.Node) -> tuple[inspect.Signature, TypeError] | None:
    """Why ``fn`` cannot take the arguments ``node`` passes to its target, or None if it can.

    Replacements and decomposition rules take the same arguments as the call they
    stand in for; checking that at transform time turns a wrong arity into an
    error that names the node, instead of a failure when the result is called.
    A torch builtin without a Python signature (``torch.add``) is checked against
    each of its overloads; a callable with neither is trusted.

    >>> import torch
    >>> gm = torch.fx.symbolic_trace(lambda x: torch.add(x, 1))
    >>> add = next(n for n in gm.graph.nodes if n.op == "call_function")
    >>> _bind_error(lambda a, b: a * b, add) is None
    True
    >>> signature, error = _bind_error(lambda a: a, add)
    >>> str(signature), str(error)
    ('(a)', 'too many positional arguments')
    >>> relu = fx.symbolic_trace(lambda x: torch.relu(x)).graph.find_nodes(op="call_function", target=torch.relu)[0]
    >>> str(_bind_error(torch.add, relu)[1])
    "missing a required argument: 'other'"
    """
    try:
        signatures = [inspect.signature(fn)]
    except (TypeError, ValueError):
        signatures = get_signature_for_torch_op(fn) or []  # one per overload; None for other builtins
    mismatches = []
    for signature in signatures:
        try:
            signature.bind(*node.args, **node.kwargs)
        except TypeError as error:
            mismatches.append((signature, error))
        else:
            return None
    return mismatches[0] if mismatches else None
