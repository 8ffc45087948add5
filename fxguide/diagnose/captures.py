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


def check(caller: str, model: Any, args: Any, kwargs: Any) -> None:
    """A ``TypeError`` saying what to pass, unless ``model`` is a Module, ``args`` a tuple and ``kwargs`` a dict."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"{caller}: model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(args, tuple) or not isinstance(kwargs, dict):
        raise TypeError(f"{caller}: args must be a tuple and kwargs a dict, got {type(args).__name__} and "
                        f"{type(kwargs).__name__}; for one tensor x pass (x,), {{}}")


def _bind(caller: str, model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    check(caller, model, args, kwargs)
    signature = inspect.signature(model.forward)
    try:
        return signature, signature.bind_partial(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"{caller}: the inputs do not fit {type(model).__name__}.forward{signature}: {exc}; "
                        "pass the inputs as you would call the model") from None


def unbound_defaults(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The ``forward`` parameters the example does not pass, with their defaults (``concrete_args``)."""
    signature, bound = _bind("unbound_defaults", model, args, kwargs)
    return {name: p.default for name, p in signature.parameters.items()
            if name not in bound.arguments and p.default is not inspect.Parameter.empty
            and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)}


def symbolic_trace(model, args, kwargs):
    """``torch.fx.symbolic_trace``, every parameter the example leaves out bound to its default."""
    check("symbolic_trace", model, args, kwargs)
    gm = torch.fx.symbolic_trace(model, concrete_args=unbound_defaults(model, args, kwargs) or None)
    return gm, len(gm.graph.nodes)


def concrete_trace(model, args, kwargs):
    """fxguide's concrete tracer (:func:`fxguide.tracing.concrete.concrete_trace`)."""
    from fxguide.tracing.concrete import concrete_trace as trace
    check("concrete_trace", model, args, kwargs)
    gm = trace(model, args, kwargs)
    return gm, len(gm.graph.nodes)


def export(model, args, kwargs, dynamic_shapes=None, strict=False):
    """``torch.export.export``, non-strict (torch's default): the model's Python runs, on fake tensors."""
    check("export", model, args, kwargs)
    program = torch.export.export(model, args, kwargs, dynamic_shapes=dynamic_shapes, strict=strict)
    module = program.module()
    if dynamic_shapes is not None:
        module.fxguide_batch_range = batch_range(program)
    return module, len(program.graph.nodes)


def batch_range(program: Any) -> tuple[int, float] | None:
    """The batch sizes an ``ExportedProgram``'s ranges give: ``(lowest, highest)`` over its inputs' first dimensions.

    ``None`` when no input's first dimension stayed dynamic (export specialized it). The lowest is usually
    2 (export assumes a dynamic size is neither 0 nor 1), but the program's module does not check it:
    it runs a batch of 1, through the graph traced for larger ones.
    """
    lows, highs = [], []
    names = set(program.graph_signature.user_inputs)
    for node in program.graph.nodes:
        value = node.meta.get("val") if node.op == "placeholder" and node.name in names else None
        if isinstance(value, torch.Tensor) and value.dim() and isinstance(value.shape[0], torch.SymInt):
            bounds = program.range_constraints.get(value.shape[0].node.expr)
            if bounds is not None:
                lows.append(int(bounds.lower))
                try:
                    highs.append(int(bounds.upper))
                except (TypeError, ValueError, OverflowError, AttributeError):  # int_oo, sympy's infinity
                    highs.append(float("inf"))
    return (max(lows), min(highs)) if lows else None


def export_strict(model, args, kwargs):
    """``torch.export.export(strict=True)``: TorchDynamo reads the model's bytecode."""
    return export(model, args, kwargs, strict=True)


def batch_dims(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``dynamic_shapes`` for export: ``Dim.AUTO`` on dimension 0 of every tensor passed directly.

    Tensors inside a container (a list, a dict, a registered dataclass) stay static
    (a detection model's list of images: the list's length is the batch); so do
    tensors with no dimension.
    """
    signature, bound = _bind("batch_dims", model, args, kwargs)
    auto = torch.export.Dim.AUTO

    def spec(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return {0: auto} if value.dim() else None
        return static(value)

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


def static(value: Any) -> Any:
    """A ``dynamic_shapes`` entry that keeps every tensor in ``value`` static, shaped as export expects:
    lists, tuples and dicts as themselves, any other registered container as the list of its children.

    >>> static({"a": [torch.ones(1), 2]})
    {'a': [None, None]}
    """
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple: its own type
        return type(value)(*(static(v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(static(v) for v in value) if type(value) in (list, tuple) else [static(v) for v in value]
    if isinstance(value, dict):
        return {k: static(v) for k, v in value.items()}
    node = pytree.SUPPORTED_NODES.get(type(value))
    if node is not None and not isinstance(value, torch.Tensor):
        children, _ = node.flatten_fn(value)
        return [static(child) for child in children]
    return None


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
    check("compile_fullgraph", model, args, kwargs)
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
