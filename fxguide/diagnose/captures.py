"""The capture tools a diagnosis runs, each as ``capture(model, args, kwargs) -> (callable, nodes)``.

Each returns what to call in place of the model, and the node count of the graph
(or graphs) it made. A capture that cannot take the model raises; the
diagnosis records the error.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

Capture = Callable[[nn.Module, tuple[Any, ...], dict[str, Any]], tuple[Callable[..., Any], int]]


def unbound_defaults(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The ``forward`` parameters the example does not pass, with their defaults (``concrete_args``)."""
    signature = inspect.signature(model.forward)
    bound = signature.bind_partial(*args, **kwargs)
    return {name: p.default for name, p in signature.parameters.items()
            if name not in bound.arguments and p.default is not inspect.Parameter.empty
            and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)}


def symbolic_trace(model, args, kwargs):
    """``torch.fx.symbolic_trace``, every parameter the example leaves out bound to its default."""
    gm = torch.fx.symbolic_trace(model, concrete_args=unbound_defaults(model, args, kwargs) or None)
    return gm, len(gm.graph.nodes)


def concrete_trace(model, args, kwargs):
    """fxguide's concrete tracer (:func:`fxguide.tracing.concrete.concrete_trace`)."""
    from fxguide.tracing.concrete import concrete_trace as trace
    gm = trace(model, args, kwargs)
    return gm, len(gm.graph.nodes)


def export(model, args, kwargs, dynamic_shapes=None, strict=False):
    """``torch.export.export``, non-strict (torch's default): the model's Python runs, on fake tensors."""
    program = torch.export.export(model, args, kwargs, dynamic_shapes=dynamic_shapes, strict=strict)
    return program.module(), len(program.graph.nodes)


def export_strict(model, args, kwargs):
    """``torch.export.export(strict=True)``: TorchDynamo reads the model's bytecode."""
    return export(model, args, kwargs, strict=True)


def batch_dims(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``dynamic_shapes`` for export: ``Dim.AUTO`` on dimension 0 of every tensor passed directly.

    Tensors inside a list, tuple or dict stay static (a detection model's list of
    images: the list's length is the batch); so do tensors with no dimension.
    """
    signature = inspect.signature(model.forward)
    bound = signature.bind_partial(*args, **kwargs)
    auto = torch.export.Dim.AUTO

    def spec(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return {0: auto} if value.dim() else None
        return pytree.tree_map(lambda _: None, value)

    shapes: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            shapes[name] = tuple(spec(v) for v in value)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            shapes[name] = {k: spec(v) for k, v in value.items()}
        else:
            shapes[name] = spec(value)
    return shapes


def export_dynamic_batch(model, args, kwargs):
    """Non-strict ``torch.export.export`` with ``Dim.AUTO`` on every tensor input's batch dimension."""
    return export(model, args, kwargs, dynamic_shapes=batch_dims(model, args, kwargs))


class _Compiled(nn.Module):
    """``torch.compile(model, fullgraph=True)`` with a backend that keeps each graph and runs it as is."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.graphs: list[torch.fx.GraphModule] = []

        def keep(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
            self.graphs.append(gm)
            return gm.forward

        self.compiled = torch.compile(model, fullgraph=True, backend=keep)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.compiled(*args, **kwargs)


def compile_fullgraph(model, args, kwargs):
    """``torch.compile(fullgraph=True)`` with a backend that captures the graph (no Inductor compile).

    Compiling happens on the first call, so the capture calls the model once on the example.
    """
    torch._dynamo.reset()
    compiled = _Compiled(model)
    with torch.no_grad():
        compiled(*args, **kwargs)
    return compiled, sum(len(gm.graph.nodes) for gm in compiled.graphs)


def _last_node_extractor(model, get_graph_node_names, create_feature_extractor):
    """A library's feature extractor asked for the eval graph's last node, returning it alone."""
    last = get_graph_node_names(model)[1][-1]
    extractor = create_feature_extractor(model, return_nodes={last: "out"})
    return _ReturnOnly(extractor, "out"), len(extractor.graph.nodes)


class _ReturnOnly(nn.Module):
    """``extractor(...)[key]``: the extractor's one output, as the model itself returns it."""

    def __init__(self, extractor: nn.Module, key: str) -> None:
        super().__init__()
        self.extractor, self.key = extractor, key

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.extractor(*args, **kwargs)[self.key]


def timm_route(model, args, kwargs):
    """timm's ``create_feature_extractor`` (its leaf modules and wrapped functions), asked for the last node."""
    from timm.layers._fx import create_feature_extractor, get_graph_node_names
    return _last_node_extractor(model, get_graph_node_names, create_feature_extractor)


def torchvision_route(model, args, kwargs):
    """torchvision's ``create_feature_extractor``, asked for the graph's last node."""
    from torchvision.models.feature_extraction import create_feature_extractor, get_graph_node_names
    return _last_node_extractor(model, get_graph_node_names, create_feature_extractor)


LIBRARY_ROUTES: dict[str, Capture] = {"timm": timm_route, "torchvision": torchvision_route}


def library_of(model: nn.Module) -> str | None:
    """``"timm"`` or ``"torchvision"`` when the model's class comes from that library, else ``None``.

    >>> library_of(nn.Linear(1, 1)) is None
    True
    """
    root = type(model).__module__.split(".")[0]
    return root if root in LIBRARY_ROUTES else None
