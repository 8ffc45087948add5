"""Record the shape and dtype of every value a graph computes, two ways.

:func:`record_shapes_by_hand` is a complete node-by-node executor in a dozen
lines: it shows what running an FX graph means. :func:`record_shapes` gets the
same result from ``torch.fx.Interpreter`` by overriding one method,
``run_node``. Both return ``{node name: TensorInfo(shape, dtype)}`` for every
node whose value is a tensor.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
import torch.fx as fx

from fxguide.transforms import GuardedRun, _graph_inputs


class TensorInfo(NamedTuple):
    """The shape and dtype of one tensor value."""

    shape: tuple[int, ...]
    dtype: torch.dtype


def _info(value: Any) -> TensorInfo | None:
    return TensorInfo(tuple(value.shape), value.dtype) if isinstance(value, torch.Tensor) else None


def record_shapes_by_hand(gm: fx.GraphModule, *args: Any) -> dict[str, TensorInfo]:
    """Run ``gm``'s graph node by node on ``args`` and record each tensor's shape and dtype.

    >>> from fxguide.models import TinyMLP, seeded
    >>> gm = fx.symbolic_trace(seeded(TinyMLP, features=4, hidden=3))
    >>> record_shapes_by_hand(gm, torch.ones(2, 4))["linear"]
    TensorInfo(shape=(2, 3), dtype=torch.float32)
    """
    _graph_inputs(gm, args, "record_shapes_by_hand")
    inputs = iter(args)
    env: dict[fx.Node, Any] = {}
    seen: dict[str, TensorInfo] = {}

    def value(a: Any) -> Any:  # replace every Node inside args/kwargs by its computed value
        return fx.map_arg(a, lambda n: env[n])

    for node in gm.graph.nodes:
        if node.op == "placeholder":
            if str(node.target).startswith("*"):  # *args: every input left
                result = tuple(inputs)
            else:  # an input left out takes its default, kept in the node's args
                result = next(inputs, node.args[0] if node.args else None)
        elif node.op == "get_attr":
            result = gm
            for part in node.target.split("."):
                result = getattr(result, part)
        elif node.op == "call_function":
            result = node.target(*value(node.args), **value(node.kwargs))
        elif node.op == "call_method":
            self_obj, *rest = value(node.args)
            result = getattr(self_obj, node.target)(*rest, **value(node.kwargs))
        elif node.op == "call_module":
            result = gm.get_submodule(node.target)(*value(node.args), **value(node.kwargs))
        else:  # output
            result = value(node.args[0])
        env[node] = result
        if node.op != "output" and (info := _info(result)) is not None:
            seen[node.name] = info
    return seen


class ShapeRecorder(GuardedRun, fx.Interpreter):
    """An ``Interpreter`` that notes the shape and dtype of each tensor it computes.

    After ``run(...)``, ``recorder.seen`` maps node names to :class:`TensorInfo`.
    """

    def __init__(self, gm: fx.GraphModule) -> None:
        if not isinstance(gm, fx.GraphModule):
            raise TypeError(f"ShapeRecorder: expected a torch.fx.GraphModule, got {type(gm).__name__}")
        super().__init__(gm)
        self.seen: dict[str, TensorInfo] = {}

    def run_node(self, n: fx.Node) -> Any:
        result = super().run_node(n)
        if n.op != "output" and (info := _info(result)) is not None:
            self.seen[n.name] = info
        return result


def record_shapes(gm: fx.GraphModule, *args: Any) -> dict[str, TensorInfo]:
    """The same as :func:`record_shapes_by_hand`, built on ``torch.fx.Interpreter``.

    >>> gm = fx.symbolic_trace(lambda x: x.to(torch.int64).sum())
    >>> record_shapes(gm, torch.ones(2, 4))
    {'x': TensorInfo(shape=(2, 4), dtype=torch.float32), 'to': TensorInfo(shape=(2, 4), dtype=torch.int64), \
'sum_1': TensorInfo(shape=(), dtype=torch.int64)}
    """
    recorder = ShapeRecorder(_graph_inputs(gm, args, "record_shapes"))
    recorder.run(*args)
    return recorder.seen
